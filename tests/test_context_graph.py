"""The symbol graph behind L1 callers and L3 slices: imports resolved, names resolved sensibly."""

from __future__ import annotations

import pytest
from repo_builder import RepoBuilder
from search_fixtures import callers_in_slice, indexed_project

from freshmark.core.chunking import file_imports
from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.services.context.build import build_context
from freshmark.services.context.symbol_graph import SymbolGraph


def chunk(path: str, symbol: str, kind: str = "function", imports: tuple[str, ...] = (),
          references: tuple[str, ...] = (), **extra: object) -> ChunkRecord:
    values: dict[str, object] = dict(
        repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol, start_line=1,
        end_line=5, indexed_at="2026-01-01T00:00:00Z", blob_sha="b" * 40,
        content_sha256="s" * 64, kind=kind, id=f"{path}:{symbol}", imports=list(imports),
        references=list(references))
    values.update(extra)
    return ChunkRecord(**values)  # type: ignore[arg-type]


GRAPH = SymbolGraph([
    chunk("src/orders/services/order_service.py", "OrderService.cancel_order", "method",
          imports=("orders.domain.order",), references=("ensure_cancellable", "save")),
    chunk("src/orders/domain/order.py", "ensure_cancellable"),
    chunk("src/orders/domain/order.py", "Order", "class"),
    chunk("src/orders/repositories/order_repo.py", "OrderRepo.save", "method"),
    chunk("src/billing/ledger.py", "Ledger.save", "method"),
    chunk("src/api/routes.py", "cancel_route", imports=("orders.services.order_service",),
          references=("OrderService", "cancel_order")),

    chunk("web/src/app.ts", "run", imports=("./util",), references=("format",)),
    chunk("web/src/util.ts", "format"),
    chunk("src/orders/old_service.py", "cancel_order", file_kind="backup"),
    chunk("tests/test_orders.py", "test_cancel", file_kind="test", references=("cancel_order",)),
    chunk("src/gone.py", "gone", status="tombstoned"),
])


def test_dotted_import_resolves_to_the_indexed_file():
    assert GRAPH.imported_files("src/orders/services/order_service.py") == [
        "src/orders/domain/order.py"]


def test_relative_import_resolves_against_the_importing_file():
    assert GRAPH.resolve_import("web/src/app.ts", "./util") == ["web/src/util.ts"]
    assert GRAPH.resolve_import("src/orders/services/x.py", "..domain.order") == [
        "src/orders/domain/order.py"]


def test_modules_imported_from_their_package_resolve_to_their_files():
    source = "from . import _config, setters as s\n\n\ndef attrs():\n    return s\n"
    specs = file_imports("src/attr/_make.py", source)
    graph = SymbolGraph([chunk("src/attr/_make.py", "attrs", imports=tuple(specs)),
                         chunk("src/attr/__init__.py", "<module>", "block"),
                         chunk("src/attr/_config.py", "set_run_validators"),
                         chunk("src/attr/setters.py", "frozen")])
    # Both names are modules: the package's ``__init__`` holds neither, so it is no import.
    assert graph.imported_files("src/attr/_make.py") == [
        "src/attr/_config.py", "src/attr/setters.py"]


def test_a_name_the_package_init_defines_keeps_the_init_among_the_imports():
    source = "from . import _config, frozen_default\n"
    specs = file_imports("src/attr/_make.py", source)
    graph = SymbolGraph([chunk("src/attr/_make.py", "attrs", imports=tuple(specs)),
                         chunk("src/attr/__init__.py", "frozen_default"),
                         chunk("src/attr/_config.py", "set_run_validators")])
    assert graph.imported_files("src/attr/_make.py") == [
        "src/attr/__init__.py", "src/attr/_config.py"]


def test_a_file_that_only_re_exports_stands_for_the_files_it_exports():
    graph = SymbolGraph([
        chunk("src/immer.ts", "Immer.createDraft", "method", imports=("./internal",)),
        chunk("src/internal.ts", "<module>", "block", imports=("./scope", "./common")),
        chunk("src/scope.ts", "enterScope"), chunk("src/common.ts", "freeze"),
    ])
    assert graph.imported_files("src/immer.ts") == ["src/scope.ts", "src/common.ts"]


def test_a_go_import_names_a_package_directory_and_the_standard_library_none():
    graph = SymbolGraph([
        chunk("mux.go", "Mux.Mount"), chunk("context.go", "Context.Reset"),
        chunk("middleware/compress.go", "Compress"), chunk("middleware/logger.go", "Logger"),
        chunk("_examples/versions/data/errors.go", "ErrNotFound"),
    ])
    assert graph.resolve_import("mux.go", "context") == []
    assert graph.resolve_import("middleware/compress.go", "errors") == []
    assert graph.resolve_import("mux.go", "github.com/go-chi/chi/v5/middleware") == [
        "middleware/compress.go", "middleware/logger.go"]


def test_a_type_stub_is_not_the_module_an_import_runs():
    graph = SymbolGraph([chunk("pkg/more.py", "chunked", imports=(".recipes",)),
                         chunk("pkg/recipes.py", "grouper"), chunk("pkg/recipes.pyi", "grouper")])
    assert graph.imported_files("pkg/more.py") == ["pkg/recipes.py"]


def test_an_import_naming_the_file_with_its_extension_resolves_to_it():
    # ESM TypeScript imports util.ts as './util.js'; C includes "util.h".
    graph = SymbolGraph([chunk("web/src/app.ts", "run"), chunk("web/src/util.ts", "format"),
                         chunk("lib/util.h", "util_init"), chunk("lib/main.c", "main")])
    assert graph.resolve_import("web/src/app.ts", "./util.js") == ["web/src/util.ts"]
    assert graph.resolve_import("lib/main.c", "util.h") == ["lib/util.h"]


def test_a_rust_use_of_an_item_resolves_to_its_module():
    graph = SymbolGraph([chunk("src/lib.rs", "walk"), chunk("src/error.rs", "Error", "struct")])
    assert graph.resolve_import("src/lib.rs", "crate::error::Error") == ["src/error.rs"]


def test_a_cpp_using_of_a_namespace_the_project_does_not_define_resolves_to_nothing():
    graph = SymbolGraph([
        chunk("include/fmt/format-inl.h", "fmt.detail.format_float", "function",
              imports=("format.h", "std::locale", "boost::io::format")),
        chunk("include/fmt/format.h", "fmt.format_int", "class"),
        chunk("include/fmt/std.h", "std.hash", "struct"),
        chunk("include/fmt/boost.h", "fmt.format_boost"),
    ])
    assert graph.imported_files("include/fmt/format-inl.h") == ["include/fmt/format.h"]


def test_library_imports_resolve_to_nothing():
    assert GRAPH.resolve_import("src/api/routes.py", "fastapi.routing") == []


def test_a_standard_library_module_is_no_file_of_the_same_last_name():
    graph = SymbolGraph([chunk("httpie/compat.py", "ensure_default_certs_loaded"),
                         chunk("httpie/output/lexers/metadata.py", "MetadataLexer", "class"),
                         chunk("httpie/cli/nested_json/parse.py", "interpret_nested_json")])
    assert graph.resolve_import("httpie/compat.py", "importlib.metadata") == []
    assert graph.resolve_import("httpie/compat.py", "urllib.parse") == []
    assert graph.resolve_import("httpie/compat.py", "httpie.output.lexers.metadata") == [
        "httpie/output/lexers/metadata.py"]


def test_reference_to_an_imported_definition_is_confirmed():
    edges = GRAPH.callees("src/orders/services/order_service.py:OrderService.cancel_order")
    assert [(e.callee, e.confirmed) for e in edges] == [
        ("src/orders/domain/order.py:ensure_cancellable", True)]


def test_ambiguous_name_without_an_import_makes_no_edge():
    # "save" is defined twice and neither file is imported: left out, not guessed
    edges = GRAPH.callees("src/orders/services/order_service.py:OrderService.cancel_order")
    assert all(not e.callee.endswith(".save") for e in edges)


def test_callers_come_from_product_code_only():
    callers = GRAPH.callers("src/orders/services/order_service.py:OrderService.cancel_order")
    assert [(e.caller, e.confirmed) for e in callers] == [("src/api/routes.py:cancel_route", True)]


SERVICE = "src/orders/services/order_service.py"
METHODS = SymbolGraph([
    chunk(SERVICE, "OrderService.cancel_order", "method"),
    chunk(SERVICE, "OrderService.cancel_all", "method", references=("cancel_order",)),
    chunk(SERVICE, "cancel_later", references=("cancel_order",)),
    chunk("src/api/admin.py", "purge_route", imports=("orders.services.order_service",),
          references=("cancel_order",)),
])


def test_a_method_called_by_name_alone_is_name_only_however_near_its_file():
    # Neither names OrderService: `x.cancel_order(...)` could be any class's method
    for caller in ("src/api/admin.py:purge_route", f"{SERVICE}:cancel_later"):
        edges = METHODS.callees(caller)
        assert [(e.callee, e.confirmed) for e in edges] == [
            (f"{SERVICE}:OrderService.cancel_order", False)]


def test_a_method_called_from_its_own_class_is_confirmed():
    edges = METHODS.callees(f"{SERVICE}:OrderService.cancel_all")
    assert [(e.callee, e.confirmed) for e in edges] == [
        (f"{SERVICE}:OrderService.cancel_order", True)]


def test_excluded_test_and_tombstoned_chunks_are_not_nodes():
    assert not {"src/orders/old_service.py:cancel_order", "tests/test_orders.py:test_cancel",
                "src/gone.py:gone"} & set(GRAPH.nodes)


def test_type_definitions_are_found_by_name_near_the_file():
    assert GRAPH.type_definitions(["Order", "str"], "src/orders/services/order_service.py") == [
        "src/orders/domain/order.py:Order"]


def test_a_kotlin_function_is_confirmed_from_its_package_in_another_source_set():
    # okio's jvmMain code calls commonMain's package functions without an import
    util = "okio/src/commonMain/kotlin/okio/Util.kt"
    graph = SymbolGraph([
        chunk(util, "checkOffsetAndCount", language="kotlin"),
        chunk("okio/src/jvmMain/kotlin/okio/Buffer.kt", "Buffer.read", "method",
              language="kotlin", references=("checkOffsetAndCount",)),
    ])
    assert [(e.caller, e.confirmed) for e in graph.callers(f"{util}:checkOffsetAndCount")] == [
        ("okio/src/jvmMain/kotlin/okio/Buffer.kt:Buffer.read", True)]


def test_a_type_named_as_a_parameter_is_no_call_of_its_constructor():
    graph = SymbolGraph([
        chunk("src/OpenBehavior.cs", "OpenBehavior", "class"),
        chunk("src/OpenBehavior.cs", "OpenBehavior.OpenBehavior", "method"),
        chunk("src/Configuration.cs", "Configuration.AddOpenBehaviors", "method",
              references=("OpenBehavior", "IEnumerable")),
    ])
    assert graph.callers("src/OpenBehavior.cs:OpenBehavior.OpenBehavior") == []
    edges = graph.callees("src/Configuration.cs:Configuration.AddOpenBehaviors")
    assert [e.callee for e in edges] == ["src/OpenBehavior.cs:OpenBehavior"]


PARSER = '''class Parser:
    def parse(self, text):
        """Parse the whole document."""
        return text.split()
''' + "".join(f"""
    def step_{n}(self, value):
        \"\"\"Step {n} of the document's walk.\"\"\"
        total = value * {n}
        return total + {n}
""" for n in range(8)) + '''
    def _parse_nested(self, parse):
        """Parse a nested table with the parser it is handed."""
        return parse()

    def reparse(self, text):
        """Parse the document again."""
        return self.parse(text)
'''


def test_a_bare_call_of_a_name_its_class_defines_as_a_method_is_no_call_of_the_method(
        fm_home, make_repo):
    repo = indexed_project(make_repo("toml"), {"toml/parser.py": PARSER}, package="toml")
    slice_ = build_context(ContextRequest.build("Parser.parse", level="L1"), str(repo.path),
                           settings=Settings.from_env())
    callers = {s.symbol: (s.confidence, s.note) for s in slice_.sections if s.role == "caller"}
    assert callers["Parser.reparse"][0] == "high"
    assert "graph-confirmed" in callers["Parser.reparse"][1]
    assert "Parser._parse_nested" not in callers  # ``parse()``: its parameter, not ``self.parse``
    chain = build_context(ContextRequest.build("Parser.parse", level="L3"), str(repo.path),
                          settings=Settings.from_env())
    (walk,) = [s.body for s in chain.sections if s.role == "call_chain"]
    assert "Parser._parse_nested" not in walk
    assert "[graph-confirmed]" in walk


KY_TS = '''export class Ky {
\t#retryCount = 0;

\t#calculateDelay(): number {
\t\treturn this.#retryCount * 300;
\t}
''' + "".join(f'''
\tstep{n}(value: number): number {{
\t\treturn value * {n};
\t}}
''' for n in range(8)) + '''
\t#calculateRetryDelay(error: unknown): number {
\t\tthis.#retryCount++;
\t\treturn error ? this.#calculateDelay() : 0;
\t}
}
'''


def test_a_private_method_has_the_methods_of_its_class_that_call_it_as_confirmed_callers(
        fm_home, make_repo):
    repo = indexed_project(make_repo("ky"), {"source/core/Ky.ts": KY_TS}, package="source")
    slice_ = build_context(ContextRequest.build("Ky.#calculateDelay", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    callers = {s.symbol: s.confidence for s in slice_.sections if s.role == "caller"}
    assert callers == {"Ky.#calculateRetryDelay": "high"}


LOGRUS = {
    "logrus/exported.go": '''package logrus

// WithField creates an entry from the standard logger and adds a field to it.
func WithField(key string, value interface{}) *Entry {
\treturn std.WithField(key, value)
}
''',
    "logrus/logger.go": '''package logrus

type Logger struct {
\tLevel int
}

// WithField allocates a new entry and adds a field to it.
func (logger *Logger) WithField(key string, value interface{}) *Entry {
\tentry := &Entry{Logger: logger}
\treturn entry.WithField(key, value)
}
''',
    "logrus/entry.go": '''package logrus

type Entry struct {
\tLogger *Logger
\tData   map[string]interface{}
}

// WithField adds a single field to the entry.
func (entry *Entry) WithField(key string, value interface{}) *Entry {
\tdata := map[string]interface{}{key: value}
\treturn &Entry{Logger: entry.Logger, Data: data}
}
''',
    "logrus/errors.go": '''package logrus

// WithError adds an error as a single field to the entry.
func (entry *Entry) WithError(err error) *Entry {
\treturn entry.WithField("error", err)
}
''',
    "logrus/audit.go": '''package logrus

// Audit records who did what through the standard logger.
func Audit(user string) *Entry {
\treturn WithField("audit", user)
}
''',
}


@pytest.fixture
def logrus(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("logrus"), LOGRUS, package="logrus").path)


def test_a_go_package_function_is_called_bare_from_any_file_of_its_package(logrus):
    assert callers_in_slice(logrus, "exported.go WithField") == {"Audit": "high"}


def test_a_go_method_is_called_through_a_value_never_bare(logrus):
    callers = callers_in_slice(logrus, "Entry.WithField")
    assert callers["Logger.WithField"] == "high"
    assert "Audit" not in callers


def test_a_go_call_through_the_callers_own_receiver_is_its_own_types_method(logrus):
    assert callers_in_slice(logrus, "Entry.WithField")["Entry.WithError"] == "high"
    assert "Entry.WithError" not in callers_in_slice(logrus, "Logger.WithField")


def test_the_call_chain_leaves_out_calls_the_callers_code_cannot_make(logrus):
    slice_ = build_context(ContextRequest.build("exported.go WithField", level="L3"), logrus,
                           settings=Settings.from_env())
    chain = next(s.body for s in slice_.sections if s.role == "call_chain")
    assert "Audit (logrus/audit.go:L3) -> WithField (logrus/exported.go:L3)" in chain
    assert "-> WithField (logrus/exported.go:L3)  [name match only]" not in chain


def test_an_unexported_go_function_has_no_callers_in_other_packages(fm_home, make_repo):
    repo = indexed_project(make_repo("validator"), {
        "validator.go": "package validator\n\n// Check validates a value.\n"
                        "func Check(v Value) bool {\n\tval := v\n\treturn val.Kind() > 0\n}\n",
        "cmd/dive/main.go": "package main\n\n// val makes a value.\n"
                            "func val() int {\n\treturn 1\n}\n",
    }, package="validator")
    assert callers_in_slice(str(repo.path), "cmd/dive/main.go val") == {}


def test_a_wrapper_delegating_to_a_namesake_is_its_caller(logrus):
    assert callers_in_slice(logrus, "Logger.WithField") == {"WithField": "medium"}


SETTINGS = '''"""Retry settings of the shop's payment client."""

RETRY_BACKOFF_SECONDS = 2.5
RETRY_BACKOFF_LIMIT = 6
RETRY_BACKOFF_JITTER = 0.1


def retry_backoff(attempt):
    """Seconds to wait before retry number ``attempt``: the backoff grows to its limit."""
    return RETRY_BACKOFF_SECONDS * min(attempt, RETRY_BACKOFF_LIMIT)
'''


def test_a_pointer_to_another_match_in_a_moved_file_names_the_file_where_it_is_today(
        fm_home, make_repo):
    repo = indexed_project(make_repo("shop"), {"shop/settings.py": SETTINGS}, package="shop")
    repo.rename("shop/settings.py", "shop/retry_config.py")
    repo.commit("rename settings")
    slice_ = build_context(ContextRequest.build("retry backoff seconds limit", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    paths = {(s.role, s.path) for s in slice_.sections}
    assert ("candidate", "shop/retry_config.py") in paths
    assert not any(path == "shop/settings.py" for _, path in paths)


FINDER = {
    "app.js": "var finder = require('./finder');\n\n"
              "exports.render = function render(name) {\n"
              "  var file = finder.locateTemplate(name);\n"
              "  return 'rendered ' + file;\n};\n",
    "finder.js": "var fs = require('fs');\n\n"
                 "exports.locateTemplate = function locateTemplate(name) {\n"
                 "  var dirs = ['views', 'templates'];\n"
                 "  for (var i = 0; i < dirs.length; i++) {\n"
                 "    if (fs.existsSync(dirs[i] + '/' + name)) return dirs[i] + '/' + name;\n"
                 "  }\n};\n\n"
                 "exports.statTemplate = function statTemplate(path) {\n"
                 "  return fs.statSync(path);\n};\n",
}


def test_a_match_inside_an_imported_module_shown_whole_is_not_shown_twice(fm_home, make_repo):
    repo = indexed_project(make_repo("views"), FINDER, package="views")
    slice_ = build_context(ContextRequest.build("how is a template located and rendered",
                                                level="L2"), str(repo.path),
                           settings=Settings.from_env())
    finder = [(s.role, s.symbol) for s in slice_.sections if s.path == "finder.js"]
    assert ("dependency", "module") in finder
    assert finder == [("dependency", "module")]


def test_a_rust_path_of_another_crate_names_no_file_of_this_one_and_a_sibling_module_does():
    graph = SymbolGraph([
        chunk("src/ser.rs", "format_escaped_str", imports=("core::num::FpCategory",
                                                             "serde::de::Visitor")),
        chunk("src/lexical/num.rs", "AsPrimitive", "trait"),
        chunk("src/de.rs", "Deserializer", "struct"),
        chunk("src/main.rs", "main", imports=("config::Config", "crate::de::Deserializer")),
        chunk("src/config.rs", "Config", "struct"),
    ])
    assert graph.imported_files("src/ser.rs") == []
    assert graph.imported_files("src/main.rs") == ["src/config.rs", "src/de.rs"]


@pytest.fixture
def pipeline(fm_home, make_repo) -> str:
    methods = "".join(f"    def step_{n}(self, value):\n        return value + {n}\n\n"
                      for n in range(90))
    big = f"class Pipeline:\n    \"\"\"Steps.\"\"\"\n\n{methods}"
    app = ("from shop.pipeline import Pipeline\n\n\n"
           "def run_checkout(order):\n    \"\"\"Run the checkout pipeline.\"\"\"\n"
           "    return Pipeline().step_3(order)\n")
    return str(indexed_project(make_repo("shop"), {"shop/pipeline.py": big, "shop/app.py": app},
                               package="shop").path)


@pytest.mark.parametrize(("budget", "whole"), [(20000, True), (2400, False)])
def test_a_type_at_the_boundary_takes_at_most_a_quarter_of_the_budget(pipeline, budget, whole):
    slice_ = build_context(ContextRequest.build("run_checkout", budget_tokens=budget),
                           pipeline, settings=Settings.from_env())
    (pipeline_type,) = [s for s in slice_.sections if s.role == "type"]
    assert ("signature only" in pipeline_type.note) is not whole


def test_a_signature_digest_gives_a_class_chunked_in_parts_its_whole_lines(pipeline):
    slice_ = build_context(ContextRequest.build("run_checkout", level="L2", budget_tokens=2400),
                           pipeline, settings=Settings.from_env())
    (digest,) = [s for s in slice_.sections if s.role == "dependency"]
    assert "signatures only" in digest.note
    assert (digest.start_line, digest.end_line) == (1, 273)
    assert digest.body.splitlines()[0] == "L1-L272  class Pipeline"


REDIRECTS = '''def should_strip_auth(old_url, new_url):
    """Decide whether the authorization header is removed on a redirect to another host."""
    return old_url.split("/")[2] != new_url.split("/")[2]

''' + "".join(f"""
def step_{n}(value):
    \"\"\"Step {n} of a request's preparation.\"\"\"
    total = value * {n}
    return total + {n}
""" for n in range(8)) + '''

def rebuild_auth(prepared, old_url):
    """Rebuild the request's authentication on a redirect."""
    headers = prepared.headers
    if "Authorization" in headers and should_strip_auth(old_url, prepared.url):
        del headers["Authorization"]
    return prepared
'''


def test_a_caller_the_search_also_matched_is_shown_whole_not_by_its_signature(
        fm_home, make_repo):
    repo = indexed_project(make_repo("web"), {"web/sessions.py": REDIRECTS}, package="web")
    slice_ = build_context(ContextRequest.build(
        "when is the authorization header removed on a redirect to another host", level="L1"),
        str(repo.path), settings=Settings.from_env())
    assert slice_.sections[0].symbol == "should_strip_auth"
    (caller,) = [s for s in slice_.sections if s.symbol == "rebuild_auth"]
    assert caller.role == "caller" and "a match of the query" in caller.note
    assert 'del headers["Authorization"]' in caller.body


def test_a_caller_the_search_matched_falls_back_to_its_signature_when_it_does_not_fit(
        fm_home, make_repo):
    traced = "".join(f'    headers["X-Trace-{n}"] = str({n})\n' for n in range(60))
    repo = indexed_project(make_repo("web"), {"web/sessions.py": REDIRECTS.replace(
        "    return prepared\n", traced + "    return prepared\n")}, package="web")
    slice_ = build_context(ContextRequest.build(
        "when is the authorization header removed on a redirect to another host", level="L1",
        budget_tokens=1200), str(repo.path), settings=Settings.from_env())
    (caller,) = [s for s in slice_.sections if s.symbol == "rebuild_auth"]
    assert caller.note.endswith("(signature only)")
    assert any("rebuild_auth | high | caller (graph-confirmed) — shown by its signature only"
               in line for line in slice_.left_out)


@pytest.mark.parametrize(("budget", "room"), [(4000, True), (800, False)])
def test_the_room_after_the_evidence_takes_at_most_a_tenth_of_the_budget(
        fm_home, make_repo, budget, room):
    repo = indexed_project(make_repo("web"), {"web/sessions.py": REDIRECTS}, package="web")
    slice_ = build_context(ContextRequest.build("should_strip_auth", level="L1",
                                                budget_tokens=budget),
                           str(repo.path), settings=Settings.from_env())
    evidence = slice_.sections[0]
    assert evidence.symbol == "should_strip_auth"
    assert ("breathing room" in evidence.note) is room
    assert (evidence.shown_end > evidence.end_line) is room


def test_from_dot_import_a_module_names_that_module_not_all_a_package_re_exports():
    graph = SymbolGraph([
        chunk("src/flask/__init__.py", "<module>", "block",
              imports=(".app", ".config", ".json")),
        chunk("src/flask/app.py", "Flask", "class"),
        chunk("src/flask/config.py", "Config", "class"),
        chunk("src/flask/json/__init__.py", "dumps"),
        chunk("src/flask/typing.py", "ResponseValue", "type"),
        chunk("src/flask/ctx.py", "AppContext.push", "method", imports=(".", ".typing")),
    ])
    assert graph.imported_files("src/flask/ctx.py") == ["src/flask/typing.py"]


FLASKISH = {
    "web/helpers.py": '''def make_response(*args):
    """Turn a view's return value into a response object, for views that need one early."""
    return list(args)
''',
    "web/app.py": '''from web.helpers import get_debug_flag


class Flask:
    def make_response(self, rv):
        """Convert the return value from a view function to a response."""
        return rv

    def finalize_request(self, rv):
        """Turn the view's return value into a response and run the after hooks."""
        response = self.make_response(rv)
        return response
''',
    "web/views.py": '''from web.helpers import make_response


def teapot():
    """A view that answers early with a response of its own."""
    return make_response("I'm a teapot", 418)
''',
}


def test_a_call_through_self_is_no_call_of_a_module_function_of_that_name(fm_home, make_repo):
    repo = indexed_project(make_repo("web"), FLASKISH, package="web")
    slice_ = build_context(ContextRequest.build("web/helpers.py make_response", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    assert (slice_.sections[0].path, slice_.sections[0].symbol) == (
        "web/helpers.py", "make_response")
    callers = {s.symbol for s in slice_.sections if s.role == "caller"}
    assert callers == {"teapot"}


def test_callers_past_the_pointers_are_counted_and_every_file_of_callers_is_reached(
        fm_home, make_repo):
    files = {"zod/params.py": "def normalize_params(params):\n    return dict(params)\n"}
    for name, count in (("api", 14), ("classic", 10), ("mini", 3)):
        files[f"zod/{name}.py"] = "from zod.params import normalize_params\n\n" + "".join(
            f"\n\ndef {name}_schema_{n}(params):\n    return normalize_params(params)\n"
            for n in range(count))
    repo = indexed_project(make_repo("zod"), files, package="zod")
    slice_ = build_context(ContextRequest.build("normalize_params", level="L1"), str(repo.path),
                           settings=Settings.from_env())
    callers = [s for s in slice_.sections if s.role == "caller"]
    assert {s.path for s in callers} == {"zod/api.py", "zod/classic.py", "zod/mini.py"}
    assert len(callers) == 20
    assert "; 7 more callers not listed, in zod/" in callers[-1].note
    assert callers[-1].note in slice_.text()


TEMPLATE_PARSER = '''"""The template parser."""
import typing as t

from shop import nodes


class Parser:
    """Reads tokens into nodes."""

    def parse_unary(self) -> nodes.Expr:
        """A unary operator before a primary."""
        node = self.parse_primary()
        return nodes.Neg(node)

    def parse_primary(self) -> nodes.Expr:
        """A name, a literal or a parenthesized expression."""
        token = self.stream.current
        return nodes.Name(token.value)
'''


def test_a_slice_of_a_file_moved_since_indexing_holds_what_it_held_before_the_move(
        fm_home, make_repo):
    repo = indexed_project(make_repo("shop"), {"shop/parser.py": TEMPLATE_PARSER,
                                               "shop/nodes.py": "class Expr:\n    pass\n"},
                           package="shop")
    before = build_context(ContextRequest.build("Parser.parse_primary", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    repo.rename("shop/parser.py", "shop/parsing.py")
    repo.commit("rename parser")
    for level in ("L1", "L2"):
        after = build_context(ContextRequest.build("Parser.parse_primary", level=level),
                              str(repo.path), settings=Settings.from_env())
        roles = {(s.role, s.symbol) for s in after.sections}
        assert "shop/parser.py" not in {s.path for s in after.sections}
        if level == "L1":
            assert roles == {(s.role, s.symbol) for s in before.sections}
            assert ("caller", "Parser.parse_unary") in roles and ("type", "Parser") in roles
        else:
            assert ("module", "module") in roles


COMPILER = '''from jinja.environment import Environment


class CodeGenerator:
    def visit_Filter(self, node):
        return self._filter_test_common(node)

    def _filter_test_common(self, node):
        return node.name
'''
ENVIRONMENT = '''from jinja.compiler import CodeGenerator


class Environment:
    def call_filter(self, name):
        return self._filter_test_common(name)

    def _filter_test_common(self, name):
        return name.strip()
'''


def test_a_call_of_a_method_the_callers_own_class_defines_is_that_classs_method(
        fm_home, make_repo):
    repo = indexed_project(make_repo("jinja"), {"jinja/compiler.py": COMPILER,
                                                "jinja/environment.py": ENVIRONMENT},
                           package="jinja")
    callers = {}
    for owner in ("CodeGenerator", "Environment"):
        slice_ = build_context(ContextRequest.build(f"{owner}._filter_test_common",
                                                    level="L1"),
                               str(repo.path), settings=Settings.from_env())
        callers[owner] = {s.symbol: s.confidence for s in slice_.sections if s.role == "caller"}
    assert callers == {"CodeGenerator": {"CodeGenerator.visit_Filter": "high"},
                       "Environment": {"Environment.call_filter": "high"}}


def test_a_rust_call_through_a_declared_module_is_a_confirmed_call(fm_home, make_repo):
    repo = indexed_project(make_repo("fd"), {
        "src/walk.rs": "/// Walks the tree.\npub fn scan(paths: &[u8]) -> u8 {\n    0\n}\n",
        "src/worker.rs": "pub struct WorkerState;\n\nimpl WorkerState {\n"
                         "    pub fn scan(&self) -> u8 {\n        1\n    }\n}\n",
        "src/main.rs": "mod walk;\n\nfn run() -> u8 {\n    walk::scan(&[])\n}\n",
    }, package="fd")
    callers = callers_in_slice(str(repo.path), "walk::scan")
    assert callers == {"run": "high"}


def test_the_code_using_a_class_is_called_its_user_not_its_caller(fm_home, make_repo):
    repo = indexed_project(make_repo("jinja"), {"jinja/runtime.py": (
        "class AsyncLoopContext(LoopContext):\n    async def length(self):\n        return 0\n"
        "\n\nclass LoopContext:\n    \"\"\"A loop's state.\"\"\"\n\n    def length(self):\n"
        "        return 1\n")}, package="jinja")
    slice_ = build_context(ContextRequest.build("LoopContext", level="L1"), str(repo.path),
                           settings=Settings.from_env())
    notes = [s.note for s in slice_.sections if s.role == "caller"]
    assert notes and all(note.startswith("direct user (") for note in notes)


def test_a_type_written_with_its_module_is_that_modules_class(fm_home, make_repo):
    repo = indexed_project(make_repo("jinja"), {
        "jinja/nodes.py": "class Template:\n    \"\"\"The root node.\"\"\"\n\n    body = ()\n",
        "jinja/environment.py": "class Template:\n    \"\"\"A compiled template.\"\"\"\n\n"
                                "    def render(self):\n        return ''\n",
        "jinja/compiler.py": "from jinja import nodes\nfrom jinja.environment import Environment"
                             "\n\n\nclass CodeGenerator:\n    def visit_Template(self, node: "
                             "nodes.Template) -> None:\n        self.body = node.body\n",
    }, package="jinja")
    slice_ = build_context(ContextRequest.build("CodeGenerator.visit_Template", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    types = {(s.path, s.symbol) for s in slice_.sections if s.role == "type"}
    assert ("jinja/nodes.py", "Template") in types
    assert ("jinja/environment.py", "Template") not in types


def test_a_name_a_near_module_defines_is_not_a_far_class_of_that_name(fm_home, make_repo):
    repo = indexed_project(make_repo("sidekiq"), {
        "lib/sidekiq/testing.rb": "module Sidekiq\n  module Queues\n    def self.delete_for(jid)"
                                  "\n      jobs.delete(jid)\n    end\n  end\n\n  class Job\n"
                                  "    def drain\n      Queues.delete_for(jid)\n    end\n"
                                  "  end\nend\n",
        "lib/sidekiq/tui/queues.rb": "module Sidekiq\n  class Queues\n    def render\n"
                                     "      'queues'\n    end\n  end\nend\n",
    }, package="sidekiq")
    slice_ = build_context(ContextRequest.build("Sidekiq::Job#drain", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    assert "lib/sidekiq/tui/queues.rb" not in {s.path for s in slice_.sections if s.role == "type"}


def test_a_function_choosing_a_class_as_a_value_is_among_its_users(fm_home, make_repo):
    repo = indexed_project(make_repo("httpie"), {
        "httpie/output/streams.py": "class BufferedPrettyStream:\n    \"\"\"Buffers, then "
                                    "prettifies.\"\"\"\n\n    def iter_body(self):\n"
                                    "        return iter(())\n",
        "httpie/output/writer.py": "from httpie.output.streams import BufferedPrettyStream\n\n\n"
                                   "def stream_type(prettify):\n    return PrettyStream if "
                                   "prettify else BufferedPrettyStream\n",
    }, package="httpie")
    slice_ = build_context(ContextRequest.build("BufferedPrettyStream", level="L1"),
                           str(repo.path), settings=Settings.from_env())
    assert "stream_type" in {s.symbol for s in slice_.sections if s.role == "caller"}


def test_a_super_init_call_is_no_caller_of_another_classs_init(fm_home, make_repo):
    repo = indexed_project(make_repo("sqlmodel"), {
        "sqlmodel/main.py": "class FieldInfo(PydanticFieldInfo):\n    def __init__(self, default):"
                            "\n        super().__init__(default=default)\n\n\nclass SQLModel:\n"
                            "    def __init__(self, **data):\n        self.data = data\n",
    }, package="sqlmodel")
    assert "FieldInfo.__init__" not in callers_in_slice(str(repo.path), "SQLModel.__init__")


def parts_project(make_repo) -> RepoBuilder:
    """``assemble`` uses five types, more than a slice shows at its boundary."""
    types = "".join(f"class Part{n}:\n    \"\"\"Part {n}.\"\"\"\n\n\n" for n in range(5))
    build = ("from shop.parts import Part0, Part1, Part2, Part3, Part4\n\n\n"
             "def assemble(a: Part0, b: Part1, c: Part2, d: Part3) -> Part4:\n"
             "    \"\"\"Assemble the parts.\"\"\"\n    return Part4()\n")
    return indexed_project(make_repo("shop"), {"shop/parts.py": types, "shop/build.py": build},
                           package="shop")


def test_types_past_those_shown_are_named_not_dropped(fm_home, make_repo):
    repo = parts_project(make_repo)
    slice_ = build_context(ContextRequest.build("assemble", budget_tokens=4000), str(repo.path),
                           settings=Settings.from_env())
    shown = [s for s in slice_.sections if s.role == "type"]
    assert [s.symbol for s in shown] == ["Part0", "Part1", "Part2"]
    assert shown[-1].note.endswith("; other types assemble uses, not shown: Part3, Part4")


def test_types_the_call_graph_shows_are_not_named_as_not_shown(fm_home, make_repo):
    repo = parts_project(make_repo)
    slice_ = build_context(ContextRequest.build("assemble", level="L3", budget_tokens=4000),
                           str(repo.path), settings=Settings.from_env())
    related = {s.symbol for s in slice_.sections if s.role == "related"}
    assert {"Part3", "Part4"} <= related
    assert [s.note for s in slice_.sections if "not shown" in s.note] == []


RICH_CELLS = {
    "rich/cells.py": "def cell_len(text):\n    \"\"\"Cells taken by ``text``.\"\"\"\n"
                     "    return len(text)\n",
    "rich/text.py": """from .cells import cell_len


class Text:
    @property
    def cell_len(self):
        \"\"\"Cells taken by this text.\"\"\"
        return cell_len(self.plain)

    def truncate(self, max_width):
        \"\"\"Cut the text to ``max_width`` cells.\"\"\"
        if cell_len(self.plain) > max_width:
            self.plain = self.plain[:max_width]
""",
    "rich/containers.py": """from .cells import cell_len
from .text import Text


class Lines:
    def justify(self, lines: list[Text], width):
        \"\"\"Pad each line to ``width`` cells.\"\"\"
        for line in lines:
            line.plain += " " * (width - cell_len(line.plain))
""",
}


@pytest.fixture
def rich_cells(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("rich"), RICH_CELLS, package="rich").path)


def test_a_bare_call_in_a_python_method_is_no_call_of_a_method_of_that_name(rich_cells):
    assert callers_in_slice(rich_cells, "Text.cell_len") == {}


def test_a_bare_call_of_an_imported_python_function_is_its_confirmed_call(rich_cells):
    assert callers_in_slice(rich_cells, "rich/cells.py cell_len") == {
        "Text.cell_len": "high", "Text.truncate": "high", "Lines.justify": "high"}


def test_a_python_function_named_only_after_a_value_is_matched_by_its_name_alone(
        fm_home, make_repo):
    repo = indexed_project(make_repo("shop"), {
        "shop/store.py": "def save(order):\n    \"\"\"Write the order to disk.\"\"\"\n"
                         "    return order\n\n\ndef archive(order):\n    return order\n",
        "shop/repo.py": "class Repo:\n    def save(self, order):\n        return order\n",
        "shop/service.py": "from shop.repo import Repo\nfrom shop.store import archive\n\n\n"
                           "def checkout(repo: Repo, order):\n    archive(order)\n"
                           "    return repo.save(order)\n",
    }, package="shop")
    assert callers_in_slice(str(repo.path), "shop/store.py save") == {"checkout": "medium"}
    assert callers_in_slice(str(repo.path), "Repo.save") == {"checkout": "high"}


def test_a_call_chain_goes_one_way_never_from_a_callee_to_its_other_callers(
        fm_home, make_repo):
    repo = indexed_project(make_repo("rich"), {
        "rich/style.py": "def parse_color(text):\n    return text\n\n\n"
                         "def make_style(text):\n    return parse_color(text)\n",
        "rich/console.py": "from rich.style import make_style\n\n\n"
                           "def render(text):\n    \"\"\"Render text in its style.\"\"\"\n"
                           "    return make_style(text)\n\n\n"
                           "def main():\n    return render('x')\n\n\n"
                           "def cli():\n    return main()\n",
        "rich/terminal.py": "from rich.style import make_style\n\n\n"
                            "def write_styled(text):\n    return make_style(text)\n",
    }, package="rich")
    slice_ = build_context(ContextRequest.build("rich/console.py render", level="L3"),
                           str(repo.path), settings=Settings.from_env())
    (chain,) = [s.body for s in slice_.sections if s.role == "call_chain"]
    assert "main (rich/console.py:L9) -> render" in chain
    assert "cli (rich/console.py:L13) -> main" in chain
    assert "make_style (rich/style.py:L5) -> parse_color" in chain
    assert "write_styled" not in chain


FMT_FORMAT = '''#include <system_error>

namespace fmt {
namespace detail {
template <typename OutputIt> OutputIt write(OutputIt out, int value) { return out; }
}  // namespace detail

template <typename T> struct formatter {
  template <typename Context> auto format(int value, Context& ctx) const {
    return detail::write(ctx.out(), value);
  }

  template <typename Context> auto write(Context& ctx) const { return ctx.out(); }
};

// Builds the library's error for a system error code.
std::system_error system_error(int code) {
  return std::system_error(code, std::generic_category());
}

''' + "".join(f'''
int step_{n}(int value) {{
  return value * {n};
}}
''' for n in range(8)) + '''
void report(int code) { throw system_error(code); }

auto vsystem_error(int code) -> std::system_error {
  return std::system_error(std::error_code(code, std::generic_category()));
}
}  // namespace fmt
'''


@pytest.fixture
def fmt(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("fmt"), {"src/format.cc": FMT_FORMAT},
                               package="fmt").path)


def test_a_cpp_call_written_std_name_is_no_call_of_the_projects_function(fmt):
    callers = callers_in_slice(fmt, "fmt::system_error")
    assert callers["fmt.report"] == "high"
    assert "fmt.vsystem_error" not in callers


def test_a_cpp_call_written_with_a_namespace_is_no_call_of_a_method_of_that_name(fmt):
    assert "fmt.formatter.format" not in callers_in_slice(fmt, "formatter::write")


def test_a_java_class_calls_the_methods_of_its_packages_classes_without_an_import():
    parser = "src/main/java/org/jsoup/parser"
    graph = SymbolGraph([
        chunk(f"{parser}/HtmlTreeBuilder.java", "HtmlTreeBuilder.insertElementFor", "method",
              language="java"),
        chunk(f"{parser}/XmlTreeBuilder.java", "XmlTreeBuilder.insertElementFor", "method",
              language="java"),
        chunk(f"{parser}/HtmlTreeBuilderState.java", "HtmlTreeBuilderState.process", "method",
              references=("HtmlTreeBuilder", "insertElementFor"), language="java"),
        chunk("src/main/java/org/jsoup/nodes/Element.java", "Element.append", "method",
              references=("insertElementFor",), language="java"),
    ])
    callers = graph.callers(f"{parser}/HtmlTreeBuilder.java:HtmlTreeBuilder.insertElementFor")
    assert [e.caller for e in callers] == [
        f"{parser}/HtmlTreeBuilderState.java:HtmlTreeBuilderState.process"]


def test_a_go_method_of_its_own_type_called_through_another_value_is_a_name_match(
        fm_home, make_repo):
    repo = indexed_project(make_repo("tea"), {
        "tea.go": "package tea\n\n// Program runs a model.\ntype Program struct{}\n\n"
                  "// Wait waits for the program to finish.\nfunc (p *Program) Wait() {\n}\n",
        "exec.go": "package tea\n\nimport \"sync\"\n\n// execBatch runs commands at once.\n"
                   "func (p *Program) execBatch(cmds []func()) {\n\tvar wg sync.WaitGroup\n"
                   "\tfor _, cmd := range cmds {\n\t\twg.Add(1)\n"
                   "\t\tgo func() { defer wg.Done(); cmd() }()\n\t}\n\twg.Wait()\n}\n"},
        package="tea")
    assert callers_in_slice(str(repo.path), "Program.Wait") == {"Program.execBatch": "medium"}


def test_a_php_class_calls_its_namespace_neighbours_without_a_use_line():
    graph = SymbolGraph([
        chunk("src/ResultSet.php", "ResultSet.from", "method", language="php"),
        chunk("src/Statement.php", "Statement.from", "method", language="php"),
        chunk("src/Reader.php", "Reader.fetchColumn", "method",
              references=("ResultSet", "from"), language="php"),
    ])
    assert [e.caller for e in graph.callers("src/ResultSet.php:ResultSet.from")] == [
        "src/Reader.php:Reader.fetchColumn"]


def test_a_c_include_resolves_to_c_files_not_a_namesake_of_another_language():
    graph = SymbolGraph([
        chunk("src/builtin.c", "f_format", language="c"),
        chunk("src/builtin.jq", "<module>", kind="block"),
        chunk("src/execute.c", "jq_next", imports=("builtin.h",), language="c"),
    ])
    assert graph.resolve_import("src/execute.c", "builtin.h") == ["src/builtin.c"]


def test_a_files_own_module_level_definition_shadows_the_namesake_it_imports():
    graph = SymbolGraph([
        chunk("lib/typings/parser-types.ts", "Options", "interface", language="typescript"),
        chunk("lib/yargs-factory.ts", "Options", "interface",
              imports=("./typings/parser-types.js",), language="typescript"),
        chunk("lib/yargs-factory.ts", "YargsInstance", "class",
              imports=("./typings/parser-types.js",), references=("Options",),
              language="typescript"),
    ])
    assert graph.resolve_name("lib/yargs-factory.ts:YargsInstance", "Options") == [
        ("lib/yargs-factory.ts:Options", True)]


def test_a_method_of_the_class_its_caller_extends_is_a_confirmed_callee():
    graph = SymbolGraph([
        chunk("its/signer.py", "Signer.unsign", "method", language="python"),
        chunk("its/timed.py", "TimestampSigner", "class", imports=(".signer",),
              references=("Signer",), signature="class TimestampSigner(Signer)",
              language="python"),
        chunk("its/timed.py", "TimestampSigner.unsign", "method", imports=(".signer",),
              references=("unsign",), language="python"),
    ])
    assert graph.resolve_name("its/timed.py:TimestampSigner.unsign", "unsign") == [
        ("its/signer.py:Signer.unsign", True)]


APP_FACTORY = '''def create_app(config):
    """Build the application from its configuration."""
    app = {"config": config}
    return app
'''
WSGI_MODULE = '''# Copyright (c) the web authors. Licensed under the BSD licence.
# The server imports this module and serves ``application``.
import os

from web.factory import create_app

settings = {"debug": os.environ.get("DEBUG") == "1"}
application = create_app(settings)
'''


def test_module_code_calling_the_evidence_is_shown_by_its_calling_line_not_its_first(
        fm_home, make_repo):
    repo = indexed_project(make_repo("web"), {"web/factory.py": APP_FACTORY,
                                              "web/wsgi.py": WSGI_MODULE}, package="web")
    slice_ = build_context(ContextRequest.build("create_app", level="L1"), str(repo.path),
                           settings=Settings.from_env())
    (caller,) = [s for s in slice_.sections if s.role == "caller"]
    assert caller.path == "web/wsgi.py"
    assert caller.body == "application = create_app(settings)"
    assert caller.signature_lines == (8, 8) and caller.note.endswith("(the calling line)")


def test_an_l3_symbol_reached_past_a_name_match_is_not_confirmed_by_its_last_edge():
    from freshmark.services.context.levels import _walk

    graph = SymbolGraph([
        chunk("app/ssl.py", "build_connection", references=("read",)),
        chunk("app/multipart.py", "StreamingBody.read", "method", references=("read_chunk",)),
        chunk("app/multipart.py", "StreamingBody.read_chunk", "method"),
    ])
    start = graph.find("app/ssl.py", "build_connection")
    body = graph.find("app/multipart.py", "StreamingBody.read")
    assert start is not None and body is not None

    def standing(edge) -> bool:  # the first hop is a name match, the second graph-confirmed
        return edge.caller != start

    reached = {graph.nodes[node].symbol: sure for node, sure, _, _ in _walk(graph, start,
                                                                          standing)}
    assert reached == {"StreamingBody.read": False, "StreamingBody.read_chunk": False}


RENDERING = {
    "lib/application.js": "var View = require('./view');\n\n"
                          "var app = exports = module.exports = {};\n\n"
                          "/**\n * Render the view `name` with a callback.\n */\n\n"
                          "app.render = function render(name, options, callback) {\n"
                          "  var view = new View(name, options);\n"
                          "  tryRender(view, options, callback);\n};\n\n"
                          "/**\n * Try rendering a view.\n */\n\n"
                          "function tryRender(view, options, callback) {\n"
                          "  try {\n    view.render(options, callback);\n"
                          "  } catch (err) {\n    callback(err);\n  }\n}\n",
    "lib/view.js": "module.exports = View;\n\n"
                   "function View(name, options) {\n  this.name = name;\n"
                   "  this.options = options;\n}\n",
}


def test_a_symbol_both_calling_and_name_matching_the_start_is_shown_by_the_confirmed_call(
        fm_home, make_repo):
    repo = indexed_project(make_repo("express"), RENDERING, package="lib")
    slice_ = build_context(ContextRequest.build("app.render", level="L3"), str(repo.path),
                           settings=Settings.from_env())
    chain = next(s.body for s in slice_.sections if s.role == "call_chain")
    assert "app.render (lib/application.js:L5) -> tryRender (lib/application.js:L14)  " \
           "[graph-confirmed]" in chain
    assert "tryRender (lib/application.js:L14) -> app.render" not in chain

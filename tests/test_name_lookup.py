"""A look-up by a bare name reads the definitions so named through the chunks' own-name field
(``handle`` finds ``RouteRunner.handle``), and says how many deleted ones it passed over."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from click.testing import CliRunner

from freshmark.core.chunking import chunk_text
from freshmark.core.config import Config
from freshmark.core.plan import FileContext, build_records, plan_file
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.open_branch import open_branch
from freshmark.services.retrieval.channels import name_channel
from freshmark.services.retrieval.search import search

RUNNER = "class RouteRunner:\n    def handle(self, request):\n        return self.app(request)\n"


def index(repo) -> None:
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config())


def searched(repo, query: str, **options):
    """The search the CLI makes for ``query`` on ``repo``."""
    return search(SearchRequest.build(query, **options), str(repo.path),
                  settings=Settings.from_env())


def among_many_uses(repo, path: str, text: str, uses: Callable[[int], tuple[str, str]]):
    """``text`` at ``path`` beside 60 files that only use its names (``uses(n)``: a path and
    its text), committed and indexed."""
    repo.write(path, text)
    for n in range(60):
        repo.write(*uses(n))
    repo.commit(repo.path.name)
    index(repo)
    return repo


def test_a_bare_method_name_finds_the_implementation_under_many_chunks_using_it(
        store_env, make_repo):
    repo = among_many_uses(make_repo("slim"), "app/runner.py", RUNNER, lambda n: (
        f"tests/test_handle_{n}.py",
        f"def test_handle_{n}(handle):\n    handle(handle(handle({n})))\n"))
    response = searched(repo, "handle", k=3)
    assert (response.results[0].record.path, response.results[0].record.symbol) == \
        ("app/runner.py", "RouteRunner.handle")


def test_a_deleted_definition_looked_up_by_name_is_counted_as_passed_over(store_env, make_repo):
    repo = make_repo("details")
    repo.write("details.py", "class ObjectDetails:\n    def compare_by_location(self, other):\n"
                             "        return 0\n\n    def compare_by_name(self, other):\n"
                             "        return 1\n")
    repo.commit("details")
    index(repo)
    repo.write("details.py", "class ObjectDetails:\n    def compare_by_name(self, other):\n"
                             "        return 1\n").commit("drop compare_by_location")
    index(repo)
    result = CliRunner().invoke(cli, ["search", "ObjectDetails.compare_by_location", "--repo",
                                      str(repo.path)])
    assert "1 deleted definition of that name passed over (--history shows them)" in \
        result.output
    history = searched(repo, "ObjectDetails.compare_by_location", include_history=True)
    assert history.deleted_named == 0
    assert history.results[0].record.symbol == "ObjectDetails.compare_by_location"


def test_a_chunk_stamped_before_the_name_field_is_restamped_with_it():
    context = FileContext("r", "main", "c1", "runner.py", "b1", "s1", "python", "source",
                          "default", "2026-12-07T00:00:00Z")
    fresh = build_records(context, chunk_text("runner.py", RUNNER))
    stored = [replace(record, name="") for record in fresh]
    plan = plan_file(stored, fresh, "c1", "2026-12-07T00:00:00Z", 2)
    assert [(r.symbol, r.name) for r in plan.restamp] == [("RouteRunner", "RouteRunner"),
                                                          ("RouteRunner.handle", "handle")]
    assert plan.embed == []


def test_a_name_written_with_its_owner_finds_that_owners_member_even_in_a_test(
        store_env, make_repo):
    repo = make_repo("publish")
    for owner in ("TaskWhenAllPublisher", "ForeachAwaitPublisher", "Mediator"):
        repo.write(f"src/{owner.lower()}.py",
                   f"class {owner}:\n    def publish(self, handlers, message):\n"
                   f"        return [h(message) for h in handlers]\n")
    repo.write("tests/test_publish.py",
               "class SequentialPublisher:\n    def publish(self, handlers, message):\n"
               "        for h in handlers:\n            h(message)\n")
    repo.commit("publishers")
    index(repo)
    response = searched(repo, "SequentialPublisher.publish", k=4)
    assert response.results[0].record.symbol == "SequentialPublisher.publish"


def test_an_interface_method_written_with_its_owner_finds_the_interface_before_its_callers(
        store_env, make_repo):
    repo = make_repo("chi")
    repo.write("router.go", "package chi\n\n// Router routes requests.\ntype Router interface {\n"
                            "\t// Use appends middlewares.\n\tUse(middlewares ...func(Handler) "
                            "Handler)\n\tRoute(pattern string) Router\n}\n")
    repo.write("setup.go", "package chi\n\n// Setup uses the router.\nfunc Setup(r Router) {\n"
                           "\tr.Use(Logger)\n\tr.Use(Recoverer)\n\tr.Use(Router.Use)\n}\n")
    repo.commit("router")
    index(repo)
    response = searched(repo, "Router.Use", k=3)
    assert response.results[0].record.symbol == "Router"


def test_a_name_still_defined_counts_no_deleted_definitions(store_env, make_repo):
    repo = make_repo("inits")
    repo.write("a.py", "class A:\n    def reset(self):\n        return 1\n")
    repo.write("b.py", "class B:\n    def reset(self):\n        return 2\n")
    repo.commit("two resets")
    index(repo)
    repo.delete("b.py").commit("drop B")
    index(repo)
    response = searched(repo, "reset")
    assert response.deleted_named == 0
    assert response.results[0].record.symbol == "A.reset"


def test_a_constant_asked_for_alone_finds_its_declaration_first(store_env, make_repo):
    repo = make_repo("slimver")
    repo.write("app.py", "class App:\n    VERSION = '4.15.0'\n\n    def run(self):\n"
                         "        return self\n")
    for n in range(5):
        repo.write(f"check_{n}.py", f"def check_{n}(version):\n    \"\"\"Compare the VERSION "
                                    f"with PHP_VERSION_ID and LIBXML_VERSION.\"\"\"\n"
                                    f"    return version >= VERSION_{n}\n")
    repo.commit("version")
    index(repo)
    response = searched(repo, "VERSION", k=3)
    assert response.results[0].record.path == "app.py"


RETRY = '''import typing as t


@t.overload
def retry(func: t.Callable) -> t.Callable: ...


@t.overload
def retry(*, stop: int = 3) -> t.Callable: ...


@t.overload
def retry(*, wait: float = 1.0) -> t.Callable: ...


def retry(*dargs, **dkw):
    """Wrap a function with a retrying policy."""
    if len(dargs) == 1 and callable(dargs[0]):
        return retry()(dargs[0])
    return lambda f: f
'''
RETRY_ANY = ("class retry_any:\n    def __ror__(self, retry):\n        return retry_any(retry)\n\n"
             "class retry_all:\n    def __ror__(self, retry):\n        return retry_all(retry)\n")


def test_a_name_defined_with_overload_stubs_leads_with_its_implementation_then_the_stubs(
        store_env, make_repo):
    repo = make_repo("tenacity")
    repo.write("tenacity/__init__.py", RETRY).write("tenacity/retry.py", RETRY_ANY)
    repo.commit("retry")
    index(repo)
    results = searched(repo, "retry", k=5).results
    lead = [(r.record.path, r.record.start_line) for r in results[:4]]
    assert lead[0] == ("tenacity/__init__.py", 16)
    assert sorted(lead[1:]) == [("tenacity/__init__.py", line) for line in (4, 8, 12)]


def test_a_variable_a_test_sets_is_looked_up_at_its_declaration_in_the_source_first(
        store_env, make_repo):
    repo = make_repo("chi")
    notes = "".join(f"// Note {n}: a request carries one id across services.\n"
                    for n in range(30))
    repo.write("middleware/request_id.go",
               f'package middleware\n\n{notes}var RequestIDHeader = "X-Request-Id"\n\n'
               "func RequestID(next Handler) Handler {\n\treturn next\n}\n")
    sets = "".join(f'\tRequestIDHeader = "X-Trace-{n}"\n\tcheck(RequestIDHeader)\n'
                   for n in range(4))
    repo.write("middleware/request_id_test.go",
               f"package middleware\n\nfunc TestRequestID(t *T) {{\n{sets}}}\n")
    repo.commit("request ids")
    index(repo)
    first = searched(repo, "RequestIDHeader", k=3).results[0].record
    assert first.path == "middleware/request_id.go" and "var RequestIDHeader" in first.text


def _typer_like(make_repo):
    repo = make_repo("typerlike")
    repo.write("typer/main.py", "class Typer:\n    def command(self, name):\n"
                                "        return name\n\n\n"
                                "def get_command(typer):\n    return typer.command('x')\n")
    for owner in ("TyperGroup", "TyperCLIGroup"):
        repo.write(f"typer/{owner.lower()}.py",
                   f"class {owner}:\n    def get_command(self, ctx, name):\n"
                   f"        # a Typer class's get_command: get_command by name\n"
                   f"        return self.commands.get(name)\n")
    repo.write("typer/types.py", "class IntParamType:\n    \"\"\"A Typer class for int.\"\"\"\n"
                                 "    name = 'Typer class int class'\n")
    repo.commit("typer")
    index(repo)
    return repo


def test_a_name_with_a_declaration_keyword_beside_it_is_looked_up_as_that_name(
        store_env, make_repo):
    repo = _typer_like(make_repo)
    for query in ("class Typer", "Typer class"):
        first = searched(repo, query, k=3).results[0].record
        assert (first.path, first.symbol) == ("typer/main.py", "Typer"), query


def test_a_lower_case_name_in_backticks_is_looked_up_as_that_name(store_env, make_repo):
    repo = make_repo("bars")
    repo.write("bars/std.py", "class tqdm(Comparable):\n    def update(self, n=1):\n"
                              "        self.n += n\n")
    for number in range(4):
        repo.write(f"bars/use_{number}.py", f"from bars.std import tqdm\n\n\n"
                   f"class Handler{number}:\n    def __init__(self, tqdm_class=tqdm):\n"
                   f"        # the tqdm class of a tqdm bar: tqdm.write\n"
                   f"        self.tqdm_class = tqdm_class or tqdm\n")
    repo.commit("bars")
    index(repo)
    for query in ("class `tqdm`", "`tqdm` class", "`tqdm`"):
        first = searched(repo, query, k=3).results[0].record
        assert (first.path, first.symbol) == ("bars/std.py", "tqdm"), query


def test_a_bare_name_finds_the_definition_of_that_name_before_members_ending_in_it(
        store_env, make_repo):
    repo = _typer_like(make_repo)
    found = [r.record.symbol for r in searched(repo, "get_command", k=3).results]
    assert found[0] == "get_command"
    assert sorted(found[1:]) == ["TyperCLIGroup.get_command", "TyperGroup.get_command"]


def test_a_name_used_in_one_file_keeps_its_uses_ahead_of_chunks_without_it(store_env, make_repo):
    repo = make_repo("uses")
    repo.write("typer/main.py", "".join(
        f"def convert_{n}(annotation):\n    if lenient_issubclass(annotation, int):\n"
        f"        return {n}\n    return None\n\n\n" for n in range(4)))
    for n in range(6):
        repo.write(f"typer/other_{n}.py", f"def write_{n}(stream, text):\n"
                                          f"    stream.write(text * {n})\n")
    repo.commit("uses")
    index(repo)
    found = searched(repo, "lenient_issubclass", k=6).results
    assert [r.record.path for r in found[:4]] == ["typer/main.py"] * 4


def test_a_name_defined_nowhere_is_answered_by_the_tests_using_it_before_source_without_it(
        store_env, make_repo):
    # The class was deleted, its tests kept: the tests are what there is, not the source
    # whose words (load, average, processor) the name shares.
    repo = make_repo("processors")
    for n in range(6):
        repo.write(f"monolog/processor_{n}.py",
                   f"class MemoryProcessor{n}:\n    def load_average(self, record):\n"
                   f"        \"\"\"Add the processor's load average to the record.\"\"\"\n"
                   f"        return record.average_load({n})\n")
    repo.write("tests/test_load.py", "def test_processor_adds_the_load(record):\n"
                                     "    processor = LoadAverageProcessor()\n"
                                     "    assert processor(record).extra\n")
    repo.commit("processors")
    index(repo)
    found = searched(repo, "LoadAverageProcessor", k=3).results
    assert found[0].record.path == "tests/test_load.py"


KY_TS = '''export class Ky {
\t#retryCount = 0;

\t// Retry the request when the response asks for a retry.
\tasync #retry(function_: () => Promise<Response>): Promise<Response | void> {
\t\ttry {
\t\t\treturn await function_();
\t\t} catch (error) {
\t\t\treturn this.#retryFromError(error, function_);
\t\t}
\t}

\tasync #retryFromError(error: unknown, function_: () => Promise<Response>): Promise<void> {
\t\tconst retryDelay = this.#calculateRetryDelay(error);
\t\tawait delay(retryDelay);
\t\treturn this.#retry(function_);
\t}

\t#calculateRetryDelay(error: unknown): number {
\t\tthis.#retryCount++;
\t\treturn error ? this.#retryCount * 2 : this.#getCurrentTime();
\t}

\t#getCurrentTime(): number {
\t\treturn Date.now();
\t}
}
'''
RETRY_TS = "".join(
    f"// Retry option {n}: a retry of the retry delay, retried on retry status {n}.\n"
    f"export const retryOption{n} = (retry: number) => retry + {n};\n\n" for n in range(4))


@pytest.mark.parametrize(("query", "symbol"), [
    ("Ky.#retry", "Ky.#retry"), ("#retry", "Ky.#retry"),
    ("Ky.#getCurrentTime", "Ky.#getCurrentTime"), ("#getCurrentTime", "Ky.#getCurrentTime")])
def test_a_private_method_looked_up_by_its_name_with_its_hash_comes_first(
        store_env, make_repo, query, symbol):
    repo = make_repo("ky")
    repo.write("source/core/Ky.ts", KY_TS).write("source/core/retry.ts", RETRY_TS)
    repo.commit("ky")
    index(repo)
    assert searched(repo, query, k=3).results[0].record.symbol == symbol


ZOD_CORE_TS = """\
export function $constructor<T>(name: string, initializer: (inst: T) => void): T {
  return initializer as unknown as T;
}

export interface $ZodType {
  _zod: { def: unknown };
}
"""
ZOD_CLASSES_TS = "".join(
    f"export class Zod{kind} {{\n  constructor(def: unknown) {{\n    this.def = def;\n  }}\n}}\n\n"
    for kind in ("Type", "String", "Number", "Object", "Array", "Union", "Set", "Map", "Date"))


@pytest.mark.parametrize(("query", "symbol"), [
    ("$constructor", "$constructor"), ("$ZodType", "$ZodType")])
def test_a_name_written_with_its_dollar_is_looked_up_as_that_name(
        store_env, make_repo, query, symbol):
    repo = make_repo("zod")
    repo.write("src/core/core.ts", ZOD_CORE_TS).write("src/classic/types.ts", ZOD_CLASSES_TS)
    repo.commit("zod")
    index(repo)
    assert searched(repo, query, k=3).results[0].record.symbol == symbol


def test_a_bare_name_finds_a_private_method_of_that_name_under_many_chunks_using_it(
        store_env, make_repo):
    repo = among_many_uses(make_repo("ky"), "source/core/Ky.ts", KY_TS, lambda n: (
        f"test/time-{n}.ts", f"getCurrentTime(getCurrentTime(getCurrentTime({n})));\n"))
    assert searched(repo, "getCurrentTime", k=3).results[0].record.symbol == \
        "Ky.#getCurrentTime"


@pytest.mark.parametrize("query", ["Ky.#getCurrentTime", "#getCurrentTime", "getCurrentTime"])
def test_a_deleted_private_method_looked_up_by_name_is_counted_as_passed_over(
        store_env, make_repo, query):
    repo = make_repo("ky")
    repo.write("source/core/Ky.ts", KY_TS).commit("ky")
    index(repo)
    repo.write("source/core/Ky.ts", KY_TS.replace("this.#getCurrentTime()", "0")
               .replace("\t#getCurrentTime(): number {\n\t\treturn Date.now();\n\t}\n", ""))
    repo.commit("drop #getCurrentTime")
    index(repo)
    assert searched(repo, query).deleted_named == 1


LOCK_RB = """module Rack
  class Lock
    def call(env)
      @mutex.synchronize { @app.call(env) }
    end

    def acquire_mutex
      @mutex.lock
    end
  end
end
"""
OTHER_RB = """module Rack
  class Other
    def call(env)
      [200, {}, [env.to_s]]
    end
  end
end
"""


@pytest.mark.parametrize("query", ["Lock.call", "Rack::Lock#call"])
def test_a_deleted_method_looked_up_with_its_class_is_passed_over_though_others_share_its_name(
        store_env, make_repo, query):
    repo = make_repo("rack")
    repo.write("lib/rack/lock.rb", LOCK_RB).write("lib/rack/other.rb", OTHER_RB).commit("rack")
    index(repo)
    repo.delete("lib/rack/lock.rb").commit("drop Lock")
    index(repo)
    answer = searched(repo, query)
    assert answer.deleted_named == 1


OPTIONS_HPP = """#pragma once
#include <string>

namespace opts {

using ParsedHashMap = std::unordered_map<std::size_t, OptionValue>;

namespace {
constexpr std::size_t OPTION_LONGEST = 30;
}

class ParseResult {
 public:
  explicit ParseResult(ParsedHashMap values) : m_values(std::move(values)) {}

 private:
  ParsedHashMap m_values;
};

inline std::size_t longest(const ParsedHashMap& values) {
  return values.size() > OPTION_LONGEST ? OPTION_LONGEST : values.size();
}

}  // namespace opts
"""


@pytest.mark.parametrize(("query", "declaration"), [
    ("ParsedHashMap", "using ParsedHashMap ="),
    ("OPTION_LONGEST", "constexpr std::size_t OPTION_LONGEST = 30;"),
])
def test_a_name_declared_between_the_units_of_a_cpp_namespace_is_found_at_its_declaration(
        store_env, make_repo, query, declaration):
    repo = make_repo("cxxopts")
    repo.write("include/opts.hpp", OPTIONS_HPP)
    for n in range(4):
        repo.write(f"src/use_{n}.cpp",
                   f"#include \"opts.hpp\"\n\nint use_{n}(opts::ParsedHashMap map) {{\n"
                   "  return map.size() + opts::OPTION_LONGEST;\n}\n")
    repo.commit("options")
    index(repo)
    first = searched(repo, query, k=3).results[0].record
    assert first.path == "include/opts.hpp" and first.kind == "block" and declaration in first.text


def test_a_name_an_import_alias_gives_is_looked_up_at_that_import(store_env, make_repo):
    repo = make_repo("jinja")
    repo.write("jinja/defaults.py", "from .filters import FILTERS as DEFAULT_FILTERS\n"
                                    "from .tests import TESTS as DEFAULT_TESTS\n")
    uses = "".join(f"def prepare_{n}(env):\n    env.filters = DEFAULT_FILTERS.copy()\n"
                   f"    return DEFAULT_FILTERS.get(env.name, DEFAULT_FILTERS)\n\n\n"
                   for n in range(6))
    repo.write("jinja/environment.py", "from .defaults import DEFAULT_FILTERS\n\n\n" + uses)
    repo.commit("defaults")
    index(repo)
    first = searched(repo, "DEFAULT_FILTERS", k=3).results[0].record
    assert first.path == "jinja/defaults.py"



RETRIER_SWIFT = '''/// A type that decides whether a failed request is retried.
public protocol RequestRetrier {
    /// Decides whether the request is retried.
    func retry(_ request: Request, for session: Session, dueTo error: Error,
               completion: @escaping (RetryResult) -> Void)
}
'''


def test_a_protocols_requirement_looked_up_with_its_owner_is_answered_by_the_protocol(
        store_env, make_repo):
    conformers = "".join(
        f"final class Retrier{n}: RequestRetrier {{\n    func retry(_ request: Request, for "
        f"session: Session, dueTo error: Error, completion: @escaping (RetryResult) -> Void)"
        f" {{\n        completion(.retryWithDelay({n}))\n    }}\n}}\n\n" for n in range(6))
    repo = make_repo("alamofire")
    repo.write("Source/RequestInterceptor.swift", RETRIER_SWIFT)
    repo.write("Source/Retriers.swift", conformers).commit("retriers")
    index(repo)
    assert searched(repo, "RequestRetrier.retry", k=3).results[0].record.symbol == \
        "RequestRetrier"


CLIENT_RB = '''module Sidekiq
  class Client
    attr_accessor :redis_pool

    def push(item)
      redis_pool.with { |conn| conn.lpush("queue", item) }
    end
  end
end
'''


def test_an_attribute_looked_up_with_its_class_is_answered_by_the_class_declaring_it(
        store_env, make_repo):
    pools = "".join(f"module Sidekiq\n  class Pool{n}\n    def redis_pool\n      @pool_{n}\n"
                    f"    end\n  end\nend\n\n" for n in range(5))
    repo = make_repo("sidekiq")
    repo.write("lib/sidekiq/client.rb", CLIENT_RB).write("lib/sidekiq/pools.rb", pools)
    repo.commit("sidekiq")
    index(repo)
    assert searched(repo, "Sidekiq::Client#redis_pool", k=3).results[0].record.symbol == \
        "Sidekiq.Client"


def names_read(repo, names: list[str]) -> list[str]:
    """The symbols the name channel reads for ``names`` from the indexed ``repo``, in order."""
    opened = open_branch(str(repo.path), settings=Settings.from_env(), config=Config(),
                         branch=None, worktree=False, store=None, need_index=True)
    assert opened.index is not None
    return [record.symbol for record, _ in
            name_channel(opened.index, names, False, frozenset({"source", "test"}))]


def test_a_method_looked_up_with_its_owner_is_read_before_many_namesakes_in_earlier_paths(
        store_env, make_repo):
    repo = make_repo("retrofit")
    for n in range(30):
        repo.write(f"retrofit-adapters/a{n:02d}/src/Factory{n}.java",
                   f"final class Factory{n} {{\n  static Factory{n} create() {{\n"
                   f"    return new Factory{n}();\n  }}\n}}\n")
    repo.write("retrofit/src/main/java/retrofit2/Retrofit.java",
               "public final class Retrofit {\n  public <T> T create(final Class<T> service) {\n"
               "    validateServiceInterface(service);\n    return proxy(service);\n  }\n}\n")
    repo.commit("retrofit")
    index(repo)
    assert names_read(repo, ["create", "Retrofit.create"])[0] == "Retrofit.create"


def test_a_bare_name_reads_the_definition_named_exactly_so_before_namesake_members(
        store_env, make_repo):
    repo = make_repo("bubbletea")
    for n in range(30):
        repo.write(f"app{n:02d}/model.go", f"package app{n}\n\ntype model struct{{}}\n\n"
                   f"func (m model) View() string {{\n\treturn \"{n}\"\n}}\n")
    repo.write("tea.go", "package tea\n\n// View is what a model renders.\ntype View struct {\n"
                         "\tContent string\n}\n")
    repo.commit("tea")
    index(repo)
    assert names_read(repo, ["View"])[0] == "View"
    assert searched(repo, "View", k=1).results[0].record.symbol == "View"


def test_a_package_variable_is_looked_up_at_its_declaration_before_a_function_assigning_it(
        store_env, make_repo):
    repo = make_repo("viper")
    exts = '[]string{"json", "toml", "yaml", "yml", "properties", "hcl", "env", "ini"}'
    repo.write("viper.go",
               "package viper\n\nimport \"slices\"\n\n"
               "// Reset restores the defaults, for tests.\nfunc Reset() {\n\tv = New()\n"
               f"\tSupportedExts = {exts}\n\tresetRemote()\n}}\n\n"
               "// SupportedExts are universally supported extensions.\n"
               f"var SupportedExts = {exts}\n\n"
               "func (v *Viper) unmarshalReader(format string) error {\n"
               "\t// TODO: remove this once SupportedExts is deprecated\n"
               "\tif !slices.Contains(SupportedExts, format) {\n\t\treturn nil\n\t}\n"
               "\treturn v.decode(format)\n}\n")
    repo.commit("viper")
    index(repo)
    first = searched(repo, "SupportedExts", k=3).results[0].record
    assert (first.kind, first.start_line) == ("block", 12) and \
        "var SupportedExts" in first.text


UTILS_JS = '''\'use strict\';

var etag = require('etag');

/**
 * Return strong ETag for `body`.
 */

exports.etag = createETagGenerator({ weak: false })

/**
 * Return weak ETag for `body`.
 */

exports.wetag = createETagGenerator({ weak: true })

exports.compileETag = function(val) {
  var fn;
  if (val === true) {
    fn = exports.wetag;
  } else if (val === 'weak') {
    fn = exports.wetag;
  }
  return fn;
}

function createETagGenerator(options) {
  return function generateETag(body, encoding) {
    return etag(body, options);
  };
}
'''


def test_a_commonjs_export_looked_up_by_name_leads_with_the_module_declaring_it(
        store_env, make_repo):
    repo = make_repo("express")
    repo.write("lib/utils.js", UTILS_JS)
    repo.write("test/utils.js", "var utils = require('../lib/utils');\n\n"
                                "describe('utils.wetag(body)', function(){\n"
                                "  it('should support strings', function(){\n"
                                "    assert.strictEqual(utils.wetag('express!'), 'W/\"8\"')\n"
                                "    assert.strictEqual(utils.wetag(''), 'W/\"0\"')\n"
                                "  })\n})\n")
    repo.commit("utils")
    index(repo)
    first = searched(repo, "wetag", k=3).results[0].record
    assert first.path == "lib/utils.js" and "exports.wetag = " in first.text and \
        first.symbol != "compileETag"

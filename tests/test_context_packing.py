"""Packing a slice: best evidence first, implementation before examples, trimmed imports,
labels that equal their citations (issue 12, item 8: shaped like pallets/click)."""

from __future__ import annotations

import pytest
from search_fixtures import index

from freshmark.core.kinds import is_secondary
from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

QUERY = "how are environment variables used as default values for options envvar"
CORE = "src/clicky/core.py"
DECORATORS = "src/clicky/decorators.py"
UNUSED_IMPORTS = [f"import unused_module_{n}" for n in range(40)]


def _core_module() -> str:
    filler = "".join(
        f"    def helper_{n}(self, value):\n"
        f"        \"\"\"Helper {n} converts a value.\"\"\"\n"
        f"        result = value\n"
        f"        for _ in range({n}):\n"
        f"            result = self.convert(result)\n"
        f"        return result\n\n"
        for n in range(60))
    return (
        "\"\"\"The core of clicky: parameters and options.\"\"\"\n\n"
        "import os\n" + "\n".join(UNUSED_IMPORTS) + "\n\n\n"
        "class Parameter:\n"
        "    \"\"\"A parameter of a command.\"\"\"\n\n"
        "    def __init__(self, name, envvar=None, default=None):\n"
        "        self.name = name\n"
        "        self.envvar = envvar\n"
        "        self.default = default\n\n"
        "    def convert(self, value):\n"
        "        return value\n\n"
        "    def split_envvar_value(self, rv):\n"
        "        \"\"\"Environment variables as default values for options: split the\n"
        "        envvar into values.\"\"\"\n"
        "        return (rv or '').split()\n\n"
        + filler +
        "    def resolve_envvar_value(self, ctx):\n"
        "        \"\"\"Environment variables used as default values for options: read the\n"
        "        envvar when no value was given on the command line.\"\"\"\n"
        "        if self.envvar is None:\n"
        "            return None\n"
        "        return os.environ.get(self.envvar)\n\n"
        "    def value_from_envvar(self, ctx):\n"
        "        \"\"\"The envvar value of the option, the default when it is unset.\"\"\"\n"
        "        value = self.resolve_envvar_value(ctx)\n"
        "        return self.default if value is None else value\n"
    )


def _example(n: int) -> str:
    return (
        "from clicky.core import Parameter\n\n\n"
        f"def example_{n}(ctx):\n"
        f"    \"\"\"Example {n}: environment variables as default values for options.\"\"\"\n"
        f"    option = Parameter('name_{n}', envvar='EXAMPLE_{n}')\n"
        "    return option.resolve_envvar_value(ctx)\n"
    )


@pytest.fixture
def clicky(fm_home, make_repo):
    repo = make_repo("clicky")
    repo.write(CORE, _core_module())
    for n in range(30):  # more example callers than L3_MAX_SYMBOLS
        repo.write(f"examples/prog_{n}/main.py", _example(n))
    repo.write(DECORATORS, "from clicky.core import Parameter\n\n\n"
               "def option_default(param, ctx):\n"
               "    return param.resolve_envvar_value(ctx)\n")
    repo.commit("clicky", when="2026-09-01T10:00:00Z")
    index(repo.path)
    return repo


def slice_of(repo, level: str, budget: int | None = None):
    return build_context(ContextRequest.build(QUERY, level=level, budget_tokens=budget),
                         str(repo.path), settings=Settings.from_env())


def test_the_implementation_is_the_primary_evidence_not_an_example(clicky):
    (main,) = [s for s in slice_of(clicky, "L3").sections if s.role == "evidence"]
    assert main.path == CORE


def test_examples_come_after_the_implementation(clicky):
    sections = slice_of(clicky, "L3").sections
    later = [is_secondary(s.path) for s in sections if s.role in ("match", "related")]
    assert later == sorted(later)


def test_implementation_callers_come_before_example_callers(clicky):
    related = [s.path for s in slice_of(clicky, "L3").sections if s.role == "related"]
    assert related and related[0] == DECORATORS


def test_other_matches_are_packed_before_graph_neighbours(clicky):
    sections = slice_of(clicky, "L3").sections
    roles = [s.role for s in sections if not is_secondary(s.path)]
    matches = [i for i, role in enumerate(roles) if role == "match"]
    neighbours = [i for i, role in enumerate(roles) if role == "related"]
    assert matches and all(m < n for m in matches for n in neighbours)
    assert all(s.body for s in sections if s.role == "match" and s.path == CORE)


def test_long_import_block_is_trimmed_to_the_imports_the_symbol_uses(clicky):
    (imports,) = [s for s in slice_of(clicky, "L1").sections if s.role == "imports"]
    assert "import os" in imports.body
    assert not any(line in imports.body for line in UNUSED_IMPORTS)
    assert (imports.start_line, imports.end_line) == (3, 43)  # label: the whole block


def test_every_section_label_equals_its_citation(clicky):
    for level in ("L1", "L2", "L3"):
        for section in slice_of(clicky, level).sections:
            if section.citation is not None and section.role != "call_chain":
                lines = f"#L{section.start_line}-L{section.end_line}"
                assert lines in section.citation.lines()[0], (level, section.anchor)


GO_IMPORTS = ["bytes", "context", "errors", "fmt", "io", "os", "path/filepath", "sort",
              "strings", "sync", "time", "unicode"]


@pytest.fixture
def cobrish(fm_home, make_repo):
    repo = make_repo("cobrish")
    repo.write("command.go", "package cobrish\n\nimport (\n"
               + "".join(f'\t"{name}"\n' for name in GO_IMPORTS)
               + '\n\tflag "github.com/spf13/pflag"\n)\n\n'
               "// ParseFlags parses the persistent flag tree and the local flags.\n"
               "func (c *Command) ParseFlags(args []string) error {\n"
               "\tc.flagErrorBuf = new(bytes.Buffer)\n"
               "\treturn c.Flags().Parse(args, flag.ContinueOnError)\n"
               "}\n")
    repo.commit("cobrish", when="2026-09-01T10:00:00Z")
    index(repo.path)
    return repo


def test_a_go_import_group_is_trimmed_to_the_packages_the_function_uses(cobrish):
    request = ContextRequest.build("parse the persistent flag tree and the local flags",
                                   level="L1")
    sections = build_context(request, str(cobrish.path), settings=Settings.from_env()).sections
    (imports,) = [s for s in sections if s.role == "imports"]
    kept = [line.split(None, 1)[1] for line in imports.body.splitlines()]
    assert kept == ["import (", '"bytes"', 'flag "github.com/spf13/pflag"', ")"]


def test_imports_are_trimmed_to_what_the_symbol_uses_not_the_code_after_it(fm_home, make_repo):
    repo = make_repo("alpha")
    repo.write("alpha/core.py", "".join(f"import mod_{n}\n" for n in range(15)) + "\n\n"
               "def resolve_alpha_value(x):\n    return mod_1.resolve(x)\n\n\n"
               "def beta(x):\n    return mod_2.other(x)\n")
    repo.commit("alpha", when="2026-09-01T10:00:00Z")
    index(repo.path)
    request = ContextRequest.build("resolve_alpha_value", level="L1")
    sections = build_context(request, str(repo.path), settings=Settings.from_env()).sections
    (main,) = [s for s in sections if s.role == "evidence"]
    assert "mod_2.other" in main.body  # the breathing room shows beta...
    (imports,) = [s for s in sections if s.role == "imports"]
    assert [line.split(None, 1)[1] for line in imports.body.splitlines()] == ["import mod_1"]


def _ledger_evidence(make_repo, short_signature: str, long_signature: str):
    """The L1 evidence for ``settle_the_ledger_balance``, followed by a 2-line definition and
    a 32-line one, each under the signature given."""
    repo = make_repo("room")
    long_body = "".join(f"    step_{n} = x + {n}\n" for n in range(30))
    repo.write("room/core.py", "def settle_the_ledger_balance(x):\n    return x\n\n\n"
               f"{short_signature}\n    return x\n\n\n"
               f"{long_signature}\n{long_body}    return x\n")
    repo.commit("room", when="2026-09-01T10:00:00Z")
    index(repo.path)
    request = ContextRequest.build("settle_the_ledger_balance", level="L1")
    sections = build_context(request, str(repo.path), settings=Settings.from_env()).sections
    (main,) = [s for s in sections if s.role == "evidence"]
    return main


def test_the_breathing_room_stops_between_definitions_not_inside_the_next(fm_home, make_repo):
    main = _ledger_evidence(make_repo, "def short(x):", "def long_one(x):")
    assert main.body.splitlines()[-1] == "    return x"  # the end of short()
    assert "def long_one" not in main.body and main.shown_end == 6


def test_the_breathing_room_stops_above_a_later_definition_of_a_repeated_name(
        fm_home, make_repo):
    main = _ledger_evidence(make_repo, "def parse(x: int) -> int:", "def parse(x):")
    assert main.body.splitlines()[-1] == "    return x"  # the end of the first parse()
    assert "step_0" not in main.body and main.shown_end == 6


def test_a_test_helper_asked_for_by_name_is_the_evidence_not_the_code_near_it(fm_home, make_repo):
    repo = make_repo("patches")
    repo.write("src/patches.py", "def apply_patches(base, patches):\n"
               "    \"\"\"Apply patches to base: run each patch test.\"\"\"\n"
               "    for patch in patches:\n        base = patch(base)\n    return base\n")
    repo.write("tests/test_patches.py", "from src.patches import apply_patches\n\n\n"
               "def run_patch_tests(cases):\n    for case in cases:\n"
               "        assert apply_patches(case.base, case.patches) == case.expected\n")
    repo.commit("patches", when="2026-09-01T10:00:00Z")
    index(repo.path)
    request = ContextRequest.build("run_patch_tests", level="L1")
    sections = build_context(request, str(repo.path), settings=Settings.from_env()).sections
    (main,) = [s for s in sections if s.role == "evidence"]
    assert (main.path, main.symbol) == ("tests/test_patches.py", "run_patch_tests")


def test_a_go_type_named_with_another_package_is_not_this_packages_type(fm_home, make_repo):
    repo = make_repo("chi")
    repo.write("mux.go", "package chi\n\nimport \"net/http\"\n\n"
               "type Mux struct {\n\thandlers map[string]http.Handler\n}\n\n"
               "// Mount attaches a handler under a pattern.\n"
               "func (mx *Mux) Mount(pattern string, handler http.Handler) *Mux {\n"
               "\tmx.handlers[pattern] = handler\n\treturn mx\n}\n")
    repo.write("_examples/custom/main.go", "package main\n\n"
               "type Handler struct {\n\tname string\n}\n")
    repo.commit("chi", when="2026-09-01T10:00:00Z")
    index(repo.path)
    request = ContextRequest.build("Mux.Mount", level="L1")
    sections = build_context(request, str(repo.path), settings=Settings.from_env()).sections
    types = [(s.path, s.symbol) for s in sections if s.role == "type"]
    assert ("mux.go", "Mux") in types
    assert not [path for path, _ in types if path.startswith("_examples/")]

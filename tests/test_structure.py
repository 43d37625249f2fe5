"""Structure in the ranking: a class outline or module block does not outrank the member that
answers the question (the two swap places: the outline stays in the ranking as context), and a
name written with its owner picks that owner's member."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshmark.core.declarations import defined_in_text
from freshmark.core.fusion import DEFAULT_WEIGHTS, fuse, rerank
from freshmark.core.query import plan_query
from freshmark.core.ruby_names import ruby_class_method_asked
from freshmark.core.stamp import ChunkRecord
from freshmark.core.structure import (
    Placement,
    Unit,
    declaring_lines,
    definitions_first,
    look_up_order,
    lookup_symbols,
    members_first,
    named_exactly,
    qualified_hit,
    text_definitions_first,
    without_declaration_word,
    workers_first,
)

APP = "src/flask/app.py"


def _record(doc_id: str, symbol: str, kind: str, path: str = APP) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       kind=kind, start_line=1, end_line=20,
                       indexed_at="2026-01-01T00:00:00Z", blob_sha="b" * 40,
                       content_sha256="d" * 64, id=doc_id, signature=f"{kind} {symbol}")


def _ranked_ids(query: str, records: list[ChunkRecord], bm25: list[float]) -> list[str]:
    """Records found by BM25 alone with the given scores (best first as listed)."""
    candidates = fuse({r.id: r for r in records},
                      [(r.id, s) for r, s in zip(records, bm25, strict=True)], [])
    return [c.record.id for c in rerank(candidates, plan_query(query))]


def test_a_class_outline_gives_its_place_to_its_member_that_matches_the_question():
    outline = _record("outline", "Flask", "class")
    member = _record("member", "Flask.handle_exception", "method")
    other = _record("other", "log_exception", "function", path="src/flask/logging.py")
    ranked = _ranked_ids("how does the app handle an exception",
                         [outline, other, member], [9.0, 8.0, 5.0])
    # The member has the body the outline lacks (``substance``), so it leads on its own score
    # and the outline, the file's second chunk, follows it as context.
    assert ranked == ["member", "outline", "other"]


def test_without_substance_the_outline_swaps_places_with_its_member():
    outline = _record("outline", "Flask", "class")
    member = _record("member", "Flask.handle_exception", "method")
    other = _record("other", "log_exception", "function", path="src/flask/logging.py")
    candidates = fuse({r.id: r for r in (outline, other, member)},
                      [("outline", 9.0), ("other", 8.0), ("member", 5.0)], [])
    ranked = rerank(candidates, plan_query("how does the app handle an exception"),
                    replace(DEFAULT_WEIGHTS, substance=0.0, question_model=False))
    assert [c.record.id for c in ranked] == ["member", "other", "outline"]


def test_the_outline_stays_first_when_the_query_is_the_class_name():
    outline = _record("outline", "HTTPAdapter", "class", path="src/requests/adapters.py")
    member = _record("member", "HTTPAdapter.send", "method", path="src/requests/adapters.py")
    assert _ranked_ids("HTTPAdapter", [outline, member], [9.0, 8.0])[0] == "outline"


def test_a_module_block_gives_its_place_to_the_definition_of_its_file_that_matches():
    block = _record("block", "<module>#2", "block", path="src/celery/exceptions.py")
    definition = _record("definition", "TaskRetried", "class", path="src/celery/exceptions.py")
    elsewhere = _record("elsewhere", "on_error", "function", path="src/other.py")
    ranked = _ranked_ids("retry after failure", [block, elsewhere, definition], [9.0, 8.0, 7.5])
    assert ranked == ["definition", "elsewhere", "block"]


def test_a_member_that_barely_matches_does_not_displace_the_outline():
    units = [Unit(APP, "Flask", "class", 1.0), Unit(APP, "other", "function", 0.8),
             Unit(APP, "Flask.run", "method", 0.2)]
    assert [p.index for p in members_first(units, ["flask", "config"])] == [0, 1, 2]


def test_member_and_outline_swap_places_and_scores_so_the_file_ranking_stays():
    units = [Unit(APP, "Flask", "class", 1.0), Unit("b.py", "g", "function", 0.9),
             Unit(APP, "Flask.run", "method", 0.7)]
    placements = members_first(units, ["start", "server"])
    assert [(p.index, p.score, p.role) for p in placements] == [
        (2, 1.0, "answers"), (1, 0.9, ""), (0, 0.7, "context")]


def test_a_name_written_with_its_owner_ranks_that_owners_member_first():
    mine = _record("mine", "Retry.call_with_retry", "method", path="redis/retry.py")
    outline = _record("outline", "Retry", "class", path="redis/retry.py")
    namesake = _record("namesake", "Backoff.call_with_retry", "method", path="redis/other.py")
    ranked = _ranked_ids("Retry.call_with_retry", [namesake, outline, mine], [9.0, 8.5, 8.0])
    assert ranked[0] == "mine"


def test_qualified_hit_needs_the_owner_and_the_name():
    assert qualified_hit("Context.invoke", ["Context/invoke"]) == 1.0
    assert qualified_hit("Context.invoke", ["click/core/Context/invoke"]) == 1.0
    assert qualified_hit("Command.invoke", ["Context/invoke"]) == 0.0
    assert qualified_hit("invoke", ["Context/invoke"]) == 0.0


def test_the_definition_a_query_names_as_code_ranks_above_its_callers():
    caller = _record("caller", "Flask.full_dispatch_request", "method")
    caller.references = ["make_response", "dispatch_request"]
    other = _record("other", "send_file", "function", path="src/flask/helpers.py")
    definition = _record("definition", "Flask.make_response", "method")
    ranked = _ranked_ids("what does make_response return for a tuple",
                         [caller, other, definition], [9.0, 8.0, 1.0])
    assert ranked == ["definition", "caller", "other"]


def test_a_name_said_in_prose_moves_no_definition():
    caller = _record("caller", "Flask.full_dispatch_request", "method")
    caller.references = ["response"]
    definition = _record("definition", "response", "function", path="src/flask/helpers.py")
    ranked = _ranked_ids("what response does a view return", [caller, definition], [9.0, 1.0])
    assert ranked == ["caller", "definition"]


@pytest.mark.parametrize("line", [
    "BIT_SET = 1",
    "  public static final TypeAdapter<BitSet> BIT_SET = new TypeAdapter<BitSet>() {",
    "const BIT_SET: ReadonlySet<string> = new Set(['GET']);",
    "export let BIT_SET = [];",
    "pub const BIT_SET: u8 = 3;",
    "BIT_SET: int",
    "    private int BIT_SET;",
    "\tBIT_SET io.Writer = os.Stderr",
    "#define BIT_SET (1 << 3)",
    "# define BIT_SET 8",
    "@JvmField public val BIT_SET: ClassName = ClassName(\"kotlin\", \"Set\")",
    "@Deprecated(\"old\") public static final int BIT_SET = 3;",
    "using BIT_SET = std::unordered_map<std::size_t, OptionValue>;",
    "constexpr std::size_t BIT_SET = 30;",
    "typedef std::vector<int> BIT_SET;",
    "var BIT_SET remoteConfigFactory",
    "\tBIT_SET *Flag // the set",
    "    BIT_SET = 1 << 3,",  # an enum's member
    "    val BIT_SET: Int,",  # a Kotlin constructor's property
    "from .flags import FLAGS as BIT_SET",  # an alias names it (jinja's DEFAULT_FILTERS)
    "import bitset as BIT_SET",
    # A function declared inside another has no chunk of its own (ofetch's onError).
    "  async function BIT_SET(context) {",
    "    def BIT_SET(x):",
    "export function* BIT_SET<T>(x: T) {",
    "const (\n\tBIT_SET_NONE Mode = iota\n\tBIT_SET",  # Go's const block after an iota
    "const (\n\tA = iota\n\tBIT_SET // the third flag",
    "typedef void (*BIT_SET)(void *, jv);",  # C's function pointer type
    "    alias_method :BIT_SET, :bit_set_flag",  # Ruby's aliases
    "  alias BIT_SET bit_set_flag",
    '    case BIT_SET = "bit";',  # an enum's case (PHP, Swift)
    "    case BIT_SET",
    "    case north, BIT_SET",
    "exports.BIT_SET = createFlags({ weak: true })",  # a CommonJS export (express's wetag)
    "module.exports.BIT_SET = 3",
])
def test_a_line_declaring_a_name_is_its_definition(line):
    assert defined_in_text(f"x = 0\n{line}\ny = 1", ["BIT_SET"])


@pytest.mark.parametrize("line", [
    "out = BIT_SET",
    "if BIT_SET == 3:",
    "self.BIT_SET = 2",
    "use(BIT_SET)",
    "BIT_SET_FACTORY = make(BIT_SET)",
    "crate::BIT_SET::x",
    "#ifdef BIT_SET",
    "return BIT_SET == other",
    "@Inject BIT_SET_FACTORY = make(BIT_SET)",
    "return BIT_SET",
    "BIT_SET is set when the flag is",
    "    BIT_SET: SIMPLE,",  # a dict's entry (rich's box.py)
    "from .flags import BIT_SET as FLAGS",
    "    BIT_SET fd = c->fd;",  # a C variable of the type BIT_SET
    "  return function BIT_SET_FACTORY(x) {",
    "  fn(BIT_SET)(x);",
    "    alias_method :bit_set_flag, :BIT_SET",  # the name aliased, not declared
    "  def self.callers\n    BIT_SET\n  end",  # a Ruby method returning a constant
    "const (\n\tA = 1\n)\n\nfunc f() {\n\tBIT_SET\n}",  # after the block closed
    "    case BIT_SET:",  # a switch's label
    "    case BIT_SET ->",
    "if (exports.BIT_SET === flags) {",
    "  app.exports.BIT_SET = 2",
])
def test_a_line_using_a_name_is_not_its_definition(line):
    assert not defined_in_text(line, ["BIT_SET"])


def test_a_lower_case_name_alone_on_its_line_is_a_call_not_a_definition():
    assert not defined_in_text("  setup\n  run", ["setup"])  # Ruby calls a method so


def test_declarations_move_to_the_top_in_their_order_with_the_tops_score():
    order = [Placement(0, 3.0), Placement(1, 2.0), Placement(2, 1.0), Placement(3, 0.5)]
    moved = text_definitions_first(order, [False, False, True, True])
    assert [(p.index, p.score, p.role) for p in moved] == [
        (2, 3.0, "named"), (3, 3.0, "named"), (0, 3.0, ""), (1, 2.0, "")]


def test_a_look_up_leads_with_the_definitions_spelt_as_asked() -> None:
    units = [Unit("a.py", "WithValue", "function", 3.0), Unit("b.rb", "Base.default_options",
                                                               "method", 2.0),
             Unit("mux.go", "Mux.With", "method", 1.0)]
    assert named_exactly(units, ["With"]) == [False, False, True]
    assert named_exactly(units, ["DEFAULT_OPTIONS"]) is None
    assert named_exactly(units, ["DEFAULT_OPTIONS"], [True, False, False]) == [True, False, False]


def test_a_camel_case_value_is_looked_for_by_its_declaring_line_beside_its_type() -> None:
    symbols = ["SubscribeWithSelector", "<module>#2"]
    texts = ["type SubscribeWithSelector = <T>(init: T) => T",
             "export const subscribeWithSelector =\n  subscribeWithSelectorImpl as unknown as "
             "SubscribeWithSelector"]
    assert declaring_lines(symbols, texts, ["subscribeWithSelector"]) == [False, True]
    assert declaring_lines(symbols, texts, ["SubscribeWithSelector"]) is None


def test_a_lower_case_word_names_a_capitalised_definition_when_none_is_spelt_so() -> None:
    units = [Unit("persist.ts", "PersistListener", "interface", 3.0),
             Unit("persist.ts", "Persist", "interface", 2.0)]
    assert named_exactly(units, ["persist"]) == [False, True]
    assert named_exactly([*units, Unit("persist.ts", "persist", "function", 1.0)],
                         ["persist"]) == [False, False, True]


def test_an_owner_written_before_a_field_without_a_chunk_names_neither_its_constructors():
    units = [Unit("ClassName.java", "ClassName.ClassName", "constructor", 3.0),
             Unit("ClassName.java", "ClassName", "class", 2.0)]
    wanted = ["ClassName", "OBJECT", "ClassName.OBJECT"]
    assert named_exactly(units, wanted, [False, True]) == [False, True]
    assert named_exactly(units, wanted) is None


def test_a_question_naming_a_class_keeps_its_answering_member_above_the_outline():
    outline = Unit("TypeName.java", "TypeName", "class", 3.0)
    member = Unit("TypeName.java", "TypeName.get", "method", 2.5, ("TypeName", "Type"))
    caller = Unit("ClassName.java", "ClassName.box", "method", 2.0, ("TypeName",))
    units = [outline, member, caller]
    order = definitions_first(units, members_first(units, ["convert", "type", "typename"]),
                              ["TypeName"])
    assert [units[p.index].symbol for p in order] == ["TypeName.get", "TypeName",
                                                      "ClassName.box"]


def test_a_named_class_still_moves_above_a_caller_outside_it():
    caller = Unit("JavaFile.java", "JavaFile.emit", "method", 3.0, ("TypeName",))
    outline = Unit("TypeName.java", "TypeName", "class", 2.0)
    units = [caller, outline]
    order = definitions_first(units, [Placement(0, 3.0), Placement(1, 2.0)], ["TypeName"])
    assert [units[p.index].symbol for p in order] == ["TypeName", "JavaFile.emit"]


@pytest.mark.parametrize(("query", "name"), [
    ("class Typer", "Typer"), ("def dumps", "dumps"), ("TyperArgument class", "TyperArgument"),
    ("fn split_off", "split_off"), ("class instance", "class instance"),
    ("type conversion", "type conversion"), ("class Foo bar", "class Foo bar")])
def test_a_declaration_keyword_beside_one_name_written_as_code_is_dropped(query, name):
    assert without_declaration_word(query) == name


@pytest.mark.parametrize(("query", "names"), [
    ("Ky.#retry", ["#retry", "Ky.#retry"]), ("#retry", ["#retry"]),
    ("#getCurrentTime", ["#getCurrentTime"])])
def test_a_private_member_is_looked_up_by_its_name_with_its_hash(query, names):
    plan = plan_query(query)
    assert lookup_symbols(plan.text, plan.identifiers, plan.path_hints) == names


@pytest.mark.parametrize(("query", "names"), [
    ("Rack::Headers#[]=", ["[]=", "Rack.Headers.[]="]), ("Headers.<=>", ["<=>", "Headers.<=>"]),
    ("Rack::Response::Helpers#content_type=",
     ["content_type=", "Rack.Response.Helpers.content_type="]),
    ("content_type=", ["content_type="]), ("def []", ["[]"])])
def test_a_ruby_setter_or_operator_method_is_looked_up_by_its_name_as_written(query, names):
    plan = plan_query(query)
    assert lookup_symbols(plan.text, plan.identifiers, plan.path_hints) == names


def test_a_macro_invoked_with_its_bang_is_looked_up_by_its_name_too():
    plan = plan_query("json!")
    assert lookup_symbols(plan.text, plan.identifiers, plan.path_hints) == ["json!", "json"]


def test_a_bare_name_names_a_private_member_as_it_does_a_public_one() -> None:
    units = [Unit("errors.ts", "RetryError", "class", 3.0),
             Unit("Ky.ts", "Ky.#retry", "method", 2.0)]
    assert named_exactly(units, ["retry"]) == [False, True]


def test_a_private_member_of_a_bare_name_looked_up_follows_the_definition_of_that_name():
    symbols = ["Ky.#retry", "retry"]
    assert look_up_order(symbols, ["", ""], ["source", "source"], ["retry"]) == [1, 0]


def test_a_ruby_method_looked_up_on_its_class_is_its_class_method_and_with_a_hash_the_other():
    symbols = ["Parser.parse", "Parser.parse"]
    texts = ["def parse(io)\n  io.read\nend", "# Parses a body.\ndef self.parse(io)\nend"]
    order = [look_up_order(symbols, texts, ["source"] * 2, ["Parser.parse"],
                           on_class=ruby_class_method_asked(query))
             for query in ("Rack::Multipart::Parser.parse", "Parser::parse", "Parser#parse")]
    assert order == [[1, 0], [1, 0], [0, 1]]
    assert ruby_class_method_asked("Rack::Multipart::Parser") is None
    assert ruby_class_method_asked("parse") is None


def test_a_namespace_outline_declaring_a_name_follows_the_module_block_that_declares_it():
    symbols = ["cxxopts", "<module>#20", "cxxopts"]
    assert look_up_order(symbols, ["", "", ""], ["source"] * 3, ["ParsedHashMap"],
                         ["module", "block", "module"]) == [1, 0, 1]
    assert look_up_order(symbols, ["", "", ""], ["source"] * 3, ["cxxopts"],
                         ["module", "block", "module"]) == [0, 0, 0]


def test_a_private_definition_named_with_its_hash_moves_above_its_callers() -> None:
    caller = Unit("Ky.ts", "Ky.#calculateRetryDelay", "method", 3.0, ("#getCurrentTime",))
    definition = Unit("Ky.ts", "Ky.#getCurrentTime", "method", 2.0)
    units = [caller, definition]
    order = definitions_first(units, [Placement(0, 3.0), Placement(1, 2.0)],
                              ["#getCurrentTime"])
    assert [units[p.index].symbol for p in order] == ["Ky.#getCurrentTime",
                                                      "Ky.#calculateRetryDelay"]


def _worker_order(units: list[Unit]) -> list[str]:
    order = workers_first(units, [Placement(i, u.score) for i, u in enumerate(units)])
    return [units[p.index].symbol for p in order]


RACK = "lib/rack/utils.rb"


def test_the_function_doing_the_work_comes_above_a_thin_wrapper_of_its_file_calling_it():
    units = [Unit(RACK, "Utils.byte_ranges", "method", 1.0, ("get_byte_ranges",), 3),
             Unit(RACK, "Utils.escape", "method", 0.95, (), 8),
             Unit(RACK, "Utils.get_byte_ranges", "method", 0.9, ("split",), 30)]
    assert _worker_order(units) == [
        "Utils.get_byte_ranges", "Utils.byte_ranges", "Utils.escape"]


@pytest.mark.parametrize(("path", "score", "lines"), [
    ("lib/rack/other.rb", 0.9, 30),  # another file's: the wrapper may be the API asked for
    (RACK, 0.5, 30),  # far weaker: the question is about the wrapper
    (RACK, 0.9, 2)])  # no more work than the wrapper
def test_a_thin_wrapper_keeps_its_place_above_a_callee_that_is_not_its_worker(path, score, lines):
    units = [Unit(RACK, "Utils.byte_ranges", "method", 1.0, ("get_byte_ranges",), 3),
             Unit(path, "Utils.get_byte_ranges", "method", score, (), lines)]
    assert _worker_order(units) == ["Utils.byte_ranges", "Utils.get_byte_ranges"]


@pytest.mark.parametrize("query", ["impl Display for Token", "impl fmt::Display for Token"])
def test_an_impl_block_is_looked_up_by_its_label_with_or_without_its_traits_path(query):
    units = [Unit("src/render.rs", f"display_token_{n}", "function", 2.0) for n in range(3)] + \
        [Unit("src/token.rs", "Token.fmt", "method", 1.0),
         Unit("src/token.rs", "impl fmt.Display for Token", "impl", 0.5)]
    assert named_exactly(units, lookup_symbols(query, [], [])) == [False] * 4 + [True]


RESET = ("// Reset restores the defaults.\nfunc Reset() {\n\tv = New()\n"
         "\tSupportedExts = []string{\"json\", \"toml\"}\n}")


@pytest.mark.parametrize("kind, text, name", [
    ("function", RESET, "SupportedExts"),
    ("function", "def reset():\n    global DEFAULTS\n    DEFAULTS = {'json': 1}\n", "DEFAULTS"),
    ("method", "reset() {\n    const LIMIT = 3;\n    return LIMIT;\n  }", "LIMIT"),
    ("function", "function reset() {\n  supportedExts = ['json'];\n}", "supportedExts"),
])
def test_a_functions_assignment_to_a_name_is_no_declaration_of_it(kind, text, name) -> None:
    declaring = f"// {name} are the extensions.\nvar {name} = []string{{\"json\"}}"
    assert declaring_lines(["reset", "<module>#2"], [text, declaring], [name],
                           chunk_kinds=[kind, "block"]) == [False, True]


def test_a_module_block_declaring_the_looked_up_name_keeps_its_place_above_its_members():
    units = [Unit("viper.go", "<module>#2", "block", 1.0), Unit("viper.go", "Reset",
                                                                  "function", 0.9)]
    placements = members_first(units, ["supportedexts"], declaring=[True, False])
    assert [(p.index, p.role) for p in placements] == [(0, ""), (1, "")]

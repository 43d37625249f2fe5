"""A pasted error message finds the code that raises it: its fixed words are in that code's
string literal, the values the run filled in are not (``freshmark.core.messages``, pure; and
through search on a repository indexed in the test)."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.messages import message_windows, messages_first
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.retrieval.search import search

RAISER = '''def parse_args(ctx, args):
    """Parse the command line's arguments into the context."""
    if args and not ctx.allow_extra_args:
        ctx.fail(ngettext("Got unexpected extra argument ({args})",
                          "Got unexpected extra arguments ({args})", len(args)))
    return args
'''
BARS = '''class ProgressBar:
    """A progress bar: an unexpected bar, an extra bar, a bar argument, got as the bar."""

    def render_bar(self, bar, extra, argument):
        """Render the bar: the extra argument got is the bar's unexpected extra width."""
        return bar * extra * argument


def bar_argument(bar, extra):
    """The bar argument: got an extra bar, an unexpected bar argument."""
    return bar + extra
'''


def test_a_pasted_message_reads_as_its_fixed_words_without_the_values_filled_in():
    windows = message_windows("Error: Got unexpected extra argument (bar)")
    assert "got unexpected extra argument" in windows
    assert not any("bar" in window for window in windows)
    assert "no active click context" in message_windows(
        "RuntimeError: There is no active click context.")
    windows = message_windows("Error: Invalid value for '--count': 'x' is not a valid integer.")
    assert {"is not a valid", "not a valid integer"} <= set(windows)
    assert not any("count" in window or " x " in f" {window} " for window in windows)


def test_a_question_is_no_pasted_message():
    assert message_windows("where are unexpected extra arguments reported") == []
    assert message_windows("How is a rule like '/user/<int:id>/posts' broken into pieces?") == []
    assert message_windows("how is the error: reported to the user") == []


def test_the_chunks_holding_the_message_come_first_in_their_order():
    texts = ["the bar", "raise Oops('got unexpected extra argument')", "the end",
             "# Got unexpected  extra argument!"]
    assert messages_first(texts, ["got unexpected extra argument"]) == [1, 3, 0, 2]
    assert messages_first(texts, []) == [0, 1, 2, 3]


def test_a_pasted_error_message_finds_the_function_that_raises_it_first(fm_home, make_repo):
    repo = indexed_project(make_repo("cli"), {"cli/core.py": RAISER, "cli/progress.py": BARS},
                           package="cli")
    answer = search(SearchRequest.build("Error: Got unexpected extra argument (bar)", k=3),
                    str(repo.path), settings=Settings.from_env())
    assert answer.results[0].record.symbol == "parse_args"


def test_only_the_chunks_holding_the_message_are_explained_as_holding_it(fm_home, make_repo):
    repo = indexed_project(make_repo("cli"), {"cli/core.py": RAISER, "cli/progress.py": BARS},
                           package="cli")
    answer = search(SearchRequest.build("Error: Got unexpected extra argument (bar)", k=5),
                    str(repo.path), settings=Settings.from_env())
    holding = {r.record.symbol for r in answer.results if r.explain.get("holds_message")}
    assert holding == {"parse_args"} and len(answer.results) > 1


def test_a_message_printed_after_the_programs_name_is_a_pasted_message():
    assert {"cannot combine compress and", "combine compress and chunked"} <= set(
        message_windows("http: error: cannot combine --compress and --chunked"))
    assert message_windows("config: the value is wrong") == []


def test_a_format_string_pasted_from_the_code_keeps_its_placeholders_as_words():
    windows = message_windows("Undefined validation function '%s' on field '%s'")
    assert "undefined validation function s" in windows
    literal = 'undefinedValidation = "Undefined validation function \'%s\' on field \'%s\'"'
    assert messages_first(["panic(undefinedValidation)", literal], windows) == [1, 0]
    assert message_windows("100% of it is empty") == []


def test_a_ruby_message_with_its_class_last_or_a_message_in_quotes_is_a_pasted_message():
    assert message_windows("retry_for must be a relative amount of time (ArgumentError)")[0] \
        == "retry for must be"
    assert message_windows('"Message must include a Sidekiq::Job class, not class name"')[0] \
        == "message must include a"
    assert message_windows('"how does the retry delay grow"') == []
    assert message_windows("where is the job pushed (the client)") == []


def test_a_sentence_pasted_from_the_code_finds_the_chunk_holding_all_of_it():
    windows = message_windows("Build the request and print it but don't actually send it.")
    assert windows == ["build the request and print it but don t actually send it"]
    texts = ["def send(request):\n    return transport.send(request)",
             "parser.add_argument('--offline', help=\"Build the request and print it but "
             "don't actually send it.\")"]
    assert messages_first(texts, windows) == [1, 0]
    assert message_windows("how do I build the request and print it") == []
    pasted = ('"getActivePinia()" was called but there was no active Pinia. Are you trying to '
              'use a store before calling "app.use(pinia)"?')
    thrown = ("throw new Error(\n  `[🍍]: \"getActivePinia()\" was called but there was no "
              "active Pinia. Are you trying to use a store before calling "
              "\"app.use(pinia)\"?`\n)")
    assert messages_first(["export function getActivePinia() {}", thrown],
                          message_windows(pasted)) == [1, 0]
    assert message_windows("retry the request on a 503") == []


def test_a_message_pasted_without_its_class_is_read_by_its_fixed_words():
    assert message_windows("Invalid URL 'example.com/api': No scheme supplied. Perhaps you "
                           "meant https://example.com/api?") == [
        "no scheme supplied perhaps", "scheme supplied perhaps you", "supplied perhaps you meant"]


def test_a_message_continued_in_a_second_prefixed_literal_is_held_by_its_code():
    code = ('raise MissingSchema(\n    f"Invalid URL {url!r}: No scheme supplied. "\n'
            '    f"Perhaps you meant https://{url}?"\n)')
    windows = message_windows("Invalid URL 'x.com': No scheme supplied. Perhaps you meant it?")
    assert messages_first(["def other(): pass", code], windows) == [1, 0]


def test_a_placeholder_of_the_raising_literal_stands_for_the_word_filled_in():
    windows = message_windows("jq: error (at <stdin>:1): Cannot index number with number (0)")
    texts = ["cannot index the number", 'return type_error2(t, k, "Cannot index %s with %s");']
    assert messages_first(texts, windows) == [1, 0]


def test_the_words_of_a_go_error_opening_are_the_messages_own():
    windows = message_windows("bubbletea: error opening TTY: no such device")
    texts = ["no such device here", 'return fmt.Errorf("bubbletea: error opening TTY: %w", err)']
    assert messages_first(texts, windows) == [1, 0]


def test_a_sentence_with_a_value_filled_in_is_read_as_the_runs_around_it():
    windows = message_windows("The file config/routes.rb does not appear to exist")
    texts = ["the file does not exist", 'raise Error, "The file #{destination} does not appear '
             'to exist"']
    assert messages_first(texts, windows) == [1, 0]


def test_a_long_run_without_spaces_is_read_in_time_linear_in_its_length():
    # Read quadratically, 9,000 stars took 0.8 s (so 90,000 about a hundred times that).
    assert message_windows("a b c d e f " + "*" * 90_000) == ["a b c d e f"]


def test_a_question_not_opening_with_a_question_word_is_read_whole():
    question = "With the dot option, how do form fields like obj.key1 become nested objects?"
    assert message_windows(question) == [
        "with the dot option how do form fields like obj key become nested objects"]


def test_a_text_of_adjacent_placeholders_holds_no_message():
    windows = message_windows("Error: cannot combine compress and chunked")
    table = "const cases = [" + ", ".join("`${a}` `${b}`" for _ in range(12)) + "]"
    assert messages_first(["plain", table], windows) == [0, 1]


def test_a_message_of_short_runs_between_its_values_is_read_by_runs_of_three_words():
    windows = message_windows("Error: The value 'abc' is invalid for '--count <count>'")
    assert windows == ["is invalid for"]
    swift = 'return "The value \'\\(value)\' is invalid for \'\\(name)\'"'
    assert messages_first(["the value is invalid", swift], windows) == [1, 0]


def test_a_bare_error_label_is_the_printers_not_the_messages():
    assert message_windows("Error: Missing value for '--count <count>'") == ["missing value for"]


def test_a_message_the_exception_quotes_whole_is_read_inside_its_quotes():
    windows = message_windows("tqdm.std.TqdmKeyError: 'Can only have one of --bytes --update'")
    assert "can only have one" in windows
    texts = ["class TqdmKeyError(KeyError):\n    pass",
             'raise TqdmKeyError("Can only have one of --bytes --update --update_to")']
    assert messages_first(texts, windows) == [1, 0]


def test_an_exception_named_by_its_qualified_name_opens_a_pasted_message():
    assert message_windows("HTTParty::RedirectionTooDeep: HTTP redirects too deep") == [
        "http redirects too deep"]
    assert message_windows("requests.exceptions.ConnectTimeout: the connection timed out") == [
        "the connection timed out"]


def test_words_in_parentheses_are_the_messages_own_a_value_there_is_filled_in():
    windows = message_windows("java.io.EOFException: size < 4: 2 (to read code point prefixed "
                              "0xf0)")
    assert "to read code point" in windows
    kotlin = 'throw EOFException("size < 4: $n (to read code point prefixed 0x${b.hex()})")'
    assert messages_first(["class EOFException : IOException()", kotlin], windows) == [1, 0]


def test_a_long_raiser_past_the_pool_that_holds_the_message_is_found_first(fm_home, make_repo):
    decoys = "".join(f"def check_map_{n}(config):\n    # missing type map {n}: a mapping "
                     f"configuration unsupported\n    return config.get('map_{n}')\n\n\n"
                     for n in range(60))
    steps = "".join(f"    plan_{n} = build_step(plan_{n - 1 if n else 'x'}, {n})\n"
                    for n in range(80))
    raiser = (f"def build_execution_plan(types, config):\n{steps}"
              "    if plan_79 is None:\n        raise MappingError(\"Missing type map "
              "configuration or unsupported mapping.\")\n    return plan_79\n")
    repo = indexed_project(make_repo("mapper"), {"mapper/checks.py": decoys,
                                                 "mapper/plan.py": raiser}, package="mapper")
    answer = search(SearchRequest.build("Missing type map configuration or unsupported "
                                        "mapping.", k=3), str(repo.path),
                    settings=Settings.from_env())
    assert answer.results[0].record.symbol == "build_execution_plan"


def test_a_task_in_words_with_example_values_is_held_only_by_a_text_holding_all_of_it():
    windows = message_windows("raise an exception for 4xx and 5xx responses")
    prose = "We can raise an exception for any responses which are not a 2xx success code:"
    literal = 'raise StatusError(f"raise an exception for {low} and {high} responses")'
    assert messages_first([prose, literal], windows) == [1, 0]


GUIDE = """# Quickstart

## Response status codes

We can raise an exception for any responses which are not a 2xx success code:

    response.raise_for_status()
"""
STATUS = '''class Response:
    def raise_for_status(self):
        """Raise the `StatusError` if one occurred."""
        if self.status_code >= 400:
            raise StatusError(self.status_code)
        return self
'''


def test_prose_sharing_a_few_words_of_a_task_in_words_is_not_put_first(fm_home, make_repo):
    repo = indexed_project(make_repo("web"), {"docs/quickstart.md": GUIDE,
                                              "web/models.py": STATUS}, package="web")
    answer = search(SearchRequest.build("raise an exception for 4xx and 5xx responses", k=5),
                    str(repo.path), settings=Settings.from_env())
    assert not [r.record.path for r in answer.results if r.explain.get("holds_message")]

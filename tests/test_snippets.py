"""Reading verify's input: the seed's path<TAB>hash list and freshmark's own JSON results."""

from __future__ import annotations

import json

import pytest

from freshmark.core.errors import BadInput
from freshmark.core.snippets import decode_input, parse_snippets, refuse_other_files

SEED_LIST = (
    "src/orders/services/order_service.py\t4a91c0f7d2e8\n"
    "src/orders/repositories/order_repo.py\t88b0e5c1ff02\n"
    "\n"
    "# a comment\n"
    "src/orders/legacy/cancel_v1.py\t3d2f0a9b1c44\n"
    "docs/design/error-codes.md\t\n"
)


def test_seed_list_lines_keep_their_line_numbers():
    entries = parse_snippets(SEED_LIST)
    assert [(e.line, e.path, e.hash_prefix) for e in entries] == [
        (1, "src/orders/services/order_service.py", "4a91c0f7d2e8"),
        (2, "src/orders/repositories/order_repo.py", "88b0e5c1ff02"),
        (5, "src/orders/legacy/cancel_v1.py", "3d2f0a9b1c44"),
        (6, "docs/design/error-codes.md", None),
    ]
    assert all(e.error is None and e.source_format == "tsv" for e in entries)


def test_path_alone_has_no_version_metadata():
    (entry,) = parse_snippets("docs/design/error-codes.md\n")
    assert entry.hash_prefix is None and entry.error is None


@pytest.mark.parametrize(("line", "message"), [
    ("src/a.py\tnot-hex!", "hex digits"),
    ("src/a.py\tabc12", "hex digits"),
    ("src/a.py 4a91c0f7d2e8", "no TAB"),
    ("\t4a91c0f7d2e8", "no path"),
    ("../../etc/passwd\t4a91c0f7d2e8", "leaves the repository"),
    ("/etc/passwd\t4a91c0f7d2e8", "absolute path"),
])
def test_malformed_line_is_reported_and_the_rest_still_read(line, message):
    entries = parse_snippets(f"src/ok.py\t4a91c0f7d2e8\n{line}\nsrc/next.py\t88b0e5c1ff02\n")
    assert [e.line for e in entries] == [1, 2, 3]
    assert entries[1].error is not None and message in entries[1].error
    assert entries[0].error is None and entries[2].error is None


def search_output(*results: dict) -> str:
    return json.dumps({"query": "q", "index": {"collection": "c"}, "results": list(results)},
                      indent=2)


def test_search_json_results_start_on_the_line_of_their_object():
    text = search_output({"path": "src/a.py", "symbol": "a"}, {"path": "src/b.py", "symbol": "b"})
    entries = parse_snippets(text)
    lines = text.splitlines()
    assert [e.path for e in entries] == ["src/a.py", "src/b.py"]
    assert all(lines[e.line - 1].strip() == "{" for e in entries)
    assert entries[0].stamp == {"path": "src/a.py", "symbol": "a"}


def test_json_array_and_json_lines_are_read_too():
    array = parse_snippets(json.dumps([{"path": "src/a.py"}, {"path": "src/b.py"}]))
    lines = parse_snippets('{"path": "src/a.py"}\n{"path": \n{"path": "src/c.py"}\n')
    assert [e.path for e in array] == ["src/a.py", "src/b.py"]
    assert [(e.line, e.path, e.error is None) for e in lines] == [
        (1, "src/a.py", True), (2, "", False), (3, "src/c.py", True)]


def test_broken_json_document_reports_where_and_checks_what_it_can():
    text = search_output({"path": "src/a.py"}, {"path": "src/b.py"}, {"path": "src/c.py"})
    broken = text.replace('"src/b.py"', '"src/b.py" "oops"')
    entries = parse_snippets(broken)
    errors = [e for e in entries if e.error]
    assert len(errors) == 1 and "malformed JSON" in errors[0].error
    assert broken.splitlines()[errors[0].line - 1].strip().startswith('"path": "src/b.py"')
    assert {e.path for e in entries if not e.error} == {"src/a.py", "src/c.py"}


@pytest.mark.parametrize(("item", "message"), [
    ({"symbol": "a"}, "no 'path'"),
    ("just text", "expected a result object"),
    ({"path": "src/a.py", "start_line": "ten"}, "start_line must be a whole number"),
    ({"path": "../../etc/passwd"}, "leaves the repository"),
])
def test_bad_json_result_is_reported_on_its_line(item, message):
    entries = parse_snippets(json.dumps([{"path": "src/ok.py"}, item], indent=2))
    assert entries[0].error is None
    assert entries[1].error is not None and message in entries[1].error


def test_binary_input_is_refused():
    with pytest.raises(BadInput, match="binary"):
        decode_input(b"src/a.py\t4a91c0f7d2e8\n\x00\x01\x02")


def test_non_utf8_input_is_refused_with_the_offset():
    with pytest.raises(BadInput, match=r"not UTF-8 text \(byte 0xe9 at offset 7\)"):
        decode_input("src/caf\xe9.py\t4a91c0f7d2e8\n".encode("latin-1"))


def test_empty_input_is_refused():
    with pytest.raises(BadInput, match="nothing to verify"):
        decode_input(b"  \n\n")
    with pytest.raises(BadInput, match="nothing to verify"):
        parse_snippets("# only a comment\n")


def test_utf8_bom_is_dropped():
    assert decode_input("\ufeffsrc/a.py\tabcdef12\n".encode()) == "src/a.py\tabcdef12\n"


def test_a_source_file_is_refused_as_a_whole_not_line_by_line():
    source = "package gin\n\nimport (\n\t\"net/http\"\n)\n\nfunc Recovery() HandlerFunc {\n}\n"
    with pytest.raises(BadInput, match=r"not a snippet list .*\(line 1 reads 'package gin'\)"):
        refuse_other_files(parse_snippets(source))


def test_a_refused_files_first_line_is_quoted_as_it_reads_not_judged_as_a_path():
    source = "/*!\n * express\n * MIT Licensed\n */\n\n'use strict';\n"
    with pytest.raises(BadInput) as refused:
        refuse_other_files(parse_snippets(source), "lib/request.js")
    message = str(refused.value)
    assert message.startswith("lib/request.js is not a snippet list or search results "
                              "(line 1 reads '/*!')")
    assert "absolute path" not in message and "\n" not in message


def test_a_json_file_that_holds_no_result_is_refused():
    with pytest.raises(BadInput, match="not a snippet list or search results"):
        refuse_other_files(parse_snippets('{"name": "app", "version": "1.0.0"}'))


def test_paths_without_hashes_are_still_a_list():
    entries = parse_snippets("docs/a.md\ndocs/b.md\nnot a path\n")
    refuse_other_files(entries)
    assert [e.error is None for e in entries] == [True, True, False]

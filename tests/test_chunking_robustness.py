"""Odd input never raises: syntax errors, CRLF, tabs, unicode, empty and huge files."""

from __future__ import annotations

from freshmark.core.chunking import chunk_text, file_imports, symbol_spans


def test_empty_and_blank_text_give_no_chunks() -> None:
    assert chunk_text("a.py", "") == []
    assert chunk_text("a.py", "\n  \n\t\n") == []
    assert symbol_spans("a.py", "") == {}
    assert file_imports("a.py", "") == []


def test_syntax_error_region_is_still_chunked_and_later_units_survive() -> None:
    source = (
        "import os\n\n"
        "def ok(a):\n    return a\n\n"
        "def broken(:\n    pass\n\n"
        "class Service:\n    def run(self):\n        return ok(1)\n"
    )
    chunks = chunk_text("broken.py", source)
    symbols = [c.symbol for c in chunks]
    assert symbols[:2] == ["<module>", "ok"]
    assert "Service.run" in symbols
    covered = {line for c in chunks for line in range(c.start_line, c.end_line + 1)}
    assert {6, 7} <= covered  # the broken definition is not dropped


def test_unbalanced_braces_in_java_still_give_chunks_covering_the_text() -> None:
    source = "class A {\n  void f() {\n    if (x) {\n  }\n  void g() { h(); }\n"
    chunks = chunk_text("A.java", source)
    assert chunks
    assert min(c.start_line for c in chunks) == 1


def test_crlf_line_endings_give_the_same_chunks_as_lf_without_carriage_returns() -> None:
    lf_source = "import os\n\n# Doc.\ndef f(x):\n    return g(x)\n"
    crlf = chunk_text("a.py", lf_source.replace("\n", "\r\n"))
    lf = chunk_text("a.py", lf_source)
    assert crlf == lf
    assert "\r" not in crlf[1].text


def test_tab_indented_code_keeps_its_tabs() -> None:
    source = "package x\n\nfunc F() {\n\tif ok {\n\t\treturn\n\t}\n}\n"
    func = chunk_text("x.go", source)[1]
    assert func.text == "func F() {\n\tif ok {\n\t\treturn\n\t}\n}"


def test_unicode_identifiers_and_text_keep_their_lines() -> None:
    source = "# Grüße an alle.\ndef grüße(名前: str) -> str:\n    return format_名前(名前)\n"
    (chunk,) = chunk_text("gruss.py", source)
    assert (chunk.symbol, chunk.doc) == ("grüße", "Grüße an alle.")
    assert chunk.signature == "def grüße(名前: str) -> str"
    assert chunk.references == ["format_名前"]
    assert (chunk.start_line, chunk.end_line) == (1, 3)


def test_file_of_only_comments_is_one_module_block() -> None:
    (chunk,) = chunk_text("notes.go", "// TODO: write this\n// and this\n")
    assert (chunk.symbol, chunk.kind, chunk.start_line, chunk.end_line) == (
        "<module>",
        "block",
        1,
        2,
    )


def test_five_thousand_line_file_chunks_every_function() -> None:
    source = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(1000))
    chunks = chunk_text("big.py", source)
    assert len(chunks) == 1000
    assert chunks[-1].symbol == "f999" and chunks[-1].end_line == 4998


def test_very_long_line_is_kept_whole() -> None:
    long_line = "const table = [" + ",".join(str(i) for i in range(50_000)) + "];"
    chunks = chunk_text("table.js", long_line + "\nfunction f() { return table; }\n")
    assert chunks[0].text == long_line
    assert chunks[1].symbol == "f"


def test_binary_noise_does_not_raise() -> None:
    noise = "".join(chr(c) for c in range(0, 512)) * 3
    for path in ("x.py", "x.c", "x.rs", "x.bin"):
        for chunk in chunk_text(path, noise):
            assert chunk.start_line <= chunk.end_line


def test_deeply_nested_code_does_not_raise() -> None:
    depth = 3000
    source = "x = " + "[\n" * depth + "1" + "\n]" * depth + "\n"
    chunks = chunk_text("deep.py", source, max_lines=50)
    assert chunks and chunks[0].start_line == 1

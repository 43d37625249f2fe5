"""Language detection and the line-window fallback for files freshmark cannot parse."""

from __future__ import annotations

import pytest

from freshmark.core.chunking import chunk_text, symbol_spans
from freshmark.core.chunking.languages import detect_language


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app.py", "python"),
        ("types/index.d.ts", "typescript"),
        ("ui/App.tsx", "tsx"),
        ("web/main.mjs", "javascript"),
        ("web/Comp.jsx", "javascript"),
        ("Main.java", "java"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("include/buf.h", "c"),
        ("src/shape.cpp", "cpp"),
        ("src/shape.HPP", "cpp"),
        ("Program.cs", "csharp"),
        ("lib/billing.rb", "ruby"),
        ("Rakefile", "ruby"),
        ("Thorfile", "ruby"),
        ("spec/fixtures/task.thor", "ruby"),
        ("index.php", "php"),
        ("README.md", None),
        ("config/app.toml", None),
        ("Makefile", None),
    ],
)
def test_detect_language_by_extension_or_file_name(path: str, language: str | None) -> None:
    assert detect_language(path) == language


@pytest.mark.parametrize(("first_line", "language"), [
    ("#!/usr/bin/env ruby", "ruby"),
    ("#!/usr/bin/python3", "python"),
    ("#! /usr/bin/env python3.11", "python"),
    ("#!/usr/bin/env -S node --no-warnings", "javascript"),
    ("#!/bin/sh", None),
])
def test_a_script_without_an_extension_is_read_in_its_interpreters_language(first_line,
                                                                            language):
    assert detect_language("bin/thor", f"{first_line}\nrequire 'thor'\n") == language
    assert detect_language("bin/thor.sh", f"{first_line}\n") is None  # its extension tells


def test_a_ruby_script_without_an_extension_is_chunked_by_its_definitions() -> None:
    chunks = chunk_text("bin/tool", "#!/usr/bin/env ruby\n\ndef run(argv)\n  puts argv\nend\n")
    assert [c.symbol for c in chunks if c.kind == "function"] == ["run"]


def markdown(paragraphs: int, lines_each: int) -> str:
    blocks = ["\n".join(f"p{p} line {i}" for i in range(lines_each)) for p in range(paragraphs)]
    return "\n\n".join(blocks) + "\n"


def test_unsupported_text_becomes_windows_named_module_with_part_numbers() -> None:
    chunks = chunk_text("docs/guide.md", markdown(12, 10))
    assert {(c.symbol, c.kind) for c in chunks} == {("<module>", "window")}
    assert [c.part for c in chunks] == list(range(1, len(chunks) + 1))
    assert len(chunks) == 3


def test_windows_break_at_blank_lines_and_leave_blank_edges_out() -> None:
    source = markdown(12, 10)
    lines = source.split("\n")
    for chunk in chunk_text("guide.md", source):
        assert lines[chunk.end_line].strip() == ""  # the line after a window is blank
        assert chunk.text.split("\n")[0].strip() and chunk.text.split("\n")[-1].strip()
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_text_without_blank_lines_is_cut_hard_at_five_quarters_of_the_window() -> None:
    source = "\n".join(f"key{i} = {i}" for i in range(200))
    chunks = chunk_text("app.ini", source)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 75), (76, 150), (151, 200)]


def test_edit_in_one_window_leaves_later_windows_unchanged() -> None:
    before = chunk_text("guide.md", markdown(20, 10))
    edited_source = markdown(20, 10).replace("p1 line 3\n", "p1 line 3\nan added line\n")
    after = chunk_text("guide.md", edited_source)
    assert [c.text for c in after[1:]] == [c.text for c in before[1:]]
    assert after[0].text != before[0].text


def test_small_file_is_one_window_with_part_zero_and_first_line_as_signature() -> None:
    (chunk,) = chunk_text("notes.txt", "\n# Notes\n\nbuy milk\n")
    assert (chunk.symbol, chunk.kind, chunk.part) == ("<module>", "window", 0)
    assert (chunk.start_line, chunk.end_line, chunk.signature) == (2, 4, "# Notes")


def test_unknown_explicit_language_falls_back_to_windows() -> None:
    (chunk,) = chunk_text("script.lua", "local x = 1\nprint(x)\n", language="lua")
    assert chunk.kind == "window"


def test_explicit_language_overrides_the_extension() -> None:
    chunks = chunk_text("build/script", "def main():\n    run()\n", language="python")
    assert [(c.symbol, c.kind) for c in chunks] == [("main", "function")]
    assert chunk_text("x.txt", "func F() {}\n", language="golang") == chunk_text(
        "x.txt", "func F() {}\n", language="go"
    )


def test_window_file_spans_name_the_whole_file_as_module() -> None:
    assert symbol_spans("README.md", "\n# Title\n\nbody\n\n") == {"<module>": (2, 4)}

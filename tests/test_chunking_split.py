"""Over-long units split on statement boundaries; every part repeats the signature."""

from __future__ import annotations

from freshmark.core.chunking import DEFAULT_MAX_LINES, chunk_text
from freshmark.core.chunking.model import Chunk


def long_python_function(statements: int) -> str:
    """A decorated, documented function whose statements each span three lines."""
    body = "".join(
        f"    total += compute_{index}(\n        orders[{index}],\n    )\n"
        for index in range(statements)
    )
    return (
        "import math\n\n"
        "# Settles every order.\n"
        "@timed\n"
        "def settle(\n    orders: list[Order],\n) -> int:\n"
        '    """Settle."""\n'
        "    total = 0\n" + body + "    return total\n"
    )


def own_lines(chunk: Chunk, header_lines: int) -> list[str]:
    lines = chunk.text.split("\n")
    return lines if chunk.part == 1 else lines[header_lines:]


def test_long_function_splits_into_numbered_parts_of_at_most_max_lines() -> None:
    source = long_python_function(120)  # 372 lines of body
    parts = chunk_text("settle.py", source)[1:]
    assert [c.part for c in parts] == [1, 2, 3]
    assert {(c.symbol, c.kind, c.signature, c.doc) for c in parts} == {
        ("settle", "function", "def settle( orders: list[Order], ) -> int", "Settle.")
    }
    assert all(len(c.text.split("\n")) <= 150 for c in parts)


def test_parts_cover_the_unit_from_its_doc_to_its_end_without_gaps() -> None:
    source = long_python_function(120)
    lines = source.split("\n")
    parts = chunk_text("settle.py", source)[1:]
    assert parts[0].start_line == 3  # the comment above the decorator
    assert parts[-1].end_line == lines.index("    return total") + 1
    for previous, current in zip(parts, parts[1:], strict=False):
        assert current.start_line == previous.end_line + 1


def test_every_later_part_starts_with_the_signature_lines_then_a_whole_statement() -> None:
    source = long_python_function(120)
    header = ["@timed", "def settle(", "    orders: list[Order],", ") -> int:"]
    for part in chunk_text("settle.py", source)[2:]:
        text_lines = part.text.split("\n")
        assert text_lines[:4] == header
        assert text_lines[4].startswith("    total += compute_")
        assert text_lines[-1] in {"    )", "    return total"}


def test_each_part_text_after_the_header_is_the_exact_source_of_its_lines() -> None:
    source = long_python_function(120)
    lines = source.split("\n")
    for part in chunk_text("settle.py", source)[1:]:
        expected = lines[part.start_line - 1 : part.end_line]
        assert own_lines(part, 4) == expected


def test_references_of_a_part_come_from_that_part_and_its_signature() -> None:
    parts = chunk_text("settle.py", long_python_function(120))[1:]
    assert "compute_0" in parts[0].references and "compute_0" not in parts[1].references
    assert "Order" in parts[1].references  # from the repeated signature
    assert parts[1].imports == ["math"]


def test_a_single_long_loop_is_split_between_its_inner_statements() -> None:
    body = "".join(f"        step_{i}(item)\n" for i in range(300))
    source = "def run(items):\n    for item in items:\n" + body + "    return items\n"
    parts = chunk_text("run.py", source, max_lines=100)
    assert [c.part for c in parts] == [1, 2, 3, 4]
    for part in parts[1:]:
        text_lines = part.text.split("\n")
        assert text_lines[0] == "def run(items):"
        assert text_lines[1].startswith("        step_") or text_lines[1] == "    return items"


def test_go_function_body_splits_inside_its_statement_list() -> None:
    body = "".join(f"\tx += f{i}(x)\n" for i in range(250))
    source = "package main\n\nfunc Sum(x int) int {\n" + body + "\treturn x\n}\n"
    parts = [c for c in chunk_text("sum.go", source) if c.symbol == "Sum"]
    assert [c.part for c in parts] == [1, 2]
    assert parts[1].text.split("\n")[0] == "func Sum(x int) int {"
    assert parts[1].text.split("\n")[-1] == "}"
    assert parts[0].end_line + 1 == parts[1].start_line


def test_class_summary_longer_than_max_lines_splits_between_members() -> None:
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(60))
    source = "class Big:\n" + methods
    summaries = [c for c in chunk_text("big.py", source, max_lines=50) if c.symbol == "Big"]
    assert len(summaries) == 4
    for part in summaries[1:]:
        text_lines = part.text.split("\n")
        assert text_lines[0] == "class Big:"
        assert text_lines[1].startswith("    def m") and text_lines[2] == "        ..."
    assert all(len(c.text.split("\n")) <= 50 for c in summaries)


def test_long_module_level_code_is_split_into_module_block_parts() -> None:
    source = "".join(f"SETTING_{i} = {i}\n" for i in range(400))
    chunks = chunk_text("settings.py", source)
    assert [(c.symbol, c.kind, c.part) for c in chunks] == [
        ("<module>", "block", 1),
        ("<module>", "block", 2),
        ("<module>", "block", 3),
    ]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 150), (151, 300), (301, 400)]


def test_unit_at_max_lines_is_not_split() -> None:
    body = "".join(f"    a{i} = {i}\n" for i in range(149))
    (chunk,) = chunk_text("f.py", "def f():\n" + body)
    assert (chunk.part, chunk.start_line, chunk.end_line) == (0, 1, 150)


def test_a_long_indented_docstring_keeps_its_closing_quotes_in_its_part() -> None:
    doc = "".join(f"    Line {index} of the story.\n" for index in range(30))
    source = f'class Story:\n    """Story.\n\n{doc}    """\n\n    x = 1\n\n    def tell(self):\n' \
        "        return self.x\n"
    summaries = [c for c in chunk_text("story.py", source, max_lines=20) if c.symbol == "Story"]
    (holding_end,) = [c for c in summaries if "    Line 29 of the story." in c.text]
    assert holding_end.text.split("\n")[-1] == '    """'


def test_a_last_part_of_only_a_closing_brace_ends_the_part_before() -> None:
    body = "".join(f"    x{i} = call{i}(x{i - 1});\n" for i in range(1, DEFAULT_MAX_LINES))
    chunks = chunk_text("src/builtin.c", "static int f_format(int a) {\n" + body + "}\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, DEFAULT_MAX_LINES + 1)]


def long_docstring_function(paragraphs: int) -> str:
    """A function whose docstring, paragraphs of four lines each, is longer than a part."""
    doc = "\n".join(
        "".join(f"    Paragraph {index}, line {line} of the sinks.\n" for line in range(4))
        for index in range(paragraphs)
    )
    body = "".join(f"    total += sink_{index}(orders)\n" for index in range(40))
    return (
        "def add(\n    orders,\n) -> int:\n"
        f'    """Add a sink.\n\n{doc}    """\n'
        "    total = 0\n" + body + "    return total\n"
    )


def test_a_docstring_longer_than_a_part_is_parts_of_at_most_max_lines() -> None:
    parts = chunk_text("logger.py", long_docstring_function(120))  # a 600-line docstring
    assert [c.part for c in parts] == list(range(1, len(parts) + 1))
    assert {(c.symbol, c.kind, c.signature) for c in parts} == {
        ("add", "function", "def add( orders, ) -> int")
    }
    assert all(len(c.text.split("\n")) <= DEFAULT_MAX_LINES for c in parts)


def test_the_signature_and_the_body_around_a_long_docstring_keep_parts_of_their_own() -> None:
    source = long_docstring_function(120)
    lines = source.split("\n")
    parts = chunk_text("logger.py", source)
    closing, body = lines.index('    """') + 1, lines.index("    total = 0") + 1
    assert (parts[0].start_line, parts[0].end_line) == (1, 3)
    assert [c.end_line for c in parts if c.end_line <= closing][-1] == closing
    assert [c.start_line for c in parts if c.start_line > closing][0] == body


def test_a_long_docstring_is_cut_at_its_blank_lines() -> None:
    source = long_docstring_function(120)
    lines = source.split("\n")
    closing = lines.index('    """') + 1
    inside = [c for c in chunk_text("logger.py", source) if 3 < c.end_line < closing]
    assert len(inside) >= 3
    assert all(not lines[c.end_line].strip() for c in inside)  # the line after each


def test_each_docstring_part_after_the_header_is_the_exact_source_of_its_lines() -> None:
    source = long_docstring_function(120)
    lines = source.split("\n")
    for part in chunk_text("logger.py", source)[1:]:
        assert own_lines(part, 3) == lines[part.start_line - 1 : part.end_line]


def test_a_long_comment_in_a_c_function_is_cut_into_parts_of_at_most_max_lines() -> None:
    comment = "".join(f"    // step {index} of the sink's set-up\n" for index in range(300))
    source = "int add(int sink) {\n" + comment + "    return sink;\n}\n"
    parts = chunk_text("src/logger.c", source)
    assert [c.symbol for c in parts] == ["add"] * len(parts) and len(parts) >= 3
    assert all(len(c.text.split("\n")) <= DEFAULT_MAX_LINES for c in parts)

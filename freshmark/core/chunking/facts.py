"""What one query pass over a parsed file yields: comment rows, imports, referenced names.

Rows are 0-based here (tree-sitter points); chunks convert to 1-based lines at the end.
"""

from __future__ import annotations

import inspect
import re
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from freshmark.core.chunking.queries import facts_query
from freshmark.core.chunking.ruby import bare_calls
from freshmark.core.chunking.rust import macro_calls


def last_row(node: Node, src: bytes) -> int:
    """The last row that holds text of ``node``. A node ending at column 0 ends the row
    before, and so does one that runs on past its last token over whitespace into the next
    row's indentation (tree-sitter-swift ends a ``switch_entry`` where the next ``case``
    starts); whitespace inside a token (a string's content before its closing quotes) is
    the token's text and leaves the row as it is."""
    end = node.end_point
    if end.row == node.start_point.row:
        return end.row
    if end.column == 0:
        return end.row - 1
    inner = node
    while inner.child_count:
        last = inner.child(inner.child_count - 1)
        if last is None:
            break
        if last.end_byte < inner.end_byte:
            gap = src[last.end_byte : inner.end_byte]
            return end.row - 1 if b"\n" in gap and not gap.strip() else end.row
        inner = last
    return end.row


def node_text(src: bytes, node: Node) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


@dataclass(frozen=True)
class CommentSpan:
    """Rows ``start_row..end_row`` hold only this comment (or prefix attribute) and whitespace."""

    start_row: int
    end_row: int
    text: str
    is_doc: bool  # False for attributes (Rust ``#[...]``): part of the unit, not of its doc


@dataclass
class FileFacts:
    src: bytes
    lines: list[str]
    # last row of an own-line comment or prefix attribute -> its span
    spans_by_end_row: dict[int, CommentSpan] = field(default_factory=dict)
    imports: list[tuple[int, str]] = field(default_factory=list)
    ref_rows: list[int] = field(default_factory=list)
    ref_names: list[str] = field(default_factory=list)
    ref_bare: list[bool] = field(default_factory=list)  # written alone, not after a receiver
    ref_bytes: list[int] = field(default_factory=list)  # where each starts

    def refs_between(self, first_row: int, last_row_: int,
                     never_bare: Collection[str] = (), from_byte: int = 0) -> list[str]:
        """Referenced names on rows ``first_row..last_row_`` (from ``from_byte`` on: a body
        that opens on its header's row) in source order (duplicates kept), but for the ones
        in ``never_bare`` written alone: a builtin called bare (``print(x)``) is the
        language's, called through a receiver (``console.print(x)``) a method."""
        lo = bisect_left(self.ref_rows, first_row)
        hi = bisect_right(self.ref_rows, last_row_)
        return [name for name, bare, start in zip(self.ref_names[lo:hi], self.ref_bare[lo:hi],
                                                  self.ref_bytes[lo:hi], strict=True)
                if start >= from_byte and not (bare and name in never_bare)]


def collect_facts(language: str, src: bytes, lines: list[str], root: Node) -> FileFacts:
    facts = FileFacts(src=src, lines=lines)
    query = facts_query(language)
    if query is None:
        return facts
    captures = QueryCursor(query).captures(root)
    for node in captures.get("comment", []):
        # A block doc comment (``/** … */``) set apart from its definition by a blank line
        # is still its doc (Express's house style); a line comment so set apart is not.
        _add_span(facts, node, is_doc=True,
                  blank_rows=1 if _is_block_doc(node_text(src, node)) else 0)
    for node in captures.get("prefix", []):
        _add_span(facts, node, is_doc=False)
    for node in captures.get("overload", []):
        # The signatures of one function are often set apart by blank lines (zustand's
        # ``useStore``); they are still its head, so the span reaches down over them.
        _add_span(facts, node, is_doc=False, blank_rows=len(lines))
    imports = [
        (n.start_point.row, clean_import(n.type, node_text(src, n)))
        for n in captures.get("import", [])
    ] + [(n.start_point.row, name) for n in captures.get("import_relative", [])
         if (name := _package_module(src, n))]
    facts.imports = sorted((row, name) for row, name in imports if name)
    macro_bare, macro_members = macro_calls(captures.get("macro_body", []))
    refs = sorted(
        [(n.start_point.row, n.start_byte, node_text(src, n), True)
         for n in captures.get("ref", []) + bare_calls(captures.get("call_unless_local", []))
         + macro_bare]
        + [(n.start_point.row, n.start_byte, node_text(src, n), False)
           for n in captures.get("member", []) + macro_members]
    )
    facts.ref_rows = [row for row, _, _, _ in refs]
    facts.ref_names = [name for _, _, name, _ in refs]
    facts.ref_bare = [bare for _, _, _, bare in refs]
    facts.ref_bytes = [start for _, start, _, _ in refs]
    return facts


def _package_module(src: bytes, name: Node) -> str | None:
    """``.setters`` for ``setters`` in Python's ``from . import setters``: a name imported
    from the package itself is one of its modules (or a name of its ``__init__``, which the
    ``.`` import names). None under ``from .pkg import x``, where ``x`` is most often not a
    module."""
    statement = name.parent
    while statement is not None and statement.type != "import_from_statement":
        statement = statement.parent
    module = statement.child_by_field_name("module_name") if statement is not None else None
    if module is None or module.named_child_count != 1:  # dots only: its one import_prefix
        return None
    return node_text(src, module) + node_text(src, name)


def _is_block_doc(text: str) -> bool:
    """A ``/** … */`` doc comment, not a licence header (``/*!``, a copyright notice)."""
    return text.startswith("/**") and not text.startswith("/**/") and \
        _LICENCE.search(text) is None


def _add_span(facts: FileFacts, node: Node, is_doc: bool, blank_rows: int = 0) -> None:
    """Record the rows of a comment or prefix that holds them alone, reaching down over up
    to ``blank_rows`` blank rows after it."""
    src = facts.src
    line_start = src.rfind(b"\n", 0, node.start_byte) + 1
    if src[line_start : node.start_byte].strip():
        return  # a trailing comment after code on the same line documents that code
    if not src[node.start_byte : node.end_byte].endswith(b"\n"):
        line_end = src.find(b"\n", node.end_byte)
        if src[node.end_byte : line_end if line_end >= 0 else len(src)].strip() not in (b"", b";"):
            return  # code follows on the comment's last line (a signature's own ``;`` is not)
    span = CommentSpan(node.start_point.row, last_row(node, src), node_text(src, node), is_doc)
    facts.spans_by_end_row[span.end_row] = span
    row = span.end_row + 1
    while row <= span.end_row + blank_rows and row < len(facts.lines) and \
            not facts.lines[row].strip():
        facts.spans_by_end_row[row] = span
        row += 1


_QUOTES = "\"'`<>"
_LICENCE = re.compile(r"copyright|licen[cs]e[d ]|@license|spdx", re.IGNORECASE)
_IMPORT_PREFIX = re.compile(r"^(?:import|using|global|static|use|function|const)\s+")


def clean_import(node_type: str, text: str) -> str:
    """An import as written, without keywords, quotes, aliases or the trailing ``;``."""
    cleaned = " ".join(text.split()).rstrip(";").strip()
    previous = None
    while previous != cleaned:
        previous = cleaned
        cleaned = _IMPORT_PREFIX.sub("", cleaned)
    if node_type == "using_directive" and "=" in cleaned:
        cleaned = cleaned.split("=", 1)[1].strip()
    if node_type == "namespace_use_clause":
        cleaned = re.split(r"\s+as\s+", cleaned)[0].lstrip("\\")
    if node_type in {"using_declaration"}:
        cleaned = cleaned.replace("namespace ", "")
    cleaned = cleaned.strip("()").strip()
    return cleaned.strip(_QUOTES).strip()


_COMMENT_OPENERS = ("/**", "/*!", "/*", "///", "//!", "//", "#", "--")


def clean_comment(texts: Iterable[str]) -> str:
    """Comment text without its markers, dedented, lines joined with ``\\n``."""
    out: list[str] = []
    for text in texts:
        for raw in text.splitlines():
            line = raw.strip()
            if line.endswith("*/"):
                line = line[:-2].rstrip()
            for opener in _COMMENT_OPENERS:
                if line.startswith(opener):
                    line = line[len(opener) :]
                    break
            else:
                if line.startswith("*"):
                    line = line[1:]
            out.append(line[1:] if line.startswith(" ") else line)
    return inspect.cleandoc("\n".join(out)).strip()


_STRING_PREFIX = re.compile(r"^[rRuUbBfF]{0,2}")


def clean_docstring(text: str) -> str:
    """A Python string literal's content: prefix and quotes removed, dedented."""
    body = _STRING_PREFIX.sub("", text.strip())
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            body = body[len(quote) : -len(quote)]
            break
    return inspect.cleandoc(body).strip()

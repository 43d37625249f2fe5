"""Find the syntax units of a parsed file: their full names, kinds, rows and bound docs.

A unit is a function/method (one chunk, split when over-long) or a container (class,
interface, struct, enum, trait, impl, namespace: a summary chunk plus its members as units).
Everything else at file level is module code, grouped into ``<module>`` blocks later.
Function bodies are not searched for nested units: a nested function belongs to its parent.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from freshmark.core.chunking.decl import Decl
from freshmark.core.chunking.facts import (
    FileFacts,
    clean_comment,
    clean_docstring,
    last_row,
    node_text,
)
from freshmark.core.chunking.languages import Rules
from freshmark.core.chunking.macros import blank_bare_macros
from freshmark.core.chunking.naming import describe

_SIGNATURE_MAX_CHARS = 300
_DIRECTIVE_LINE = re.compile(
    r"^[ \t]*#[ \t]*(?:pragma|if|ifdef|ifndef|elif|else|endif|region|endregion|nullable)\b"
    r"[^\n]*$", re.MULTILINE)
_WORD = re.compile(r"\w")
# Nodes before a declaration's signature that the one-line signature leaves out.
_SIGNATURE_SKIP = frozenset(
    {"decorator", "attribute_list", "attribute_item", "marker_annotation", "annotation",
     "attributes", "comment", "line_comment", "block_comment"}
)  # fmt: skip


@dataclass
class Unit:
    """One unit. Rows are 0-based and inclusive; ``start_row`` includes the bound doc comment
    and prefix attributes, ``node_row`` is where the node itself (with decorators) starts and
    ``header_end_row`` the last row of its signature (the row the body opens on)."""

    symbol: str
    kind: str
    node: Node
    body: Node | None
    start_row: int
    node_row: int
    header_end_row: int
    end_row: int
    signature: str
    doc: str = ""
    members: list[Unit] = field(default_factory=list)
    container: bool = False
    # A container's body as ``UnitFinder`` found it: its members and the nodes between them
    # (the code between a namespace's units is module code, ``assemble.module_runs``).
    items: list[Unit | Node] = field(default_factory=list)


@dataclass
class Scope:
    names: list[str]
    parent_kind: str | None


class UnitBudgetExceeded(Exception):
    """A file holds more units than its chunk budget: it is cut into line windows instead,
    before the (per-unit) naming work is spent on all of them."""


class UnitFinder:
    """Walks one parsed file; ``find`` returns the file-level items in source order."""

    def __init__(self, facts: FileFacts, rules: Rules, max_units: int = 0,
                 hidden_rows: frozenset[int] = frozenset()) -> None:
        self.facts = facts
        self.src = facts.src
        self.rules = rules
        self.max_units = max_units  # 0: no budget; past it ``UnitBudgetExceeded``
        self.units_made = 0
        # Row ranges of the root or of a transparent node that none of its children holds:
        # text a parse error swallowed (a root-level ``ERROR`` can run to the end of the file
        # with children on its first row only; after an unclosed ``/*`` the root's children
        # can end early). ``module_runs`` makes them module code.
        self.loose: list[tuple[int, int]] = []
        self._shown: list[str] | None = None  # the lines as the parser saw them
        self.hidden_rows = hidden_rows  # rows the parser was shown blank (``conditionals.py``)

    def find(self, root: Node) -> list[Unit | Node]:
        items = self._collect(root.children, Scope([], None))
        self.loose.extend(self._uncovered(root))
        self.loose.sort()
        return items

    def _collect(self, nodes: Iterable[Node], scope: Scope) -> list[Unit | Node]:
        items: list[Unit | Node] = []
        for node in nodes:
            unit = self._unit(node, scope)
            if unit is not None:
                items.append(unit)
            elif node.type in self.rules.transparent:
                items.extend(self._collect(node.children, scope))
                self.loose.extend(self._uncovered(node))
            else:
                items.append(node)
        _trim_overlaps([item for item in items if isinstance(item, Unit)], self.facts.lines)
        return items

    def _uncovered(self, node: Node) -> list[tuple[int, int]]:
        if self._shown is None:
            lines = self.facts.lines
            # a macro line the parser was shown blank (``macros.py``) is no lost text
            self._shown = [blank_bare_macros(line.encode()).decode(errors="replace")
                           for line in lines] if self.rules.bare_macros else lines
            self._shown = ["" if row in self.hidden_rows else line
                           for row, line in enumerate(self._shown)]
        return uncovered_rows(node, self._shown, self.src)

    def _unit(self, node: Node, scope: Scope) -> Unit | None:
        if not node.is_named:
            return None  # a keyword token such as Ruby's `class` in `class << self`
        inner = _unwrap(node, self.rules)
        if inner is None or inner.type not in self.rules.unit_types:
            return None
        decl = describe(inner, self.src, self.rules)
        if decl is None:
            return None
        self.units_made += 1
        if self.max_units and self.units_made > self.max_units:
            raise UnitBudgetExceeded(self.max_units)
        unit = self._make_unit(node, decl, scope)
        if unit.container and decl.body is not None:
            names = [*scope.names, *(decl.member_scope or decl.name.split("."))]
            member_scope = Scope(names, decl.kind)
            unit.items = self._collect(decl.body.children, member_scope)
            unit.members = [item for item in unit.items if isinstance(item, Unit)]
        return unit

    def _make_unit(self, node: Node, decl: Decl, scope: Scope) -> Unit:
        container = decl.kind not in {"function", "method"}
        kind = decl.kind
        if kind == "function" and not decl.forced_kind and scope.parent_kind is not None:
            if scope.parent_kind not in self.rules.namespace_kinds:
                kind = "method"
        node_row = node.start_point.row
        end_row = last_row(node, self.src)
        start_row, doc = self._bound_doc(node_row)
        header_end_row = _header_end_row(decl.body, node_row, end_row, self.src)
        docstring = _python_docstring(decl.body, self.src) if self.rules.docstrings else ""
        return Unit(
            symbol=".".join([*scope.names, decl.name]),
            kind=kind,
            node=node,
            body=decl.body,
            start_row=start_row,
            node_row=node_row,
            header_end_row=header_end_row,
            end_row=end_row,
            signature=decl.signature or _signature(decl, self.src, node_row, header_end_row),
            doc=docstring or doc,
            container=container,
        )

    def _bound_doc(self, node_row: int) -> tuple[int, str]:
        """Comments and prefix attributes directly above ``node_row`` (no blank line between)."""
        spans = self.facts.spans_by_end_row
        row = node_row
        docs: list[str] = []
        while row - 1 in spans:
            span = spans[row - 1]
            if span.is_doc:
                docs.append(span.text)
            row = span.start_row
        return row, clean_comment(reversed(docs)) if docs else ""


def uncovered_rows(node: Node, lines: list[str], src: bytes) -> list[tuple[int, int]]:
    """Row ranges of ``node`` that hold a word but lie in none of its children, blank edges
    trimmed (0-based, inclusive)."""
    gaps: list[tuple[int, int]] = []
    row = node.start_point.row
    for child in node.children:
        if child.start_point.row > row:
            gaps.append((row, child.start_point.row - 1))
        row = max(row, last_row(child, src) + 1)
    gaps.append((row, min(last_row(node, src), len(lines) - 1)))
    ranges = []
    for first, last in gaps:
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        if any(_WORD.search(lines[row]) for row in range(first, last + 1)):
            ranges.append((first, last))  # not a lone ``\`` or ``}``
    return ranges


def _unwrap(node: Node, rules: Rules) -> Node | None:
    """The declaration inside export/decorator/template wrappers (the node itself otherwise)."""
    for _ in range(4):
        if node.type not in rules.wrappers:
            return node
        inner = (
            node.child_by_field_name("definition")
            or node.child_by_field_name("declaration")
            or node.child_by_field_name("value")
        )
        if inner is None:
            inner = next((c for c in node.named_children if c.type in rules.unit_types), None) \
                or next((c for c in node.named_children if c.type in rules.wrappers), None)
        if inner is None:
            return None
        node = inner
    return node


def _header_end_row(body: Node | None, node_row: int, end_row: int, src: bytes) -> int:
    if body is None:
        return end_row
    if src[body.start_byte : body.start_byte + 1] == b"{":
        return body.start_point.row
    previous = body.prev_sibling
    while previous is not None and "comment" in previous.type:
        previous = previous.prev_sibling
    row = last_row(previous, src) if previous is not None else body.start_point.row
    return max(node_row, min(row, end_row))


def _signature(decl: Decl, src: bytes, node_row: int, header_end_row: int) -> str:
    """The declaration from its first keyword to its body, on one line, without decorators or
    annotations; it never runs past the header's last row (comments between the header and
    the body stay out)."""
    start = _signature_start(decl.decl)
    end = decl.body.start_byte if decl.body is not None else decl.decl.end_byte
    header_end = _byte_after_row(
        src, decl.decl.start_byte, header_end_row - decl.decl.start_point.row
    )
    end = max(start, min(end, header_end))
    # A preprocessor line inside the header (C#'s ``#pragma warning restore CA1724`` before
    # the ``{``, ``#if !NETCOREAPP``) is no part of the declaration.
    header = _DIRECTIVE_LINE.sub("", src[start:end].decode("utf-8", errors="replace"))
    text = " ".join(header.split())
    text = decl.signature_prefix + text.rstrip("{:;= ").rstrip()
    if len(text) <= _SIGNATURE_MAX_CHARS:
        return text
    # Cut at a word's end, and say so: ``highlight: Opti`` read as a type.
    return text[:_SIGNATURE_MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _byte_after_row(src: bytes, start_byte: int, rows_down: int) -> int:
    """Offset of the end of the line ``rows_down`` lines below the one holding ``start_byte``."""
    position = start_byte
    for _ in range(max(rows_down, 0) + 1):
        found = src.find(b"\n", position)
        if found < 0:
            return len(src)
        position = found + 1
    return position - 1


def _signature_start(node: Node) -> int:
    for child in node.children:
        if child.type in _SIGNATURE_SKIP:
            continue
        if child.type == "modifiers":  # Java: annotations live inside the modifiers
            kept = [c for c in child.children if c.type not in _SIGNATURE_SKIP]
            if kept:
                return kept[0].start_byte
            continue
        return child.start_byte
    return node.start_byte


def _python_docstring(body: Node | None, src: bytes) -> str:
    if body is None or body.type != "block" or not body.named_child_count:
        return ""
    first = body.named_children[0]
    if first.type != "expression_statement" or first.named_child_count != 1:
        return ""
    string = first.named_children[0]
    if string.type != "string":
        return ""
    return clean_docstring(node_text(src, string))


def _trim_overlaps(units: list[Unit], lines: list[str]) -> None:
    """A unit's doc rows may sit inside the previous unit's node (Python keeps a comment after
    a body inside that body); the previous unit then ends above the doc."""
    for previous, current in zip(units, units[1:], strict=False):
        if previous.end_row >= current.start_row and previous.end_row < current.node_row:
            end = max(current.start_row - 1, previous.header_end_row)
            while end > previous.header_end_row and not lines[end].strip():
                end -= 1
            previous.end_row = end


def attach_comment_runs(
    items: Sequence[Unit | Node], loose: Sequence[tuple[int, int]], src: bytes,
    namespaces: Collection[str] = (), max_rows: int = 0,
) -> None:
    """A run of module code holding nothing but comments before a definition (a section's
    title, httpx's ``# Timeout exceptions...``) starts that definition, as a comment right
    above it does: a block of its own said nothing and took a result's place. One after the
    last definition, or of ``max_rows`` rows or more (cut like loose text), stays module code."""
    _attach_between(items, loose, src, -1, max_rows)
    for unit in walk(items):
        if unit.container and unit.kind in namespaces:
            _attach_between(unit.items, loose, src, unit.header_end_row, max_rows)


def _attach_between(items: Sequence[Unit | Node], loose: Sequence[tuple[int, int]],
                    src: bytes, previous_end: int, max_rows: int) -> None:
    nodes: list[Node] = []
    for item in items:
        if isinstance(item, Node):
            nodes.append(item)
            continue
        # the nodes of the run ``assemble.module_runs`` makes before ``item``
        run = [n for n in nodes
               if last_row(n, src) > previous_end and n.start_point.row < item.start_row]
        first = max(min((n.start_point.row for n in run), default=item.start_row),
                    previous_end + 1)
        if run and all("comment" in n.type for n in run) and \
                not any(low < item.start_row and high > previous_end for low, high in loose) \
                and (not max_rows or item.start_row - first < max_rows):
            item.start_row = first
        nodes = []
        previous_end = max(previous_end, item.end_row)


def walk(items: Iterable[Unit | Node]) -> Iterator[Unit]:
    """Every unit, containers before their members, in source order."""
    for item in items:
        if isinstance(item, Unit):
            yield item
            yield from walk(item.members)


def nested_definitions(root: Node, src: bytes, rules: Rules) -> Iterator[tuple[str, Node]]:
    """Every declaration at any depth, named by the declarations around it, with its node.

    This reaches what ``UnitFinder`` leaves inside module code or bodies (a function defined
    under ``if``/``try``, a nested function): verification looks there for a symbol that is
    no longer a unit of its own but still exists.
    """
    stack: list[tuple[Node, list[str]]] = [(root, [])]
    while stack:
        node, scope = stack.pop()
        for child in node.named_children:
            inner = _unwrap(child, rules)
            decl = describe(inner, src, rules) \
                if inner is not None and inner.type in rules.unit_types else None
            if decl is None:
                stack.append((child, scope))
                continue
            yield ".".join([*scope, decl.name]), child
            if decl.body is not None:
                stack.append((decl.body, [*scope, *(decl.member_scope or decl.name.split("."))]))

"""One branch of each C/C++ preprocessor conditional, for a file the parser fails on.

tree-sitter reads a balanced ``#if``/``#else``/``#endif`` between declarations well, but not one
that splits a construct: an ``#ifdef`` closing one branch with ``} else {`` inside a function
(the rest of the file becomes that function's body), or K&R and ANSI parameter lists under
``#ifdef``/``#else`` between a function's name and its body (every such function becomes module
code). A compiler sees one branch, so the parser is shown one too: ``one_branch`` blanks the
conditional directives and every branch of a group but the first or the last (the ``#else``
is usually the portable one), and any other directive inside braces (an ``#include`` or a
``#define`` in an array's initializer). Only the groups with a directive in a node the parse
as written failed on are cut: a group between definitions keeps the units of every branch.
Bytes become spaces and newlines stay, so every node keeps its offsets and chunk text is read
from the original source. ``chunking._parse`` keeps the parse that finds more units.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from freshmark.core.chunking.macros import blanked

_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*([a-z]*)")
_OPENS = frozenset({b"if", b"ifdef", b"ifndef"})
_BRANCHES = frozenset({b"elif", b"elifdef", b"elifndef", b"else"})
_CONDITIONAL_KINDS = frozenset({b"open", b"branch", b"close", b"continued"})
# What moves the brace depth: comments, literals (skipped whole) and the braces themselves.
_BRACE_TOKEN = re.compile(
    rb'/\*.*?(?:\*/|\Z)|//[^\n]*|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?|[{}]', re.DOTALL)


@dataclass
class OneBranch:
    src: bytes  # the source as the parser is shown it
    hidden_rows: frozenset[int]  # rows of the directives blanked (no text of the file's own)


def one_branch(src: bytes, keep_last: bool, troubled: Collection[int]) -> OneBranch:
    """``src`` with one branch (the last or the first) of each conditional group with a
    directive on a ``troubled`` row (in a node the parse as written failed on) and the other
    directives inside braces on those rows blanked (see the module doc). The rest stays as
    written: a group between definitions parses well, and each branch's definitions are units.
    """
    lines = src.split(b"\n")
    kinds = _directive_kinds(lines)
    kept, resolved = _kept_rows(kinds, keep_last, troubled)
    shown = [line if kept[row] and kind is None else blanked(line)
             for row, (line, kind) in enumerate(zip(lines, kinds, strict=True))]
    depths = _depths_at_rows(b"\n".join(shown))  # directives blanked: ``#define X {`` is none
    hidden = set()
    for row, kind in enumerate(kinds):
        if kind is None or not kept[row]:
            continue
        if resolved[row] or kind == b"other" and row in troubled and depths[row] > 0:
            hidden.add(row)
        else:
            shown[row] = lines[row]
    return OneBranch(b"\n".join(shown), frozenset(hidden))


def _directive_kinds(lines: list[bytes]) -> list[bytes | None]:
    """Per row: ``open``, ``branch`` or ``close`` for a conditional directive (``continued``
    on its rows after a ``\\``), ``other`` for any other directive, None for code. Rows
    inside a block comment are code."""
    kinds: list[bytes | None] = []
    continued: bytes | None = None
    in_comment = False
    for line in lines:
        kind = continued
        if kind is None and not in_comment:
            found = _DIRECTIVE.match(line)
            if found is not None:
                word = found.group(1)
                kind = (b"open" if word in _OPENS else b"branch" if word in _BRANCHES
                        else b"close" if word == b"endif" else b"other")
        kinds.append(kind)
        continued = None
        if kind is not None and line.rstrip(b"\r").endswith(b"\\"):
            continued = b"other" if kind == b"other" else b"continued"
        if kind is None:
            in_comment = _ends_in_comment(line, in_comment)
    return kinds


def _ends_in_comment(line: bytes, in_comment: bool) -> bool:
    at = 0
    while True:
        if in_comment:
            close = line.find(b"*/", at)
            if close < 0:
                return True
            at, in_comment = close + 2, False
        else:
            opened = line.find(b"/*", at)
            if opened < 0 or b"//" in line[at:opened]:
                return False
            at, in_comment = opened + 2, True


def _kept_rows(kinds: list[bytes | None], keep_last: bool, troubled: Collection[int]
               ) -> tuple[list[bool], list[bool]]:
    """Per row: whether it lies in the kept branch of every group around it that is resolved
    (has a troubled row), and whether it is a directive of such a group."""
    groups: list[list[int]] = []  # per group in the order they open: its directives' rows
    stack: list[int] = []
    for row, kind in enumerate(kinds):
        if kind == b"open":
            groups.append([row])
            stack.append(len(groups) - 1)
        elif kind in (b"branch", b"close") and stack:
            groups[stack[-1]].append(row)
            if kind == b"close":
                stack.pop()
    # a group between definitions is whole in no troubled node: one a definition holds has
    # a directive in one (an error inside one branch's function leaves the group as written)
    resolved_groups = {index for index, rows in enumerate(groups)
                       if any(row in troubled for row in rows)}
    kept_branch = [sum(kinds[row] == b"branch" for row in rows) if keep_last else 0
                   for rows in groups]
    kept: list[bool] = []
    resolved = [False] * len(kinds)
    opened = 0
    stack = []
    around: list[tuple[int, int]] = []  # (group, branch now) of the resolved groups around
    for row, kind in enumerate(kinds):
        if kind == b"open":
            if opened in resolved_groups:
                around.append((opened, 0))
            stack.append(opened)
            opened += 1
        elif kind == b"branch" and stack and stack[-1] in resolved_groups:
            group, branch = around[-1]
            around[-1] = (group, branch + 1)
        in_group = stack[-1] if kind in _CONDITIONAL_KINDS and stack else None
        resolved[row] = in_group in resolved_groups
        kept.append(all(branch == kept_branch[group] for group, branch in around))
        if kind == b"close" and stack:
            if stack.pop() in resolved_groups:
                around.pop()
    return kept, resolved


def _depths_at_rows(src: bytes) -> list[int]:
    """The brace depth at the start of each row."""
    row_starts = [0] + [at + 1 for at, byte in enumerate(src) if byte == 0x0A]
    depths = [0] * len(row_starts)
    depth = 0
    row = 0
    for token in _BRACE_TOKEN.finditer(src):
        while row + 1 < len(row_starts) and row_starts[row + 1] <= token.start():
            row += 1
            depths[row] = depth
        if token.group() == b"{":
            depth += 1
        elif token.group() == b"}":
            depth = max(depth - 1, 0)
    for rest in range(row + 1, len(row_starts)):
        depths[rest] = depth
    return depths


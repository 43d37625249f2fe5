"""The import block of a file, and the part of it a symbol uses (SPEC §7: L1 carries the
symbol's imports). Pure functions over a file's text."""

from __future__ import annotations

import re

from freshmark.core.chunking import symbol_spans
from freshmark.core.chunking.model import MODULE_SYMBOL

IMPORT_BLOCK_MAX_LINES = 60
IMPORT_TRIM_OVER_LINES = 12  # a longer import block is trimmed to what the symbol uses
IMPORT_KEPT_MAX_LINES = 20  # and capped, should the symbol use most of it
_IMPORT_LINE = re.compile(
    r"^\s*(?:import\b|from\s+\S+\s+import\b|#\s*include\b|using\b|package\b|use\b|require\b"
    r"|(?:const|let|var)\s+.+=\s*require\()"
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _import_statements(lines: list[str], first: int) -> list[list[tuple[int, str]]]:
    """The block's lines grouped into statements (a parenthesised import runs on)."""
    statements: list[list[tuple[int, str]]] = []
    depth = 0
    for offset, line in enumerate(lines):
        if depth > 0 and statements:
            statements[-1].append((first + offset, line))
        elif _IMPORT_LINE.match(line):
            statements.append([(first + offset, line)])
        depth = max(0, depth + line.count("(") - line.count(")"))
    return statements


def _bound_names(statement: str) -> set[str]:
    """Names an import statement binds (``a`` for ``import a.b``, ``c`` for ``x as c``);
    for other languages every identifier, so nothing the symbol needs is dropped."""
    match = re.search(r"\bimport\b(.*)", statement, re.S)
    if match is None:
        return set(_IDENTIFIER.findall(statement))
    names: set[str] = set()
    for item in match.group(1).replace("(", " ").replace(")", " ").split(","):
        words = item.split("#")[0].split()
        if words:
            names.add(words[-1] if len(words) == 3 and words[1] == "as"
                      else words[0].split(".")[0])
    return names


def used_import_lines(lines: list[str], first: int, user_text: str) -> list[tuple[int, str]]:
    """(line number, line) of the import statements whose names ``user_text`` uses."""
    used = set(_IDENTIFIER.findall(user_text))
    return [numbered for statement in _import_statements(lines, first)
            if _bound_names(" ".join(line for _, line in statement)) & used
            for numbered in statement]


def import_block(path: str, text: str) -> tuple[int, int] | None:
    """1-based lines from the first to the last import statement before the file's first
    definition (a multi-line import runs to its closing parenthesis); None without imports."""
    lines = text.splitlines()
    unit_starts = [start for symbol, (start, _) in symbol_spans(path, text).items()
                   if not symbol.startswith(MODULE_SYMBOL)]
    first_unit = min(unit_starts, default=len(lines) + 1)
    found = [i + 1 for i, line in enumerate(lines[: first_unit - 1]) if _IMPORT_LINE.match(line)]
    if not found:
        return None
    end = found[-1]
    depth = sum(line.count("(") - line.count(")") for line in lines[found[0] - 1 : end])
    while depth > 0 and end < first_unit - 1:
        end += 1
        depth += lines[end - 1].count("(") - lines[end - 1].count(")")
    return found[0], min(end, found[0] + IMPORT_BLOCK_MAX_LINES - 1)

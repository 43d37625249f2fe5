"""Where a stamped chunk's code is in today's file (SPEC §2: does the symbol still exist?).

A name can be defined more than once (overloads, a property's getter and setter, a
redefinition), can leave the units of a file and still exist (moved under an ``if`` or into
a ``try``), and module-level blocks carry positional names (``<module>#2``) that shift as
soon as code is added or removed above them. So a symbol is looked for in this order:

1. module-level code (``<module>``, ``<module>#N``): the block of today's file that keeps most
   of its lines, at least ``KEPT_SHARE`` of them (the closest one on a tie), never by
   its positional name;
2. a named symbol among the units: the one span of that name, else the span whose lines are
   the indexed text, else the one closest to where it was;
3. the same name defined at any depth (``FileSymbols.nested``), chosen the same way.

Nothing found means the code is gone from this file.
"""

from __future__ import annotations

from collections import Counter

from freshmark.core.chunking import MODULE_SYMBOL, FileSymbols
from freshmark.core.stamp import ChunkRecord

Span = tuple[int, int]
# Code counts as still there (module code in its file, a symbol moved to another file) when
# at least this share of its lines is.
KEPT_SHARE = 0.5


def _line_counts(text: str) -> Counter[str]:
    return Counter(line.strip() for line in text.splitlines() if line.strip())


def line_similarity(old_text: str, new_text: str) -> float:
    """Share of non-blank lines (stripped, as a multiset) the two texts have in common, over
    the longer one: 1.0 for the same lines in any order, 0.0 for nothing shared.

    Written here rather than with ``difflib``: order does not matter for "is this code still
    there", and counting lines is linear where a sequence match is quadratic.
    """
    old, new = _line_counts(old_text), _line_counts(new_text)
    longest = max(sum(old.values()), sum(new.values()))
    return sum((old & new).values()) / longest if longest else 1.0


def lines_kept(old_text: str, new_text: str) -> float:
    """Share of the non-blank lines of ``old_text`` that ``new_text`` still has."""
    old = _line_counts(old_text)
    total = sum(old.values())
    return sum((old & _line_counts(new_text)).values()) / total if total else 1.0


def is_module_code(symbol: str) -> bool:
    return symbol == MODULE_SYMBOL or symbol.startswith(MODULE_SYMBOL + "#")


def locate(record: ChunkRecord, symbols: FileSymbols) -> Span | None:
    """Lines of ``record``'s code in today's file, or None when it is gone (see the module
    docstring for the order)."""
    if is_module_code(record.symbol):
        return _block(record, symbols)
    spans = symbols.units.get(record.symbol) or symbols.nested().get(record.symbol)
    return _pick(record, spans, symbols) if spans else None


def _pick(record: ChunkRecord, spans: list[Span], symbols: FileSymbols) -> Span:
    if len(spans) == 1:
        return spans[0]
    indexed = record.text.strip()
    same = [span for span in spans if symbols.text_of(span).strip() == indexed]
    return min(same or spans, key=lambda span: abs(span[0] - record.start_line))


def _block(record: ChunkRecord, symbols: FileSymbols) -> Span | None:
    best: tuple[float, int] | None = None
    found: Span | None = None
    for span in symbols.blocks:
        kept = lines_kept(record.text, symbols.text_of(span))
        rank = (kept, -abs(span[0] - record.start_line))
        if kept >= KEPT_SHARE and (best is None or rank > best):
            best, found = rank, span
    return found

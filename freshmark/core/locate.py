"""Where a stamped chunk's code is in today's file (SPEC §2: does the symbol still exist?).

A name can be defined more than once (overloads, a property's getter and setter, a
redefinition), can leave the units of a file and still exist (moved under an ``if`` or into
a ``try``), and module-level blocks carry positional names (``<module>#2``) that shift as
soon as code is added or removed above them. So a symbol is looked for in this order:

1. module-level code (``<module>``, ``<module>#N``), never by its positional name (it only
   counts blocks: one line added above renumbers every block below): the block of today's
   file that keeps most of its lines, at least ``KEPT_SHARE`` of them (the closest one on a
   tie; one part of a split block is then its own lines there); else its lines as they
   were anywhere in the file; else (``nearest``) the block its block became when the
   blocks of the file as indexed and today's are paired by their lines (``pair_pieces``:
   none when it was removed, or replaced by other code in its place), or the closest block
   when that file is not at hand;
2. a named symbol among the units: the one span of that name, else the span whose lines are
   the indexed text, else the one with its signature, else (the file as indexed at hand) the
   one its definition became when a name's definitions before and today are paired
   (``pair_pieces``: none when it was the overload removed), else the one closest to where
   it was;
3. the same name defined at any depth (``FileSymbols.nested``), chosen the same way.

One part of a split definition is then looked for inside the definition found: its own lines
as they were, else (edited) the run from its first to its last line kept, when it kept at
least ``KEPT_SHARE`` of its lines (a line edited at either end taken as replaced in place),
else the whole definition.

Nothing found means the code is gone from this file, unless (``renamed_in_place``, asked
only then) a function or method whose name is gone kept its code under another name.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from freshmark.core.chunking import MODULE_SYMBOL, FileSymbols, split_lines
from freshmark.core.chunking.assemble import first_code_line
from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.stamp import ChunkRecord, own_name

Span = tuple[int, int]
# Code counts as still there (module code in its file, a symbol moved to another file) when
# at least this share of its lines is.
KEPT_SHARE = 0.5
# A definition renamed in place keeps at least this share of its lines, its name aside.
RENAMED_SHARE = 0.8
RENAMABLE_KINDS = frozenset({"function", "method", "class", "struct", "interface", "enum", "trait"})


def _line_counts(text: str) -> Counter[str]:
    return Counter(line.strip() for line in text.splitlines() if line.strip())


def line_similarity(old_text: str, new_text: str) -> float:
    """Share of non-blank lines (stripped, as a multiset) the two texts have in common, over
    the longer one: 1.0 for the same lines in any order, 0.0 for nothing shared.

    Written here rather than with ``difflib``: order does not matter for "is this code still
    there", and counting lines is linear where a sequence match is quadratic.
    """
    return _similarity(_line_counts(old_text), _line_counts(new_text))


def _similarity(old: Counter[str], new: Counter[str]) -> float:
    longest = max(old.total(), new.total())
    return (old & new).total() / longest if longest else 1.0


def lines_kept(old_text: str, new_text: str) -> float:
    """Share of the non-blank lines of ``old_text`` that ``new_text`` still has."""
    old = _line_counts(old_text)
    total = sum(old.values())
    return sum((old & _line_counts(new_text)).values()) / total if total else 1.0


def is_module_code(symbol: str) -> bool:
    return symbol == MODULE_SYMBOL or symbol.startswith(MODULE_SYMBOL + "#")


def locate(record: ChunkRecord, symbols: FileSymbols,
           indexed: Callable[[], FileSymbols | None] | None = None,
           nearest: bool = True) -> Span | None:
    """Lines of ``record``'s code in today's file, or None when it is gone (see the module
    docstring for the order). ``indexed`` gives the file as it was indexed (read only when
    needed): it tells which of a name's several definitions (overloads) the record was, and
    whether that one is gone. Without ``nearest``, module code is found by its lines only."""
    if is_module_code(record.symbol):
        return _module_code(record, symbols, indexed, nearest)
    spans = symbols.units.get(record.symbol) or symbols.nested().get(record.symbol)
    if not spans:
        return None
    span = _pick(record, spans, symbols, indexed)
    return _own_part(record, span, symbols, indexed) if span is not None else None


def _own_part(record: ChunkRecord, span: Span, symbols: FileSymbols,
              indexed: Callable[[], FileSymbols | None] | None) -> Span:
    """Where one part of a split definition or block (SPEC §5) is inside the definition or
    block today: its own lines, found as they were; else the whole, to be read again. A
    whole one that grew is not a part: the file as indexed tells them apart, read only when
    the definition today is longer than the record."""
    own = record.own_text.splitlines()
    if not own or span[1] - span[0] + 1 <= len(own) or indexed is None:
        return span
    before = indexed()
    whole = (record.start_line, record.end_line)
    wholes = (before.blocks if is_module_code(record.symbol) else
              _spans_of(before, record.symbol)) if before is not None else []
    if not any(start <= whole[0] and whole[1] <= end and (start, end) != whole
               for start, end in wholes):
        return span
    return _verbatim(own, record.start_line, symbols, span) or _kept(own, symbols, span) or span


def _kept(own: list[str], symbols: FileSymbols, span: Span) -> Span | None:
    """An edited part's lines today: from its first to its last line still there (in order),
    widened by the lines it lost at either end; None when it kept under ``KEPT_SHARE``."""
    wanted = [line.rstrip() for line in own]
    today = [line.rstrip() for line in symbols.lines[span[0] - 1 : span[1]]]
    matcher = difflib.SequenceMatcher(None, wanted, today, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks()
              if b.size and any(line.strip() for line in wanted[b.a : b.a + b.size])]
    solid = sum(1 for line in wanted if line.strip())
    if not blocks or sum(b.size for b in blocks) < KEPT_SHARE * solid:
        return None
    first, last = blocks[0], blocks[-1]
    start = span[0] + first.b - first.a
    end = span[0] + last.b + last.size - 1 + (len(wanted) - last.a - last.size)
    return max(start, span[0]), min(end, span[1])


def _verbatim(own: list[str], near: int, symbols: FileSymbols,
              within: Span | None = None) -> Span | None:
    """Where the lines ``own`` are as they were (trailing blanks aside) in today's file, or
    only ``within`` a span of it; the start closest to ``near`` when there are several."""
    wanted = [line.rstrip() for line in own]
    first, last = within or (1, len(symbols.lines))
    today = [line.rstrip() for line in symbols.lines[first - 1 : last]]
    if not wanted:
        return None
    starts = [first + i for i in range(len(today) - len(wanted) + 1)
              if today[i] == wanted[0] and today[i : i + len(wanted)] == wanted]
    if not starts:
        return None
    start = min(starts, key=lambda line: abs(line - near))
    return start, start + len(wanted) - 1


def _pick(record: ChunkRecord, spans: list[Span], symbols: FileSymbols,
          indexed: Callable[[], FileSymbols | None] | None) -> Span | None:
    text = record.text.strip()
    same = [span for span in spans if symbols.text_of(span).strip() == text]
    signed = [span for span in spans if symbols.signatures.get(span) == record.signature]
    before = indexed() if indexed is not None and not same else None
    if before is not None and len(_spans_of(before, record.symbol)) > 1:
        # Not its text, and the name was defined more than once (overloads, Swift's in two
        # extensions, a Ruby method and its ``self.`` twin of one signature): the one left
        # today, or the nearest with its signature, need not be this one.
        return _overload_today(record, spans, symbols, before)
    return min(same or signed or spans, key=lambda span: abs(span[0] - record.start_line))


def _spans_of(symbols: FileSymbols, symbol: str) -> list[Span]:
    return symbols.units.get(symbol) or symbols.nested().get(symbol) or []


def _overload_today(record: ChunkRecord, spans: list[Span], symbols: FileSymbols,
                    indexed: FileSymbols) -> Span | None:
    """The definition of the name today that the record's definition became (paired as in
    ``pair_pieces``), None when it was the one removed."""
    before = _spans_of(indexed, record.symbol)
    mine = [i for i, (start, end) in enumerate(before) if start <= record.start_line <= end]
    if not mine:
        return min(spans, key=lambda span: abs(span[0] - record.start_line))
    pairs = pair_pieces([_piece(indexed, span) for span in before],
                        [_piece(symbols, span) for span in spans])
    return spans[pairs[mine[0]]] if mine[0] in pairs else None


def _piece(symbols: FileSymbols, span: Span) -> Piece:
    return Piece(span[0], symbols.signatures.get(span, ""), text=symbols.text_of(span))


@dataclass(frozen=True)
class Piece:
    """One definition of a name (or one part of it) as ``pair_pieces`` compares them: by
    ``digest`` (its text's hash) when both have one, else by ``text``; lines in common only
    where both texts are at hand."""

    start_line: int
    signature: str
    text: str = ""
    digest: str = ""

    def same_code(self, other: Piece) -> bool:
        if self.digest and other.digest:
            return self.digest == other.digest
        return bool(self._code) and self._code == other._code

    def lines_in_common(self, other: Piece) -> float:
        return _similarity(self._lines, other._lines) if self.text and other.text else 0.0

    # Worked out once per piece: pairing compares each one with every one of the other side.
    @cached_property
    def _code(self) -> str:
        return self.text.strip()

    @cached_property
    def _lines(self) -> Counter[str]:
        return _line_counts(self.text)


def pair_pieces(old: Sequence[Piece], new: Sequence[Piece]) -> dict[int, int]:
    """Which of a name's definitions before (``old``) each one today (``new``) continues, as
    old index -> new index: the same text first, then the same signature, then the most
    lines in common (at least ``KEPT_SHARE``), the closest start line breaking ties; each is
    paired at most once. An old one left unpaired was removed, a new one added.

    Positions alone cannot tell: removing the first of three overloads shifts the others."""
    pairs: dict[int, int] = {}
    tests = (lambda a, b: 1.0 if a.same_code(b) else 0.0,
             lambda a, b: 1.0 if a.signature and a.signature == b.signature else 0.0,
             Piece.lines_in_common)
    for score_of in tests:
        scored = sorted(
            (-score, abs(a.start_line - b.start_line), i, j)
            for i, a in enumerate(old) if i not in pairs
            for j, b in enumerate(new) if j not in pairs.values()
            if (score := score_of(a, b)) >= KEPT_SHARE)
        for _, _, i, j in scored:
            if i not in pairs and j not in pairs.values():
                pairs[i] = j
    return pairs


def pair_in_place(old: Sequence[Piece], new: Sequence[Piece], old_places: Sequence[object],
                  new_places: Sequence[object]) -> dict[int, int]:
    """``pair_pieces``, then each one left before with the one left today in the same place
    (the n-th module block, a positional name's n-th part): module code has no name to tell
    an edited block from another, so where its lines do not pair it its place does."""
    pairs = pair_pieces(old, new)
    left = {place: j for j, place in enumerate(new_places) if j not in pairs.values()}
    for i, place in enumerate(old_places):
        if i not in pairs and place in left:
            pairs[i] = left.pop(place)
    return pairs


def _module_code(record: ChunkRecord, symbols: FileSymbols,
                 indexed: Callable[[], FileSymbols | None] | None, nearest: bool) -> Span | None:
    """Module code today by its lines (see the module docstring, step 1)."""
    span = _block(record, symbols)
    if span is not None:
        return _own_part(record, span, symbols, indexed)
    span = _verbatim(record.own_text.splitlines(), record.start_line, symbols)
    if span is not None or not nearest or not symbols.blocks:
        return span
    before = indexed() if indexed is not None else None
    mine = [i for i, (start, end) in enumerate(before.blocks)
            if start <= record.start_line <= end] if before is not None else []
    if before is None or not mine:
        return min(symbols.blocks, key=lambda block: abs(block[0] - record.start_line))
    # By their lines alone: a block in the same place that shares none of them is another
    # block (astropy's ``ecliptic.py``: the block there today holds other code), and this
    # one is gone. (The indexer's ids may follow a place, ``pair_in_place``; a verdict not.)
    pairs = pair_pieces([_block_piece(before, block) for block in before.blocks],
                        [_block_piece(symbols, block) for block in symbols.blocks])
    return symbols.blocks[pairs[mine[0]]] if mine[0] in pairs else None


def _block_piece(symbols: FileSymbols, span: Span) -> Piece:
    text = symbols.text_of(span)
    return Piece(span[0], first_code_line(text.splitlines()), text=text)


def _block(record: ChunkRecord, symbols: FileSymbols) -> Span | None:
    best: tuple[float, int] | None = None
    found: Span | None = None
    for span in symbols.blocks:
        kept = lines_kept(record.text, symbols.text_of(span))
        rank = (kept, -abs(span[0] - record.start_line))
        if kept >= KEPT_SHARE and (best is None or rank > best):
            best, found = rank, span
    return found


def as_indexed(record: ChunkRecord, current: str,
               indexed: Callable[[], FileSymbols | None]) -> bool:
    """``current`` (the lines a changed file holds the record's code at today) are those it
    was indexed from. A later part's text carries its head, which is not at its lines; an
    outline's text elides its members' bodies, so its lines are compared with the file as
    indexed (``indexed``, read for outlines only, and for a record that came without its
    indexed text: a saved ``changed`` result holds the lines of its day, not those)."""
    if record.text and current.rstrip("\n") == record.own_text:
        return True
    if record.text and record.kind not in CONTAINER_KINDS:
        return False
    before = indexed()
    return before is not None and split_lines(current.rstrip("\n")) == \
        before.lines[record.start_line - 1 : record.end_line]


@dataclass(frozen=True)
class Renamed:
    """Where a definition renamed in place is today: its full ``symbol`` now, its lines, and
    whether those are the lines it was indexed from but for the name (``unchanged``: each
    line as it was, or with the old name replaced by the new one)."""

    symbol: str
    span: Span
    unchanged: bool

    def name_since(self, old: str) -> str:
        """Its name today as a reason says it: its own name, or its full one when only its
        owner's changed (``BadHeaderError.__init__``, not ``__init__``)."""
        return self.symbol if own_name(self.symbol) == own_name(old) else own_name(self.symbol)


def renamed_in_place(record: ChunkRecord, symbols: FileSymbols,
                     indexed: Callable[[], FileSymbols | None]) -> Renamed | None:
    """The definition ``record``'s function or method became when only its name changed,
    asked for when its name is gone from today's file (nowhere in ``symbols``, at any depth).

    The rule: a definition of today's file of the same kind and owner (``Bytes`` of
    ``Bytes.truncate``; none for a top-level function), or of the same name under an owner
    that replaced a renamed one, under a name the file as indexed
    (``indexed``) did not define, that keeps at least ``RENAMED_SHARE`` of the lines of the
    record's whole definition as indexed, over the longer of the two (stripped, blank lines
    aside, in any order). A line is kept as it was or with the old name, as a whole word,
    replaced by the new one: the signature, a recursive call, a doc comment naming it. The
    one keeping most wins, the closest to where it was on a tie; one part of a split
    definition is then its own lines there, else the whole. A class-like type is compared
    by its whole lines too (itsdangerous' ``BadHeader`` became ``BadHeaderError``). None
    without the file as indexed (no telling a new name from an old one), for module code and
    impl blocks, or when nothing qualifies: the code was deleted.
    """
    if record.kind not in RENAMABLE_KINDS or record.symbol in symbols.units or \
            record.symbol in symbols.nested():
        return None
    before = indexed()
    wholes = [span for span in _spans_of(before, record.symbol)
              if span[0] <= record.start_line <= span[1]] if before is not None else []
    if before is None or not wholes:
        return None
    owner, old = _owner(record.symbol), own_name(record.symbol)
    was = _line_counts(before.text_of(wholes[0]))
    best: tuple[float, int] | None = None
    found: tuple[str, Span] | None = None
    # An owner renamed with its file (jsoup's Cleaner → HtmlCleaner): its members go with it.
    owner_renamed = bool(owner) and owner not in symbols.units
    for name, spans in symbols.units.items():
        if name in before.units or _owner(name) != owner and not (
                owner_renamed and own_name(name) == old and _owner(name) not in before.units):
            continue
        for span in spans:
            if symbols.kinds.get(span) != record.kind:
                continue
            kept = _kept_but_name(was, _line_counts(symbols.text_of(span)), old, own_name(name))
            rank = (kept, -abs(span[0] - record.start_line))
            if kept >= RENAMED_SHARE and (best is None or rank > best):
                best, found = rank, (name, span)
    if found is None:
        return None
    name, span = found
    own = record.own_text.splitlines()
    renamed = [_renamed(line, old, own_name(name)) for line in own]
    if wholes[0] != (record.start_line, record.end_line):  # one part of a split definition
        span = _verbatim(renamed, record.start_line, symbols, span) or span
    today = symbols.lines[span[0] - 1 : span[1]]
    return Renamed(name, span, len(today) == len(own) and all(
        line in pair for line, pair in zip(today, zip(own, renamed, strict=True), strict=True)))


def signature_at(symbols: FileSymbols | None, symbol: str, span: Span) -> str:
    """Today's signature of ``symbol``'s definition holding ``span`` (one part of a split
    definition lies inside it); "" when not known (module code, found at depth only)."""
    wholes = symbols.units.get(symbol, []) if symbols is not None else []
    held = [whole for whole in wholes if whole[0] <= span[0] and span[1] <= whole[1]]
    return symbols.signatures.get(held[0], "") if symbols is not None and held else ""


def gone_from(record: ChunkRecord, symbols: FileSymbols | None) -> str:
    """What is gone from today's file (``symbols``): the symbol, or this one of its
    definitions when others remain."""
    others = symbols.units.get(record.symbol, []) if symbols is not None else []
    if not others:
        return f"symbol {record.symbol} no longer exists"
    where = ", ".join(f"L{start}" for start, _ in others[:5])
    remain = "1 other remains" if len(others) == 1 else f"{len(others)} others remain"
    return (f"this definition of {record.symbol} ({record.signature or 'as indexed'}) "
            f"was removed; {remain} ({where})")


def broken_since(symbols: FileSymbols | None,
                 indexed: Callable[[], FileSymbols | None]) -> bool:
    """Today's file (``symbols``) has a syntax error the file as indexed (``indexed``) had
    not (a closing ``end`` deleted mid-edit): its parse may hold no definition at all, so a
    name missing from it tells nothing of the code."""
    if symbols is None or symbols.parsed is None or not symbols.parsed.root.has_error:
        return False
    before = indexed()
    return before is not None and before.parsed is not None and \
        not before.parsed.root.has_error


def lines_found(record: ChunkRecord, symbols: FileSymbols) -> Span | None:
    """Where ``record``'s own lines stand in today's file, all of them in a row as indexed
    (indentation aside); None when they do not."""
    own = [line.strip() for line in record.own_text.splitlines()]
    today = [line.strip() for line in symbols.lines]
    return next(((row + 1, row + len(own)) for row, line in enumerate(today)
                 if own and line == own[0] and today[row:row + len(own)] == own), None)


def _owner(symbol: str) -> str:
    return symbol.rsplit(".", 1)[0] if "." in symbol else ""


def _renamed(line: str, old: str, new: str) -> str:
    """``line`` with ``old`` as a whole word (``$`` is part of a JavaScript name) ``new``."""
    return re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", new, line)


def _kept_but_name(was: Counter[str], now: Counter[str], old: str, new: str) -> float:
    """``_similarity`` where a line kept under the new name counts too. Lines the same as they
    were pair first: a method ``len`` renamed ``length`` still reads the field ``self.len``."""
    same = was & now
    renamed: Counter[str] = Counter()
    for line, count in (was - same).items():
        renamed[_renamed(line, old, new)] += count
    longest = max(was.total(), now.total())
    return (same.total() + (renamed & (now - same)).total()) / longest if longest else 1.0

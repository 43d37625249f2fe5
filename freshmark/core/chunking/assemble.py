"""Turn found units and file-level code into chunks: summaries, split parts, module blocks.

Rows are 0-based inside this module; chunks carry 1-based lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from freshmark.core.chunking.facts import FileFacts, last_row
from freshmark.core.chunking.fallback import window_bounds
from freshmark.core.chunking.languages import Rules
from freshmark.core.chunking.model import MODULE_SYMBOL, Chunk
from freshmark.core.chunking.units import Unit, walk

Rows = tuple[int, int]

_MIN_PART_BUDGET_LINES = 10
_BLOCK_SIGNATURE_MAX_CHARS = 120
_CLOSER = re.compile(r"^(?:[}\]);,]+|end\b[;\s]*)\s*(?://.*|#.*)?$")


@dataclass(frozen=True)
class Entry:
    """One line of chunk text: a source row, or an elision marker for the rows up to ``row``."""

    row: int
    text: str
    source: bool = True


class ChunkBuilder:
    def __init__(self, facts: FileFacts, rules: Rules, max_lines: int) -> None:
        self.facts = facts
        self.lines = facts.lines
        self.rules = rules
        self.max_lines = max(max_lines, 2 * _MIN_PART_BUDGET_LINES)

    def build(self, items: Sequence[Unit | Node], loose: Sequence[Rows] = ()) -> list[Chunk]:
        """Chunks of the units in ``items`` and of the module code between them; ``loose``
        rows (text in no node, see ``UnitFinder.loose``) are module code too."""
        self.loose = loose
        units = list(walk(items))
        self._split_imports(units)
        chunks: list[Chunk] = []
        for unit in units:
            if not self._only_wraps(unit):
                chunks.extend(self._unit_chunks(unit))
        runs = module_runs(items, self.lines, self.facts.src, loose, self.rules.namespace_kinds)
        for ordinal, (start, end, nodes) in enumerate(runs, start=1):
            chunks.extend(self._block_chunks(block_symbol(ordinal), start, end, nodes))
        chunks.sort(key=lambda chunk: (chunk.start_line, -chunk.end_line, chunk.part))
        return chunks

    # -- imports and references -------------------------------------------------------------

    def _split_imports(self, units: list[Unit]) -> None:
        """File-level imports go to every chunk; imports inside a function only to its chunks."""
        spans = sorted((u.start_row, u.end_row) for u in units if not u.container)
        starts = [start for start, _ in spans]
        self.file_imports: list[str] = []
        self.local_rows: list[int] = []
        self.local_names: list[str] = []
        for row, name in self.facts.imports:
            index = bisect_right(starts, row) - 1
            if index >= 0 and spans[index][1] >= row:
                self.local_rows.append(row)
                self.local_names.append(name)
            elif name not in self.file_imports:
                self.file_imports.append(name)

    def _imports(self, first: int, last: int) -> list[str]:
        local = self.local_names[
            bisect_left(self.local_rows, first) : bisect_right(self.local_rows, last)
        ]
        return _unique([*self.file_imports, *local])

    def _references(self, intervals: Iterable[tuple[int, int]], symbol: str,
                    body: tuple[int, int] | None = None) -> list[str]:
        """Names referenced on the given row intervals, minus keywords, builtins written alone,
        one-letter names (type parameters, loop variables) and the symbol's own name, unless a
        function's body (from ``body``, its row and byte) calls it: a wrapper delegating to a
        namesake (Go's ``func WithField(…) { return std.WithField(…) }``) or a recursion."""
        own = symbol.rsplit(".", 1)[-1]
        names: list[str] = []
        calls_own = False
        for first, last in intervals:
            names.extend(self.facts.refs_between(first, last, self.rules.builtins))
            if body is not None and last >= body[0]:
                calls_own = calls_own or own in self.facts.refs_between(
                    max(first, body[0]), last, from_byte=body[1])
        keywords = self.rules.keywords
        return _unique(n for n in names if (n != own or calls_own) and len(n) > 1
                       and n not in keywords)

    # -- units --------------------------------------------------------------------------------

    def _unit_chunks(self, unit: Unit) -> list[Chunk]:
        if not unit.container and unit.end_row - unit.start_row < self.max_lines:
            return [self._whole_unit_chunk(unit)]  # fast path: no per-line bookkeeping
        if unit.container:
            entries = self._summary_entries(unit)
            atomic = {(m.node.start_byte, m.node.end_byte) for m in unit.members}
        else:
            entries = self._rows(unit.start_row, unit.end_row)
            atomic = set()
        header = self._rows(unit.node_row, unit.header_end_row)
        if len(header) > max(_MIN_PART_BUDGET_LINES, self.max_lines // 5):
            header = [Entry(unit.node_row, unit.signature, source=False)]  # macro-mangled C
        later_budget = max(self.max_lines - len(header), _MIN_PART_BUDGET_LINES)
        cut_rows: set[int] = set()
        if len(entries) > self.max_lines:
            # a container splits between members; a function anywhere in its outer node, so
            # a long run of decorators can be cut too
            target = unit.body if unit.container and unit.body is not None else unit.node
            collect_cuts(target.children, later_budget, atomic, cut_rows, self.facts.src)
        parts = pack(entries, cut_rows, self.max_lines, later_budget)
        chunks = []
        for number, part in enumerate(parts, start=1):
            text_entries = part if number == 1 else [*header, *part]
            chunks.append(
                Chunk(
                    symbol=unit.symbol,
                    kind=unit.kind,
                    start_line=(unit.start_row if number == 1 else part[0].row) + 1,
                    end_line=(unit.end_row if number == len(parts) else part[-1].row) + 1,
                    text="\n".join(e.text for e in text_entries),
                    signature=unit.signature,
                    imports=self._imports(part[0].row, part[-1].row),
                    references=self._references(_source_intervals(text_entries), unit.symbol,
                                                _body_start(unit)),
                    part=number if len(parts) > 1 else 0,
                    doc=unit.doc,
                )
            )
        return chunks

    def _only_wraps(self, unit: Unit) -> bool:
        """A namespace that holds nothing but other containers (``module Rack`` around
        ``class Head``): its outline would be its header, the members' headers and closing
        lines, a chunk that matches any query naming the namespace and says nothing."""
        if not unit.container or not unit.members or unit.doc or \
                any(not member.container for member in unit.members):
            return False
        inside = [(m.start_row, m.end_row) for m in unit.members]
        own = [row for row in range(unit.header_end_row + 1, unit.end_row)
               if not any(first <= row <= last for first, last in inside)]
        return unit.start_row == unit.node_row and \
            all(not self.lines[row].strip() for row in own)

    def _whole_unit_chunk(self, unit: Unit) -> Chunk:
        first, last = unit.start_row, unit.end_row
        return Chunk(
            symbol=unit.symbol,
            kind=unit.kind,
            start_line=first + 1,
            end_line=last + 1,
            text="\n".join(self.lines[first : last + 1]),
            signature=unit.signature,
            imports=self._imports(first, last),
            references=self._references([(first, last)], unit.symbol, _body_start(unit)),
            doc=unit.doc,
        )

    def outline(self, unit: Unit) -> str:
        """A container's whole outline, member bodies elided, in one piece: the text its
        chunks carry, however many parts it is split in (later parts repeat its header)."""
        return "\n".join(entry.text for entry in self._summary_entries(unit))

    def _summary_entries(self, unit: Unit) -> list[Entry]:
        """The container's rows with each member's doc left out and its body elided."""
        entries: list[Entry] = []
        row = unit.start_row
        for member in unit.members:
            if member.start_row < row:
                continue  # shares rows with the previous member
            entries.extend(self._rows(row, member.start_row - 1))
            entries.extend(self._rows(member.node_row, member.header_end_row))
            entries.extend(self._elided_body(member))
            row = member.end_row + 1
        entries.extend(self._rows(row, unit.end_row))
        return entries

    def _elided_body(self, member: Unit) -> list[Entry]:
        end = member.end_row
        closer = (
            self.rules.closing_lines
            and end > member.header_end_row
            and bool(_CLOSER.match(self.lines[end].strip()))
        )
        elide_to = end - 1 if closer else end
        out: list[Entry] = []
        if member.header_end_row < elide_to:
            body_rows = range(member.header_end_row + 1, elide_to + 1)
            first = next((self.lines[r] for r in body_rows if self.lines[r].strip()), "")
            indent = first[: len(first) - len(first.lstrip())]
            out.append(Entry(elide_to, f"{indent}...", source=False))
        if closer:
            out.append(Entry(end, self.lines[end]))
        return out

    # -- module blocks ------------------------------------------------------------------------

    def _block_chunks(self, symbol: str, start: int, end: int, nodes: list[Node]) -> list[Chunk]:
        entries = self._rows(start, end)
        cut_rows: set[int] = set()
        if len(entries) > self.max_lines:
            collect_cuts(nodes, self.max_lines, set(), cut_rows, self.facts.src)
            # A long comment (Go's 1,651-line package doc) is cut like loose text.
            loose_cuts(self.lines, [*self.loose, *self._long_comments(nodes)], start, end,
                       cut_rows)
        parts = pack(entries, cut_rows, self.max_lines, self.max_lines)
        return [
            Chunk(
                symbol=symbol,
                kind="block",
                start_line=part[0].row + 1,
                end_line=part[-1].row + 1,
                text="\n".join(e.text for e in part),
                signature=first_code_line(e.text for e in part),
                imports=self._imports(part[0].row, part[-1].row),
                references=self._references([(part[0].row, part[-1].row)], symbol),
                part=number if len(parts) > 1 else 0,
            )
            for number, part in enumerate(parts, start=1)
        ]

    def _long_comments(self, nodes: list[Node]) -> list[Rows]:
        """Rows of the runs of comments (a ``/* */`` one, or ``//`` lines one after another)
        longer than a chunk: no node ends inside them, so nothing else would cut them."""
        runs: list[list[int]] = []
        for node in nodes:
            if "comment" not in node.type:
                continue
            first, last = node.start_point.row, last_row(node, self.facts.src)
            if runs and first <= runs[-1][1] + 1:
                runs[-1][1] = max(runs[-1][1], last)
            else:
                runs.append([first, last])
        return [(first, last) for first, last in runs if last - first >= self.max_lines]

    def _rows(self, first: int, last: int) -> list[Entry]:
        return [Entry(row, self.lines[row]) for row in range(max(first, 0), last + 1)]


def _body_start(unit: Unit) -> tuple[int, int] | None:
    """The row and byte a function's body starts at, on its header's row in a one-line
    definition (``void drop(…) { r.drop(); }``); the row after the header when the parse
    names no body node. A container's own name is never its reference."""
    if unit.container:
        return None
    if unit.body is not None:
        return unit.body.start_point.row, unit.body.start_byte
    return unit.header_end_row + 1, 0


def block_symbol(ordinal: int) -> str:
    """``<module>`` for the first module block of a file, ``<module>#n`` for the n-th."""
    return MODULE_SYMBOL if ordinal == 1 else f"{MODULE_SYMBOL}#{ordinal}"


def module_runs(
    items: Sequence[Unit | Node], lines: list[str], src: bytes, loose: Sequence[Rows] = (),
    namespaces: Collection[str] = (),
) -> list[tuple[int, int, list[Node]]]:
    """Row ranges of module code between units: ``(first_row, last_row, nodes)``, in source
    order; the ``loose`` rows between two units belong to the run there (one of their own if
    none). Module code is the file-level code and, inside a container of a kind in
    ``namespaces`` (``namespace cxxopts { using ParsedHashMap = ...; }``), the code between
    its units, its braces left to its outline."""
    runs = _runs_between(items, lines, src, loose, -1, len(lines))
    for unit in walk(items):
        if unit.container and unit.kind in namespaces:
            runs.extend(_runs_between(unit.items, lines, src, loose, unit.header_end_row,
                                      unit.end_row))
    runs.sort(key=lambda run: run[0])
    return runs


def _runs_between(
    items: Sequence[Unit | Node], lines: list[str], src: bytes, loose: Sequence[Rows],
    previous_end: int, end: int,
) -> list[tuple[int, int, list[Node]]]:
    """The runs of ``items`` between the rows ``previous_end`` and ``end`` (both left out)."""
    runs: list[tuple[int, int, list[Node]]] = []
    current: list[Node] = []
    for item in [*items, None]:
        if isinstance(item, Node):
            current.append(item)
            continue
        next_start = item.start_row if item is not None else end
        extra = [
            (max(first, previous_end + 1), min(last, next_start - 1))
            for first, last in loose
            if first < next_start and last > previous_end
        ]
        run = _clip_run(current, extra, previous_end, next_start, lines, src)
        if run is not None:
            runs.append(run)
        current = []
        if item is not None:
            previous_end = max(previous_end, item.end_row)
    return runs


def _clip_run(
    nodes: list[Node], extra: list[Rows], previous_end: int, next_start: int, lines: list[str],
    src: bytes,
) -> tuple[int, int, list[Node]] | None:
    """The run's rows between the neighbouring units, blank edges trimmed; None when no named
    node, keyword of a parse error or loose text lies in them (only punctuation left over from a
    transparent wrapper)."""
    spans = [(n.start_point.row, last_row(n, src)) for n in nodes] + extra
    if not spans:
        return None
    start = max(min(first for first, _ in spans), previous_end + 1)
    end = min(max(last for _, last in spans), next_start - 1, len(lines) - 1)
    while start <= end and not lines[start].strip():
        start += 1
    while end >= start and not lines[end].strip():
        end -= 1
    named = any(_worded(n) and n.start_point.row <= end and last_row(n, src) >= start
                for n in nodes)
    named = named or any(first <= end and last >= start for first, last in extra)
    return (start, end, nodes) if start <= end and named else None


def _worded(node: Node) -> bool:
    """A named node, or a keyword a parse error left alone (``def (``) or a Python clause
    opened around definitions left alone (``else:``, ``try:``): not punctuation."""
    if node.is_named:
        return True
    parent = node.parent
    return parent is not None and parent.type in _KEYWORD_PARENTS and \
        any(c.isalnum() for c in node.type)


# Nodes whose keywords are module code when their children are units (transparent ones).
_KEYWORD_PARENTS = frozenset({"ERROR", "else_clause", "try_statement", "finally_clause"})


def loose_cuts(lines: list[str], loose: Sequence[Rows], start: int, end: int,
               cuts: set[int]) -> None:
    """Rows after which a block may end inside loose text (no node to cut between): at its
    edges, at its blank lines and at the ends of line windows over it (``fallback.py``), so a
    long stretch is cut at the usual size like any module code."""
    for first, last in loose:
        first, last = max(first, start), min(last, end)
        if first > last:
            continue
        cuts.update((first - 1, last))
        cuts.update(row for row in range(first, last + 1) if not lines[row].strip())
        cuts.update(first + row for _, row in window_bounds(lines[first : last + 1]))


def collect_cuts(
    children: Sequence[Node], budget: int, atomic: set[tuple[int, int]], cuts: set[int],
    src: bytes,
) -> None:
    """Rows after which a chunk may end: between siblings, never between a comment and the
    node right below it; siblings longer than ``budget`` rows are opened (unless atomic)."""
    for index, child in enumerate(children):
        child_last = last_row(child, src)
        too_long = child_last - child.start_point.row + 1 > budget
        if too_long and child.child_count and (child.start_byte, child.end_byte) not in atomic:
            collect_cuts(child.children, budget, atomic, cuts, src)
        if index + 1 == len(children):
            continue
        following = children[index + 1]
        next_row = following.start_point.row
        glued = "comment" in child.type and next_row == child_last + 1
        if next_row > child_last and not glued:
            cuts.add(next_row - 1)


def pack(
    entries: list[Entry], cut_rows: set[int], first_budget: int, later_budget: int
) -> list[list[Entry]]:
    """Greedy split of ``entries`` at allowed cuts: each part as long as fits the budget; a
    part runs past it only when no cut comes earlier. A stretch no cut opens that fits no part
    (loguru's 546-line docstring of ``Logger.add``) is parts of its own (``_windowed``).
    Blank lines at part edges are dropped."""
    cut_indexes, edges = _windowed(entries, [
        i
        for i in range(len(entries) - 1)
        if entries[i].row in cut_rows and entries[i + 1].row != entries[i].row
    ], first_budget, later_budget)
    bounds: list[tuple[int, int]] = []
    start, budget = 0, first_budget
    while True:
        edge = next((e for e in edges if e >= start), None)
        if len(entries) - start <= budget and edge is None:
            break
        cut = _cut_from(cut_indexes, start, budget)
        if edge is not None and (cut is None or edge < cut):
            cut = edge
        if cut is None:
            break
        bounds.append((start, cut))
        start, budget = cut + 1, later_budget
    bounds.append((start, len(entries) - 1))
    # A last part of nothing but closing braces (jsoup's ``}``, jq's ``f_format`` part of its
    # signature and ``}``) is no code of its own: it ends the part before.
    if len(bounds) > 1 and all(_CLOSING_ONLY.fullmatch(e.text.strip())
                               for e in entries[bounds[-1][0]:bounds[-1][1] + 1]):
        bounds[-2:] = [(bounds[-2][0], bounds[-1][1])]
    return [_trim_part(entries, lo, hi, lo > 0, hi < len(entries) - 1) for lo, hi in bounds]


def _cut_from(cut_indexes: list[int], start: int, budget: int) -> int | None:
    """The last cut that keeps a part from ``start`` within ``budget``, else the first one
    after it; None when no cut is left."""
    position = bisect_right(cut_indexes, start + budget - 1) - 1
    if position >= 0 and cut_indexes[position] >= start:
        return cut_indexes[position]
    later = bisect_left(cut_indexes, start)
    return cut_indexes[later] if later < len(cut_indexes) else None


def _windowed(entries: list[Entry], cut_indexes: list[int], first_budget: int,
              later_budget: int) -> tuple[list[int], list[int]]:
    """The cuts with those inside each stretch between two cuts that fits no part (longer than
    a later part, past the first): one statement, a long string or comment, cut as loose text
    is (``fallback.py``: at blank lines where it has them) into windows of at most a later
    part; and the edges of those stretches, where a part must end, so the parts around one
    (the signature above a docstring, the body below) keep their lines."""
    window_lines = max(1, later_budget * 4 // 5)  # its windows' hard end is then in budget
    added: list[int] = []
    edges: set[int] = set()
    for lo, hi in zip([0, *(c + 1 for c in cut_indexes)], [*cut_indexes, len(entries) - 1],
                      strict=True):
        if hi - lo + 1 <= later_budget or hi < first_budget:
            continue
        windows = window_bounds([e.text for e in entries[lo : hi + 1]], window_lines)
        added.extend(lo + end for _, end in windows[:-1])
        edges.update(edge for edge in (lo - 1, hi) if 0 <= edge < len(entries) - 1)
    return sorted({*cut_indexes, *added}), sorted(edges)


_CLOSING_ONLY = re.compile(r"[\])};,]*|end")  # a line that only closes (or is blank)


def _trim_part(
    entries: list[Entry], lo: int, hi: int, trim_start: bool, trim_end: bool
) -> list[Entry]:
    while trim_start and lo < hi and not entries[lo].text.strip():
        lo += 1
    while trim_end and hi > lo and not entries[hi].text.strip():
        hi -= 1
    return entries[lo : hi + 1]


def first_code_line(texts: Iterable[str]) -> str:
    for text in texts:
        if text.strip():
            return " ".join(text.split())[:_BLOCK_SIGNATURE_MAX_CHARS]
    return ""


def _source_intervals(entries: Iterable[Entry]) -> list[tuple[int, int]]:
    intervals: list[tuple[int, int]] = []
    for entry in entries:
        if not entry.source:
            continue
        if intervals and intervals[-1][1] + 1 >= entry.row >= intervals[-1][0]:
            intervals[-1] = (intervals[-1][0], max(intervals[-1][1], entry.row))
        else:
            intervals.append((entry.row, entry.row))
    return intervals


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))

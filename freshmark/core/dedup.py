"""One unit of code per candidate: the parts of a long definition, or a chunk reached by two
channels, are one result; two definitions that share a name are two."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.declarations import defined_in_text
from freshmark.core.fusion import Candidate
from freshmark.core.stamp import ChunkRecord
from freshmark.core.structure import named_by


def dedup_key(record: ChunkRecord) -> tuple[str, str, str]:
    """Candidates with the same (path, symbol, signature) are one unit of code (parts of a long
    function, a chunk indexed twice); a chunk without a signature is only itself. The symbol
    counts: methods of two classes of one file often share their signature line
    (``def invoke(self, ctx: Context) -> t.Any:`` in ``Command`` and ``Group``), and keying on
    the signature alone hid the one ranked second from every search."""
    return (record.path, record.symbol, record.signature or f"\0{record.id}")


def dedup(candidates: Sequence[Candidate], names: Iterable[str] = ()) -> list[Candidate]:
    """Keep the first of each (path, symbol, signature), in the given order; of a definition
    named by one of ``names`` (a look-up by name), the part that starts first, holding the
    declaration, takes that place, and of an outline in parts, the part whose lines declare
    one of them (sinatra's ``CALLERS_TO_IGNORE`` in the second of ``Sinatra.Base``'s four).
    Two first parts at different lines are two definitions, both kept: Swift's members of
    ``extension X where …`` share their name and signature with another extension's."""
    names = list(names)
    wanted = {name.lower() for name in names}
    kept: list[Candidate] = []
    at: dict[tuple[str, str, str], list[int]] = {}
    for candidate in candidates:
        record = candidate.record
        key = dedup_key(record)
        places = at.setdefault(key, [])
        if not places or _another_definition(record, [kept[p].record for p in places]):
            places.append(len(kept))
            kept.append(candidate)
            continue
        held = kept[places[0]].record
        # Its own lines: a later part carries the signature above them (yargs' usage).
        declares, held_declares = (bool(names) and defined_in_text(r.own_text, names)
                                   for r in (record, held))
        if declares and not held_declares or not held_declares and \
                record.start_line < held.start_line and named_by(record.symbol.lower(), wanted):
            kept[places[0]] = candidate
    return kept


def _another_definition(record: ChunkRecord, held: list[ChunkRecord]) -> bool:
    """``record`` starts a definition (no carried head) none of ``held`` is part of: each
    of them starts one too, at another line. An outline's parts carry no head, so two of
    them are one class."""
    def starts_one(r: ChunkRecord) -> bool:
        return bool(r.text) and r.kind not in CONTAINER_KINDS and r.head_lines == 0

    return starts_one(record) and all(starts_one(h) and h.start_line != record.start_line
                                      for h in held)


def definition_parts(record: ChunkRecord, stored: Iterable[ChunkRecord],
                     carries_head: Callable[[ChunkRecord], bool]) -> list[tuple[int, int]]:
    """Every part's first and last line, in order, of the definition chunked in parts that
    ``record`` is one of; [] for a definition in one piece. Its parts are the live chunks of
    its file version with its ``dedup_key``, from one that starts a definition to the last
    that ``carries_head`` (its definition's head, above its first line): two that start one
    are two definitions (a class defined twice, Swift's extensions of one type)."""
    key = dedup_key(record)
    same = sorted({r.id: r for r in [record, *stored] if r.is_live and
                   r.blob_sha == record.blob_sha and dedup_key(r) == key}.values(),
                  key=lambda r: r.start_line)
    runs: list[list[ChunkRecord]] = []
    for candidate in same:
        if not runs or not carries_head(candidate):
            runs.append([])
        runs[-1].append(candidate)
    run = next(run for run in runs if any(r.id == record.id for r in run))
    return [(r.start_line, r.end_line) for r in run] if len(run) > 1 else []

"""Which part of its definition a result is: a long class or function is chunked in parts
(SPEC §5), a result is one of them, and the answer says so and where the others are.

No stored field says which part a chunk is: the parts are the stored chunks of the result's
file version with its symbol and signature (``dedup.definition_parts``), one metadata read for
every result. Whether a chunk starts a definition or carries its head from above its first
line is read against that file as it is today, for a result whose file is the one indexed
(current or older but identical, at its indexed lines).
"""

from __future__ import annotations

from collections.abc import Callable

from freshmark.core.chunking import split_lines
from freshmark.core.chunking.model import MODULE_CODE_KINDS
from freshmark.core.dedup import definition_parts
from freshmark.core.ports import BranchView
from freshmark.core.stamp import LIVE, ChunkRecord
from freshmark.core.verdicts import Verdict
from freshmark.services.retrieval.results import VerifiedResult

_INDEXED_FILE = frozenset({Verdict.CURRENT, Verdict.OLDER_IDENTICAL})


def mark_parts(results: list[VerifiedResult], index: BranchView,
               today: Callable[[str], str | None]) -> None:
    """Give each result that is a part of a definition in parts every part's lines;
    ``today``: a file's text today. Module code in parts is no definition."""
    served = [r for r in results if r.record.kind not in MODULE_CODE_KINDS
              and r.verification.verdict in _INDEXED_FILE
              and r.lines_today[1:] == (r.record.start_line, r.record.end_line)]
    if not served:
        return
    stored = index.get(where={"$and": [
        {"path": {"$in": sorted({r.record.path for r in served})}},
        {"symbol": {"$in": sorted({r.record.symbol for r in served})}},
        {"status": LIVE}]})
    for result in served:
        record = result.record
        siblings = [r for r in stored if (r.path, r.symbol) == (record.path, record.symbol)
                    and r.id != record.id]
        if siblings:
            lines = split_lines(today(result.path_today) or "")
            result.parts = definition_parts(record, siblings, _head_carrier(lines))


def _head_carrier(lines: list[str]) -> Callable[[ChunkRecord], bool]:
    """Whether a chunk of the file of ``lines`` carries its definition's head above its first
    line: its text does not start with that line (a later part of an outline carries the
    class's header, which ``ChunkRecord.head_lines`` does not count)."""
    def carries(record: ChunkRecord) -> bool:
        first_row = record.text.split("\n", 1)[0]
        return record.head_lines > 0 or not 0 < record.start_line <= len(lines) or \
            lines[record.start_line - 1] != first_row

    return carries

"""Verified results: a ranked chunk with its verdict and citation header."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from freshmark.core.citation import Citation, cite
from freshmark.core.drift import DriftNote
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import (
    ACTIONS,
    CODE_TODAY_VERDICTS,
    Verdict,
    Verification,
)
from freshmark.services.open_branch import OpenedBranch


# -- search ----------------------------------------------------------------------------------------
@dataclass
class VerifiedResult:
    """One search result: the stamped chunk, its verdict and citation, and its ranking."""

    rank: int
    record: ChunkRecord
    verification: Verification
    citation: Citation
    score: float | None = None
    explain: dict[str, Any] = field(default_factory=dict)
    drift: list[DriftNote] = field(default_factory=list)
    # A look-up answered by a line of a block or an outline: the file line declaring the name.
    declared_at: int | None = None
    # ... and the row of ``text`` holding it, when the rows are not the lines (an outline).
    declared_row: int | None = None
    # A pasted error message: the file line holding its fixed words, where the result does.
    message_at: int | None = None
    # A part of a definition chunked in parts: every part's first and last line, in order.
    parts: list[tuple[int, int]] = field(default_factory=list)

    @property
    def lines_today(self) -> tuple[str, int, int]:
        """Its path and first and last line today (``Verification.lines_today``)."""
        record = self.record
        return self.verification.lines_today(record.path, record.start_line, record.end_line)

    @property
    def path_today(self) -> str:
        """Where its file is today: a file moved since indexing is read at its new path."""
        return self.verification.moved_to or self.record.path

    @property
    def symbol_today(self) -> str:
        """Its name today: a definition renamed in place since indexing goes by its new name."""
        return self.verification.renamed_to or self.record.symbol

    @property
    def code_today(self) -> tuple[str, int, int] | None:
        """Where the code it serves is today (path, first and last line); None when it has
        none (history, or not verifiable)."""
        return self.lines_today if self.verification.verdict in CODE_TODAY_VERDICTS else None

    @property
    def text(self) -> str:
        """What to put under the citation: today's lines for ``changed``, else the chunk."""
        if self.verification.current_text is not None:
            return self.verification.current_text
        return self.record.text

    @property
    def head_lines(self) -> int:
        """The text's first lines that are its definition's head, not at ``start_line`` (a
        later part of a split definition); today's lines for ``changed`` carry none."""
        return 0 if self.verification.current_text is not None else self.record.head_lines

    def to_dict(self) -> dict[str, Any]:
        """SPEC §1 stamp fields under their names, plus verdict, reason and citation."""
        v = self.verification
        return {
            **self.record.stamp(),
            "verdict": str(v.verdict),
            "seed_word": v.seed_word,
            "reason": v.reason,
            "action": ACTIONS[v.verdict],
            "citation": self.citation.text(),
            "current_start_line": v.current_start_line,
            "current_end_line": v.current_end_line,
            "moved_to": v.moved_to,
            "renamed_to": v.renamed_to,
            "current_signature": v.current_signature,
            "text": self.text,
            "head_lines": self.head_lines or None,
            "declared_at": self.declared_at,
            "declared_row": self.declared_row,
            "message_at": self.message_at,
            "parts": [list(lines) for lines in self.parts],
            "rank": self.rank,
            "score": None if self.score is None else round(self.score, 6),
            "explain": self.explain,
            "drift": [note.to_dict() for note in self.drift],
        }


RankedRecord = tuple[ChunkRecord, float | None, dict[str, Any]]


def verify_results(opened: OpenedBranch, records: list[RankedRecord]) -> list[VerifiedResult]:
    """Verify ranked records and attach their citation headers."""
    verifier = opened.verifier
    out: list[VerifiedResult] = []
    for rank, (record, score, explain) in enumerate(records, start=1):
        verification = verifier.verify(record)
        head_date = verifier.head_date() if verification.verdict is Verdict.CHANGED else None
        citation = cite(record, verification, opened.target, head_date,
                        verifier.commit_date(record.commit), verifier.read_uncommitted(
                            verification, verification.moved_to or record.path))
        out.append(VerifiedResult(rank, record, verification, citation, score, explain))
    return out

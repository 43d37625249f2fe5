"""The three-line citation header in front of every snippet (SPEC §3, seed 000 §3.5).

```
source:  src/orders/services/order_service.py#L41-L58  (OrderService.cancel_order)
version: main@9f3c1ab (2026-09-29)
check:   hash matches — same content as indexed
```

The third line is a ``check:`` line for material that may be used (current, older but identical,
changed and re-read, unverifiable clues) and a ``use:`` line for material that must not be
implemented against (historical: "reference for design ideas only…"; excluded kinds). The
header describes the snippet that follows it: for ``changed`` results that is today's lines,
so ``source`` names the current line range and ``version`` the head they were read from.

The date on a version line always has one meaning: the committer date (UTC) of the commit that
line names, i.e. of the stamp's ``commit`` (SPEC §1) for indexed material and of the head for
lines re-read from today's file, in search, verify and context alike. When the index was built
(``indexed_at``) is said by the answer's ``index`` block, never by a citation.

Code whose file moved since indexing (``moved_to``) is cited at its new path; the third line
says where it moved from. A definition renamed in place (``renamed_to``) is cited under its
name today, with the name it was indexed under.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Target, Verdict, Verification, short

HISTORICAL_USE = "reference for design ideas only, do not implement against it"
# A class (struct, impl...) chunk is its outline: the lines it spans with member bodies elided.
SKELETON_NOTE = "skeleton: member bodies elided as ..."
_LABEL_WIDTH = len("version: ")


@dataclass(frozen=True)
class Citation:
    """The three header lines; ``third_label`` is ``check`` or ``use``."""

    source: str
    version: str
    third_label: str
    third: str

    def lines(self) -> list[str]:
        return [
            _line("source", self.source),
            _line("version", self.version),
            _line(self.third_label, self.third),
        ]

    def text(self) -> str:
        """The header as three newline-separated lines (no trailing newline)."""
        return "\n".join(self.lines())


def _line(label: str, value: str) -> str:
    return f"{label}:".ljust(_LABEL_WIDTH) + value


def cite(record: ChunkRecord, verification: Verification, target: Target,
         head_date: str | None = None, commit_date: str | None = None,
         uncommitted: bool = False) -> Citation:
    """The header for one verified chunk. ``commit_date`` (YYYY-MM-DD) is the committer date
    of the stamp's ``commit``; ``head_date`` that of the target head, used for ``changed``
    results, whose lines are read from the head, or from an ``uncommitted`` edit of the
    work tree."""
    verdict = verification.verdict
    indexed = f"{record.branch or '?'}@{short(record.commit)} ({commit_date or 'date unknown'})"
    skeleton = is_skeleton(record)
    label = f"{record.symbol or '?'}, {SKELETON_NOTE}" if skeleton else (record.symbol or "?")
    path = verification.moved_to or record.path
    source = f"{path}#L{record.start_line}-L{record.end_line}  ({label})"
    if verdict is Verdict.CHANGED and verification.current_start_line is not None:
        named = f"{verification.renamed_to}, renamed from {record.symbol}" \
            if verification.renamed_to else record.symbol
        source = (f"{path}#L{verification.current_start_line}-"
                  f"L{verification.current_end_line}  ({named})")
        read_from = f"{target.label} (uncommitted)" if uncommitted else \
            f"{target.label} ({head_date or 'head'})"
        return Citation(source, f"{read_from} — re-read; indexed at {indexed}", "check",
                        f"{verification.reason} — showing today's lines, not the indexed text")
    third_label, third = _third_line(verdict, verification.reason)
    if skeleton and verdict in (Verdict.CURRENT, Verdict.OLDER_IDENTICAL):
        third = third.replace("same content as indexed",
                              "an outline of those lines, member bodies elided")
    return Citation(source, indexed, third_label, third)


def is_skeleton(record: ChunkRecord) -> bool:
    """A container chunk whose text is an outline of its lines, not the lines themselves."""
    return elides_members(record.kind, record.text)


def elides_members(kind: str, text: str) -> bool:
    """A container's chunk text with member bodies elided: the chunker leaves a line of
    ``...`` alone where each body was. A Go struct or interface, whose members have no body,
    is its lines as they are (its variadic ``...T`` is no such line)."""
    return kind in CONTAINER_KINDS and any(line.strip() == "..." for line in text.splitlines())


def _third_line(verdict: Verdict, reason: str) -> tuple[str, str]:
    if verdict is Verdict.HISTORICAL:
        return "use", f"{reason} — {HISTORICAL_USE}"
    if verdict is Verdict.EXCLUDED:
        return "use", f"excluded, {reason}"
    if verdict is Verdict.CURRENT:
        return "check", f"{reason} — same content as indexed"
    if verdict is Verdict.OLDER_IDENTICAL:
        return "check", f"older but identical: {reason} — same content as indexed"
    if verdict is Verdict.UNVERIFIABLE:
        return "check", f"{reason} — a clue, not evidence"
    return "check", reason


def cite_file(path: str, hash_prefix: str | None, verification: Verification,
              target: Target) -> Citation:
    """The header for a line of the seed's snippet list (a whole file, no symbol, no lines)."""
    version = f"hash {hash_prefix} (checked at {target.label})" if hash_prefix else \
        "unknown (no version metadata)"
    verdict = verification.verdict
    if verdict is Verdict.CHANGED:
        return Citation(path, version, "check", verification.reason)
    return Citation(path, version, *_third_line(verdict, verification.reason))

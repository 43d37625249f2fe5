"""The verdicts of verification (SPEC §2): their table, the target, one verification, and
the verdict on a listed file hash (seed 000 §4.8)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

SHORT_SHA = 7


class Verdict(StrEnum):
    CURRENT = "current"
    OLDER_IDENTICAL = "older_identical"
    CHANGED = "changed"
    HISTORICAL = "historical"
    EXCLUDED = "excluded"
    UNVERIFIABLE = "unverifiable"


# The seed's own words for each verdict (seed 000 §3.5, §4.1, §4.8; SPEC §2 table).
SEED_WORDS: dict[Verdict, str] = {
    Verdict.CURRENT: "可用",
    Verdict.OLDER_IDENTICAL: "版本较旧但内容一致",
    Verdict.CHANGED: "较旧",
    Verdict.HISTORICAL: "失效",
    Verdict.EXCLUDED: "排除",
    Verdict.UNVERIFIABLE: "待补",
}

# What the caller does with each verdict (SPEC §2, last column).
ACTIONS: dict[Verdict, str] = {
    Verdict.CURRENT: "use as is, with its citation header",
    Verdict.OLDER_IDENTICAL: "use, labelled older-but-identical",
    Verdict.CHANGED: "re-read the current file before use (current lines given)",
    Verdict.HISTORICAL: "design ideas only, never implement against it",
    Verdict.EXCLUDED: "keep out of context; read only if the task is about this file",
    Verdict.UNVERIFIABLE: "a clue, not evidence: find the code in the repository first",
}

# Usable as evidence exactly as indexed.
SAFE_VERDICTS = frozenset({Verdict.CURRENT, Verdict.OLDER_IDENTICAL})
# Code that is there at the head (``changed``: at its lines today): evidence for a context
# slice, and what a search serves once however many results verify to it.
CODE_TODAY_VERDICTS = frozenset({*SAFE_VERDICTS, Verdict.CHANGED})

EXCLUSION_REASONS: dict[str, str] = {
    "generated": "generated code: regenerate it from its source, never edit or imitate it",
    "backup": "backup file: a stale copy, not the code that runs",
    "fixture": "test fixture: sample data for tests, not product code",
    "vendored": "vendored third-party code: not this project's code",
    # Keyed by the skip reason: a path rule (``build/``, ``dist/``) that a repository undoes
    # with ``.gitattributes`` (``build/** -linguist-vendored``) when the code is its own.
    "build-output": "build output by its path (build/, dist/, target/…): made from the "
                    "sources; unless .gitattributes says otherwise (-linguist-vendored)",
}


def short(sha: str | None) -> str:
    return (sha or "")[:SHORT_SHA] or "?"


@dataclass(frozen=True)
class Target:
    """What results are verified against: a branch head, or the work tree checked out on it.

    ``head`` is the branch head commit; for a work tree it is the work tree's HEAD commit,
    and uncommitted edits count on top of it.
    """

    branch: str
    head: str
    worktree: bool = False

    @property
    def label(self) -> str:
        where = f"{self.branch}@{short(self.head)}"
        return f"work tree on {where}" if self.worktree else where

    def to_dict(self) -> dict[str, object]:
        return {"branch": self.branch, "head": self.head, "worktree": self.worktree}


@dataclass(frozen=True)
class Verification:
    """The verdict on one chunk and why; for ``changed``, where the symbol is today.

    ``current_text`` holds the symbol's lines read from today's file (head blob or work tree),
    never the indexed text. ``moved_to`` is the file's path today when the file (or the
    symbol) moved since indexing; the lines are then that file's (for ``older_identical``
    the indexed ones, the content being the same). ``renamed_to`` is the symbol's full name
    today when its definition was renamed in place (its code kept under a new name).
    ``current_signature`` is the signature of the definition ``current_text`` is read from,
    as it is today ("" when not known: module code, a definition found only at depth).
    """

    verdict: Verdict
    reason: str
    current_start_line: int | None = None
    current_end_line: int | None = None
    current_text: str | None = None
    moved_to: str | None = None
    renamed_to: str | None = None
    current_signature: str | None = None

    @property
    def safe(self) -> bool:
        return self.verdict in SAFE_VERDICTS

    @property
    def seed_word(self) -> str:
        return SEED_WORDS[self.verdict]

    def lines_today(self, path: str, start_line: int, end_line: int) -> tuple[str, int, int]:
        """Where a chunk stamped at ``path`` lines ``start_line..end_line`` is today: its
        path after a move, its lines after a change (the stamped ones where none is known)."""
        return (self.moved_to or path, self.current_start_line or start_line,
                self.current_end_line or end_line)


def hash_verdict(data: bytes, hash_prefix: str, moved: str | None = None,
                 moved_to: str | None = None) -> Verification:
    """The listed sha256 prefix against ``data``: the same file (current, or older but
    identical at the path it ``moved`` to) or changed."""
    now = hashlib.sha256(data).hexdigest()
    prefix = hash_prefix.lower()
    where = f"{moved}; " if moved else ""
    if now.startswith(prefix):
        verdict = Verdict.OLDER_IDENTICAL if moved else Verdict.CURRENT
        return Verification(verdict, f"{where}hash matches: {now[:len(prefix)]}",
                            moved_to=moved_to)
    return Verification(
        Verdict.CHANGED,
        f"{where}hash differs: listed {prefix} -> now {now[:len(prefix)]}; re-read the file",
        moved_to=moved_to,
    )

"""Verdict counts per repository and branch, kept on disk (seed 000 §6 step 7: failure statistics).

Every ``search`` and ``verify`` adds the verdicts it gave; ``freshmark status`` shows the totals
and the metrics exporter can read them. Storage is one SQLite file under ``settings.state_dir``
in WAL mode: any number of processes on one host add counts concurrently (each addition is one
``INSERT … ON CONFLICT DO UPDATE`` transaction; writers wait up to ``BUSY_TIMEOUT_SECONDS``).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path

from freshmark.settings import Settings
from freshmark.stamp import utc_now_iso

FILE_NAME = "verdicts.sqlite"
BUSY_TIMEOUT_SECONDS = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdict_counts (
    repo TEXT NOT NULL,
    branch TEXT NOT NULL,
    verdict TEXT NOT NULL,
    count INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (repo, branch, verdict)
)
"""
_ADD = """
INSERT INTO verdict_counts (repo, branch, verdict, count, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (repo, branch, verdict)
DO UPDATE SET count = count + excluded.count, updated_at = excluded.updated_at
"""

log = logging.getLogger(__name__)


class VerdictStats:
    """Running verdict counts, one row per (repo, branch, verdict)."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def open(cls, settings: Settings) -> VerdictStats:
        return cls(settings.state_dir / FILE_NAME)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            with conn:  # one transaction
                yield conn

    def add(self, repo: str, branch: str, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (verdict -> how many) to the totals of (repo, branch)."""
        rows = [(repo, branch, str(v), int(n), utc_now_iso()) for v, n in counts.items() if n > 0]
        if not rows:
            return
        with self._connect() as conn:
            conn.executemany(_ADD, rows)

    def try_add(self, repo: str, branch: str, counts: Mapping[str, int]) -> bool:
        """``add``, but a state directory that cannot be written never fails the caller's
        search or verify: the answer matters more than its statistics (logged instead)."""
        try:
            self.add(repo, branch, counts)
        except (sqlite3.Error, OSError) as exc:
            log.warning("verdict counts not recorded in %s: %s", self.path, exc)
            return False
        return True

    def counts(self, repo: str, branch: str) -> dict[str, int]:
        """Totals for (repo, branch): verdict -> count (verdicts never given are absent)."""
        if not self.path.exists():
            return {}
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT verdict, count FROM verdict_counts WHERE repo = ? AND branch = ?",
                (repo, branch),
            ).fetchall()
        return {verdict: int(count) for verdict, count in rows}

    def all_counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """Totals of every (repo, branch), for exporters."""
        if not self.path.exists():
            return {}
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT repo, branch, verdict, count FROM verdict_counts").fetchall()
        out: dict[tuple[str, str], dict[str, int]] = {}
        for repo, branch, verdict, count in rows:
            out.setdefault((repo, branch), {})[verdict] = int(count)
        return out

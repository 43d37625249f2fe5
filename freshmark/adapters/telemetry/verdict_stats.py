"""Verdict counts per repository and branch, kept on disk (seed 000 §6 step 7: failure statistics).

Every ``search`` and ``verify`` adds the verdicts it gave; ``freshmark status`` shows the totals
and the metrics exporter can read them. Storage is one SQLite file under ``settings.state_dir``
in WAL mode: any number of processes on one host add counts concurrently (each addition is one
``INSERT … ON CONFLICT DO UPDATE`` transaction; writers wait up to ``BUSY_TIMEOUT_SECONDS``).

Searches do not write per call (``add_later``): a per-search connection and transaction cost a
quarter of an in-process search. Counts wait in this process's memory and are written in one
transaction every ``FLUSH_EVERY_ADDS`` additions, ``FLUSH_AFTER_SECONDS`` after the first
pending one (a daemon timer), and at a normal interpreter exit. Reads in the same process
flush first, so a process always sees its own counts; a killed process loses at most its
pending ones, and a forked child starts with none (the parent writes them).
"""

from __future__ import annotations

import atexit
import logging
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path

from freshmark.core.settings import Settings
from freshmark.core.stamp import utc_now_iso

FILE_NAME = "verdicts.sqlite"
BUSY_TIMEOUT_SECONDS = 10.0
FLUSH_EVERY_ADDS = 50
FLUSH_AFTER_SECONDS = 2.0

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
        self.add_rows(Counter({(repo, branch, str(v)): int(n) for v, n in counts.items()}))

    def add_rows(self, counts: Mapping[tuple[str, str, str], int]) -> None:
        """Add (repo, branch, verdict) -> count rows in one transaction."""
        now = utc_now_iso()
        rows = [(repo, branch, verdict, n, now) for (repo, branch, verdict), n in counts.items()
                if n > 0]
        if not rows:
            return
        with self._connect() as conn:
            conn.executemany(_ADD, rows)

    def add_later(self, repo: str, branch: str, counts: Mapping[str, int]) -> None:
        """``add`` batched in this process's memory (see the module docstring); never raises."""
        _PENDING.add(self.path, {(repo, branch, str(v)): int(n) for v, n in counts.items()})

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
        _PENDING.flush()
        if not self.path.exists():
            return {}
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT verdict, count FROM verdict_counts WHERE repo = ? AND branch = ?",
                (repo, branch),
            ).fetchall()
        return {verdict: int(count) for verdict, count in rows}

    def forget(self, repo: str, branch: str) -> None:
        """Drop the totals of (repo, branch): its index was dropped."""
        _PENDING.flush()
        if not self.path.exists():
            return
        with self._connect() as conn:
            conn.execute("DELETE FROM verdict_counts WHERE repo = ? AND branch = ?", (repo, branch))

    def all_counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """Totals of every (repo, branch), for exporters."""
        _PENDING.flush()
        if not self.path.exists():
            return {}
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT repo, branch, verdict, count FROM verdict_counts").fetchall()
        out: dict[tuple[str, str], dict[str, int]] = {}
        for repo, branch, verdict, count in rows:
            out.setdefault((repo, branch), {})[verdict] = int(count)
        return out


class _PendingCounts:
    """Verdict rows per stats file, waiting in memory to be written in one transaction."""

    def __init__(self, flush_every_adds: int, flush_after_seconds: float) -> None:
        self.flush_every_adds = flush_every_adds
        self.flush_after_seconds = flush_after_seconds
        self._rows: dict[Path, Counter[tuple[str, str, str]]] = {}
        self._adds = 0
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def add(self, path: Path, rows: Mapping[tuple[str, str, str], int]) -> None:
        with self._lock:
            self._rows.setdefault(path, Counter()).update(rows)
            self._adds += 1
            due = self._adds >= self.flush_every_adds
            if not due and self._timer is None:
                self._timer = threading.Timer(self.flush_after_seconds, self.flush)
                self._timer.daemon = True  # never holds up exit; atexit writes what is left
                self._timer.start()
        if due:
            self.flush()

    def _take(self) -> dict[Path, Counter[tuple[str, str, str]]]:
        with self._lock:
            taken, self._rows, self._adds = self._rows, {}, 0
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        return taken

    def flush(self) -> None:
        """Write every pending row; a state directory that cannot be written is logged."""
        for path, rows in self._take().items():
            try:
                VerdictStats(path).add_rows(rows)
            except (sqlite3.Error, OSError) as exc:
                log.warning("verdict counts not recorded in %s: %s", path, exc)

    def forget_in_child(self) -> None:
        """After fork: the parent owns (and writes) the rows this copy inherited."""
        self._rows, self._adds, self._timer = {}, 0, None
        self._lock = threading.Lock()


_PENDING = _PendingCounts(FLUSH_EVERY_ADDS, FLUSH_AFTER_SECONDS)
atexit.register(_PENDING.flush)
os.register_at_fork(after_in_child=_PENDING.forget_in_child)


def flush_pending() -> None:
    """Write this process's pending verdict counts now (servers call it on shutdown)."""
    _PENDING.flush()

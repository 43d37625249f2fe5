"""Verdict counts per repository and branch, kept on disk (seed 000 §6 step 7: failure statistics).

Every ``search`` and ``verify`` adds the verdicts it gave; ``freshmark status`` shows the totals
and the metrics exporter can read them. The same verdicts are also counted per directory prefix
of the results' paths (``core.dirstats``: at most ``MAX_DIRS_PER_BRANCH`` prefixes a branch,
the rest under ``(other)``), for ``audit --by-dir``, the status JSON and ``/metrics``.

Storage is one SQLite file under ``settings.state_dir`` in WAL mode: any number of processes on
one host add counts concurrently (each addition is one ``INSERT … ON CONFLICT DO UPDATE``
transaction; writers wait up to ``BUSY_TIMEOUT_SECONDS``).

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

from freshmark.adapters.sqlite_wal import connect_wal
from freshmark.core.dirstats import DirStaleness, fold
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
_DIR_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdict_dirs (
    repo TEXT NOT NULL,
    branch TEXT NOT NULL,
    dir TEXT NOT NULL,
    verdict TEXT NOT NULL,
    count INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (repo, branch, dir, verdict)
)
"""
_ADD_DIR = """
INSERT INTO verdict_dirs (repo, branch, dir, verdict, count, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (repo, branch, dir, verdict)
DO UPDATE SET count = count + excluded.count, updated_at = excluded.updated_at
"""
# (repo, branch, verdict) -> count, and (repo, branch, directory, verdict) -> count.
Rows = Mapping[tuple[str, str, str], int]
DirRows = Mapping[tuple[str, str, str, str], int]
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
        with closing(connect_wal(self.path, BUSY_TIMEOUT_SECONDS)) as conn:
            conn.execute(_SCHEMA)
            conn.execute(_DIR_SCHEMA)
            with conn:  # one transaction
                yield conn

    def add(self, repo: str, branch: str, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (verdict -> how many) to the totals of (repo, branch)."""
        self.add_rows(Counter({(repo, branch, str(v)): int(n) for v, n in counts.items()}))

    def add_rows(self, counts: Rows, dir_counts: DirRows | None = None) -> None:
        """Add (repo, branch, verdict) -> count rows, and the same per directory, in one
        transaction."""
        now = utc_now_iso()
        rows = [(repo, branch, verdict, n, now) for (repo, branch, verdict), n in counts.items()
                if n > 0]
        dir_rows = {key: n for key, n in (dir_counts or {}).items() if n > 0}
        if not rows and not dir_rows:
            return
        with self._connect() as conn:
            conn.executemany(_ADD, rows)
            conn.executemany(_ADD_DIR, _folded(conn, dir_rows, now))

    def add_later(self, repo: str, branch: str, counts: Mapping[str, int],
                  dir_counts: Mapping[tuple[str, str], int] | None = None) -> None:
        """``add`` batched in this process's memory (see the module docstring); never raises.
        ``dir_counts``: (directory prefix, verdict) -> count."""
        _PENDING.add(self.path, {(repo, branch, str(v)): int(n) for v, n in counts.items()},
                     {(repo, branch, d, str(v)): int(n)
                      for (d, v), n in (dir_counts or {}).items()})

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
        """Drop the totals of (repo, branch), per directory too: its index was dropped."""
        _PENDING.flush()
        if not self.path.exists():
            return
        with self._connect() as conn:
            conn.execute("DELETE FROM verdict_counts WHERE repo = ? AND branch = ?", (repo, branch))
            conn.execute("DELETE FROM verdict_dirs WHERE repo = ? AND branch = ?", (repo, branch))

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


    def dir_counts(self, repo: str | None = None,
                   branch: str | None = None) -> list[DirStaleness]:
        """Verdicts per directory prefix, of one repository (and branch) or of all."""
        _PENDING.flush()
        if not self.path.exists():
            return []
        query = "SELECT repo, branch, dir, verdict, count FROM verdict_dirs"
        where = [(c, v) for c, v in (("repo", repo), ("branch", branch)) if v is not None]
        if where:
            query += " WHERE " + " AND ".join(f"{column} = ?" for column, _ in where)
        with self._connect() as conn:
            rows = conn.execute(query, [value for _, value in where]).fetchall()
        grouped: dict[tuple[str, str, str], dict[str, int]] = {}
        for repo_, branch_, directory, verdict, count in rows:
            grouped.setdefault((repo_, branch_, directory), {})[verdict] = int(count)
        return [DirStaleness(r, b, d, counts) for (r, b, d), counts in sorted(grouped.items())]


def _folded(conn: sqlite3.Connection, dir_rows: DirRows,
            now: str) -> list[tuple[str, str, str, str, int, str]]:
    """Rows to add, a directory beyond the branch's bound counted under ``(other)``."""
    known: dict[tuple[str, str], set[str]] = {}
    out: Counter[tuple[str, str, str, str]] = Counter()
    for (repo, branch, directory, verdict), n in sorted(dir_rows.items()):
        held = known.get((repo, branch))
        if held is None:
            held = {row[0] for row in conn.execute(
                "SELECT DISTINCT dir FROM verdict_dirs WHERE repo = ? AND branch = ?",
                (repo, branch))}
            known[(repo, branch)] = held
        counted = fold(directory, held)
        held.add(counted)
        out[(repo, branch, counted, verdict)] += n
    return [(*key, n, now) for key, n in out.items()]


class _PendingCounts:
    """Verdict rows per stats file, waiting in memory to be written in one transaction."""

    def __init__(self, flush_every_adds: int, flush_after_seconds: float) -> None:
        self.flush_every_adds = flush_every_adds
        self.flush_after_seconds = flush_after_seconds
        self._rows: dict[Path, Counter[tuple[str, str, str]]] = {}
        self._dir_rows: dict[Path, Counter[tuple[str, str, str, str]]] = {}
        self._adds = 0
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def add(self, path: Path, rows: Rows, dir_rows: DirRows | None = None) -> None:
        with self._lock:
            self._rows.setdefault(path, Counter()).update(rows)
            self._dir_rows.setdefault(path, Counter()).update(dir_rows or {})
            self._adds += 1
            due = self._adds >= self.flush_every_adds
            if not due and self._timer is None:
                self._timer = threading.Timer(self.flush_after_seconds, self.flush)
                self._timer.daemon = True  # never holds up exit; atexit writes what is left
                self._timer.start()
        if due:
            self.flush()

    def _take(self) -> tuple[dict[Path, Counter[tuple[str, str, str]]],
                             dict[Path, Counter[tuple[str, str, str, str]]]]:
        with self._lock:
            taken, self._rows, self._adds = self._rows, {}, 0
            taken_dirs, self._dir_rows = self._dir_rows, {}
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        return taken, taken_dirs

    def flush(self) -> None:
        """Write every pending row; a state directory that cannot be written is logged."""
        taken, taken_dirs = self._take()
        for path in taken.keys() | taken_dirs.keys():
            try:
                VerdictStats(path).add_rows(taken.get(path, Counter()), taken_dirs.get(path))
            except (sqlite3.Error, OSError) as exc:
                log.warning("verdict counts not recorded in %s: %s", path, exc)

    def forget_in_child(self) -> None:
        """After fork: the parent owns (and writes) the rows this copy inherited."""
        self._rows, self._adds, self._timer = {}, 0, None
        self._dir_rows = {}
        self._lock = threading.Lock()


_PENDING = _PendingCounts(FLUSH_EVERY_ADDS, FLUSH_AFTER_SECONDS)
atexit.register(_PENDING.flush)
os.register_at_fork(after_in_child=_PENDING.forget_in_child)


def flush_pending() -> None:
    """Write this process's pending verdict counts now (servers call it on shutdown)."""
    _PENDING.flush()

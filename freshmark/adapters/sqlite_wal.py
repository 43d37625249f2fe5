"""SQLite files that several processes share, opened in WAL mode.

Switching a file to WAL takes an exclusive lock, and a connection that already holds a shared
lock when another waits for the exclusive one gets ``SQLITE_BUSY`` at once: SQLite skips the
busy handler there to avoid a deadlock, so ``sqlite3.connect``'s ``timeout`` does not help
(measured: 7 of 240 processes opening new files six at a time failed with "database is
locked"). WAL is a property of the file, so the mode is read first (once a file is in WAL, no
lock is taken) and the switch is tried again until the timeout.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

WAL = "wal"
RETRY_SECONDS = 0.02


def connect_wal(path: Path, timeout_seconds: float, **options: Any) -> sqlite3.Connection:
    """A connection to ``path`` (``options`` as ``sqlite3.connect`` takes them) whose file is in
    WAL mode; raises ``sqlite3.OperationalError`` when the switch cannot be made within
    ``timeout_seconds``."""
    connection = sqlite3.connect(path, timeout=timeout_seconds, **options)
    try:
        _ensure_wal(connection, timeout_seconds)
    except BaseException:
        connection.close()
        raise
    return connection


def _ensure_wal(connection: sqlite3.Connection, timeout_seconds: float) -> None:
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            if _mode(connection, "PRAGMA journal_mode") == WAL or \
                    _mode(connection, "PRAGMA journal_mode=WAL") == WAL:
                return
        except sqlite3.OperationalError as error:
            if not _busy(error) or time.monotonic() >= deadline:
                raise
        if time.monotonic() >= deadline:
            # A switch that could not take its lock answers with the mode it left in place.
            raise sqlite3.OperationalError("database is locked: could not switch it to WAL")
        time.sleep(RETRY_SECONDS)


def _mode(connection: sqlite3.Connection, pragma: str) -> str:
    return str(connection.execute(pragma).fetchone()[0]).lower()


def _busy(error: sqlite3.OperationalError) -> bool:
    return error.sqlite_errorname.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))

"""SQLite files shared by processes open in WAL mode even when processes open a new file at
once (switching to WAL is a lock SQLite's busy timeout does not wait for)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from freshmark.adapters.sqlite_wal import connect_wal

OPENERS = 6
ROUNDS = 60


def _open_new_files(directory: str, barrier, failures) -> None:
    for round_number in range(ROUNDS):
        barrier.wait(timeout=60)  # every opener starts on the same new file at once
        try:
            connection = connect_wal(Path(directory) / f"round-{round_number}.sqlite", 10.0)
            connection.execute("CREATE TABLE IF NOT EXISTS t (x)")
            connection.close()
        except sqlite3.OperationalError as error:
            failures.put(f"round {round_number}: {error}")


def test_processes_opening_a_new_file_at_once_all_get_it_in_wal_mode(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, failures = context.Barrier(OPENERS), context.Queue()
    openers = [context.Process(target=_open_new_files, args=(str(tmp_path), barrier, failures))
               for _ in range(OPENERS)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=120)
        assert opener.exitcode == 0
    assert failures.empty(), failures.get()
    for round_number in range(ROUNDS):
        with sqlite3.connect(tmp_path / f"round-{round_number}.sqlite") as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_already_in_wal_mode_opens_without_switching_again(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    connect_wal(path, 1.0).close()
    holder = sqlite3.connect(path, timeout=0, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer busy elsewhere: reads still go through
    try:
        connection = connect_wal(path, 1.0)
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        connection.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()

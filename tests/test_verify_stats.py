"""Verdict counts per repository and branch, on disk and shared by processes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from freshmark.adapters.telemetry.verdict_stats import VerdictStats, flush_pending
from freshmark.core.settings import Settings


def settings_at(home: Path) -> Settings:
    return Settings(home=home)


def test_counts_add_up_per_repo_and_branch(tmp_path):
    stats = VerdictStats.open(settings_at(tmp_path))
    stats.add("shop", "main", {"current": 2, "historical": 1})
    stats.add("shop", "main", {"current": 1, "changed": 0})
    stats.add("shop", "feature/x", {"excluded": 4})
    again = VerdictStats.open(settings_at(tmp_path))  # a new handle reads the same file
    assert again.counts("shop", "main") == {"current": 3, "historical": 1}
    assert again.counts("shop", "feature/x") == {"excluded": 4}
    assert again.counts("other", "main") == {}


def test_nothing_recorded_yet_reads_as_empty(tmp_path):
    assert VerdictStats.open(settings_at(tmp_path / "fresh")).counts("shop", "main") == {}


def _add_many(home: str, times: int) -> None:
    stats = VerdictStats.open(Settings(home=Path(home)))
    for _ in range(times):
        stats.add("shop", "main", {"current": 1, "changed": 2})


def test_processes_adding_at_once_lose_no_count(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_many, args=(str(tmp_path), 40)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    assert VerdictStats.open(settings_at(tmp_path)).counts("shop", "main") == {
        "current": 160, "changed": 320}


def test_unwritable_state_directory_does_not_fail_the_caller(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    stats = VerdictStats.open(settings_at(blocker))  # state dir would be under a regular file
    assert stats.try_add("shop", "main", {"current": 1}) is False


def test_all_counts_lists_every_branch(tmp_path):
    stats = VerdictStats.open(settings_at(tmp_path))
    stats.add("shop", "main", {"current": 1})
    stats.add("bank", "dev", {"historical": 2})
    assert stats.all_counts() == {("shop", "main"): {"current": 1},
                                  ("bank", "dev"): {"historical": 2}}


def _rows_on_disk(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COALESCE(SUM(count), 0) FROM verdict_counts").fetchone()[0])


def test_search_verdicts_wait_in_memory_and_the_process_still_reads_them(tmp_path: Path) -> None:
    stats = VerdictStats.open(settings_at(tmp_path))
    stats.add_later("shop", "main", {"current": 2})
    stats.add_later("shop", "main", {"current": 1, "stale": 1})
    assert _rows_on_disk(stats.path) == 0  # no write per search
    assert stats.counts("shop", "main") == {"current": 3, "stale": 1}  # a read flushes first
    assert _rows_on_disk(stats.path) == 4


def test_pending_verdicts_are_written_at_a_normal_exit(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path\n"
        "from freshmark.adapters.telemetry.verdict_stats import VerdictStats\n"
        "from freshmark.core.settings import Settings\n"
        "stats = VerdictStats.open(Settings(home=Path(sys.argv[1])))\n"
        "for _ in range(3): stats.add_later('shop', 'main', {'current': 1})\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True)
    assert VerdictStats.open(settings_at(tmp_path)).counts("shop", "main") == {"current": 3}


def test_a_forked_child_does_not_write_its_parents_pending_verdicts(tmp_path: Path) -> None:
    stats = VerdictStats.open(settings_at(tmp_path))
    stats.add_later("shop", "main", {"current": 1})
    pid = os.fork()
    if pid == 0:  # the child flushes what it holds, as its exit would, and leaves
        flush_pending()
        os._exit(0)
    os.waitpid(pid, 0)
    assert stats.counts("shop", "main") == {"current": 1}

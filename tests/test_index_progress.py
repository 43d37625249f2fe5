"""Index progress: files and chunks as they are embedded, with a rate and an estimate."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
from pathlib import Path

from repo_builder import RepoBuilder

from freshmark.core.config import ClassifyRules, Config
from freshmark.core.progress import DONE, START, WORKING, IndexProgress, describe
from freshmark.core.settings import Settings
from freshmark.faces.cli.common import ProgressPrinter
from freshmark.services.indexing.indexer import IndexRequest, index_repo

FRESHMARK = [str(Path(sys.executable).parent / "freshmark")]


def _repo(make_repo, files: int) -> RepoBuilder:
    repo = make_repo("many")
    for i in range(files):
        repo.write(f"src/m{i}.py", f"def f{i}():\n    return {i}\n")
    repo.commit("many")
    return repo


def test_working_line_shows_files_chunks_rate_and_time_left() -> None:
    event = IndexProgress("default", WORKING, 100, 400, 250, files_written=100)
    assert describe(event, 50.0) == ("layer default: 100/400 files, 250 chunks embedded "
                                     "(5.0/s), about 2m30s left")


def test_time_left_goes_by_the_files_written_not_only_embedded() -> None:
    # 300 files embedded but only the first 100 written: the writes are part of the pace.
    event = IndexProgress("default", WORKING, 300, 400, 900, files_written=100)
    assert describe(event, 50.0).endswith("about 2m30s left")


def test_no_time_left_is_promised_before_a_batch_is_written() -> None:
    event = IndexProgress("default", WORKING, 200, 400, 900, files_written=0)
    assert "left" not in describe(event, 10.0)


def test_done_line_shows_the_layer_total_and_duration() -> None:
    event = IndexProgress("hot", DONE, 400, 400, 1000)
    assert describe(event, 200.0, embedded_at_start=200) == (
        "layer hot: done, 400/400 files, 800 chunks embedded (4.0/s) in 3m20s")


def test_off_terminal_prints_a_line_per_phase_and_a_heartbeat() -> None:
    out = io.StringIO()
    clock = iter([0.0, 1.0, 31.0, 32.0, 40.0])
    printer = ProgressPrinter(out, on_terminal=False, clock=lambda: next(clock))
    printer(IndexProgress("default", START, 0, 10, 0))
    printer(IndexProgress("default", WORKING, 2, 10, 2))  # 1 s in: too soon
    printer(IndexProgress("default", WORKING, 5, 10, 5))  # 31 s in: heartbeat
    printer(IndexProgress("default", WORKING, 6, 10, 6))  # 1 s after it: too soon
    printer(IndexProgress("default", DONE, 10, 10, 10))
    lines = out.getvalue().splitlines()
    assert [line.split(":")[1].split(",")[0].strip() for line in lines] == [
        "10 changed files to index", "5/10 files", "done"]


def test_a_batch_of_files_advances_as_its_chunks_are_embedded(fm_home: Path, make_repo) -> None:
    repo = _repo(make_repo, 70)  # one batch of files, three embedder batches of 32
    out = io.StringIO()
    ticks = itertools.count()
    printer = ProgressPrinter(out, on_terminal=True, clock=lambda: float(next(ticks)))
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config(),
               progress=printer)
    shown = [part for part in out.getvalue().split("\r") if part.strip()]
    assert any(" 32/70 files" in line for line in shown)
    assert any(" 64/70 files" in line for line in shown)
    assert shown[-1].startswith("layer default: done, 70/70 files, 70 chunks embedded")


def test_a_batch_written_in_parts_never_counts_back(fm_home: Path, make_repo) -> None:
    # One batch of files written in two parts of 64 chunks, each embedded 32 at a time.
    repo = _repo(make_repo, 128)
    events: list[IndexProgress] = []
    config = Config(rules=ClassifyRules(batch_chunks=64))
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=config,
               progress=events.append)
    done = [e.files_done for e in events if e.phase == WORKING]
    assert done == sorted(done) and 32 in done and 96 in done and max(done) == 128


def test_piped_index_prints_its_phases_on_stderr(fm_home: Path, make_repo) -> None:
    repo = _repo(make_repo, 3)
    done = subprocess.run([*FRESHMARK, "index", str(repo.path)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "layer default: 3 changed files to index"
    assert done.stderr.splitlines()[1].startswith("layer default: done, 3/3 files")
    assert done.stdout.startswith("many@main")


def test_time_left_falls_through_a_batch_rather_than_growing_with_the_time() -> None:
    # 100 files written at 50 s; 20 s later the next batch is half embedded.
    later = IndexProgress("default", WORKING, 150, 400, 900, files_written=100)
    assert describe(later, 70.0, written_at_seconds=50.0).endswith("about 2m10s left")
    still_later = IndexProgress("default", WORKING, 190, 400, 1100, files_written=100)
    assert describe(still_later, 90.0, written_at_seconds=50.0).endswith("about 1m50s left")


def test_the_printer_keeps_the_time_the_files_written_were_reached() -> None:
    out = io.StringIO()
    clock = iter([0.0, 50.0, 70.0])
    printer = ProgressPrinter(out, on_terminal=False, clock=lambda: next(clock),
                              heartbeat_seconds=0.0)
    printer(IndexProgress("default", START, 0, 400, 0))
    printer(IndexProgress("default", WORKING, 100, 400, 250, files_written=100))
    printer(IndexProgress("default", WORKING, 150, 400, 400, files_written=100))
    assert out.getvalue().splitlines()[-1].endswith("about 2m10s left")


def test_the_files_shown_done_never_go_back() -> None:
    out = io.StringIO()
    clock = itertools.count()
    printer = ProgressPrinter(out, on_terminal=False, clock=lambda: float(next(clock)),
                              heartbeat_seconds=0.0)
    printer(IndexProgress("default", START, 0, 142, 0))
    printer(IndexProgress("default", WORKING, 107, 142, 3764))
    printer(IndexProgress("default", WORKING, 106, 142, 4121))  # the next part's estimate
    assert out.getvalue().splitlines()[-1].startswith("layer default: 107/142 files, 4121")

"""The recency study (bench/tune_recency.py) dates each chunk by its newest line at the
report's base commit, read with git blame from a real repository."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from bench_localization import commit_time  # noqa: E402
from tune_recency import add_recency, age_days, line_times  # noqa: E402


def _history(make_repo) -> tuple[Path, str]:
    repo = make_repo()
    repo.write("a.py", "a = 1\nb = 1\nc = 1\nd = 1\n").commit("add", when="2020-01-01T00:00:00Z")
    base = repo.write("a.py", "a = 1\nb = 1\nc = 2\nd = 1\n").commit(
        "change c", when="2020-01-11T00:00:00Z")
    repo.write("a.py", "a = 2\nb = 1\nc = 2\nd = 1\n").commit("after the base",
                                                              when="2020-02-01T00:00:00Z")
    return repo.path, base


def test_a_chunk_is_as_old_as_its_newest_line_at_the_base_commit(make_repo) -> None:
    path, base = _history(make_repo)
    times = line_times(str(path), base, "a.py")
    now = commit_time(path, base)

    assert times is not None
    assert age_days(times, 1, 2, now) == 10.0  # the change after the base is not seen
    assert age_days(times, 2, 4, now) == 0.0


def test_the_newest_chunk_of_a_file_scores_one_and_the_oldest_zero(make_repo) -> None:
    path, base = _history(make_repo)
    study = SimpleNamespace(mirror=path, row={"base_commit": base})
    chunks = [{"path": "a.py", "start": 1, "end": 2}, {"path": "a.py", "start": 3, "end": 4}]

    unread = add_recency(study, chunks)  # type: ignore[arg-type]

    assert unread == 0
    assert [c["recent_norm"] for c in chunks] == [0.0, 1.0]
    assert chunks[1]["recent"] == 1.0


def test_a_file_the_mirror_cannot_blame_scores_zero_and_is_counted(make_repo) -> None:
    path, base = _history(make_repo)
    study = SimpleNamespace(mirror=path, row={"base_commit": base})
    chunks = [{"path": "gone.py", "start": 1, "end": 2}]

    assert add_recency(study, chunks) == 1  # type: ignore[arg-type]
    assert chunks[0]["recent"] == 0.0

"""The file-answer study (bench/tune_files.py) scores the shipped rule as the search does, so
its figures for the shipped rule are the search's file answers on the same pool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from tune_files import FileView, Rule, Study, add_history, file_score  # noqa: E402

from freshmark.core.fusion import Candidate, group_files  # noqa: E402
from freshmark.core.stamp import ChunkRecord  # noqa: E402


def _candidate(doc_id: str, path: str, score: float) -> Candidate:
    record = ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=doc_id,
                         start_line=1, end_line=10, indexed_at="2026-01-01T00:00:00Z",
                         blob_sha="b" * 40, content_sha256="d" * 64, id=doc_id)
    return Candidate(record=record, score=score, kind="source")


def test_the_shipped_rule_orders_files_as_group_files_does() -> None:
    # One strong chunk against two slightly weaker ones: the second chunk decides.
    ranked = [_candidate("a1", "a.py", 1.00), _candidate("b1", "b.py", 0.99),
              _candidate("b2", "b.py", 0.50), _candidate("c1", "c.py", 0.98),
              _candidate("a2", "a.py", -0.2)]
    searched = [f.path for f in group_files(ranked, 3)]
    views = [FileView(path, [c.score for c in ranked if c.record.path == path], 0.0, 0.0, 1.0,
                      sum(c.record.path == path for c in ranked)) for path in searched]
    studied = [v.path for v in sorted(views, key=lambda v: -file_score(v, Rule()))]
    assert searched == ["b.py", "a.py", "c.py"]
    assert studied == searched


def test_history_counts_the_recent_commits_before_the_base_that_changed_each_file(
        tmp_path: Path, make_repo) -> None:
    repo = make_repo("owner+name/repo")
    repo.write("a.py", "a = 1\n").write("b.py", "b = 1\n").commit("add")
    repo.write("a.py", "a = 2\n").commit("a again")
    repo.write("a.py", "a = 3\n").write("b.py", "b = 2\n").commit("both")
    base = repo.head()
    repo.write("b.py", "b = 3\n").commit("after the base")  # the fix's side: never counted
    data = tmp_path / "reports.jsonl"
    data.write_text(json.dumps({"instance_id": "owner__name-1", "repo": "owner/name",
                                "base_commit": base}) + "\n")
    views = [FileView(path, [1.0], 0.0, 0.0, 1.0, 1) for path in ("a.py", "b.py", "c.py")]
    studies = [Study("owner__name-1", {"a.py"}, views)]

    add_history(studies, tmp_path, data, commits=2)

    assert [v.commits for v in views] == [2, 1, 0]


def test_a_history_in_days_counts_the_commits_of_that_window_before_the_base(
        tmp_path: Path, make_repo) -> None:
    repo = make_repo("owner+name/repo")
    repo.write("a.py", "a = 1\n").write("b.py", "b = 1\n").commit(
        "add", when="2020-01-01T00:00:00Z")
    repo.write("a.py", "a = 2\n").commit("a again", when="2020-03-01T00:00:00Z")
    repo.write("a.py", "a = 3\n").write("b.py", "b = 2\n").commit(
        "both", when="2020-03-20T00:00:00Z")
    base = repo.head()
    repo.write("b.py", "b = 3\n").commit("after the base", when="2020-03-21T00:00:00Z")
    data = tmp_path / "reports.jsonl"
    data.write_text(json.dumps({"instance_id": "owner__name-1", "repo": "owner/name",
                                "base_commit": base}) + "\n")
    views = [FileView(path, [1.0], 0.0, 0.0, 1.0, 1) for path in ("a.py", "b.py")]
    studies = [Study("owner__name-1", {"a.py"}, views)]

    add_history(studies, tmp_path, data, commits=500, days=30)

    assert [v.commits for v in views] == [2, 1]  # the commit of 2020-01-01 is 79 days before

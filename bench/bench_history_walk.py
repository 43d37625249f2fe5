"""Index a repository's real history run after run, and report every run that fails.

Real histories hold what fixtures forget: renames and copies in one commit, files re-added as
symlinks, licence blocks copied into new modules, reformatting of a whole tree. This walks a
mirror's first-parent history (the last ``--commits`` commits, or every ``--step``-th of them
for bigger diffs), moving one branch from commit to commit and indexing it incrementally each
time, as a push stream would; each run's chunk and embedding counts are printed every
``--every`` runs, every failure with its commit, and a summary at the end (exit 1 if any run
failed). The hashing embedder by default: the walk checks the indexer, not the model.

Usage::

    python bench/bench_history_walk.py /work/.mirror/pydata+xarray/repo --commits 400
    python bench/bench_history_walk.py /work/.mirror/sympy+sympy/repo --commits 60 --step 60
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_localization import git, working_clone  # noqa: E402

from freshmark.core.config import Config  # noqa: E402
from freshmark.core.settings import Settings  # noqa: E402
from freshmark.services.indexing.indexer import IndexRequest, index_repo  # noqa: E402

BRANCH = "walk"


def commits_to_walk(clone: Path, commits: int, step: int) -> list[str]:
    """Every ``step``-th of the last ``commits * step`` first-parent commits, oldest first."""
    listed = git("rev-list", "--first-parent", f"-n{commits * step}", "HEAD", cwd=clone).split()
    return listed[::step][::-1]


def walk(clone: Path, commits: list[str], every: int) -> int:
    settings, config = Settings.from_env(), Config()
    failures = 0
    started = time.perf_counter()
    for number, commit in enumerate(commits):
        git("update-ref", f"refs/heads/{BRANCH}", commit, cwd=clone)
        try:
            summary = index_repo(IndexRequest(clone, branch=BRANCH), settings=settings,
                                 config=config)
        except Exception as exc:  # noqa: BLE001 - every failure is what the walk reports
            failures += 1
            print(f"FAILED run {number} at {commit}: {type(exc).__name__}: {str(exc)[:300]}",
                  flush=True)
            continue
        if number % every == 0:
            print(f"run {number} at {commit[:10]}: {summary.chunks_added} added, "
                  f"{summary.chunks_tombstoned} tombstoned, {summary.embeddings_reused} "
                  f"reused ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"{len(commits)} runs, {failures} failed, "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", type=Path, help="a git repository (a bare mirror is fine)")
    parser.add_argument("--commits", type=int, default=200, help="runs to make")
    parser.add_argument("--step", type=int, default=1,
                        help="commits between runs (1: every commit)")
    parser.add_argument("--every", type=int, default=50, help="print every N runs")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the clone and the index home go (default: a temp dir)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fm-walk-"))
    clone = working_clone(args.mirror, work, args.mirror.resolve().parent.name)
    os.environ.setdefault("FRESHMARK_HOME", str(work / "home"))
    os.environ.setdefault("FRESHMARK_EMBEDDER", "hashing")
    return 1 if walk(clone, commits_to_walk(clone, args.commits, args.step), args.every) else 0


if __name__ == "__main__":
    raise SystemExit(main())

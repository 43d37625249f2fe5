"""How recently a chunk was changed, as a signal for the in-file order of an issue report's best
files, studied offline on saved pools.

A file fixed often is fixed again (bug-fixing frequency and recency, Ye et al., FSE 2014); at
the level of a file ``tune_files.py --history`` measures it. Here each chunk of a report's two
best files gets the age of its newest line at the report's base commit (``git blame`` on the
mirror), scored ``recent = 1 / (1 + log(1 + age_days))`` (1 for a line changed that day) and
scaled to 0..1 over those chunks. It prints function Acc@1/5/10 of the chunk answer with the
search's in-file order (``infile.IN_FILE_WEIGHTS``), with ``recent`` added at a few weights,
and with an in-file order fitted with each repository held out (``tune_second_pass``'s fit).
File answers do not change: the in-file order keeps each file's places.

Usage::

    .venv/bin/python bench/tune_recency.py REPORT.json [...] [--mirrors DIR ...]
        [--data FILE ...] [--labels spans|hunks]
"""

from __future__ import annotations

import argparse
import functools
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tune_second_pass as study_tools
from bench_localization import commit_time, scaled

from freshmark.core.infile import IN_FILE_WEIGHTS, best_files

WEIGHTS = (0.1, 0.25, 0.5, 1.0, 2.0)
BEST_FILES = 2
DAY_SECONDS = 86_400


@functools.cache
def line_times(mirror: str, commit: str, path: str) -> dict[int, int] | None:
    """Each line of ``path`` at ``commit``: the committer time of the commit that last changed
    it (None when the mirror cannot blame the file)."""
    done = subprocess.run(["git", "blame", "--porcelain", commit, "--", path], cwd=mirror,
                          capture_output=True, text=True)
    if done.returncode:
        return None
    times: dict[str, int] = {}
    line_commit: dict[int, str] = {}
    current = ""
    for line in done.stdout.splitlines():
        if line.startswith("\t"):
            continue
        parts = line.split()
        if len(parts) >= 3 and len(parts[0]) == 40 and parts[1].isdigit():
            current = parts[0]
            line_commit[int(parts[2])] = current
        elif line.startswith("committer-time "):
            times[current] = int(parts[1])
    return {number: times.get(sha, 0) for number, sha in line_commit.items()}


def age_days(times: dict[int, int], start: int, end: int, now: int) -> float:
    """Days from the newest change among lines ``start..end`` to ``now``."""
    newest = max((times.get(number, 0) for number in range(start, end + 1)), default=0)
    return max(now - newest, 0) / DAY_SECONDS


def add_recency(study: study_tools.Study, chunks: list[dict]) -> int:
    """Sets ``recent`` and ``recent_norm`` on ``chunks``; returns how many could not be blamed
    (they score 0)."""
    mirror, commit = str(study.mirror), study.row["base_commit"]
    now = commit_time(Path(mirror), commit)
    unread = 0
    for c in chunks:
        times = line_times(mirror, commit, c["path"])
        unread += times is None
        c["recent"] = 0.0 if times is None else \
            1.0 / (1.0 + math.log1p(age_days(times, c["start"], c["end"], now)))
    for c, norm in zip(chunks, scaled([c["recent"] for c in chunks]), strict=True):
        c["recent_norm"] = norm
    return unread


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    study_tools.add_pool_arguments(parser, labels="spans")
    args = parser.parse_args(argv)
    studies = study_tools.load_studies(args.reports, args.mirrors, args.data,
                                       spans=args.labels == "spans")
    unread = 0
    for study in studies:
        files = set(best_files([c["path"] for c in study.ranked], BEST_FILES))
        unread += add_recency(study, [c for c in study.ranked if c["path"] in files])
    print(f"{len(studies)} reports; chunks the mirrors could not blame: {unread}")
    fixed = np.array([IN_FILE_WEIGHTS.get(name, 0.0) for name in study_tools.FEATURES])
    study_tools.print_accuracy("in-file order of the search:", studies, BEST_FILES, fixed)
    study_tools.print_with_signal("recent_norm", WEIGHTS, studies, BEST_FILES,
                                  study_tools.FEATURES, fixed)
    study_tools.print_fitted(studies, list(study_tools.by_repository(studies)), BEST_FILES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Memory of ``freshmark watch`` over a working copy that links to the root of the filesystem.

Builds a throwaway working copy holding ``sub/rootlink -> /`` (the link a polling observer
that follows links walks the whole filesystem through), starts a watcher and prints this
process's resident memory before and while it polls. Nothing is queued: no Redis is needed.

    .venv/bin/python bench/bench_watch_links.py [--seconds 20] [--inotify]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from repo_builder import RepoBuilder  # noqa: E402

from scheduler.watch import WatchOptions, WorkingCopyWatcher  # noqa: E402


def rss_mb() -> float:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--inotify", action="store_true", help="inotify instead of polling")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "shop"
        RepoBuilder.init(root).write("src/app.py", "A = 1\n").commit("one")
        (root / "sub").mkdir()
        (root / "sub" / "rootlink").symlink_to("/")
        options = WatchOptions(polling=not args.inotify, poll_interval_seconds=0.2)
        # The client is never used: nothing is flushed, so no job is queued.
        watcher = WorkingCopyWatcher(root, redis.Redis(), lambda *_: None, options)
        print(f"{'inotify' if args.inotify else 'polling'}; before start: {rss_mb():.0f} MB")
        started = time.monotonic()
        watcher.start()
        try:
            for mark in (args.seconds / 4, args.seconds / 2, args.seconds):
                time.sleep(max(0.0, mark - (time.monotonic() - started)))
                print(f"after {mark:.0f} s: {rss_mb():.0f} MB")
        finally:
            watcher.stop()


if __name__ == "__main__":
    main()

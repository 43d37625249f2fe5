"""How true ``freshmark index``'s time-left estimate is: each progress line beside the time
that was really left (in the layer, and in the run).

Indexes a throwaway clone of a repository (default: this one) into a throwaway home with the
hashing embedder (its embedding is fast, so the store writes dominate, as they do on big
repositories), recording every progress event.

    .venv/bin/python bench/bench_progress_estimate.py [--repo PATH] [--lines 12]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from freshmark.core.config import Config
from freshmark.core.progress import START, IndexProgress, describe
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--lines", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        env = {**os.environ, "FRESHMARK_HOME": str(Path(tmp) / "home"),
               "FRESHMARK_EMBEDDER": "hashing"}
        lines: list[tuple[float, str]] = []
        started = time.monotonic()
        layer = {"start": 0.0, "embedded": 0}

        def progress(event: IndexProgress) -> None:
            now = time.monotonic() - started
            if event.phase == START:
                layer.update(start=now, embedded=event.chunks_embedded)
            lines.append((now, describe(event, now - layer["start"], int(layer["embedded"]))))

        index_repo(IndexRequest(clone), settings=Settings.from_env(env), config=Config(),
                   progress=progress)
        run_end, layer_end = time.monotonic() - started, lines[-1][0]
        print(f"run {run_end:.1f} s, layer done at {layer_end:.1f} s")
        step = max(1, len(lines) // args.lines)
        for now, line in lines[1:-1:step]:
            print(f"t={now:5.1f}s left: layer {layer_end - now:5.1f}s, run {run_end - now:5.1f}s"
                  f" | {line}")


if __name__ == "__main__":
    main()

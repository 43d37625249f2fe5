"""Benchmark the git layer: a full tree walk reading every blob, and a diff with renames.

Builds a throwaway repository from Python sources of packages installed in this environment
(2,200 files), then two commits on top of it that each change 800 files: a mixed one (200 moved
with an edit, 100 moved as is, 500 edited) and a move-heavy one (500 moved with an edit, 300
edited). Inexact rename detection is quadratic in the moved files, hence the two figures.
Prints the median of several runs, first with loose objects, then after ``git gc``.

    .venv/bin/python bench/bench_git.py [--files 2200] [--changed 800] [--runs 5] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.classify import classify
from freshmark.core.config import ClassifyRules

SOURCE_PACKAGES = (
    "celery", "chromadb", "kombu", "redis", "pydantic", "mcp", "starlette", "fastapi", "click",
    "billiard", "uvicorn", "grpc", "prometheus_client", "watchdog", "httpx", "pygit2", "onnx",
    "numpy", "_pytest", "anyio", "aiohttp", "opentelemetry", "kubernetes",
)
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV},
                          check=True, capture_output=True, text=True)
    return done.stdout.strip()


def source_files(limit: int) -> list[tuple[Path, str]]:
    """(absolute file, repo-relative path) of up to ``limit`` installed .py files."""
    site = Path(sysconfig.get_paths()["purelib"])
    found: list[tuple[Path, str]] = []
    for package in SOURCE_PACKAGES:
        root = site / package
        for path in sorted(root.rglob("*.py")) if root.is_dir() else []:
            found.append((path, path.relative_to(site).as_posix()))
            if len(found) == limit:
                return found
    return found


def commit_base(root: Path, files: int) -> tuple[str, list[str]]:
    """Commit the sources; returns the commit and the paths worth editing (over 200 bytes)."""
    git(root, "init", "-q", "--initial-branch=main")
    sources = source_files(files)
    for src, rel in sources:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / rel)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sources")
    editable = [rel for _, rel in sources if (root / rel).stat().st_size > 200]
    return git(root, "rev-parse", "HEAD"), editable


def commit_changes(
    root: Path, base: str, paths: list[str], edited_moves: int, plain_moves: int
) -> str:
    """From ``base``: move the first files with a one-line edit, then some unedited, and
    append a line to the rest; returns the new commit."""
    git(root, "checkout", "-q", "--detach", base)
    for i, rel in enumerate(paths):
        target = root / rel
        if i < edited_moves or i >= edited_moves + plain_moves:
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# bench edit {i}\n")
        if i < edited_moves + plain_moves:
            moved = root / "moved" / rel
            moved.parent.mkdir(parents=True, exist_ok=True)
            target.rename(moved)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "move and modify")
    return git(root, "rev-parse", "HEAD")


def median_seconds(action: Callable[[], object], runs: int) -> str:
    """Median wall and CPU time of ``runs`` calls; CPU time is the steadier on a busy host."""
    wall, cpu = [], []
    for _ in range(runs):
        started_wall, started_cpu = time.perf_counter(), time.process_time()
        action()
        wall.append(time.perf_counter() - started_wall)
        cpu.append(time.process_time() - started_cpu)
    return f"{statistics.median(wall):.3f} s (cpu {statistics.median(cpu):.3f} s)"


def measure(repo_path: Path, base: str, scenarios: dict[str, str], runs: int, label: str) -> None:
    repo = GitRepo.open(repo_path)
    rules = ClassifyRules()

    def walk_and_read() -> int:
        return sum(len(repo.read_blob(f.blob_sha)) for f in repo.tree_files(base))

    def walk_read_classify() -> int:
        return sum(
            classify(f.path, repo.read_blob(f.blob_sha), rules, repo.attributes(base, f.path),
                     is_symlink=f.is_symlink).indexed
            for f in repo.tree_files(base)
        )

    file_count = sum(1 for _ in repo.tree_files(base))
    walk = median_seconds(walk_and_read, runs)
    walk_classify = median_seconds(walk_read_classify, runs)
    print(f"[{label}] tree walk reading {file_count} blobs: {walk}; "
          f"with attributes + classify: {walk_classify}")
    for name, head in scenarios.items():
        changes = repo.diff(base, head)
        renamed = sum(1 for c in changes if c.status == "renamed")
        seconds = median_seconds(lambda head=head: repo.diff(base, head), runs)
        print(f"[{label}] diff, {name}: {len(changes)} changed files, {renamed} renames "
              f"detected: {seconds}")
    repo.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2200)
    parser.add_argument("--changed", type=int, default=800)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the benchmark repository")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="freshmark-bench-git-"))
    try:
        base, editable = commit_base(root, args.files)
        touched = editable[: args.changed]
        quarter, eighth = len(touched) // 4, len(touched) // 8
        scenarios = {
            "mixed (1/4 moved+edited, 1/8 moved, rest edited)":
                commit_changes(root, base, touched, quarter, eighth),
            "move-heavy (5/8 moved+edited, rest edited)":
                commit_changes(root, base, touched, len(touched) * 5 // 8, 0),
        }
        measure(root, base, scenarios, args.runs, "loose objects")
        git(root, "gc", "-q")
        measure(root, base, scenarios, args.runs, "packed")
    finally:
        if args.keep:
            print(f"repository kept at {root}")
        else:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()

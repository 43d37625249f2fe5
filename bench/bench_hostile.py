"""Figures for hostile inputs (issue: nothing hostile stops a branch).

1. The ReDoS ``.gitattributes`` pattern ``*a*a*a*a*a*a*a*a*b`` (and longer ones) against 20
   file names of 30-49 ``a``s: milliseconds for all 20 with ``globs.Glob``.
2. Peak RSS of a child process diffing a commit that moves a big blob with a one-byte edit
   (``GitRepo.diff`` with rename detection), with similarity bounded by ``max_file_bytes`` and
   without a bound, to show what libgit2 would read.
3. A 1 MB file of ``def fN(): pass`` chunked with the per-file cap: chunks and seconds.

    python bench/bench_hostile.py [--blob-mb 200]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.chunking import chunk_text_capped
from freshmark.core.config import DEFAULT_MAX_CHUNKS_PER_FILE, DEFAULT_MAX_FILE_BYTES
from freshmark.core.gitattributes import attributes_for, parse_gitattributes

GIT_ENV = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def redos_figures() -> None:
    names = [f"gen/{'a' * (30 + i)}.py" for i in range(20)]
    for stars in (8, 11, 20):
        rules = parse_gitattributes("*a" * (stars - 1) + "*b binary\n")
        started = time.perf_counter()
        hits = sum(bool(attributes_for(name, [("", rules)])) for name in names)
        elapsed_ms = (time.perf_counter() - started) * 1000
        print(f"redos: {stars} stars, 20 files: {elapsed_ms:.2f} ms ({hits} matched)")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *GIT_ENV, *args], cwd=cwd, check=True, capture_output=True)


def _big_rename_repo(root: Path, blob_mb: int) -> tuple[Path, str, str]:
    repo = root / "big"
    repo.mkdir()
    _git(repo, "init", "-q", "--initial-branch=main")
    line = b"value = 12345678901234567890\n"
    with open(repo / "big.txt", "wb") as out:
        out.write(line * (blob_mb * 1024 * 1024 // len(line)))
    _git(repo, "add", "big.txt")
    _git(repo, "commit", "-qm", "big")
    old = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.strip()
    _git(repo, "mv", "big.txt", "moved.txt")
    with open(repo / "moved.txt", "r+b") as edit:
        edit.write(b"V")
    _git(repo, "commit", "-qam", "moved")
    new = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.strip()
    return repo, old, new


def diff_child(repo: str, old: str, new: str, limit: int) -> None:
    git_repo = GitRepo.open(repo)
    git_repo.similarity_max_bytes = limit
    started = time.perf_counter()
    statuses = sorted(c.status for c in git_repo.diff(old, new))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"big-blob rename, limit {limit or 'none'}: {statuses}, "
          f"{time.perf_counter() - started:.2f} s, peak RSS {peak_mb:.0f} MB")


def rename_figures(blob_mb: int) -> None:
    with tempfile.TemporaryDirectory(prefix="fm-bench-hostile-") as scratch:
        repo, old, new = _big_rename_repo(Path(scratch), blob_mb)
        for limit in (DEFAULT_MAX_FILE_BYTES, 0):
            subprocess.run([sys.executable, __file__, "--diff-child", str(repo), old, new,
                            str(limit)], check=True)


def chunk_cap_figures() -> None:
    text = "".join(f"def f{n}(): pass\n" for n in range(55_322))
    started = time.perf_counter()
    chunks, capped = chunk_text_capped("gen.py", text, None, DEFAULT_MAX_CHUNKS_PER_FILE)
    print(f"chunk cap: {len(text) / 1e6:.2f} MB file -> {len(chunks)} chunks (capped={capped}), "
          f"{time.perf_counter() - started:.2f} s")


def main() -> None:
    if sys.argv[1:2] == ["--diff-child"]:
        diff_child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blob-mb", type=int, default=200)
    args = parser.parse_args()
    redos_figures()
    chunk_cap_figures()
    rename_figures(args.blob_mb)


if __name__ == "__main__":
    main()

"""Verification speed: alone (fast path, older commit, changed file, work tree) and inside search.

A synthetic Python repository of ``--chunks`` chunks (10 functions per file) is committed and
indexed with the real indexer into an embedded store. Then:

- **verification alone** of 10 stored results, a new ``Verifier`` per request as in production:
  ``same commit`` (stamp commit = head: no git read), ``older commit`` (head moved on, files
  untouched: one tree lookup per result), ``changed`` (the 10 files edited: blob read and symbol
  look-up), ``work tree`` (one ``git status`` plus the fast path);
- **search with verification** of the top 10 (``freshmark.search.search``), split into query
  embedding, lexical, vector, fusion and verification.

Usage::

    .venv/bin/python bench/bench_verify.py [--chunks 10000 50000] [--repeat 200]
        [--embedder hashing|minilm] [--home DIR]

Prints p50/p95 in milliseconds per stage. ``--embedder minilm`` embeds every chunk with the
real model (slow to index); the default ``hashing`` tier measures everything but the model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Target
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.search import search
from freshmark.services.verifier import Verifier

FUNCTIONS_PER_FILE = 10
RESULTS = 10
WORDS = ("order", "cancel", "payment", "refund", "invoice", "customer", "stock", "ship",
         "audit", "retry", "ledger", "coupon", "tax", "cart", "price", "user")
QUERIES = ("cancel order twice", "refund payment", "retry ledger entry", "ship stock item",
           "apply coupon to cart", "audit customer change", "invoice tax total", "price of item")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def module_text(file_no: int, edit: bool = False) -> str:
    parts = [f'"""Module {file_no}."""\nimport os\n']
    for fn in range(FUNCTIONS_PER_FILE):
        a, b = WORDS[(file_no + fn) % len(WORDS)], WORDS[(file_no * 7 + fn) % len(WORDS)]
        extra = "    total += 1\n" if edit else ""
        parts.append(f"\n\ndef {a}_{b}_{file_no}_{fn}(items, limit=10):\n"
                     f'    """{a.title()} the {b} records, at most limit."""\n'
                     f"    total = 0\n{extra}    for item in items[:limit]:\n"
                     f"        total += item.{b}_{a}\n    return total\n")
    return "".join(parts)


def build_repo(path: Path, chunks: int) -> None:
    path.mkdir(parents=True)
    git(path, "init", "-q", "--initial-branch=main")
    for file_no in range(chunks // FUNCTIONS_PER_FILE):
        target = path / "src" / f"pkg{file_no % 50}" / f"mod{file_no}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(module_text(file_no))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")


def percentiles_ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:8.3f} ms   p95 {p95 * 1000:8.3f} ms"


def time_verification(repo_path: Path, records: list[ChunkRecord], worktree: bool,
                      repeat: int) -> tuple[list[float], list[float], str]:
    """Per request: (open the repository and resolve the head) and (verify 10 results)."""
    opening: list[float] = []
    checking: list[float] = []
    verdicts = ""
    for _ in range(repeat):
        started = time.perf_counter()
        repo = GitRepo.open(repo_path)
        verifier = Verifier(repo, Target("main", repo.branch_head("main"), worktree=worktree))
        opened = time.perf_counter()
        results = [verifier.verify(record) for record in records]
        checking.append(time.perf_counter() - opened)
        opening.append(opened - started)
        verdicts = ",".join(sorted({str(r.verdict) for r in results}))
    return opening, checking, verdicts


def report(label: str, measured: tuple[list[float], list[float], str]) -> None:
    opening, checking, verdicts = measured
    print(f"verify 10, {label:13} ({verdicts:15}) {percentiles_ms(checking)}"
          f"   (+ open repo/head p50 {statistics.median(opening) * 1000:.3f} ms)")


def bench_size(chunks: int, repeat: int, home: Path) -> None:
    repo_path = home / f"repo-{chunks}"
    if not repo_path.exists():
        build_repo(repo_path, chunks)
    settings = Settings.from_env()
    started = time.perf_counter()
    summary = index_repo(IndexRequest(repo_path), settings=settings, config=Config())
    print(f"\n== {summary.chunks_added + summary.chunks_unchanged} chunks "
          f"(indexed in {time.perf_counter() - started:.1f} s, embedder {summary.embedder})")
    index = Store.open(settings).branch(f"path:{repo_path.resolve()}", "main")
    assert index is not None
    records = [r for r in index.get(limit=200) if r.kind == "function"][:RESULTS]
    def run(worktree: bool) -> tuple[list[float], list[float], str]:
        return time_verification(repo_path, records, worktree, repeat)

    report("same commit", run(False))
    git(repo_path, "commit", "-q", "--allow-empty", "-m", "later")
    report("older commit", run(False))
    report("work tree", run(True))
    for record in records:
        file_no = int(record.path.rsplit("mod", 1)[1].split(".")[0])
        (repo_path / record.path).write_text(module_text(file_no, edit=True))
    git(repo_path, "commit", "-q", "-am", "edit the ten files")
    report("changed files", run(False))
    git(repo_path, "reset", "-q", "--hard", "HEAD~2")

    stages: dict[str, list[float]] = {}
    totals: list[float] = []
    for i in range(max(repeat // 4, len(QUERIES))):
        started = time.perf_counter()
        response = search(SearchRequest.build(QUERIES[i % len(QUERIES)], k=10), str(repo_path),
                          settings=settings, count=False)
        totals.append(time.perf_counter() - started)
        for name, seconds in response.timings.items():
            stages.setdefault(name, []).append(seconds)
    print("search top 10 with verification:")
    for name, samples in stages.items():
        print(f"  {name:18} {percentiles_ms(samples)}")
    print(f"  {'end to end':18} {percentiles_ms(totals)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="fm-bench-verify-"))
    os.environ["FRESHMARK_HOME"] = str(home)
    os.environ["FRESHMARK_EMBEDDER"] = args.embedder
    os.environ.pop("FRESHMARK_CHROMA_URL", None)
    print(f"home: {home}")
    for chunks in args.chunks:
        bench_size(chunks, args.repeat, home)


if __name__ == "__main__":
    main()

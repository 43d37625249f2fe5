"""What a branch costs: overlays on a base collection, against a full index of the branch.

A real repository (a local clone or mirror, ``--repo``) is indexed on ``main``; then for each
d in ``--changed`` a branch changes d source files (a function appended to each) and is indexed
as an overlay on ``main``. For each branch it prints the time (and its ratio to the full
index), the embeddings computed against the chunks of the d files, the store growth in bytes
(the embedded Chroma directory before and after) against those chunks, and hybrid search
latency on the branch against the base (same queries, warm, in-process, verification
included). Then ``--many`` branches of one base, one changed file each: total and per-branch
time and bytes.

Usage::

    .venv/bin/python bench/bench_branches.py --repo /work/.mirror/pydata+xarray/repo \\
        [--changed 1 10 100] [--many 50] [--embedder hashing] [--queries 40] [--json]

The default embedder here is ``hashing``, so the figures are the pipeline, not the model (the
model's cost is the embeddings computed, which are printed); ``--embedder minilm`` runs the real
model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.core.config import Config
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.repos import RepoRef
from freshmark.services.retrieval.hybrid import hybrid_search
from freshmark.services.verifier import Verifier

BASE = "main"
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV})
    return done.stdout.strip()


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def clone(source: Path, into: Path) -> Path:
    git(into.parent, "clone", "-q", "--no-hardlinks", str(source), str(into))
    git(into, "checkout", "-q", "-B", BASE)
    return into


def source_files(work: Path, count: int, seed: int) -> list[str]:
    files = [p for p in git(work, "ls-files", "*.py").splitlines() if "/tests/" not in p]
    random.Random(seed).shuffle(files)
    if len(files) < count:
        raise SystemExit(f"the repository has {len(files)} source files, fewer than {count}")
    return sorted(files[:count])


def make_branch(work: Path, name: str, files: list[str]) -> None:
    git(work, "checkout", "-q", "-b", name, BASE)
    for i, rel in enumerate(files):
        with open(work / rel, "a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef bench_overlay_{i}_{name.replace('-', '_')}(value):\n"
                         f"    \"\"\"Added on branch {name}.\"\"\"\n    return value + {i}\n")
    git(work, "commit", "-qam", f"{name}: {len(files)} files")
    git(work, "checkout", "-q", BASE)


def queries_from(work: Path, count: int, seed: int) -> list[str]:
    """Function names and docstring lines of the repository: real code vocabulary."""
    rng = random.Random(seed)
    lines: list[str] = []
    for rel in source_files(work, min(60, len(git(work, "ls-files", "*.py").splitlines()) // 2),
                            seed + 1):
        text = (work / rel).read_text(encoding="utf-8", errors="replace")
        lines += [ln.strip()[4:].split("(")[0].replace("_", " ") for ln in text.splitlines()
                  if ln.strip().startswith("def ") and len(ln.strip()) > 12]
    rng.shuffle(lines)
    return lines[:count]


def search_ms(index: Any, embedder: Any, verifier: Verifier, query: str,
              settings: Settings) -> float:
    """One hybrid search (k = 10) and the verification of its results, in milliseconds."""
    started = time.perf_counter()
    hits, _ = hybrid_search(index, embedder, SearchRequest.build(query, k=10),
                            lexical=lexical_engine(settings))
    for hit in hits:
        verifier.verify(hit.record)
    return (time.perf_counter() - started) * 1000


def paired_latency_ms(base: Any, branch: Any, embedder: Any, repo: GitRepo, names: list[str],
                      queries: list[str], settings: Settings) -> dict[str, dict[str, float]]:
    """p50/p95 of the same queries on the base and on the branch, run alternately so that
    both see the same machine load; three warm-up queries each first."""
    from freshmark.core.verdicts import Target

    indexes = {"base": base, "branch": branch}
    times: dict[str, list[float]] = {"base": [], "branch": []}
    for query_number, query in enumerate(queries[:3] + queries):
        for (label, index), name in zip(indexes.items(), names, strict=True):
            # A fresh verifier per query: its per-path cache must not carry over.
            verifier = Verifier(repo, Target(branch=name, head=repo.branch_head(name)))
            elapsed = search_ms(index, embedder, verifier, query, settings)
            if query_number >= 3:
                times[label].append(elapsed)
    out = {}
    for label, values in times.items():
        values.sort()
        out[label] = {"p50": round(statistics.median(values), 1),
                      "p95": round(values[min(len(values) - 1, int(len(values) * 0.95))], 1)}
    return out


def chunks_of(index: Any, files: list[str]) -> int:
    return sum(1 for r in index.records_for_paths(files) if r.status == "live")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a git repository to clone")
    parser.add_argument("--changed", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--many", type=int, default=50, help="branches of one base (0: skip)")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--home", type=Path, help="keep the store here (default: a temp dir)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="fm-bench-branches-"))
    home = args.home or root / "home"
    try:
        work = clone(args.repo.resolve(), root / "work")
        settings = Settings(home=home, embedder=args.embedder)
        store = Store.open(settings)
        config = Config()
        full = index_repo(IndexRequest(work, branch=BASE), settings=settings, config=config,
                          store=store)
        key = RepoRef.of(GitRepo.open(work), None, store).key
        base_index = store.branch(key, BASE)
        report: dict[str, Any] = {
            "repo": str(args.repo), "embedder": args.embedder,
            "base": {"chunks": full.chunks_added, "index_seconds": full.seconds,
                     "embeddings": full.embeddings_computed,
                     "store_bytes": dir_bytes(settings.chroma_path)},
            "branches": [], "many": None,
        }
        print(f"base {BASE}: {full.chunks_added} chunks, full index {full.seconds:.1f} s, "
              f"store {report['base']['store_bytes'] / 1e6:.1f} MB", flush=True)
        from freshmark.services.open_branch import embedder_for

        embedder = embedder_for(settings, base_index)
        repo = GitRepo.open(work)
        queries = queries_from(work, args.queries, args.seed)
        for d in args.changed:
            name = f"bench-{d}"
            files = source_files(work, d, args.seed + d)
            make_branch(work, name, files)
            before = dir_bytes(settings.chroma_path)
            summary = index_repo(IndexRequest(work, branch=name, base_branch=BASE),
                                 settings=settings, config=config, store=store)
            grown = dir_bytes(settings.chroma_path) - before
            view = store.branch(key, name)
            assert isinstance(view, LayeredIndex)
            d_chunks = chunks_of(view, files)
            latency = paired_latency_ms(base_index, view, embedder, repo, [BASE, name], queries,
                                        settings)
            p50, p95 = latency["branch"]["p50"], latency["branch"]["p95"]
            base_p50, base_p95 = latency["base"]["p50"], latency["base"]["p95"]
            row = {
                "changed_files": d, "seconds": summary.seconds,
                "time_ratio": round(summary.seconds / full.seconds, 4),
                "embeddings": summary.embeddings_computed, "chunks_of_changed_files": d_chunks,
                "overlay_chunks": summary.overlay_chunks, "store_growth_bytes": grown,
                "base_bytes_per_chunk": round(report["base"]["store_bytes"] / full.chunks_added),
                "search_ms": latency,
                "search_p50_ratio": round(p50 / base_p50, 2),
                "search_p95_ratio": round(p95 / base_p95, 2),
            }
            report["branches"].append(row)
            print(f"d={d:>3}: {summary.seconds:.2f} s ({row['time_ratio']:.2%} of full), "
                  f"{summary.embeddings_computed} embeddings for {d_chunks} chunks of the "
                  f"changed files, overlay {summary.overlay_chunks} chunks, store "
                  f"+{grown / 1e3:.0f} kB; search p50 {p50:.1f} ms vs base {base_p50:.1f} "
                  f"({row['search_p50_ratio']}x), p95 {p95:.1f} vs {base_p95:.1f} ms "
                  f"({row['search_p95_ratio']}x)", flush=True)
        if args.many:
            before = dir_bytes(settings.chroma_path)
            seconds: list[float] = []
            for i in range(args.many):
                name = f"many-{i}"
                make_branch(work, name, source_files(work, 1, 1000 + i))
                summary = index_repo(IndexRequest(work, branch=name, base_branch=BASE),
                                     settings=settings, config=config, store=store)
                seconds.append(summary.seconds)
            grown = dir_bytes(settings.chroma_path) - before
            report["many"] = {
                "branches": args.many, "total_seconds": round(sum(seconds), 2),
                "mean_seconds": round(statistics.mean(seconds), 3),
                "max_seconds": round(max(seconds), 3),
                "store_growth_bytes": grown, "bytes_per_branch": grown // args.many,
                "full_copies_would_be_bytes": args.many * report["base"]["store_bytes"],
            }
            many = report["many"]
            print(f"{args.many} branches of {BASE}, 1 file each: {many['total_seconds']} s in "
                  f"all (mean {many['mean_seconds']} s, max {many['max_seconds']} s), store "
                  f"+{grown / 1e6:.1f} MB ({many['bytes_per_branch'] / 1e3:.0f} kB per branch; "
                  f"full copies: {many['full_copies_would_be_bytes'] / 1e9:.2f} GB)", flush=True)
        if args.json:
            print(json.dumps(report, indent=2))
    finally:
        if args.home is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

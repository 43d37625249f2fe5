"""The production search path in one process: ``search()`` with verification and verdict
counting (``count=True``), wall and CPU per query, plus Chroma ``get_collection`` calls.

Corpus: ``bench_verify``'s synthetic repository (10 functions per file), indexed with the real
indexer. Run it in a checkout to compare that checkout (it imports ``freshmark`` from its own
directory)::

    FRESHMARK_EMBEDDER=hashing .venv/bin/python bench/bench_search_path.py --chunks 10000 50000

The hashing embedder measures everything but the model's query embedding.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_verify import QUERIES, build_repo

from freshmark.core.config import Config
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.open_branch import store_for
from freshmark.services.retrieval.search import search


def percentiles_ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms"


def bench_size(chunks: int, queries: int, home: Path) -> None:
    repo_path = home / f"repo-{chunks}"
    if not repo_path.exists():
        build_repo(repo_path, chunks)
    settings = Settings.from_env()
    index_repo(IndexRequest(repo_path), settings=settings, config=Config())
    started = time.perf_counter()
    search(SearchRequest.build(QUERIES[0], k=10), str(repo_path), settings=settings)
    print(f"\n== {chunks} chunks; first search after index {time.perf_counter() - started:.2f} s")
    client = store_for(settings)._client
    reads = [0]
    get_collection = client.get_collection

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads[0] += 1
        return get_collection(*args, **kwargs)

    client.get_collection = counted
    walls, cpus = [], []
    for i in range(queries):
        wall, cpu = time.perf_counter(), time.process_time()
        search(SearchRequest.build(QUERIES[i % len(QUERIES)], k=10), str(repo_path),
               settings=settings)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    print(f"  wall {percentiles_ms(walls)}")
    print(f"  cpu  {percentiles_ms(cpus)}")
    print(f"  get_collection calls per query: {reads[0] / queries:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="fm-bench-path-"))
    os.environ["FRESHMARK_HOME"] = str(home)
    for chunks in args.chunks:
        bench_size(chunks, args.queries, home)


if __name__ == "__main__":
    main()

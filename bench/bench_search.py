"""Hybrid search latency at 10k and 50k chunks (embedded store), split by stage, plus the
lexical index's cold start, size on disk and memory figures.

Corpus: real code chunks — the virtualenv's site-packages, chunked with ``chunk_text`` (cached
as JSON lines under ``<home>/cache/bench``). Vectors: the first ``--real-vectors`` chunks are
embedded with the real model once (kept in the shared embedding cache, so reruns reuse them);
every chunk beyond that gets a random unit vector (seeded). Queries: CoSQA questions and symbol
names taken from the corpus, each embedded by the real model at query time.

Usage::

    .venv/bin/python bench/bench_search.py [--sizes 10000 50000] [--repeat 3]
        [--real-vectors 10000] [--lexical-only 100000] [--home DIR] [--embedder minilm]

Prints p50/p95 in milliseconds for query embedding, lexical, vector, fusion (and verification
when ``measure`` is given a ``verify`` callable) and the total.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.embedding.cache import EmbeddingCache, embed_with_cache
from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.adapters.lexical.tantivy_store import TantivyCollection
from freshmark.adapters.store.chroma import BranchIndex, Store
from freshmark.core.chunking import chunk_text
from freshmark.core.fusion import Candidate
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord, chunk_id, sha256_hex, utc_now_iso
from freshmark.services.retrieval.hybrid import hybrid_search

COSQA = ROOT.parent / "shared" / "eval" / "cosqa" / "cosqa_dev_retrieval.json"
K = 10
STAGES = ("embed", "lexical", "vector", "fusion")

Verify = Callable[[BranchIndex, list[Candidate]], object]


# -- corpus -----------------------------------------------------------------------------------
def load_corpus(cache_dir: Path, size: int) -> list[ChunkRecord]:
    """``size`` real code chunks from site-packages (cached after the first run)."""
    cached = cache_dir / "bench" / f"corpus-{size}.jsonl.gz"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        rows = list(_chunk_site_packages(size))
        with gzip.open(cached, "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    with gzip.open(cached, "rt", encoding="utf-8") as handle:
        return [_record(json.loads(line)) for line in handle]


def _chunk_site_packages(size: int):  # type: ignore[no-untyped-def]
    site = Path(sysconfig.get_paths()["purelib"])
    produced = 0
    for file in sorted(site.rglob("*.py")):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for row in chunk_rows(str(file.relative_to(site)), text):
            yield row
            produced += 1
            if produced >= size:
                return


def chunk_rows(path: str, text: str):  # type: ignore[no-untyped-def]
    """The chunks of one file as corpus rows; ``ordinal`` numbers repeats of one symbol."""
    seen: dict[str, int] = {}
    for chunk in chunk_text(path, text):
        ordinal = seen.get(chunk.symbol, 0)
        seen[chunk.symbol] = ordinal + 1
        yield {"path": path, "symbol": chunk.symbol, "kind": chunk.kind,
               "signature": chunk.signature, "start": chunk.start_line,
               "end": chunk.end_line, "text": chunk.text, "ordinal": ordinal}


def _record(row: dict) -> ChunkRecord:
    file_kind = "test" if "/tests/" in row["path"] or "/test_" in row["path"] else "source"
    return ChunkRecord(
        repo="site-packages", branch="bench", commit="0" * 40, path=row["path"],
        symbol=row["symbol"], start_line=row["start"], end_line=row["end"],
        indexed_at=utc_now_iso(), blob_sha="0" * 40, content_sha256="0" * 64, kind=row["kind"],
        language="python", signature=row["signature"], file_kind=file_kind,
        id=chunk_id(row["path"], row["symbol"], row["ordinal"]), text=row["text"],
        text_sha256=sha256_hex(row["text"]), updated_gen=1,
    )


def corpus_vectors(records: Sequence[ChunkRecord], embedder: object, cache_dir: Path,
                   real: int) -> np.ndarray:
    """Real vectors for the first ``real`` records (cached), seeded random unit vectors after."""
    dim = int(getattr(embedder, "dim", 384))
    vectors = np.zeros((len(records), dim), dtype=np.float32)
    head = records[:real]
    if head:
        cache = EmbeddingCache(cache_dir / "embeddings.sqlite")
        started = time.perf_counter()
        texts_by_sha = {r.text_sha256: r.text for r in head}
        by_sha, computed, _ = embed_with_cache(embedder, cache, texts_by_sha)  # type: ignore[arg-type]
        if computed:
            print(f"  embedded {computed} chunks in {time.perf_counter() - started:.0f} s")
        vectors[: len(head)] = np.stack([by_sha[r.text_sha256] for r in head])
    rest = np.random.default_rng(0).standard_normal((len(records) - len(head), dim))
    vectors[len(head):] = rest / np.linalg.norm(rest, axis=1, keepdims=True)
    return vectors


def collection(store: Store, records: Sequence[ChunkRecord], vectors: np.ndarray,
               embedder_id: str) -> BranchIndex:
    """A branch collection of exactly these records (reused when already built)."""
    key = f"bench-search-{len(records)}"
    existing = store.branch(key, "bench")
    if existing is not None and existing.manifest.embedder == embedder_id \
            and existing.count() == len(records):
        return existing
    if existing is not None:
        store.drop_branch(key, "bench")
    manifest = Manifest(repo=key, repo_key=key, branch="bench", embedder=embedder_id,
                        collection=collection_name(key, "bench"), commit="0" * 40,
                        created_at=utc_now_iso())
    index = store.create_branch(manifest)
    started = time.perf_counter()
    index.upsert(list(records), vectors)
    manifest.generation = 1
    index.save_manifest(manifest)
    print(f"  stored {len(records)} chunks in {time.perf_counter() - started:.0f} s")
    return index


def queries(records: Sequence[ChunkRecord], count: int) -> list[str]:
    """Half CoSQA questions, half symbol names from the corpus (deterministic)."""
    questions = list(json.loads(COSQA.read_text())["queries"].values())[: count // 2]
    named = [r.symbol for r in records if "." in r.symbol or "_" in r.symbol]
    step = max(1, len(named) // max(1, count - len(questions)))
    return questions + named[::step][: count - len(questions)]


# -- measurement ------------------------------------------------------------------------------
def measure(index: BranchIndex, embedder: object, texts: Sequence[str], lexical: TantivyEngine,
            *, repeat: int = 3, verify: Verify | None = None) -> dict[str, list[float]]:
    """Seconds per stage for every search (``repeat`` passes over ``texts``, top ``K``).

    ``verify(index, results)``, when given, runs on each result list and is timed as
    ``verify``; the total then includes it.
    """
    samples: dict[str, list[float]] = {s: [] for s in (*STAGES, "verify", "total")}
    for _ in range(repeat):
        for text in texts:
            started = time.perf_counter()
            request = SearchRequest.build(text, k=K)
            results, timings = hybrid_search(index, embedder, request,  # type: ignore[arg-type]
                                             lexical=lexical)
            verify_started = time.perf_counter()
            if verify is not None:
                verify(index, results)
                samples["verify"].append(time.perf_counter() - verify_started)
            samples["total"].append(time.perf_counter() - started)
            for stage in STAGES:
                samples[stage].append(getattr(timings, f"{stage}_seconds"))
    return {stage: values for stage, values in samples.items() if values}


def percentile_ms(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def print_latency(title: str, samples: dict[str, list[float]]) -> None:
    count = len(samples["total"])
    print(f"\n{title}: {count} searches, k={K}")
    print(f"  {'stage':<10} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for stage, values in samples.items():
        p50, p95 = percentile_ms(values, 0.5), percentile_ms(values, 0.95)
        print(f"  {stage:<10} {p50:>8.2f} {p95:>8.2f} {1000 * statistics.fmean(values):>8.2f}")


def rss_bytes() -> int:
    """Resident set size of this process (Linux), in bytes."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def lexical_figures(name: str, records: Sequence[ChunkRecord], work: Path,
                    source: BranchIndex | None = None) -> None:
    """Cold build time, memory held (growth of resident memory, so an estimate: freed pages
    the allocator keeps count too), size on disk and open time of one lexical index."""
    directory = work / "tantivy" / name
    files = directory.with_name(f"{directory.name}.files")
    for old in (directory, files):
        shutil.rmtree(old, ignore_errors=True)
    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    lexical = TantivyCollection(name, directory)
    if source is not None:
        lexical.refresh(source)  # fetch from the store + tokenize + index
    else:
        lexical.apply(records)  # tokenize + index only
    build_seconds = time.perf_counter() - started
    gc.collect()
    held_bytes = rss_bytes() - before
    on_disk = sum(f.stat().st_size for d in (directory, files) for f in d.rglob("*")
                  if f.is_file())
    started = time.perf_counter()
    TantivyCollection(name, directory).searcher()  # what a new process does first
    open_seconds = time.perf_counter() - started
    what = "fetch from store + build" if source is not None else "build from records in memory"
    print(f"\nlexical index of {len(records)} chunks ({what}):")
    print(f"  cold build {build_seconds:.1f} s; memory held {held_bytes / 2**20:.0f} MiB "
          f"({held_bytes / len(records):.0f} B/chunk)")
    print(f"  on disk {on_disk / 2**20:.0f} MiB; open {open_seconds:.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--real-vectors", type=int, default=10_000)
    parser.add_argument("--lexical-only", type=int, default=100_000,
                        help="also build a lexical index of this many chunks (0: skip)")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="fm-search-"))
    settings = Settings(home=home, embedder=args.embedder)
    embedder = get_embedder(args.embedder, settings.cache_dir)
    largest = max([*args.sizes, args.lexical_only])
    corpus = load_corpus(settings.cache_dir, largest)
    print(f"embedder {embedder.id}; corpus {len(corpus)} chunks; store {settings.chroma_path}")
    print(f"vectors: first {min(args.real_vectors, max(args.sizes))} real, the rest random unit")
    vectors = corpus_vectors(corpus[: max(args.sizes)], embedder, settings.cache_dir,
                             args.real_vectors)
    store = Store.open(settings)
    texts = queries(corpus, args.queries)
    for size in args.sizes:
        index = collection(store, corpus[:size], vectors[:size], embedder.id)
        lexical_figures(index.name, corpus[:size], home, source=index)
        lexical = TantivyEngine(home / "cache")
        measure(index, embedder, texts[:5], lexical, repeat=1)  # warm caches (catches up)
        print_latency(f"hybrid search over {size} chunks",
                      measure(index, embedder, texts, lexical, repeat=args.repeat))
    if args.lexical_only:
        lexical_figures("lexical-only", corpus[: args.lexical_only], home)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

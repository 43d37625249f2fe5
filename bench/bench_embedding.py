"""Embedding throughput and quality of the MiniLM variants (fp32, int8) on real code chunks.

Usage: .venv/bin/python bench/bench_embedding.py [--texts N] [--repeat N] [--threads 1,2]
                                                 [--batch-sizes 1,8,16,32,64] [--cosqa FILE]
Chunks are Python functions from the running interpreter's site-packages (a fixed, seeded
sample). Prints texts/s (wall clock, best of --repeat rounds, configurations interleaved) and
CPU seconds per 100 texts for each variant, thread count and batch size; the cosine of int8
against fp32 and of batched against one-by-one int8 on the same chunks; and, with ``--cosqa``
(e.g. /work/shared/eval/cosqa/cosqa_dev_retrieval.json), MRR and recall of vector-only
retrieval (corpus embedded in batches, each query alone, as at search time) for fp32, int8 and
the hashing tier. Wall-clock figures depend on what else runs on the host; with other load,
multi-threaded runs suffer most, and CPU seconds per text are the steadier figure.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.embedding.minilm import DEFAULT_BATCH_SIZE, MiniLMEmbedder
from freshmark.core.ports import Embedder
from freshmark.core.settings import Settings

_PACKAGES = ("celery", "click", "redis", "chromadb", "pygit2", "watchdog", "fastapi")
_MIN_FUNCTION_CHARS = 80


def code_chunks(count: int, seed: int = 7) -> list[str]:
    """``count`` function sources sampled (seeded) from site-packages."""
    site = Path(sysconfig.get_paths()["purelib"])
    functions: list[str] = []
    for package in _PACKAGES:
        for path in sorted((site / package).rglob("*.py")):
            functions.extend(_functions_in(path))
    random.Random(seed).shuffle(functions)
    return functions[:count]


def _functions_in(path: Path) -> list[str]:
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_source_segment(source, node) or ""
            if len(text) >= _MIN_FUNCTION_CHARS:
                found.append(text)
    return found


def timed_embed(embedder: MiniLMEmbedder, texts: list[str]) -> tuple[float, float]:
    """(texts per wall second, CPU seconds per 100 texts) for one ``embed`` call."""
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    wall_seconds = time.perf_counter() - wall_start
    cpu_seconds = time.process_time() - cpu_start
    return len(texts) / wall_seconds, 100 * cpu_seconds / len(texts)


def speed_table(
    embedders: dict[tuple[str, int], MiniLMEmbedder],
    batch_sizes: list[int],
    texts: list[str],
    repeat: int,
) -> None:
    """Best-of-``repeat`` rates; every round visits every configuration once (interleaved)."""
    best: dict[tuple[str, int, int], tuple[float, float]] = {}
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # warm-up: the first run allocates arenas
    for _ in range(repeat):
        for (name, threads), embedder in embedders.items():
            for batch_size in batch_sizes:
                embedder.batch_size = batch_size
                key = (name, threads, batch_size)
                best[key] = max(best.get(key, (0.0, 0.0)), timed_embed(embedder, texts))
    print(f"{'embedder':28} {'threads':>7} {'batch':>5} {'texts/s':>8} {'cpu s/100':>9}")
    for (name, threads, batch_size), (rate, cpu_per_100) in best.items():
        embedder_id = embedders[(name, threads)].id
        print(f"{embedder_id:28} {threads:>7} {batch_size:>5} {rate:>8.1f} {cpu_per_100:>9.2f}")


def cosine_summary(label: str, left: np.ndarray, right: np.ndarray) -> None:
    cosines = np.sum(left * right, axis=1)
    print(
        f"cosine {label}: min {cosines.min():.4f}  p1 {np.percentile(cosines, 1):.4f}  "
        f"mean {cosines.mean():.4f}"
    )


def cosqa_scores(embedder: Embedder, data: dict) -> tuple[float, float, float]:
    """(MRR, recall@1, recall@10) of ranking the corpus by cosine to each query."""
    corpus_ids = list(data["corpus"])
    corpus = embedder.embed([data["corpus"][cid] for cid in corpus_ids])
    query_ids = [qid for qid in data["queries"] if data["qrels"].get(qid)]
    ranks = []
    for qid in query_ids:
        scores = corpus @ embedder.embed_query(data["queries"][qid])
        order = np.argsort(-scores, kind="stable")
        relevant = {corpus_ids.index(cid) for cid in data["qrels"][qid]}
        ranks.append(next(i for i, doc in enumerate(order, 1) if doc in relevant))
    ranks_array = np.array(ranks)
    return (
        float(np.mean(1.0 / ranks_array)),
        float(np.mean(ranks_array <= 1)),
        float(np.mean(ranks_array <= 10)),
    )


def cosqa_table(embedders: list[Embedder], path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    print(f"CoSQA dev, vector-only retrieval ({len(data['corpus'])} functions):")
    print(f"{'embedder':28} {'MRR':>6} {'R@1':>6} {'R@10':>6}")
    for embedder in embedders:
        mrr, recall_1, recall_10 = cosqa_scores(embedder, data)
        print(f"{embedder.id:28} {mrr:>6.3f} {recall_1:>6.3f} {recall_10:>6.3f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--batch-sizes", default="1,8,16,32,64")
    parser.add_argument("--cosqa", type=Path, default=None)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="where model graphs are cached (default: FRESHMARK_HOME/cache)",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    cache_dir = args.cache_dir or Settings.from_env().cache_dir
    texts = code_chunks(args.texts)
    embedders: dict[tuple[str, int], MiniLMEmbedder] = {}
    for name in ("minilm-fp32", "minilm-int8"):
        for threads in [int(t) for t in args.threads.split(",")]:
            embedder = get_embedder(name, cache_dir, threads=threads)
            assert isinstance(embedder, MiniLMEmbedder)
            embedders[(name, threads)] = embedder
    fp32, int8 = (
        next(e for (n, _), e in embedders.items() if n == name)
        for name in ("minilm-fp32", "minilm-int8")
    )
    tokens = np.array(fp32.token_counts(texts))
    print(
        f"{len(texts)} code chunks, tokens per chunk: mean {tokens.mean():.0f}, "
        f"median {np.median(tokens):.0f}, at the 256 cap {np.mean(tokens >= 256):.0%}"
    )
    speed_table(embedders, [int(b) for b in args.batch_sizes.split(",")], texts, args.repeat)
    for embedder in (fp32, int8):
        embedder.batch_size = DEFAULT_BATCH_SIZE
    int8_batched = int8.embed(texts)
    cosine_summary("int8 vs fp32", fp32.embed(texts), int8_batched)
    one_by_one = np.stack([int8.embed_query(text) for text in texts])
    cosine_summary("int8 batched vs one by one", int8_batched, one_by_one)
    if args.cosqa:
        with tempfile.TemporaryDirectory() as scratch:
            hashing = get_embedder("hashing", Path(scratch))
        cosqa_table([fp32, int8, hashing], args.cosqa)


if __name__ == "__main__":
    main()

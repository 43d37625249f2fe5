"""Embedding throughput and quality of the MiniLM variants (fp32, int8) on real code chunks.

Usage: .venv/bin/python bench/bench_embedding.py [--texts N] [--repeat N] [--threads N]
                                                 [--batch-sizes 16,32,64] [--cosqa FILE]
Chunks are Python functions from the running interpreter's site-packages (a fixed, seeded
sample). Prints texts/s (wall clock, best of --repeat) and CPU seconds per 100 texts for each
variant and batch size, the cosine of int8 against fp32 on the same chunks, and, with
``--cosqa`` (e.g. /work/shared/eval/cosqa/cosqa_dev_retrieval.json), the MRR and recall of
vector-only retrieval for fp32, int8 and the hashing tier. Wall-clock figures depend on what
else runs on the host; CPU seconds are steadier.
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

from freshmark.embedding import Embedder, get_embedder  # noqa: E402
from freshmark.embedding.minilm import MiniLMEmbedder  # noqa: E402
from freshmark.settings import Settings  # noqa: E402

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


def measure(embedder: MiniLMEmbedder, texts: list[str], repeat: int) -> tuple[float, float]:
    """(best texts per wall second, CPU seconds per 100 texts at that run)."""
    embedder.embed(texts[:8])  # warm-up: first run allocates arenas
    best_rate, cpu_per_100 = 0.0, 0.0
    for _ in range(repeat):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        wall_seconds = time.perf_counter() - wall_start
        cpu_seconds = time.process_time() - cpu_start
        if len(texts) / wall_seconds > best_rate:
            best_rate, cpu_per_100 = len(texts) / wall_seconds, 100 * cpu_seconds / len(texts)
    return best_rate, cpu_per_100


def cosqa_scores(embedder: Embedder, data: dict) -> tuple[float, float, float]:
    """(MRR, recall@1, recall@10) of ranking the corpus by cosine to each query."""
    corpus_ids = list(data["corpus"])
    corpus = embedder.embed([data["corpus"][cid] for cid in corpus_ids])
    query_ids = [qid for qid in data["queries"] if data["qrels"].get(qid)]
    queries = embedder.embed([data["queries"][qid] for qid in query_ids])
    ranks = []
    for row, qid in enumerate(query_ids):
        order = np.argsort(-(corpus @ queries[row]), kind="stable")
        relevant = {corpus_ids.index(cid) for cid in data["qrels"][qid]}
        ranks.append(next(i for i, doc in enumerate(order, 1) if doc in relevant))
    ranks_array = np.array(ranks)
    return (
        float(np.mean(1.0 / ranks_array)),
        float(np.mean(ranks_array <= 1)),
        float(np.mean(ranks_array <= 10)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-sizes", default="16,32,64")
    parser.add_argument("--cosqa", type=Path, default=None)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="where model graphs are cached (default: FRESHMARK_HOME/cache)",
    )
    args = parser.parse_args()
    cache_dir = args.cache_dir or Settings.from_env().cache_dir
    texts = code_chunks(args.texts)
    embedders = {
        name: get_embedder(name, cache_dir, threads=args.threads)
        for name in ("minilm-fp32", "minilm-int8")
    }
    first = next(iter(embedders.values()))
    assert isinstance(first, MiniLMEmbedder)
    tokens = first.token_counts(texts)
    print(
        f"{len(texts)} code chunks, tokens per chunk: mean {np.mean(tokens):.0f}, "
        f"median {np.median(tokens):.0f}, at the 256 cap {np.mean(np.array(tokens) >= 256):.0%}"
    )
    print(f"{'embedder':28} {'batch':>5} {'texts/s':>8} {'cpu s/100':>9}")
    for embedder in embedders.values():
        assert isinstance(embedder, MiniLMEmbedder)
        for batch_size in [int(b) for b in args.batch_sizes.split(",")]:
            embedder.batch_size = batch_size
            rate, cpu_per_100 = measure(embedder, texts, args.repeat)
            print(f"{embedder.id:28} {batch_size:>5} {rate:>8.1f} {cpu_per_100:>9.2f}")
    fp32_vectors = embedders["minilm-fp32"].embed(texts)
    int8_vectors = embedders["minilm-int8"].embed(texts)
    cosines = np.sum(fp32_vectors * int8_vectors, axis=1)
    print(
        f"cosine int8 vs fp32: min {cosines.min():.4f}  p1 {np.percentile(cosines, 1):.4f}  "
        f"mean {cosines.mean():.4f}"
    )
    if args.cosqa:
        data = json.loads(args.cosqa.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as scratch:
            embedders["hashing"] = get_embedder("hashing", Path(scratch))
        print(f"CoSQA dev, vector-only retrieval ({len(data['corpus'])} functions):")
        print(f"{'embedder':28} {'MRR':>6} {'R@1':>6} {'R@10':>6}")
        for embedder in embedders.values():
            mrr, recall_1, recall_10 = cosqa_scores(embedder, data)
            print(f"{embedder.id:28} {mrr:>6.3f} {recall_1:>6.3f} {recall_10:>6.3f}")


if __name__ == "__main__":
    main()

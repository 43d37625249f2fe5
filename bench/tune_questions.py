"""Chunk ranking studied offline on the pools ``bench_questions.py --dump-pools`` saved: each
question's chunk-search pool holds every candidate's features, chunk kind, lines and whether it
answers, so a ranking is scored without searching again.

Two rankings, each put through the search's own steps after scoring (``fusion.structured``'s
rules: containers give way to members, a named definition above its callers; then
``fusion.diversify`` with the search's per-file cap and a question's give-way, k = 10):

- ``rerank``: ``fusion.combined_score`` with the default weights, or with ``--substance W``
  (0 shows the ranking without the substance feature);
- ``learned``: a logistic regression over the same features (numpy, class-balanced, L2), fitted
  with one whole repository held out at a time and scored on that repository only
  (leave-one-repository-out): a held-out figure, never one on the questions it was fitted on.

Usage::

    .venv/bin/python bench/tune_questions.py POOLS.json [--substance W]

Figures: symbol Acc@1/3/5 and MRR over the chunk answer, overall and per repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.core.chunking.model import CONTAINER_KINDS
from freshmark.core.fusion import DEFAULT_WEIGHTS, RerankWeights, combined_score, diversify
from freshmark.core.structure import Unit, definitions_first, members_first
from freshmark.services.retrieval.hybrid import MAX_PER_FILE, QUESTION_GIVE_WAY

CUTOFFS = (1, 3, 5)
DEPTH = 10
Scorer = Callable[[dict], float]


def features(c: dict) -> list[float]:
    """What the learned ranking reads of one candidate: the rerank's features (the vector
    similarity faded for queries written as code, as the rerank does) and the chunk's kind."""
    return [c["rrf_norm"], c["bm25_norm"], c["vector_norm"] * (1.0 - c["code_share"]),
            c["symbol_hit"], c["path_hit"], c["length_fit"], c.get("substance", 0.0),
            c["kind_prior"], c.get("qualified_hit", 0.0),
            float(c["chunk_kind"] in CONTAINER_KINDS), float(c["chunk_kind"] == "block")]


def ranked(pool: dict, scorer: Scorer) -> list[dict]:
    """The chunk answer: the pool scored, the structure rules applied, then diversified."""
    scored = sorted(((c, scorer(c)) for c in pool["candidates"]), key=lambda cs: -cs[1])
    units = [Unit(c["path"], c["symbol"], c["chunk_kind"], s, tuple(c.get("references", ())))
             for c, s in scored]
    order = definitions_first(units, members_first(units, pool["terms"]), pool["code_names"])
    return diversify([scored[p.index][0] for p in order], DEPTH, MAX_PER_FILE,
                     path_of=lambda c: c["path"], give_way=QUESTION_GIVE_WAY)


def figures(questions: Sequence[dict], scorer_for: Callable[[dict], Scorer]) -> dict[str, float]:
    hits = dict.fromkeys(CUTOFFS, 0)
    reciprocal = 0.0
    for question in questions:
        top = ranked(question["chunks"], scorer_for(question))
        rank = next((i for i, c in enumerate(top, start=1) if c["answers"]), None)
        for cutoff in CUTOFFS:
            hits[cutoff] += rank is not None and rank <= cutoff
        reciprocal += 1.0 / rank if rank else 0.0
    n = max(len(questions), 1)
    return {**{f"Acc@{c}": hits[c] / n for c in CUTOFFS}, "MRR": reciprocal / n,
            "n": len(questions)}


def fit_logistic(questions: Sequence[dict], l2: float = 1.0, steps: int = 3000,
                 rate: float = 0.5) -> Scorer:
    """A class-balanced logistic regression of ``answers`` on ``features`` (standardised),
    by gradient descent; questions whose pool holds no answer teach nothing and are skipped."""
    rows, labels = [], []
    for question in questions:
        candidates = question["chunks"]["candidates"]
        if any(c["answers"] for c in candidates):
            rows += [features(c) for c in candidates]
            labels += [float(c["answers"]) for c in candidates]
    x, y = np.asarray(rows), np.asarray(labels)
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / spread
    share = y.mean()
    balance = np.where(y == 1.0, 0.5 / share, 0.5 / (1.0 - share))
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        g = (p - y) * balance
        w -= rate * (z.T @ g + l2 * w) / len(y)
        b -= rate * float(g.mean())
    return lambda c: float(((np.asarray(features(c)) - mean) / spread) @ w + b)


def print_row(scope: str, system: str, row: dict[str, float]) -> None:
    cells = " | ".join(f"{row[k]:.3f}" for k in (*(f"Acc@{c}" for c in CUTOFFS), "MRR"))
    print(f"| {scope} | {system} | {cells} | {row['n']} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a bench_questions.py --json report")
    parser.add_argument("--substance", type=float, default=None,
                        help="the substance weight of the rerank (default: the search's)")
    args = parser.parse_args(argv)
    questions = json.loads(args.report.read_text()).get("pools", [])
    if not questions:
        parser.error("the report holds no pools: run bench_questions.py with --dump-pools")
    weights: RerankWeights = DEFAULT_WEIGHTS if args.substance is None else \
        replace(DEFAULT_WEIGHTS, substance=args.substance)

    def rerank_scorer(_: dict) -> Scorer:
        return lambda c: combined_score({"long_query": 0.0, **c}, weights)

    repos = sorted({q["repo"] for q in questions})
    held_out = {repo: fit_logistic([q for q in questions if q["repo"] != repo])
                for repo in repos}
    print("| scope | system | " + " | ".join(f"Acc@{c}" for c in CUTOFFS) + " | MRR | n |")
    print("|---|---|---|---|---|---|---|")
    print_row("all", "rerank", figures(questions, rerank_scorer))
    print_row("all", "learned (held-out repo)",
              figures(questions, lambda q: held_out[q["repo"]]))
    for repo in repos:
        mine = [q for q in questions if q["repo"] == repo]
        print_row(repo, "rerank", figures(mine, rerank_scorer))
        print_row(repo, "learned (held-out repo)", figures(mine, lambda _q, r=repo: held_out[r]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Chunk ranking studied offline on the pools ``bench_questions.py --dump-pools`` saved, and the
question model (``freshmark/core/question_model.py``) fitted on them: each question's
chunk-search pool holds every candidate's features, chunk kind, lines and whether it answers,
so a ranking is scored without searching again.

Rankings, each put through the search's own steps after scoring (``fusion.structured``'s
rules: containers give way to members, a named definition above its callers; then
``diversify.diversify`` with the search's per-file cap and a question's give-way, k = 10):

- ``formula``: ``fusion.combined_score`` with the default weights, or with ``--substance W``;
- ``model``: ``question_model.question_score`` with the shipped weights;
- ``refit, repository held out``: the same logistic regression fitted again with one whole
  repository of the report left out at a time (and the CoSQA pools, if given), scored on that
  repository only: a held-out figure, never one on the questions it was fitted on.

With ``--cosqa`` (a ``bench_quality.py --dump-pools --json`` report), its CoSQA pools join the
fit, and the two halves of CoSQA (even and odd queries) are each scored by a model fitted with
the other half. ``--fit`` prints the weights fitted on everything given, in the form of
``question_model.QUESTION_WEIGHTS``. With ``--blind-repos`` (owner/name or name, comma
separated), those repositories' pools are never fitted on: they are scored by the formula, the
shipped model and a model fitted on every other pool given, the check a refit must pass before
it ships.

Usage::

    .venv/bin/python bench/tune_questions.py POOLS.json [POOLS.json ...]
        [--cosqa QUALITY.json] [--blind-repos a,b] [--fit] [--substance W]

Figures: symbol Acc@1/3/5 and MRR over the chunk answer, overall and per repository (CoSQA:
MRR over its 10 best).
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

from freshmark.core.diversify import diversify
from freshmark.core.fusion import (
    DEFAULT_WEIGHTS,
    RerankWeights,
    combined_score,
)
from freshmark.core.question_model import (
    QUESTION_WEIGHTS,
    pool_marks,
    question_features,
    question_score,
)
from freshmark.core.structure import Unit, definitions_first, members_first
from freshmark.services.retrieval.hybrid import (
    HELD_BACK_BELOW,
    MAX_PER_FILE,
    QUESTION_GIVE_WAY,
)

CUTOFFS = (1, 3, 5)
DEPTH = 10
NAMES = list(QUESTION_WEIGHTS)
Scorer = Callable[[dict], float]


def with_pool_features(candidates: list[dict]) -> list[dict]:
    """Candidates with ``outline``, ``block`` and ``file_shared`` set as the search sets them
    (``question_model.pool_marks``; pools saved before the model lack them)."""
    marks = pool_marks([c.get("chunk_kind", "function") for c in candidates],
                       [c["path"] for c in candidates])
    for candidate, mark in zip(candidates, marks, strict=True):
        for name, value in mark.items():
            candidate.setdefault(name, value)
    return candidates


def features(c: dict) -> list[float]:
    """What the model reads of one candidate, in ``QUESTION_WEIGHTS`` order."""
    inputs = question_features(c)
    return [inputs[name] for name in NAMES]


def ranked(pool: dict, scorer: Scorer, probability: bool = True) -> list[dict]:
    """The chunk answer: the pool scored, the structure rules applied, then diversified (a
    held chunk back before a far weaker one when ``probability``: the score is a model's, as
    the search does)."""
    scored = sorted(((c, scorer(c)) for c in pool["candidates"]), key=lambda cs: -cs[1])
    units = [Unit(c["path"], c["symbol"], c["chunk_kind"], s, tuple(c.get("references", ())))
             for c, s in scored]
    order = definitions_first(units, members_first(units, pool["terms"]), pool["code_names"])
    score_of = {id(c): s for c, s in scored}
    return diversify([scored[p.index][0] for p in order], DEPTH, MAX_PER_FILE,
                     path_of=lambda c: c["path"], give_way=QUESTION_GIVE_WAY,
                     held_back_below=HELD_BACK_BELOW if probability else 0.0,
                     score_of=lambda c: score_of[id(c)])


def figures(questions: Sequence[dict], scorer_for: Callable[[dict], Scorer],
            probability: bool = True) -> dict[str, float]:
    hits = dict.fromkeys(CUTOFFS, 0)
    reciprocal = 0.0
    for question in questions:
        top = ranked(question["chunks"], scorer_for(question), probability)
        rank = next((i for i, c in enumerate(top, start=1) if c["answers"]), None)
        for cutoff in CUTOFFS:
            hits[cutoff] += rank is not None and rank <= cutoff
        reciprocal += 1.0 / rank if rank else 0.0
    n = max(len(questions), 1)
    return {**{f"Acc@{c}": hits[c] / n for c in CUTOFFS}, "MRR": reciprocal / n,
            "n": len(questions)}


def cosqa_mrr(pools: Sequence[dict], scorer: Scorer) -> float:
    """MRR over the 10 best of each CoSQA pool (one function per file: no structure rules)."""
    total = 0.0
    for pool in pools:
        top = sorted(pool["chunks"]["candidates"], key=lambda c: -scorer(c))[:DEPTH]
        rank = next((i for i, c in enumerate(top, start=1) if c["answers"]), None)
        total += 1.0 / rank if rank else 0.0
    return total / max(len(pools), 1)


def fit_logistic(questions: Sequence[dict], l2: float = 1.0, steps: int = 3000,
                 rate: float = 0.5) -> tuple[dict[str, float], float]:
    """A class-balanced logistic regression of ``answers`` on ``features`` (standardised, by
    gradient descent), returned as weights in each feature's own units and an intercept;
    questions whose pool holds no answer teach nothing and are skipped."""
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
    raw = w / spread
    return dict(zip(NAMES, (float(v) for v in raw), strict=True)), float(b - raw @ mean)


def model_scorer(fitted: tuple[dict[str, float], float]) -> Scorer:
    weights, intercept = fitted
    return lambda c: question_score(c, weights, intercept)


def cosqa_questions(report: Path) -> list[dict]:
    """CoSQA's saved pools in the form of the questions' pools (one function per file)."""
    pools = json.loads(report.read_text()).get("pools", {}).get("cosqa", [])
    return [{"repo": "cosqa", "chunks": {"candidates": with_pool_features(
        [{"chunk_kind": "function", "answers": c["relevant"], **c} for c in p["candidates"]]),
        "terms": [], "code_names": []}} for p in pools]


def pools_of(report: Path) -> list[dict]:
    """The question pools a ``bench_questions.py --dump-pools --json`` report saved, with the
    marks the model reads."""
    questions = json.loads(report.read_text()).get("pools", [])
    for question in questions:
        with_pool_features(question["chunks"]["candidates"])
    return questions


def by_repository(questions: Sequence[dict]) -> list[tuple[str, list[dict]]]:
    """("all", every question), then each repository's questions."""
    repos = sorted({q["repo"] for q in questions})
    return [("all", list(questions))] + [(r, [q for q in questions if q["repo"] == r])
                                         for r in repos]


def print_row(scope: str, system: str, row: dict[str, float]) -> None:
    cells = " | ".join(f"{row[k]:.3f}" for k in (*(f"Acc@{c}" for c in CUTOFFS), "MRR"))
    print(f"| {scope} | {system} | {cells} | {row['n']} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("report", type=Path, nargs="+",
                        help="bench_questions.py --dump-pools --json reports (pools joined)")
    parser.add_argument("--cosqa", type=Path, default=None,
                        help="a bench_quality.py --dump-pools --json report: its CoSQA pools "
                             "join the fit and are scored by halves")
    parser.add_argument("--fit", action="store_true",
                        help="print the weights fitted on every pool given")
    parser.add_argument("--substance", type=float, default=None,
                        help="the substance weight of the formula (default: the search's)")
    parser.add_argument("--blind-repos", default="",
                        help="repositories whose pools are never fitted on: scored by the "
                             "formula, the shipped model and the model fitted on the rest")
    args = parser.parse_args(argv)
    pools = [q for report in args.report for q in pools_of(report)]
    blind_names = {name for name in args.blind_repos.split(",") if name}

    def is_blind(question: dict) -> bool:
        return question["repo"] in blind_names or question["repo"].split("/")[-1] in blind_names

    blind = [q for q in pools if is_blind(q)]
    questions = [q for q in pools if not is_blind(q)]
    if not questions:
        parser.error("the reports hold no pools: run bench_questions.py with --dump-pools")
    cosqa = cosqa_questions(args.cosqa) if args.cosqa else []
    weights: RerankWeights = DEFAULT_WEIGHTS if args.substance is None else \
        replace(DEFAULT_WEIGHTS, substance=args.substance)

    def formula(_: dict) -> Scorer:
        return lambda c: combined_score({"long_query": 0.0, **c}, weights)

    def shipped(_: dict) -> Scorer:
        return question_score

    repos = sorted({q["repo"] for q in questions})
    held_out = {repo: model_scorer(fit_logistic([q for q in questions if q["repo"] != repo]
                                                + cosqa)) for repo in repos}
    print("| scope | system | " + " | ".join(f"Acc@{c}" for c in CUTOFFS) + " | MRR | n |")
    print("|---|---|---|---|---|---|---|")
    for scope, mine in by_repository(questions):
        print_row(scope, "formula", figures(mine, formula, probability=False))
        print_row(scope, "model", figures(mine, shipped))
        print_row(scope, "refit, repository held out",
                  figures(mine, lambda q: held_out[q["repo"]]))
    if cosqa:
        even, odd = cosqa[0::2], cosqa[1::2]
        by_even, by_odd = (model_scorer(fit_logistic(questions + half)) for half in (even, odd))
        print(f"\nCoSQA MRR, even / odd queries: formula {cosqa_mrr(even, formula({})):.4f} / "
              f"{cosqa_mrr(odd, formula({})):.4f}; model {cosqa_mrr(even, question_score):.4f} / "
              f"{cosqa_mrr(odd, question_score):.4f}; refit with the other half "
              f"{cosqa_mrr(even, by_odd):.4f} / {cosqa_mrr(odd, by_even):.4f}")
    if blind:
        everything = model_scorer(fit_logistic(questions + cosqa))
        print("\nBlind repositories (never fitted on):")
        for scope, mine in by_repository(blind):
            print_row(scope, "formula", figures(mine, formula, probability=False))
            print_row(scope, "model", figures(mine, shipped))
            print_row(scope, "refit on every report given", figures(mine, lambda _: everything))
    if args.fit:
        fitted, intercept = fit_logistic(questions + cosqa)
        print("\nQUESTION_WEIGHTS = {")
        for name, value in fitted.items():
            print(f'    "{name}": {value:.3f},')
        print(f"}}\nQUESTION_INTERCEPT = {intercept:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Rerank weights studied offline on candidate pools saved by ``bench_localization.py
--dump-pools``: each pool holds every candidate's features, so a weight setting is scored
without searching again (file Recall@1/5/10 and MRR of the file answer from the file search's
pool; function Acc@1/5/10 of the chunk ranking before the second pass, from the chunk search's
pool when the report kept it, else from the file search's; ``tune_second_pass.py`` adds the
second pass).

Usage::

    .venv/bin/python bench/tune_rerank.py REPORT.json [REPORT.json ...] [--grid]

Without ``--grid`` it scores the current defaults and a few one-at-a-time variations; with
``--grid`` a coarse grid over the weights that matter most. Use it to see how sensitive the
figures are, not to fit the weights to one data set.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_localization import function_hit

from freshmark.core.diversify import diversify
from freshmark.core.fusion import (
    DEFAULT_WEIGHTS,
    FILE_EXTRA_SHARE,
    RerankWeights,
    combined_score,
    file_substance,
    substance,
)
from freshmark.core.structure import Unit, definitions_first, members_first
from freshmark.services.retrieval.hybrid import MAX_PER_FILE, report_lead_cap

CUTOFFS = (1, 5, 10)
FUNCTION_CUTOFFS = (5, 10)


def score(features: dict, w: RerankWeights) -> float:
    # Pools saved before the long-query flag existed all came from issue reports.
    return combined_score({"long_query": 1.0, **features}, w)


def with_substance(pool: dict) -> list[dict]:
    """The pool's candidates, each with the ``substance`` feature the search gives it
    (``fusion.file_substance``) when the pool was saved before the feature existed."""
    candidates = pool["candidates"]
    if not candidates or "substance" in candidates[0] or "chunk_kind" not in candidates[0]:
        return candidates
    body = file_substance([c["path"] for c in candidates],
                          [substance(c["chunk_kind"], c["start"], c["end"]) for c in candidates])
    return [{**c, "substance": value} for c, value in zip(candidates, body, strict=True)]


def ranked_pool(pool: dict, w: RerankWeights, structure: bool = True, named: bool = True
                ) -> list[tuple[dict, float]]:
    """(candidate, score) best first: the pool rescored, then, with ``structure``, every
    class outline or module block above its members placed after its best member
    (``structure.members_first``) and, with ``named``, every definition the query names as
    code moved above the chunks that only use it (``structure.definitions_first``), as the
    search does (pools saved before chunk kinds were recorded have no containers)."""
    scored = sorted(((c, score(c, w)) for c in with_substance(pool)), key=lambda cs: -cs[1])
    if not structure:
        return scored
    units = [Unit(c["path"], c["symbol"], c.get("chunk_kind", ""), s,
                  tuple(c.get("references", ()))) for c, s in scored]
    order = members_first(units, pool.get("terms", []))
    if named:
        order = definitions_first(units, order, pool.get("code_names", []))
    return [(scored[p.index][0], p.score) for p in order]


def chunk_pool(pool: dict) -> dict:
    """``pool`` with the chunk search's own candidates when the report kept them
    (``--dump-pools``); older reports hold the file search's only (wider, with whole-file
    evidence: its order is not the chunk answer's)."""
    return {**pool, "candidates": pool.get("chunk_candidates", pool["candidates"])}


def file_scores(ranked: Sequence[tuple[dict, float]], extra: float) -> dict[str, float]:
    """Each file's score as ``fusion.group_files`` gives it: its best chunk's, plus ``extra``
    times its second one's (when positive)."""
    best: dict[str, float] = {}
    more: dict[str, float] = {}
    for c, s in ranked:
        if c["path"] not in best:
            best[c["path"]], more[c["path"]] = s, 0.0
        elif not more[c["path"]]:
            more[c["path"]] = max(s, 0.0)
    return {p: best[p] + extra * more[p] for p in best}


def file_ranking(ranked: list[tuple[dict, float]], extra: float) -> list[str]:
    scores = file_scores(ranked, extra)
    return sorted(scores, key=lambda p: -scores[p])


def chunk_ranking(ranked: list[tuple[dict, float]], max_per_file: int = MAX_PER_FILE,
                  k: int = 10) -> list[tuple[str, str]]:
    """(path, symbol) of the chunk answer: the ranked pool through ``diversify``, the
    best file holding an issue report's share as the search gives it."""
    return [(c["path"], c["symbol"]) for c in
            diversify([c for c, _ in ranked], k, max_per_file, path_of=lambda c: c["path"],
                      lead_file_cap=report_lead_cap(max_per_file))]


def evaluate(pools: list[dict], w: RerankWeights, extra: float = FILE_EXTRA_SHARE,
             max_per_file: int = MAX_PER_FILE, structure: bool = True,
             named: bool = True) -> dict:
    hits = dict.fromkeys(CUTOFFS, 0)
    function_hits = dict.fromkeys(FUNCTION_CUTOFFS, 0)
    function_at_1 = 0
    rr, with_functions = 0.0, 0
    for pool in pools:
        ranked = ranked_pool(pool, w, structure, named)
        files = file_ranking(ranked, extra)[:10]
        gold = set(pool["gold_files"])
        rank = next((i for i, p in enumerate(files, start=1) if p in gold), None)
        for c in CUTOFFS:
            hits[c] += rank is not None and rank <= c
        rr += 1.0 / rank if rank else 0.0
        if pool.get("gold_functions"):
            with_functions += 1
            chunk_ranked = ranked_pool(chunk_pool(pool), w, structure, named) \
                if "chunk_candidates" in pool else ranked
            chunks = chunk_ranking(chunk_ranked, max_per_file)
            function_at_1 += function_hit(chunks[:1], pool["gold_functions"])
            for c in FUNCTION_CUTOFFS:
                function_hits[c] += function_hit(chunks[:c], pool["gold_functions"])
    n = max(len(pools), 1)
    return {**{f"R@{c}": round(hits[c] / n, 3) for c in CUTOFFS}, "MRR": round(rr / n, 3),
            "fAcc@1": round(function_at_1 / max(with_functions, 1), 3),
            **{f"fAcc@{c}": round(function_hits[c] / max(with_functions, 1), 3)
               for c in FUNCTION_CUTOFFS}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--grid", action="store_true")
    args = parser.parse_args()
    pools = [p for r in args.reports for p in json.loads(r.read_text()).get("pools", [])]
    print(f"{len(pools)} pools; defaults {asdict(DEFAULT_WEIGHTS)}")
    print("defaults", evaluate(pools, DEFAULT_WEIGHTS))
    print("no structure", evaluate(pools, DEFAULT_WEIGHTS, structure=False))
    print("outlines only", evaluate(pools, DEFAULT_WEIGHTS, named=False))
    if not args.grid:
        for name, values in {"vector_long": (0.0, 0.5, 2.0), "kind": (0.0, 0.5, 2.0),
                             "file": (0.0, 0.8, 1.5), "hint": (0.0, 0.6, 1.0),
                             "frame": (0.0, 0.3, 1.0), "bm25": (0.0, 0.6, 1.0),
                             "symbol": (0.0, 0.4, 0.8), "qualified": (0.0, 0.6),
                             "rrf": (0.0, 0.5), "substance": (0.0, 0.3, 0.8)}.items():
            for value in values:
                print(f"{name}={value}", evaluate(pools, replace(DEFAULT_WEIGHTS, **{name: value})))
        for extra in (0.0, 0.05, 0.2):
            print(f"file_extra={extra}", evaluate(pools, DEFAULT_WEIGHTS, extra))
        for per_file in (1, 3, 0):
            print(f"max_per_file={per_file}",
                  evaluate(pools, DEFAULT_WEIGHTS, max_per_file=per_file or 10))
        return 0
    rows = []
    for vector, file, hint, bm25 in itertools.product((0.25, 0.5, 1.0, 2.0), (0.2, 0.4, 0.8, 1.5),
                                                      (0.0, 0.3, 0.6), (0.3, 0.6)):
        w = replace(DEFAULT_WEIGHTS, vector_long=vector, file=file, hint=hint, bm25=bm25)
        rows.append((evaluate(pools, w), vector, file, hint, bm25))
    rows.sort(key=lambda r: (-r[0]["R@5"], -r[0]["MRR"]))
    for figures, vector, file, hint, bm25 in rows[:15]:
        print(f"vector={vector} file={file} hint={hint} bm25={bm25}", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

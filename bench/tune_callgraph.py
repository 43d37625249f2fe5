"""A call-graph signal for issue reports, studied offline on candidate pools saved by
``bench_localization.py --dump-pools``.

An issue report speaks through a public entry point (``Dataset.sel``, ``Plot.add``) and the fix
is often in the module that entry point hands the work to. Here, for each saved pool: the
ranking the search gives it (``tune_rerank.ranked_pool``), then the definitions that the best
``--callers`` chunks call, resolved as the symbol graph resolves names
(``services/context/symbol_graph.py``: same file or an imported file is confirmed, a name
defined once in the repository is name-only; tests, docs and config left out), over every
product file of the repository at the report's base commit (read from its mirror and chunked
as the indexer does). A callee file other than the caller's earns

    called = sum over callers c of max(score_c, 0) · (1 if confirmed else name_only)

and a file's score becomes its shipped score (best chunk + a tenth of its second best) plus
``lift · called / max(called)``, for files in the pool only (``--outside`` also lets files
the pool lacks in, with their called share times ``lift`` as the whole score).

Reported: where the gold files stand among the callee files (diagnosis), and file R@1/5/10 and
MRR per repository and pooled for a few rules, plus each changed report with ``--show``.

Usage::

    .venv/bin/python bench/tune_callgraph.py REPORT.json [...] --mirrors /work/.mirror
        [--data ../shared/eval/swebench/dev.jsonl] [--callers 5] [--show]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_localization import DEV
from tune_rerank import file_scores, ranked_pool

from freshmark.core.chunking import chunk_text
from freshmark.core.fusion import DEFAULT_WEIGHTS, FILE_EXTRA_SHARE
from freshmark.core.infile import UNNAMED
from freshmark.core.stamp import ChunkRecord
from freshmark.services.context.symbol_graph import SymbolGraph

CUTOFFS = (1, 5, 10)
DEPTH = 10


def is_product(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return name.endswith(".py") and not name.startswith(("test_", "conftest")) and \
        not any(p in ("tests", "test", "testing", "doc", "docs", "examples", "benchmarks",
                      "asv_bench", "ci") for p in parts[:-1])


@functools.cache
def blob_records(mirror: str, blob: str, path: str) -> tuple[ChunkRecord, ...]:
    text = subprocess.run(["git", "cat-file", "blob", blob], cwd=mirror, capture_output=True,
                          check=True).stdout.decode("utf-8", "replace")
    out = []
    for i, c in enumerate(chunk_text(path, text)):
        out.append(ChunkRecord(repo="r", branch="b", commit="c", path=path, symbol=c.symbol,
                               start_line=c.start_line, end_line=c.end_line, indexed_at="",
                               blob_sha=blob, content_sha256="", kind=c.kind,
                               id=f"{path}\0{c.symbol}\0{i}", imports=list(c.imports),
                               references=list(c.references)))
    return tuple(out)


@functools.cache
def graph_at(mirror: str, commit: str) -> SymbolGraph:
    listing = subprocess.run(["git", "ls-tree", "-r", commit], cwd=mirror, capture_output=True,
                             text=True, check=True).stdout
    records: list[ChunkRecord] = []
    for line in listing.splitlines():
        meta, _, path = line.partition("\t")
        mode, kind, blob = meta.split()
        if kind == "blob" and mode != "120000" and is_product(path):
            records.extend(blob_records(mirror, blob, path))
    return SymbolGraph(records)


def callee_flow(ranked: Sequence[tuple[dict, float]], graph: SymbolGraph, callers: int,
                name_only: float) -> tuple[dict[str, float], dict[str, set[str]]]:
    """Per callee file: the summed caller score (``called``), and the callee symbols."""
    called: dict[str, float] = defaultdict(float)
    symbols: dict[str, set[str]] = defaultdict(set)
    for caller, score in ranked[:callers]:
        node = graph.find(caller["path"], caller["symbol"])
        if node is None:
            continue
        best: dict[str, float] = {}
        for edge in graph.callees(node):
            target = graph.nodes[edge.callee]
            if target.path == caller["path"]:
                continue
            weight = 1.0 if edge.confirmed else name_only
            best[target.path] = max(best.get(target.path, 0.0), weight)
            symbols[target.path].add(target.symbol)
        for path, weight in best.items():
            called[path] += max(score, 0.0) * weight
    return dict(called), dict(symbols)


def shipped_files(ranked: Sequence[tuple[dict, float]]) -> dict[str, float]:
    return file_scores(ranked, FILE_EXTRA_SHARE)


def rank_of(order: Sequence[str], gold: set[str]) -> int | None:
    return next((i for i, p in enumerate(order[:DEPTH], start=1) if p in gold), None)


def figures(ranks: Sequence[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    out = {f"R@{c}": round(sum(r is not None and r <= c for r in ranks) / n, 3) for c in CUTOFFS}
    out["MRR"] = round(sum(1.0 / r for r in ranks if r) / n, 3)
    return out


@dataclass(frozen=True)
class Rule:
    """A file's score: shipped + ``lift`` · (called / the pool's most called, or 1 when
    ``binary``), ``called`` over the first ``callers`` chunks, a name-only edge counting
    ``name_only``; ``outside``: called files the pool lacks join with the lift alone."""

    lift: float = 0.0
    callers: int = 5
    name_only: float = 0.5
    binary: bool = False
    outside: bool = False
    # The first file keeps its place: a called file is gold no more often there than an
    # uncalled one (``base_rates``); the lift only reorders the files after it.
    keep_first: bool = False

    def label(self) -> str:
        return (f"lift={self.lift:g} callers={self.callers} name_only={self.name_only:g}"
                f"{' binary' if self.binary else ''}{' outside' if self.outside else ''}"
                f"{' keep_first' if self.keep_first else ''}")


SHIPPED = Rule()


class Study:
    def __init__(self, pool: dict, row: dict, mirror: Path) -> None:
        self.pool, self.row = pool, row
        self.instance = pool["instance"]
        self.repo = self.instance.split("__")[0]
        self.gold = set(pool["gold_files"])
        self.ranked = ranked_pool(pool, DEFAULT_WEIGHTS)
        self.files = shipped_files(self.ranked)
        self.graph_mirror = str(mirror)
        self.graph = graph_at(str(mirror), row["base_commit"])

    def order(self, rule: Rule) -> list[str]:
        scores = dict(self.files)
        first = max(scores, key=lambda p: scores[p]) if scores and rule.keep_first else None
        if rule.lift:
            called, _ = callee_flow(self.ranked, self.graph, rule.callers, rule.name_only)
            top = max(called.values(), default=0.0) or 1.0
            for path, value in called.items():
                share = 1.0 if rule.binary else value / top
                if path in scores:
                    scores[path] += rule.lift * share
                elif rule.outside:
                    scores[path] = rule.lift * share
        order = sorted(scores, key=lambda p: -scores[p])
        return order if first is None else [first, *(p for p in order if p != first)]

    def rank(self, rule: Rule) -> int | None:
        return rank_of(self.order(rule), self.gold)


def load(reports: Sequence[Path], mirrors: Path, data: Path) -> list[Study]:
    rows = {r["instance_id"]: r for r in map(json.loads, data.read_text().splitlines())}
    studies = []
    for report in reports:
        for pool in json.loads(report.read_text()).get("pools", []):
            row = rows[pool["instance"]]
            studies.append(Study(pool, row, mirrors / row["repo"].replace("/", "+") / "repo"))
    return studies


def scored(studies: Sequence[Study], rule: Rule) -> dict[str, float]:
    return figures([s.rank(rule) for s in studies])


def diagnose(studies: Sequence[Study]) -> None:
    """Each report whose gold file is not first: its top 5 files and the gold ones, with
    their shipped scores and called shares (top 5 callers)."""
    for s in studies:
        order = s.order(SHIPPED)
        rank = rank_of(order, s.gold)
        if rank == 1:
            continue
        called, _ = callee_flow(s.ranked, s.graph, 5, 0.5)
        top = max(called.values(), default=0.0) or 1.0
        print(f"  {s.instance}: file rank {rank}; {len(called)} callee files")
        for p in [*order[:5], *sorted(s.gold - set(order[:5]))]:
            print(f"      {'*' if p in s.gold else ' '} {p}: file {s.files.get(p, 0.0):.3f} "
                  f"called {called.get(p, 0.0) / top:.2f}")


def rules(callers: Sequence[int], lifts: Sequence[float]) -> list[Rule]:
    return [Rule(lift, c, n, b, keep_first=k) for k in (False, True) for c in callers
            for n in (0.0, 0.5, 1.0) for b in (False, True) for lift in lifts]


def choose(studies: Sequence[Study], candidates: Sequence[Rule]) -> Rule:
    """The rule with the best MRR whose R@5 is no lower than the shipped one's (ties: the
    smaller lift)."""
    floor = scored(studies, SHIPPED)["R@5"]
    results = [(scored(studies, r), r) for r in candidates]
    allowed = [(f, r) for f, r in results if f["R@5"] >= floor] or [(scored(studies, SHIPPED),
                                                                    SHIPPED)]
    return max(allowed, key=lambda fr: (fr[0]["MRR"], -fr[1].lift))[1]


def function_reach(studies: Sequence[Study]) -> None:
    """Reports whose changed function is among the definitions the top chunks call (every
    edge, same file included), by how many top chunks are followed."""
    for callers in (1, 3, 5, 10):
        reached = total = 0
        sizes = []
        for s in studies:
            gold = [(p, n) for p, n in s.pool.get("gold_functions") or []]
            if not gold:
                continue
            total += 1
            found = set()
            for caller, _ in s.ranked[:callers]:
                node = s.graph.find(caller["path"], caller["symbol"])
                for edge in s.graph.callees(node) if node is not None else []:
                    target = s.graph.nodes[edge.callee]
                    found.add((target.path, target.symbol))
            sizes.append(len(found))
            reached += any(p == gp and n in sym.split(".") for p, sym in found for gp, n in gold)
        print(f"changed function among the callees of the top {callers}: {reached}/{total}; "
              f"callees per report median {sorted(sizes)[len(sizes) // 2] if sizes else 0}")


def base_rates(studies: Sequence[Study]) -> None:
    """How often a file of the shipped top 10 is a gold file, by its place and whether a
    definition of it is called (confirmed edge) by the top 5 chunks of other files."""
    counts: dict[tuple[str, bool], list[int]] = defaultdict(lambda: [0, 0])
    for s in studies:
        called, _ = callee_flow(s.ranked, s.graph, 5, 0.0)
        for place, path in enumerate(s.order(SHIPPED)[:DEPTH], start=1):
            band = "1" if place == 1 else "2-3" if place <= 3 else "4-10"
            cell = counts[(band, path in called)]
            cell[0] += path in s.gold
            cell[1] += 1
    for (band, is_called), (gold, total) in sorted(counts.items()):
        print(f"files at {band:4} {'called' if is_called else 'not called':10}: "
              f"{gold}/{total} gold ({gold / max(total, 1):.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--callers", default="3,5,10")
    parser.add_argument("--lifts", default="0.05,0.1,0.2,0.3,0.5")
    parser.add_argument("--tune", default="", help="repositories (instance prefixes, e.g. "
                        "pydata,mwaskom) to choose a rule on; it is scored on the others")
    parser.add_argument("--score", default="", help="one rule lift,callers,name_only,binary "
                        "to score per repository, with each changed report")
    parser.add_argument("--functions", default="",
                        help="level,callers: study function answers instead (function_study)")
    args = parser.parse_args()
    if args.functions:
        level, per_file = args.functions.split(",")
        function_study(load(args.reports, args.mirrors, args.data), float(level), int(per_file))
        return 0
    studies = load(args.reports, args.mirrors, args.data)
    repos = sorted({s.repo for s in studies})
    print(f"{len(studies)} pools over {repos}")
    if args.score:
        lift, callers, name_only, binary = args.score.split(",")
        rule = Rule(float(lift), int(callers), float(name_only), bool(int(binary)))
        for repo in [*repos, "all"]:
            chosen = [s for s in studies if repo in ("all", s.repo)]
            print(f"{repo:10} shipped {scored(chosen, SHIPPED)}  {rule.label()} "
                  f"{scored(chosen, rule)}")
        for s in studies:
            if s.rank(SHIPPED) != s.rank(rule):
                print(f"  {s.instance}: {s.rank(SHIPPED)} -> {s.rank(rule)}")
        return 0
    diagnose(studies)
    base_rates(studies)
    function_reach(studies)
    candidates = rules([int(c) for c in args.callers.split(",")],
                       [float(x) for x in args.lifts.split(",")])
    for rule in [SHIPPED, *candidates]:
        print(f"{rule.label():45} all {scored(studies, rule)} | " + " | ".join(
            f"{r} {scored([s for s in studies if s.repo == r], rule)['MRR']}" for r in repos))
    if args.tune:
        tune = set(args.tune.split(","))
        train = [s for s in studies if s.repo in tune]
        test = [s for s in studies if s.repo not in tune]
        rule = choose(train, candidates)
        print(f"chosen on {sorted(tune)}: {rule.label()}; there {scored(train, SHIPPED)} -> "
              f"{scored(train, rule)}; held out {scored(test, SHIPPED)} -> {scored(test, rule)}")
    return 0


# -- functions: the best chunk's callees inside its own file ------------------------------------
def in_file_ordered(ranked: list[dict], files: Sequence[str]) -> list[dict]:
    """``ranked`` with each of ``files`` in the search's in-file order (IN_FILE_WEIGHTS)."""
    import numpy as np
    import tune_second_pass as tsp

    fixed = np.array([tsp.IN_FILE_WEIGHTS.get(name, 0.0) for name in tsp.FEATURES])
    return tsp.in_file_order(ranked, files, lambda c: c["path"],
                             lambda c: float(tsp.vector(c) @ fixed))


def function_answer(study: object, level: float | None, callers_per_file: int
                    ) -> list[tuple[str, str]]:
    """The chunk answer (k = 10) after the second pass over the best 2 files; with a
    ``level``, the definitions of a best file that its first ``callers_per_file`` chunks call
    lead at that level (``infile``: RAN 0, BEST 1, CALLED 2, UNNAMED 3: only < 3 leads)."""
    import tune_second_pass as tsp

    assert isinstance(study, tsp.Study)
    files = tsp.best_files([c["path"] for c in study.ranked], 2)
    ranked = in_file_ordered(list(study.ranked), files)
    called: dict[str, set[str]] = {}
    for path in files:
        own = [c for c in ranked if c["path"] == path][:callers_per_file]
        called[path] = {n for c in own for n in c.get("references") or ()} - \
            {c["symbol"].rpartition(".")[2] for c in own}

    def lead(c: dict) -> float:
        value = study.lead(c)
        if level is not None and value >= UNNAMED and \
                c.get("chunk_kind") in ("function", "method") and \
                c["symbol"].rpartition(".")[2] in called.get(c["path"], set()):
            return level
        return value

    out = tsp.second_pass(ranked, study.joining(files), files, lambda c: c["path"], lead)
    return [(c["path"], c["symbol"]) for c in
            tsp.diversify(out, 10, tsp.MAX_PER_FILE, path_of=lambda c: c["path"],
                          lead_file_cap=tsp.report_lead_cap(tsp.MAX_PER_FILE))]


def function_study(studies: Sequence[Study], level: float, callers_per_file: int) -> None:
    """Function Acc@1/5/10 per repository without and with the best files' callees leading
    (``function_answer``), and each report that changes."""
    import tune_second_pass as tsp

    second = [tsp.Study(s.pool, s.row, Path(s.graph_mirror)) for s in studies]
    per: dict[tuple[str, bool], list[list[bool]]] = defaultdict(list)
    for study in second:
        gold = study.pool["gold_functions"]
        if not gold:
            continue
        repo = tsp.repo_of(study.pool["instance"])
        hits = {}
        for with_callees in (False, True):
            chunks = function_answer(study, level if with_callees else None, callers_per_file)
            hits[with_callees] = [tsp.function_hit(chunks[:c], gold) for c in CUTOFFS]
            for key in (repo, "all"):
                per[(key, with_callees)].append(hits[with_callees])
        if hits[False] != hits[True]:
            print(f"  {study.pool['instance']}: Acc@1/5/10 {hits[False]} -> {hits[True]}; top 5 "
                  f"{[sym for _, sym in chunks[:5]]}")
    for (key, with_callees), rows in sorted(per.items()):
        print(f"{key:8} callees {'lead' if with_callees else 'off '} (level {level:g}, "
              f"{callers_per_file} callers): Acc@1/5/10 " +
              "/".join(f"{sum(r[i] for r in rows) / len(rows):.3f}" for i in range(3)) +
              f" (n={len(rows)})")


if __name__ == "__main__":
    raise SystemExit(main())

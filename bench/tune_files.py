"""How a file answer combines its chunks, studied offline on candidate pools saved by
``bench_localization.py --dump-pools``, with each repository held out.

Each pool is ranked as the search ranks it (``tune_rerank.ranked_pool``, default weights), so
every file of the pool has its chunks' scores in order. A file's score is then one of a family
of rules over what the pool says of the file:

    score = (s1 + second · max(s2, 0) + third · max(s3, 0)
             + (hint · path_hint + whole · file_norm
                + spread · log(1 + more) / log(1 + MORE_SCALE)
                + churn · log(1 + commits) / log(1 + CHURN_SCALE)) · kind_prior
             - size · log10(max(lines, 100) / 100) + flow · called) · kind_prior ^ kind

``s1..s3`` are its best chunk scores, ``path_hint`` whether the report names the file (a path,
a frame, a dotted module name), ``file_norm`` its whole-file BM25 over the best file's,
``kind_prior`` the rerank's preference of source over tests over docs, ``more`` how many
more of its chunks the pool holds than one, ``lines`` the file's length at the report's base
commit (read from the mirror with ``--mirrors``; without it ``size`` stays 0), ``called`` the
best score among the first ``FLOW_CALLERS`` chunks of other files that call one of the file's
definitions (a report written against a public API whose fix is in the module the API hands
the work to), ``commits`` how many of the last ``--history`` commits before the base commit
changed the file (with ``--history-days``, the commits of that many days before it; read from
the mirror with ``--mirrors``: a file fixed often is fixed again, the bug-fixing frequency of
Ye et al., FSE 2014). The shipped rule is
``second = FILE_EXTRA_SHARE`` and every other term 0.

Leave-one-repository-out: for each repository, the rule with the best MRR on the other
repositories (R@5 no lower than the shipped rule's there, ties to the simplest) is scored on
the held-out one; the held-out figures are pooled over the folds.

Usage::

    .venv/bin/python bench/tune_files.py REPORT.json [REPORT.json ...] [--show] [--score RULE]
        [--mirrors /work/.mirror --data ../shared/eval/swebench/dev.jsonl
         [--history N | --history-days D]]

``--score second=0.1,hint=0.3`` scores one rule on every pool (no choice made), per repository.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_localization import DEV, commit_time
from tune_rerank import ranked_pool

from freshmark.core.fusion import DEFAULT_WEIGHTS, FILE_EXTRA_SHARE

CUTOFFS = (1, 5, 10)
DEPTH = 10
MORE_SCALE = 10
# ``flow``: the best chunks whose calls count (``call_flow``).
FLOW_CALLERS = 5
# ``churn``: the commit count that weighs 1 (a file changed by 20 of the last commits).
CHURN_SCALE = 20
DAY_SECONDS = 86_400
# Chunk kinds that define no name a caller could call.
_NOT_DEFINITIONS = frozenset({"block", "window"})


def call_flow(ranked: Sequence[tuple[dict, float]], callers: int) -> dict[str, float]:
    """For each file, the best score (from 0) among the first ``callers`` chunks of other files
    that call one of its definitions (a name in their ``references`` that a chunk of the file
    defines: a function, a method, a class); files nothing calls are left out."""
    defined: dict[str, set[str]] = defaultdict(set)
    for c, _ in ranked:
        if c.get("chunk_kind", "") not in _NOT_DEFINITIONS:
            defined[c["path"]].add(c["symbol"].rpartition(".")[2])
    flow: dict[str, float] = {}
    for caller, score in ranked[:callers]:
        called = set(caller.get("references") or ())
        for path, names in defined.items():
            if path != caller["path"] and called & names:
                flow[path] = max(flow.get(path, 0.0), max(score, 0.0))
    return flow


@dataclass(frozen=True)
class Rule:
    second: float = FILE_EXTRA_SHARE
    third: float = 0.0
    hint: float = 0.0
    spread: float = 0.0
    whole: float = 0.0
    kind: float = 0.0
    size: float = 0.0
    flow: float = 0.0
    churn: float = 0.0

    def label(self) -> str:
        return ",".join(f"{k}={v:g}" for k, v in vars(self).items())

    def distance(self) -> float:
        """How far from the shipped rule (ties go to the nearer one)."""
        return sum(abs(v - getattr(Rule(), k)) for k, v in vars(self).items())


@dataclass
class FileView:
    path: str
    scores: list[float]
    path_hint: float
    file_norm: float
    kind_prior: float
    chunks: int
    best_bm25: float = 0.0
    best_vector: float = 0.0
    lines: int = 0
    called: float = 0.0
    commits: int = 0


@dataclass
class Study:
    instance: str
    gold: set[str]
    files: list[FileView] = field(default_factory=list)

    @property
    def repo(self) -> str:
        return self.instance.split("__")[0]


def study(pool: dict) -> Study:
    ranked = ranked_pool(pool, DEFAULT_WEIGHTS)
    flow = call_flow(ranked, FLOW_CALLERS)
    by_path: dict[str, list[tuple[dict, float]]] = defaultdict(list)
    for c, s in ranked:
        by_path[c["path"]].append((c, s))
    files = [FileView(path, [s for _, s in chunks], max(c.get("path_hint", 0.0) for c, _ in chunks),
                      chunks[0][0].get("file_norm", 0.0), chunks[0][0].get("kind_prior", 1.0),
                      len(chunks), max(c.get("bm25_norm", 0.0) for c, _ in chunks),
                      max(c.get("vector_norm", 0.0) for c, _ in chunks), 0, flow.get(path, 0.0))
             for path, chunks in by_path.items()]
    return Study(pool["instance"], set(pool["gold_files"]), files)


def with_mirrors(studies: Sequence[Study], mirrors: Path, data: Path
                 ) -> Iterator[tuple[Study, str, Path]]:
    """Each study with its report's base commit and its repository's mirror."""
    rows = {r["instance_id"]: r for r in map(json.loads, data.read_text().splitlines())}
    for s in studies:
        row = rows[s.instance]
        yield s, row["base_commit"], mirrors / row["repo"].replace("/", "+") / "repo"


def add_lengths(studies: Sequence[Study], mirrors: Path, data: Path) -> None:
    """Each file's lines at its report's base commit, read from the repository's mirror."""
    for s, base_commit, mirror in with_mirrors(studies, mirrors, data):
        specs = "".join(f"{base_commit}:{f.path}\n" for f in s.files)
        out = subprocess.run(["git", "cat-file", "--batch"], cwd=mirror, input=specs.encode(),
                             capture_output=True, check=True).stdout
        for f in s.files:
            header, _, out = out.partition(b"\n")
            parts = header.split()
            if len(parts) == 3:
                size = int(parts[2])
                f.lines = out[:size].count(b"\n") + 1
                out = out[size + 1:]


def add_history(studies: Sequence[Study], mirrors: Path, data: Path, commits: int,
                days: float | None = None) -> None:
    """Each file's count of the commits (merges left out) before its report's base commit that
    changed it: the last ``commits`` of them, or with ``days`` those of the ``days`` days before
    the base commit (commit rates differ tenfold between repositories), read from the
    repository's mirror. A mirror that lacks an object of that history (a snapshot may leave its
    largest out) gives the commits read before it, and says so."""
    for s, base_commit, mirror in with_mirrors(studies, mirrors, data):
        window = [f"--max-count={commits}"] if days is None else \
            [f"--since=@{commit_time(mirror, base_commit) - int(days * DAY_SECONDS)}"]
        done = subprocess.run(["git", "log", "--no-merges", "--format=", "--name-only",
                               *window, base_commit], cwd=mirror, capture_output=True, text=True)
        if done.returncode:
            print(f"{s.instance}: history read in part ({done.stderr.strip()})", file=sys.stderr)
        changed = Counter(line for line in done.stdout.splitlines() if line)
        for f in s.files:
            f.commits = changed.get(f.path, 0)


def file_score(f: FileView, rule: Rule) -> float:
    s = f.scores + [0.0, 0.0]
    more = math.log1p(f.chunks - 1) / math.log1p(MORE_SCALE)
    churn = math.log1p(f.commits) / math.log1p(CHURN_SCALE)
    total = s[0] + rule.second * max(s[1], 0.0) + rule.third * max(s[2], 0.0) + \
        (rule.hint * f.path_hint + rule.whole * f.file_norm + rule.spread * more
         + rule.churn * churn) * f.kind_prior + rule.flow * f.called
    if rule.size and f.lines:
        total -= rule.size * math.log10(max(f.lines, 100) / 100)
    prior = f.kind_prior ** rule.kind
    return total * prior if total >= 0 else total / prior


SIGNALS = {
    "best chunk": lambda f: f.scores[0],
    "whole-file BM25": lambda f: f.file_norm,
    "best chunk BM25": lambda f: f.best_bm25,
    "best chunk vector": lambda f: f.best_vector,
}


def gold_rank(s: Study, rule: Rule | Callable[[FileView], float]) -> int | None:
    # Ties keep the pool's order of first appearance, as ``group_files``'s stable sort does.
    key = rule if callable(rule) else functools.partial(file_score, rule=rule)
    order = sorted(s.files, key=lambda f: -key(f))[:DEPTH]
    return next((i for i, f in enumerate(order, start=1) if f.path in s.gold), None)


def figures(studies: Iterable[Study], rule: Rule | dict[str, Rule] | Callable[[FileView], float]
            ) -> dict[str, float]:
    ranks = [gold_rank(s, rule[s.repo] if isinstance(rule, dict) else rule) for s in studies]
    n = max(len(ranks), 1)
    out = {f"R@{c}": round(sum(r is not None and r <= c for r in ranks) / n, 3) for c in CUTOFFS}
    out["MRR"] = round(sum(1.0 / r for r in ranks if r) / n, 3)
    return out


def grid(sized: bool) -> list[Rule]:
    return [Rule(*values) for values in itertools.product(
        (0.0, 0.1, 0.2, 0.3, 0.5), (0.0, 0.1, 0.2), (0.0, 0.15, 0.3, 0.6), (0.0, 0.1, 0.2),
        (0.0, 0.2, 0.4), (0.0, 1.0), (0.0, 0.05, 0.1, 0.2) if sized else (0.0,), (0.0,),
        (0.0, 0.1, 0.2) if sized else (0.0,))]


FAMILIES = {"second": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5), "third": (0.0, 0.1, 0.2),
            "hint": (0.0, 0.15, 0.3, 0.6), "spread": (0.0, 0.1, 0.2), "whole": (0.0, 0.2, 0.4),
            "kind": (0.0, 1.0), "size": (0.0, 0.05, 0.1, 0.2), "flow": (0.0, 0.1, 0.2, 0.3),
            "churn": (0.0, 0.05, 0.1, 0.2, 0.3)}
# Families read from the mirrors.
FROM_MIRRORS = frozenset({"size", "churn"})


def held_out(studies: Sequence[Study], rules: Sequence[Rule]) -> dict[str, Rule]:
    """The rule chosen for each repository on the others (``choose``)."""
    return {held: choose([s for s in studies if s.repo != held], rules)
            for held in sorted({s.repo for s in studies})}


def choose(studies: Sequence[Study], rules: Sequence[Rule]) -> Rule:
    """The rule with the best MRR on ``studies`` whose R@5 is no lower than the shipped
    rule's; ties to the one nearest the shipped rule."""
    floor = figures(studies, Rule())["R@5"]
    scored = [(figures(studies, r), r) for r in rules]
    allowed = [(f, r) for f, r in scored if f["R@5"] >= floor]
    return max(allowed, key=lambda fr: (fr[0]["MRR"], fr[0]["R@1"], -fr[1].distance()))[1]


def parse_rule(text: str) -> Rule:
    values = {k: float(v) for k, v in (item.split("=") for item in text.split(",") if item)}
    return replace(Rule(), **values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--show", action="store_true", help="each report's gold rank")
    parser.add_argument("--score", default="", help="score one rule (k=v,...) per repository")
    parser.add_argument("--mirrors", type=Path, default=None,
                        help="read each file's length at the report's base commit (``size``) "
                             "and its recent changes (``churn``) from these mirrors")
    parser.add_argument("--data", type=Path, default=DEV)
    parser.add_argument("--history", type=int, default=500, metavar="N",
                        help="with --mirrors, count each file's changes among the last N "
                             "commits before the base commit (``churn``; default 500)")
    parser.add_argument("--history-days", type=float, default=None, metavar="D",
                        help="with --mirrors, count them among the commits of the D days before "
                             "the base commit instead (a window in time, not in commits)")
    args = parser.parse_args()
    studies = [study(p) for r in args.reports for p in json.loads(r.read_text()).get("pools", [])]
    if args.mirrors:
        add_lengths(studies, args.mirrors, args.data)
        add_history(studies, args.mirrors, args.data, args.history, args.history_days)
    repos = sorted({s.repo for s in studies})
    print(f"{len(studies)} pools over {repos}")
    shipped = Rule()
    signals = {**SIGNALS, "commits": lambda f: f.commits} if args.mirrors else SIGNALS
    for name, signal in signals.items():
        print(f"files by {name} alone: {figures(studies, signal)}")
    if args.score:
        rule = parse_rule(args.score)
        for repo in [*repos, "all"]:
            chosen = [s for s in studies if repo in ("all", s.repo)]
            print(f"{repo:10} shipped {figures(chosen, shipped)}  {rule.label()} "
                  f"{figures(chosen, rule)}")
        if args.show:
            for s in studies:
                print(f"  {s.instance}: {gold_rank(s, shipped)} -> {gold_rank(s, rule)}")
        return 0
    for name, values in FAMILIES.items():
        if name in FROM_MIRRORS and not args.mirrors:
            continue
        picked_one = held_out(studies, [replace(shipped, **{name: v}) for v in values])
        print(f"{name} alone, held out: {figures(studies, picked_one)}; chose "
              + ", ".join(f"{repo}: {getattr(r, name):g}" for repo, r in picked_one.items()))
    rules = grid(bool(args.mirrors))
    picked: dict[str, Rule] = {}
    for held in repos:
        train = [s for s in studies if s.repo != held]
        test = [s for s in studies if s.repo == held]
        picked[held] = choose(train, rules)
        print(f"{held} held out: chose {picked[held].label()}; train "
              f"{figures(train, shipped)} -> {figures(train, picked[held])}; held out "
              f"{figures(test, shipped)} -> {figures(test, picked[held])}")
    print(f"held out, pooled: shipped {figures(studies, shipped)} -> {figures(studies, picked)}")
    everywhere = choose(studies, rules)
    print(f"best on all (not held out): {everywhere.label()} {figures(studies, everywhere)}")
    if args.show:
        for s in studies:
            print(f"  {s.instance}: {gold_rank(s, shipped)} -> {gold_rank(s, picked[s.repo])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

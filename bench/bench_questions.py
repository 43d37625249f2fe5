"""Everyday developer questions: does search put the function that does the work first?

Data: ``bench/questions/*.jsonl`` (``bench/questions/README.md``): questions such as "how does a
session follow redirects" over public repositories, each answered by one hand-checked
definition (path, qualified symbol, lines) at a pinned commit.

Protocol: each repository's mirror is cloned (shared objects, no checkout), a branch ``bench``
is set to the pinned commit and freshmark indexes it; every question then goes through the
service calls the CLI makes, with k=10: ``search`` (chunks) and ``search_files`` (files).

Systems, on the same index:

- ``freshmark``: the default hybrid search (lexical and vector channels, rerank, verification);
- ``bm25``: a plain chunk BM25 over the same stored chunks (the chunk texts of the file kinds a
  default search covers, words lowercased, no code-aware tokens, no kinds, no rerank, no
  vectors); its files are the distinct paths of its chunk ranking.

Figures (hit rules in ``bench/question_set.py``):

- symbol ``Acc@k`` (k = 1, 3, 5): share of questions with an answering chunk in the top k. A
  chunk answers when its path is the answer's and its symbol is the answer's, or when it is not
  a container outline and at least half of its lines lie within the answer's lines; a class
  outline or module block spanning the answer does not count;
- file ``R@k`` (k = 1, 5): share of questions whose answer file is in the top k files;
- ``MRR``: mean reciprocal rank of the first answering chunk in the top 10 (0 when none);
  ``file_MRR`` (JSON only): the same for files.

Each figure is given overall, per repository and per wording (``code-like``: the question
reuses the answer's name; ``paraphrase``: it does not). For the questions a system does not
answer at rank 1, the script also counts what took rank 1: a chunk of the answer's file or of
another file, by chunk kind (class outlines, module blocks, methods, ...).

Usage::

    .venv/bin/python bench/bench_questions.py [--mirrors /work/.mirror] [--repos psf/requests,gin]
        [--limit N] [--embedder minilm|hashing] [--questions DIR] [--home DIR] [--json OUT]
        [--show-misses] [--dump-pools] [--by-name]

``--questions bench/questions/heldout`` runs the held-out set: questions on other
repositories, written after the ranking was tuned on ``bench/questions`` and never used to
tune it (``bench/questions/heldout/README.md``).

``--dump-pools`` keeps each question's reranked candidate pools (the chunk search's and the
file search's, every candidate's features and whether it answers) in the ``--json`` report, so
that a ranking rule can be studied offline without searching again.

``--by-name`` asks for each answer by its own name instead (``resolve_envvar_value``,
``registerTypeAdapter``: the last part of its symbol), as a developer who knows the name looks
it up; the scope is then ``by-name`` and a bare name several definitions share counts only the
question's own answer.

``--repos`` takes ``owner/name`` or the name alone. ``--home`` keeps the store and the
embedding cache between runs (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_localization import PoolRecorder, mirror_for
from plain_bm25 import PlainBm25
from question_set import (
    QUESTIONS_DIR,
    Hit,
    Question,
    file_hit,
    first_rank,
    load_questions,
    symbol_hit,
)

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import load_config
from freshmark.core.request import DEFAULT_KINDS, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE, ChunkRecord
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.repos import RepoRef
from freshmark.services.retrieval.search import search, search_files

DEPTH = 10
SYMBOL_CUTOFFS = (1, 3, 5)
FILE_CUTOFFS = (1, 5)
BRANCH = "bench"
SYSTEMS = ("freshmark", "bm25")
COLUMNS = ("Acc@1", "Acc@3", "Acc@5", "fR@1", "fR@5", "MRR")


@dataclass
class Scores:
    """Running totals of one system over one scope."""

    n: int = 0
    symbol_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(SYMBOL_CUTOFFS, 0))
    file_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(FILE_CUTOFFS, 0))
    reciprocal_ranks: float = 0.0
    file_reciprocal_ranks: float = 0.0

    def add(self, symbol_rank: int | None, file_rank: int | None) -> None:
        self.n += 1
        for cutoff in SYMBOL_CUTOFFS:
            self.symbol_hits[cutoff] += symbol_rank is not None and symbol_rank <= cutoff
        for cutoff in FILE_CUTOFFS:
            self.file_hits[cutoff] += file_rank is not None and file_rank <= cutoff
        self.reciprocal_ranks += 1.0 / symbol_rank if symbol_rank else 0.0
        self.file_reciprocal_ranks += 1.0 / file_rank if file_rank else 0.0

    def row(self) -> dict[str, float]:
        n = max(self.n, 1)
        out = {f"Acc@{c}": self.symbol_hits[c] / n for c in SYMBOL_CUTOFFS}
        out |= {f"fR@{c}": self.file_hits[c] / n for c in FILE_CUTOFFS}
        out["MRR"] = self.reciprocal_ranks / n
        out["file_MRR"] = self.file_reciprocal_ranks / n
        out["n"] = self.n
        return out


@dataclass
class Ranked:
    """What one system answered to one question: chunks and files, best first."""

    chunks: list[Hit]
    files: list[str]

    def ranks(self, question: Question) -> tuple[int | None, int | None]:
        symbol_rank = first_rank(symbol_hit(question, h) for h in self.chunks[:DEPTH])
        file_rank = first_rank(file_hit(question, p) for p in self.files[:DEPTH])
        return symbol_rank, file_rank


def _hit(record: ChunkRecord) -> Hit:
    return Hit(record.path, record.symbol, record.start_line, record.end_line, record.kind)


# -- the plain baseline ----------------------------------------------------------------------
_PLAIN_WORD = re.compile(r"\w+")


def plain_tokens(text: str) -> list[str]:
    return [w.lower() for w in _PLAIN_WORD.findall(text)]


class PlainBaseline:
    """Chunk BM25 over the stored chunk texts: what a naive index of the repository answers.

    Plain Okapi BM25 (``plain_bm25``) with a plain word tokenizer and none of the search's
    rerank, kinds or vectors.
    """

    def __init__(self, records: Sequence[ChunkRecord]) -> None:
        self.bm25 = PlainBm25()
        self.records = {r.id: r for r in records if r.file_kind in DEFAULT_KINDS}
        for doc_id, record in self.records.items():
            self.bm25.add(doc_id, plain_tokens(record.text))

    def ask(self, query: str) -> Ranked:
        terms = list(dict.fromkeys(plain_tokens(query)))
        found = [self.records[i] for i, _ in self.bm25.search(terms, 20 * DEPTH)]
        return Ranked([_hit(r) for r in found[:DEPTH]], list(dict.fromkeys(r.path for r in found)))


# -- repositories ----------------------------------------------------------------------------
def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def clone_at(mirror: Path, home: Path, repo: str, commit: str) -> Path:
    """A shared clone of ``mirror`` under ``home`` with branch ``bench`` at ``commit``."""
    clone = home / "repos" / repo.replace("/", "+")
    if not clone.exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(clone))
    git("update-ref", f"refs/heads/{BRANCH}", commit, cwd=clone)
    return clone


# -- the run ---------------------------------------------------------------------------------
@dataclass
class Run:
    settings: Settings
    store: Store
    embedder: object
    totals: dict[str, Scores] = field(default_factory=lambda: defaultdict(Scores))
    report: dict = field(default_factory=lambda: {"questions": [], "index_seconds": {}})

    dump_pools: bool = False

    def ask_freshmark(self, clone: Path, query: str, question: Question | None = None
                      ) -> Ranked:
        request = SearchRequest.build(query, k=DEPTH, branch=BRANCH)
        common = dict(settings=self.settings, store=self.store, embedder=self.embedder,
                      count=False)
        with PoolRecorder() as recorder:
            chunks = search(request, str(clone), **common)  # type: ignore[arg-type]
            files = search_files(request, str(clone), **common)  # type: ignore[arg-type]
        if self.dump_pools and question is not None:
            self.keep_pools(question, recorder.pools)
        return Ranked([_hit(r.record) for r in chunks.results], [f.path for f in files.files])

    def keep_pools(self, question: Question, pools: list[dict]) -> None:
        """The chunk search's and the file search's pools, each candidate marked with whether
        it answers the question (``answers``) and lies in an answer's file (``in_file``)."""
        for pool in pools:
            for c in pool["candidates"]:
                hit = Hit(c["path"], c["symbol"], c["start"], c["end"], c["chunk_kind"])
                c["answers"] = symbol_hit(question, hit)
                c["in_file"] = file_hit(question, c["path"])
        chunk_pool, file_pool = pools
        self.report.setdefault("pools", []).append({
            "id": question.id, "repo": question.repo, "wording": question.wording,
            "question": question.question, "chunks": chunk_pool, "files": file_pool})

    def index(self, repo: str, clone: Path) -> list[ChunkRecord]:
        started = time.perf_counter()
        index_repo(IndexRequest(clone, branch=BRANCH), settings=self.settings,
                   config=load_config(None), store=self.store,
                   embedder=self.embedder)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        collection = self.store.require_branch(RepoRef.of(GitRepo.open(clone), None).key, BRANCH)
        records = list(collection.iter_records(where={"status": LIVE}, include_text=True))
        self.report["index_seconds"][repo] = {"seconds": round(seconds, 1),
                                              "chunks": len(records)}
        print(f"{repo}: indexed in {seconds:.1f}s, {len(records)} chunks", file=sys.stderr)
        return records

    def evaluate(self, repo: str, questions: list[Question], clone: Path,
                 show_misses: bool) -> None:
        baseline = PlainBaseline(self.index(repo, clone))
        self.ask_freshmark(clone, "warm up")  # the lexical index catches up once
        for question in questions:
            answers = {"freshmark": self.ask_freshmark(clone, question.question, question),
                       "bm25": baseline.ask(question.question)}
            outcome: dict[str, object] = {"id": question.id, "wording": question.wording}
            for system, ranked in answers.items():
                symbol_rank, file_rank = ranked.ranks(question)
                for scope in ("all", repo, question.wording):
                    self.totals[f"{system}|{scope}"].add(symbol_rank, file_rank)
                outcome[system] = {"symbol_rank": symbol_rank, "file_rank": file_rank,
                                   "top": [f"{h.path}::{h.symbol}" for h in ranked.chunks[:3]]}
                if symbol_rank != 1 and ranked.chunks:
                    first = ranked.chunks[0]
                    wrong = self.report.setdefault("rank1_misses", {}).setdefault(system, {})
                    where = "answer file" if file_hit(question, first.path) else "other file"
                    key = f"{where}, {first.kind}"
                    wrong[key] = wrong.get(key, 0) + 1
            self.report["questions"].append(outcome)
            fm = outcome["freshmark"]
            if show_misses and fm["symbol_rank"] != 1:  # type: ignore[index]
                print(f"  {question.id} rank {fm['symbol_rank']}: {question.question}\n"  # type: ignore[index]
                      f"    want {question.answer.path}::{question.answer.symbol}\n"
                      f"    got  {fm['top']}", file=sys.stderr)  # type: ignore[index]


def print_table(totals: dict[str, Scores], scopes: Sequence[str]) -> None:
    print("| scope | system | " + " | ".join(COLUMNS) + " | n |")
    print("|" + "---|" * (len(COLUMNS) + 3))
    for scope in scopes:
        for system in SYSTEMS:
            scores = totals.get(f"{system}|{scope}")
            if scores is None or not scores.n:
                continue
            row = scores.row()
            cells = " | ".join(f"{row[c]:.2f}" for c in COLUMNS)
            print(f"| {scope} | {system} | {cells} | {scores.n} |")


def by_name(question: Question) -> Question:
    """``question`` asked as its answer's own name (the last part of its symbol)."""
    return replace(question, question=question.answer.symbol.rsplit(".", 1)[-1],
                   wording="by-name")


def chosen_questions(questions: list[Question], repos: str, limit: int
                     ) -> dict[str, list[Question]]:
    wanted = {r for r in repos.split(",") if r}
    by_repo: dict[str, list[Question]] = defaultdict(list)
    for question in questions:
        if not wanted or question.repo in wanted or question.repo.split("/")[1] in wanted:
            by_repo[question.repo].append(question)
    return {repo: (qs[:limit] if limit else qs) for repo, qs in sorted(by_repo.items())}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--repos", default="", help="comma-separated owner/name (or name) list")
    parser.add_argument("--limit", type=int, default=0, help="questions per repository")
    parser.add_argument("--embedder", default="minilm", help="minilm (real model) or hashing")
    parser.add_argument("--questions", type=Path, default=QUESTIONS_DIR,
                        help="folder of question files (default bench/questions; the held-out "
                             "set: bench/questions/heldout)")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--show-misses", action="store_true",
                        help="print each question freshmark does not answer at rank 1")
    parser.add_argument("--dump-pools", action="store_true",
                        help="keep each question's reranked candidate pools in the --json report")
    parser.add_argument("--by-name", action="store_true",
                        help="ask for each answer by its own name instead of the question")
    args = parser.parse_args(argv)

    questions = load_questions(args.questions)
    if args.by_name:
        questions = [by_name(q) for q in questions]
    by_repo = chosen_questions(questions, args.repos, args.limit)
    if not by_repo:
        parser.error(f"no questions for repositories {args.repos!r}")
    home = args.home or Path(tempfile.mkdtemp(prefix="fm-questions-"))
    settings = Settings(home=home, embedder=args.embedder)
    run = Run(settings, Store.open(settings), get_embedder(settings.embedder, settings.cache_dir),
              dump_pools=args.dump_pools)
    done = []
    for repo, questions in by_repo.items():
        mirror = mirror_for(args.mirrors, repo)
        if mirror is None:
            print(f"skipping {repo}: no mirror under {args.mirrors}", file=sys.stderr)
            continue
        clone = clone_at(mirror, home, repo, questions[0].commit)
        run.evaluate(repo, questions, clone, args.show_misses)
        done.append(repo)

    embedder_id = run.embedder.id  # type: ignore[attr-defined]
    print(f"\nembedder {embedder_id}; {run.totals['freshmark|all'].n} questions, k={DEPTH}\n")
    print_table(run.totals, ["all", "code-like", "paraphrase", "by-name", *done])
    misses = run.report.get("rank1_misses", {})
    for system, kinds in ((s, misses[s]) for s in SYSTEMS if s in misses):
        summary = ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        print(f"\n{system}, rank 1 when it is not the answer: {summary}")
    if args.json:
        run.report["embedder"] = embedder_id
        run.report["figures"] = {key: scores.row() for key, scores in run.totals.items()}
        args.json.write_text(json.dumps(run.report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

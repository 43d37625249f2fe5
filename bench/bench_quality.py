"""Retrieval quality: MRR and Recall@1/5/10 of BM25 alone, vectors alone, RRF alone and hybrid.

Two sets:

- ``cosqa``: ../shared/eval/cosqa (web queries -> Python functions, one labelled positive each).
  The 552 corpus functions are stored as chunks in a real embedded collection (no git); the
  channels and the hybrid search run exactly as in production.
- ``own``: bench/labelled_queries.json, queries written for a multi-language repository assembled
  from sources on this machine (Python, JavaScript, Go, Rust), committed to a temporary git
  repository and indexed with the real indexer.

Usage::

    .venv/bin/python bench/bench_quality.py [--set cosqa|own|all] [--embedder minilm]
        [--home DIR] [--json OUT] [--show-misses] [--dump-pools]

``--home`` keeps the store and the embedding cache between runs (default: a temporary dir;
pass one to avoid re-embedding). Prints one table per set; ``--json`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import BranchIndex, Store
from freshmark.core.config import load_config
from freshmark.core.embed_text import embedding_text
from freshmark.core.fusion import RerankWeights
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.request import DEFAULT_KINDS, SearchRequest
from freshmark.core.settings import LEXICAL_ENGINES, Settings
from freshmark.core.stamp import ChunkRecord, sha256_hex, utc_now_iso
from freshmark.core.tokenize import query_terms
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.channels import vector_channel
from freshmark.services.retrieval.hybrid import hybrid_search

# The shared evaluation sets sit beside the checkout (or beside the worktrees' folder).
COSQA = next((base / "shared" / "eval" / "cosqa" / "cosqa_dev_retrieval.json"
              for base in (ROOT.parent, ROOT.parent.parent)
              if (base / "shared" / "eval" / "cosqa").is_dir()), ROOT.parent / "shared")
LABELLED = ROOT / "bench" / "labelled_queries.json"
CUTOFFS = (1, 5, 10)
DEPTH = 10
RRF_ONLY = RerankWeights(rrf=1.0, bm25=0.0, vector=0.0, vector_long=0.0, symbol=0.0, path=0.0,
                         length=0.0, file=0.0, hint=0.0, kind=0.0, substance=0.0,
                         question_model=False)

Relevant = Callable[[ChunkRecord], bool]


@dataclass
class Scores:
    """Reciprocal ranks and hits at each cutoff, summed over queries."""

    queries: int = 0
    reciprocal_rank: float = 0.0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CUTOFFS, 0))
    misses: list[str] = field(default_factory=list)

    def add(self, query_id: str, ranked: Sequence[ChunkRecord], relevant: Relevant) -> None:
        self.queries += 1
        rank = next((i for i, r in enumerate(ranked[:DEPTH], start=1) if relevant(r)), None)
        if rank is None:
            self.misses.append(query_id)
            return
        self.reciprocal_rank += 1.0 / rank
        for cutoff in CUTOFFS:
            self.hits[cutoff] += rank <= cutoff

    def summary(self) -> dict[str, float]:
        n = max(self.queries, 1)
        return {"mrr": round(self.reciprocal_rank / n, 4),
                **{f"recall@{c}": round(self.hits[c] / n, 4) for c in CUTOFFS}}


class MemoEmbedder:
    """Embeds each query once although several systems ask for it."""

    def __init__(self, inner: object):
        self.inner = inner
        self.id = getattr(inner, "id", "")
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)  # type: ignore[attr-defined]

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._memo:
            self._memo[text] = self.inner.embed_query(text)  # type: ignore[attr-defined]
        return self._memo[text]


def run_systems(
    index: BranchIndex, embedder: MemoEmbedder, queries: list[tuple[str, str, Relevant]],
    settings: Settings, pools: list[dict] | None = None,
) -> dict[str, Scores]:
    """Score every system on every query over the same collection (hybrid through the lexical
    engine ``settings`` names, as is "bm25": its channel alone). With ``pools``, each query's
    whole reranked hybrid pool is appended to it (every candidate's features, whether it is
    relevant), for re-scoring offline."""
    engine = lexical_engine(settings)  # as a search process holds it
    lexical = engine.channel(index)
    systems = {name: Scores() for name in ("bm25", "vector", "rrf", "hybrid")}
    for query_id, text, relevant in queries:
        hits, _ = lexical.search(query_terms(text), DEPTH)
        by_id = {r.id: r for r in index.get(ids=[h.id for h in hits])} if hits else {}
        systems["bm25"].add(query_id, [by_id[h.id] for h in hits if h.id in by_id], relevant)
        vector_hits = vector_channel(index, embedder.embed_query(text), DEPTH, False, DEFAULT_KINDS)
        systems["vector"].add(query_id, [r for r, _ in vector_hits], relevant)
        for name, weights in (("rrf", RRF_ONLY), ("hybrid", None)):
            kwargs = {"weights": weights} if weights else {}
            found, _ = hybrid_search(index, embedder, SearchRequest.build(text, k=DEPTH),
                                     lexical=engine, **kwargs)
            systems[name].add(query_id, [c.record for c in found], relevant)
        if pools is not None:
            pools.append(_pool(index, embedder, engine, query_id, text, relevant))
    return systems


def _pool(index: BranchIndex, embedder: MemoEmbedder, engine: object, query_id: str,
          text: str, relevant: Relevant) -> dict:
    """The query's hybrid ranking of its whole pool (k larger than any pool), explained."""
    found, _ = hybrid_search(index, embedder, SearchRequest.build(text, k=100),
                             k=10_000, lexical=engine)  # type: ignore[arg-type]
    return {"id": query_id, "query": text,
            "candidates": [{"path": c.record.path, "symbol": c.record.symbol,
                            "relevant": relevant(c.record), **c.explain(), **c.features}
                           for c in found]}


# -- CoSQA ------------------------------------------------------------------------------------
def cosqa_records(corpus: dict[str, str]) -> list[ChunkRecord]:
    records = []
    for code_id, code in corpus.items():
        name = re.search(r"def\s+(\w+)", code)
        signature = next((line.strip() for line in code.splitlines() if "def " in line), "")
        records.append(ChunkRecord(
            repo="cosqa", branch="dev", commit="0" * 40, path=f"cosqa/{code_id}.py",
            symbol=name.group(1) if name else "<module>", start_line=1,
            end_line=code.count("\n") + 1, indexed_at=utc_now_iso(), blob_sha="0" * 40,
            content_sha256=sha256_hex(code), kind="function", language="python",
            signature=signature, id=code_id, text=code, text_sha256=sha256_hex(code),
            updated_gen=1,
        ))
    return records


def stored_collection(store: Store, key: str, records: list[ChunkRecord],
                      embedder: MemoEmbedder, vectors_file: Path) -> BranchIndex:
    """A collection holding ``records``; vectors come from ``vectors_file`` when it matches."""
    existing = store.branch(key, "bench")
    if existing is not None:
        if existing.manifest.embedder == embedder.id and existing.count() == len(records):
            return existing
        store.drop_branch(key, "bench")
    texts = [embedding_text(r) for r in records]  # what the indexer embeds for each
    digest = sha256_hex("\0".join(texts) + embedder.id)[:16]
    cached = vectors_file.with_suffix(f".{digest}.npy")
    if cached.exists():
        vectors = np.load(cached)
    else:
        vectors = embedder.embed(texts)
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, vectors)
    manifest = Manifest(repo=key, repo_key=key, branch="bench", embedder=embedder.id,
                        collection=collection_name(key, "bench"), commit="0" * 40,
                        created_at=utc_now_iso())
    index = store.create_branch(manifest)
    index.upsert(records, vectors)
    manifest.generation = 1
    index.save_manifest(manifest)
    return index


def bench_cosqa(settings: Settings, embedder: MemoEmbedder,
                pools: list[dict] | None = None) -> dict[str, Scores]:
    data = json.loads(COSQA.read_text())
    store = Store.open(settings)
    index = stored_collection(store, "cosqa-dev", cosqa_records(data["corpus"]), embedder,
                              settings.cache_dir / "bench" / "cosqa")
    queries = [(qid, text, _in(set(data["qrels"][qid])))
               for qid, text in data["queries"].items()]
    return run_systems(index, embedder, queries, settings, pools)


def _in(relevant_ids: set[str]) -> Relevant:
    return lambda record: record.id in relevant_ids


# -- own labelled set over a multi-language repository ---------------------------------------
def assemble_repo(target: Path, sources: dict[str, dict]) -> list[str]:
    """Copy each source tree into ``target`` and commit it; returns the trees that were missing."""
    site = Path(sysconfig.get_paths()["purelib"])
    missing = []
    for dest, spec in sources.items():
        origin = str(spec["from"])
        src = site / origin.removeprefix("site-packages/") if origin.startswith(
            "site-packages/") else Path(origin)
        if not src.is_dir():
            missing.append(dest)
            continue
        for file in sorted(src.rglob("*")):
            if file.suffix in spec["ext"] and "__pycache__" not in file.parts and file.is_file():
                out = target / dest / file.relative_to(src)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file, out)
    git = ["git", "-C", str(target), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sources"], check=True)
    return missing


def _expected(expected: list[dict[str, str]]) -> Relevant:
    pairs = {(e["path"], e["symbol"]) for e in expected}
    return lambda record: (record.path, record.symbol) in pairs


def bench_own(settings: Settings, embedder: MemoEmbedder, work: Path,
              pools: list[dict] | None = None) -> dict[str, Scores]:
    spec = json.loads(LABELLED.read_text())
    repo = work / "polyglot"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        missing = assemble_repo(repo, spec["sources"])
        if missing:
            print(f"  source trees not on this machine (their queries are skipped): {missing}")
    started = time.perf_counter()
    summary = index_repo(IndexRequest(repo), settings=settings, config=load_config(None),
                         embedder=embedder.inner)  # type: ignore[arg-type]
    store = Store.open(settings)
    index = next(store.branch(m.repo_key, m.branch) for m in store.list_manifests()
                 if m.repo_path == str(repo))
    print(f"  {index.count()} chunks ({summary.chunks_added} added by this run, "
          f"{time.perf_counter() - started:.1f} s)")
    present = tuple(f"{d}/" for d in spec["sources"] if (repo / d).is_dir())
    queries = [(q["id"], q["query"], _expected(q["expected"])) for q in spec["queries"]
               if q["expected"][0]["path"].startswith(present)]
    return run_systems(index, embedder, queries, settings, pools)  # type: ignore[arg-type]


# -- report -----------------------------------------------------------------------------------
def print_table(title: str, systems: dict[str, Scores], show_misses: bool) -> None:
    print(f"\n{title} ({systems['bm25'].queries} queries, top {DEPTH})")
    print(f"  {'system':<8} {'MRR':>7} " + " ".join(f"{'R@' + str(c):>7}" for c in CUTOFFS))
    for name, scores in systems.items():
        s = scores.summary()
        print(f"  {name:<8} {s['mrr']:>7.4f} "
              + " ".join(f"{s[f'recall@{c}']:>7.4f}" for c in CUTOFFS))
        if show_misses and scores.misses:
            print(f"           missed: {', '.join(scores.misses)}")
    hybrid = systems["hybrid"].summary()["mrr"]
    for other in ("bm25", "vector"):
        base = systems[other].summary()["mrr"]
        gain = (hybrid - base) / base * 100 if base else float("inf")
        print(f"  hybrid vs {other}: MRR {hybrid - base:+.4f} ({gain:+.1f}%)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("cosqa", "own", "all"), default="all")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--lexical", choices=LEXICAL_ENGINES, default=LEXICAL_ENGINES[0])
    parser.add_argument("--dump-pools", action="store_true",
                        help="keep each query's reranked hybrid pool in the --json report")
    args = parser.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="fm-quality-"))
    settings = Settings(home=home, embedder=args.embedder, lexical=args.lexical)
    embedder = MemoEmbedder(get_embedder(args.embedder, settings.cache_dir))
    print(f"embedder: {embedder.id}; lexical: {settings.lexical}; store: {settings.chroma_path}")
    results: dict[str, dict[str, dict[str, float]]] = {}
    pools: dict[str, list[dict]] = {"cosqa": [], "own": []}
    if args.set in ("cosqa", "all"):
        systems = bench_cosqa(settings, embedder, pools["cosqa"] if args.dump_pools else None)
        print_table("CoSQA dev", systems, args.show_misses)
        results["cosqa"] = {name: s.summary() for name, s in systems.items()}
    if args.set in ("own", "all"):
        systems = bench_own(settings, embedder, home / "work",
                            pools["own"] if args.dump_pools else None)
        print_table("labelled multi-language set", systems, args.show_misses)
        results["own"] = {name: s.summary() for name, s in systems.items()}
    if args.json:
        report: dict[str, object] = {**results}
        if args.dump_pools:
            report["pools"] = pools
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

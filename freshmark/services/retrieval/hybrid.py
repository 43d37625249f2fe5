"""Hybrid search over one branch collection: BM25 + vectors, RRF, de-dup, rerank (SPEC §6).

Both channels read the same collection and the same filters: live chunks only, excluded file
kinds (generated, vendored, backup, fixture) left out unless asked for, tombstoned chunks only
with ``include_history``. Lexical hits are re-read from Chroma by id, so every result's status
and stamp come from the one source of truth, never from the in-memory index.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from freshmark.adapters.lexical.index import LexicalHit
from freshmark.adapters.lexical.registry import Lexical, lexical_for
from freshmark.adapters.store.chroma import BranchIndex
from freshmark.core.errors import BadInput
from freshmark.core.fusion import (
    DEFAULT_WEIGHTS,
    Candidate,
    FileCandidate,
    RerankWeights,
    dedup,
    diversify,
    fuse,
    group_files,
    rerank,
)
from freshmark.core.ports import QueryEmbedder
from freshmark.core.query import QueryPlan, plan_query
from freshmark.core.request import CHANNELS, resolve_kinds, validate_k, validate_query
from freshmark.core.stamp import ChunkRecord
from freshmark.services.retrieval.channels import (
    _fill_missing_scores,
    lexical_channel,
    vector_channel,
)

# Each channel fetches this many times k candidates (seed 001 §3.2: room for the rerank); for a
# long query (an issue report) never fewer than MIN_POOL, since the file at fault is often
# found through a chunk that ranks low on its own.
CHANNEL_FACTOR = 2
MIN_POOL = 40
# Files whose best chunk joins the candidates from the whole-file BM25 ranking.
FILE_POOL = 20
# Chunks one file may hold among a chunk answer's results before other files get their turn.
MAX_PER_FILE = 2


@dataclass
class SearchTimings:
    """Wall time of each stage of one search, in seconds.

    ``lexical_seconds`` includes the generation check (and any catch-up fetch) and the re-read
    of lexical hits; ``vector_seconds`` includes the similarity look-up of lexical-only hits.
    """

    embed_seconds: float = 0.0
    lexical_seconds: float = 0.0
    vector_seconds: float = 0.0
    fusion_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        return self.embed_seconds + self.lexical_seconds + self.vector_seconds + self.fusion_seconds

    def to_dict(self) -> dict[str, float]:
        return {name: round(value, 6) for name, value in asdict(self).items()}


def embed_plan(embedder: QueryEmbedder, plan: QueryPlan) -> np.ndarray:
    """The query vector: one embedding, or for a long query the weighted mean of its windows'
    embeddings (unit length), so the vector channel reads the whole report."""
    if len(plan.windows) == 1:
        return np.asarray(embedder.embed_query(plan.windows[0]), dtype=np.float32)
    embed_many = getattr(embedder, "embed", None)
    rows = np.asarray(embed_many(plan.windows) if embed_many is not None else
                      [embedder.embed_query(w) for w in plan.windows], dtype=np.float32)
    pooled = np.asarray(plan.window_weights, dtype=np.float32) @ rows
    return pooled / (float(np.linalg.norm(pooled)) or 1.0)


# Rerank weights with the other channel's evidence switched off: ``bm25`` and ``vectors``
# measure one channel alone (with the same kind preference, de-duplication and per-file cap).
_CHANNEL_WEIGHTS = {
    "bm25": {"vector": 0.0, "vector_long": 0.0},
    "vectors": {"rrf": 0.0, "bm25": 0.0, "symbol": 0.0, "path": 0.0, "file": 0.0, "hint": 0.0,
                "frame": 0.0},
}


def _channel_weights(weights: RerankWeights, channels: str) -> RerankWeights:
    if channels not in CHANNELS:
        raise BadInput(f"channels must be one of {', '.join(CHANNELS)}, not {channels!r}")
    return replace(weights, **_CHANNEL_WEIGHTS.get(channels, {}))


def _ranked_pool(
    index: BranchIndex,
    embedder: QueryEmbedder,
    plan: QueryPlan,
    n: int,
    *,
    include_history: bool,
    kinds: frozenset[str],
    lexical: Lexical | None,
    cache_dir: Path | None,
    weights: RerankWeights,
    channels: str,
    timings: SearchTimings,
    whole_files: bool,
) -> list[Candidate]:
    """Every candidate both channels found (``n`` each, plus with ``whole_files`` the best chunk
    of the best whole files, and their file scores as a feature), fused, de-duplicated and
    reranked, best first."""
    use_vectors, use_lexical = channels != "bm25", channels != "vectors"
    started = time.perf_counter()
    vector = embed_plan(embedder, plan) if use_vectors else np.zeros(0, dtype=np.float32)
    timings.embed_seconds = time.perf_counter() - started

    started = time.perf_counter()
    if lexical is None:
        lexical = lexical_for(index, cache_dir)
    else:
        lexical.refresh(index)
    refresh_seconds = time.perf_counter() - started

    started = time.perf_counter()
    vector_hits: list[tuple[ChunkRecord, float]] = []
    if use_vectors:
        share = lexical.passing_share(include_history, False, kinds)
        vector_hits = vector_channel(index, vector, n, include_history, kinds, share)
    timings.vector_seconds = time.perf_counter() - started

    started = time.perf_counter()
    known = {record.id: record for record, _ in vector_hits}
    lexical_args: dict[str, Any] = dict(include_history=include_history, include_excluded=True,
                                        score_ids=list(known), kinds=kinds, weights=plan.weights)
    file_scores: dict[str, float] = {}
    file_hits: list[LexicalHit] = []
    if use_lexical and whole_files:
        hits, bm25_of, files = lexical.search_with_files(plan.terms, n, FILE_POOL,
                                                         **lexical_args)
        file_scores, file_hits = files.scores, files.best_chunks
        for doc_id, score in files.best_chunk_scores.items():
            bm25_of.setdefault(doc_id, score)
    else:
        hits, bm25_of = lexical.search(plan.terms, n, **lexical_args)
    lexical_hits = lexical_channel(index, lexical, hits, known, include_history, kinds) \
        if use_lexical else []
    known.update({r.id: r for r, _ in lexical_hits})
    whole_file_hits = lexical_channel(index, lexical, file_hits, known, include_history, kinds)
    timings.lexical_seconds = refresh_seconds + time.perf_counter() - started

    started = time.perf_counter()
    records = {r.id: r for r, _ in [*vector_hits, *lexical_hits, *whole_file_hits]}
    rankings = [[(r.id, s) for r, s in lexical_hits], [(r.id, s) for r, s in vector_hits]]
    if whole_file_hits:
        rankings.append([(r.id, file_scores.get(r.path, 0.0)) for r, _ in whole_file_hits])
    candidates = dedup(fuse(records, *rankings))
    fill_started = time.perf_counter()
    if use_vectors:
        _fill_missing_scores(index, vector, candidates, bm25_of)
    else:
        for candidate in candidates:
            candidate.bm25 = bm25_of.get(candidate.record.id, candidate.bm25 or 0.0)
    fill_seconds = time.perf_counter() - fill_started
    ranked = rerank(candidates, plan, _channel_weights(weights, channels),
                    file_scores=file_scores if use_lexical else {})
    timings.vector_seconds += fill_seconds
    timings.fusion_seconds = time.perf_counter() - started - fill_seconds
    return ranked


def hybrid_search(
    index: BranchIndex,
    embedder: QueryEmbedder,
    query: str,
    k: int = 5,
    *,
    include_history: bool = False,
    include_excluded: bool = False,
    kinds: Iterable[str] | str | None = None,
    channels: str = "hybrid",
    max_per_file: int = MAX_PER_FILE,
    lexical: Lexical | None = None,
    cache_dir: Path | None = None,
    weights: RerankWeights = DEFAULT_WEIGHTS,
) -> tuple[list[Candidate], SearchTimings]:
    """The ``k`` best chunks for ``query`` and the time each stage took.

    ``kinds``: the file kinds to search (default ``DEFAULT_KINDS``; the ranking prefers source
    over tests over docs either way). ``channels``: ``hybrid`` (default), or ``bm25`` /
    ``vectors`` alone, for measurement. ``max_per_file``: chunks of one file among the
    results before other files get their turn (0: no cap). ``lexical``: a lexical index to use
    (it is refreshed first); by default this process's shared one. Raises ``BadInput`` for an
    empty, binary or over-long query, a ``k`` outside 1..MAX_K or an unknown kind.
    """
    text, k = validate_query(query), validate_k(k)
    timings = SearchTimings()
    plan = plan_query(text)
    # A question or a few names asks for a function: its own chunks rank it. An issue report
    # asks which code is at fault: evidence spread over a file counts, and the pool is wider.
    pool = max(CHANNEL_FACTOR * k, MIN_POOL) if plan.long else CHANNEL_FACTOR * k
    ranked = _ranked_pool(
        index, embedder, plan, pool,
        include_history=include_history, kinds=resolve_kinds(kinds, include_excluded),
        lexical=lexical, cache_dir=cache_dir, weights=weights, channels=channels,
        timings=timings, whole_files=plan.long,
    )
    return diversify(ranked, k, max_per_file), timings


def file_search(
    index: BranchIndex,
    embedder: QueryEmbedder,
    query: str,
    k: int = 5,
    *,
    include_history: bool = False,
    include_excluded: bool = False,
    kinds: Iterable[str] | str | None = None,
    channels: str = "hybrid",
    chunks_per_file: int = 3,
    lexical: Lexical | None = None,
    cache_dir: Path | None = None,
    weights: RerankWeights = DEFAULT_WEIGHTS,
) -> tuple[list[FileCandidate], SearchTimings]:
    """The ``k`` best files for ``query``, each with its best chunks (up to
    ``chunks_per_file``), from the candidates ``hybrid_search`` would rank with whole-file
    evidence: a file scores by its best chunk plus a little for its second best."""
    text, k = validate_query(query), validate_k(k)
    timings = SearchTimings()
    ranked = _ranked_pool(
        index, embedder, plan_query(text), max(4 * k, MIN_POOL),
        include_history=include_history, kinds=resolve_kinds(kinds, include_excluded),
        lexical=lexical, cache_dir=cache_dir, weights=weights, channels=channels,
        timings=timings, whole_files=True,
    )
    return group_files(ranked, chunks_per_file)[:k], timings

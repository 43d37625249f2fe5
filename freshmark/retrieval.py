"""Hybrid search over one branch collection: BM25 + vectors, RRF, de-dup, rerank (SPEC §6).

Both channels read the same collection and the same filters: live chunks only, excluded file
kinds (generated, vendored, backup, fixture) left out unless asked for, tombstoned chunks only
with ``include_history``. Lexical hits are re-read from Chroma by id, so every result's status
and stamp come from the one source of truth, never from the in-memory index.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from freshmark.classify import search_kind
from freshmark.errors import BadInput
from freshmark.fusion import (
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
from freshmark.lexical import LexicalHit, LexicalIndex
from freshmark.lexical_layers import LayeredLexical, is_layered
from freshmark.query import QueryPlan, plan_query
from freshmark.stamp import (
    EXCLUDED_FILE_KINDS,
    FILE_KINDS,
    LIVE,
    ON_REQUEST_FILE_KINDS,
    TOMBSTONED,
    ChunkRecord,
)
from freshmark.store import BranchIndex

__all__ = [
    "CHANNELS",
    "Candidate",
    "FileCandidate",
    "SearchTimings",
    "file_search",
    "hybrid_search",
    "lexical_for",
    "write_lexical_snapshot",
    "resolve_kinds",
    "validate_k",
    "validate_query",
]

# An issue report with its tracebacks and reproduction code is a fair query (tens of KB); a
# pasted file beyond this is refused with a message rather than tokenised and embedded.
MAX_QUERY_BYTES = 100_000
MAX_K = 100
# Each channel fetches this many times k candidates (seed 001 §3.2: room for the rerank); for a
# long query (an issue report) never fewer than MIN_POOL, since the file at fault is often
# found through a chunk that ranks low on its own.
CHANNEL_FACTOR = 2
MIN_POOL = 40
# Files whose best chunk joins the candidates from the whole-file BM25 ranking.
FILE_POOL = 20
# Chunks one file may hold among a chunk answer's results before other files get their turn.
MAX_PER_FILE = 2
CHANNELS = ("bm25", "vectors", "hybrid")
# What a search covers unless the caller names kinds: everything but the excluded kinds and
# the kinds searched only on request (changelogs, translation catalogues).
DEFAULT_KINDS = frozenset(FILE_KINDS) - EXCLUDED_FILE_KINDS - ON_REQUEST_FILE_KINDS
# The vector channel reads this many more nearest chunks than it expects to survive its
# filters, and filters them itself (see ``vector_channel``).
OVERFETCH = 1.25
MIN_PASSING_SHARE = 0.1


# A plain branch's lexical index, or a layered branch's (one LexicalIndex per layer).
Lexical = LexicalIndex | LayeredLexical


class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> np.ndarray: ...


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


def validate_query(query: object) -> str:
    """The query stripped of outer whitespace, or ``BadInput`` saying what is wrong with it."""
    if not isinstance(query, str):
        raise BadInput(f"query must be text, not {type(query).__name__}")
    if "\x00" in query:
        raise BadInput("query contains NUL bytes (binary content); send plain text")
    size_bytes = len(query.encode("utf-8", "surrogatepass"))
    if size_bytes > MAX_QUERY_BYTES:
        raise BadInput(
            f"query is {size_bytes} bytes, over the {MAX_QUERY_BYTES}-byte limit; "
            "ask with a sentence or a few symbol names instead of pasting code"
        )
    text = query.strip()
    if not text:
        raise BadInput("query is empty; give words or a symbol name to search for")
    return text


def validate_k(k: object) -> int:
    """``k`` itself, or ``BadInput`` unless it is a whole number from 1 to MAX_K."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadInput(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


def resolve_kinds(kinds: Iterable[str] | str | None, include_excluded: bool = False
                  ) -> frozenset[str]:
    """The file kinds a search covers: ``kinds`` as named (a list or a comma-separated string),
    else ``DEFAULT_KINDS``; ``include_excluded`` adds the excluded kinds either way."""
    if kinds is None or kinds == "" or kinds == []:
        chosen = set(DEFAULT_KINDS)
    else:
        names = kinds.split(",") if isinstance(kinds, str) else list(kinds)
        if not all(isinstance(name, str) for name in names):
            raise BadInput("kind must be a list of file kind names")
        chosen = {name.strip().lower() for name in names if name.strip()}
        unknown = sorted(chosen - set(FILE_KINDS))
        if unknown:
            raise BadInput(f"unknown file kind {', '.join(map(repr, unknown))}; "
                           f"choose from {', '.join(FILE_KINDS)}")
    if include_excluded:
        chosen |= EXCLUDED_FILE_KINDS
    return frozenset(chosen)


# Kinds a chunk stamped ``source``, ``doc`` or ``config`` may have today (``search_kind``).
_REFINED_KINDS = frozenset({"changelog", "translation", "other"})


def channel_where(include_history: bool, kinds: frozenset[str]) -> dict[str, Any] | None:
    """The Chroma ``where`` filter both channels apply (stored kinds: a superset of ``kinds``,
    as chunks stamped before a kind existed carry the older one; ``passes_filter`` decides)."""
    clauses: list[dict[str, Any]] = []
    if not include_history:
        clauses.append({"status": LIVE})
    stored = set(kinds) | ({"source", "doc", "config"} if kinds & _REFINED_KINDS else set())
    if stored < set(FILE_KINDS):
        clauses.append({"file_kind": {"$in": sorted(stored)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def passes_filter(record: ChunkRecord, include_history: bool, kinds: frozenset[str]) -> bool:
    """The same rule as ``channel_where``, applied to a record read back from the store."""
    if record.status != LIVE and not (include_history and record.status == TOMBSTONED):
        return False
    return search_kind(record.path, record.file_kind) in kinds


# -- the lexical index per collection, shared by every search in this process ------------------
# Least recently used last; a process serving many branches keeps only the busiest in memory.
_LEXICAL: OrderedDict[str, LexicalIndex] = OrderedDict()
_LEXICAL_LOCK = threading.Lock()
MAX_LEXICAL_INDEXES = 16


def snapshot_path(cache_dir: Path, collection: str) -> Path:
    return cache_dir / "lexical" / f"{collection}.npz"


def _identity(index: BranchIndex) -> str:
    """Tells a collection apart from an earlier one of the same name (dropped and recreated) or
    one of the same name in another store: Chroma's collection id when the store exposes it,
    and the manifest's creation time."""
    manifest = index.manifest
    collection_id = getattr(index, "collection_id", "")
    return f"{manifest.repo_key}\0{manifest.branch}\0{manifest.created_at or ''}\0{collection_id}"


class _OpenedIndex:
    """``index`` as a refresh source whose manifest read is the one made by opening it."""

    def __init__(self, index: BranchIndex) -> None:
        self._index = index
        self.name = index.name

    def reload_manifest(self) -> Any:
        manifest_for_request = getattr(self._index, "manifest_for_request", None)
        if manifest_for_request is None:  # a source without the open-time read
            return self._index.reload_manifest()
        return manifest_for_request()

    def iter_records(self, *args: Any, **kwargs: Any) -> Any:
        return self._index.iter_records(*args, **kwargs)


def lexical_for(index: BranchIndex, cache_dir: Path | None) -> Lexical:
    """This process's lexical index of ``index``, brought up to the collection's generation.

    The first call in a process loads the snapshot under ``cache_dir/lexical`` if one matches
    (else builds from the store); a snapshot is rewritten when enough has changed since the
    last one that re-fetching it would cost more than writing it (see docs/lexical-index.md).
    ``cache_dir=None`` keeps the index in memory only.

    A layered index (an overlay branch: ``layers()``) gets a ``LayeredLexical`` over each
    layer's own index from the same cache, so a base's index is shared by the base and all its
    overlays.
    """
    if is_layered(index):
        layers = index.layers()  # type: ignore[attr-defined]
        return LayeredLexical([(_refreshed_lexical(layer, cache_dir), hidden)
                               for layer, hidden in layers],
                              index_for=lambda layer: _shared_lexical(layer, cache_dir))
    return _refreshed_lexical(index, cache_dir)


def _shared_lexical(index: BranchIndex, cache_dir: Path | None) -> LexicalIndex:
    """This process's lexical index of one collection, as held (loaded from its snapshot on
    first use, else empty): not refreshed."""
    identity = _identity(index)
    path = snapshot_path(cache_dir, index.name) if cache_dir is not None else None
    with _LEXICAL_LOCK:
        lexical = _LEXICAL.get(index.name)
        if lexical is None or lexical.identity != identity:
            lexical = (LexicalIndex.load(path, index.name, identity) if path else None) or \
                LexicalIndex(index.name, identity)
            _LEXICAL[index.name] = lexical
        _LEXICAL.move_to_end(index.name)
        while len(_LEXICAL) > MAX_LEXICAL_INDEXES:
            _LEXICAL.popitem(last=False)
    return lexical


def _refreshed_lexical(index: BranchIndex, cache_dir: Path | None) -> LexicalIndex:
    """``_shared_lexical`` brought up to the collection's generation (and its snapshot saved
    when worth it)."""
    lexical = _shared_lexical(index, cache_dir)
    lexical.refresh(_OpenedIndex(index))
    if cache_dir is not None and _worth_saving(lexical):
        try:
            lexical.save(snapshot_path(cache_dir, index.name))
        except OSError:
            pass  # a snapshot only saves start-up time; an unwritable cache must not fail search
    return lexical


def write_lexical_snapshot(index: BranchIndex, cache_dir: Path) -> int:
    """Bring the collection's snapshot up to its generation; returns the chunks applied.

    Called by the indexer at the end of a run, so the first search after an index loads a
    current snapshot instead of building from the store. Starts from the existing snapshot when
    it matches, so a small run costs a small fetch; leaves this process's search cache alone.
    Saved under the search side's rule (2 % changed, or no snapshot yet): writing a 50k-chunk
    snapshot costs ~2 s, more than a search pays to fetch a small delta on top of the old one.
    For a layered index, the snapshot of its own collection (the top layer): each lower
    layer's is written by that layer's runs.
    """
    if is_layered(index):
        index = index.layers()[0][0]  # type: ignore[attr-defined]
    identity = _identity(index)
    path = snapshot_path(cache_dir, index.name)
    lexical = LexicalIndex.load(path, index.name, identity) or LexicalIndex(index.name, identity)
    applied = lexical.refresh(index)
    if not path.exists() or _worth_saving(lexical):
        lexical.save(path)
    return applied


def _worth_saving(lexical: LexicalIndex) -> bool:
    """Save when the changes since the last snapshot reach 2% of the index (at least one)."""
    return lexical.unsaved_changes > 0 and lexical.unsaved_changes * 50 >= len(lexical)


def forget_lexical(collection: str | None = None) -> None:
    """Drop this process's lexical index of one collection (or all): the next search rebuilds."""
    with _LEXICAL_LOCK:
        if collection is None:
            _LEXICAL.clear()
        else:
            _LEXICAL.pop(collection, None)


# -- channels -------------------------------------------------------------------------------------
def vector_channel(
    index: BranchIndex,
    vector: np.ndarray,
    n: int,
    include_history: bool,
    kinds: frozenset[str],
    passing_share: float = 1.0,
) -> list[tuple[ChunkRecord, float]]:
    """Nearest chunks that pass the filters, as (record, cosine similarity), best first.

    Chroma applies a ``where`` filter by first collecting every matching id, work that grows
    with the collection (measured: 0.6 s at 50k chunks, against 6 ms unfiltered). So the
    channel asks for the nearest chunks without a filter, enough of them that ``n`` should
    survive given the share of chunks that pass (``passing_share``), and filters them here; if
    too few survive it asks once more for many more, and only then lets Chroma filter.
    """
    share = max(passing_share, MIN_PASSING_SHARE)
    for wanted in (math.ceil(OVERFETCH * n / share), math.ceil(8 * n / share)):
        nearest = index.query(vector, wanted, where=None)
        kept = [(r, 1.0 - d) for r, d in nearest if passes_filter(r, include_history, kinds)]
        if len(kept) >= n or len(nearest) < wanted:
            return kept[:n]
    where = channel_where(include_history, kinds)
    return [(record, 1.0 - distance) for record, distance in index.query(vector, n, where=where)
            if passes_filter(record, include_history, kinds)]


def lexical_channel(
    index: BranchIndex,
    lexical: Lexical,
    hits: Sequence[LexicalHit],
    known: dict[str, ChunkRecord],
    include_history: bool,
    kinds: frozenset[str],
) -> list[tuple[ChunkRecord, float]]:
    """Lexical hits re-read from the store and filtered by what the store says now.

    Ids the store no longer holds leave the lexical index; records the store holds at a newer
    generation than the index are applied to it at once (not for a layered index: a record
    carries its own collection's generation, and each layer catches up by its own refresh).
    """
    missing = [h.id for h in hits if h.id not in known]
    fresh = {r.id: r for r in index.get(ids=missing, include_text=True)} if missing else {}
    gone = [i for i in missing if i not in fresh]
    if gone:
        lexical.forget(gone)
    if isinstance(lexical, LexicalIndex):
        newer = [r for r in fresh.values() if r.updated_gen > lexical.generation]
        if newer:
            lexical.apply(newer)
    records = {**fresh, **known}
    return [
        (records[h.id], h.score)
        for h in hits
        if h.id in records and passes_filter(records[h.id], include_history, kinds)
    ]


def _fill_missing_scores(
    index: BranchIndex, vector: np.ndarray, candidates: list[Candidate], bm25_of: dict[str, float]
) -> None:
    """Give every candidate both channel scores (its rank stays None where it was not ranked):
    BM25 from the in-memory index, cosine similarity from the stored vectors."""
    for candidate in candidates:
        if candidate.bm25 is None:
            candidate.bm25 = bm25_of.get(candidate.record.id, 0.0)
    need = [c.record.id for c in candidates if c.vector_sim is None]
    if not need:
        return
    stored = index.embeddings_for(need)
    query = vector / (float(np.linalg.norm(vector)) or 1.0)
    for candidate in candidates:
        if candidate.vector_sim is None and candidate.record.id in stored:
            other = stored[candidate.record.id]
            candidate.vector_sim = float(query @ other) / (float(np.linalg.norm(other)) or 1.0)


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

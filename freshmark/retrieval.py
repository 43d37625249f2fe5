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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from freshmark.errors import BadInput
from freshmark.fusion import (
    DEFAULT_WEIGHTS,
    Candidate,
    RerankWeights,
    dedup,
    fuse,
    rerank,
)
from freshmark.lexical import LexicalHit, LexicalIndex
from freshmark.stamp import EXCLUDED_FILE_KINDS, LIVE, TOMBSTONED, ChunkRecord
from freshmark.store import BranchIndex
from freshmark.tokenize import code_share, query_terms

__all__ = [
    "Candidate",
    "SearchTimings",
    "hybrid_search",
    "lexical_for",
    "validate_query",
]

# Longer than any question or symbol list a person or agent sends; a pasted file is refused
# with a message rather than tokenised and embedded (which would be slow and meaningless).
MAX_QUERY_BYTES = 10_000
MAX_K = 100
# Each channel fetches this many times k candidates (seed 001 §3.2: room for the rerank).
CHANNEL_FACTOR = 2
# The vector channel reads this many more nearest chunks than it expects to survive its
# filters, and filters them itself (see ``vector_channel``).
OVERFETCH = 1.25
MIN_PASSING_SHARE = 0.1


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


def _validate_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadInput(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


def channel_where(include_history: bool, include_excluded: bool) -> dict[str, Any] | None:
    """The Chroma ``where`` filter both channels apply."""
    clauses: list[dict[str, Any]] = []
    if not include_history:
        clauses.append({"status": LIVE})
    if not include_excluded:
        clauses.append({"file_kind": {"$nin": sorted(EXCLUDED_FILE_KINDS)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def passes_filter(record: ChunkRecord, include_history: bool, include_excluded: bool) -> bool:
    """The same rule as ``channel_where``, applied to a record read back from the store."""
    if record.status != LIVE and not (include_history and record.status == TOMBSTONED):
        return False
    return include_excluded or not record.is_excluded_kind


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


def lexical_for(index: BranchIndex, cache_dir: Path | None) -> LexicalIndex:
    """This process's lexical index of ``index``, brought up to the collection's generation.

    The first call in a process loads the snapshot under ``cache_dir/lexical`` if one matches
    (else builds from the store); a snapshot is rewritten when enough has changed since the
    last one that re-fetching it would cost more than writing it (see docs/lexical-index.md).
    ``cache_dir=None`` keeps the index in memory only.
    """
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
    lexical.refresh(index)
    if path is not None and _worth_saving(lexical):
        try:
            lexical.save(path)
        except OSError:
            pass  # a snapshot only saves start-up time; an unwritable cache must not fail search
    return lexical


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
    include_excluded: bool,
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
        kept = [(r, 1.0 - d) for r, d in nearest
                if passes_filter(r, include_history, include_excluded)]
        if len(kept) >= n or len(nearest) < wanted:
            return kept[:n]
    where = channel_where(include_history, include_excluded)
    return [(record, 1.0 - distance) for record, distance in index.query(vector, n, where=where)]


def lexical_channel(
    index: BranchIndex,
    lexical: LexicalIndex,
    hits: Sequence[LexicalHit],
    known: dict[str, ChunkRecord],
    include_history: bool,
    include_excluded: bool,
) -> list[tuple[ChunkRecord, float]]:
    """Lexical hits re-read from the store and filtered by what the store says now.

    Ids the store no longer holds leave the lexical index; records the store holds at a newer
    generation than the index are applied to it at once.
    """
    missing = [h.id for h in hits if h.id not in known]
    fresh = {r.id: r for r in index.get(ids=missing, include_text=True)} if missing else {}
    gone = [i for i in missing if i not in fresh]
    if gone:
        lexical.forget(gone)
    newer = [r for r in fresh.values() if r.updated_gen > lexical.generation]
    if newer:
        lexical.apply(newer)
    records = {**fresh, **known}
    return [
        (records[h.id], h.score)
        for h in hits
        if h.id in records and passes_filter(records[h.id], include_history, include_excluded)
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


def hybrid_search(
    index: BranchIndex,
    embedder: QueryEmbedder,
    query: str,
    k: int = 5,
    *,
    include_history: bool = False,
    include_excluded: bool = False,
    lexical: LexicalIndex | None = None,
    cache_dir: Path | None = None,
    weights: RerankWeights = DEFAULT_WEIGHTS,
) -> tuple[list[Candidate], SearchTimings]:
    """The ``k`` best chunks for ``query`` and the time each stage took.

    ``lexical``: a lexical index to use (it is refreshed first); by default this process's
    shared one (``lexical_for(index, cache_dir)``). Raises ``BadInput`` for an empty, binary
    or over-long query and a ``k`` outside 1..MAX_K.
    """
    text, k = validate_query(query), _validate_k(k)
    n = CHANNEL_FACTOR * k
    terms = query_terms(text)
    timings = SearchTimings()

    started = time.perf_counter()
    vector = np.asarray(embedder.embed_query(text), dtype=np.float32)
    timings.embed_seconds = time.perf_counter() - started

    started = time.perf_counter()
    if lexical is None:
        lexical = lexical_for(index, cache_dir)
    else:
        lexical.refresh(index)
    refresh_seconds = time.perf_counter() - started

    started = time.perf_counter()
    share = lexical.passing_share(include_history, include_excluded)
    vector_hits = vector_channel(index, vector, n, include_history, include_excluded, share)
    timings.vector_seconds = time.perf_counter() - started

    started = time.perf_counter()
    known = {record.id: record for record, _ in vector_hits}
    hits, bm25_of = lexical.search(terms, n, include_history=include_history,
                                   include_excluded=include_excluded, score_ids=list(known))
    lexical_hits = lexical_channel(index, lexical, hits, known, include_history, include_excluded)
    timings.lexical_seconds = refresh_seconds + time.perf_counter() - started

    started = time.perf_counter()
    records = {record.id: record for record, _ in [*vector_hits, *lexical_hits]}
    candidates = dedup(fuse(records, [(r.id, s) for r, s in lexical_hits],
                            [(r.id, s) for r, s in vector_hits]))
    fill_started = time.perf_counter()
    _fill_missing_scores(index, vector, candidates, bm25_of)
    fill_seconds = time.perf_counter() - fill_started
    ranked = rerank(candidates, terms, weights, code_share=code_share(text))[:k]
    timings.vector_seconds += fill_seconds
    timings.fusion_seconds = time.perf_counter() - started - fill_seconds
    return ranked, timings

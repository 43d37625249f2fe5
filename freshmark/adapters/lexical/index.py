"""The lexical channel: BM25 over code-aware tokens, kept in step with a branch collection.

Chroma has no BM25, so each query process keeps this index in memory per collection and follows
the collection by generation: ``refresh`` reads the manifest generation, fetches only chunks
with a higher ``updated_gen``, and records the generation read before fetching. Tombstoned
chunks live in a separate ``history`` index. Searches take a set of hidden paths, so that an
overlay branch reads its own index over its base's (``layers``). Design, guarantees and
limits: docs/lexical-index.md.
"""

from __future__ import annotations

import gc
import json
import operator
import os
import threading
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

import numpy as np

from freshmark.adapters.lexical.bm25 import NOTHING_HIDDEN, Bm25, array_text, text_array
from freshmark.core.classify import search_kind
from freshmark.core.kinds import KIND_CODES
from freshmark.core.manifest import Manifest
from freshmark.core.ports import (
    NO_FILE_MATCHES,
    BranchView,
    FileMatches,
    LexicalHit,
    TermWeights,
)
from freshmark.core.stamp import TOMBSTONED, ChunkRecord
from freshmark.core.tokenize import iter_tokens

SNAPSHOT_FORMAT = 3


def collection_identity(collection: BranchView) -> str:
    """Tells a collection apart from an earlier one of the same name (dropped and recreated) or
    one of the same name in another store: the store's collection id and the manifest's
    creation time."""
    manifest = collection.manifest
    return (f"{manifest.repo_key}\0{manifest.branch}\0{manifest.created_at or ''}\0"
            f"{collection.collection_id}")


def document_tokens(record: ChunkRecord) -> list[str]:
    """What BM25 indexes for a chunk: its path, its symbol name and its text."""
    return [*iter_tokens(record.path), *iter_tokens(record.symbol), *iter_tokens(record.text)]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Bulk indexing allocates millions of small objects, and Python's cycle collector would
    rescan them over and over (a third of a cold build's time); none of them form cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Layer:
    """One collection's live and tombstoned chunks as a search reads them: documents of a
    ``hidden`` path are left out (a layer above holds that path)."""

    live: Bm25
    history: Bm25
    hidden: frozenset[str] = NOTHING_HIDDEN


# A Bm25 searched as part of one ranking: whether it holds tombstoned chunks, its hidden paths.
_Part = tuple[Bm25, bool, frozenset[str]]


@dataclass(frozen=True)
class Filters:
    """Which chunks a lexical search may return: tombstones too (``include_history``), the
    excluded kinds too, and only ``kinds`` (search kinds; None: all)."""

    include_history: bool = False
    include_excluded: bool = False
    kinds: tuple[str, ...] | None = None

    @classmethod
    def of(cls, include_history: bool, include_excluded: bool,
           kinds: Iterable[str] | None) -> Filters:
        return cls(include_history, include_excluded, None if kinds is None else tuple(kinds))


def search_layers(
    layers: Sequence[Layer], terms: Sequence[str], n: int, n_files: int | None, *,
    filters: Filters, score_ids: Iterable[str], weights: TermWeights | None,
) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
    """``LexicalIndex.search_with_files`` over ``layers`` (``n_files`` None: no file matches).

    Every part is scored with the statistics of the visible documents of all parts together,
    so layers rank and score exactly as one index holding just those documents would. Each
    path is assumed visible in one layer at most (a layer hides every path held above it).
    """
    include_history, kinds = filters.include_history, filters.kinds
    live = [(layer.live, False, layer.hidden) for layer in layers]
    history = [(layer.history, True, layer.hidden) for layer in layers] if include_history \
        else []
    hits, extra, scores = _rank(live + history, terms, n, filters.include_excluded, score_ids,
                                kinds, weights)
    if n_files is None:
        return hits, extra, NO_FILE_MATCHES
    # With history those scores used the combined statistics; files are live.
    live_scores = _scores(live, terms, weights) if include_history else scores[: len(live)]
    return hits, extra, _file_matches(live, live_scores, terms, n_files, kinds, weights)


def _scores(parts: Sequence[_Part], terms: Sequence[str], weights: TermWeights | None
            ) -> list[np.ndarray]:
    stats = reduce(operator.add, (bm25.stats(terms, hidden) for bm25, _, hidden in parts))
    return [bm25.scores(terms, stats, weights, hidden) for bm25, _, hidden in parts]


def _rank(
    parts: Sequence[_Part], terms: Sequence[str], n: int, include_excluded: bool,
    score_ids: Iterable[str], kinds: tuple[str, ...] | None, weights: TermWeights | None,
) -> tuple[list[LexicalHit], dict[str, float], list[np.ndarray]]:
    all_scores = _scores(parts, terms, weights)
    scored: list[tuple[float, bool, str]] = []
    extra: dict[str, float] = {}
    wanted = list(score_ids)
    for (bm25, tombstoned, hidden), scores in zip(parts, all_scores, strict=True):
        scored.extend((s, tombstoned, i) for i, s in bm25.top(scores, n, include_excluded, kinds))
        for doc_id in wanted:
            value = bm25.score_of(scores, doc_id, hidden)
            if value is not None:
                extra[doc_id] = value
    scored.sort(key=lambda hit: -hit[0])
    hits = [LexicalHit(i, s, rank, t) for rank, (s, t, i) in enumerate(scored[:n], start=1)]
    return hits, extra, all_scores


def _file_matches(parts: Sequence[_Part], live_scores: Sequence[np.ndarray],
                  terms: Sequence[str], n_files: int, kinds: tuple[str, ...] | None,
                  weights: TermWeights | None) -> FileMatches:
    counts = [bm25.file_counts(terms, kinds, hidden) for bm25, _, hidden in parts]
    stats = reduce(operator.add, (c.stats() for c in counts))
    file_scores: dict[str, float] = {}
    for (bm25, _, _), part_counts in zip(parts, counts, strict=True):
        file_scores.update(bm25.score_files(part_counts, stats, weights))
    top = sorted(file_scores, key=lambda p: (-file_scores[p], p))[:n_files]
    if not top:
        return FileMatches(file_scores, [], {})
    best = [found for (bm25, _, hidden), scores in zip(parts, live_scores, strict=True)
            for found in bm25.best_per_file(scores, top, hidden)]
    rank_of = {path: rank for rank, path in enumerate(top)}
    best.sort(key=lambda found: rank_of[found[2]])  # each layer answers for its own files
    hits = [LexicalHit(doc_id, file_scores[path], rank, False)
            for rank, (doc_id, _, path) in enumerate(best, start=1)]
    return FileMatches(file_scores, hits, {doc_id: score for doc_id, score, _ in best})


def passing_share(layers: Sequence[Layer], include_history: bool, include_excluded: bool,
                  kinds: tuple[str, ...] | None) -> float:
    """``LexicalIndex.passing_share`` over the visible documents of ``layers``."""
    total = passing = 0
    for layer in layers:
        total += layer.live.count(True, None, layer.hidden)
        total += layer.history.count(True, None, layer.hidden)
        passing += layer.live.count(include_excluded, kinds, layer.hidden)
        if include_history:
            passing += layer.history.count(include_excluded, kinds, layer.hidden)
    return passing / total if total else 1.0


class LexicalIndex:
    """BM25 over one branch collection at a known store generation (``-1``: nothing loaded).

    Thread-safe: refresh, apply and search hold one lock.
    """

    def __init__(self, collection: str, identity: str = "") -> None:
        self.collection = collection
        self.identity = identity
        self.generation = -1
        self.live = Bm25()
        self.history = Bm25()
        self.unsaved_changes = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self.live) + len(self.history)

    def refresh(self, view: BranchView, manifest: Manifest | None = None) -> int:
        """Bring the index up to the collection's manifest generation; returns records applied.

        ``view`` is one collection; ``manifest`` its manifest when just read (else it is read
        again). One manifest read when nothing changed. If the manifest generation went
        backwards the collection was recreated, and if records were deleted after the
        generation held (``purged_generation``) the generations cannot show which: either way
        start over from everything it holds.
        """
        with self._lock:
            manifest = manifest or view.reload_manifest()
            generation = int(manifest.generation)
            if generation == self.generation:
                return 0
            if self._must_rebuild(generation, int(manifest.purged_generation)):
                self.clear()
            where = None if self.generation < 0 else {"updated_gen": {"$gt": self.generation}}
            applied = self.apply(view.iter_records(where=where, include_text=True))
            self.generation = generation  # read before fetching: in-flight writes come again
            return applied

    def _must_rebuild(self, generation: int, purged_generation: int) -> bool:
        if self.generation < 0:
            return False  # nothing held yet: the fetch reads everything anyway
        return generation < self.generation or purged_generation > self.generation

    def apply(self, records: Iterable[ChunkRecord]) -> int:
        """Index chunks as they now are: tombstoned ones move to history, live ones to live."""
        applied = 0
        with self._lock, _gc_paused():
            for record in records:
                self.live.remove(record.id)
                self.history.remove(record.id)
                target = self.history if record.status == TOMBSTONED else self.live
                target.add(record.id, document_tokens(record),
                           kind=search_kind(record.path, record.file_kind), path=record.path)
                applied += 1
            self.unsaved_changes += applied
        return applied

    def catch_up(self, records: Iterable[ChunkRecord]) -> None:
        """Apply records read from the collection at a newer generation than the one held."""
        newer = [r for r in records if r.updated_gen > self.generation]
        if newer:
            self.apply(newer)

    def passing_share(self, include_history: bool, include_excluded: bool,
                      kinds: Iterable[str] | None = None) -> float:
        """Share of the collection's chunks that the search filters let through (1.0 when
        empty): how much of an unfiltered nearest-neighbour list is expected to survive."""
        kinds = None if kinds is None else tuple(kinds)
        with self._lock:
            return passing_share([self.layer()], include_history, include_excluded, kinds)

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ids the store no longer holds (a collection purge the generations cannot show)."""
        with self._lock:
            for doc_id in ids:
                self.live.remove(doc_id)
                self.history.remove(doc_id)

    def clear(self) -> None:
        with self._lock:
            self.live, self.history = Bm25(), Bm25()
            self.generation = -1
            self.unsaved_changes = 0

    def search(
        self,
        terms: Sequence[str],
        n: int,
        *,
        include_history: bool = False,
        include_excluded: bool = False,
        score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
        weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float]]:
        """The ``n`` best matches, and the BM25 score of each id in ``score_ids`` that the
        searched indexes hold (0.0 when no term matches).

        With ``include_history`` live and tombstoned chunks are scored with their combined
        statistics, so one ranking orders both; without it only live statistics count.
        ``kinds`` (search kinds, ``classify.search_kind``) limits the hits to those kinds.
        """
        with self._lock:
            hits, extra, _ = search_layers(
                [self.layer()], terms, n, None, score_ids=score_ids, weights=weights,
                filters=Filters.of(include_history, include_excluded, kinds))
        return hits, extra

    def search_with_files(
        self,
        terms: Sequence[str],
        n: int,
        n_files: int,
        *,
        include_history: bool = False,
        include_excluded: bool = False,
        score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
        weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
        """``search``, plus whole-file BM25 of the live files of ``kinds``, the best chunk of
        each of the ``n_files`` best files (ranked as their files) and those chunks' own BM25
        scores; the live chunks are scored once for both."""
        with self._lock:
            return search_layers(
                [self.layer()], terms, n, n_files, score_ids=score_ids, weights=weights,
                filters=Filters.of(include_history, include_excluded, kinds))

    def layer(self) -> Layer:
        """This index as a layer with nothing hidden (read under ``lock``)."""
        return Layer(self.live, self.history)

    @property
    def lock(self) -> threading.RLock:
        """Held by refresh, apply and search; a layered search holds the lock of every layer."""
        return self._lock

    # -- snapshots ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the index atomically (temp file + rename: concurrent writers are safe)."""
        with self._lock:
            arrays = {f"live_{k}": v for k, v in self.live.to_arrays().items()}
            arrays |= {f"history_{k}": v for k, v in self.history.to_arrays().items()}
            header = {"format": SNAPSHOT_FORMAT, "collection": self.collection,
                      "identity": self.identity, "generation": self.generation,
                      "kind_codes": KIND_CODES}
            arrays["header"] = text_array(json.dumps(header))
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(temp, "wb") as handle:
                np.savez(handle, **arrays)  # type: ignore[arg-type]
            os.replace(temp, path)
            self.unsaved_changes = 0

    @classmethod
    def load(cls, path: Path, collection: str, identity: str) -> LexicalIndex | None:
        """A saved index for this collection and identity, or None (missing, other, corrupt)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            header = json.loads(array_text(arrays["header"]))
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if header.get("format") != SNAPSHOT_FORMAT or header.get("collection") != collection:
            return None
        if header.get("identity") != identity:
            return None
        # Kinds are stored by code: a snapshot of another code table would mislabel every chunk.
        # Snapshots written before the table was recorded used these same codes.
        if header.get("kind_codes", KIND_CODES) != KIND_CODES:
            return None
        index = cls(collection, identity)
        index.live.load_arrays({k[5:]: v for k, v in arrays.items() if k.startswith("live_")})
        index.history.load_arrays(
            {k[8:]: v for k, v in arrays.items() if k.startswith("history_")}
        )
        index.generation = int(header["generation"])
        return index

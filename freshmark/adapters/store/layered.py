"""Branch overlays: a branch collection holds only what differs from its base.

An overlay collection holds, for each path whose content on the branch differs from the base's
indexed commit (``diff(base, head)``), the branch's chunks of that path and tombstones of the
base chunks the branch changed, deleted or renamed away. A path the overlay holds *shadows*
the base: reads through ``LayeredIndex`` take the overlay's records of that path and hide the
base's. Every other path is served from the base. Chains work the same way: a layer's records
are hidden when any layer above holds their path.

The overlay is kept to ``diff(base at its indexed commit, branch head)``, a content
comparison, so the rule is the same whether the base moved, the branch merged it, or history
was rewritten (see ``plan_overlay`` and docs/branch-overlays.md). Writes go to the overlay
only: a restamp or tombstone of a chunk that lives in a lower layer copies that chunk (text,
vector, metadata) up first, so the cost of a branch is the chunks of its changed files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from freshmark.adapters.store.calls import path_filters
from freshmark.adapters.store.collection import BranchIndex
from freshmark.core.lru import LruCache
from freshmark.core.manifest import Manifest
from freshmark.core.ports import BranchView
from freshmark.core.stamp import ChunkRecord

# An overlay up to this many chunks is read into memory once per generation (records and
# vectors: ~2 KB a chunk), so a branch query costs one store query, as a base query does.
MAX_SNAPSHOT_CHUNKS = 20_000
# Extra neighbours asked of the layer below, for the chunks the overlay hides among them.
QUERY_SPARE = 8

# What overlays hold, per collection state, shared by the views a process opens per request.
MAX_CACHED = 256
_CACHE: LruCache[tuple[str, ...], Any] = LruCache(MAX_CACHED)
_cached, _remember = _CACHE.get, _CACHE.put


@dataclass(frozen=True)
class _OverlaySnapshot:
    """An overlay collection's records and unit vectors, for reads without a store call."""

    records: dict[str, ChunkRecord]
    ids: list[str]
    vectors: np.ndarray  # one row per id, as stored
    by_path: dict[str, list[str]]
    _unit: np.ndarray = field(init=False)  # the vectors at unit length, for cosine distances
    _row: dict[str, int] = field(init=False)

    @classmethod
    def read(cls, index: BranchIndex) -> _OverlaySnapshot:
        records, vectors = index.read_all()
        ids = [r.id for r in records]
        by_path: dict[str, list[str]] = {}
        for record in records:
            by_path.setdefault(record.path, []).append(record.id)
        matrix = np.asarray(vectors, dtype=np.float32)
        if not ids:
            matrix = np.zeros((0, 1), dtype=np.float32)
        return cls({r.id: r for r in records}, ids, matrix, by_path)

    def __post_init__(self) -> None:
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
        # frozen: the derived fields are set once, here
        object.__setattr__(self, "_unit", self.vectors / np.where(norms == 0, 1.0, norms))
        object.__setattr__(self, "_row", {chunk_id: row for row, chunk_id in enumerate(self.ids)})

    def get(self, ids: Iterable[str]) -> list[ChunkRecord]:
        return [self.records[i] for i in ids if i in self.records]

    def for_paths(self, paths: Iterable[str]) -> list[ChunkRecord]:
        return [self.records[i] for p in paths for i in self.by_path.get(p, ())]

    def embeddings_for(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        return {i: self.vectors[self._row[i]] for i in ids if i in self._row}

    def query(self, vector: np.ndarray, n: int) -> list[tuple[ChunkRecord, float]]:
        """Cosine distance (as Chroma's ``cosine`` space: 1 - similarity), nearest first."""
        if not self.ids:
            return []
        query = np.asarray(vector, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        distances = 1.0 - self._unit @ query
        n = max(1, min(n, len(self.ids)))
        nearest = np.argpartition(distances, n - 1)[:n] if n < len(self.ids) else \
            np.arange(len(self.ids))
        order = nearest[np.argsort(distances[nearest], kind="stable")]
        return [(self.records[self.ids[i]], float(distances[i])) for i in order.tolist()]


# -- reads through the layers ------------------------------------------------------------------
class LayeredIndex:
    """A branch overlay read together with the index below it (a base or another overlay).

    A ``BranchView`` like a plain collection: reads return the overlay's records of the paths
    it holds and the lower layers' records of every other path; writes land in the overlay
    (``update_metadata`` copies a lower layer's chunk up first).
    """

    def __init__(self, top: BranchIndex, below: BranchView, cached_reads: bool = True):
        self.top = top
        self.below = below
        self._held: frozenset[str] | None = None
        self._hidden_ids: frozenset[str] | None = None
        # Requests share what a process read of an overlay at a generation; an index run
        # (which writes through its view) reads the store itself.
        self.cached_reads = cached_reads

    # -- identity and manifest --------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.top.name

    @property
    def collection_id(self) -> str:
        return self.top.collection_id

    @property
    def manifest(self) -> Manifest:
        return self.top.manifest

    @property
    def own(self) -> BranchIndex:
        """The overlay's own collection, which every write goes to."""
        return self.top

    @property
    def depth(self) -> int:
        """Layers under the overlay (1: a plain base)."""
        return 1 + self.below.depth

    def reload_manifest(self) -> Manifest:
        return self.top.reload_manifest()

    def manifest_for_request(self) -> Manifest:
        return self.top.manifest_for_request()

    def save_manifest(self, manifest: Manifest) -> None:
        self.top.save_manifest(manifest)

    def root(self) -> BranchView:
        """The bottom of the chain: the base that is not an overlay."""
        return self.below.root()

    def layers(self) -> list[tuple[BranchView, frozenset[str]]]:
        """Each layer's own collection, top first, with the paths hidden in it (held above)."""
        held = self.held_paths()
        lower = [(index, hidden | held) for index, hidden in self.below.layers()]
        return [(self.top, frozenset()), *lower]

    # -- what the overlay holds -------------------------------------------------------------
    def _key(self) -> tuple[str, ...]:
        """Names this state of every layer: the cached answers below hold while it is equal."""
        return tuple(part for own in self._chain()
                     for part in (own.collection_id, str(own.manifest.generation)))

    def _chain(self) -> list[BranchView]:
        """Each layer's own collection, top first (``layers`` without reading held paths)."""
        chain: list[BranchView] = []
        view: BranchView | None = self
        while view is not None:
            chain.append(view.own)
            view = view.below
        return chain

    def held_paths(self) -> frozenset[str]:
        """Paths the overlay holds (they shadow every layer below): read once per generation
        per process, since each request opens a new view."""
        if self._held is None:
            key = ("held", self.top.collection_id, str(self.top.manifest.generation))
            held = _cached(key) if self.cached_reads else None
            if held is None:
                held = frozenset(self.top.paths())
                if self.cached_reads:
                    _remember(key, held)
            self._held = held
        return self._held

    def _changed(self, added: Iterable[str] = (), removed: Iterable[str] = ()) -> None:
        """A write through this view added records of ``added`` paths or deleted every record
        of ``removed`` ones. The generation moves only when the run ends, so the process caches
        are bypassed from now on."""
        self._held = (self.held_paths() | frozenset(added)) - frozenset(removed)
        self._hidden_ids = None
        self.cached_reads = False

    def _visible_below(self, records: Iterable[ChunkRecord]) -> list[ChunkRecord]:
        held = self.held_paths()
        return [r for r in records if r.path not in held]

    def hidden_ids(self) -> frozenset[str]:
        """Ids of the lower layers' chunks that the overlay hides (their paths are held)."""
        if self._hidden_ids is None:
            held = self.held_paths()
            key = ("hidden", *self._key())
            hidden = _cached(key) if self.cached_reads else None
            if hidden is None:
                hidden = frozenset(r.id for r in self.below.records_for_paths(held)) \
                    if held else frozenset()
                if self.cached_reads:
                    _remember(key, hidden)
            self._hidden_ids = hidden
        return self._hidden_ids

    def below_count(self) -> int:
        """Chunks in the layers below (what they hold and show), per state of the layers."""
        key = ("count", *self._key())
        total = _cached(key)
        if total is None:
            total = _remember(key, self.below.count())
        return int(total)

    # -- reads ------------------------------------------------------------------------------
    def _snapshot(self) -> _OverlaySnapshot | None:
        """The overlay's records and vectors in memory (small by design), read once per
        generation per process; None while this view writes, or for an overlay too big."""
        if not self.cached_reads:
            return None
        key = ("snapshot", self.top.collection_id, str(self.top.manifest.generation))
        snapshot = _cached(key)
        if snapshot is None:
            if self.top.count() > MAX_SNAPSHOT_CHUNKS:
                return None
            snapshot = _remember(key, _OverlaySnapshot.read(self.top))
        return snapshot

    def get(
        self,
        ids: Sequence[str] | None = None,
        where: dict[str, Any] | None = None,
        include_text: bool = True,
    ) -> list[ChunkRecord]:
        if ids is None:
            return list(self.iter_records(where=where, include_text=include_text))
        snapshot = self._snapshot() if where is None else None
        own = snapshot.get(ids) if snapshot is not None else \
            self.top.get(ids=ids, where=where, include_text=include_text)
        found = {r.id for r in own}
        rest = [i for i in ids if i not in found]
        lower = self.below.get(ids=rest, where=where, include_text=include_text) if rest else []
        return own + self._visible_below(lower)

    def iter_records(
        self, where: dict[str, Any] | None = None, include_text: bool = True
    ) -> Iterator[ChunkRecord]:
        yield from self.top.iter_records(where=where, include_text=include_text)
        held = self.held_paths()
        for record in self.below.iter_records(where=where, include_text=include_text):
            if record.path not in held:
                yield record

    def records_for_paths(
        self, paths: Iterable[str], include_text: bool = False
    ) -> list[ChunkRecord]:
        wanted = set(paths)
        snapshot = self._snapshot()
        own = snapshot.for_paths(wanted) if snapshot is not None else \
            self.top.records_for_paths(wanted, include_text=include_text)
        held_here = {r.path for r in own}
        rest = wanted - held_here - self.held_paths()
        return own + (self.below.records_for_paths(rest, include_text=include_text)
                      if rest else [])

    def embeddings_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        snapshot = self._snapshot()
        own = snapshot.embeddings_for(ids) if snapshot is not None else \
            self.top.embeddings_for(ids)
        rest = [i for i in ids if i not in own]
        return {**self.below.embeddings_for(rest), **own} if rest else own

    def query(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[ChunkRecord, float]]:
        """Nearest visible chunks of all layers, nearest first: ids and distances first, then
        the records of the ``n`` nearest only."""
        nearest = self.nearest_ids(vector, n, where)
        snapshot = self._snapshot() if where is None else None
        own = {r.id: r for r in (snapshot.get(i for i, _ in nearest) if snapshot is not None
                                 else self.top.get(ids=[i for i, _ in nearest]))}
        rest = [i for i, _ in nearest if i not in own]
        records = {**{r.id: r for r in self.below.get(ids=rest)}, **own} if rest else own
        return [(records[i], d) for i, d in nearest if i in records]

    def nearest_ids(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Ids and distances of the nearest visible chunks of all layers.

        The layer below is asked for ``n`` scaled by the share of its chunks the overlay hides
        (plus a margin); if hidden chunks still crowd them out, once more for up to ``4n``
        more. Past that, a query whose neighbourhood is all hidden chunks returns fewer.
        """
        snapshot = self._snapshot() if where is None else None
        own = [(r.id, d) for r, d in snapshot.query(vector, n)] if snapshot is not None else \
            self.top.nearest_ids(vector, n, where=where)
        hidden = self.hidden_ids()
        below_total = self.below_count()
        share = min(len(hidden) / below_total, 0.9) if below_total else 0.0
        asked = min(n + len(hidden), math.ceil(n / (1.0 - share) * 1.1) + QUERY_SPARE)
        lower = self.below.nearest_ids(vector, asked, where=where)
        visible = [(i, d) for i, d in lower if i not in hidden]
        if len(visible) < n and len(lower) == asked and len(hidden) > asked - n:
            lower = self.below.nearest_ids(vector, n + min(len(hidden), 4 * n), where=where)
            visible = [(i, d) for i, d in lower if i not in hidden]
        return sorted([*own, *visible], key=lambda pair: pair[1])[: max(1, n)]

    def count(self, where: dict[str, Any] | None = None) -> int:
        hidden = 0
        for in_part in path_filters(sorted(self.held_paths())):
            hidden += self.below.count({"$and": [where, in_part]} if where else in_part)
        return self.top.count(where) + self.below.count(where) - hidden

    # -- writes (always into the overlay) ---------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord], embeddings: np.ndarray) -> None:
        self.top.upsert(records, embeddings)
        self._changed(added=[r.path for r in records])

    def update_metadata(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Merge metadata into chunks; a chunk that lives in a lower layer is copied into the
        overlay with the new metadata (its text and vector unchanged)."""
        if not updates:
            return
        ids = [chunk_id for chunk_id, _ in updates]
        present = {r.id for r in self.top.get(ids=ids, include_text=False)}
        own = [u for u in updates if u[0] in present]
        if own:
            self.top.update_metadata(own)
        copied = [u for u in updates if u[0] not in present]
        self._changed(added=self._copy_up(copied) if copied else ())

    def _copy_up(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
        """Copy lower chunks into the overlay with new metadata; returns their paths."""
        merged = dict(updates)
        lower = {r.id: r for r in self.below.get(ids=list(merged), include_text=True)}
        vectors = self.below.embeddings_for(list(lower))
        records = [
            ChunkRecord.from_metadata(chunk_id, record.text,
                                      {**record.to_metadata(), **merged[chunk_id]})
            for chunk_id, record in lower.items() if chunk_id in vectors
        ]
        if records:
            self.top.upsert(records, np.stack([vectors[r.id] for r in records]))
        return [r.path for r in records]

    def purge_paths(self, paths: Sequence[str]) -> int:
        """Delete the overlay's records of ``paths`` (the base serves them again)."""
        removed = self.top.purge_paths(paths)
        self._changed(removed=paths)
        return removed


"""The lexical engine on tantivy: BM25 top-k over on-disk, memory-mapped indexes.

``TantivyEngine`` is the ``ports.LexicalEngine`` (``registry.lexical_engine``). One tantivy
index per collection (``tantivy_store``), shared by every process of a host through the page
cache and updated in place by generation; a branch of several layers reads each layer's own
index with the paths held above hidden. Scoring is tantivy's BM25 (k1 = 1.2, b = 0.75,
Lucene's idf), block-max WAND top-k instead of scoring every document; a term's weight is a
boost on its term query, so it multiplies that term's share of the score. Statistics count
tombstoned (and not yet merged deleted) documents, document lengths are tantivy's one-byte
norms, and whole files are documents of their own (a second index per collection, rebuilt per
changed file from the chunks' stored tokens) scored by tantivy's top-k, not every file
(docs/lexical-index.md; figures in bench/bench_lexical.py).
"""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from freshmark.adapters.lexical.tantivy_query import (
    Filters,
    LayerQuery,
    count,
    file_matches,
    rank,
    score_ids_of,
)
from freshmark.adapters.lexical.tantivy_store import (
    COMMIT_RECORDS,
    WRITER_WAIT_SECONDS,
    TantivyCollection,
    WriterBusy,
    Writers,
)
from freshmark.adapters.telemetry import counters
from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.lru import LruCache
from freshmark.core.ports import (
    BranchView,
    ChunkCounts,
    FileMatches,
    LexicalHit,
    LexicalRunWriter,
    TermWeights,
)
from freshmark.core.stamp import ChunkRecord

NUMPY_SNAPSHOTS = "lexical"  # under the cache directory, left by freshmark before tantivy
MAX_OPEN_INDEXES = 64  # open indexes per process: a file handle and maps each, no postings held

_OPEN: OrderedDict[tuple[str, str], TantivyCollection] = OrderedDict()
_OPEN_LOCK = threading.Lock()


def index_directory(cache_dir: Path, collection: str) -> Path:
    return cache_dir / "tantivy" / collection


def _collection(name: str, cache_dir: Path | None) -> TantivyCollection:
    """This process's handle on one collection's index (opened on first use)."""
    key = (str(cache_dir), name)
    with _OPEN_LOCK:
        held = _OPEN.get(key)
        if held is None or not held.still_on_disk():  # dropped by another process since
            held = _OPEN[key] = _opened(name, cache_dir)
        _OPEN.move_to_end(key)
        while len(_OPEN) > MAX_OPEN_INDEXES:
            _OPEN.popitem(last=False)
    return held


def _opened(name: str, cache_dir: Path | None) -> TantivyCollection:
    """The collection's index on disk, or in memory when the cache cannot hold it: the index
    only saves fetches from the store, an unwritable cache must not fail a search."""
    if cache_dir is not None:
        try:
            return TantivyCollection(name, index_directory(cache_dir, name))
        except OSError:
            pass
    return TantivyCollection(name, None)


@dataclass(frozen=True)
class _Layer:
    collection: TantivyCollection
    hidden: frozenset[str]


# Chunks of a layer that pass a request's filters, per state of the layer's index: the same
# for every query until the index changes, while a count reads the filter's postings of the
# whole layer (8 ms a count at 1M chunks). The key holds the searched state's document count
# too, so a commit another process made is not answered from an older count.
PASSING_COUNTS: LruCache[tuple[object, ...], int] = LruCache(256)


def _passing(layer: _Layer, query: LayerQuery, filters: Filters) -> int:
    collection = layer.collection
    key = (collection.collection, collection.generation, query.searcher.num_docs, filters,
           layer.hidden)
    found = PASSING_COUNTS.get(key)
    return found if found is not None else PASSING_COUNTS.put(key, count(query, filters))


class TantivyChannel:
    """BM25 over the visible chunks of one branch (``ports.LexicalChannel``), a tantivy index
    per layer, top first; a layer's chunks of a path held above are hidden."""

    def __init__(self, layers: Sequence[tuple[TantivyCollection, frozenset[str]]],
                 cache_dir: Path | None) -> None:
        if not layers:
            raise ValueError("a lexical channel needs at least one layer")
        self._layers = [_Layer(c, frozenset(h)) for c, h in layers]
        self._cache_dir = cache_dir

    @property
    def collection(self) -> str:
        return self._layers[0].collection.collection

    def refresh(self, view: BranchView) -> int:
        layers, applied = [], 0
        for collection, hidden in view.layers():
            held = _collection(collection.name, self._cache_dir)
            # The manifest read made by opening the collection for this request: not read again.
            applied += held.refresh(collection, collection.manifest_for_request())
            layers.append(_Layer(held, frozenset(hidden)))
        self._layers = layers
        return applied

    def catch_up(self, records: Iterable[ChunkRecord]) -> None:
        """Records newer than the index, written now when the writer is free (a plain branch
        only: a layered store's records carry their own layer's generation)."""
        if len(self._layers) != 1:
            return
        top = self._layers[0].collection
        newer = [r for r in records if r.updated_gen > top.generation]
        if newer:
            top.apply(newer)

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ids the store no longer holds, from the top layer only: an id a layered store
        no longer returns may just be newly hidden in a lower layer, whose index the base and
        other branches share; a lower layer learns of deleted records from its own manifest
        (``purged_generation``) when it refreshes."""
        self._layers[0].collection.forget(ids)

    def _queries(self) -> list[LayerQuery]:
        return [LayerQuery(layer.collection.searcher(), layer.collection.file_searcher(),
                           layer.hidden) for layer in self._layers]

    def passing_share(self, include_history: bool, include_excluded: bool,
                      kinds: Iterable[str] | None = None) -> float:
        filters = Filters.of(include_history, include_excluded, kinds)
        pairs = [(layer, query) for layer, query in zip(self._layers, self._queries(),
                                                        strict=True)]
        total = sum(_passing(layer, query, Filters.everything()) for layer, query in pairs)
        passing = sum(_passing(layer, query, filters) for layer, query in pairs)
        return passing / total if total else 1.0

    def counts(self) -> ChunkCounts:
        """The chunks the branch shows, live and tombstoned (hidden ones left out)."""
        queries = self._queries()
        shown = sum(count(q, Filters.everything()) for q in queries)
        live = sum(count(q, Filters(False, True, None)) for q in queries)
        return ChunkCounts(live, shown - live)

    def search(
        self, terms: Sequence[str], n: int, *, include_history: bool = False,
        include_excluded: bool = False, score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None, weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float]]:
        filters = Filters.of(include_history, include_excluded, kinds)
        queries = self._queries()
        hits = rank(queries, terms, n, filters, weights)
        return hits, score_ids_of(queries, terms, list(score_ids), filters, weights)

    def search_with_files(
        self, terms: Sequence[str], n: int, n_files: int, *, include_history: bool = False,
        include_excluded: bool = False, score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None, weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
        filters = Filters.of(include_history, include_excluded, kinds)
        queries = self._queries()
        hits = rank(queries, terms, n, filters, weights)
        extra = score_ids_of(queries, terms, list(score_ids), filters, weights)
        return hits, extra, file_matches(queries, terms, n_files, filters, weights)


class TantivyRunWriter:
    """A collection's first index run written to this host's index as the run writes it to
    the store (``ports.LexicalRunWriter``): the index's writers held for the run, chunk
    documents added as each part is written and committed every ``COMMIT_RECORDS``, file
    documents built once per path when the run is done; then the index is adopted as current
    without reading the collection back. A split run's batches come to it from whichever
    process wrote them (``services.indexing.split_lexical``). Anything it did not see
    (metadata-only updates, a busy writer, a batch whose documents did not come) makes it
    incomplete: the run is then caught up from the store as any other."""

    def __init__(self, collection: TantivyCollection) -> None:
        self.collection = collection
        self.complete = True
        self._held = ExitStack()
        self._writers: Writers | None = None
        self._paths: set[str] = set()  # the run's paths: a few bytes each, no chunk text
        self._uncommitted = 0

    def _writer(self) -> Writers | None:
        if self._writers is None and self.complete:
            try:
                self._writers = self._held.enter_context(
                    self.collection.writers(WRITER_WAIT_SECONDS))
            except WriterBusy:
                self.missed()
        return self._writers

    def written(self, documents: Sequence[LexicalDocument]) -> None:
        writer = self._writer() if documents else None
        if writer is None:
            return
        self._paths |= self.collection.add_chunks(writer, documents)
        self._uncommitted += len(documents)
        if self._uncommitted >= COMMIT_RECORDS:  # a segment above the small runs' level
            writer.chunks.commit()
            self._uncommitted = 0

    def missed(self) -> None:
        self.complete = False
        self.close()

    def finish(self, view: BranchView) -> None:
        """The run published ``view.manifest``: its files' documents built, the writers
        released, then the index adopted if the run wrote it whole."""
        writer = self._writer()
        if writer is not None:
            self.collection.rebuild_files(writer, self._paths)
        self.close()
        adopted = self.complete and self.collection.adopt(view, view.manifest)
        counters.LEXICAL_FIRST_RUNS_TOTAL.labels("written" if adopted else "caught_up").inc()

    def close(self) -> None:
        """Release the writers (what was not committed is dropped)."""
        self._writers, self._paths = None, set()
        self._held.close()


class TantivyEngine:
    """The lexical engine (``ports.LexicalEngine``) over on-disk tantivy indexes.

    ``cache_dir``: where the indexes live (``FRESHMARK_HOME/cache/tantivy``); None keeps each
    collection's index in this process's memory.
    """

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir

    def channel(self, view: BranchView) -> TantivyChannel:
        channel = TantivyChannel([(_collection(view.name, self.cache_dir), frozenset())],
                                 self.cache_dir)
        channel.refresh(view)
        return channel

    def first_run_writer(self, view: BranchView) -> TantivyRunWriter | None:
        """A writer for the first run of a plain branch's collection (nothing published yet:
        generation 0), its host index emptied for it; None for any other run, or when the
        cache cannot hold an index."""
        if self.cache_dir is None or view.below is not None or view.manifest.generation != 0:
            return None
        try:
            held = _collection(view.own.name, self.cache_dir)
            if held.directory is None or not held.start_first_run():
                return None
        except OSError:
            return None
        return TantivyRunWriter(held)

    def after_run(self, view: BranchView, changed: bool,
                  written: LexicalRunWriter | None = None) -> ChunkCounts | None:
        """The run's own collection caught up on disk, so no search pays the fetch (lower
        layers are caught up by their own runs), and the branch's chunks counted from the
        indexes (count queries: no id is listed). A first run ``written`` through whole is
        adopted as it is, without reading the collection back. None when the index could
        not be brought to the run's generation (another writer held it, or the cache is
        unwritable)."""
        if self.cache_dir is None:
            return None
        # Snapshots of the numpy engine an earlier freshmark kept: nothing reads them now.
        shutil.rmtree(self.cache_dir / NUMPY_SNAPSHOTS, ignore_errors=True)
        own = view.own
        try:
            held = _collection(own.name, self.cache_dir)
            if held.directory is None:
                return None  # the cache cannot hold it: no run builds a copy in its memory
            manifest = own.reload_manifest()
            if written is not None:
                written.finish(own)
            held.refresh(own, manifest)
            if held.generation != manifest.generation:
                return None
            return self._counts(view, self.cache_dir)
        except OSError:
            return None  # the index only saves search time; an unwritable cache must not fail a run

    @staticmethod
    def _counts(view: BranchView, cache_dir: Path) -> ChunkCounts | None:
        """The branch's chunks counted over its layers' indexes as they are on disk. A lower
        layer's index missing or behind its collection gives no counts rather than being
        caught up here: an overlay's run does not fetch its base."""
        layers = []
        for collection, hidden in view.layers():
            if not index_directory(cache_dir, collection.name).is_dir():
                return None
            held = _collection(collection.name, cache_dir)
            if not held.is_current(collection):
                return None
            layers.append((held, frozenset(hidden)))
        return TantivyChannel(layers, cache_dir).counts()

    def forget(self, collection: str | None = None) -> None:
        with _OPEN_LOCK:
            for key in [k for k in _OPEN if collection is None or k[1] == collection]:
                del _OPEN[key]

    def drop(self, collection: str) -> None:
        """The collection was dropped: forget it here and delete its chunk and file indexes."""
        self.forget(collection)
        if self.cache_dir is None:
            return
        directory = index_directory(self.cache_dir, collection)
        for path in (directory, directory.with_name(directory.name + ".files")):
            shutil.rmtree(path, ignore_errors=True)


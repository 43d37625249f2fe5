"""This process's lexical indexes, one per collection, and their snapshots on disk.

``Bm25Engine`` is the lexical engine the services use (``ports.LexicalEngine``): a channel per
branch (one ``LexicalIndex``, or a ``LayeredLexical`` over each layer's own), the snapshot an
index run leaves for the next process, and forgetting. The indexes themselves are shared by
every engine of the process, keyed by collection, so a base's index serves the base and all
its overlays. Design and limits: docs/lexical-index.md.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from freshmark.adapters.lexical.index import LexicalIndex, collection_identity
from freshmark.adapters.lexical.layers import LayeredLexical
from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.core.ports import BranchView, LexicalEngine
from freshmark.core.settings import Settings

# A plain branch's lexical index, or a layered branch's (one LexicalIndex per layer).
Lexical = LexicalIndex | LayeredLexical

# -- the lexical index per collection, shared by every search in this process ------------------
# Least recently used last; a process serving many branches keeps only the busiest in memory.
_LEXICAL: OrderedDict[str, LexicalIndex] = OrderedDict()
_LEXICAL_LOCK = threading.Lock()
MAX_LEXICAL_INDEXES = 16


def snapshot_path(cache_dir: Path, collection: str) -> Path:
    return cache_dir / "lexical" / f"{collection}.npz"


def lexical_for(view: BranchView, cache_dir: Path | None) -> Lexical:
    """This process's lexical index of ``view``, brought up to the collection's generation.

    The first call in a process loads the snapshot under ``cache_dir/lexical`` if one matches
    (else builds from the store); a snapshot is rewritten when enough has changed since the
    last one that re-fetching it would cost more than writing it (see docs/lexical-index.md).
    ``cache_dir=None`` keeps the index in memory only.

    A branch of several layers (an overlay) gets a ``LayeredLexical`` over each layer's own
    index from the same cache, so a base's index is shared by the base and all its overlays.
    """
    layers = view.layers()
    if len(layers) == 1:
        return _refreshed_lexical(layers[0][0], cache_dir)
    return LayeredLexical([(_refreshed_lexical(layer, cache_dir), hidden)
                           for layer, hidden in layers],
                          index_for=lambda layer: _shared_lexical(layer, cache_dir))


def _shared_lexical(collection: BranchView, cache_dir: Path | None) -> LexicalIndex:
    """This process's lexical index of one collection, as held (loaded from its snapshot on
    first use, else empty): not refreshed."""
    identity = collection_identity(collection)
    name = collection.name
    path = snapshot_path(cache_dir, name) if cache_dir is not None else None
    with _LEXICAL_LOCK:
        lexical = _LEXICAL.get(name)
        if lexical is None or lexical.identity != identity:
            lexical = (LexicalIndex.load(path, name, identity) if path else None) or \
                LexicalIndex(name, identity)
            _LEXICAL[name] = lexical
        _LEXICAL.move_to_end(name)
        while len(_LEXICAL) > MAX_LEXICAL_INDEXES:
            _LEXICAL.popitem(last=False)
    return lexical


def _refreshed_lexical(collection: BranchView, cache_dir: Path | None) -> LexicalIndex:
    """``_shared_lexical`` brought up to the collection's generation (and its snapshot saved
    when worth it). The manifest read made by opening the collection for this request is
    used, not read again."""
    lexical = _shared_lexical(collection, cache_dir)
    lexical.refresh(collection, collection.manifest_for_request())
    if cache_dir is not None and _worth_saving(lexical):
        try:
            lexical.save(snapshot_path(cache_dir, collection.name))
        except OSError:
            pass  # a snapshot only saves start-up time; an unwritable cache must not fail search
    return lexical


def write_lexical_snapshot(view: BranchView, cache_dir: Path) -> int:
    """Bring the collection's snapshot up to its generation; returns the chunks applied.

    Called by the indexer at the end of a run, so the first search after an index loads a
    current snapshot instead of building from the store. Starts from the existing snapshot when
    it matches, so a small run costs a small fetch; leaves this process's search cache alone.
    Saved under the search side's rule (2 % changed, or no snapshot yet): writing a 50k-chunk
    snapshot costs ~2 s, more than a search pays to fetch a small delta on top of the old one.
    For an overlay, the snapshot of its own collection: each lower layer's is written by that
    layer's runs.
    """
    own = view.own
    identity = collection_identity(own)
    path = snapshot_path(cache_dir, own.name)
    lexical = LexicalIndex.load(path, own.name, identity) or LexicalIndex(own.name, identity)
    applied = lexical.refresh(own)
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


class Bm25Engine:
    """The lexical engine (``ports.LexicalEngine``) over this process's BM25 indexes.

    ``cache_dir``: where snapshots live (``FRESHMARK_HOME/cache``); None keeps indexes in memory
    only and writes no snapshot.
    """

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir

    def channel(self, view: BranchView) -> Lexical:
        return lexical_for(view, self.cache_dir)

    def after_run(self, view: BranchView, changed: bool) -> None:
        """The search-side snapshot, current with the run, so no search pays the build."""
        if self.cache_dir is None:
            return
        if not changed and snapshot_path(self.cache_dir, view.own.name).exists():
            return  # a no-op run: the snapshot already matches (or a search will refresh it)
        try:
            write_lexical_snapshot(view, self.cache_dir)
        except OSError:
            pass  # a snapshot only saves start-up time; an unwritable cache must not fail a run

    def forget(self, collection: str | None = None) -> None:
        forget_lexical(collection)

    def drop(self, collection: str) -> None:
        """The collection was dropped: forget it here and delete its snapshot."""
        forget_lexical(collection)
        if self.cache_dir is not None:
            snapshot_path(self.cache_dir, collection).unlink(missing_ok=True)

def lexical_engine(settings: Settings) -> LexicalEngine:
    """The lexical engine ``settings.lexical`` names, over ``settings.cache_dir``."""
    if settings.lexical == "tantivy":
        return TantivyEngine(settings.cache_dir)
    return Bm25Engine(settings.cache_dir)

"""This process's lexical indexes, one per collection, and their snapshots on disk."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from freshmark.adapters.lexical.index import LexicalIndex
from freshmark.adapters.lexical.layers import LayeredLexical, is_layered
from freshmark.adapters.store.chroma import BranchIndex

# A plain branch's lexical index, or a layered branch's (one LexicalIndex per layer).
Lexical = LexicalIndex | LayeredLexical

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

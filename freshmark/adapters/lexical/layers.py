"""The lexical channel over a layered branch: an overlay's index on top of its base's.

A branch collection that is an overlay holds only the chunks of files that differ from its
base; a search reads every layer (top first: the overlay, its parent overlays, the base) and
leaves out a layer's chunks whose path a layer above holds. Each layer keeps its own
``LexicalIndex``, refreshed from its own collection by its own generation, so the base's index
is shared by the base and all its overlays, never copied. A layered search scores every layer
with the statistics of the visible chunks of all layers together: the ranking and the scores
are those of one index holding exactly the visible chunks. Design: docs/lexical-index.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from freshmark.adapters.lexical.index import (
    Filters,
    Layer,
    LexicalIndex,
    passing_share,
    search_layers,
)
from freshmark.core.ports import BranchView, FileMatches, LexicalHit, TermWeights
from freshmark.core.stamp import ChunkRecord


class LayeredLexical:
    """BM25 over the visible chunks of a layered branch, from one ``LexicalIndex`` per layer.

    ``layers``: each layer's index with the paths hidden in it, top first. ``index_for`` gives
    the index of a collection that ``refresh`` finds among the layers for the first time (by
    default a new, empty one; retrieval passes its process-wide cache).
    """

    def __init__(self, layers: Sequence[tuple[LexicalIndex, frozenset[str]]],
                 index_for: Callable[[BranchView], LexicalIndex] | None = None) -> None:
        if not layers:
            raise ValueError("a layered lexical index needs at least one layer")
        self._layers = [(lexical, frozenset(hidden)) for lexical, hidden in layers]
        self._index_for = index_for or _new_index

    @property
    def indexes(self) -> list[LexicalIndex]:
        """Each layer's index, top first."""
        return [lexical for lexical, _ in self._layers]

    @property
    def hidden(self) -> list[frozenset[str]]:
        """The paths hidden in each layer, top first."""
        return [hidden for _, hidden in self._layers]

    @property
    def collection(self) -> str:
        """The branch's own collection: the top layer's."""
        return self._layers[0][0].collection

    def __len__(self) -> int:
        """Visible chunks (live and tombstoned): what one index of them would hold."""
        layers = self._layers
        with _holding(layers):
            return sum(layer.live.count(True, None, layer.hidden)
                       + layer.history.count(True, None, layer.hidden)
                       for layer in _read(layers))

    def refresh(self, view: BranchView) -> int:
        """Bring every layer up to its own collection's generation and take the hidden sets
        ``view`` gives now (its layers may have changed: a re-layered branch); returns the
        records applied."""
        held = {lexical.collection: lexical for lexical, _ in self._layers}
        layers: list[tuple[LexicalIndex, frozenset[str]]] = []
        applied = 0
        for collection, hidden in view.layers():
            lexical = held.get(collection.name) or self._index_for(collection)
            applied += lexical.refresh(collection)
            layers.append((lexical, frozenset(hidden)))
        if not layers:
            raise ValueError("a layered index without layers")
        self._layers = layers  # one assignment: a search in flight keeps the layers it read
        return applied

    def catch_up(self, records: Iterable[ChunkRecord]) -> None:
        """Nothing to do: a record carries its own collection's generation, not this branch's,
        and each layer catches up by its own ``refresh``."""

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ids the store no longer holds, from the top layer only.

        An id the layered store no longer returns may just be newly hidden in a lower layer,
        whose index the base and other branches share; a lower layer learns of deleted records
        from its own manifest (``purged_generation``) when it refreshes."""
        self._layers[0][0].forget(ids)

    def passing_share(self, include_history: bool, include_excluded: bool,
                      kinds: Iterable[str] | None = None) -> float:
        """``LexicalIndex.passing_share`` over the visible chunks of all layers."""
        kinds = None if kinds is None else tuple(kinds)
        layers = self._layers
        with _holding(layers):
            return passing_share(_read(layers), include_history, include_excluded, kinds)

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
        """``LexicalIndex.search`` over the visible chunks of all layers."""
        filters = Filters.of(include_history, include_excluded, kinds)
        hits, extra, _ = self._search(terms, n, None, filters, score_ids, weights)
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
        """``LexicalIndex.search_with_files`` over the visible chunks of all layers."""
        filters = Filters.of(include_history, include_excluded, kinds)
        return self._search(terms, n, n_files, filters, score_ids, weights)

    def _search(
        self, terms: Sequence[str], n: int, n_files: int | None, filters: Filters,
        score_ids: Iterable[str], weights: TermWeights | None,
    ) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
        layers = self._layers
        with _holding(layers):
            return search_layers(_read(layers), terms, n, n_files, filters=filters,
                                 score_ids=score_ids, weights=weights)


def _new_index(collection: BranchView) -> LexicalIndex:
    return LexicalIndex(collection.name)


def _read(layers: Sequence[tuple[LexicalIndex, frozenset[str]]]) -> list[Layer]:
    """The layers as a search reads them (under their locks: a clear replaces the Bm25s)."""
    return [Layer(lexical.live, lexical.history, hidden) for lexical, hidden in layers]


@contextmanager
def _holding(layers: Sequence[tuple[LexicalIndex, frozenset[str]]]) -> Iterator[None]:
    """Hold every layer's lock, so no layer changes between the statistics and the scores.

    Taken in one global order (by collection name): a base shared by several layered searches
    at once cannot deadlock them."""
    with ExitStack() as stack:
        for lexical in sorted({id(x): x for x, _ in layers}.values(),
                              key=lambda x: (x.collection, id(x))):
            stack.enter_context(lexical.lock)
        yield

"""The seams between floors: what the services need of the outside systems, one protocol each.

- ``BranchView``: a branch's index in the store. A plain branch is a view of one layer; an
  overlay is its own collection read together with the view below it (its base). Services
  never ask which one they hold: they read ``below`` (None for one layer) and ``layers()``.
- ``Embedder``: texts to unit vectors (the indexer embeds chunks, a search its query).
- ``LexicalChannel`` and ``LexicalEngine``: BM25 over a branch's visible chunks, and the
  process-wide engine that keeps one channel per branch in step with the store (``lexical``
  adapter). Its value types, ``LexicalHit`` and ``FileMatches``, live here too.

Adapters implement these structurally (no base classes): any object with the members fits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.manifest import Manifest
from freshmark.core.stamp import ChunkRecord

# A query's term weights: a term it does not name weighs 1.0.
TermWeights = dict[str, float]


class BranchView(Protocol):
    """A branch's index: stamped chunks, their vectors and the manifest of record.

    Reads see the branch as one collection would: for an overlay, its own records of the paths
    it holds and the lower layers' records of every other path. Writes go to ``own``.
    """

    @property
    def name(self) -> str:
        """The branch's own collection."""

    @property
    def collection_id(self) -> str:
        """The store's id of the own collection: differs between two lives of one name."""

    @property
    def manifest(self) -> Manifest: ...

    @property
    def below(self) -> BranchView | None:
        """The view an overlay is layered on; None for a branch of one layer."""

    @property
    def own(self) -> BranchView:
        """The collection this branch writes to (itself for a branch of one layer)."""

    @property
    def depth(self) -> int:
        """Layers under this one (0 for a branch of one layer)."""

    def root(self) -> BranchView:
        """The bottom of the chain: the base that is not an overlay."""

    def layers(self) -> list[tuple[BranchView, frozenset[str]]]:
        """Each layer's own collection, top first, with the paths hidden in it (held above)."""

    def held_paths(self) -> frozenset[str]:
        """Paths the own collection holds records of (for an overlay: the paths it shadows)."""

    # -- the manifest of record
    def reload_manifest(self) -> Manifest: ...

    def manifest_for_request(self) -> Manifest:
        """The manifest read by opening the view, once; afterwards read again."""

    def save_manifest(self, manifest: Manifest) -> None: ...

    # -- reads
    def get(self, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None,
            include_text: bool = True) -> list[ChunkRecord]: ...

    def iter_records(self, where: dict[str, Any] | None = None,
                     include_text: bool = True) -> Iterator[ChunkRecord]: ...

    def records_for_paths(self, paths: Iterable[str],
                          include_text: bool = False) -> list[ChunkRecord]: ...

    def embeddings_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def query(self, vector: np.ndarray, n: int,
              where: dict[str, Any] | None = None) -> list[tuple[ChunkRecord, float]]:
        """The nearest chunks and their cosine distances, nearest first."""

    def nearest_ids(self, vector: np.ndarray, n: int,
                    where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """``query`` without reading the records: ids and distances only."""

    def count(self, where: dict[str, Any] | None = None) -> int: ...

    # -- writes (to ``own``)
    def upsert(self, records: Sequence[ChunkRecord], embeddings: np.ndarray) -> None: ...

    def update_metadata(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None: ...

    def purge_paths(self, paths: Sequence[str]) -> int:
        """Delete the own collection's records of ``paths``; returns how many went."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``id`` names model and variant (e.g. ``all-MiniLM-L6-v2/onnx-int8``); ``dim`` is the vector
    length. ``embed`` returns ``[n, dim]`` rows in input order (``(0, dim)`` for no texts);
    ``embed_query`` returns one ``[dim]`` vector.
    """

    id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class LexicalHit:
    """One lexical match: chunk id, BM25 score, 1-based rank, and whether it is a tombstone."""

    id: str
    score: float
    rank: int
    tombstoned: bool


@dataclass(frozen=True)
class FileMatches:
    """Whole-file BM25 by path, the best chunk of each of the best files (as hits ranked and
    scored as their files), and those chunks' own BM25 scores by id."""

    scores: dict[str, float]
    best_chunks: list[LexicalHit]
    best_chunk_scores: dict[str, float]


NO_FILE_MATCHES = FileMatches({}, [], {})


class LexicalChannel(Protocol):
    """BM25 over the visible chunks of one branch, as retrieval reads it."""

    def refresh(self, view: BranchView) -> int:
        """Catch up with the store (the view's layers, each by its own generation); returns
        the records applied."""

    def catch_up(self, records: Iterable[ChunkRecord]) -> None:
        """Records just read from the store: apply those newer than what the channel holds."""

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ids the store no longer returns."""

    def passing_share(self, include_history: bool, include_excluded: bool,
                      kinds: Iterable[str] | None = None) -> float:
        """Share of the chunks that the search filters let through (1.0 when empty)."""

    def search(
        self, terms: Sequence[str], n: int, *, include_history: bool = False,
        include_excluded: bool = False, score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None, weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float]]:
        """The ``n`` best matches, and the BM25 score of each id in ``score_ids``."""

    def search_with_files(
        self, terms: Sequence[str], n: int, n_files: int, *, include_history: bool = False,
        include_excluded: bool = False, score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None, weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
        """``search``, plus whole-file BM25 and the best chunk of the ``n_files`` best files."""


@dataclass(frozen=True)
class ChunkCounts:
    """The chunks a branch shows (its visible chunks, every layer read), live and tombstoned."""

    live: int
    tombstoned: int


class LexicalRunWriter(Protocol):
    """A branch's first index run written to the lexical index as the run writes the store,
    so that the index needs no read of the collection after the run."""

    def written(self, documents: Sequence[LexicalDocument]) -> None:
        """What the lexical index reads of records the run just wrote to the store (upserted
        whole), in this process or another one (a batch of a split run)."""

    def missed(self) -> None:
        """The run wrote something this writer did not see (metadata only, or another
        process's batch): the index is then caught up from the store after the run."""

    def finish(self, view: BranchView) -> None:
        """The run published ``view.manifest``: take the index as current if it holds the
        collection whole."""

    def close(self) -> None:
        """Release what the writer holds (the run ended, or failed)."""


class LexicalEngine(Protocol):
    """The lexical engine of a process: one channel per branch, kept in step with the store."""

    def channel(self, view: BranchView) -> LexicalChannel:
        """This process's channel for ``view``, caught up with the store."""

    def first_run_writer(self, view: BranchView) -> LexicalRunWriter | None:
        """A writer for the first index run of ``view``'s collection, or None (not a first
        run, or nothing on this host to write)."""

    def after_run(self, view: BranchView, changed: bool,
                  written: LexicalRunWriter | None = None) -> ChunkCounts | None:
        """An index run wrote ``view`` (``changed``: it wrote records; ``written``: through
        this writer too): persist what a new process would otherwise rebuild, and count the
        chunks the branch now shows (None when the engine keeps nothing it could count from,
        or is not current)."""

    def forget(self, collection: str | None = None) -> None:
        """Drop what this process holds of one collection (or of all)."""

    def drop(self, collection: str) -> None:
        """The collection was dropped: forget it and delete what was persisted of it."""

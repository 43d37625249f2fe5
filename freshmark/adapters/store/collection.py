"""One branch collection in Chroma: stamped chunks, their vectors and the manifest.

Vectors are always ours (``embedding_function=None``). The manifest lives in the collection's
metadata (``MANIFEST_KEY``) and is the branch's stamp of record: written last in an index run, so
while it says commit C every chunk it covers is true at C or newer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from freshmark.adapters.store.calls import MAX_BATCH, READ_PAGE, batches, guard, path_filters
from freshmark.adapters.store.catalog import ListedCollection
from freshmark.adapters.store.client import ChromaClient, ChromaCollection
from freshmark.core.errors import NotIndexed
from freshmark.core.manifest import Manifest
from freshmark.core.ports import BranchView
from freshmark.core.stamp import ChunkRecord

MANIFEST_KEY = "freshmark_manifest"


def manifest_of(collection: ChromaCollection | ListedCollection) -> Manifest | None:
    """The manifest a Chroma collection's metadata holds, or None (none, or unreadable)."""
    meta = collection.metadata or {}
    raw = meta.get(MANIFEST_KEY)
    if not raw:
        return None
    try:
        return Manifest.from_json(raw)
    except (ValueError, TypeError):
        return None


def _id_pages(ids: Iterable[str]) -> Iterator[Sequence[str]]:
    """``ids`` in read pages, each id once: a caller may name one chunk twice (copies of a chunk
    borrowing one vector), and Chroma refuses a read that repeats an id."""
    return batches(list(dict.fromkeys(ids)), READ_PAGE)


def manifest_metadata(manifest: Manifest) -> dict[str, str]:
    """The collection metadata that records ``manifest``."""
    return {MANIFEST_KEY: manifest.to_json(), "embedder": manifest.embedder}


class BranchIndex:
    """One branch collection: stamped chunks, their vectors and the manifest.

    As a ``BranchView`` it is a branch of one layer: nothing below it, it writes to itself.
    """

    def __init__(self, client: ChromaClient, collection: ChromaCollection, manifest: Manifest,
                 location: str = ""):
        self._client = client
        self._location = location  # the Chroma it is on, as errors may show it
        self._collection = collection
        self.manifest = manifest
        # ``manifest`` was read from the store just now (``Store.branch`` fetched the collection);
        # the request that opened this index may use that read once instead of fetching again.
        self._opened_manifest_unused = True

    def _on(self, what: str) -> str:
        """``what`` a call does, naming the Chroma server when there are several to tell
        apart (a lost server then says which)."""
        return f"{what} on {self._location}" if self._location else what

    @property
    def name(self) -> str:
        return str(self._collection.name)

    @property
    def collection_id(self) -> str:
        """Chroma's id of the collection: differs between two lives of one name."""
        return str(self._collection.id)

    # -- as a branch of one layer -------------------------------------------------------------
    @property
    def below(self) -> BranchView | None:
        return None

    @property
    def own(self) -> BranchIndex:
        return self

    @property
    def depth(self) -> int:
        return 0

    def root(self) -> BranchIndex:
        return self

    def layers(self) -> list[tuple[BranchView, frozenset[str]]]:
        return [(self, frozenset())]

    def held_paths(self) -> frozenset[str]:
        return frozenset(self.paths())

    # -- manifest ---------------------------------------------------------------------------
    def reload_manifest(self) -> Manifest:
        collection = guard(
            self._on("read a manifest"),
            lambda: self._client.get_collection(self.name, embedding_function=None),
        )
        manifest = manifest_of(collection)
        if manifest is None:
            raise NotIndexed(f"collection {self.name} has no manifest")
        self.manifest = manifest
        return manifest

    def manifest_for_request(self) -> Manifest:
        """The manifest for a request that opened this index: the read made by opening it is
        used once (one ``get_collection`` per query, not two); every later call reads the
        store again, so a long-lived index still sees each finished run."""
        if self._opened_manifest_unused:
            self._opened_manifest_unused = False
            return self.manifest
        return self.reload_manifest()

    def save_manifest(self, manifest: Manifest) -> None:
        """Replace the manifest (written last in a run: it is the stamp of record)."""
        metadata = manifest_metadata(manifest)
        guard(self._on("write a manifest"), lambda: self._collection.modify(metadata=metadata))
        self.manifest = manifest

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord], embeddings: np.ndarray) -> None:
        """Insert or replace chunks with their vectors (plain ``add`` ignores existing ids)."""
        if len(records) != len(embeddings):
            raise ValueError("records and embeddings differ in length")
        for start in range(0, len(records), MAX_BATCH):
            part = records[start : start + MAX_BATCH]
            vectors = embeddings[start : start + MAX_BATCH]

            def write(part: Sequence[ChunkRecord] = part, vectors: np.ndarray = vectors) -> Any:
                return self._collection.upsert(
                    ids=[r.id for r in part],
                    embeddings=np.asarray(vectors, dtype=np.float32),
                    documents=[r.text for r in part],
                    metadatas=[r.to_metadata() for r in part],
                )

            guard(self._on("write chunks"), write)

    def update_metadata(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Merge metadata into existing chunks (text and vectors untouched): stamps, tombstones."""
        for part in batches(list(updates), MAX_BATCH):
            def update(part: Sequence[tuple[str, dict[str, Any]]] = part) -> Any:
                return self._collection.update(
                    ids=[u[0] for u in part], metadatas=[u[1] for u in part]
                )

            guard(self._on("update chunk metadata"), update)

    # -- reads ------------------------------------------------------------------------------
    def get(
        self,
        ids: Sequence[str] | None = None,
        where: dict[str, Any] | None = None,
        include_text: bool = True,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChunkRecord]:
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        if ids is not None:
            out: list[ChunkRecord] = []
            for part in _id_pages(ids):
                out.extend(self._get_page(include, ids=list(part), where=where))
            return out
        if limit is not None:
            return self._get_page(include, where=where, limit=limit, offset=offset or 0)
        return list(self.iter_records(where=where, include_text=include_text))

    def iter_records(
        self, where: dict[str, Any] | None = None, include_text: bool = True
    ) -> Iterator[ChunkRecord]:
        """Every matching record, in pages.

        Pages are fetched by id (an ids-only read first): Chroma's offset paging re-scans from
        the start on every page, which makes a full read quadratic on big collections.
        """
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        ids = guard(self._on("list chunk ids"),
                    lambda: self._collection.get(where=where, include=[]))["ids"]
        for part in batches(ids, READ_PAGE):
            yield from self._get_page(include, ids=list(part))

    def _get_page(self, include: list[str], **kwargs: Any) -> list[ChunkRecord]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        got = guard(self._on("read chunks"),
                    lambda: self._collection.get(include=include, **kwargs))
        docs = got.get("documents") or [None] * len(got["ids"])
        return [
            ChunkRecord.from_metadata(i, d, m or {})
            for i, d, m in zip(got["ids"], docs, got["metadatas"], strict=True)
        ]

    def records_for_paths(
        self, paths: Iterable[str], include_text: bool = False
    ) -> list[ChunkRecord]:
        """Every chunk (live or tombstoned) stored for these paths."""
        out: list[ChunkRecord] = []
        for where in path_filters(sorted(set(paths))):
            out.extend(self.get(where=where, include_text=include_text))
        return out

    def read_all(self) -> tuple[list[ChunkRecord], list[Any]]:
        """Every record with its text, and its vector (same order), in one read: for a small
        collection (an overlay) kept in memory."""
        got = guard(self._on("read chunks"), lambda: self._collection.get(
            include=["metadatas", "documents", "embeddings"]))
        records = [ChunkRecord.from_metadata(i, d, m or {})
                   for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]
        return records, list(got["embeddings"])

    def paths(self) -> set[str]:
        """Every path the collection holds a record of (live or tombstoned), read in pages:
        one read of every record's metadata would hold the whole collection at once."""
        return {r.path for r in self.iter_records(include_text=False) if r.path}

    def purge_paths(self, paths: Sequence[str]) -> int:
        """Delete every record of ``paths`` (not tombstoned: gone); returns how many went."""
        removed = 0
        for where in path_filters(sorted(set(paths))):
            def list_ids(where: dict[str, Any] = where) -> Any:
                return self._collection.get(where=where, include=[])

            ids = guard(self._on("list chunk ids"), list_ids)["ids"]
            for batch in batches(ids, MAX_BATCH):
                def delete(batch: Sequence[str] = batch) -> Any:
                    return self._collection.delete(ids=list(batch))

                guard(self._on("delete chunks"), delete)
            removed += len(ids)
        return removed

    def embeddings_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in _id_pages(ids):
            def read(part: Sequence[str] = part) -> Any:
                return self._collection.get(ids=list(part), include=["embeddings"])

            got = guard(self._on("read vectors"), read)
            for record_id, vector in zip(got["ids"], got["embeddings"], strict=True):
                out[record_id] = np.asarray(vector, dtype=np.float32)
        return out

    def query(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[ChunkRecord, float]]:
        """Nearest chunks by cosine distance (0 = same direction); fewer if fewer exist."""
        n = max(1, n)
        got = guard(
            self._on("search vectors"),
            lambda: self._collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=n,
                where=where,
                include=["metadatas", "documents", "distances"],
            ),
        )
        return [
            (ChunkRecord.from_metadata(i, d, m or {}), float(dist))
            for i, d, m, dist in zip(
                got["ids"][0],
                got["documents"][0],
                got["metadatas"][0],
                got["distances"][0],
                strict=True,
            )
        ]

    def nearest_ids(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Ids of the nearest chunks and their cosine distances, nearest first: no text or
        metadata is read, which is most of a query's cost when many neighbours are asked."""
        got = guard(
            self._on("search vectors"),
            lambda: self._collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=max(1, n), where=where, include=["distances"],
            ),
        )
        return [(i, float(d)) for i, d in zip(got["ids"][0], got["distances"][0], strict=True)]

    def count(self, where: dict[str, Any] | None = None) -> int:
        if where is None:
            return int(guard(self._on("count chunks"), self._collection.count))
        # One ids-only read: paging with offsets re-scans and costs several times more.
        got = guard(self._on("count chunks"), lambda: self._collection.get(where=where, include=[]))
        return len(got["ids"])

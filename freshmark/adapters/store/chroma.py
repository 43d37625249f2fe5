"""The Chroma store: one collection per (repo, branch), a manifest in its metadata.

Embedded (``PersistentClient`` under ``FRESHMARK_HOME/chroma``) or a Chroma server
(``FRESHMARK_CHROMA_URL``); both behave the same to callers. Vectors are always ours
(``embedding_function=None``): ``get_collection`` without it would attach Chroma's default
embedder, which downloads a model at run time.

The manifest is the branch's stamp of record. It is written last in an index run, so while it
says commit C every chunk it covers is true at C or newer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import numpy as np

from freshmark.core.errors import (
    BaseInUse,
    EmbedderMismatch,
    FreshmarkError,
    NotIndexed,
    StoreNotWritable,
    StoreUnavailable,
)
from freshmark.core.manifest import COLLECTION_PREFIX, Manifest, collection_name
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord

MANIFEST_KEY = "freshmark_manifest"

# Chroma refuses larger writes (client.get_max_batch_size() reports 5,461 here).
MAX_BATCH = 5000
# Pages for reads, and how many paths go into one ``$in`` filter.
READ_PAGE = 2000
PATHS_PER_QUERY = 200

T = TypeVar("T")


def _is_connection_error(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _causes(exc)}
    text = str(exc).lower()
    return bool(
        names
        & {
            "ConnectError",
            "ConnectTimeout",
            "ReadTimeout",
            "RemoteProtocolError",
            "ConnectionError",
            "ConnectionRefusedError",
            "ReadError",
            "WriteError",
        }
        or "could not connect" in text
        or "connection refused" in text
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _guard(what: str, fn: Callable[[], T]) -> T:
    """Run a Chroma call; a lost server becomes ``StoreUnavailable`` (retryable)."""
    try:
        return fn()
    except FreshmarkError:
        raise
    except Exception as exc:
        if _is_connection_error(exc):
            raise StoreUnavailable(
                f"Chroma store unreachable while trying to {what}: {exc}"
            ) from exc
        raise


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class BranchIndex:
    """One branch collection: stamped chunks, their vectors and the manifest."""

    def __init__(self, client: Any, collection: Any, manifest: Manifest):
        self._client = client
        self._collection = collection
        self.manifest = manifest
        # ``manifest`` was read from the store just now (``Store.branch`` fetched the collection);
        # the request that opened this index may use that read once instead of fetching again.
        self._opened_manifest_unused = True

    @property
    def name(self) -> str:
        return str(self._collection.name)

    @property
    def collection_id(self) -> str:
        """Chroma's id of the collection: differs between two lives of one name."""
        return str(self._collection.id)

    # -- manifest ---------------------------------------------------------------------------
    def reload_manifest(self) -> Manifest:
        collection = _guard(
            "read a manifest",
            lambda: self._client.get_collection(self.name, embedding_function=None),
        )
        manifest = Store._manifest_of(collection)
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
        metadata = {MANIFEST_KEY: manifest.to_json(), "embedder": manifest.embedder}
        _guard("write a manifest", lambda: self._collection.modify(metadata=metadata))
        self.manifest = manifest

    # -- writes -----------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord], embeddings: np.ndarray) -> None:
        """Insert or replace chunks with their vectors (plain ``add`` ignores existing ids)."""
        if len(records) != len(embeddings):
            raise ValueError("records and embeddings differ in length")
        for start in range(0, len(records), MAX_BATCH):
            part = records[start : start + MAX_BATCH]
            vectors = embeddings[start : start + MAX_BATCH]
            _guard(
                "write chunks",
                lambda part=part, vectors=vectors: self._collection.upsert(
                    ids=[r.id for r in part],
                    embeddings=np.asarray(vectors, dtype=np.float32),
                    documents=[r.text for r in part],
                    metadatas=[r.to_metadata() for r in part],
                ),
            )

    def update_metadata(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Merge metadata into existing chunks (text and vectors untouched): stamps, tombstones."""
        for part in _batches(list(updates), MAX_BATCH):
            _guard(
                "update chunk metadata",
                lambda part=part: self._collection.update(
                    ids=[u[0] for u in part], metadatas=[u[1] for u in part]
                ),
            )

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
            for part in _batches(list(ids), READ_PAGE):
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
        kwargs = {"where": where} if where is not None else {}
        ids = _guard("list chunk ids", lambda: self._collection.get(include=[], **kwargs))["ids"]
        for part in _batches(ids, READ_PAGE):
            yield from self._get_page(include, ids=list(part))

    def _get_page(self, include: list[str], **kwargs: Any) -> list[ChunkRecord]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        got = _guard("read chunks", lambda: self._collection.get(include=include, **kwargs))
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
        for part in _batches(sorted(set(paths)), PATHS_PER_QUERY):
            where = {"path": {"$in": list(part)}} if len(part) > 1 else {"path": part[0]}
            out.extend(self.get(where=where, include_text=include_text))
        return out

    def read_all(self) -> tuple[list[ChunkRecord], list[Any]]:
        """Every record with its text, and its vector (same order), in one read: for a small
        collection (an overlay) kept in memory."""
        got = _guard("read chunks", lambda: self._collection.get(
            include=["metadatas", "documents", "embeddings"]))
        records = [ChunkRecord.from_metadata(i, d, m or {})
                   for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]
        return records, list(got["embeddings"])

    def paths(self) -> set[str]:
        """Every path the collection holds a record of (live or tombstoned)."""
        got = _guard("list paths", lambda: self._collection.get(include=["metadatas"]))
        return {str(m.get("path", "")) for m in got["metadatas"] if m}

    def delete_paths(self, paths: Sequence[str]) -> int:
        """Delete every record of ``paths``; returns how many went."""
        removed = 0
        for part in _batches(sorted(set(paths)), PATHS_PER_QUERY):
            where = {"path": {"$in": list(part)}} if len(part) > 1 else {"path": part[0]}
            ids = _guard("list chunk ids",
                         lambda where=where: self._collection.get(where=where, include=[]))["ids"]
            for batch in _batches(ids, MAX_BATCH):
                _guard("delete chunks",
                       lambda batch=batch: self._collection.delete(ids=list(batch)))
            removed += len(ids)
        return removed

    def embeddings_for(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in _batches(list(ids), READ_PAGE):
            got = _guard(
                "read vectors",
                lambda part=part: self._collection.get(ids=list(part), include=["embeddings"]),
            )
            for record_id, vector in zip(got["ids"], got["embeddings"], strict=True):
                out[record_id] = np.asarray(vector, dtype=np.float32)
        return out

    def query(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[ChunkRecord, float]]:
        """Nearest chunks by cosine distance (0 = same direction); fewer if fewer exist."""
        n = max(1, n)
        got = _guard(
            "search vectors",
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
        got = _guard(
            "search vectors",
            lambda: self._collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=max(1, n), where=where, include=["distances"],
            ),
        )
        return [(i, float(d)) for i, d in zip(got["ids"][0], got["distances"][0], strict=True)]

    def count(self, where: dict[str, Any] | None = None) -> int:
        if where is None:
            return int(_guard("count chunks", self._collection.count))
        # One ids-only read: paging with offsets re-scans and costs several times more.
        got = _guard("count chunks", lambda: self._collection.get(where=where, include=[]))
        return len(got["ids"])


class Store:
    """The set of branch collections in one Chroma (embedded or server)."""

    def __init__(self, client: Any, location: str):
        self._client = client
        self.location = location

    @classmethod
    def open(cls, settings: Settings) -> Store:
        if settings.chroma_url:
            return cls._open_server(settings.chroma_url)
        return cls._open_embedded(settings.chroma_path)

    @classmethod
    def _open_server(cls, url: str) -> Store:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname:
            raise StoreUnavailable(f"FRESHMARK_CHROMA_URL is not a URL: {url!r}")
        client = _guard(
            f"connect to the Chroma server at {url}",
            lambda: chromadb.HttpClient(
                host=parsed.hostname or "127.0.0.1",
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=ChromaSettings(anonymized_telemetry=False),
            ),
        )
        _guard(f"reach the Chroma server at {url}", client.heartbeat)
        return cls(client, url)

    @classmethod
    def _open_embedded(cls, path: Path) -> Store:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreNotWritable(
                f"store directory {path} is not writable: {exc.strerror}"
            ) from exc
        client = chromadb.PersistentClient(
            path=str(path), settings=ChromaSettings(anonymized_telemetry=False)
        )
        return cls(client, str(path))

    # -- collections ------------------------------------------------------------------------
    def branch(self, repo_key: str, branch: str, layered: bool = True) -> Any:
        """The branch's index, or None if it was never indexed: its collection, read together
        with its base when it is an overlay (``overlay.LayeredIndex``) unless ``layered`` is
        False. Raises ``BaseGone`` for an overlay whose base is no longer indexed."""
        own = self.own_branch(repo_key, branch)
        if own is None or not layered or not own.manifest.overlay:
            return own
        from freshmark.adapters.store.layered import layered_view

        return layered_view(self, own)

    def own_branch(self, repo_key: str, branch: str) -> BranchIndex | None:
        """The branch's own collection (for an overlay: without its base), or None."""
        collection = self._get(collection_name(repo_key, branch))
        if collection is None:
            return None
        manifest = self._manifest_of(collection)
        if manifest and manifest.repo_key == repo_key and manifest.branch == branch:
            return BranchIndex(self._client, collection, manifest)
        return None

    def require_branch(self, repo_key: str, branch: str, repo_name: str = "") -> BranchIndex:
        index = self.branch(repo_key, branch)
        if index is None or (index.manifest.commit is None and not index.manifest.layers):
            label = f"{repo_name or repo_key}@{branch}"
            raise NotIndexed(f"branch {label} has not been indexed yet; run: freshmark index")
        return index

    def create_branch(self, manifest: Manifest) -> BranchIndex:
        """Get or create the collection for a new manifest; refuses to mix embedders."""
        existing = self.own_branch(manifest.repo_key, manifest.branch)
        if existing is not None:
            if existing.manifest.embedder != manifest.embedder:
                raise EmbedderMismatch(
                    f"collection {existing.name} holds vectors of {existing.manifest.embedder!r}, "
                    f"not {manifest.embedder!r}; use the same embedder or drop the branch index"
                )
            return existing
        metadata = {MANIFEST_KEY: manifest.to_json(), "embedder": manifest.embedder}
        collection = _guard(
            "create a collection",
            lambda: self._client.get_or_create_collection(
                manifest.collection,
                embedding_function=None,
                metadata=metadata,
                configuration={"hnsw": {"space": "cosine"}},
            ),
        )
        return BranchIndex(self._client, collection, manifest)

    def drop_branch(self, repo_key: str, branch: str, *, force: bool = False) -> bool:
        """Drop the branch's own collection (an overlay's base is left alone). Refuses a base
        that overlays are layered on (``BaseInUse``) unless ``force``: they would lose the
        chunks of every file they did not change."""
        index = self.own_branch(repo_key, branch)
        if index is None:
            return False
        dependents = self.overlays_on(repo_key, branch)
        if dependents and not force:
            names = ", ".join(sorted(m.branch for m in dependents)[:10])
            raise BaseInUse(f"{index.manifest.repo}@{branch} is the base of "
                            f"{len(dependents)} branch overlay(s): {names}; retire them first")
        _guard("drop a collection", lambda: self._client.delete_collection(index.name))
        return True

    def overlays_on(self, repo_key: str, branch: str,
                    manifests: Iterable[Manifest] | None = None) -> list[Manifest]:
        """Manifests of the overlays layered directly on (repo_key, branch)."""
        return [m for m in (manifests if manifests is not None else self.list_manifests())
                if m.overlay and m.overlay.get("repo_key") == repo_key
                and m.overlay.get("branch") == branch]

    def list_manifests(self, repo: str | None = None) -> list[Manifest]:
        """Manifests of every branch collection, optionally of one repo (by id or key)."""
        out: list[Manifest] = []
        for name in self._all_names():
            if not name.startswith(COLLECTION_PREFIX + "-"):
                continue
            collection = self._get(name)
            manifest = self._manifest_of(collection) if collection is not None else None
            if manifest and (repo is None or repo in (manifest.repo, manifest.repo_key)):
                out.append(manifest)
        return sorted(out, key=lambda m: (m.repo, m.branch))

    # -- helpers ----------------------------------------------------------------------------
    def _all_names(self) -> list[str]:
        collections = _guard("list collections", self._client.list_collections)
        return [c if isinstance(c, str) else c.name for c in collections]

    def _get(self, name: str) -> Any | None:
        try:
            return _guard(
                "open a collection",
                lambda: self._client.get_collection(name, embedding_function=None),
            )
        except StoreUnavailable:
            raise
        except Exception as exc:  # chromadb raises NotFoundError (or ValueError in older clients)
            if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
                return None
            raise

    @staticmethod
    def _manifest_of(collection: Any) -> Manifest | None:
        meta = collection.metadata or {}
        raw = meta.get(MANIFEST_KEY)
        if not raw:
            return None
        try:
            return Manifest.from_json(raw)
        except (ValueError, TypeError):
            return None

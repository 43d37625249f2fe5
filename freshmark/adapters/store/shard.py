"""One Chroma of the store: an embedded ``PersistentClient`` or a Chroma server.

A server is spoken to through its REST API (``server_client.py``), not chromadb's
``HttpClient``, whose import and construction cost ~0.55 s of CPU in every new process.
Credentials in a server URL (``http://user:password@host:8000``) are sent as HTTP basic auth
and never appear in a message: ``location`` and every error name the URL redacted
(``http://***@host:8000``). Vectors are always ours (``embedding_function=None``):
``get_collection`` without it would attach Chroma's default embedder, which downloads a model
at run time.

chromadb is imported when the embedded Chroma is first used, not when the store is opened: the
import costs ~0.5 s of CPU. Until then it lists its collections from the store's file
(``catalog.py``), so a process that reads only manifests (``status``) never pays it;
long-lived processes import it at start (``import_client_library``).
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from freshmark.adapters.store.calls import guard
from freshmark.adapters.store.catalog import EmbeddedCatalog, ListedCollection
from freshmark.adapters.store.chroma_loader import EMBEDDED_CLIENT_MODULES, load_chromadb
from freshmark.adapters.store.client import ChromaClient, ChromaCollection
from freshmark.adapters.store.server_client import (
    NOT_JSON,
    ChromaServerError,
    NotFoundError,
    ServerClient,
)
from freshmark.core.errors import ConfigError, StoreNotWritable, StoreUnavailable
from freshmark.core.placement import ChromaServer
from freshmark.core.settings import Settings

# A segment directory is named by its id, a UUID: nothing else beside the file is removed.
_SEGMENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# Every branch collection measures cosine distance (vectors are unit length).
COLLECTION_CONFIGURATION = {"hnsw": {"space": "cosine"}}


class Shard:
    """One Chroma: its client, where it is (``location``, safe to show) and the ``identity``
    placement hashes (a server's URL without credentials; the path of an embedded store).

    A server is connected to on first use, not when the store is opened: a server that is
    down fails the requests that need it (``StoreUnavailable`` naming it, retryable), and
    repositories on the other servers keep working. A failed connection is tried again by
    the next call."""

    def __init__(self, client: ChromaClient | None, location: str, identity: str,
                 connect: Callable[[], ChromaClient] | None = None,
                 catalog: EmbeddedCatalog | None = None):
        self._client = client
        self._connect = connect
        self._catalog = catalog  # lists collections while no client is open
        self._connecting = threading.Lock()
        self.location = location
        self.identity = identity

    @property
    def client(self) -> ChromaClient:
        with self._connecting:  # threads of a server share one client
            if self._client is None:
                assert self._connect is not None
                self._client = self._connect()
        return self._client

    @client.setter
    def client(self, client: ChromaClient) -> None:
        self._client = client

    @classmethod
    def server(cls, server: ChromaServer, variable: str) -> Shard:
        """``server`` as a shard, connected on first use (``_connect``)."""
        return cls(None, server.shown, server.identity,
                   connect=lambda: _connect(server, variable))

    @classmethod
    def embedded(cls, path: Path) -> Shard:
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreNotWritable(
                f"store directory {path} is not writable: {exc.strerror}"
            ) from exc
        return cls(None, str(path), str(path), connect=lambda: _persistent(path),
                   catalog=EmbeddedCatalog(path))

    def require(self) -> None:
        """Fail now, naming this Chroma, when it cannot be used: a server's client connects
        (a heartbeat), whose error says why. An embedded store's file says what is wrong, if
        anything, when it is opened."""
        if self._catalog is None:
            _ = self.client

    def collections(self) -> list[ChromaCollection | ListedCollection]:
        """Every collection with its metadata, in one call (not one ``get`` per name); from
        the embedded store's file while this process has no client open."""
        if self._client is None and self._catalog is not None:
            listed = self._catalog.collections()
            if listed is not None:
                return list(listed)
        return list(guard(f"list collections on {self.location}", self.client.list_collections))

    def names(self) -> list[str]:
        return [collection.name for collection in self.collections()]

    def get(self, name: str) -> ChromaCollection | None:
        """The collection ``name``, or None when this Chroma has none of that name."""
        try:
            return guard(
                f"open a collection on {self.location}",
                lambda: self.client.get_collection(name, embedding_function=None),
            )
        except StoreUnavailable:
            raise
        except NotFoundError:  # a server's answer
            return None
        except Exception as exc:  # chromadb raises NotFoundError (or ValueError in older clients)
            if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
                return None
            raise

    def create(self, name: str, metadata: dict[str, Any]) -> ChromaCollection:
        return guard(
            "create a collection",
            lambda: self.client.get_or_create_collection(
                name, embedding_function=None, metadata=metadata,
                configuration=COLLECTION_CONFIGURATION,
            ),
        )

    def delete(self, name: str) -> None:
        segments = self._catalog.segment_ids(name) if self._catalog is not None else []
        guard("drop a collection", lambda: self.client.delete_collection(name))
        # The embedded Chroma leaves a dropped collection's vector files on disk
        # (chroma-core/chroma#5259): every drop would leave its index behind.
        for segment in segments:
            directory = Path(self.location) / segment
            if _SEGMENT_ID.fullmatch(segment) and directory.is_dir():
                shutil.rmtree(directory, ignore_errors=True)


def import_client_library(settings: Settings) -> None:
    """Import chromadb now when ``settings`` keep the store embedded. A long-lived process
    calls it at start (the API server; a worker's parent before its pool forks, so the
    children share it): its first request or job then does not pay the import. A process
    whose Chroma is a server never imports it."""
    if not settings.chroma_server_urls:
        load_chromadb(*EMBEDDED_CLIENT_MODULES)


def _persistent(path: Path) -> Any:
    """The embedded Chroma's client."""
    load_chromadb(*EMBEDDED_CLIENT_MODULES)
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    return chromadb.PersistentClient(path=str(path),
                                     settings=ChromaSettings(anonymized_telemetry=False))


def _connect(server: ChromaServer, variable: str) -> ServerClient:
    """A client of ``server`` that answered a heartbeat; ``StoreUnavailable`` (retryable)
    when it does not, naming ``variable`` when it refuses the credentials; ``ConfigError``
    when what answers there has no Chroma 1.x API (``/api/v2``)."""
    client = ServerClient(server)
    shown = server.shown
    try:
        guard(f"reach the Chroma server at {shown}", client.heartbeat)
    except ChromaServerError as exc:
        if exc.status in (401, 403):
            raise StoreUnavailable(f"the Chroma server at {shown} refused access (401/403); "
                                   f"give its user and password in {variable}, "
                                   "http://user:password@host:port") from exc
        if exc.status in (404, 405) or exc.kind == NOT_JSON:
            raise ConfigError(f"{variable}: {shown} has no Chroma API at /api/v2 ({exc.kind}, HTTP "
                              f"{exc.status}); it needs a Chroma server of release 1.x, as "
                              "`chroma run` of the chromadb freshmark installs") from exc
        raise
    return client

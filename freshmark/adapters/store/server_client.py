"""A Chroma server's REST API (``/api/v2``), spoken with the standard library.

chromadb's ``HttpClient`` costs ~0.55 s of CPU in every new process before its first request:
importing its API types, every embedding function it ships, OpenTelemetry's exporters and
pydantic settings, then building the client. That was half of a 10-file incremental run in a
new process (``bench/RESULTS.md``). freshmark uses a dozen calls of that API, always with its
own vectors; they are written here with the names and keywords of chromadb's client and
collection, so the store's code is one for both kinds of Chroma. The embedded Chroma keeps
chromadb's ``PersistentClient``: its engine is in that package.

What chromadb's client does that freshmark relies on is done here too: vectors go as base64
float32 when the server's pre-flight says it reads them, a collection records no embedding
function (``legacy``, as chromadb's client writes it for ``embedding_function=None``), and an
error answer becomes an exception with Chroma's error name (``NotFoundError``). Each thread
keeps one keep-alive connection (a forked child opens its own); a connection the server closed
while idle is opened again once. Every request has a time bound and every answer a size
bound; credentials go as HTTP basic auth and appear in no message.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import numpy as np

from freshmark.adapters.store.calls import MAX_BATCH
from freshmark.core.placement import ChromaServer

DEFAULT_TENANT = "default_tenant"
DEFAULT_DATABASE = "default_database"
REQUEST_TIMEOUT_SECONDS = 300.0  # a 5,000-record write to a loaded server takes seconds
# A host that does not answer fails in seconds. A server that accepted the connection has the
# request's bound: a busy or paused one may yet answer, and the job waiting keeps its lease.
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_ANSWER_BYTES = 512 * 1024 * 1024
NOT_JSON = "NotJSON"  # the ``kind`` of a success answer that is not JSON: not a Chroma
_COLLECTIONS = f"/tenants/{DEFAULT_TENANT}/databases/{DEFAULT_DATABASE}/collections"
# What chromadb's client records for a collection created with ``embedding_function=None``.
_NO_EMBEDDING_FUNCTION = {"type": "legacy"}
_DEFAULT_INCLUDE = ("metadatas", "documents")
# Statuses of a proxy or load balancer whose Chroma is down: retryable, as a refused connection.
_UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
# A keep-alive connection the server closed while idle fails the next request with one of these.
_STALE_CONNECTION = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class ChromaServerError(Exception):
    """The server answered ``status`` with an error; ``kind`` is Chroma's name for it."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(f"HTTP {status} {kind}: {message}")
        self.status = status
        self.kind = kind


class NotFoundError(ChromaServerError):
    """No collection of that name (Chroma's ``NotFoundError``)."""


class UpstreamUnavailable(ChromaServerError):
    """A proxy answered that the server behind it is down (502, 503, 504)."""


class Transport:
    """JSON requests to one server's ``/api/v2``: one keep-alive connection per thread."""

    def __init__(self, server: ChromaServer, timeout_seconds: float = REQUEST_TIMEOUT_SECONDS):
        self._server = server
        self._timeout_seconds = timeout_seconds
        self._headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if server.username is not None:
            pair = f"{server.username}:{server.password or ''}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        self._local = threading.local()

    def request(self, method: str, route: str, body: Any = None) -> Any:
        """The decoded answer of ``method`` on ``route``; ``ChromaServerError`` for an error
        answer, the socket's own error (refused, reset, timed out) when there is none."""
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        path = "/api/v2" + quote(route, safe="/")
        for attempt in (1, 2):
            connection, reused = self._connection()
            try:
                connection.request(method, path, body=payload, headers=self._headers)
                response = connection.getresponse()
                data = response.read(MAX_ANSWER_BYTES + 1)
            except _STALE_CONNECTION:
                self._close()
                if reused and attempt == 1:
                    # The server closed it while idle: once more on a new one. Sending a call
                    # twice is safe: freshmark's writes are upserts, updates and deletes by id.
                    continue
                raise
            except BaseException:
                self._close()
                raise
            if response.will_close or len(data) > MAX_ANSWER_BYTES:
                self._close()
            return _decoded(response.status, data)
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it served a request before. One made before
        a fork belongs to the parent: the child opens its own (a socket two processes share
        would mix their answers)."""
        held: tuple[int, http.client.HTTPConnection] | None = getattr(self._local, "held", None)
        if held is not None and held[0] == os.getpid():
            return held[1], True
        kind = http.client.HTTPSConnection if self._server.ssl else http.client.HTTPConnection
        connection = kind(self._server.host, self._server.port,
                          timeout=min(self._timeout_seconds, CONNECT_TIMEOUT_SECONDS))
        connection.connect()
        connection.timeout = self._timeout_seconds
        if connection.sock is not None:
            connection.sock.settimeout(self._timeout_seconds)
        self._local.held = (os.getpid(), connection)
        return connection, False

    def _close(self) -> None:
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held[0] == os.getpid():
            held[1].close()


def _decoded(status: int, data: bytes) -> Any:
    if len(data) > MAX_ANSWER_BYTES:
        raise ChromaServerError(status, "AnswerTooLarge",
                                f"the answer is over {MAX_ANSWER_BYTES} bytes")
    try:
        answer = json.loads(data) if data else None
    except ValueError:
        if 200 <= status < 300:  # not a Chroma that answered
            raise ChromaServerError(status, NOT_JSON, "the answer is not JSON") from None
        answer = None
    if 200 <= status < 300:
        return answer
    kind = answer.get("error") if isinstance(answer, dict) else None
    message = answer.get("message") if isinstance(answer, dict) else None
    if not isinstance(kind, str) or not isinstance(message, str):
        kind, message = "HTTPError", data[:200].decode("utf-8", "replace")
    error = NotFoundError if kind == "NotFoundError" else \
        UpstreamUnavailable if status in _UNAVAILABLE_STATUSES else ChromaServerError
    raise error(status, kind, message)


class ServerClient:
    """A Chroma server's collections, with the calls of chromadb's client freshmark makes."""

    def __init__(self, server: ChromaServer,
                 timeout_seconds: float = REQUEST_TIMEOUT_SECONDS):
        self._api = Transport(server, timeout_seconds)
        self._pre_flight: dict[str, Any] | None = None

    def heartbeat(self) -> int:
        return int(self._api.request("GET", "/heartbeat")["nanosecond heartbeat"])

    def list_collections(self) -> list[ServerCollection]:
        return [self._collection(entry) for entry in self._api.request("GET", _COLLECTIONS)]

    def get_collection(self, name: str, embedding_function: None = None) -> ServerCollection:
        return self._collection(self._api.request("GET", f"{_COLLECTIONS}/{name}"))

    def get_or_create_collection(self, name: str, embedding_function: None = None,
                                 metadata: dict[str, Any] | None = None,
                                 configuration: dict[str, Any] | None = None
                                 ) -> ServerCollection:
        body = {"name": name, "metadata": metadata, "get_or_create": True, "schema": None,
                "configuration": {**(configuration or {}),
                                  "embedding_function": _NO_EMBEDDING_FUNCTION}}
        return self._collection(self._api.request("POST", _COLLECTIONS, body))

    def delete_collection(self, name: str) -> None:
        self._api.request("DELETE", f"{_COLLECTIONS}/{name}")

    def pre_flight(self) -> dict[str, Any]:
        """What the server says it accepts (``max_batch_size``, ``supports_base64_encoding``),
        asked once."""
        if self._pre_flight is None:
            checks = self._api.request("GET", "/pre-flight-checks")
            self._pre_flight = checks if isinstance(checks, dict) else {}
        return self._pre_flight

    def max_batch_size(self) -> int:
        """The most records one write may carry: the server's limit, else freshmark's own."""
        limit = self.pre_flight().get("max_batch_size")
        return limit if isinstance(limit, int) and limit > 0 else MAX_BATCH

    def vectors(self, embeddings: Any) -> list[Any]:
        """``embeddings`` as the server reads them: base64 of little-endian float32 when its
        pre-flight says it can (a quarter of the JSON's size), else lists of floats."""
        rows = np.asarray(embeddings, dtype="<f4")
        if not self.pre_flight().get("supports_base64_encoding"):
            return [row.tolist() for row in rows]
        return [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]

    def _collection(self, answer: dict[str, Any]) -> ServerCollection:
        return ServerCollection(self, self._api, answer)


class ServerCollection:
    """One collection on a server: ``name``, ``id``, ``metadata`` as last read or written."""

    def __init__(self, client: ServerClient, api: Transport, answer: dict[str, Any]):
        self._client = client
        self._api = api
        self.id = str(answer["id"])
        self.name = str(answer["name"])
        self.metadata: dict[str, Any] | None = answer.get("metadata")

    @property
    def _route(self) -> str:
        return f"{_COLLECTIONS}/{self.id}"

    def count(self) -> int:
        return int(self._api.request("GET", f"{self._route}/count"))

    def modify(self, name: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        self._api.request("PUT", self._route, {"new_name": name, "new_metadata": metadata,
                                               "new_configuration": None})
        self.name = name if name is not None else self.name
        self.metadata = metadata if metadata is not None else self.metadata

    def get(self, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None,
            limit: int | None = None, offset: int | None = None,
            include: Sequence[str] = _DEFAULT_INCLUDE) -> dict[str, Any]:
        """``ids``, and ``embeddings`` (lists of floats), ``documents``, ``metadatas`` as
        ``include`` asks, of the records matching."""
        return dict(self._api.request("POST", f"{self._route}/get", {
            "ids": _listed(ids), "where": where, "limit": limit, "offset": offset,
            "where_document": None, "include": list(include)}))

    def query(self, query_embeddings: Sequence[Any], n_results: int = 10,
              where: dict[str, Any] | None = None,
              include: Sequence[str] = (*_DEFAULT_INCLUDE, "distances")) -> dict[str, Any]:
        vectors = [np.asarray(v, dtype=np.float32).tolist() for v in query_embeddings]
        return dict(self._api.request("POST", f"{self._route}/query", {
            "ids": None, "query_embeddings": vectors, "n_results": n_results, "where": where,
            "where_document": None, "include": list(include)}))

    def add(self, ids: Sequence[str], embeddings: Any = None,
            metadatas: Sequence[dict[str, Any]] | None = None,
            documents: Sequence[str] | None = None) -> None:
        self._write("add", ids, embeddings, metadatas, documents)

    def upsert(self, ids: Sequence[str], embeddings: Any = None,
               metadatas: Sequence[dict[str, Any]] | None = None,
               documents: Sequence[str] | None = None) -> None:
        self._write("upsert", ids, embeddings, metadatas, documents)

    def update(self, ids: Sequence[str], embeddings: Any = None,
               metadatas: Sequence[dict[str, Any]] | None = None,
               documents: Sequence[str] | None = None) -> None:
        self._write("update", ids, embeddings, metadatas, documents)

    def delete(self, ids: Sequence[str] | None = None,
               where: dict[str, Any] | None = None) -> None:
        self._api.request("POST", f"{self._route}/delete",
                          {"ids": _listed(ids), "where": where, "where_document": None})

    def _write(self, action: str, ids: Sequence[str], embeddings: Any,
               metadatas: Sequence[dict[str, Any]] | None,
               documents: Sequence[str] | None) -> None:
        """One request per ``max_batch_size`` records (a server may accept fewer than
        freshmark's ``MAX_BATCH``)."""
        size = self._client.max_batch_size()
        for start in range(0, len(ids), size):
            part = slice(start, start + size)
            vectors = None if embeddings is None else self._client.vectors(embeddings[part])
            self._api.request("POST", f"{self._route}/{action}", {
                "ids": list(ids[part]), "embeddings": vectors, "uris": None,
                "metadatas": _part(metadatas, part), "documents": _part(documents, part)})


def _listed(items: Sequence[Any] | None) -> list[Any] | None:
    return None if items is None else list(items)


def _part(items: Sequence[Any] | None, part: slice) -> list[Any] | None:
    return None if items is None else list(items[part])

"""A Chroma's collections and their metadata, listed without chromadb's client.

Importing chromadb costs ~0.7 s of CPU, more than all else a ``status`` does; a process that
needs only the manifests (collection names and metadata) lists them before any client is
opened (``shard.py``): from the embedded Chroma's own SQLite file, read-only, or from a
server's REST listing with the standard library. It is the same data the client returns, not
a copy: nothing else is written. Any answer not as expected (another Chroma version, a server
that refuses or is down) is None, and the caller asks the client, whose errors say why.
Written by hand: Chroma has no reader that does not import its whole client.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.request
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from freshmark.core.placement import ChromaServer

FILE_NAME = "chroma.sqlite3"
DEFAULT_TENANT = "default_tenant"
DEFAULT_DATABASE = "default_database"
BUSY_TIMEOUT_SECONDS = 5.0  # a writer holds the file for one transaction at a time
REQUEST_TIMEOUT_SECONDS = 10.0
MAX_LISTING_BYTES = 64 * 1024 * 1024  # ~60k manifests; a larger listing goes to the client

_COLLECTIONS = """
SELECT c.name, m.key, m.str_value, m.int_value, m.float_value, m.bool_value
FROM collections AS c
JOIN databases AS d ON d.id = c.database_id
LEFT JOIN collection_metadata AS m ON m.collection_id = c.id
WHERE d.name = ? AND d.tenant_id = ?
"""


@dataclass(frozen=True)
class ListedCollection:
    """A collection as a listing shows it: what ``manifest_of`` and name filters read."""

    name: str
    metadata: dict[str, Any] = field(default_factory=dict)


class Catalog(Protocol):
    def collections(self) -> list[ListedCollection] | None:
        """Every collection of the default database with its metadata; None: ask the client."""

    def reachable(self) -> bool:
        """Whether the Chroma answers (a server's heartbeat); False: ask the client why."""


class EmbeddedCatalog:
    """The collections of the embedded Chroma under ``path``, read without its client."""

    def __init__(self, path: Path):
        self._file = path.resolve() / FILE_NAME

    def collections(self) -> list[ListedCollection] | None:
        """Every collection of the default database with its metadata; [] for a store never
        written; None when the file cannot be read as expected (ask the client)."""
        if not self._file.exists():
            return []
        try:
            with closing(sqlite3.connect(f"{self._file.as_uri()}?mode=ro", uri=True,
                                         timeout=BUSY_TIMEOUT_SECONDS)) as db:
                rows = db.execute(_COLLECTIONS, (DEFAULT_DATABASE, DEFAULT_TENANT)).fetchall()
        except sqlite3.Error:
            return None
        return _grouped(rows)

    def reachable(self) -> bool:
        return True  # a file on this host: opening it says what is wrong, if anything


class ServerCatalog:
    """The collections of a Chroma server, from its REST API (``/api/v2``), without its
    client. Credentials go as HTTP basic auth, as the client sends them; no error carries
    them (every failure is None or False)."""

    def __init__(self, server: ChromaServer):
        host = f"[{server.host}]" if ":" in server.host else server.host
        self._base = f"{'https' if server.ssl else 'http'}://{host}:{server.port}/api/v2"
        self._headers = {"Accept": "application/json"}
        if server.username is not None:
            pair = f"{server.username}:{server.password or ''}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()

    def _get(self, route: str) -> Any | None:
        request = urllib.request.Request(self._base + route, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                body = response.read(MAX_LISTING_BYTES + 1)
        except (OSError, ValueError):  # refused, down, timed out, 4xx/5xx (HTTPError)
            return None
        if len(body) > MAX_LISTING_BYTES:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None

    def reachable(self) -> bool:
        return self._get("/heartbeat") is not None

    def collections(self) -> list[ListedCollection] | None:
        listed = self._get(f"/tenants/{DEFAULT_TENANT}/databases/{DEFAULT_DATABASE}/collections")
        if not isinstance(listed, list):
            return None
        out = []
        for entry in listed:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                return None
            metadata = entry.get("metadata") or {}
            if not isinstance(metadata, dict):
                return None
            out.append(ListedCollection(entry["name"], metadata))
        return out


def _grouped(rows: list[tuple[Any, ...]]) -> list[ListedCollection]:
    metadata: dict[str, dict[str, Any]] = {}
    for name, key, *values in rows:
        held = metadata.setdefault(name, {})
        if key is not None:
            held[key] = _value(*values)
    return [ListedCollection(name, meta) for name, meta in sorted(metadata.items())]


def _value(text: str | None, integer: int | None, real: float | None,
           boolean: int | None) -> Any:
    """The one typed column a metadata row fills."""
    if text is not None:
        return text
    if integer is not None:
        return integer
    if real is not None:
        return real
    return None if boolean is None else bool(boolean)

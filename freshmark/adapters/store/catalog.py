"""The embedded Chroma's collections and their metadata, listed without chromadb's client.

Importing chromadb costs ~0.5 s of CPU, more than all else a ``status`` does; a process that
needs only the manifests (collection names and metadata) lists them before the client is
opened (``shard.py``), from the embedded Chroma's own SQLite file, read-only. It is the same
data the client returns, not a copy: nothing else is written. Any answer not as expected
(another Chroma version, a file of other tables) is None, and the caller asks the client,
whose errors say why. Written by hand: Chroma has no reader that does not import its whole
client. A server needs none: its client (``server_client.py``) does not import chromadb.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshmark.adapters.store.server_client import DEFAULT_DATABASE, DEFAULT_TENANT

FILE_NAME = "chroma.sqlite3"
BUSY_TIMEOUT_SECONDS = 5.0  # a writer holds the file for one transaction at a time

_COLLECTIONS = """
SELECT c.name, m.key, m.str_value, m.int_value, m.float_value, m.bool_value
FROM collections AS c
JOIN databases AS d ON d.id = c.database_id
LEFT JOIN collection_metadata AS m ON m.collection_id = c.id
WHERE d.name = ? AND d.tenant_id = ?
"""

_SEGMENTS = """
SELECT s.id FROM segments AS s
JOIN collections AS c ON c.id = s.collection
JOIN databases AS d ON d.id = c.database_id
WHERE c.name = ? AND d.name = ? AND d.tenant_id = ?
"""


@dataclass(frozen=True)
class ListedCollection:
    """A collection as a listing shows it: what ``manifest_of`` and name filters read."""

    name: str
    metadata: dict[str, Any] = field(default_factory=dict)


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

    def segment_ids(self, name: str) -> list[str]:
        """The ids of the collection's segments (each a directory beside the file when it
        holds vectors); [] when the file cannot tell."""
        if not self._file.exists():
            return []
        try:
            with closing(sqlite3.connect(f"{self._file.as_uri()}?mode=ro", uri=True,
                                         timeout=BUSY_TIMEOUT_SECONDS)) as db:
                rows = db.execute(_SEGMENTS, (name, DEFAULT_DATABASE, DEFAULT_TENANT)).fetchall()
        except sqlite3.Error:
            return []
        return [str(segment_id) for (segment_id,) in rows]


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

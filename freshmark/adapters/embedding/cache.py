"""Embedding vectors cached by (embedder id, text sha256), shared by every process on a host.

An unchanged chunk is never embedded twice: not on re-index, not on another branch. The store is
one SQLite file in WAL mode (readers do not block the writer) with a busy timeout, so several
worker processes can read and write it at once. A connection is never carried across ``fork``:
the cache reopens its connection in a child process.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from freshmark.adapters.sqlite_wal import connect_wal
from freshmark.adapters.telemetry import counters
from freshmark.core.errors import RetryableError

log = logging.getLogger(__name__)
BUSY_TIMEOUT_SECONDS = 30.0
# Stays under SQLite's bound-parameter limit (999 on old builds) with room for the id.
_LOOKUP_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    embedder_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder_id, text_sha256)
) WITHOUT ROWID
"""


class _EmbedderLike(Protocol):
    id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 text: the cache key of a chunk's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class EmbeddingCache:
    """float32 vectors keyed by (embedder id, text sha256) in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._owner_pid = -1
        with self._lock:
            self._connect()

    def _connect(self) -> sqlite3.Connection:
        # A connection inherited through fork shares file locks with the parent: open a new one.
        if self._connection is None or self._owner_pid != os.getpid():
            try:
                self._connection = self._open()
            except sqlite3.OperationalError as error:
                raise RetryableError(f"embedding cache {self.path} unavailable: {error}") from error
            self._owner_pid = os.getpid()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        connection = connect_wal(self.path, BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        try:
            connection.execute("PRAGMA synchronous=NORMAL")  # WAL keeps this crash-safe
            connection.execute(_SCHEMA)
            connection.commit()
        except BaseException:
            connection.close()
            raise
        return connection

    def get_many(self, embedder_id: str, text_shas: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the shas that have one; missing shas are simply absent."""
        unique_shas = list(dict.fromkeys(text_shas))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            connection = self._connect()
            for chunk in _chunks(unique_shas, _LOOKUP_CHUNK):
                marks = ",".join("?" * len(chunk))
                query = (
                    "SELECT text_sha256, dim, vector FROM embeddings "
                    f"WHERE embedder_id = ? AND text_sha256 IN ({marks})"
                )
                try:
                    rows = connection.execute(query, (embedder_id, *chunk)).fetchall()
                except sqlite3.OperationalError as error:
                    raise RetryableError(f"embedding cache read failed: {error}") from error
                for sha, dim, blob in rows:
                    found[sha] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return found

    def put_many(self, embedder_id: str, items: Mapping[str, np.ndarray]) -> None:
        """Store vectors (as float32); an existing entry for the same key is kept as is.

        A write that fails (a full disk: "database or disk is full") is logged and counted,
        not raised: the cache only saves work, the run that has the vectors goes on, and they
        are computed again next time."""
        rows = []
        for sha, vector in items.items():
            flat = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
            rows.append((embedder_id, sha, int(flat.shape[0]), flat.tobytes()))
        if not rows:
            return
        with self._lock:
            try:
                connection = self._connect()
                with connection:  # one transaction: all rows or none
                    connection.executemany(
                        "INSERT OR IGNORE INTO embeddings "
                        "(embedder_id, text_sha256, dim, vector) VALUES (?, ?, ?, ?)",
                        rows,
                    )
            except (sqlite3.Error, RetryableError) as error:
                counters.EMBEDDING_CACHE_WRITE_FAILURES_TOTAL.inc()
                log.warning("embedding cache %s: %d vectors not stored (%s)", self.path,
                            len(rows), error)

    def count(self, embedder_id: str | None = None) -> int:
        """Number of cached vectors, for one embedder or for all."""
        with self._lock:
            connection = self._connect()
            if embedder_id is None:
                return int(connection.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE embedder_id = ?"
            return int(connection.execute(query, (embedder_id,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._owner_pid == os.getpid():
                self._connection.close()
            self._connection = None


def embed_with_cache(
    embedder: _EmbedderLike,
    cache: EmbeddingCache,
    texts_by_sha: Mapping[str, str],
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, np.ndarray], int, int]:
    """Vectors for every text, embedding only those the cache lacks for this embedder.

    Returns ``(vectors by sha, computed_count, reused_count)``. Misses are embedded in batches of
    ``batch_size`` texts, longest-similar together (sorted by length, to cut padding), and each
    batch is stored as soon as it is done, so an interrupted run keeps its progress.
    ``progress`` is called after each batch with the number of texts that batch computed.
    """
    vectors = cache.get_many(embedder.id, list(texts_by_sha))
    reused_count = len(vectors)
    missing_shas = sorted(
        (sha for sha in texts_by_sha if sha not in vectors),
        key=lambda sha: len(texts_by_sha[sha]),
    )
    for batch in _chunks(missing_shas, batch_size):
        batch_vectors = embedder.embed([texts_by_sha[sha] for sha in batch])
        computed = dict(zip(batch, batch_vectors, strict=True))
        cache.put_many(embedder.id, computed)
        vectors.update(computed)
        if progress is not None:
            progress(len(batch))
    return vectors, len(missing_shas), reused_count

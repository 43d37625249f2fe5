"""One collection's lexical index on disk as a tantivy index, kept in step with the store.

The index lives at ``cache_dir/tantivy/<collection>/`` (tantivy's own segment files, read
through memory maps, so every process of a host shares one copy in the page cache) and a state
file beside it, ``<collection>.state.json``: the collection identity and the store generation
the index holds. Catch-up follows docs/lexical-index.md: read the manifest generation; if the
index is behind, take the index's writer (tantivy's lock file, an OS lock released when its
process dies, so a ``kill -9`` leaves nothing that blocks the next writer), fetch only records
with ``updated_gen`` above the generation held (everything after a purge or a recreated
collection), delete each by id and add it as it now is, commit, then record the generation read
before fetching. A process that finds the writer busy searches the index as committed: the
re-read from Chroma still decides status and text.

Documents are chunks: ``id`` (raw), ``tokens`` (``tokenize.iter_tokens`` of path, symbol and
text joined by spaces and split again only on spaces, so tantivy keeps freshmark's code-aware
tokens exactly), ``path`` (raw), ``kind`` (``KIND_CODES`` of ``classify.search_kind``) and
``tombstoned`` (0/1). Design and limits: docs/lexical-index.md ("The tantivy engine").
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

try:
    import tantivy
except ImportError:  # the [tantivy] extra is not installed: only FRESHMARK_LEXICAL=tantivy needs it
    tantivy = None  # type: ignore[assignment]

from freshmark.adapters.lexical.index import collection_identity, document_tokens
from freshmark.core.classify import search_kind
from freshmark.core.errors import ConfigError
from freshmark.core.kinds import KIND_CODES
from freshmark.core.manifest import Manifest
from freshmark.core.ports import BranchView
from freshmark.core.stamp import TOMBSTONED, ChunkRecord

STATE_FORMAT = 1
TOKENIZER = "freshmark_tokens"
# The writer's indexing memory (tantivy flushes a segment when it is full) and threads: one,
# the machine's cores belong to the embedder and the query processes.
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1
# How long a catch-up waits for another process's writer before searching what is committed.
WRITER_WAIT_SECONDS = 5.0
WRITER_POLL_SECONDS = 0.05


@cache
def schema() -> tantivy.Schema:
    """The documents' fields (ConfigError when the tantivy package is not installed)."""
    if tantivy is None:
        raise ConfigError("FRESHMARK_LEXICAL=tantivy needs the tantivy package: "
                          "pip install 'freshmark[tantivy]'")
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("tokens", tokenizer_name=TOKENIZER, index_option="freq")
    builder.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("kind", indexed=True, fast=True)
    builder.add_unsigned_field("tombstoned", indexed=True, fast=True)
    return builder.build()



class WriterBusy(Exception):
    """Another process (or thread) holds this index's writer: retryable."""


@dataclass(frozen=True)
class IndexState:
    """What the index holds: the collection it follows (identity) and the store generation."""

    identity: str
    generation: int

    @classmethod
    def read(cls, path: Path) -> IndexState | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != STATE_FORMAT:
                return None
            return cls(str(data["identity"]), int(data["generation"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        """Atomically (temp file + rename): a reader sees the old state or the new one."""
        temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temp.write_text(json.dumps({"format": STATE_FORMAT, "identity": self.identity,
                                    "generation": self.generation}), encoding="utf-8")
        os.replace(temp, path)


def _document(record: ChunkRecord) -> tantivy.Document:
    document = tantivy.Document()
    document.add_text("id", record.id)
    document.add_text("tokens", " ".join(document_tokens(record)))
    document.add_text("path", record.path)
    document.add_unsigned("kind", KIND_CODES.get(search_kind(record.path, record.file_kind), 0))
    document.add_unsigned("tombstoned", int(record.status == TOMBSTONED))
    return document


def _open_index(directory: Path | None) -> tantivy.Index:
    """The index at ``directory`` (created when missing; None: in memory), with freshmark's
    whitespace analyzer registered. An index this schema cannot open is a cache: rebuilt."""
    if directory is None:
        index = tantivy.Index(schema())
    else:
        directory.mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(schema(), path=str(directory), reuse=True)
        except (ValueError, OSError):
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(schema(), path=str(directory), reuse=False)
    index.register_tokenizer(TOKENIZER,
                             tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


class TantivyCollection:
    """One collection's tantivy index as this process reads (and, when behind, writes) it.

    ``directory`` None keeps the index in memory (one process only, nothing persisted).
    """

    def __init__(self, collection: str, directory: Path | None) -> None:
        self.collection = collection
        self.directory = directory
        self.index = _open_index(directory)
        self._memory_state: IndexState | None = None
        self._loaded_state: IndexState | None = None
        self._lock = threading.Lock()  # one writer per process at a time; tantivy's lock for hosts

    @property
    def state_path(self) -> Path | None:
        if self.directory is None:
            return None
        return self.directory.with_name(f"{self.directory.name}.state.json")

    def state(self) -> IndexState | None:
        path = self.state_path
        return self._memory_state if path is None else IndexState.read(path)

    @property
    def generation(self) -> int:
        """The store generation of what this process searches (-1: nothing held)."""
        state = self._loaded_state
        return -1 if state is None else state.generation

    def searcher(self) -> tantivy.Searcher:
        return self.index.searcher()

    # -- keeping in step ----------------------------------------------------------------------
    def refresh(self, view: BranchView, manifest: Manifest | None = None,
                wait_seconds: float = WRITER_WAIT_SECONDS) -> int:
        """Bring the index up to the collection's generation; returns the records applied.

        No write when the committed state already matches (another process caught up): this
        process only reloads its searcher. If the writer stays busy for ``wait_seconds``, the
        committed index is searched as it is."""
        manifest = manifest or view.reload_manifest()
        identity = collection_identity(view)
        if self._current(identity, manifest):
            return 0
        try:
            with self._writer(wait_seconds) as writer:
                state = self.state()  # again, under the lock: another process may be done
                if state is not None and state.identity == identity and \
                        state.generation == int(manifest.generation):
                    applied = 0
                else:
                    applied = self._catch_up(writer, view, manifest, identity, state)
        except WriterBusy:
            applied = 0
        self._reload()
        return applied

    def _current(self, identity: str, manifest: Manifest) -> bool:
        state = self.state()
        if state is None or state.identity != identity or \
                state.generation != int(manifest.generation):
            return False
        if state != self._loaded_state:
            self._reload()
        return True

    def _catch_up(self, writer: tantivy.IndexWriter, view: BranchView, manifest: Manifest,
                  identity: str, state: IndexState | None) -> int:
        generation = int(manifest.generation)
        held = -1 if state is None or state.identity != identity else state.generation
        if held >= 0 and (generation < held or int(manifest.purged_generation) > held):
            held = -1  # recreated, or records deleted that generations cannot show
        if held < 0:
            writer.delete_all_documents()
        where = None if held < 0 else {"updated_gen": {"$gt": held}}
        applied = self._write(writer, view.iter_records(where=where, include_text=True),
                              replace=held >= 0)
        writer.commit()
        self._set_state(IndexState(identity, generation))
        return applied

    def apply(self, records: Iterable[ChunkRecord], wait_seconds: float = 0.0) -> int:
        """Index records as they now are (an in-flight catch-up); skipped if the writer is busy."""
        try:
            with self._writer(wait_seconds) as writer:
                applied = self._write(writer, records, replace=True)
                if applied:
                    writer.commit()
        except WriterBusy:
            return 0
        if applied:
            self._reload()
        return applied

    def forget(self, ids: Iterable[str], wait_seconds: float = 0.0) -> None:
        """Delete ids the store no longer holds (skipped if the writer is busy)."""
        wanted = list(ids)
        if not wanted:
            return
        try:
            with self._writer(wait_seconds) as writer:
                for doc_id in wanted:
                    writer.delete_documents_by_term("id", doc_id)
                writer.commit()
        except WriterBusy:
            return
        self._reload()

    @staticmethod
    def _write(writer: tantivy.IndexWriter, records: Iterable[ChunkRecord],
               replace: bool) -> int:
        applied = 0
        for record in records:
            if replace:
                writer.delete_documents_by_term("id", record.id)
            writer.add_document(_document(record))
            applied += 1
        return applied

    def _set_state(self, state: IndexState) -> None:
        path = self.state_path
        if path is None:
            self._memory_state = state
        else:
            state.write(path)

    def _reload(self) -> None:
        self.index.reload()
        self._loaded_state = self.state()

    @contextmanager
    def _writer(self, wait_seconds: float) -> Iterator[tantivy.IndexWriter]:
        """This index's writer, waiting up to ``wait_seconds`` for another holder; released
        (merges finished, lock file unlocked) on leaving. An exception rolls the writes back."""
        taken = self._lock.acquire(timeout=wait_seconds) if wait_seconds > 0 else \
            self._lock.acquire(blocking=False)
        if not taken:
            raise WriterBusy(self.collection)
        try:
            writer = _acquire_writer(self.index, wait_seconds, self.collection)
            try:
                yield writer
            except BaseException:
                writer.rollback()
                raise
            finally:
                writer.wait_merging_threads()
        finally:
            self._lock.release()


def _acquire_writer(index: tantivy.Index, wait_seconds: float, name: str) -> Any:
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
        except ValueError as error:
            if "LockBusy" not in str(error):
                raise
            if time.monotonic() >= deadline:
                raise WriterBusy(name) from error
            time.sleep(WRITER_POLL_SECONDS)

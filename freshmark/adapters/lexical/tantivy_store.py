"""One collection's lexical index on disk as tantivy indexes, kept in step with the store.

The chunk index lives at ``cache_dir/tantivy/<collection>/`` and the file index beside it at
``<collection>.files/`` (tantivy's segment files, read through memory maps, so every process of
a host shares one copy in the page cache), with a state file inside the chunk index,
``freshmark-state.json`` (tantivy leaves files it does not manage alone): the collection
identity and the store generation held. Catch-up follows docs/lexical-index.md: read the
manifest generation; if the index is behind, take the writers (tantivy's lock file, an OS lock
released when its process dies, so a ``kill -9`` leaves nothing that blocks the next writer),
fetch only records with ``updated_gen`` above the generation held (everything after a purge or
a recreated collection), delete each by id and add it as it now is, commit, rebuild the file
documents of the paths touched, commit, then record the generation read before fetching. A
process that finds the writer busy searches the index as committed: the re-read from Chroma
still decides status and text.

Documents and schema: ``tantivy_schema``. A catch-up leaves a fetched chunk whose ``content``
key is unchanged as it is, so a commit that restamps a file's chunks re-tokenizes only the
chunks whose text changed. Design and limits: docs/lexical-index.md ("The tantivy engine").
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import tantivy

from freshmark.adapters.lexical.tantivy_schema import (
    chunk_document,
    file_document,
    open_index,
    schema,
)
from freshmark.core.kinds import KIND_CODES
from freshmark.core.lexical_document import LexicalDocument, record_content_key
from freshmark.core.manifest import Manifest
from freshmark.core.ports import BranchView
from freshmark.core.stamp import ChunkRecord

STATE_FORMAT = 1
STATE_FILE = "freshmark-state.json"
# The writer's indexing memory (tantivy flushes a segment when it is full) and threads: one,
# the machine's cores belong to the embedder and the query processes.
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1
# How long a catch-up waits for another process's writer before searching what is committed.
WRITER_WAIT_SECONDS = 5.0
WRITER_POLL_SECONDS = 0.05
# Files whose documents are rebuilt from one read of their chunks.
FILE_BATCH = 256
# Documents a bulk write (a catch-up, a first run, the file documents) commits at once: each
# commit is a segment, and tantivy's merge policy puts every segment under ~16,800 documents
# on one level, merged whole once it holds 8. A small run's commit lands there; segments of a
# bulk write kept above it are not merged again by the small runs that follow (at 10,000, up
# to 7 of them were, by whichever run came next). The writer's memory stays bounded by its
# heap, which flushes to disk, not by the documents between commits.
COMMIT_RECORDS = 20_000
FILE_COMMIT_PATHS = 80 * FILE_BATCH
# Records of a catch-up compared with their committed documents in one search.
COMPARE_RECORDS = 512
_KIND_TABLE = hashlib.blake2b(json.dumps(KIND_CODES, sort_keys=True).encode(),
                              digest_size=8).hexdigest()


def collection_identity(collection: BranchView) -> str:
    """Tells a collection apart from an earlier one of the same name (dropped and recreated) or
    one of the same name in another store: the store's collection id and the manifest's
    creation time; and the kind codes the documents were written with (an index written
    under another table is rebuilt, not read with the wrong kinds)."""
    manifest = collection.manifest
    return (f"{manifest.repo_key}\0{manifest.branch}\0{manifest.created_at or ''}\0"
            f"{collection.collection_id}\0{_KIND_TABLE}")




@dataclass(frozen=True)
class Writers:
    chunks: tantivy.IndexWriter
    files: tantivy.IndexWriter


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


def _groups(records: Iterable[ChunkRecord], size: int) -> Iterator[list[ChunkRecord]]:
    iterator = iter(records)
    while group := list(islice(iterator, size)):
        yield group


class TantivyCollection:
    """One collection's tantivy index as this process reads (and, when behind, writes) it.

    ``directory`` None keeps the index in memory (one process only, nothing persisted).
    """

    def __init__(self, collection: str, directory: Path | None) -> None:
        self.collection = collection
        self.directory = directory
        self.index, _ = open_index(directory, files=False)
        self.files, files_recreated = open_index(
            None if directory is None else directory.with_name(f"{directory.name}.files"),
            files=True)
        if files_recreated and directory is not None:
            (directory / STATE_FILE).unlink(missing_ok=True)  # the chunks' state covers both
        self._memory_state: IndexState | None = None
        self._loaded_state: IndexState | None = None
        self._lock = threading.Lock()  # one writer per process at a time; tantivy's lock for hosts
        self._opened_inode = _inode(directory)

    def still_on_disk(self) -> bool:
        """False when the directory this handle opened was deleted since (another process
        dropped the collection, and maybe indexed it again under the same name): its files
        are gone and no writer can lock them, so the handle must be opened anew."""
        return self.directory is None or _inode(self.directory) == self._opened_inode

    @property
    def state_path(self) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / STATE_FILE

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

    def file_searcher(self) -> tantivy.Searcher:
        return self.files.searcher()

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

    def is_current(self, view: BranchView) -> bool:
        """Whether the committed index holds the collection at its generation (this process's
        searcher then reloaded to it); nothing is written."""
        return self._current(collection_identity(view), view.reload_manifest())

    def _current(self, identity: str, manifest: Manifest) -> bool:
        state = self.state()
        if state is None or state.identity != identity or \
                state.generation != int(manifest.generation):
            return False
        if state != self._loaded_state:
            self._reload()
        return True

    def _catch_up(self, writer: Writers, view: BranchView, manifest: Manifest,
                  identity: str, state: IndexState | None) -> int:
        generation = int(manifest.generation)
        held = -1 if state is None or state.identity != identity else state.generation
        if held >= 0 and (generation < held or int(manifest.purged_generation) > held):
            held = -1  # recreated, or records deleted that generations cannot show
        held = manifest.rewound_held(held)  # records of overlapping layer runs published late
        if held < 0:
            writer.chunks.delete_all_documents()
            writer.files.delete_all_documents()
        where = None if held < 0 else {"updated_gen": {"$gt": held}}
        applied = self._write(writer, view.iter_records(where=where, include_text=True),
                              replace=held >= 0)
        self._set_state(IndexState(identity, generation))
        return applied

    # -- a first run written through (no read-back) ------------------------------------------
    def start_first_run(self) -> bool:
        """Empty the index and its state for a collection's first run, whose records are then
        written here as the run writes them to the store (``apply``); False when the writer
        stays busy (the run is then caught up after it, as any)."""
        try:
            with self._writer(WRITER_WAIT_SECONDS) as writer:
                for held in (writer.chunks, writer.files):
                    held.delete_all_documents()
                    held.commit()
                self._clear_state()
        except WriterBusy:
            return False
        self._reload()
        return True

    def writers(self, wait_seconds: float) -> AbstractContextManager[Writers]:
        """This index's writers, held (a first run written through keeps them for the run);
        ``WriterBusy`` if another holder keeps them ``wait_seconds``."""
        return self._writer(wait_seconds)

    def add_chunks(self, writer: Writers, documents: Iterable[LexicalDocument]) -> set[str]:
        """Chunk documents added, not committed; their paths."""
        paths = set()
        for document in documents:
            writer.chunks.delete_documents_by_term("id", document.id)
            writer.chunks.add_document(chunk_document(document))
            paths.add(document.path)
        return paths

    def rebuild_files(self, writer: Writers, paths: Iterable[str]) -> None:
        """The chunks committed, then the file documents of ``paths`` rebuilt from them."""
        writer.chunks.commit()
        self._rebuild_files(writer.files, paths)

    def adopt(self, view: BranchView, manifest: Manifest) -> bool:
        """Record the index as holding ``view`` at ``manifest``'s generation when it holds as
        many chunks as the collection now does: the run wrote every record here as it wrote
        it to the store (its ids a subset of the collection's, so equal counts are equal
        sets); a record another process wrote meanwhile makes the counts differ, and the
        usual catch-up reads it. ``manifest`` is read before the count."""
        try:
            with self._writer(WRITER_WAIT_SECONDS):
                self.index.reload()
                if self.index.searcher().num_docs != view.count():
                    return False
                self._set_state(IndexState(collection_identity(view), int(manifest.generation)))
        except WriterBusy:
            return False
        self._reload()
        return True

    def _clear_state(self) -> None:
        path = self.state_path
        if path is None:
            self._memory_state = None
        else:
            path.unlink(missing_ok=True)

    def apply(self, records: Iterable[ChunkRecord], wait_seconds: float = 0.0) -> int:
        """Index records as they now are (an in-flight catch-up); skipped if the writer is busy."""
        try:
            with self._writer(wait_seconds) as writer:
                applied = self._write(writer, records, replace=True)
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
                paths = self._paths_of(wanted)
                for doc_id in wanted:
                    writer.chunks.delete_documents_by_term("id", doc_id)
                writer.chunks.commit()
                self._rebuild_files(writer.files, paths)
        except WriterBusy:
            return
        self._reload()

    def _write(self, writer: Writers, records: Iterable[ChunkRecord], replace: bool) -> int:
        """Index chunks as they now are, then rebuild the documents of their files from the
        committed chunks (a chunk id names its path: a chunk never moves between files)."""
        applied, paths = self._write_chunks(writer, records, replace)
        self._rebuild_files(writer.files, paths)
        return applied

    def _write_chunks(self, writer: Writers, records: Iterable[ChunkRecord],
                      replace: bool) -> tuple[int, set[str]]:
        """Chunk documents, committed every ``COMMIT_RECORDS`` written (a catch-up of a whole
        collection streams through here, read a page at a time); the records applied, and
        the paths of those written. With
        ``replace``, a record whose committed document has its content key is left as it
        is: restamped, not changed."""
        applied, written, paths = 0, 0, set()
        if replace:
            self.index.reload()  # compared with what is committed, not what was last read
        for group in _groups(records, COMPARE_RECORDS):
            unchanged = self._unchanged(group) if replace else set()
            for record in group:
                applied += 1
                if record.id in unchanged:
                    continue
                if replace:
                    writer.chunks.delete_documents_by_term("id", record.id)
                writer.chunks.add_document(chunk_document(LexicalDocument.of(record)))
                paths.add(record.path)
                written += 1
                if written % COMMIT_RECORDS == 0:
                    writer.chunks.commit()
        writer.chunks.commit()
        return applied, paths

    def _unchanged(self, records: Sequence[ChunkRecord]) -> set[str]:
        """Ids of ``records`` whose committed document has the content key the record's
        would have."""
        keys = {record.id: key for record in records if (key := record_content_key(record))}
        if not keys:
            return set()
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.term_set_query(schema(), "id", list(keys)),
                               len(keys), count=False).hits
        unchanged = set()
        for _, address in hits:
            document = searcher.doc(address)
            doc_id = str(document.get_first("id"))
            if keys.get(doc_id) == document.get_first("content"):
                unchanged.add(doc_id)
        return unchanged

    def _paths_of(self, ids: Sequence[str]) -> set[str]:
        """The paths the committed index holds ``ids`` under."""
        searcher = self.index.searcher()
        hits = searcher.search(tantivy.Query.term_set_query(schema(), "id", list(ids)),
                               len(ids), count=False).hits
        return {str(searcher.doc(address).get_first("path")) for _, address in hits}

    def _rebuild_files(self, writer: tantivy.IndexWriter, paths: Iterable[str]) -> None:
        """Each path's file document: the tokens of its live chunks, as committed; a path
        without live chunks loses its document. Read ``FILE_BATCH`` paths at a time and
        committed every ``FILE_COMMIT_PATHS``; each path once (a document rebuilt twice would
        leave a deleted one counted in the statistics until a merge)."""
        self.index.reload()
        searcher = self.index.searcher()
        ordered = sorted(paths)
        for start in range(0, len(ordered), FILE_BATCH):
            batch = ordered[start:start + FILE_BATCH]
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, tantivy.Query.term_set_query(schema(), "path", batch)),
                (tantivy.Occur.MustNot,
                 tantivy.Query.term_query(schema(), "tombstoned", 1))])
            matched = searcher.search(query, 1, count=True).count  # type: ignore[attr-defined]
            hits = searcher.search(query, matched, count=False).hits if matched else []
            tokens: dict[str, list[str]] = {}
            kinds: dict[str, int] = {}
            addresses = [address for _, address in hits]
            for address, kind in zip(addresses,
                                     searcher.fast_field_values("kind", addresses) if hits
                                     else [], strict=True):
                document = searcher.doc(address)
                path = str(document.get_first("path"))
                tokens.setdefault(path, []).append(str(document.get_first("tokens")))
                kinds[path] = int(kind or 0)
            for path in batch:
                writer.delete_documents_by_term("path", path)
                if path in tokens:
                    writer.add_document(file_document(path, tokens[path], kinds[path]))
            if (start + FILE_BATCH) % FILE_COMMIT_PATHS == 0:
                writer.commit()
        writer.commit()

    def _set_state(self, state: IndexState) -> None:
        path = self.state_path
        if path is None:
            self._memory_state = state
        else:
            state.write(path)

    def _reload(self) -> None:
        self.index.reload()
        self.files.reload()
        self._loaded_state = self.state()

    @contextmanager
    def _writer(self, wait_seconds: float) -> Iterator[Writers]:
        """The writers of the chunk and file indexes (taken in that order), waiting up to
        ``wait_seconds`` for another holder; released (merges finished, lock files unlocked) on
        leaving. An exception rolls the writes back."""
        taken = self._lock.acquire(timeout=wait_seconds) if wait_seconds > 0 else \
            self._lock.acquire(blocking=False)
        if not taken:
            raise WriterBusy(self.collection)
        try:
            with _held_writer(self.index, wait_seconds, self.collection) as chunks, \
                    _held_writer(self.files, wait_seconds, self.collection) as files:
                yield Writers(chunks, files)
        finally:
            self._lock.release()


def _inode(directory: Path | None) -> int | None:
    if directory is None:
        return None
    try:
        return directory.stat().st_ino
    except OSError:
        return None


@contextmanager
def _held_writer(index: tantivy.Index, wait_seconds: float, name: str
                 ) -> Iterator[tantivy.IndexWriter]:
    writer = _acquire_writer(index, wait_seconds, name)
    try:
        yield writer
    except BaseException:
        writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()


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

"""One index run over one branch: plan and write batches of changed files."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from freshmark.adapters.embedding.cache import embed_with_cache
from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.adapters.telemetry import counters
from freshmark.core.chunking import chunk_text_capped
from freshmark.core.chunking.languages import detect_language
from freshmark.core.classify import decode_text
from freshmark.core.config import Layer
from freshmark.core.embed_text import embedding_text, vector_key
from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.plan import (
    FileContext,
    FilePlan,
    batch_changes,
    build_records,
    path_groups,
    plan_file,
    reusable_vectors,
    tombstones,
)
from freshmark.core.ports import BranchView, LexicalRunWriter
from freshmark.core.progress import DONE, START, WORKING, IndexProgress, Progress
from freshmark.core.stamp import ChunkRecord, sha256_hex
from freshmark.core.tree import MODE_SYMLINK, FileChange
from freshmark.services.indexing.batches import (
    LEXICAL_RESULT,
    FanOut,
    IndexTools,
    LayerBatch,
    RunStamp,
    no_claim,
)
from freshmark.services.indexing.file_class import classify_blob
from freshmark.services.indexing.split_lexical import BatchDocuments, SplitFeed
from freshmark.services.indexing.summary import IndexSummary
from freshmark.services.repos import RepoRef

log = logging.getLogger(__name__)

# What one file's bytes or attribute patterns can raise on the way to its chunks: each skips
# that file alone, counted by reason, and the run goes on. Anything else is the run's.
_FILE_FAILURES = (UnicodeError, ValueError, RecursionError, re.error)
SKIP_PATTERN_ERROR = "pattern-error"
SKIP_DECODE_ERROR = "decode-error"
SKIP_PARSE_ERROR = "parse-error"
# A file with no text to chunk (an empty `__init__.py`, blank lines): counted, so that a
# report's seen files are each changed, skipped or unchanged.
SKIP_EMPTY = "empty"


class FileFailed(Exception):
    """One file could not be indexed; ``reason`` is its ``files_skipped`` key."""

    def __init__(self, reason: str, cause: BaseException):
        super().__init__(f"{reason}: {type(cause).__name__}: {cause}")
        self.reason = reason


@contextmanager
def _failing_as(reason: str) -> Iterator[None]:
    try:
        yield
    except _FILE_FAILURES as exc:
        raise FileFailed(reason, exc) from exc


class IndexRun:
    """State of one index run over one branch (all layers share the generation)."""

    def __init__(
        self,
        repo: GitRepo,
        index: BranchView,
        stamp: RunStamp,
        tools: IndexTools,
        summary: IndexSummary,
        progress: Progress | None = None,
        keep_claim: Callable[[], None] = no_claim,
        lexical: LexicalRunWriter | None = None,
    ):
        self.repo, self.index, self.stamp = repo, index, stamp
        self.lexical = lexical  # a first run's records, written to the lexical index too
        self.ref = RepoRef(stamp.repo_key, stamp.repo_name)
        self.branch, self.head = stamp.branch, stamp.head
        self.tools = tools
        self.config, self.embedder, self.cache = tools.config, tools.embedder, tools.cache
        self.summary, self.progress = summary, progress
        self.keep_claim = keep_claim
        self.generation = stamp.generation
        self.overlay_stamp: dict[str, Any] | None = None  # an overlay's new base stamp
        self.purged = False  # overlay records were deleted (lexical followers rebuild)
        self.when = stamp.when
        self.chunks_embedded = 0  # by this run, counted per embedder batch for progress
        self._batch = ("", 0, 0)  # layer, the batch's first file, files in the layer
        self._part = (0, 0)  # the batch's files the part being written starts and ends at
        # Ids the current batch has upserted: their stored vectors are new, so they no longer
        # hold the vector of the text the batch read them with (no donor for a later part).
        self._overwritten: set[str] = set()

    # -- one layer --------------------------------------------------------------------------
    def changes_in(self, layer: Layer, changes: Sequence[FileChange]) -> list[FileChange]:
        return [c for c in changes if self._touches(layer, c)]

    def index_layer(self, layer: Layer, changes: Sequence[FileChange]) -> None:
        mine = self.changes_in(layer, changes)
        total = len(mine)
        self._report(layer.name, START, 0, total)
        done = 0
        for batch in batch_changes(mine, self.config.rules.batch_files):
            self._batch = (layer.name, done, total)
            self.apply_batch(layer, batch)
            done += len(batch)
            self._report(layer.name, WORKING, done, total, done)
        self._report(layer.name, DONE, total, total, total)

    def index_split(self, work: Sequence[tuple[Layer, list[FileChange]]], fan_out: FanOut) -> None:
        """Every layer's changes as batches that any worker may embed; back when all are in.
        A first run's lexical writer is fed each batch's documents as the batch comes in,
        whoever wrote it (``split_lexical``)."""
        batches = [
            LayerBatch(layer.name, tuple(group))
            for layer, changes in work
            for group in batch_changes(self.changes_in(layer, changes), fan_out.files_per_batch)
        ]
        feed = SplitFeed(self.lexical, self.index, batches) if self.lexical is not None else None
        for counts in fan_out.run(self.stamp, batches, self.run_claimed_batch,
                                  feed.take if feed is not None else None):
            self.summary.add_batch_counts(counts)
        self.summary.batches = len(batches)
        if feed is not None:
            self.summary.batches_read_back = feed.read_back

    def run_claimed_batch(
        self, batch: LayerBatch, keep_claim: Callable[[], None]
    ) -> dict[str, Any]:
        """One batch of a split run in this process, counted apart: the counts of every batch
        come back together from the fan-out, whoever ran it."""
        return counted_batch(self.repo, self.index, self.stamp, self.tools, batch, keep_claim,
                             lexical=self.lexical is not None)

    def _report(self, layer: str, phase: str, files_done: int, files_total: int,
                files_written: int = 0) -> None:
        if self.progress:
            self.progress(IndexProgress(layer, phase, files_done, files_total,
                                        self.chunks_embedded, files_written))

    def _embedding_progress(self, texts_in_part: int) -> Callable[[int], None]:
        """Called per embedder batch: the files of the part being written count as done in
        proportion to its texts embedded, so a batch of 256 files does not jump from 0 to
        100 %, and a batch written in parts never goes back at the next part."""
        embedded_in_part = 0

        def advance(count: int) -> None:
            nonlocal embedded_in_part
            embedded_in_part += count
            self.chunks_embedded += count
            self.keep_claim()
            layer, first, total = self._batch
            start, end = self._part
            share = min(embedded_in_part, texts_in_part) / max(texts_in_part, 1)
            self._report(layer, WORKING, first + start + int((end - start) * share), total,
                         first)

        return advance

    def tombstone_vanished(self, layer: Layer) -> None:
        """After a full rescan (the indexed commit is gone, or the chunking rules changed),
        retire chunks of vanished paths: the paths held are read, then the chunks of the
        vanished ones, a batch of paths at a time (never every chunk of the layer at once)."""
        at_head = {f.path for f in self.repo.tree_files(self.head)}
        vanished = sorted(p for p in self.index.held_paths() if p not in at_head)
        size = self.config.rules.batch_files
        for start in range(0, len(vanished), size):
            gone = [r for r in self.index.records_for_paths(vanished[start:start + size])
                    if r.is_live and r.layer == layer.name]
            self._write(FilePlan(tombstone=tombstones(gone, self.head, self.when,
                                                      self.generation)), [])

    def _in_layer(self, layer: Layer, path: str | None) -> bool:
        return path is not None and self.config.layer_for(path) == layer

    def _touches(self, layer: Layer, change: FileChange) -> bool:
        return self._in_layer(layer, change.old_path) or self._in_layer(layer, change.new_path)

    def apply_batch(self, layer: Layer, changes: Sequence[FileChange]) -> None:
        """Plan and write one batch: read its stored chunks, then per group of files read the
        blobs, chunk, embed what changed and write, in parts of at most ``batch_chunks``
        records, so a batch of big files is never held whole."""
        self.keep_claim()
        paths = {p for c in changes for p in (c.old_path, c.new_path) if p}
        existing = self.index.records_for_paths(paths)
        by_path: dict[str, list[ChunkRecord]] = {}
        for record in existing:
            by_path.setdefault(record.path, []).append(record)
        # A path can leave and come back in one diff (renamed away, then re-added, e.g. as a
        # symlink to its new place): the new file's plan decides about the old chunks there.
        readded = {c.new_path for c in changes if c.status != "deleted" and c.new_path}
        self._overwritten = set()
        plan = FilePlan()
        planned, self._part = 0, (0, 0)
        # Groups share no path, so a group written early never changes what a later one
        # planned from (chunk ids are per path).
        for group in path_groups(changes):
            for change in group:
                plan.extend(self._plan_change(layer, change, by_path, readded))
                self.keep_claim()
            planned += len(group)
            if plan.records >= self.config.rules.batch_chunks:
                self._write_part(plan, existing, planned)
                plan = FilePlan()
        self._write_part(plan, existing, planned)

    def _write_part(self, plan: FilePlan, existing: list[ChunkRecord], planned: int) -> None:
        """Write one part of a batch: the files planned since the last part, which its
        embedding progress advances through (so the count never goes back)."""
        self._part = (self._part[1], planned)
        self._write(plan, existing)

    def _plan_change(
        self, layer: Layer, change: FileChange, by_path: dict[str, list[ChunkRecord]],
        readded: set[str],
    ) -> FilePlan:
        plan = FilePlan()
        self.summary.files_seen += 1
        old_path, new_path = change.old_path, change.new_path
        if old_path in readded and change.status in ("renamed", "deleted"):
            pass  # the file now at old_path is planned by its own change
        elif change.status == "renamed" and old_path and self._in_layer(layer, old_path):
            plan.tombstone.extend(
                tombstones(
                    by_path.get(old_path, []),
                    self.head,
                    self.when,
                    self.generation,
                    successor=new_path,
                )
            )
        elif change.status == "deleted" and old_path:
            plan.tombstone.extend(
                tombstones(by_path.get(old_path, []), self.head, self.when, self.generation)
            )
        if change.status != "deleted" and new_path and self._in_layer(layer, new_path):
            plan.extend(self._plan_file(layer, change, by_path.get(new_path, [])))
        if plan.embed or plan.tombstone or plan.restamp:
            self.summary.files_changed += 1
        return plan

    def _plan_file(self, layer: Layer, change: FileChange, existing: list[ChunkRecord]) -> FilePlan:
        path, blob_sha = change.new_path or "", change.new_blob or ""
        try:
            fresh = self._chunks_of(layer, path, blob_sha, change)
        except FileFailed as failed:
            self.summary.skip(failed.reason, path)
            counters.FILES_SKIPPED_TOTAL.labels(failed.reason).inc()
            log.warning("skipped %s at %s: %s", path, self.head[:12], failed)
            fresh = None
        if fresh is None:  # not indexable any more (binary, oversized, vendored...)
            return FilePlan(tombstone=tombstones(existing, self.head, self.when, self.generation))
        if not fresh and not existing:
            self.summary.skip(SKIP_EMPTY, path)
            return FilePlan()
        return plan_file(existing, fresh, self.head, self.when, self.generation)

    def _chunks_of(
        self, layer: Layer, path: str, blob_sha: str, change: FileChange
    ) -> list[ChunkRecord] | None:
        with _failing_as(SKIP_PATTERN_ERROR):
            attributes = self.repo.attributes(self.head, path)
        is_symlink = change.new_mode == MODE_SYMLINK
        try:
            verdict, data = classify_blob(self.repo, path, blob_sha, self.config.rules,
                                          attributes, is_symlink)
        except ObjectNotFound:
            # A partial or damaged clone lacks this blob: the rest of the run goes on, and the
            # file is counted, not silently missing.
            self.summary.skip(SKIP_MISSING_OBJECT, path)
            return None
        if not verdict.indexed or data is None:
            self.summary.skip(verdict.skip_reason or "not-indexed", path)
            return None
        with _failing_as(SKIP_DECODE_ERROR):
            text = decode_text(data)
        if text is None:
            self.summary.skip("binary", path)
            return None
        language = detect_language(path, text) or ""
        ctx = FileContext(
            repo=self.ref.name,
            branch=self.branch,
            commit=self.head,
            path=path,
            blob_sha=blob_sha,
            content_sha256=sha256_hex(data),
            language=language,
            file_kind=verdict.file_kind,
            layer=layer.name,
            indexed_at=self.when,
        )
        with _failing_as(SKIP_PARSE_ERROR):
            max_chunks = self.config.rules.max_chunks_per_file
            chunks, capped = chunk_text_capped(path, text, language or None, max_chunks)
            if capped:
                self.summary.files_chunk_capped += 1
                counters.CHUNKS_CAPPED_TOTAL.inc()
                log.warning("%s has over %d chunks: indexed as %d line windows",
                            path, max_chunks, len(chunks))
            return build_records(ctx, chunks)

    # -- writes -----------------------------------------------------------------------------
    def _write(self, plan: FilePlan, existing: Sequence[ChunkRecord]) -> None:
        """Embed and write ``plan`` in parts of at most ``batch_chunks`` records: new chunks
        first, then restamps, then tombstones (never of an id written live here)."""
        size = self.config.rules.batch_chunks
        for start in range(0, len(plan.embed), size):
            part = plan.embed[start:start + size]
            donors = [r for r in existing if r.id not in self._overwritten]
            vectors = self._vectors_for(part, donors)
            self.keep_claim()  # a batch taken over by another process must not write as well
            self.index.upsert(part, np.stack([vectors[vector_key(r)] for r in part]))
            self._overwritten.update(r.id for r in part)
            if self.lexical is not None:
                self.lexical.written([LexicalDocument.of(r) for r in part])
        self.keep_claim()
        updates = [(r.id, r.to_metadata()) for r in plan.restamp] + _tombstones_to_write(plan)
        # Metadata written without the text, or chunks an earlier attempt wrote and this run
        # found unchanged: records the writer never sees whole.
        if (updates or plan.unchanged) and self.lexical is not None:
            self.lexical.missed()
        for start in range(0, len(updates), size):
            self.index.update_metadata(updates[start:start + size])
        s = self.summary
        s.chunks_added += plan.added
        s.chunks_updated += plan.updated
        s.chunks_unchanged += plan.unchanged
        s.chunks_tombstoned += len(plan.tombstone)

    def _vectors_for(
        self, records: Sequence[ChunkRecord], existing: Iterable[ChunkRecord]
    ) -> dict[str, np.ndarray]:
        donors = reusable_vectors(records, existing)
        by_donor = self.index.embeddings_for(list(donors.values())) if donors else {}
        vectors = {key: by_donor[i] for key, i in donors.items() if i in by_donor}
        borrowed = len(vectors)  # one donor may lend to several keys (copies of a chunk)
        texts = {key: embedding_text(r) for r in records
                 if (key := vector_key(r)) not in vectors}
        started = time.perf_counter()
        computed, n_computed, n_cached = embed_with_cache(
            self.embedder, self.cache, texts, progress=self._embedding_progress(len(texts))
        )
        self.summary.embed_seconds += time.perf_counter() - started
        vectors.update(computed)
        self.summary.embeddings_computed += n_computed
        self.summary.embeddings_reused += n_cached + borrowed
        return vectors


SKIP_MISSING_OBJECT = "missing-object"


def _tombstones_to_write(plan: FilePlan) -> list[tuple[str, dict[str, Any]]]:
    """Each id once, and never one this plan also writes live: a store update must not carry
    an id twice, and a tombstone must not overwrite the chunk that replaced it."""
    written = {r.id for r in plan.embed} | {r.id for r in plan.restamp}
    unique: dict[str, dict[str, Any]] = {}
    for chunk_id, metadata in plan.tombstone:
        if chunk_id not in written:
            unique.setdefault(chunk_id, metadata)
    return list(unique.items())


def counted_batch(repo: GitRepo, index: BranchView, stamp: RunStamp, tools: IndexTools,
                  batch: LayerBatch, keep_claim: Callable[[], None],
                  lexical: bool = False) -> dict[str, Any]:
    """One batch of a run, counted apart (``IndexSummary.batch_counts``); with ``lexical``,
    the lexical documents of what it wrote under ``LEXICAL_RESULT`` (``split_lexical``)."""
    counts = IndexSummary(repo=stamp.repo_name, branch=stamp.branch, collection=index.name,
                          embedder=tools.embedder.id, commit=stamp.head)
    documents = BatchDocuments() if lexical else None
    run = IndexRun(repo, index, stamp, tools, counts, None, keep_claim, lexical=documents)
    run.apply_batch(tools.config.layer(batch.layer), batch.changes)
    result = counts.batch_counts()
    if documents is not None:
        result[LEXICAL_RESULT] = documents.to_json()
    return result

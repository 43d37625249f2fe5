"""Bring a branch collection to the branch head: diff, chunk, embed, stamp (I/O edge of ``plan``).

One run per (repo, branch): for each layer, diff the layer's indexed commit to the head, re-chunk
only changed files, re-embed only changed chunks (vectors are reused from the store and the
cache by text hash), tombstone what is gone, and write the manifest last. A crash anywhere
before that leaves the previous stamp true; the next run plans the same writes and finishes.

The changes are worked through in batches of files (``plan.batch_changes``). A large run can
be split (``FanOut``, given by a worker): its batches are then embedded by any worker process,
each one by ``index_batch`` with the run's ``RunStamp``, so a batch writes the same records
whoever runs it, and as often as it is run. The run's own process still writes the tombstones
of vanished paths, the manifest and the lexical snapshot, after every batch is in.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from freshmark.chunking import chunk_text, detect_language
from freshmark.classify import SKIP_OVERSIZED, FileClass, classify, decode_text
from freshmark.config import Config, Layer
from freshmark.embedding import Embedder, EmbeddingCache, LazyEmbedder, embed_with_cache
from freshmark.errors import BaseGone, EmbedderMismatch, NotIndexed, PermanentError
from freshmark.gitrepo import MODE_SYMLINK, FileChange, GitRepo, ObjectNotFound, changed_paths
from freshmark.overlay import (
    MAX_CHAIN_DEPTH,
    LayeredIndex,
    OverlayBase,
    base_commit_of,
    own_collection,
    plan_overlay,
)
from freshmark.plan import (
    FileContext,
    FilePlan,
    batch_changes,
    build_records,
    plan_file,
    reusable_vectors,
    tombstones,
)
from freshmark.progress import DONE, START, WORKING, IndexProgress, Progress
from freshmark.repos import names_in_use, unique_name
from freshmark.settings import Settings
from freshmark.stamp import ChunkRecord, sha256_hex, utc_now_iso
from freshmark.store import BranchIndex, Manifest, Store, collection_name

log = logging.getLogger("freshmark.indexer")

# Files per planning batch: bounds memory and makes progress visible on big repos.
FILES_PER_BATCH = 256

# What a batch adds to its run's summary (``IndexSummary.batch_counts``).
_BATCH_COUNT_FIELDS = (
    "files_seen", "files_changed", "files_skipped", "chunks_added", "chunks_updated",
    "chunks_unchanged", "chunks_tombstoned", "embeddings_computed", "embeddings_reused",
    "embed_seconds",
)


@dataclass
class IndexSummary:
    """What one index run did; ``to_dict`` is the ``index --json`` output."""

    repo: str
    branch: str
    collection: str
    embedder: str
    commit: str = ""
    previous_commit: str | None = None
    layers: list[str] = field(default_factory=list)
    files_seen: int = 0
    files_changed: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    chunks_added: int = 0
    chunks_updated: int = 0
    chunks_unchanged: int = 0
    chunks_tombstoned: int = 0
    embeddings_computed: int = 0
    embeddings_reused: int = 0
    embed_seconds: float = 0.0
    seconds: float = 0.0
    noop: bool = True
    layered_on: str | None = None  # an overlay's base branch
    overlay_chunks: int | None = None  # chunks in an overlay's own collection after the run
    chunks_purged: int = 0  # overlay chunks dropped because the base serves their files again
    batches: int = 0  # batch tasks the run was split into (0: it ran in one process)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def skip(self, reason: str) -> None:
        self.files_skipped[reason] = self.files_skipped.get(reason, 0) + 1

    def batch_counts(self) -> dict[str, Any]:
        """The counts a batch contributes to its run (JSON-able: they travel through Redis)."""
        return {name: getattr(self, name) for name in _BATCH_COUNT_FIELDS}

    def add_batch_counts(self, counts: dict[str, Any]) -> None:
        for name in _BATCH_COUNT_FIELDS:
            if name == "files_skipped":
                for reason, count in counts.get(name, {}).items():
                    self.files_skipped[reason] = self.files_skipped.get(reason, 0) + count
            else:
                setattr(self, name, getattr(self, name) + counts.get(name, 0))


@dataclass(frozen=True)
class RunStamp:
    """What every record of one run is stamped with; a batch run by another process gets it
    from the coordinating run, so its records are the ones this process would have written."""

    repo_key: str
    repo_name: str
    branch: str
    head: str
    generation: int
    when: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunStamp:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class LayerBatch:
    """Changes of one layer planned and written together (``plan.batch_changes``)."""

    layer: str
    changes: tuple[FileChange, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "changes": [asdict(c) for c in self.changes]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LayerBatch:
        return cls(data["layer"], tuple(FileChange(**c) for c in data["changes"]))


# Runs one claimed batch in this process; its argument raises ``BatchLost`` once the claim is
# gone (called before every write), and it returns the batch's ``batch_counts``.
BatchRunner = Callable[[LayerBatch, Callable[[], None]], dict[str, Any]]


class FanOut(Protocol):
    """Spreads a large run's batches over worker processes (``workers.scaleout``).

    ``run`` returns each batch's counts, in batch order, once every batch is in; the calling
    process works on batches itself through ``run_here`` while it waits.
    """

    files_per_batch: int

    def wants(self, files: int) -> bool: ...

    def run(self, stamp: RunStamp, batches: Sequence[LayerBatch],
            run_here: BatchRunner) -> list[dict[str, Any]]: ...


def _no_claim() -> None:
    """A run in one process holds no claim that could be lost."""


@dataclass(frozen=True)
class RepoRef:
    """Identity of the indexed repository: ``key`` names collections, ``name`` is for people."""

    key: str
    name: str

    @classmethod
    def of(cls, repo: GitRepo, repo_id: str | None, store: Store | None = None) -> RepoRef:
        """Configured repos are named by their (unique) id; a repo indexed by path takes its
        directory name unless another indexed repository already has it (``unique_name``)."""
        if repo_id:
            return cls(key=f"id:{repo_id}", name=repo_id)
        key, name = repo.key(), repo.default_name()
        if store is not None:
            name = unique_name(key, repo.path, name, names_in_use(store.list_manifests()))
        return cls(key=key, name=name)


class _Run:
    """State of one index run over one branch (all layers share the generation)."""

    def __init__(
        self,
        repo: GitRepo,
        index: BranchIndex | LayeredIndex,
        stamp: RunStamp,
        config: Config,
        embedder: Embedder,
        cache: EmbeddingCache,
        summary: IndexSummary,
        progress: Progress | None,
        keep_claim: Callable[[], None] = _no_claim,
    ):
        self.repo, self.index, self.stamp = repo, index, stamp
        self.ref = RepoRef(stamp.repo_key, stamp.repo_name)
        self.branch, self.head = stamp.branch, stamp.head
        self.config, self.embedder, self.cache = config, embedder, cache
        self.summary, self.progress = summary, progress
        self.keep_claim = keep_claim
        self.generation = stamp.generation
        self.overlay_stamp: dict[str, Any] | None = None  # an overlay's new base stamp
        self.purged = False  # overlay records were deleted (lexical followers rebuild)
        self.when = stamp.when
        self.chunks_embedded = 0  # by this run, counted per embedder batch for progress
        self._batch = ("", 0, 0, 0)  # layer, first file, files in the batch, files in the layer

    # -- one layer --------------------------------------------------------------------------
    def changes_in(self, layer: Layer, changes: Sequence[FileChange]) -> list[FileChange]:
        return [c for c in changes if self._touches(layer, c)]

    def index_layer(self, layer: Layer, changes: Sequence[FileChange]) -> None:
        mine = self.changes_in(layer, changes)
        total = len(mine)
        self._report(layer.name, START, 0, total)
        done = 0
        for batch in batch_changes(mine, FILES_PER_BATCH):
            self._batch = (layer.name, done, len(batch), total)
            self.apply_batch(layer, batch)
            done += len(batch)
            self._report(layer.name, WORKING, done, total)
        self._report(layer.name, DONE, total, total)

    def index_split(self, work: Sequence[tuple[Layer, list[FileChange]]], fan_out: FanOut) -> None:
        """Every layer's changes as batches that any worker may embed; back when all are in."""
        batches = [
            LayerBatch(layer.name, tuple(group))
            for layer, changes in work
            for group in batch_changes(self.changes_in(layer, changes), fan_out.files_per_batch)
        ]
        for counts in fan_out.run(self.stamp, batches, self.run_claimed_batch):
            self.summary.add_batch_counts(counts)
        self.summary.batches = len(batches)

    def run_claimed_batch(
        self, batch: LayerBatch, keep_claim: Callable[[], None]
    ) -> dict[str, Any]:
        """One batch of a split run in this process, counted apart: the counts of every batch
        come back together from the fan-out, whoever ran it."""
        return _counted_batch(self.repo, self.index, self.stamp, self.config, self.embedder,
                              self.cache, batch, keep_claim)

    def _report(self, layer: str, phase: str, files_done: int, files_total: int) -> None:
        if self.progress:
            self.progress(IndexProgress(layer, phase, files_done, files_total,
                                        self.chunks_embedded))

    def _embedding_progress(self, texts_in_batch: int) -> Callable[[int], None]:
        """Called per embedder batch: files of the current batch count as done in proportion
        to its texts embedded, so a batch of 256 files does not jump from 0 to 100 %."""
        embedded_in_batch = 0

        def advance(count: int) -> None:
            nonlocal embedded_in_batch
            embedded_in_batch += count
            self.chunks_embedded += count
            self.keep_claim()
            layer, first, size, total = self._batch
            share = min(embedded_in_batch, texts_in_batch) / max(texts_in_batch, 1)
            self._report(layer, WORKING, first + int(size * share), total)

        return advance

    def tombstone_vanished(self, layer: Layer) -> None:
        """After a full rescan (the indexed commit is gone), retire chunks of vanished paths."""
        at_head = {f.path for f in self.repo.tree_files(self.head)}
        where = {"$and": [{"status": "live"}, {"layer": layer.name}]}
        gone = [
            r
            for r in self.index.iter_records(where=where, include_text=False)
            if r.path not in at_head
        ]
        self._write(FilePlan(tombstone=tombstones(gone, self.head, self.when, self.generation)), [])

    def _in_layer(self, layer: Layer, path: str | None) -> bool:
        return path is not None and self.config.layer_for(path) == layer

    def _touches(self, layer: Layer, change: FileChange) -> bool:
        return self._in_layer(layer, change.old_path) or self._in_layer(layer, change.new_path)

    def apply_batch(self, layer: Layer, changes: Sequence[FileChange]) -> None:
        """Plan and write one batch: read its blobs, chunk, embed what changed, write."""
        self.keep_claim()
        paths = {p for c in changes for p in (c.old_path, c.new_path) if p}
        existing = self.index.records_for_paths(paths)
        by_path: dict[str, list[ChunkRecord]] = {}
        for record in existing:
            by_path.setdefault(record.path, []).append(record)
        # A path can leave and come back in one diff (renamed away, then re-added, e.g. as a
        # symlink to its new place): the new file's plan decides about the old chunks there.
        readded = {c.new_path for c in changes if c.status != "deleted" and c.new_path}
        plan = FilePlan()
        for change in changes:
            plan.extend(self._plan_change(layer, change, by_path, readded))
            self.keep_claim()
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
        fresh = self._chunks_of(layer, path, blob_sha, change)
        if fresh is None:  # not indexable any more (binary, oversized, vendored...)
            return FilePlan(tombstone=tombstones(existing, self.head, self.when, self.generation))
        return plan_file(existing, fresh, self.head, self.when, self.generation)

    def _chunks_of(
        self, layer: Layer, path: str, blob_sha: str, change: FileChange
    ) -> list[ChunkRecord] | None:
        attributes = self.repo.attributes(self.head, path)
        is_symlink = change.new_mode == MODE_SYMLINK
        # Path rules and the size from the object header first: an oversized blob (hundreds of
        # MB) is skipped without being read into memory.
        verdict = classify(path, b"", self.config.rules, attributes, is_symlink=is_symlink)
        limit = self.config.rules.max_file_bytes
        try:
            if verdict.indexed and limit and self.repo.blob_size(blob_sha) > limit:
                verdict = FileClass(verdict.file_kind, False, SKIP_OVERSIZED)
            if verdict.indexed:
                data = self.repo.read_blob(blob_sha)
                verdict = classify(path, data, self.config.rules, attributes,
                                   is_symlink=is_symlink)
        except ObjectNotFound:
            # A partial or damaged clone lacks this blob: the rest of the run goes on, and the
            # file is counted, not silently missing.
            self.summary.skip(SKIP_MISSING_OBJECT)
            return None
        if not verdict.indexed:
            self.summary.skip(verdict.skip_reason or "not-indexed")
            return None
        text = decode_text(data)
        if text is None:
            self.summary.skip("binary")
            return None
        language = detect_language(path) or ""
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
        return build_records(ctx, chunk_text(path, text, language or None))

    # -- writes -----------------------------------------------------------------------------
    def _write(self, plan: FilePlan, existing: Iterable[ChunkRecord]) -> None:
        vectors = self._vectors_for(plan.embed, existing) if plan.embed else {}
        self.keep_claim()  # a batch taken over by another process must not write as well
        if plan.embed:
            self.index.upsert(plan.embed, np.stack([vectors[r.text_sha256] for r in plan.embed]))
        if plan.restamp:
            self.index.update_metadata([(r.id, r.to_metadata()) for r in plan.restamp])
        tombstone = _tombstones_to_write(plan)
        if tombstone:
            self.index.update_metadata(tombstone)
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
        vectors = {sha: by_donor[i] for sha, i in donors.items() if i in by_donor}
        texts = {r.text_sha256: r.text for r in records if r.text_sha256 not in vectors}
        started = time.perf_counter()
        computed, n_computed, n_cached = embed_with_cache(
            self.embedder, self.cache, texts, progress=self._embedding_progress(len(texts))
        )
        self.summary.embed_seconds += time.perf_counter() - started
        vectors.update(computed)
        self.summary.embeddings_computed += n_computed
        self.summary.embeddings_reused += n_cached + len(by_donor)
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


def _open_branch_index(
    store: Store,
    ref: RepoRef,
    repo: GitRepo,
    branch: str,
    embedder: Embedder,
    base_branch: str | None,
) -> BranchIndex | LayeredIndex:
    """The branch's index: as it is, or new. A new branch whose base is indexed (with the same
    embedder) becomes an overlay on it; an overlay whose base is gone becomes a whole index."""
    try:
        index = store.branch(ref.key, branch)
        if isinstance(index, LayeredIndex):
            index.cached_reads = False  # a run reads what the store holds, not a process cache
    except BaseGone as exc:
        log.warning("%s; indexing %s@%s as a whole collection", exc, ref.name, branch)
        store.drop_branch(ref.key, branch, force=True)
        index = None
    if index is not None:
        if index.manifest.embedder != embedder.id:
            raise EmbedderMismatch(
                f"branch {ref.name}@{branch} was indexed with {index.manifest.embedder!r}; "
                f"this run uses {embedder.id!r}. Drop the branch index or switch embedders."
            )
        return index
    manifest = Manifest(
        repo=ref.name,
        repo_key=ref.key,
        branch=branch,
        embedder=embedder.id,
        collection=collection_name(ref.key, branch),
        repo_path=str(repo.path),
        created_at=utc_now_iso(),
    )
    base = _overlay_base(store, ref, branch, base_branch, embedder)
    if base is None:
        return store.create_branch(manifest)
    manifest.base_branch = base.manifest.branch
    manifest.overlay = OverlayBase(ref.key, base.manifest.branch, base.name, {}).to_dict()
    return LayeredIndex(store.create_branch(manifest), base, cached_reads=False)


def _overlay_base(
    store: Store, ref: RepoRef, branch: str, base_branch: str | None, embedder: Embedder
) -> BranchIndex | LayeredIndex | None:
    """The index a new branch is layered on: its base, or the base's root when the chain
    would loop back to the branch or grow deeper than ``MAX_CHAIN_DEPTH``."""
    if not base_branch or base_branch == branch:
        return None
    try:
        base = store.branch(ref.key, base_branch)
    except BaseGone:
        return None
    if base is None or base.manifest.embedder != embedder.id or base.manifest.commit is None:
        return None
    if isinstance(base, LayeredIndex):
        chain = {index.manifest.branch for index, _ in base.layers()}
        if branch in chain or base.depth >= MAX_CHAIN_DEPTH:
            root = base.root()
            return None if root.manifest.branch == branch else root
    return base


def _index_whole(
    run: _Run, index: BranchIndex, layers: Sequence[Layer], target: str | None,
    fan_out: FanOut | None = None,
) -> tuple[bool, list[Layer]]:
    """Each layer from its indexed commit to the head, split over worker processes when
    ``fan_out`` wants the run. Returns (anything diffed, layers done)."""
    repo, head, summary = run.repo, run.head, run.summary
    diffs: dict[str | None, list[FileChange]] = {}
    done: list[Layer] = []
    work: list[tuple[Layer, list[FileChange]]] = []
    lost_layers: list[Layer] = []
    for layer_ in layers:
        old = index.manifest.layer_commit(layer_.name)
        if target and _is_stale_target(repo, old, head):
            continue  # never move a stamp backwards
        done.append(layer_)
        if old == head:
            continue
        # An indexed commit lost to a force push (and gc) means a full rescan of the layer.
        lost = old is not None and not _has_commit(repo, old)
        since = None if lost else old
        if since not in diffs:
            diffs[since] = repo.diff(since, head)
            if since is None:  # gitlinks never show in a diff; count them on a full pass
                for _ in repo.submodules(head):
                    summary.skip("submodule")
        work.append((layer_, diffs[since]))
        if lost:
            lost_layers.append(layer_)
    if fan_out is not None and fan_out.wants(sum(len(run.changes_in(*w)) for w in work)):
        run.index_split(work, fan_out)
    else:
        for layer_, changes in work:
            run.index_layer(layer_, changes)
    for layer_ in lost_layers:  # after every batch: the vanished paths' chunks are all written
        run.tombstone_vanished(layer_)
    return bool(diffs), done


def _index_overlay(
    run: _Run, index: LayeredIndex, layers: Sequence[Layer], target: str | None
) -> tuple[bool, list[Layer]]:
    """Each layer's overlay brought to ``diff(base's indexed commit, head)`` (``plan_overlay``):
    the cost is the files that differ from the base, whatever the base did meanwhile."""
    repo, head, config = run.repo, run.head, run.config
    base = OverlayBase.of(index.manifest)
    assert base is not None
    base_manifest = index.below.manifest
    layered_on = dict(base.layered_on)
    to_base: dict[str, list[FileChange]] = {}
    since_head: dict[str | None, set[str] | None] = {}
    done: list[Layer] = []
    changed = False
    for layer_ in layers:
        old = index.manifest.layer_commit(layer_.name)
        if target and _is_stale_target(repo, old, head):
            continue
        done.append(layer_)
        base_commit = base_commit_of(base_manifest, layer_.name)
        if base_commit is None or not _has_commit(repo, base_commit):
            raise PermanentError(f"base {base.branch!r} of {run.ref.name}@{run.branch} is at a "
                                 "commit this repository lacks; fetch it or index the branch alone")
        if old == head and not base.moved(layer_.name, base_manifest):
            continue
        changed = True
        if base_commit not in to_base:
            to_base[base_commit] = repo.diff(base_commit, head)
        known = old is not None and _has_commit(repo, old)
        if old not in since_head:
            since_head[old] = changed_paths(repo.diff(old, head)) if known else None
        held = {p for p in index.held_paths() if config.layer_for(p) == layer_}
        differing = changed_paths(to_base[base_commit])
        present = {p for p in held - differing if repo.blob_at(head, p) is not None}
        plan = plan_overlay(to_base[base_commit], held, since_head[old], present)
        run.index_layer(layer_, plan.changes)
        if plan.purge_paths:
            run.summary.chunks_purged += index.purge_paths(plan.purge_paths)
            run.purged = True
        layered_on[layer_.name] = base_commit
    forked_from = repo.merge_base(base_manifest.commit or head, head)
    run.overlay_stamp = OverlayBase(base.repo_key, base.branch, index.below.name, layered_on,
                                    forked_from).to_dict()
    return changed, done


def _has_commit(repo: GitRepo, sha: str) -> bool:
    try:
        repo.commit_time(sha)
    except PermanentError:
        return False
    return True


def _advance_manifest(
    index: BranchIndex | LayeredIndex,
    layers: Sequence[Layer],
    head: str,
    when: str,
    generation: int,
    config: Config,
    overlay: dict[str, Any] | None = None,
    purged: bool = False,
) -> Manifest:
    manifest = index.reload_manifest()
    if overlay is not None:
        manifest.overlay = overlay
    if purged:
        manifest.purged_generation = generation
    for layer in layers:
        manifest.layers[layer.name] = {"commit": head, "indexed_at": when}
    if all(manifest.layer_commit(layer.name) == head for layer in config.layers):
        manifest.commit, manifest.indexed_at = head, when
    manifest.generation = max(manifest.generation, generation)
    manifest.last_used_at = when
    index.save_manifest(manifest)
    return manifest


def _write_lexical_snapshot(index: BranchIndex, cache_dir: Path, changed: bool) -> None:
    """The search-side BM25 snapshot, current with this run, so no search pays the build."""
    from freshmark.retrieval import snapshot_path, write_lexical_snapshot

    if not changed and snapshot_path(cache_dir, index.name).exists():
        return  # a no-op run: the snapshot already matches (or a search will refresh it)
    try:
        write_lexical_snapshot(index, cache_dir)
    except OSError:
        pass  # a snapshot only saves search start-up time; an unwritable cache must not fail a run


def _is_stale_target(repo: GitRepo, indexed: str | None, head: str) -> bool:
    """True when the index already holds a descendant of ``head`` (an old job finishing late)."""
    return bool(
        indexed
        and indexed != head
        and _has_commit(repo, indexed)
        and repo.is_ancestor(head, indexed)
    )


def index_repo(
    repo_path: Path | str,
    *,
    settings: Settings,
    config: Config,
    branch: str | None = None,
    layer: str | None = None,
    repo_id: str | None = None,
    base_branch: str | None = None,
    target: str | None = None,
    progress: Progress | None = None,
    store: Store | None = None,
    embedder: Embedder | None = None,
    fan_out: FanOut | None = None,
) -> IndexSummary:
    """Index ``branch`` (default: the checked-out one) of the repo at ``repo_path`` to its head.

    ``target`` pins a commit instead of the branch head; a target older than what is indexed
    is refused as a no-op, so stamps never move backwards. ``layer`` limits the run to one
    layer and stamps only that layer. ``fan_out`` (a worker's) splits a run it ``wants``
    into batches that other worker processes help to embed; the manifest is still written
    here, last, once every batch is in.
    """
    started = time.perf_counter()
    repo = GitRepo.open(repo_path)
    branch = branch or repo.current_branch()
    head = target or repo.branch_head(branch)
    store = store or Store.open(settings)
    ref = RepoRef.of(repo, repo_id, store)
    # Loaded at the first text to embed: a no-op run never pays for the model.
    embedder = embedder or LazyEmbedder(settings.embedder, settings.cache_dir,
                                        threads=settings.embed_threads)
    summary = IndexSummary(
        repo=ref.name,
        branch=branch,
        collection=collection_name(ref.key, branch),
        embedder=embedder.id,
        commit=head,
    )
    index = _open_branch_index(store, ref, repo, branch, embedder, base_branch)
    summary.previous_commit = index.manifest.commit
    layers = (config.layer(layer),) if layer else config.layers
    summary.layers = [layer_.name for layer_ in layers]
    cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite")
    stamp = RunStamp(ref.key, ref.name, branch, head, index.manifest.generation + 1, utc_now_iso())
    run = _Run(repo, index, stamp, config, embedder, cache, summary, progress)
    if isinstance(index, LayeredIndex):
        changed, done = _index_overlay(run, index, layers, target)
    else:
        changed, done = _index_whole(run, index, layers, target, fan_out)
    summary.noop = not changed
    generation = run.generation if changed else index.manifest.generation
    manifest = _advance_manifest(index, done, head, run.when, generation, config,
                                 overlay=run.overlay_stamp, purged=run.purged)
    if isinstance(index, LayeredIndex):
        summary.layered_on = OverlayBase.of(manifest).branch  # type: ignore[union-attr]
        summary.overlay_chunks = index.own_count()
    _write_lexical_snapshot(own_collection(index), settings.cache_dir, changed=changed)
    summary.files_skipped = dict(Counter(summary.files_skipped))
    summary.seconds = round(time.perf_counter() - started, 3)
    summary.embed_seconds = round(summary.embed_seconds, 3)
    return summary


def _branch_for_batch(
    store: Store, stamp: RunStamp, embedder: Embedder
) -> BranchIndex | LayeredIndex:
    """The collection a split run's coordinator opened (it exists before any batch is sent)."""
    index = store.branch(stamp.repo_key, stamp.branch)
    if isinstance(index, LayeredIndex):
        index.cached_reads = False  # a batch reads what the store holds, like its run
    if index is None:
        raise NotIndexed(f"branch {stamp.repo_name}@{stamp.branch} has no collection any more")
    if index.manifest.embedder != embedder.id:
        raise EmbedderMismatch(
            f"branch {stamp.repo_name}@{stamp.branch} is indexed with "
            f"{index.manifest.embedder!r}; this worker embeds with {embedder.id!r}"
        )
    return index


def index_batch(
    repo_path: Path | str,
    *,
    stamp: RunStamp,
    batch: LayerBatch,
    config: Config,
    store: Store,
    embedder: Embedder,
    cache: EmbeddingCache,
    keep_claim: Callable[[], None] = _no_claim,
) -> dict[str, Any]:
    """One batch of a split run, in a process that helps its coordinator: the same plan and
    records as the coordinator's own ``_Run`` would write, and no manifest. Returns the batch's
    counts (``IndexSummary.batch_counts``)."""
    repo = GitRepo.open(repo_path)
    index = _branch_for_batch(store, stamp, embedder)
    return _counted_batch(repo, index, stamp, config, embedder, cache, batch, keep_claim)


def _counted_batch(
    repo: GitRepo,
    index: BranchIndex | LayeredIndex,
    stamp: RunStamp,
    config: Config,
    embedder: Embedder,
    cache: EmbeddingCache,
    batch: LayerBatch,
    keep_claim: Callable[[], None],
) -> dict[str, Any]:
    counts = IndexSummary(repo=stamp.repo_name, branch=stamp.branch, collection=index.name,
                          embedder=embedder.id, commit=stamp.head)
    run = _Run(repo, index, stamp, config, embedder, cache, counts, None, keep_claim)
    run.apply_batch(config.layer(batch.layer), batch.changes)
    return counts.batch_counts()

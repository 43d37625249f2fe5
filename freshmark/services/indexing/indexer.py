"""Bring a branch collection to the branch head: diff, chunk, embed, stamp (I/O edge of ``plan``).

One run per (repo, branch, layer) at a time: for each layer, diff the layer's indexed commit to
the head, re-chunk only changed files, re-embed only changed chunks (vectors are reused from the
store and the cache by text hash), tombstone what is gone, and write the manifest last. A crash
anywhere before that leaves the previous stamp true; the next run plans the same writes and
finishes.

The changes are worked through in batches of files (``plan.batch_changes``). A large run can
be split (``FanOut``, given by a worker): its batches are then embedded by any worker process,
each one by ``index_batch`` with the run's ``RunStamp``, so a batch writes the same records
whoever runs it, and as often as it is run. The run's own process still writes the tombstones
of vanished paths, the manifest and the lexical index (and the chunk counts it gives the
manifest), after every batch is in; a first run's lexical index is written as the batches come
in (``split_lexical``), so it is not read back from the store then.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshmark.adapters.embedding import LazyEmbedder
from freshmark.adapters.embedding.cache import EmbeddingCache
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.manifest import collection_name
from freshmark.core.overlay import OverlayBase
from freshmark.core.ports import Embedder
from freshmark.core.progress import Progress
from freshmark.core.settings import Settings
from freshmark.core.stamp import utc_now_iso
from freshmark.services.indexing.batches import FanOut, IndexTools, LayerBatch, RunStamp, no_claim
from freshmark.services.indexing.branch_index import (
    base_not_applied,
    branch_for_batch,
    open_branch_index,
    require_base,
)
from freshmark.services.indexing.layers import (
    advance_manifest,
    index_overlay,
    index_whole,
    record_counts,
)
from freshmark.services.indexing.run import IndexRun, counted_batch
from freshmark.services.indexing.summary import IndexSummary
from freshmark.services.repos import RepoRef

# Held while a run reads and writes its branch's manifest: runs of other layers of the branch
# may be stamping at the same moment in other processes.
StampGuard = Callable[[], AbstractContextManager[object]]


@dataclass(frozen=True)
class IndexRequest:
    """What to index: the repository at ``repo_path`` (a work tree or a bare mirror).

    ``branch`` None is the checked-out one. ``target`` pins a commit instead of the branch
    head. ``layer`` limits the run to one layer. ``repo_id`` names a configured repository
    (its collections are keyed by the id, not the path). ``base_branch``: a branch indexed
    for the first time becomes an overlay on this one when it is indexed. ``base_named``: the
    user named that base, so it must be an indexed branch (else ``BranchNotFound``), and a
    branch already indexed says that it does not apply (``IndexSummary.base_note``); a
    default base (the first tracked branch) is taken only when it is indexed.
    """

    repo_path: Path | str
    branch: str | None = None
    layer: str | None = None
    repo_id: str | None = None
    base_branch: str | None = None
    target: str | None = None
    base_named: bool = False


def index_repo(
    request: IndexRequest, *, settings: Settings, config: Config,
    progress: Progress | None = None, store: Store | None = None,
    embedder: Embedder | None = None, fan_out: FanOut | None = None,
    stamp_guard: StampGuard = contextlib.nullcontext,
) -> IndexSummary:
    """Index the requested branch to its head (or to ``request.target``).

    A target older than what is indexed is refused as a no-op, so stamps never move
    backwards; a ``layer`` run stamps only that layer. ``fan_out`` (a worker's) splits a run
    it ``wants`` into batches that other worker processes help to embed; the manifest is
    still written here, last, once every batch is in. ``stamp_guard`` (a worker's) excludes
    other processes' runs of the branch's other layers while the manifest is read and written.
    """
    started = time.perf_counter()
    repo = GitRepo.open(request.repo_path)
    repo.similarity_max_bytes = config.rules.max_file_bytes
    branch = request.branch or repo.current_branch()
    head = request.target or repo.branch_head(branch)
    store = store or Store.open(settings)
    ref = RepoRef.of(repo, request.repo_id, store, branch)
    # Loaded at the first text to embed: a no-op run never pays for the model.
    embedder = embedder or LazyEmbedder(settings.embedder, settings.cache_dir,
                                        threads=settings.embed_threads)
    summary = IndexSummary(repo=ref.name, branch=branch,
                           collection=collection_name(ref.key, branch), embedder=embedder.id,
                           commit=head)
    named_base = request.base_branch if request.base_named else None
    if named_base and store.own_branch(ref.key, branch) is None:
        require_base(store, ref, repo, branch, named_base, embedder)
    index = open_branch_index(store, ref, repo, branch, embedder, request.base_branch)
    if named_base and index.manifest.commit is not None:
        summary.base_note = base_not_applied(index, named_base)
    summary.previous_commit = index.manifest.commit
    layers = (config.layer(request.layer),) if request.layer else config.layers
    summary.layers = [layer_.name for layer_ in layers]
    tools = IndexTools(config, embedder, EmbeddingCache(settings.cache_dir / "embeddings.sqlite"))
    stamp = RunStamp(ref.key, ref.name, branch, head, index.manifest.generation + 1, utc_now_iso())
    lexical = lexical_engine(settings)
    # A first run writes its records to the host's lexical index as it writes them to the
    # store: nothing is read back after it.
    written = lexical.first_run_writer(index)
    run = IndexRun(repo, index, stamp, tools, summary, progress, lexical=written)
    try:
        below = index.below
        if below is not None:
            changed, done = index_overlay(run, index, below, layers, request.target)
        else:
            changed, done = index_whole(run, index, layers, request.target, fan_out)
        summary.noop = not changed
        with stamp_guard():
            manifest = advance_manifest(run, done, changed)
        summary.stamped_after_seconds = round(time.perf_counter() - started, 3)
        overlay = OverlayBase.of(manifest)
        if below is not None and overlay is not None:
            summary.layered_on = overlay.branch
            summary.overlay_chunks = index.own.count()
        lexical_started = time.perf_counter()
        counts = lexical.after_run(index, changed, written)
    finally:
        if written is not None:
            written.close()  # a failed run releases the lexical index's writers
    if counts is not None:
        with stamp_guard():
            record_counts(index, counts)
    summary.lexical_seconds = round(time.perf_counter() - lexical_started, 3)
    summary.files_skipped = dict(Counter(summary.files_skipped))
    summary.seconds = round(time.perf_counter() - started, 3)
    summary.embed_seconds = round(summary.embed_seconds, 3)
    return summary


def index_batch(
    repo_path: Path | str, *, stamp: RunStamp, batch: LayerBatch, tools: IndexTools,
    store: Store, keep_claim: Callable[[], None] = no_claim, lexical: bool = False,
) -> dict[str, Any]:
    """One batch of a split run, in a process that helps its coordinator: the same plan and
    records as the coordinator's own ``IndexRun`` would write, and no manifest. Returns the
    batch's counts (``IndexSummary.batch_counts``), and with ``lexical`` the documents the
    coordinator's lexical index takes of what it wrote (``split_lexical``)."""
    repo = GitRepo.open(repo_path)
    index = branch_for_batch(store, stamp, tools.embedder)
    return counted_batch(repo, index, stamp, tools, batch, keep_claim, lexical)

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

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from freshmark.adapters.embedding import LazyEmbedder
from freshmark.adapters.embedding.cache import EmbeddingCache
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.layered import LayeredIndex, own_collection
from freshmark.core.config import Config
from freshmark.core.manifest import collection_name
from freshmark.core.overlay import OverlayBase
from freshmark.core.ports import Embedder
from freshmark.core.progress import Progress
from freshmark.core.settings import Settings
from freshmark.core.stamp import utc_now_iso
from freshmark.services.indexing.batches import FanOut, LayerBatch, RunStamp, no_claim
from freshmark.services.indexing.branch_index import branch_for_batch, open_branch_index
from freshmark.services.indexing.layers import (
    advance_manifest,
    index_overlay,
    index_whole,
    write_lexical_snapshot,
)
from freshmark.services.indexing.run import IndexRun, counted_batch
from freshmark.services.indexing.summary import IndexSummary
from freshmark.services.repos import RepoRef


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
    index = open_branch_index(store, ref, repo, branch, embedder, base_branch)
    summary.previous_commit = index.manifest.commit
    layers = (config.layer(layer),) if layer else config.layers
    summary.layers = [layer_.name for layer_ in layers]
    cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite")
    stamp = RunStamp(ref.key, ref.name, branch, head, index.manifest.generation + 1, utc_now_iso())
    run = IndexRun(repo, index, stamp, config, embedder, cache, summary, progress)
    if isinstance(index, LayeredIndex):
        changed, done = index_overlay(run, index, layers, target)
    else:
        changed, done = index_whole(run, index, layers, target, fan_out)
    summary.noop = not changed
    generation = run.generation if changed else index.manifest.generation
    manifest = advance_manifest(index, done, head, run.when, generation, config,
                                 overlay=run.overlay_stamp, purged=run.purged)
    if isinstance(index, LayeredIndex):
        summary.layered_on = OverlayBase.of(manifest).branch  # type: ignore[union-attr]
        summary.overlay_chunks = index.own_count()
    write_lexical_snapshot(own_collection(index), settings.cache_dir, changed=changed)
    summary.files_skipped = dict(Counter(summary.files_skipped))
    summary.seconds = round(time.perf_counter() - started, 3)
    summary.embed_seconds = round(summary.embed_seconds, 3)
    return summary


def index_batch(
    repo_path: Path | str,
    *,
    stamp: RunStamp,
    batch: LayerBatch,
    config: Config,
    store: Store,
    embedder: Embedder,
    cache: EmbeddingCache,
    keep_claim: Callable[[], None] = no_claim,
) -> dict[str, Any]:
    """One batch of a split run, in a process that helps its coordinator: the same plan and
    records as the coordinator's own ``IndexRun`` would write, and no manifest. Returns the batch's
    counts (``IndexSummary.batch_counts``)."""
    repo = GitRepo.open(repo_path)
    index = branch_for_batch(store, stamp, embedder)
    return counted_batch(repo, index, stamp, config, embedder, cache, batch, keep_claim)

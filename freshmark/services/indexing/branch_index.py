"""The index a run writes: a branch's collection as it is, new, or an overlay on its base."""

from __future__ import annotations

import logging

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.core.errors import BaseGone, EmbedderMismatch, NotIndexed
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.overlay import MAX_CHAIN_DEPTH, OverlayBase
from freshmark.core.ports import BranchView, Embedder
from freshmark.core.stamp import utc_now_iso
from freshmark.services.indexing.batches import RunStamp
from freshmark.services.repos import RepoRef

log = logging.getLogger("freshmark.indexer")


def open_branch_index(
    store: Store,
    ref: RepoRef,
    repo: GitRepo,
    branch: str,
    embedder: Embedder,
    base_branch: str | None,
) -> BranchView:
    """The branch's index: as it is, or new. A new branch whose base is indexed (with the same
    embedder) becomes an overlay on it; an overlay whose base is gone becomes a whole index.
    A run reads what the store holds, not what this process cached of an overlay."""
    try:
        index = store.branch(ref.key, branch, cached_reads=False)
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
    base = overlay_base(store, ref, branch, base_branch, embedder)
    if base is None:
        return store.create_branch(manifest)
    manifest.base_branch = base.manifest.branch
    manifest.overlay = OverlayBase(ref.key, base.manifest.branch, base.name, {}).to_dict()
    return store.create_branch(manifest, below=base)


def overlay_base(
    store: Store, ref: RepoRef, branch: str, base_branch: str | None, embedder: Embedder
) -> BranchView | None:
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
    chain = {index.manifest.branch for index, _ in base.layers()}
    if branch in chain or base.depth >= MAX_CHAIN_DEPTH:
        root = base.root()
        return None if root.manifest.branch == branch else root
    return base


def branch_for_batch(
    store: Store, stamp: RunStamp, embedder: Embedder
) -> BranchView:
    """The collection a split run's coordinator opened (it exists before any batch is sent);
    a batch reads what the store holds, like its run."""
    index = store.branch(stamp.repo_key, stamp.branch, cached_reads=False)
    if index is None:
        raise NotIndexed(f"branch {stamp.repo_name}@{stamp.branch} has no collection any more")
    if index.manifest.embedder != embedder.id:
        raise EmbedderMismatch(
            f"branch {stamp.repo_name}@{stamp.branch} is indexed with "
            f"{index.manifest.embedder!r}; this worker embeds with {embedder.id!r}"
        )
    return index

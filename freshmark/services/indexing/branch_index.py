"""The index a run writes: a branch's collection as it is, new, or an overlay on its base."""

from __future__ import annotations

import logging

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.core.errors import BadInput, BaseGone, BranchNotFound, EmbedderMismatch, NotIndexed
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


def require_base(store: Store, ref: RepoRef, repo: GitRepo, branch: str, base_branch: str,
                 embedder: Embedder) -> None:
    """A base the user named must be an indexed branch of the repository, with this run's
    embedder: otherwise a new branch would silently be stored whole, not as an overlay.
    Raises ``BranchNotFound`` (exit 2) naming the branches that would do."""
    if base_branch == branch:
        raise BadInput(f"--base {base_branch!r} is the branch being indexed; name another")
    manifests = [m for m in store.list_manifests(ref.key) if m.repo_key == ref.key]
    usable = sorted(m.branch for m in manifests
                    if m.commit is not None and m.embedder == embedder.id and m.branch != branch)
    if base_branch in usable:
        return
    indexed = ", ".join(usable[:10]) or "none"
    if base_branch not in repo.branches():
        raise BranchNotFound(f"no branch {base_branch[:80]!r} in {ref.name}; --base takes an "
                             f"indexed branch: {indexed}")
    raise BranchNotFound(f"branch {base_branch[:80]!r} of {ref.name} is not indexed (with "
                         f"{embedder.id}); index it first (freshmark index --branch "
                         f"{base_branch}) or take an indexed base: {indexed}")


def base_not_applied(index: BranchView, base_branch: str) -> str | None:
    """Why a named base does not apply to a branch already indexed (None when it is already
    layered on it): the base is chosen once, when the branch is first indexed."""
    overlay = OverlayBase.of(index.manifest)
    if overlay is not None and overlay.branch == base_branch:
        return None
    label = f"{index.manifest.repo}@{index.manifest.branch}"
    now = f"an overlay on {overlay.branch}" if overlay is not None else "a whole index"
    return (f"--base {base_branch} does not apply: {label} is already indexed as {now}; "
            f"the base is chosen when a branch is first indexed (freshmark drop, then index "
            f"again, to change it)")


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

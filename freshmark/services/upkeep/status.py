"""What a branch index holds and how far it is behind the branch head."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.config import Config
from freshmark.core.errors import BaseGone, BranchNotFound, FreshmarkError, NotIndexed
from freshmark.core.manifest import Manifest
from freshmark.core.overlay import OverlayBase
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE, TOMBSTONED
from freshmark.services.repos import RepoHandle, resolve_repo
from freshmark.services.retrieval.search import unindexed_summary
from freshmark.services.upkeep.dir_report import stale_dirs
from freshmark.services.upkeep.heads import LOCAL, HeadSource, refresh_heads


def behind_head(repo: GitRepo, manifest: Manifest) -> dict[str, Any]:
    """Commits and files between the indexed commit and the branch head.

    The reference is the manifest's commit, where every layer last agreed (the index is only as
    fresh as its stalest layer); before any all-layer run, the first layer's stamp.
    """
    head = repo.branch_head(manifest.branch)
    layer_commits = (s.get("commit") for s in manifest.layers.values())
    indexed = manifest.commit or next((c for c in layer_commits if c), None)
    if indexed is None:
        return {"head": head, "commits_behind": None, "files_changed": None}
    lag = unindexed_summary(repo, indexed, head)
    # As a search's ``unindexed`` counts them: a file moved as it was is one change, a moved
    # and edited one a new file and a deleted one.
    files = sum(lag[part] for part in ("new_files", "changed_files", "deleted_files",
                                       "moved_files")) if lag else 0
    commits = lag["commits"] if lag else repo.commits_between(indexed, head)
    return {"head": head, "commits_behind": commits, "files_changed": files}


def chunk_counts(index: BranchView) -> dict[str, int]:
    """The chunks the branch shows, as its last run counted them in the manifest; a branch
    last indexed before runs kept counts is counted from the store (ids listed) until its
    next run."""
    counts = index.manifest.chunk_counts
    if counts is None:
        return {"live_chunks": index.count({"status": LIVE}),
                "tombstoned_chunks": index.count({"status": TOMBSTONED})}
    return _row_counts(counts)


def _row_counts(counts: dict[str, int]) -> dict[str, int]:
    """A manifest's ``chunk_counts`` as a status row names them."""
    return {"live_chunks": counts["live"], "tombstoned_chunks": counts["tombstoned"]}


def _verdict_counts(settings: Settings, repo: str, branch: str) -> dict[str, int]:
    return VerdictStats.open(settings).counts(repo, branch)


def overlay_row(index: BranchView) -> dict[str, Any] | None:
    """An overlay's base and size (its own chunks, what the branch costs); None for a branch
    collection that holds everything."""
    base = OverlayBase.of(index.manifest)
    if base is None:
        return None
    own = index.own
    return {
        "base_branch": base.branch,
        "base_collection": base.collection,
        "layered_on": base.layered_on,
        "forked_from": base.forked_from,
        "own_chunks": own.count(),
        "own_paths": len(own.held_paths()),
        "base_missing": index.below is None,
        # Layers whose base was indexed again since the overlay was layered on it: until its
        # next run the overlay diffs against the old base (``audit`` counts the gap as stale).
        "base_moved": [] if index.below is None else sorted(
            layer for layer in base.layered_on if base.moved(layer, index.below.manifest)),
    }


def held_row(store: Store, manifest: Manifest, repo_name: str) -> dict[str, Any] | None:
    """The branch's chunk counts and overlay: from its manifest alone when the manifest says
    them (no collection opened: a ``status`` process reads the store's listing only), else
    from its collection. None when the collection went between the listing and now."""
    if manifest.chunk_counts is not None and OverlayBase.of(manifest) is None:
        return {"overlay": None, **_row_counts(manifest.chunk_counts)}
    index = _open(store, manifest.repo_key, manifest.branch, repo_name)
    if index is None:
        return None
    return {"overlay": overlay_row(index), **chunk_counts(index)}


def status_row(manifest: Manifest, held: dict[str, Any], repo: GitRepo | None,
               settings: Settings, source: HeadSource | None = None) -> dict[str, Any]:
    """A branch's row: its manifest, what it holds (``held_row``) and how far behind it is."""
    behind: dict[str, Any]
    try:
        behind = behind_head(repo, manifest) if repo else {"error": "repository not reachable"}
    except FreshmarkError as exc:
        behind = {"error": str(exc)}
    behind.update((source or HeadSource(LOCAL)).to_json())
    return {
        "repo": manifest.repo,
        "branch": manifest.branch,
        "collection": manifest.collection,
        "commit": manifest.commit,
        "indexed_at": manifest.indexed_at,
        "layers": manifest.layers,
        "embedder": manifest.embedder,
        "base_branch": manifest.base_branch,
        "overlay": held["overlay"],
        "live_chunks": held["live_chunks"],
        "tombstoned_chunks": held["tombstoned_chunks"],
        "behind": behind,
        "verdicts": _verdict_counts(settings, manifest.repo, manifest.branch),
        "stale_dirs": stale_dirs(settings, manifest.repo, manifest.branch),
        "gone": False,
    }


def gone_row(manifest: Manifest, retired: bool) -> dict[str, Any]:
    """A branch deleted from its repository: said so, not an error; ``retired`` when its index
    was dropped (kept while overlays are layered on it)."""
    return {"repo": manifest.repo, "branch": manifest.branch, "collection": manifest.collection,
            "gone": True, "retired": retired}


def branch_status(
    path: Path, branch: str | None, *, settings: Settings, config: Config, store: Store,
    retire: Callable[[Manifest], bool] | None = None,
) -> list[dict[str, Any]]:
    """Status rows for one branch, or for every indexed branch of the repository at ``path``
    (a path or a configured or indexed repository's id). A branch deleted from the repository
    gets a ``gone_row`` and, with ``retire``, its index dropped (``retire`` says whether it
    was: an index that overlays use is kept)."""
    handle = resolve_repo(str(path), settings, config, store)
    return handle_status(handle, branch, settings=settings, config=config, store=store,
                         retire=retire, index_hint=str(path))


def handle_status(
    handle: RepoHandle, branch: str | None, *, settings: Settings, config: Config,
    store: Store, retire: Callable[[Manifest], bool] | None = None,
    index_hint: str | None = None,
) -> list[dict[str, Any]]:
    """``branch_status`` of a repository already resolved (a server names it, never a path).

    Rows come from the manifests of one listing; a collection is opened only for what a
    manifest does not say (an overlay's own size, counts from before runs kept them)."""
    source = refresh_heads(settings, config, handle.repo_id)  # the same heads as ``audit``
    try:
        repo: GitRepo | None = handle.open()
    except FreshmarkError:
        repo = None
    every = store.list_manifests(handle.key)
    manifests = [m for m in every if branch in (None, m.branch)]
    who = _named(handle, every, index_hint)
    if branch and not any(m.commit or m.layers for m in manifests):
        if repo is not None and branch not in (known := sorted(repo.branches())):
            shown = ", ".join(known[:10]) + (f" (+{len(known) - 10} more)" if known[10:] else "")
            raise BranchNotFound(f"no branch {branch[:80]!r} in {who}; known: {shown}")
        # Not indexed, or a first run that never finished: the store says which, and what is.
        _open(store, handle.key, branch, who, required=True, path_typed=index_hint or "")
    if not manifests:
        raise NotIndexed(f"{who} has no indexed branch yet; run: freshmark index "
                         f"{index_hint or handle.name}")
    heads = set(repo.branches()) if repo is not None else None
    rows = []
    for manifest in manifests:
        if heads is not None and manifest.branch not in heads:
            retired = retire is not None and retire(manifest)
            rows.append(gone_row(manifest, retired))
        elif (held := held_row(store, manifest, handle.name)) is not None:
            rows.append(status_row(manifest, held, repo, settings, source))
    return rows


def _named(handle: RepoHandle, manifests: list[Manifest], typed: str | None) -> str:
    """How a message names the repository: a configured one by its id; one indexed by path
    by the name its ``manifests`` give it (``y/repo`` when another took ``repo``); one
    with none (never indexed, or dropped) by the path typed, as its directory name may be
    another indexed repository's id."""
    if not handle.is_working_copy:
        return handle.name
    return next((m.repo for m in manifests if m.repo), None) or typed or str(handle.path)


def _open(store: Store, repo_key: str, branch: str, repo_name: str,
          required: bool = False, path_typed: str = "") -> Any:
    """The branch's index; an overlay whose base is gone is reported from its own collection
    (``overlay.base_missing``) rather than hiding the branch."""
    try:
        if required:
            return store.require_branch(repo_key, branch, repo_name, path_typed)
        return store.branch(repo_key, branch)
    except BaseGone:
        return store.own_branch(repo_key, branch)

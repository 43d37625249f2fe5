"""Opening a branch for one request: repository, target head, index and embedder."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshmark.adapters.embedding import LazyEmbedder
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.counters import VERIFICATION_VERDICTS_TOTAL
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.config import Config
from freshmark.core.dirstats import dir_prefix
from freshmark.core.errors import BadInput, EmbedderMismatch
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings
from freshmark.core.verdicts import Target
from freshmark.services.repos import RepoHandle, resolve_repo
from freshmark.services.verifier import Verifier


@dataclass
class OpenedBranch:
    """Everything one request needs: the repository, its target head and a verifier.

    ``index`` is None when the request does not need the branch index (``verify``).
    """

    handle: RepoHandle
    repo: GitRepo
    target: Target
    verifier: Verifier
    index: BranchView | None = None

    @property
    def repo_label(self) -> str:
        """The repository name under which the index (and the statistics) know it."""
        return self.index.manifest.repo if self.index is not None else self.handle.name


def resolve_target(repo: GitRepo, branch: str | None, worktree: bool) -> Target:
    """The head to verify against; a work tree is only comparable on its checked-out branch."""
    if not worktree:
        name = (branch or repo.current_branch()).removeprefix("refs/heads/")
        return Target(name, repo.branch_head(name))
    if repo.is_bare:
        raise BadInput(f"--worktree needs a working copy; {repo.path} is a bare repository")
    checked_out = repo.current_branch()
    if branch and branch.removeprefix("refs/heads/") != checked_out:
        raise BadInput(
            f"--worktree verifies against the checked-out branch {checked_out!r}, "
            f"not {branch!r}; check it out or drop --worktree"
        )
    return Target(checked_out, repo.branch_head(checked_out), worktree=True)



def open_branch(repo_arg: str | RepoHandle, *, settings: Settings, config: Config,
                branch: str | None, worktree: bool, store: Store | None,
                need_index: bool) -> OpenedBranch:
    """Resolve ``repo_arg`` (path or id, or a handle a network edge already resolved) and
    ``branch`` (default: checked out) to a target.

    Raises NotIndexed for a repository or branch never indexed (when ``need_index``),
    RepositoryGone when the repository moved or was deleted since indexing, BranchNotFound
    for a branch git does not know.
    """
    if isinstance(repo_arg, RepoHandle):
        handle = repo_arg
        store = store if store is not None or not need_index else store_for(settings)
    else:
        if store is None and (need_index or not Path(repo_arg).expanduser().exists()):
            store = store_for(settings)
        handle = resolve_repo(repo_arg, settings, config, store)
    repo = handle.open()
    target = resolve_target(repo, branch, worktree)
    # The path as typed, for the command that indexes it: a local caller's own words, never
    # a network caller's (a handle), whose host paths stay unsaid.
    typed = repo_arg if isinstance(repo_arg, str) and handle.is_working_copy else ""
    index = store.require_branch(handle.key, target.branch, handle.name, typed) \
        if need_index and store is not None else None
    verifier = Verifier(repo, target, config.rules.max_file_bytes)
    return OpenedBranch(handle, repo, target, verifier, index)


_STORES: dict[tuple[tuple[str, ...], str], Store] = {}
_STORES_LOCK = threading.Lock()


def store_for(settings: Settings) -> Store:
    """This process's store for ``settings``: a server connection is opened once, not per
    request (each open costs a heartbeat round trip)."""
    key = (settings.chroma_server_urls, str(settings.chroma_path))
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = Store.open(settings)
            _STORES[key] = store
    return store


def index_info(index: BranchView) -> dict[str, Any]:
    """Which index a response came from: collection, commit and build time, per layer too."""
    manifest = index.manifest
    return {
        "collection": index.name,
        "repo": manifest.repo,
        "branch": manifest.branch,
        "commit": manifest.commit,
        "indexed_at": manifest.indexed_at,
        "layers": {name: dict(stamp) for name, stamp in sorted(manifest.layers.items())},
        "embedder": manifest.embedder,
        "generation": manifest.generation,
    }


# -- embedders are loaded once per process ---------------------------------------------------------
_EMBEDDERS: dict[tuple[str, str], LazyEmbedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def embedder_for(settings: Settings, index: BranchView) -> LazyEmbedder:
    """The process's embedder for ``settings``; refuses one the index was not built with."""
    key = (settings.embedder, str(settings.cache_dir))
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            # Loaded at the first query that needs a vector (BM25 alone needs none).
            embedder = LazyEmbedder(settings.embedder, settings.cache_dir,
                                    threads=settings.embed_threads)
            _EMBEDDERS[key] = embedder
    if embedder.id != index.manifest.embedder:
        raise EmbedderMismatch(
            f"{index.name} was indexed with {index.manifest.embedder!r}, but this process embeds "
            f"queries with {embedder.id!r}; set FRESHMARK_EMBEDDER to match the index"
        )
    return embedder


# -- statistics ------------------------------------------------------------------------------------
def count_verdicts(settings: Settings, repo: str, branch: str,
                   verdicts: Sequence[tuple[str, str]]) -> None:
    """Add (verdict, path) pairs to the on-disk totals, per branch and per directory of the
    path (``core.dirstats``), and to the Prometheus counter."""
    counts = Counter(verdict for verdict, _path in verdicts)
    by_dir = Counter((dir_prefix(path), verdict) for verdict, path in verdicts)
    VerdictStats.open(settings).add_later(repo, branch, counts, by_dir)  # batched
    for verdict, number in counts.items():
        VERIFICATION_VERDICTS_TOTAL.labels(verdict=verdict).inc(number)

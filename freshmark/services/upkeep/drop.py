"""Dropping what was indexed: one branch of a repository, or all of them.

The use case behind ``freshmark drop REPO [--branch B]`` and ``DELETE /v1/repos/{repo}[/branches/
{branch}]``, and the retirement of a branch deleted from its repository (``status``, ``audit``).
A branch leaves, besides its collection (chunks, vectors, and the manifest in its metadata):
its lexical index (tantivy directories), its freshness rows (its gauges), its verdict counts
and its on-demand activity in Redis. All of them go, the collection last: a drop killed
half-way leaves the branch listed, and running it again finishes. The embedding cache (shared
by every branch, keyed by text) and a configured repository's mirror (shared by its branches)
stay.

A drop or retirement holds the lock of every branch it drops (``branch_guard``), so it never
runs beside an index run of the branch: it waits a few seconds for the runs in its way, then
fails with ``BranchBusy`` (retry); a retirement that finds the branch busy keeps it this time.

A base that branch overlays are layered on is refused (``BaseInUse``, naming them): they read
its chunks for every file they did not change. Dropping a whole repository drops its overlays
before their bases.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

from freshmark.adapters import keys
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.freshness import FreshnessStore, freshness_store_for
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.errors import BaseInUse, BranchBusy, NotIndexed, RepositoryGone
from freshmark.core.manifest import Manifest
from freshmark.core.ports import LexicalEngine
from freshmark.core.settings import Settings
from freshmark.services.repos import RepoHandle, resolve_repo
from freshmark.services.upkeep.branch_guard import BranchGuard

log = logging.getLogger("freshmark.upkeep")

SHOWN_BRANCHES = 10


@dataclass(frozen=True)
class BranchState:
    """Where a branch's state lives: the store, and what is kept beside it."""

    store: Store
    lexical: LexicalEngine
    freshness: FreshnessStore
    verdicts: VerdictStats
    redis: Redis | None = None  # only where the deployment has one
    guard: BranchGuard = BranchGuard(None)  # holds a branch's lock while it is dropped

    @classmethod
    def open(cls, settings: Settings, store: Store | None = None,
             client: Redis | None = None, *, config: Config) -> BranchState:
        """The deployment's stores; Redis only when ``FRESHMARK_REDIS_URL`` names one (or
        ``client`` is the process's own), and with it the branch locks of ``config``'s
        layers."""
        if client is None and settings.redis_url_set:
            client = jobs.connect(settings.redis_url)
        guard = BranchGuard(client, tuple(layer.name for layer in config.layers),
                            jobspec.Timings.from_env())
        return cls(store or Store.open(settings), lexical_engine(settings),
                   freshness_store_for(settings, client), VerdictStats.open(settings), client,
                   guard)

    def lock_held(self) -> BranchState:
        """The same stores for a caller that holds the branch's lock already (a retire job)."""
        return dataclasses.replace(self, guard=BranchGuard(None))


@dataclass
class DropReport:
    repo: str
    dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "dropped": self.dropped}


def drop_index(target: str | RepoHandle, branch: str | None, *, settings: Settings,
               config: Config, state: BranchState) -> DropReport:
    """Drop ``branch`` of the repository ``target`` (a path, even one since deleted, or a repo
    id; or the handle a network face resolved), or every branch of it. ``NotIndexed`` when
    there is nothing to drop."""
    repo_key = target.key if isinstance(target, RepoHandle) \
        else _repo_key(target, settings, config, state.store)
    label = target.name if isinstance(target, RepoHandle) else target
    manifests = [m for m in state.store.list_manifests(repo_key) if m.repo_key == repo_key]
    if not manifests:
        raise NotIndexed(f"nothing indexed for {label[:200]!r}")
    report = DropReport(manifests[0].repo)
    if branch is None:
        chosen = sorted(manifests, key=lambda m: -_depth(m, manifests))
    else:
        chosen = [m for m in manifests if m.branch == branch]
        if not chosen:
            indexed = ", ".join(sorted(m.branch for m in manifests)[:SHOWN_BRANCHES])
            raise NotIndexed(f"{report.repo}@{branch[:80]} is not indexed; indexed: {indexed}")
        _refuse_a_base_in_use(chosen[0], manifests, label)
    with state.guard.holding((m.repo_key, m.branch) for m in chosen):
        for manifest in chosen:
            drop_branch_state(state, manifest)
            report.dropped.append(manifest.branch)
        if len(chosen) == len(manifests):  # nothing of the repository is left: its name is free
            state.store.names().release(repo_key)
    return report


def retire_gone_branch(state: BranchState, manifest: Manifest) -> bool:
    """Drop a branch deleted from its repository; False (kept) while overlays are layered on
    it, or while an index run holds it (the next audit tries again)."""
    if state.store.overlays_on(manifest.repo_key, manifest.branch):
        return False
    try:
        with state.guard.holding([(manifest.repo_key, manifest.branch)]):
            drop_branch_state(state, manifest)
    except BranchBusy as exc:
        log.info("not retiring %s@%s now: %s", manifest.repo, manifest.branch, exc)
        return False
    return True


def drop_branch_state(state: BranchState, manifest: Manifest) -> None:
    """Everything of one branch, its collection last (see the module docstring)."""
    state.lexical.drop(manifest.collection)
    state.freshness.forget(manifest.repo, manifest.branch)
    state.verdicts.forget(manifest.repo, manifest.branch)
    if state.redis is not None:
        field_ = keys.branch_activity_field(manifest.repo, manifest.branch)
        state.redis.hdel(keys.BRANCH_ACTIVITY, field_)
    state.store.drop_branch(manifest.repo_key, manifest.branch)


def _refuse_a_base_in_use(manifest: Manifest, manifests: list[Manifest], target: str) -> None:
    dependents = sorted(m.branch for m in manifests if m.overlay
                        and m.overlay.get("repo_key") == manifest.repo_key
                        and m.overlay.get("branch") == manifest.branch)
    if dependents:
        shown = ", ".join(dependents[:SHOWN_BRANCHES])
        raise BaseInUse(f"{manifest.repo}@{manifest.branch} is the base of branch overlays: "
                        f"{shown}; drop them first (freshmark drop {target} --branch "
                        f"{dependents[0]}), or drop the whole repository")


def _depth(manifest: Manifest, manifests: list[Manifest]) -> int:
    """How many bases a branch is layered on (0 for a whole index)."""
    base_of = {m.branch: str(m.overlay.get("branch")) for m in manifests if m.overlay}
    steps, branch = 0, manifest.branch
    while branch in base_of and steps <= len(manifests):
        branch, steps = base_of[branch], steps + 1
    return steps


def _repo_key(target: str, settings: Settings, config: Config, store: Store) -> str:
    """The index key of ``target``; a path indexed once and since moved or deleted too."""
    try:
        return resolve_repo(target, settings, config, store).key
    except RepositoryGone:
        return f"path:{Path(target).expanduser().resolve()}"

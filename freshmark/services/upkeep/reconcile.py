"""Reconcile: compare every branch head in the mirror with its indexed commit, queue the gaps.

Events get lost (GitHub does not retry a failed delivery; GitLab sends nothing for a push that
touches more than three refs; a Redis restart without persistence drops queued messages), so
this pass is what guarantees that every push is indexed eventually. It trusts nothing but the
mirror (fetched first) and the manifests in the store. A job parked on its own error at the
branch's head is left alone: sent again with a fresh attempt count it would only fail again
(``jobs.held_back``); a new commit, or an operator's ``freshmark branch index``, starts it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import redis

from freshmark.adapters.git.mirrors import RemoteUnavailable, sync_mirror
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec
from freshmark.core.config import Config, Layer, RepoConfig
from freshmark.core.manifest import Manifest
from freshmark.core.overlay import OverlayBase
from freshmark.core.settings import Settings
from freshmark.services.upkeep.branches import default_base, repo_key

log = logging.getLogger("freshmark.reconcile")


@dataclass
class ReconcilePlan:
    index: list[jobspec.JobSpec] = field(default_factory=list)
    retire: list[jobspec.JobSpec] = field(default_factory=list)


def plan_repo(
    repo: RepoConfig,
    layers: Sequence[Layer],
    heads: Mapping[str, str],
    manifests: Iterable[Manifest],
) -> ReconcilePlan:
    """Jobs that bring one repo's indexes to its mirror's heads (pure).

    Tracked branches and every branch that already has a collection are kept at their head,
    layer by layer; a collection whose branch is gone from the mirror is retired.
    """
    by_branch = {m.branch: m for m in manifests if m.repo_key == repo_key(repo.id)}
    plan = ReconcilePlan()
    for branch in sorted(set(repo.branches) | set(by_branch)):
        manifest = by_branch.get(branch)
        head = heads.get(branch)
        if head is None:
            if manifest is not None:
                plan.retire.append(_retire_spec(repo.id, branch, "reconcile: branch deleted"))
            continue
        for layer in layers:
            behind = manifest is None or manifest.layer_commit(layer.name) != head
            base_moved = manifest is not None and _base_moved(manifest, layer.name, by_branch)
            if behind or base_moved:
                plan.index.append(
                    jobspec.JobSpec(
                        kind=jobspec.KIND_INDEX, repo=repo.id, branch=branch, layer=layer.name,
                        queue=layer.queue, target=head,
                        base_branch="" if manifest else default_base(repo, branch),
                        reason="reconcile" if behind else "reconcile: base moved",
                    )
                )
    return plan


def _base_moved(manifest: Manifest, layer: str, by_branch: Mapping[str, Manifest]) -> bool:
    """An overlay whose base was indexed at another commit than the one it is layered on: a
    run re-layers it (until then the base serves files the branch may not have)."""
    overlay = OverlayBase.of(manifest)
    base = by_branch.get(overlay.branch) if overlay else None
    return overlay is not None and base is not None and overlay.moved(layer, base)


def _retire_spec(repo_id: str, branch: str, reason: str) -> jobspec.JobSpec:
    return jobspec.JobSpec(
        kind=jobspec.KIND_RETIRE, repo=repo_id, branch=branch, queue=jobspec.QUEUE_MAINTENANCE,
        reason=reason,
    )


@dataclass(frozen=True)
class ReconcileReport:
    repos: int
    unreachable: list[str]
    index_jobs: int
    retire_jobs: int
    held_back: list[str] = field(default_factory=list)  # job keys parked at the head

    def as_dict(self) -> dict[str, object]:
        return {
            "repos": self.repos, "unreachable": self.unreachable,
            "index_jobs": self.index_jobs, "retire_jobs": self.retire_jobs,
            "held_back": self.held_back,
            "noop": self.index_jobs == 0 and self.retire_jobs == 0,
        }


def reconcile_all(
    settings: Settings,
    config: Config,
    store: Store,
    client: redis.Redis,
    send: jobspec.Sender,
    stale_seconds: float = 3600.0,
) -> ReconcileReport:
    """Fetch every configured mirror and queue what the index is missing.

    A remote that cannot be fetched is skipped this round (and named in the report): one dead
    host must not stop the others from being reconciled.
    """
    manifests = store.list_manifests()
    unreachable: list[str] = []
    held: list[str] = []
    index_jobs = retire_jobs = 0
    for repo in config.repos:
        try:
            heads = sync_mirror(settings, repo).heads
        except RemoteUnavailable as exc:
            log.warning("reconcile: %s unreachable: %s", repo.id, exc)
            unreachable.append(repo.id)
            continue
        plan = plan_repo(repo, config.layers, heads, manifests)
        parked = [s for s in plan.index if jobs.held_back(client, s.key, s.target)]
        for spec in parked:
            log.info("reconcile: %s stays parked at %s until its branch moves", spec.key,
                     spec.target[:12])
        index = [s for s in plan.index if s not in parked]
        for spec in index + plan.retire:
            jobs.submit(client, spec, send, stale_seconds=stale_seconds)
        index_jobs += len(index)
        retire_jobs += len(plan.retire)
        held += [s.key for s in parked]
    return ReconcileReport(len(config.repos), unreachable, index_jobs, retire_jobs, held)

"""On-demand branch indexes and the retirement of deleted or idle branches.

A branch asked for on demand is indexed on the ``ondemand`` queue as an overlay on its base
branch's collection (``adapters.store.layered``): it holds only the files that differ from the base,
so it costs the d changed files, not the repository. Untracked branches are retired
(collection dropped, storage reclaimed) once deleted on the remote, or once idle for
``config.branch_idle_seconds``; tracked branches are retired only when deleted. A branch that
overlays are layered on is kept until they are retired (they read its chunks).

Activity is the newest of: the manifest's ``last_used_at``/``indexed_at``/``created_at`` and
the last request recorded in Redis (``keys.BRANCH_ACTIVITY``). Times are unix seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import redis

from freshmark.adapters import keys
from freshmark.adapters.git.names import is_valid_branch_name
from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.core.errors import BadInput, BranchBusy, BranchNotFound
from freshmark.core.manifest import Manifest
from freshmark.services.upkeep.drop import BranchState, drop_branch_state

log = logging.getLogger("freshmark.branches")

KNOWN_BRANCHES_SHOWN = 10


def repo_key(repo_id: str) -> str:
    """The index key of a configured repository (``services.repos.RepoRef``)."""
    return f"id:{repo_id}"


def default_base(repo: RepoConfig, branch: str) -> str:
    """The branch a new branch collection is layered on: the repo's first tracked branch."""
    base = repo.branches[0] if repo.branches else ""
    return "" if base == branch else base


def touch_activity(client: redis.Redis, repo: str, branch: str, now: float | None = None) -> None:
    client.hset(keys.BRANCH_ACTIVITY, keys.branch_activity_field(repo, branch), now or time.time())


def is_active(client: redis.Redis, repo: str, branch: str) -> bool:
    """True if the cluster has been asked to keep this (untracked) branch indexed."""
    return bool(client.hexists(keys.BRANCH_ACTIVITY, keys.branch_activity_field(repo, branch)))


def activity(client: redis.Redis) -> dict[str, float]:
    return {k: float(v) for k, v in jobs.read_hash(client, keys.BRANCH_ACTIVITY).items()}


def require_known_branch(repo_id: str, name: str, known: Collection[str]) -> None:
    """Refuse a branch the remote does not have, naming the ones it does (a typo would
    otherwise queue a job that does nothing and report success)."""
    if name in known:
        return
    names = sorted(known)
    shown = ", ".join(names[:KNOWN_BRANCHES_SHOWN]) or "none"
    hidden = len(names) - KNOWN_BRANCHES_SHOWN
    more = f" (+{hidden} more)" if hidden > 0 else ""
    raise BranchNotFound(f"no branch {name[:80]!r} in {repo_id}'s remote; known: {shown}{more}")


def request_branch_index(
    client: redis.Redis,
    config: Config,
    repo_id: str,
    branch: str,
    send: jobspec.Sender,
    base: str | None = None,
    known: Collection[str] | None = None,
) -> jobspec.EnqueueResult:
    """Queue an on-demand index of ``branch``, layered on ``base`` (default: first tracked).

    ``known`` is the remote's branch names (``mirrors.remote_branches``); None when the remote
    could not be listed, in which case the job is queued and its worker finds out.
    """
    repo = config.repo(repo_id)
    for name in (branch, base):
        if name is not None and not is_valid_branch_name(name):
            raise BadInput(f"not a valid branch name: {name[:80]!r}")
        if name and known is not None:
            require_known_branch(repo_id, name, known)
    touch_activity(client, repo_id, branch)
    spec = jobspec.JobSpec(
        kind=jobspec.KIND_INDEX,
        repo=repo_id,
        branch=branch,
        layer=jobspec.ALL,
        queue=jobspec.QUEUE_ONDEMAND,
        base_branch=base if base is not None else default_base(repo, branch),
        base_named="yes" if base is not None else "",
        reason="ondemand",
    )
    return jobs.submit(client, spec, send)


# --- retirement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Retirement:
    repo: str
    repo_key: str
    branch: str
    reason: str  # deleted | idle


def _seconds(iso: str | None) -> float:
    if not iso:
        return 0.0
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def last_activity(manifest: Manifest, requested: Mapping[str, float]) -> float:
    field = keys.branch_activity_field(manifest.repo, manifest.branch)
    stamps = (manifest.last_used_at, manifest.indexed_at, manifest.created_at)
    return max([_seconds(s) for s in stamps] + [requested.get(field, 0.0)])


def plan_retirements(
    manifests: Iterable[Manifest],
    config: Config,
    heads_by_repo: Mapping[str, Mapping[str, str] | None],
    requested: Mapping[str, float],
    now: float,
) -> list[Retirement]:
    """Which branch collections to drop, overlays before the bases they are layered on. Only
    configured repos are touched; a repo whose mirror could not be read (heads ``None``) is
    checked for idleness only. A base that an overlay staying in place reads from is kept
    (retired by a later pass, once its overlays are gone)."""
    manifests = list(manifests)
    configured = {repo_key(r.id): r for r in config.repos}
    out: list[Retirement] = []
    for manifest in manifests:
        repo = configured.get(manifest.repo_key)
        if repo is None:
            continue
        heads = heads_by_repo.get(repo.id)
        if heads is not None and manifest.branch not in heads:
            out.append(Retirement(repo.id, manifest.repo_key, manifest.branch, "deleted"))
        elif manifest.branch not in repo.branches:
            idle_seconds = now - last_activity(manifest, requested)
            if idle_seconds > config.branch_idle_seconds:
                out.append(Retirement(repo.id, manifest.repo_key, manifest.branch, "idle"))
    return _overlays_first(out, manifests)


def _overlays_first(plan: list[Retirement], manifests: Sequence[Manifest]) -> list[Retirement]:
    """``plan`` without the bases of overlays that stay, ordered so that every overlay goes
    before its base."""
    base_of = {(m.repo_key, m.branch): (m.overlay["repo_key"], m.overlay["branch"])
               for m in manifests if m.overlay}
    leaving = {(r.repo_key, r.branch) for r in plan}
    while True:  # an overlay that stays keeps its base, and that base keeps its own base
        kept = {base for overlay, base in base_of.items() if overlay not in leaving}
        if not leaving & kept:
            break
        for base in leaving & kept:
            log.info("keeping %s@%s: branch overlays are layered on it", base[0], base[1])
        leaving -= kept

    def depth(key: tuple[str, str]) -> int:
        steps = 0
        while key in base_of and steps <= len(base_of):
            key, steps = base_of[key], steps + 1
        return steps

    kept_plan = [r for r in plan if (r.repo_key, r.branch) in leaving]
    return sorted(kept_plan, key=lambda r: -depth((r.repo_key, r.branch)))


def retire(state: BranchState, retirement: Retirement) -> bool:
    """Drop the branch's index and everything kept of it (``drop.drop_branch_state``: its
    collection, lexical index, freshness rows, verdict counts and activity) under the branch's
    lock (``state.guard``). A base that overlays still read from is kept: False, as is a
    branch an index run holds for longer than the guard waits."""
    own = state.store.own_branch(retirement.repo_key, retirement.branch)
    if own is None:
        if state.redis is not None:
            field = keys.branch_activity_field(retirement.repo, retirement.branch)
            state.redis.hdel(keys.BRANCH_ACTIVITY, field)
        log.info("retired %s@%s (%s): collection already gone", retirement.repo,
                 retirement.branch, retirement.reason)
        return False
    if state.store.overlays_on(retirement.repo_key, retirement.branch):
        log.info("not retiring %s@%s: branch overlays are layered on it", retirement.repo,
                 retirement.branch)
        return False
    try:
        with state.guard.holding([(retirement.repo_key, retirement.branch)]):
            drop_branch_state(state, own.manifest)
    except BranchBusy as exc:  # an index run holds it: the next retirement job tries again
        log.info("not retiring %s@%s now: %s", retirement.repo, retirement.branch, exc)
        return False
    log.info("retired %s@%s (%s): collection dropped", retirement.repo, retirement.branch,
             retirement.reason)
    return True

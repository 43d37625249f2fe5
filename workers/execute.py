"""What each kind of job does, free of Celery: fetch the mirror, then index, retire or reconcile.

An index job never trusts the event that caused it: it fetches the mirror and indexes the
branch's head *in the mirror*, so deliveries that arrive out of order converge on the newest
commit. The fetch happens under the job's execution lock (its layer's, or the branch's for a
whole-branch job), so two jobs of one layer never interleave and a job that read an older head
cannot finish after a newer one; runs of different layers go side by side and merge their
stamps into the manifest under the branch's short stamp lock (``_stamp_guard``).
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any

from freshmark.adapters import keys
from freshmark.adapters.git.mirrors import sync_mirror
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.queue import branch_lock, jobs
from freshmark.adapters.telemetry.freshness import freshness_store_for
from freshmark.core import jobspec
from freshmark.core.config import RepoConfig
from freshmark.services.indexing.indexer import IndexRequest, StampGuard, index_repo
from freshmark.services.upkeep import branches
from freshmark.services.upkeep.audit import refresh_branch, run_audit
from freshmark.services.upkeep.drop import BranchState
from freshmark.services.upkeep.reconcile import reconcile_all
from workers.runtime import WorkerContext
from workers.scaleout import Coordinator

log = logging.getLogger("freshmark.worker")


def _retire_spec(repo: str, branch: str, reason: str) -> jobspec.JobSpec:
    return jobspec.JobSpec(
        kind=jobspec.KIND_RETIRE, repo=repo, branch=branch, queue=jobspec.QUEUE_MAINTENANCE,
        reason=reason,
    )


def _fan_out(job: jobspec.Job, ctx: WorkerContext, repo: RepoConfig) -> Coordinator | None:
    """Large runs split only over a shared store: a batch written by another process, maybe on
    another host, must land in the collection this job stamps."""
    if not ctx.settings.chroma_server_urls or not ctx.config.scale_out.min_files:
        return None
    return Coordinator(ctx, job, repo.id)


def _stamp_guard(ctx: WorkerContext, spec: jobspec.JobSpec) -> StampGuard:
    lock = keys.stamp_lock(spec.repo, spec.branch)
    # The section is a manifest read and write: a lease's worth of waiting is ample.
    return functools.partial(branch_lock.held_briefly, ctx.redis, lock,
                             lease_seconds=ctx.timings.lock_lease_seconds,
                             wait_seconds=ctx.timings.lock_lease_seconds)


def _index_mirror(job: jobspec.Job, ctx: WorkerContext, repo: RepoConfig) -> dict[str, Any]:
    spec = job.spec
    fetch_started = time.perf_counter()
    state = sync_mirror(ctx.settings, repo)
    fetch_seconds = round(time.perf_counter() - fetch_started, 3)
    if spec.branch not in state.heads:
        # Gone (its delete event may have been lost) or not created yet: retire what exists.
        if ctx.store().branch(branches.repo_key(repo.id), spec.branch) is not None:
            retire = _retire_spec(repo.id, spec.branch, "branch gone at index time")
            jobs.submit(ctx.redis, retire, ctx.send)
        return {"noop": True, "branch_missing": True}
    # Kept if the run fails for good: reconcile sends it again only once the branch moves.
    jobs.note_head(ctx.redis, job.key, job.id, state.heads[spec.branch])
    request = IndexRequest(
        state.path,
        branch=spec.branch,
        layer=None if spec.layer == jobspec.ALL else spec.layer,
        repo_id=repo.id,
        base_branch=spec.base_branch or branches.default_base(repo, spec.branch) or None,
        base_named=bool(spec.base_named),
    )
    summary = index_repo(request, settings=ctx.settings, config=ctx.config, store=ctx.store(),
                         embedder=ctx.embedder(), fan_out=_fan_out(job, ctx, repo),
                         stamp_guard=_stamp_guard(ctx, spec))
    if spec.branch not in repo.branches:
        branches.touch_activity(ctx.redis, repo.id, spec.branch)
    _refresh_freshness(ctx, branches.repo_key(repo.id), spec.branch)
    return {**summary.to_dict(), "fetch_seconds": fetch_seconds}


def _refresh_freshness(ctx: WorkerContext, repo_key: str, branch: str) -> None:
    """Publish the branch's freshness as the run left it (``audit.refresh_branch``)."""
    try:
        refresh_branch(ctx.settings, ctx.config, ctx.store(),
                       freshness_store_for(ctx.settings, ctx.redis), repo_key, branch)
    except Exception as exc:  # the run itself succeeded; the next scheduled audit measures it
        log.warning("freshness refresh of %s@%s failed: %s", repo_key, branch, exc)


def _index_working_copy(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """A watched working copy: indexed in place, keyed by its path like ``freshmark index``."""
    spec = job.spec
    request = IndexRequest(
        Path(spec.path),
        branch=spec.branch,
        layer=None if spec.layer == jobspec.ALL else spec.layer,
        base_branch=spec.base_branch or None,
    )
    summary = index_repo(request, settings=ctx.settings, config=ctx.config, store=ctx.store(),
                         embedder=ctx.embedder(), stamp_guard=_stamp_guard(ctx, spec))
    _refresh_freshness(ctx, GitRepo.discover(request.repo_path).key(), summary.branch)
    return summary.to_dict()


def run_index(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    if job.spec.path:
        return _index_working_copy(job, ctx)
    return _index_mirror(job, ctx, ctx.config.repo(job.spec.repo))


def run_retire(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Drop a branch's collection, but only if the mirror agrees the branch is gone."""
    repo = ctx.config.repo(job.spec.repo)
    state = sync_mirror(ctx.settings, repo)
    if job.spec.branch in state.heads:
        return {"noop": True, "reason": "branch exists in the mirror"}
    key = branches.repo_key(repo.id)
    retirement = branches.Retirement(repo.id, key, job.spec.branch, "deleted")
    # The job holds the branch's lock already (a whole-branch job).
    branch_state = BranchState.open(ctx.settings, ctx.store(), ctx.redis, config=ctx.config)
    dropped = branches.retire(branch_state.lock_held(), retirement)
    return {"noop": not dropped, "dropped": dropped}


def run_reconcile(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    store = ctx.store()
    report = reconcile_all(
        ctx.settings, ctx.config, store, ctx.redis, ctx.send,
        stale_seconds=ctx.timings.stale_seconds,
    )
    # The mirrors were just fetched: the freshness audit compares against exactly those heads.
    audit = run_audit(ctx.settings, ctx.config, redis=ctx.redis, store=store)
    return {**report.as_dict(), "audited_rows": len(audit.rows)}


def run_retire_idle(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Retire idle untracked branches (and deleted ones whose events were lost)."""
    heads: dict[str, dict[str, str] | None] = {}
    for repo in ctx.config.repos:
        try:
            heads[repo.id] = sync_mirror(ctx.settings, repo).heads
        except Exception as exc:  # one dead remote must not block retirement elsewhere
            log.warning("retire: %s unreachable: %s", repo.id, exc)
            heads[repo.id] = None
    store = ctx.store()
    plan = branches.plan_retirements(
        store.list_manifests(), ctx.config, heads, branches.activity(ctx.redis), time.time()
    )
    # Each branch is retired under its own lock (``BranchState.guard``), waiting for its runs.
    state = BranchState.open(ctx.settings, store, ctx.redis, config=ctx.config)
    dropped = [r for r in plan if branches.retire(state, r)]
    return {"noop": not dropped, "retired": [f"{r.repo}@{r.branch} ({r.reason})" for r in dropped]}

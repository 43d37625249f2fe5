"""The Celery tasks: one line of declaration each over the core in ``workers.execute``."""

from __future__ import annotations

from typing import Any

from freshmark.core import jobspec
from workers import execute, scaleout
from workers.celery_app import TASK_INDEX_BATCH
from workers.decorator import batch_task, job_task
from workers.runtime import WorkerContext


@job_task("freshmark.index_branch", queue=jobspec.QUEUE_HOT, lock_branch=True)
def index_branch(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Fetch the mirror and bring the branch (one layer or all) to its head."""
    return execute.run_index(job, ctx)


@batch_task(TASK_INDEX_BATCH, queue=jobspec.QUEUE_HOT)
def index_batch(payload: dict[str, Any], ctx: WorkerContext) -> dict[str, Any]:
    """Embed one batch of a split index run, if it is still wanted (sent to the job's queue)."""
    return scaleout.run_batch_message(payload, ctx)


@job_task("freshmark.retire_branch", queue=jobspec.QUEUE_MAINTENANCE, lock_branch=True)
def retire_branch(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Drop a deleted branch's collection once the mirror confirms the deletion."""
    return execute.run_retire(job, ctx)


@job_task("freshmark.reconcile", queue=jobspec.QUEUE_MAINTENANCE, lock_branch=False)
def reconcile(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Compare every tracked or indexed branch head with its stamp; queue the gaps."""
    return execute.run_reconcile(job, ctx)


@job_task("freshmark.retire_idle", queue=jobspec.QUEUE_MAINTENANCE, lock_branch=False)
def retire_idle(job: jobspec.Job, ctx: WorkerContext) -> dict[str, Any]:
    """Retire untracked branches idle for longer than ``branch_idle_seconds``."""
    return execute.run_retire_idle(job, ctx)

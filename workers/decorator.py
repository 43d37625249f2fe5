"""``job_task``: the one way tasks are declared (Sentry's task wrapper is the model).

Every task takes ``(job_key, job_id)`` and gets, from the decorator: its queue, an execution
lock (the (repo, branch, layer) lock for a layer's run, the (repo, branch) lock for a
whole-branch job, which excludes every layer's, the job's own for repo-wide ones) that a heartbeat
thread renews while the job runs, the claim (attempt counting and parking), timing, outcome
metrics, and the retry policy by error class:

- ``PermanentError``: fail fast, no retry (the job is parked with the head it failed at and
  recorded as failed).
- anything else (``RetryableError`` such as a Chroma or remote that is down, a soft time limit,
  an unexpected bug): retry with capped exponential backoff spread over at least
  ``config.retry_window_seconds`` (so a service restart does not exhaust the attempts); the
  attempt counter parks the job after ``config.max_attempts`` tries, so nothing loops forever,
  and a later success of the same job clears the parked entry. The run's own error (not an
  outage: a ``RetryableError``, a lost connection) that recurs
  ``jobspec.RECURRING_ERROR_ATTEMPTS`` times in a row is permanent. A job parked on its own
  error is not started again by reconcile or the schedule until its branch moves
  (``jobs.held_back``); one parked on an outage is.

A busy execution lock is not an attempt: the message is retried shortly without counting. A
whole-branch job kept out by layer runs marks the branch meanwhile (``branch_lock.Wants``): no
new layer run starts until it has run, so a stream of hot-layer runs cannot starve it; the mark
lapses a couple of seconds after the job's next try is due.

``batch_task`` declares the other kind: a batch of a split index run (``workers.scaleout``),
which is not a job. It takes the batch's message payload and gets no branch lock (the
coordinating job holds it for the whole run), no claim on a job and no retry: a batch that
fails is handed back to the coordinator, whose job then meets the error under the rules above.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from celery import Task

from freshmark.adapters import keys
from freshmark.adapters.queue import branch_lock, jobs
from freshmark.adapters.telemetry import counters
from freshmark.core import jobspec
from freshmark.core.errors import PermanentError, RetryableError
from freshmark.core.jobspec import parse_job_key
from freshmark.core.redact import redact
from workers.celery_app import TASK_ROUTES, app
from workers.runtime import WorkerContext, current_context

log = logging.getLogger("freshmark.worker")

Body = Callable[[jobspec.Job, WorkerContext], dict[str, Any]]
BatchBody = Callable[[dict[str, Any], WorkerContext], dict[str, Any]]

# Errors of a service that is down, not of the run: retried until the attempts run out, never
# taken for the run's own recurring error (Redis errors are raised unwrapped by redis-py).
OUTAGES: tuple[type[BaseException], ...] = (
    RetryableError, ConnectionError, TimeoutError, redis.ConnectionError, redis.TimeoutError)

# A busy lock: wait a little in place (the run in the way is usually short), then hand the
# message back with a growing delay.
LOCK_WAIT_SECONDS = 3.0
LOCK_BUSY_RETRY_SECONDS = 1.0
LOCK_BUSY_MAX_SECONDS = 30.0
# How long a waiting whole-branch job's mark outlives its next try (a dead waiter's bound).
WANTS_SLACK_SECONDS = 2.0


def _count(queue: str, outcome: str) -> None:
    counters.JOBS_TOTAL.labels(queue=queue, outcome=outcome).inc()
    if outcome == "parked":
        counters.JOBS_PARKED_TOTAL.inc()


def _backoff_seconds(ctx: WorkerContext, attempts: int) -> float:
    # A retry is an ETA message held unacked: its wait must stay below the visibility timeout.
    cap = max(5.0, min(300.0, ctx.timings.visibility_timeout_seconds / 4))
    return jobspec.retry_delay_seconds(attempts, ctx.config.max_attempts, cap_seconds=cap,
                                    window_seconds=ctx.config.retry_window_seconds)


def _run_claimed(task: Task, body: Body, ctx: WorkerContext, job: jobspec.Job) -> dict[str, Any]:
    queue = job.spec.queue
    started = time.perf_counter()
    try:
        result = body(job, ctx)
    except PermanentError as exc:
        return _fail(ctx, job, jobs.stored_error(str(exc)))
    except Exception as exc:
        error = jobs.stored_error(f"{type(exc).__name__}: {exc}")
        outage = isinstance(exc, OUTAGES)
        repeats = 0 if outage else jobspec.error_repeats(job, error)
        if repeats >= jobspec.RECURRING_ERROR_ATTEMPTS:
            return _fail(ctx, job, f"{error} (the same error {repeats} attempts in a row)")
        failed_on = jobspec.FAILED_ON_OUTAGE if outage else jobspec.FAILED_ON_ERROR
        jobs.finish(ctx.redis, job.key, job.id, "retry", error=error, failed_on=failed_on,
                    error_repeats=repeats)
        _count(queue, "retry")
        delay = _backoff_seconds(ctx, job.attempts)
        log.warning("job %s attempt %d failed (%s); retry in %.1fs",
                    job.key, job.attempts, redact(str(exc)), delay)
        raise task.retry(countdown=delay, exc=exc, max_retries=None) from exc
    finally:
        counters.JOB_DURATION_SECONDS.labels(queue=queue).observe(time.perf_counter() - started)
    done = jobs.finish(ctx.redis, job.key, job.id, "done")
    if done.outcome == "requeue":  # a request arrived while running: run once more
        ctx.send(done.kind, job.key, done.job_id, done.queue)
    outcome = "noop" if result.get("noop") else "success"
    _count(queue, outcome)
    log.info("job %s %s in %.2fs", job.key, outcome, time.perf_counter() - started)
    return {"outcome": outcome, **result}


def _fail(ctx: WorkerContext, job: jobspec.Job, error: str) -> dict[str, Any]:
    """A permanent failure: the job is parked at its head (unless a re-run was asked for)."""
    done = jobs.finish(ctx.redis, job.key, job.id, "failed", error=error,
                       failed_on=jobspec.FAILED_ON_ERROR)
    if done.outcome == "requeue":  # a request arrived meanwhile: a new commit may fix it
        ctx.send(done.kind, job.key, done.job_id, done.queue)
    _count(job.spec.queue, "failed")
    if done.outcome == "parked":
        counters.JOBS_PARKED_TOTAL.inc()
    log.error("job %s failed permanently: %s", job.key, error)
    return {"outcome": "failed", "error": error}


@dataclass(frozen=True)
class _Locks:
    """The lock a job holds; the locks that must stay free while it holds it (``excludes``);
    the whole-branch job's mark a layer run does not start under (``defers_to``), or the mark
    a whole-branch job sets while it waits (``wants``)."""

    name: str
    excludes: list[str]
    defers_to: list[str]
    wants: str | None = None


def _lock_names(job_key: str, lock_branch: bool, ctx: WorkerContext) -> _Locks:
    """A layer's run holds its layer's lock and waits only for that layer's other run or a
    whole-branch job (running, or waiting: writer preference); a whole-branch job (every
    layer, a retirement) holds the branch's lock and waits for every layer's run; a repo-wide
    job only excludes itself."""
    _, repo, branch, layer = parse_job_key(job_key)
    if not lock_branch:
        return _Locks(keys.job_lock(job_key), [], [])
    if layer != jobspec.ALL:
        return _Locks(keys.layer_lock(repo, branch, layer), [keys.branch_lock(repo, branch)],
                      [keys.branch_wants(repo, branch)])
    return _Locks(keys.branch_lock(repo, branch),
                  keys.layer_locks(repo, branch, (layer_.name for layer_ in ctx.config.layers)),
                  [], keys.branch_wants(repo, branch))


def _wants(locks: _Locks, job_key: str, retry_in_seconds: float) -> branch_lock.Wants | None:
    if locks.wants is None:
        return None
    # Not a process's token (no pid): the job's next try may run in another process, so the
    # mark outlives this one by design and is bounded by its lease alone.
    owner = f"{socket.gethostname()}:job:{job_key}"
    return branch_lock.Wants(locks.wants, owner,
                             LOCK_WAIT_SECONDS + retry_in_seconds + WANTS_SLACK_SECONDS)


def _lock_busy_wait_seconds(task: Task, ctx: WorkerContext) -> float:
    # A dead holder's lease lapses within one lease: never wait much longer than that.
    cap = min(LOCK_BUSY_MAX_SECONDS, ctx.timings.lock_lease_seconds,
              ctx.timings.visibility_timeout_seconds / 4)
    return min(cap, LOCK_BUSY_RETRY_SECONDS * 2 ** (task.request.retries or 0))


def _claim_and_run(task: Task, body: Body, ctx: WorkerContext, job_key: str, job_id: str,
                   lock: str, token: str) -> dict[str, Any]:
    claim = jobs.claim(ctx.redis, job_key, job_id, max_attempts=ctx.config.max_attempts,
                       lock=lock, lock_token=token)
    if claim.outcome == "parked":
        queue = task.request.delivery_info.get("routing_key") or "unknown"
        _count(queue, "parked")
        log.error("job %s parked after %d attempts; see freshmark:parked", job_key,
                  ctx.config.max_attempts)
        return {"outcome": "parked"}
    if claim.job is None:  # gone or stale: a duplicate or superseded message
        return {"outcome": claim.outcome}
    return _run_claimed(task, body, ctx, claim.job)


def _run(task: Task, body: Body, job_key: str, job_id: str, lock_branch: bool) -> dict[str, Any]:
    ctx = current_context()
    timings = ctx.timings
    locks = _lock_names(job_key, lock_branch, ctx)
    retry_in_seconds = _lock_busy_wait_seconds(task, ctx)
    token = branch_lock.acquire(ctx.redis, locks.name, timings.lock_lease_seconds,
                                wait_seconds=LOCK_WAIT_SECONDS,
                                excludes=[*locks.excludes, *locks.defers_to],
                                wants=_wants(locks, job_key, retry_in_seconds))
    if token is None:  # another run holds it: come back later, no attempt
        raise task.retry(countdown=retry_in_seconds, max_retries=None)
    try:
        with branch_lock.Heartbeat(ctx.redis, locks.name, token,
                                   lease_seconds=timings.lock_lease_seconds,
                                   every_seconds=timings.heartbeat_seconds,
                                   excludes=locks.excludes):
            return _claim_and_run(task, body, ctx, job_key, job_id, locks.name, token)
    finally:
        branch_lock.release(ctx.redis, locks.name, token)


def job_task(name: str, *, queue: str, lock_branch: bool) -> Callable[[Body], Task]:
    """Declare a job task: ``body(job, ctx)`` does the work and returns a JSON-able summary
    (``{"noop": True}`` for a run that changed nothing)."""

    def declare(body: Body) -> Task:
        def run(self: Task, job_key: str, job_id: str) -> dict[str, Any]:
            return _run(self, body, job_key, job_id, lock_branch)

        run.__name__ = body.__name__
        run.__doc__ = body.__doc__
        TASK_ROUTES[name] = {"queue": queue}
        return app.task(name=name, bind=True, max_retries=None)(run)

    return declare


def batch_task(name: str, *, queue: str) -> Callable[[BatchBody], Task]:
    """Declare a batch task: ``body(payload, ctx)`` runs one batch of a split index run and
    returns a JSON-able outcome; it never raises for a batch it could not finish."""

    def declare(body: BatchBody) -> Task:
        def run(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
            return body(payload, current_context())

        run.__name__ = body.__name__
        run.__doc__ = body.__doc__
        TASK_ROUTES[name] = {"queue": queue}
        return app.task(name=name, bind=True, max_retries=None)(run)

    return declare

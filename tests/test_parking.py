"""Retries that end: the run's own error that keeps recurring is permanent, and a job parked on
its own error is not started again with a fresh count until its branch moves. Real Redis, a
real git remote and mirror, the embedded Chroma store; the job tasks run in process (Celery's
``apply``, whose retries run at once)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from cluster_support import Recorder, make_remote
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec
from freshmark.core.config import Config, Layer, RepoConfig
from freshmark.core.errors import StoreUnavailable
from freshmark.core.settings import Settings
from freshmark.services.upkeep.reconcile import reconcile_all
from scheduler.schedule import Scheduler
from workers import decorator
from workers.decorator import job_task
from workers.runtime import WorkerContext

MAX_ATTEMPTS = 5
RAISED: list[Exception] = []  # what the task below raises, every attempt


@job_task("tests.index_that_fails", queue=jobspec.QUEUE_HOT, lock_branch=True)
def index_that_fails(job: jobspec.Job, ctx: WorkerContext) -> dict[str, object]:
    raise RAISED[0]


@pytest.fixture
def remote(tmp_path: Path) -> RepoBuilder:
    _, work = make_remote(tmp_path / "remotes", "shop")
    return work


@pytest.fixture
def config(remote: RepoBuilder, tmp_path: Path) -> Config:
    url = f"file://{tmp_path / 'remotes' / 'shop.git'}"
    return Config(layers=(Layer("default", interval_seconds=300),),
                  repos=(RepoConfig("shop", url, ("main",)),), max_attempts=MAX_ATTEMPTS)


@pytest.fixture
def ctx(tmp_path: Path, config: Config, redis_client: redis.Redis,
        monkeypatch: pytest.MonkeyPatch) -> WorkerContext:
    context = WorkerContext(settings=Settings(home=tmp_path / "home", embedder="hashing"),
                            config=config, timings=jobspec.Timings(), redis=redis_client,
                            send=Recorder())
    monkeypatch.setattr(decorator, "current_context", lambda: context)
    return context


def _run_failing(ctx: WorkerContext, error: Exception) -> dict[str, str]:
    """Send the job and let every attempt raise ``error``; the parked entry it ends in."""
    RAISED[:] = [error]
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main")
    queued = jobs.enqueue(ctx.redis, spec)
    index_that_fails.apply(args=[spec.key, queued.job_id])
    return jobs.parked_jobs(ctx.redis)[spec.key]


def test_the_same_error_three_attempts_in_a_row_is_permanent(ctx: WorkerContext) -> None:
    parked = _run_failing(ctx, ValueError("bad character range z-a at position 1"))
    assert parked["attempts"] == str(jobspec.RECURRING_ERROR_ATTEMPTS)
    assert parked["failed_on"] == jobspec.FAILED_ON_ERROR
    assert parked["last_error"].endswith("(the same error 3 attempts in a row)")


@pytest.mark.parametrize("outage", [StoreUnavailable("Chroma store unreachable"),
                                    ConnectionRefusedError(111, "Connection refused"),
                                    redis.ConnectionError("Error 111 connecting to redis")])
def test_an_outage_is_retried_until_the_attempts_run_out(ctx: WorkerContext,
                                                         outage: Exception) -> None:
    parked = _run_failing(ctx, outage)
    assert parked["attempts"] == str(MAX_ATTEMPTS + 1)  # the delivery after the last attempt
    assert parked["failed_on"] == jobspec.FAILED_ON_OUTAGE


# -- reconcile and the schedule -----------------------------------------------------------------


def _park(client: redis.Redis, head: str, failed_on: str) -> str:
    """Park the index job of shop@main at ``head`` as a worker does when it fails for good."""
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main",
                           layer="default", target=head)
    queued = jobs.enqueue(client, spec)
    jobs.claim(client, spec.key, queued.job_id, max_attempts=MAX_ATTEMPTS)
    assert jobs.note_head(client, spec.key, queued.job_id, head)
    outcome = "failed" if failed_on == jobspec.FAILED_ON_ERROR else "retry"
    jobs.finish(client, spec.key, queued.job_id, outcome, error="E: x", failed_on=failed_on)
    if outcome == "retry":  # an outage until the attempts run out
        client.hset(keys.job(spec.key), "attempts", MAX_ATTEMPTS)
        jobs.claim(client, spec.key, queued.job_id, max_attempts=MAX_ATTEMPTS)
    assert spec.key in jobs.parked_jobs(client)
    return spec.key


def _reconcile(ctx: WorkerContext) -> Recorder:
    send = Recorder()
    reconcile_all(ctx.settings, ctx.config, Store.open(ctx.settings), ctx.redis, send)
    return send


def test_reconcile_leaves_a_job_parked_on_its_own_error_at_the_head_alone(
    ctx: WorkerContext, remote: RepoBuilder,
) -> None:
    job_key = _park(ctx.redis, remote.head(), jobspec.FAILED_ON_ERROR)
    assert _reconcile(ctx).sent == []
    assert not ctx.redis.exists(keys.job(job_key))  # no fresh attempt count either


def test_reconcile_sends_a_parked_job_again_once_its_branch_moves(
    ctx: WorkerContext, remote: RepoBuilder,
) -> None:
    job_key = _park(ctx.redis, remote.head(), jobspec.FAILED_ON_ERROR)
    moved = remote.write("src/app.py", "def hello():\n    return 'fixed'\n").commit("fix")
    remote.push("origin", "main")
    assert _reconcile(ctx).keys() == [job_key]
    assert jobs.job_state(ctx.redis, job_key)["target"] == moved


def test_reconcile_sends_a_job_parked_on_an_outage_again_at_the_same_head(
    ctx: WorkerContext, remote: RepoBuilder,
) -> None:
    job_key = _park(ctx.redis, remote.head(), jobspec.FAILED_ON_OUTAGE)
    assert _reconcile(ctx).keys() == [job_key]


def test_schedule_does_not_rebuild_a_job_parked_on_its_own_error(
    ctx: WorkerContext, remote: RepoBuilder,
) -> None:
    job_key = _park(ctx.redis, remote.head(), jobspec.FAILED_ON_ERROR)
    send = Recorder()
    Scheduler(ctx.redis, ctx.config, send).tick()
    assert job_key not in send.keys()

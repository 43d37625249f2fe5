"""Hold leases on taken job messages against a real Redis: the sweep re-sends a queued job only
when the worker that took its message stopped renewing its hold."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from cluster_support import Recorder

from freshmark.adapters import keys
from freshmark.adapters.queue import holds, jobs
from freshmark.core import jobspec
from workers.holds import HoldKeeper

SPEC = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main", layer="infra",
                       queue="infra", target="a" * 40, reason="push")
LEASE_SECONDS = 60


def _held(client: redis.Redis, token: str = "vm:1:a") -> jobspec.EnqueueResult:
    queued = jobs.enqueue(client, SPEC)
    assert holds.hold(client, SPEC.key, queued.job_id, token, LEASE_SECONDS)
    return queued


def test_queued_job_whose_hold_lapsed_is_resent_under_a_new_id(redis_client: redis.Redis) -> None:
    send = Recorder()
    old = _held(redis_client)
    redis_client.delete(keys.hold(SPEC.key))  # the worker died and stopped renewing
    assert jobs.resend_orphans(redis_client, send) == [SPEC.key]
    (kind, job_key, new_id, queue), = send.sent
    assert (kind, job_key, queue) == (jobspec.KIND_INDEX, SPEC.key, "infra")
    assert new_id != old.job_id
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.QUEUED
    assert jobs.claim(redis_client, SPEC.key, old.job_id, max_attempts=3).outcome == "stale"


def test_queued_job_whose_message_is_held_is_not_resent(redis_client: redis.Redis) -> None:
    _held(redis_client)
    assert jobs.resend_orphans(redis_client, Recorder()) == []


def test_queued_job_nobody_took_is_never_resent_however_long_it_waits(
    redis_client: redis.Redis,
) -> None:
    jobs.enqueue(redis_client, SPEC, now=0.0)  # in a long backlog: still in the broker's queue
    assert jobs.resend_orphans(redis_client, Recorder(), now=86_400.0) == []


def test_released_hold_leaves_the_job_to_its_message_in_the_broker(
    redis_client: redis.Redis,
) -> None:
    _held(redis_client)
    assert holds.release(redis_client, SPEC.key, "vm:1:a")
    assert jobs.resend_orphans(redis_client, Recorder()) == []
    assert redis_client.zcard(keys.HELD) == 0


def test_a_holder_drops_only_its_own_hold(redis_client: redis.Redis) -> None:
    queued = _held(redis_client, "vm:1:first")
    assert holds.hold(redis_client, SPEC.key, queued.job_id, "vm:2:retry", LEASE_SECONDS)
    assert not holds.release(redis_client, SPEC.key, "vm:1:first")
    assert redis_client.get(keys.hold(SPEC.key)) == "vm:2:retry"
    assert jobs.resend_orphans(redis_client, Recorder()) == []


def test_a_stale_message_takes_no_hold(redis_client: redis.Redis) -> None:
    jobs.enqueue(redis_client, SPEC)
    assert not holds.hold(redis_client, SPEC.key, "an-older-id", "vm:1:a", LEASE_SECONDS)
    assert redis_client.zcard(keys.HELD) == 0


def test_claimed_job_is_no_longer_judged_by_its_hold(redis_client: redis.Redis) -> None:
    queued = _held(redis_client)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3)
    jobs.finish(redis_client, SPEC.key, queued.job_id, "retry")  # queued again, same id
    redis_client.delete(keys.hold(SPEC.key))
    assert jobs.resend_orphans(redis_client, Recorder()) == []  # its retry message is on its way


@dataclass
class TakenMessage:
    """What the keeper reads of a Celery request: the task's arguments and whether it was acked."""

    args: tuple[str, str]
    acknowledged: bool = False


def test_keeper_renews_a_message_it_keeps_and_drops_it_once_acknowledged(
    redis_client: redis.Redis,
) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    keeper = HoldKeeper(redis_client, jobspec.Timings(lock_lease_seconds=LEASE_SECONDS))
    message = TakenMessage((SPEC.key, queued.job_id))
    keeper.take(message)
    try:
        redis_client.pexpire(keys.hold(SPEC.key), 1000)
        keeper.beat()
        assert redis_client.pttl(keys.hold(SPEC.key)) > 1000  # renewed to a whole lease
        message.acknowledged = True
        keeper.beat()
        assert not redis_client.exists(keys.hold(SPEC.key)) and keeper.held() == 0
    finally:
        keeper.stop()

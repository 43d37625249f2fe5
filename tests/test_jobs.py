"""The job-queue core against a real Redis: dedup, coalescing, claims, parking, debounce."""

from __future__ import annotations

import threading

import pytest
import redis
from cluster_support import Recorder

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.errors import ConfigError

SPEC = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main", layer="hot",
                       queue="hot", target="a" * 40, reason="push")


def _with_target(target: str) -> jobspec.JobSpec:
    return jobspec.JobSpec(**{**SPEC.__dict__, "target": target})


def test_first_request_is_sent_and_a_second_is_coalesced(redis_client: redis.Redis) -> None:
    send = Recorder()
    first = jobs.submit(redis_client, SPEC, send)
    second = jobs.submit(redis_client, SPEC, send)
    assert (first.outcome, second.outcome) == ("new", "coalesced")
    assert send.sent == [(jobspec.KIND_INDEX, SPEC.key, first.job_id, "hot")]


def test_coalesced_request_leaves_the_newest_target(redis_client: redis.Redis) -> None:
    jobs.enqueue(redis_client, _with_target("a" * 40))
    jobs.enqueue(redis_client, _with_target("b" * 40))
    assert jobs.job_state(redis_client, SPEC.key)["target"] == "b" * 40


def test_concurrent_requests_send_exactly_one_message(redis_client: redis.Redis) -> None:
    outcomes: list[str] = []

    def request() -> None:  # redis-py clients are thread-safe: each call takes a connection
        outcomes.append(jobs.enqueue(redis_client, SPEC).outcome)

    threads = [threading.Thread(target=request) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("new") == 1 and outcomes.count("coalesced") == 39


def test_claim_marks_the_job_running_and_counts_the_attempt(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    claim = jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3)
    assert claim.outcome == "claimed" and claim.job is not None
    assert claim.job.attempts == 1 and claim.job.spec == SPEC
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.RUNNING


def test_message_for_a_finished_job_is_gone(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3)
    assert jobs.finish(redis_client, SPEC.key, queued.job_id, "done").outcome == "done"
    assert jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3).outcome == "gone"


def test_request_for_a_job_running_past_its_limits_resends_it(redis_client: redis.Redis) -> None:
    old = jobs.enqueue(redis_client, SPEC, now=1000.0)
    jobs.claim(redis_client, SPEC.key, old.job_id, max_attempts=3, now=1001.0)
    resent = jobs.enqueue(redis_client, SPEC, now=1100.0, stale_seconds=60)
    assert resent.outcome == "resend" and resent.job_id != old.job_id
    assert jobs.claim(redis_client, SPEC.key, old.job_id, max_attempts=3).outcome == "stale"
    assert jobs.claim(redis_client, SPEC.key, resent.job_id, max_attempts=3).outcome == "claimed"


def test_queued_job_in_a_long_backlog_is_not_resent(redis_client: redis.Redis) -> None:
    jobs.enqueue(redis_client, SPEC, now=1000.0)
    later = jobs.enqueue(redis_client, SPEC, now=1100.0, stale_seconds=60)
    lost = jobs.enqueue(redis_client, SPEC, now=1000.0 + 61 * jobs.QUEUED_STALE_FACTOR,
                        stale_seconds=60)
    assert (later.outcome, lost.outcome) == ("coalesced", "resend")


def test_request_during_a_run_requeues_the_job_when_it_finishes(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3)
    during = jobs.enqueue(redis_client, _with_target("c" * 40))
    assert during.outcome == "coalesced"
    done = jobs.finish(redis_client, SPEC.key, queued.job_id, "done")
    assert done.outcome == "requeue" and done.job_id != queued.job_id
    state = jobs.job_state(redis_client, SPEC.key)
    assert (state["state"], state["target"], state["attempts"]) == (jobspec.QUEUED, "c" * 40, "0")


def test_job_is_parked_after_max_attempts(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    outcomes = [
        jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3).outcome
        for _ in range(4)  # three crashes mid-job, then the fourth delivery
    ]
    assert outcomes == ["claimed", "claimed", "claimed", "parked"]
    assert not redis_client.exists(keys.job(SPEC.key))
    assert jobs.parked_jobs(redis_client)[SPEC.key]["attempts"] == "4"


def test_parked_job_keeps_its_last_error(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=1)
    jobs.finish(redis_client, SPEC.key, queued.job_id, "retry", error="StoreUnavailable: down")
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=1)
    assert jobs.parked_jobs(redis_client)[SPEC.key]["last_error"] == "StoreUnavailable: down"


def test_request_after_parking_starts_a_fresh_job(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    for _ in range(2):
        jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=1)
    fresh = jobs.enqueue(redis_client, SPEC)
    assert fresh.outcome == "new"
    assert jobs.claim(redis_client, SPEC.key, fresh.job_id, max_attempts=1).outcome == "claimed"


def test_retry_returns_the_job_to_the_queue_keeping_attempts(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=5)
    assert jobs.finish(redis_client, SPEC.key, queued.job_id, "retry").outcome == "retry"
    again = jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=5)
    assert again.job is not None and again.job.attempts == 2


def test_permanent_failure_is_recorded(redis_client: redis.Redis) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=5)
    jobs.finish(redis_client, SPEC.key, queued.job_id, "failed", error="branch not found")
    assert not redis_client.exists(keys.job(SPEC.key))
    assert "branch not found" in redis_client.lindex(keys.FAILED, 0)


def test_debounced_job_waits_in_the_due_set_until_due(redis_client: redis.Redis) -> None:
    send = Recorder()
    waiting = jobs.enqueue(redis_client, SPEC, delay_seconds=2.0, now=1000.0)
    assert waiting.outcome == "waiting" and not waiting.must_send
    assert jobs.drain_due(redis_client, send, now=1001.0) == 0
    assert jobs.drain_due(redis_client, send, now=1002.5) == 1
    assert send.sent == [(jobspec.KIND_INDEX, SPEC.key, waiting.job_id, "hot")]
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.QUEUED


def test_each_event_pushes_the_due_time_out_but_not_past_max_wait(
    redis_client: redis.Redis,
) -> None:
    for now in (1000.0, 1001.5, 1003.0, 1004.5):
        jobs.enqueue(redis_client, SPEC, delay_seconds=2.0, max_wait_seconds=5.0, now=now)
    assert redis_client.zscore(keys.DUE, SPEC.key) == 1005.0  # first request + max wait


def test_immediate_request_sends_a_waiting_job_at_once(redis_client: redis.Redis) -> None:
    jobs.enqueue(redis_client, SPEC, delay_seconds=30.0, now=1000.0)
    now = jobs.enqueue(redis_client, SPEC, now=1001.0)
    assert now.outcome == "new"
    assert redis_client.zscore(keys.DUE, SPEC.key) is None


def test_queue_lengths_count_every_priority_list(redis_client: redis.Redis) -> None:
    redis_client.rpush("hot", "m1", "m2")
    redis_client.rpush("hot" + keys.KOMBU_PRIORITY_SEP + "3", "m3")
    redis_client.rpush("infra", "m4")
    lengths = jobs.queue_lengths(redis_client)
    assert lengths == {"hot": 3, "infra": 1, "ondemand": 0, "maintenance": 0}


def test_timings_stop_a_task_before_its_message_is_handed_on() -> None:
    for visibility in (10, 600, 3600, 86400):
        t = jobspec.Timings(visibility_timeout_seconds=visibility, lock_lease_seconds=5)
        assert (t.soft_time_limit_seconds < t.time_limit_seconds < t.visibility_timeout_seconds
                < t.stale_seconds)


def test_timings_renew_a_lease_three_times_before_it_lapses() -> None:
    t = jobspec.Timings()
    assert t.heartbeat_seconds * 3 == t.lock_lease_seconds < t.visibility_timeout_seconds


def test_lock_lease_comes_from_the_environment() -> None:
    env = {"FRESHMARK_VISIBILITY_TIMEOUT_SECONDS": "600", "FRESHMARK_LOCK_LEASE_SECONDS": "45"}
    assert jobspec.Timings.from_env(env).lock_lease_seconds == 45


@pytest.mark.parametrize("lease", [0, 600, 900])
def test_a_lease_not_shorter_than_the_visibility_timeout_is_refused(lease: int) -> None:
    with pytest.raises(ConfigError, match="FRESHMARK_LOCK_LEASE_SECONDS"):
        jobspec.Timings(visibility_timeout_seconds=600, lock_lease_seconds=lease)


LOCK = keys.branch_lock("shop", "main")


def _claim_holding(client: redis.Redis, token: str = "vm:1:run") -> jobspec.EnqueueResult:
    """A job claimed by a run that holds LOCK with ``token``."""
    queued = jobs.enqueue(client, SPEC)
    client.set(LOCK, token, px=60_000)
    jobs.claim(client, SPEC.key, queued.job_id, max_attempts=3, lock=LOCK, lock_token=token)
    return queued


def test_running_job_whose_lock_lapsed_is_resent(redis_client: redis.Redis) -> None:
    send = Recorder()
    old = _claim_holding(redis_client)
    redis_client.delete(LOCK)  # the worker died and stopped renewing
    assert jobs.resend_orphans(redis_client, send) == [SPEC.key]
    (kind, job_key, new_id, queue), = send.sent
    assert (kind, job_key, queue) == (jobspec.KIND_INDEX, SPEC.key, "hot") and new_id != old.job_id
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.QUEUED
    assert jobs.claim(redis_client, SPEC.key, old.job_id, max_attempts=3).outcome == "stale"


def test_running_job_whose_lock_another_run_holds_is_resent(redis_client: redis.Redis) -> None:
    _claim_holding(redis_client)
    redis_client.set(LOCK, "vm:2:the-next-run", px=60_000)
    assert jobs.resend_orphans(redis_client, Recorder()) == [SPEC.key]


def test_running_job_that_holds_its_lock_is_not_resent(redis_client: redis.Redis) -> None:
    send = Recorder()
    _claim_holding(redis_client)
    assert jobs.resend_orphans(redis_client, send) == [] and send.sent == []
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.RUNNING


def test_orphaned_job_is_resent_once(redis_client: redis.Redis) -> None:
    _claim_holding(redis_client)
    redis_client.delete(LOCK)
    first, second = (jobs.resend_orphans(redis_client, Recorder()) for _ in range(2))
    assert (first, second) == ([SPEC.key], [])


def test_resent_orphan_keeps_its_attempt_count(redis_client: redis.Redis) -> None:
    _claim_holding(redis_client)
    redis_client.delete(LOCK)
    send = Recorder()
    jobs.resend_orphans(redis_client, send)
    again = jobs.claim(redis_client, SPEC.key, send.sent[0][2], max_attempts=3)
    assert again.job is not None and again.job.attempts == 2  # a job that kills workers parks


def test_finished_job_leaves_the_running_set(redis_client: redis.Redis) -> None:
    queued = _claim_holding(redis_client)
    assert redis_client.zscore(keys.RUNNING, SPEC.key) is not None
    jobs.finish(redis_client, SPEC.key, queued.job_id, "done")
    assert redis_client.zcard(keys.RUNNING) == 0


def test_job_claimed_without_a_lock_is_left_to_the_stale_backstop(
    redis_client: redis.Redis,
) -> None:
    queued = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, queued.job_id, max_attempts=3)
    assert jobs.resend_orphans(redis_client, Recorder()) == []
    assert jobs.job_state(redis_client, SPEC.key)["state"] == jobspec.RUNNING


def _waits(max_attempts: int, cap: float = 300.0, jitter: float = 0.0) -> list[float]:
    """The waits between the attempts of a job that fails every time."""
    return [jobspec.retry_delay_seconds(n, max_attempts, cap_seconds=cap, jitter=jitter)
            for n in range(1, max_attempts)]


@pytest.mark.parametrize("max_attempts", [2, 3, 5, 8, 20])
def test_retries_span_at_least_a_minute_whatever_the_attempt_count(max_attempts: int) -> None:
    assert sum(_waits(max_attempts)) >= jobspec.RETRY_WINDOW_SECONDS


def test_three_attempts_outlast_a_six_second_restart_by_far() -> None:
    assert _waits(3) == [20.0, 40.0]


def test_retry_waits_double_then_stop_at_the_cap() -> None:
    assert _waits(8, cap=4.0) == [1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0]


def test_jitter_only_lengthens_a_wait() -> None:
    assert _waits(3, jitter=0.999) > _waits(3) and max(_waits(3, jitter=0.999)) < 50.0


def test_a_later_success_clears_the_parked_entry(redis_client: redis.Redis) -> None:
    first = jobs.enqueue(redis_client, SPEC)
    for _ in range(2):
        jobs.claim(redis_client, SPEC.key, first.job_id, max_attempts=1)
    assert SPEC.key in jobs.parked_jobs(redis_client)
    again = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, again.job_id, max_attempts=1)
    jobs.finish(redis_client, SPEC.key, again.job_id, "done")
    assert jobs.parked_jobs(redis_client) == {}


def test_a_permanent_failure_leaves_the_parked_entry(redis_client: redis.Redis) -> None:
    first = jobs.enqueue(redis_client, SPEC)
    for _ in range(2):
        jobs.claim(redis_client, SPEC.key, first.job_id, max_attempts=1)
    again = jobs.enqueue(redis_client, SPEC)
    jobs.claim(redis_client, SPEC.key, again.job_id, max_attempts=1)
    jobs.finish(redis_client, SPEC.key, again.job_id, "failed", error="BadInput: x")
    assert SPEC.key in jobs.parked_jobs(redis_client)

"""Layer locks against a real Redis: runs of different layers of a branch go side by side, a
whole-branch job (every layer, a retirement) excludes every layer's run and is excluded by any."""

from __future__ import annotations

import socket
import subprocess
import sys

import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import branch_lock

BRANCH = keys.branch_lock("shop", "main")
HOT = keys.layer_lock("shop", "main", "hot")
INFRA = keys.layer_lock("shop", "main", "infra")
EVERY_LAYER = [HOT, INFRA]


def _layer_run(client: redis.Redis, lock: str) -> str | None:
    return branch_lock.acquire(client, lock, 30, excludes=[BRANCH])


def _whole_branch_run(client: redis.Redis) -> str | None:
    return branch_lock.acquire(client, BRANCH, 30, excludes=EVERY_LAYER)


def _dead_holder() -> str:
    """A holder token of a process of this host that has exited."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    return f"{socket.gethostname()}:{child.stdout.strip()}:dead"


def test_a_layer_run_is_not_blocked_by_another_layers_run(redis_client: redis.Redis) -> None:
    assert _layer_run(redis_client, INFRA)
    assert _layer_run(redis_client, HOT)


def test_a_second_run_of_one_layer_is_refused(redis_client: redis.Redis) -> None:
    assert _layer_run(redis_client, HOT)
    assert _layer_run(redis_client, HOT) is None


def test_a_whole_branch_job_waits_for_any_layers_run(redis_client: redis.Redis) -> None:
    assert _layer_run(redis_client, INFRA)
    assert _whole_branch_run(redis_client) is None
    assert not redis_client.exists(BRANCH)


def test_a_layer_run_waits_for_a_whole_branch_job(redis_client: redis.Redis) -> None:
    assert _whole_branch_run(redis_client)
    assert _layer_run(redis_client, HOT) is None
    assert not redis_client.exists(HOT)


def test_a_whole_branch_job_runs_once_every_layers_run_released(
        redis_client: redis.Redis) -> None:
    hot, infra = _layer_run(redis_client, HOT), _layer_run(redis_client, INFRA)
    assert hot and infra
    branch_lock.release(redis_client, HOT, hot)
    assert _whole_branch_run(redis_client) is None
    branch_lock.release(redis_client, INFRA, infra)
    assert _whole_branch_run(redis_client)


def test_a_dead_layer_runs_lock_does_not_hold_up_a_whole_branch_job(
        redis_client: redis.Redis) -> None:
    redis_client.set(INFRA, _dead_holder(), px=30_000)
    assert _whole_branch_run(redis_client)
    assert not redis_client.exists(INFRA)


def test_a_live_layer_runs_lock_on_another_host_holds_up_a_whole_branch_job(
        redis_client: redis.Redis) -> None:
    redis_client.set(INFRA, "elsewhere:1:abc", px=30_000)
    assert _whole_branch_run(redis_client) is None
    assert redis_client.get(INFRA) == "elsewhere:1:abc"


def test_a_short_lock_is_held_only_inside_its_section(redis_client: redis.Redis) -> None:
    stamp = keys.stamp_lock("shop", "main")
    with branch_lock.held_briefly(redis_client, stamp, lease_seconds=30, wait_seconds=0):
        assert redis_client.exists(stamp)
    assert not redis_client.exists(stamp)


def test_a_short_lock_held_by_another_run_raises_busy(redis_client: redis.Redis) -> None:
    stamp = keys.stamp_lock("shop", "main")
    assert branch_lock.acquire(redis_client, stamp, 30)
    try:
        with branch_lock.held_briefly(redis_client, stamp, lease_seconds=30, wait_seconds=0):
            raise AssertionError("entered a section another run holds")
    except branch_lock.LockBusy:
        pass


def test_a_lapsed_layer_lock_is_not_taken_back_while_a_whole_branch_job_holds_the_branch(
        redis_client: redis.Redis) -> None:
    token = _layer_run(redis_client, HOT)
    assert token
    redis_client.delete(HOT)  # its lease lapsed (renewals stalled)
    assert _whole_branch_run(redis_client)
    assert branch_lock.renew(redis_client, HOT, token, 30, [BRANCH]) == branch_lock.LOST
    assert not redis_client.exists(HOT)


def test_a_lapsed_layer_lock_nobody_took_is_taken_back(redis_client: redis.Redis) -> None:
    token = _layer_run(redis_client, HOT)
    assert token
    redis_client.delete(HOT)
    assert branch_lock.renew(redis_client, HOT, token, 30, [BRANCH]) == branch_lock.RETAKEN

"""The execution lock (a renewed lease) against a real Redis."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import redis
from cluster_support import wait_until

from freshmark.adapters import keys
from freshmark.adapters.queue import branch_lock

LOCK = keys.branch_lock("shop", "main")


LEASE_SECONDS = 3.0


def _beating(client: redis.Redis, token: str) -> branch_lock.Heartbeat:
    # Six beats a lease: a busy test machine may stall a few without the lease lapsing.
    return branch_lock.Heartbeat(client, LOCK, token, lease_seconds=LEASE_SECONDS,
                                 every_seconds=LEASE_SECONDS / 6)


def test_second_holder_is_refused(redis_client: redis.Redis) -> None:
    assert branch_lock.acquire(redis_client, LOCK, 30)
    assert branch_lock.acquire(redis_client, LOCK, 30) is None


def test_other_branches_are_not_blocked(redis_client: redis.Redis) -> None:
    assert branch_lock.acquire(redis_client, LOCK, 30)
    assert branch_lock.acquire(redis_client, keys.branch_lock("shop", "release"), 30)


def test_release_frees_only_the_holders_own_lock(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, LOCK, 30)
    assert not branch_lock.release(redis_client, LOCK, "someone-else")
    assert branch_lock.release(redis_client, LOCK, token)
    assert not redis_client.exists(LOCK)


def test_lock_is_leased_for_the_given_seconds(redis_client: redis.Redis) -> None:
    branch_lock.acquire(redis_client, LOCK, 30)
    assert 0 < redis_client.pttl(LOCK) <= 30_000


def test_lock_lapses_when_its_holder_stops_renewing(redis_client: redis.Redis) -> None:
    assert branch_lock.acquire(redis_client, LOCK, 0.5)
    wait_until(lambda: not redis_client.exists(LOCK), 30, "the lease to lapse")
    assert branch_lock.acquire(redis_client, LOCK, 30)


def test_heartbeat_keeps_a_long_jobs_lock(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, LOCK, LEASE_SECONDS)
    with _beating(redis_client, token) as heartbeat:
        time.sleep(3 * LEASE_SECONDS)  # without renewals the lock would be long gone
        assert redis_client.get(LOCK) == token and not heartbeat.lost
    assert branch_lock.release(redis_client, LOCK, token)


def test_heartbeat_takes_back_a_lapsed_lock_nobody_took(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, LOCK, LEASE_SECONDS)
    with _beating(redis_client, token):
        redis_client.delete(LOCK)  # as if renewals had stalled past the lease
        wait_until(lambda: redis_client.get(LOCK) == token, 30, "the lock to be taken back")


def test_heartbeat_gives_up_a_lock_another_run_took(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, LOCK, LEASE_SECONDS)
    with _beating(redis_client, token) as heartbeat:
        redis_client.set(LOCK, "other-host:1:newer-run", px=60_000)
        wait_until(lambda: heartbeat.lost, 30, "the heartbeat to report the lost lock")
    assert redis_client.get(LOCK) == "other-host:1:newer-run"


def test_lock_of_a_dead_process_on_this_host_is_taken_over(redis_client: redis.Redis) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    redis_client.set(LOCK, f"{socket.gethostname()}:{dead.stdout.strip()}:gone", px=60_000)
    assert branch_lock.acquire(redis_client, LOCK, 30)


def test_lock_of_a_live_process_is_kept(redis_client: redis.Redis) -> None:
    redis_client.set(LOCK, f"{socket.gethostname()}:{os.getpid()}:alive", px=60_000)
    assert branch_lock.acquire(redis_client, LOCK, 30) is None


def test_lock_held_on_another_host_is_kept(redis_client: redis.Redis) -> None:
    redis_client.set(LOCK, "some-other-host:1:x", px=60_000)
    assert branch_lock.acquire(redis_client, LOCK, 30) is None


def test_a_short_wait_gets_a_lock_released_meanwhile(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, LOCK, 30)
    timer = threading.Timer(0.3, branch_lock.release, (redis_client, LOCK, token))
    timer.start()
    assert branch_lock.acquire(redis_client, LOCK, 30, wait_seconds=10)
    timer.join()

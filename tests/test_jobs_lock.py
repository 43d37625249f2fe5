"""The per-(repo, branch) execution lock against a real Redis."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import redis

from freshmark import keys
from workers import branch_lock

LOCK = keys.branch_lock("shop", "main")


def test_second_holder_is_refused(redis_client: redis.Redis) -> None:
    assert branch_lock.acquire(redis_client, "shop", "main", 30)
    assert branch_lock.acquire(redis_client, "shop", "main", 30) is None


def test_other_branches_are_not_blocked(redis_client: redis.Redis) -> None:
    assert branch_lock.acquire(redis_client, "shop", "main", 30)
    assert branch_lock.acquire(redis_client, "shop", "release", 30)


def test_release_frees_only_the_holders_own_lock(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, "shop", "main", 30)
    assert not branch_lock.release(redis_client, "shop", "main", "someone-else")
    assert branch_lock.release(redis_client, "shop", "main", token)
    assert not redis_client.exists(LOCK)


def test_lock_expires_after_its_ttl(redis_client: redis.Redis) -> None:
    branch_lock.acquire(redis_client, "shop", "main", 30)
    assert 0 < redis_client.pttl(LOCK) <= 30_000


def test_lock_of_a_dead_process_on_this_host_is_taken_over(redis_client: redis.Redis) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    redis_client.set(LOCK, f"{socket.gethostname()}:{dead.stdout.strip()}:gone", px=60_000)
    assert branch_lock.acquire(redis_client, "shop", "main", 30)


def test_lock_of_a_live_process_is_kept(redis_client: redis.Redis) -> None:
    redis_client.set(LOCK, f"{socket.gethostname()}:{os.getpid()}:alive", px=60_000)
    assert branch_lock.acquire(redis_client, "shop", "main", 30) is None


def test_lock_held_on_another_host_is_kept(redis_client: redis.Redis) -> None:
    redis_client.set(LOCK, "some-other-host:1:x", px=60_000)
    assert branch_lock.acquire(redis_client, "shop", "main", 30) is None


def test_a_short_wait_gets_a_lock_released_meanwhile(redis_client: redis.Redis) -> None:
    token = branch_lock.acquire(redis_client, "shop", "main", 30)
    timer = threading.Timer(0.3, branch_lock.release, (redis_client, "shop", "main", token))
    timer.start()
    assert branch_lock.acquire(redis_client, "shop", "main", 30, wait_seconds=10)
    timer.join()

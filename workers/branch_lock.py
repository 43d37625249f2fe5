"""The per-(repo, branch) execution lock: one job per branch at a time, across all workers.

Its TTL (``Timings.lock_ttl_seconds``) sits between the task's hard time limit and the
visibility timeout: a running job never outlives its lock, and by the time kombu hands a dead
worker's message to another worker the lock has expired. The value names the holder
(``host:pid:nonce``) so a worker on the same host can take over at once from a process that
died (an OOM-killed prefork child would otherwise block the branch for the whole TTL).
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import redis

from freshmark import keys

POLL_SECONDS = 0.05

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_STEAL = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""


def lock_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def holder_is_dead_here(value: str) -> bool:
    """True only for a holder on this host whose process no longer exists."""
    host, _, rest = value.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _try(client: redis.Redis, name: str, token: str, ttl_ms: int) -> bool:
    if client.set(name, token, nx=True, px=ttl_ms):
        return True
    holder = client.get(name)
    if holder and holder_is_dead_here(holder):
        return client.register_script(_STEAL)([name], [holder, token, ttl_ms]) == 1
    return False


def acquire(
    client: redis.Redis, repo: str, branch: str, ttl_seconds: float, wait_seconds: float = 0.0
) -> str | None:
    """The lock's token, or None if another live process still holds it after
    ``wait_seconds`` (a short wait lets the other layer's job of a push finish first)."""
    name, token = keys.branch_lock(repo, branch), lock_owner()
    ttl_ms = int(ttl_seconds * 1000)
    deadline = time.monotonic() + wait_seconds
    while not _try(client, name, token, ttl_ms):
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_SECONDS)
    return token


def release(client: redis.Redis, repo: str, branch: str, token: str) -> bool:
    """Release only our own lock (a lock that expired and was re-taken is left alone)."""
    return client.register_script(_RELEASE)([keys.branch_lock(repo, branch)], [token]) == 1

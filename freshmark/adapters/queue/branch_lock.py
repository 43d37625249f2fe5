"""Execution locks: one job per (repo, branch) at a time across all workers, held as a lease.

A lock lives for ``Timings.lock_lease_seconds`` (tens of seconds) and the run that holds it
renews it every ``Timings.heartbeat_seconds`` from a ``Heartbeat`` thread, so a live job keeps
its lock however long it runs, and a dead one's lock lapses within one lease on any host. The
value names the holder (``host:pid:nonce``) so a worker on the same host takes over at once from
a process that died (an OOM-killed prefork child), without waiting for the lease to lapse.
Lock names come from ``adapters.keys`` (``branch_lock``, or ``job_lock`` for repo-wide jobs).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

import redis

from freshmark.adapters.queue import jobs, scripts

log = logging.getLogger("freshmark.worker")

POLL_SECONDS = 0.05

RENEWED, RETAKEN, LOST = "renewed", "retaken", "lost"

_RELEASE = scripts.lua("branch_lock_release")
_STEAL = scripts.lua("branch_lock_steal")
_RENEW = scripts.lua("branch_lock_renew")


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


def _milliseconds(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _try(client: redis.Redis, name: str, token: str, lease_ms: int) -> bool:
    if client.set(name, token, nx=True, px=lease_ms):
        return True
    holder = jobs.read_value(client, name)
    if holder and holder_is_dead_here(holder):
        return client.register_script(_STEAL)([name], [holder, token, lease_ms]) == 1
    return False


def acquire(
    client: redis.Redis, name: str, lease_seconds: float, wait_seconds: float = 0.0
) -> str | None:
    """The lock's token, or None if another live process still holds it after
    ``wait_seconds`` (a short wait lets the other layer's job of a push finish first)."""
    token, lease_ms = lock_owner(), _milliseconds(lease_seconds)
    deadline = time.monotonic() + wait_seconds
    while not _try(client, name, token, lease_ms):
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_SECONDS)
    return token


def renew(client: redis.Redis, name: str, token: str, lease_seconds: float) -> str:
    """``RENEWED``, ``RETAKEN`` (it had lapsed, nobody took it) or ``LOST`` (another holder)."""
    script = client.register_script(_RENEW)
    return str(script([name], [token, _milliseconds(lease_seconds)]))


def release(client: redis.Redis, name: str, token: str) -> bool:
    """Release only our own lock (a lock that lapsed and was re-taken is left alone)."""
    return client.register_script(_RELEASE)([name], [token]) == 1


class Heartbeat:
    """Renews a held lock every ``every_seconds`` from a daemon thread, while the ``with`` block
    runs. A failed renewal (Redis down) is retried at the next beat; a lock another run took is
    reported once and no longer renewed (this run's ``finish`` will then find its job stale)."""

    def __init__(self, client: redis.Redis, name: str, token: str, *, lease_seconds: float,
                 every_seconds: float):
        self.client, self.name, self.token = client, name, token
        self.lease_seconds, self.every_seconds = lease_seconds, every_seconds
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {name}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every_seconds + 5)

    def _beat(self) -> None:
        while not self._stop.wait(self.every_seconds):
            try:
                outcome = renew(self.client, self.name, self.token, self.lease_seconds)
            except (redis.RedisError, OSError) as exc:
                log.warning("could not renew %s (will retry): %s", self.name, exc)
                continue
            if outcome == RETAKEN:
                log.warning("%s had lapsed (renewals stalled) and was taken back", self.name)
            elif outcome == LOST:
                self.lost = True
                log.error("%s was taken by another run; this run's result will be dropped",
                          self.name)
                return

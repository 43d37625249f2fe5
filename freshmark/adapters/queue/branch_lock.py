"""Execution locks: one run of a branch's layer at a time across all workers, held as a lease.

A layer's run holds its (repo, branch, layer) lock, so runs of different layers of one branch go
side by side (they write disjoint paths, ``Config.layer_for``), and a whole-branch run (every
layer, a retirement) holds the (repo, branch) lock: each is taken only while the other kind is
free (``acquire``'s ``excludes``, checked in the same Lua script that takes the lock).

A lock lives for ``Timings.lock_lease_seconds`` (tens of seconds) and the run that holds it
renews it every ``Timings.heartbeat_seconds`` from a ``Heartbeat`` thread, so a live job keeps
its lock however long it runs, and a dead one's lock lapses within one lease on any host. The
value names the holder (``host:pid:nonce``) so a worker on the same host takes over at once from
a process that died (an OOM-killed prefork child), without waiting for the lease to lapse.
Lock names come from ``adapters.keys`` (``branch_lock``, ``layer_lock``, or ``job_lock`` for
repo-wide jobs).

A whole-branch taker would starve behind a stream of layer runs (one of them nearly always
holds a layer's lock), so it takes with ``wants``: while the locks in its way stay held it keeps
the branch's mark set (``keys.branch_wants``), which layer runs name among their ``excludes``
when they take (never when they renew: a run already going finishes). The mark is a lease of a
few seconds past the taker's next try, so a taker that died lets layer runs go again soon.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from freshmark.adapters.queue import scripts
from freshmark.core.errors import RetryableError

log = logging.getLogger("freshmark.worker")

POLL_SECONDS = 0.05

RENEWED, RETAKEN, LOST = "renewed", "retaken", "lost"

_RELEASE = scripts.lua("branch_lock_release")
_STEAL = scripts.lua("branch_lock_steal")
_RENEW = scripts.lua("branch_lock_renew")
_TAKE = scripts.lua("branch_lock_take")


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


def _try(client: redis.Redis, name: str, excludes: Sequence[str], token: str,
         lease_ms: int) -> bool:
    reply = client.register_script(_TAKE)([name, *excludes], [token, lease_ms])
    if reply[0] == "taken":  # the queue's clients decode replies to str (``jobs.connect``)
        return True
    in_the_way, holder = str(reply[1]), str(reply[2])
    if not holder or not holder_is_dead_here(holder):
        return False
    if in_the_way == name:
        return client.register_script(_STEAL)([name], [holder, token, lease_ms]) == 1
    # A dead run's lock of the other kind: cleared, then try again at once.
    release(client, in_the_way, holder)
    return _try(client, name, excludes, token, lease_ms)


@dataclass(frozen=True)
class Wants:
    """A waiting taker's claim to go first: the mark ``key`` holds ``owner`` for ``seconds``
    after each try (enough to cover the taker's next try, short enough for a dead one)."""

    key: str
    owner: str
    seconds: float


def acquire(
    client: redis.Redis, name: str, lease_seconds: float, wait_seconds: float = 0.0,
    excludes: Sequence[str] = (), wants: Wants | None = None,
) -> str | None:
    """The lock's token, or None if another live process still holds it, or one of the locks
    ``excludes`` names, after ``wait_seconds`` (a short wait lets a run in the way finish).
    With ``wants`` the mark is set while it waits and cleared once the lock is taken; a taker
    that gives up leaves it to lapse (it will try again)."""
    token, lease_ms = lock_owner(), _milliseconds(lease_seconds)
    deadline = time.monotonic() + wait_seconds
    while not _try(client, name, excludes, token, lease_ms):
        if wants is not None:
            client.set(wants.key, wants.owner, px=_milliseconds(wants.seconds))
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_SECONDS)
    if wants is not None:
        release(client, wants.key, wants.owner)
    return token


@contextmanager
def held_briefly(client: redis.Redis, name: str, *, lease_seconds: float,
                 wait_seconds: float) -> Iterator[None]:
    """Hold ``name`` for a short section (no heartbeat: the section must end within the lease).
    Raises ``LockBusy`` if it is still held by another live process after ``wait_seconds``."""
    token = acquire(client, name, lease_seconds, wait_seconds=wait_seconds)
    if token is None:
        raise LockBusy(f"{name} was held for more than {wait_seconds:.0f} s")
    try:
        yield
    finally:
        release(client, name, token)


class LockBusy(RetryableError):
    """A short lock stayed held by another live process for longer than its wait."""


def renew(client: redis.Redis, name: str, token: str, lease_seconds: float,
          excludes: Sequence[str] = ()) -> str:
    """``RENEWED``, ``RETAKEN`` (it had lapsed, nobody took it nor a lock in ``excludes``) or
    ``LOST`` (another holder, or a run that excludes this one)."""
    script = client.register_script(_RENEW)
    return str(script([name, *excludes], [token, _milliseconds(lease_seconds)]))


def release(client: redis.Redis, name: str, token: str) -> bool:
    """Release only our own lock (a lock that lapsed and was re-taken is left alone)."""
    return client.register_script(_RELEASE)([name], [token]) == 1


class Heartbeat:
    """Renews a held lock every ``every_seconds`` from a daemon thread, while the ``with`` block
    runs. A failed renewal (Redis down) is retried at the next beat; a lock another run took is
    reported once and no longer renewed (this run's ``finish`` will then find its job stale)."""

    def __init__(self, client: redis.Redis, name: str, token: str, *, lease_seconds: float,
                 every_seconds: float, excludes: Sequence[str] = ()):
        self.client, self.name, self.token = client, name, token
        self.excludes = tuple(excludes)
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
                outcome = renew(self.client, self.name, self.token, self.lease_seconds,
                                self.excludes)
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

"""The single-scheduler lock in Redis: one scheduler acts at a time, a standby takes over.

The holder renews the lock's TTL every tick; when it dies the lock lapses and a standby's next
``hold`` takes it, within one TTL. The token is random per process, so only the holder renews
or releases it.
"""

from __future__ import annotations

import uuid

import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import scripts

_RELEASE = scripts.lua("scheduler_lock_release")
_RENEW = scripts.lua("scheduler_lock_renew")


class SchedulerLock:
    """The single-scheduler lock: ``SET NX PX`` to take it, compare-and-expire to renew."""

    def __init__(self, client: redis.Redis, ttl_seconds: float = 15.0):
        self.client = client
        self.ttl_ms = int(ttl_seconds * 1000)
        self.token = uuid.uuid4().hex

    def hold(self) -> bool:
        """Renew if held, else try to take it; True while this process is the scheduler."""
        renew = self.client.register_script(_RENEW)
        renewed = renew([keys.SCHEDULER_LOCK], [self.token, self.ttl_ms])
        if renewed == 1:
            return True
        return bool(self.client.set(keys.SCHEDULER_LOCK, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> None:
        self.client.register_script(_RELEASE)([keys.SCHEDULER_LOCK], [self.token])

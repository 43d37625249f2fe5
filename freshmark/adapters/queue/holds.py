"""Hold leases: a worker that has taken a queued job's message says so, while it holds it.

A worker takes a message before it runs its job, sometimes long before: a prefetched message
waits for a free pool process, and a retry (a busy branch lock, a failed attempt's backoff)
stays in the worker until its countdown ends. Until the job is claimed, and its branch lock
becomes its lease, the message lives only in that worker and in kombu's unacked set, which
hands it out again only after the visibility timeout (an hour by default). So the worker takes
a hold on the job when the message arrives: a short lease (``Timings.lock_lease_seconds``) it
renews while it keeps the message and drops once the message is acknowledged or rejected. The
job enters the held set; the orphan sweep (``jobs.resend_orphans``) re-sends a queued job of
that set whose hold lapsed, and ``claim`` takes the job out of it. Death is decided by a lease
that lapsed, never by how long a job has been queued: a message waiting in the broker's queue
is held by nobody and is never re-sent, however long the backlog.

Holds are per job key; the lease's value is the holder's token, so a holder only ever drops its
own lease (another worker may hold a newer message of the job by then). Times are unix seconds.
"""

from __future__ import annotations

import time

import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import scripts

_HOLD = scripts.lua("job_hold")
_RELEASE = scripts.lua("job_release_hold")


def hold(client: redis.Redis, job_key: str, job_id: str, token: str, lease_seconds: float,
         *, now: float | None = None) -> bool:
    """Take or renew the hold on ``job_key`` for the message naming ``job_id``. False when the
    message no longer stands for a queued job (stale, or the job was claimed): nothing to hold."""
    now = time.time() if now is None else now
    lease_ms = max(1, int(lease_seconds * 1000))
    script = client.register_script(_HOLD)
    reply = script([keys.job(job_key), keys.HELD, keys.hold(job_key)],
                   [job_id, token, lease_ms, job_key, now])
    return bool(reply == 1)


def release(client: redis.Redis, job_key: str, token: str) -> bool:
    """Drop our own hold (the message was acknowledged or handed back to the broker)."""
    script = client.register_script(_RELEASE)
    return bool(script([keys.hold(job_key), keys.HELD], [token, job_key]) == 1)

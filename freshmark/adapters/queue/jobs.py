"""The job-queue core: jobs that are safe to repeat, kept in Redis beside Celery's queues.

A job is identified by (kind, repo, branch, layer) and lives in one Redis hash while it is
waiting (debounced, in the due set), queued (a Celery message names its id) or running. Every
state change is one small Lua script, so producers and workers on many machines agree:

- ``enqueue``: at most one pending job per key; a second request updates the target (the newest
  request wins) and sends nothing (coalesced). A request for a running job marks it for a
  re-run, so a push that lands mid-job is never lost.
- ``drain_due``: moves debounced jobs whose due time has come to ``queued`` (no Celery ETA:
  ETA tasks sit in worker memory and come back again and again past the visibility timeout).
- ``claim``: a worker takes the job named by its message; the attempt counter goes up and a job
  that has been tried ``max_attempts`` times is parked instead (a poison job that keeps killing
  its worker must stop somewhere: ``reject_on_worker_lost`` requeues with no count). The claim
  records the lock the run holds (a short lease its worker keeps renewing) and enters the job
  in the running set.
- ``finish``: deletes the job, or requeues it under a new id when a re-run was requested; a
  permanent failure parks it with the head it failed at (``note_head``), and reconcile sends a
  job parked on its own error again only once its branch has moved (``held_back``).
- ``resend_orphans``: a running job whose lock is no longer held by its run lost its worker
  (killed, OOM, node gone: the lease lapsed), and so did a queued job whose message a worker
  took but whose hold lease lapsed (``adapters.queue.holds``: a prefetched message or a retry
  waiting out its countdown, in a worker killed whole); either is re-sent under a new id at
  once, instead of waiting for kombu's visibility timeout. The scheduler runs it every tick. A
  message still in the broker's queue is held by nobody and never re-sent, however long it
  waits there.

A message whose job id no longer matches the hash is stale (a duplicate or superseded delivery)
and is dropped, which makes redelivery harmless. Times are unix seconds (float).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any, cast

import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import scripts
from freshmark.adapters.telemetry import counters
from freshmark.core import jobspec
from freshmark.core.jobspec import Claim, EnqueueResult, Finish, Job, JobSpec, Sender
from freshmark.core.redact import redact

QUEUED_STALE_FACTOR = 24

_ENQUEUE = scripts.lua("job_enqueue")
_DRAIN = scripts.lua("job_drain_due")
_CLAIM = scripts.lua("job_claim")
_FINISH = scripts.lua("job_finish")
_RESEND_ORPHANS = scripts.lua("job_resend_orphans")
_NOTE_HEAD = scripts.lua("job_note_head")
ERROR_CHARS = 500  # of a stored error


def connect(url: str) -> redis.Redis:
    """A Redis client that returns str, with timeouts so a dead server fails fast."""
    return redis.Redis.from_url(
        url, decode_responses=True, socket_timeout=5, socket_connect_timeout=3
    )


# redis-py types every reply ``bytes | str`` whatever the client; a ``connect`` client decodes
# them (``decode_responses=True``), so the reads below say once that what comes back is str.
def read_hash(client: redis.Redis, name: str) -> dict[str, str]:
    """Every field of the hash ``name`` (``HGETALL``), read with a ``connect`` client."""
    return cast("dict[str, str]", client.hgetall(name))


def read_value(client: redis.Redis, name: str) -> str | None:
    """The string at ``name`` (``GET``; None when absent), read with a ``connect`` client."""
    return cast("str | None", client.get(name))


def read_hash_field(client: redis.Redis, name: str, field: str) -> str | None:
    """One field of the hash ``name`` (``HGET``; None when absent)."""
    return cast("str | None", client.hget(name, field))


def _run(client: redis.Redis, script: str, keys_: list[str], args: list[Any]) -> list[str]:
    return client.register_script(script)(keys_, args)


def _new_id() -> str:
    return uuid.uuid4().hex


def enqueue(
    client: redis.Redis,
    spec: JobSpec,
    *,
    delay_seconds: float = 0.0,
    max_wait_seconds: float = 60.0,
    stale_seconds: float = 3600.0,
    now: float | None = None,
) -> EnqueueResult:
    """Record a job request atomically; the caller sends a message only if ``must_send``.

    ``delay_seconds`` > 0 debounces: the job waits in the due set, each new request pushes the
    due time out again, but never past ``max_wait_seconds`` after the first request.
    """
    now = time.time() if now is None else now
    due_at = now + delay_seconds if delay_seconds > 0 else 0
    pairs: list[str] = []
    for name, value in asdict(spec).items():
        pairs += [name, str(value)]
    args: list[Any] = [
        now, due_at, stale_seconds, max_wait_seconds, _new_id(), spec.key, QUEUED_STALE_FACTOR
    ]
    outcome, job_id = _run(client, _ENQUEUE, [keys.job(spec.key), keys.DUE], args + pairs)
    return EnqueueResult(outcome, spec.key, job_id, spec.kind, spec.queue)


def submit(
    client: redis.Redis, spec: JobSpec, send: Sender, **options: float
) -> EnqueueResult:
    """Enqueue and, when the core says so, hand the job to the broker."""
    result = enqueue(client, spec, **options)
    if result.must_send:
        send(spec.kind, result.job_key, result.job_id, spec.queue)
    elif result.outcome == "coalesced":
        counters.JOBS_COALESCED_TOTAL.inc()
    return result


def drain_due(
    client: redis.Redis, send: Sender, *, now: float | None = None, limit: int = 500
) -> int:
    """Send every debounced job whose due time has passed; returns how many were sent."""
    now = time.time() if now is None else now
    flat = _run(client, _DRAIN, [keys.DUE], [now, limit, keys.JOB_PREFIX])
    for i in range(0, len(flat), 4):
        job_key, job_id, kind, queue = flat[i : i + 4]
        send(kind, job_key, job_id, queue)
    return len(flat) // 4


def claim(
    client: redis.Redis,
    job_key: str,
    job_id: str,
    *,
    max_attempts: int,
    lock: str = "",
    lock_token: str = "",
    now: float | None = None,
) -> Claim:
    """Take the job for this message. ``lock``/``lock_token`` name the lock the run holds:
    once it is gone or held by another run, ``resend_orphans`` re-sends the job (a job claimed
    without a lock is left to the ``stale_seconds`` backstop)."""
    now = time.time() if now is None else now
    args = [job_id, now, max_attempts, job_key, lock, lock_token]
    job_keys = [keys.job(job_key), keys.PARKED, keys.RUNNING, keys.HELD]
    reply = _run(client, _CLAIM, job_keys, args)
    if reply[0] != "claimed":
        return Claim(reply[0])
    data = dict(zip(reply[1::2], reply[2::2], strict=True))
    return Claim("claimed", Job.from_hash(job_key, data))


def finish(
    client: redis.Redis,
    job_key: str,
    job_id: str,
    outcome: str,
    *,
    error: str = "",
    failed_on: str = "",
    error_repeats: int = 0,
    now: float | None = None,
) -> Finish:
    """Close a claimed job: ``done`` deletes it and clears a parked entry of the same job key,
    ``failed`` (permanent) parks it, ``retry`` returns it to ``queued`` keeping its attempt
    count; a re-run asked for meanwhile requeues it instead. A failed attempt records why
    (``failed_on``: ``jobspec.FAILED_ON_OUTAGE`` or ``FAILED_ON_ERROR``) and how many attempts
    in a row ended in the same error."""
    now = time.time() if now is None else now
    error = stored_error(error)  # stored errors are shown on /debug/queue
    args = [job_id, outcome, now, error, _new_id(), job_key, failed_on, error_repeats]
    reply = _run(client, _FINISH, [keys.job(job_key), keys.PARKED, keys.RUNNING], args)
    if reply[0] == "requeue":
        return Finish("requeue", reply[1], reply[2], reply[3])
    if reply[0] != "stale" and outcome == "failed":
        _record_failure(client, job_key, error, now)
    return Finish(reply[0])


def stored_error(error: str) -> str:
    """``error`` as a job's hash keeps it (redacted, cut): what a later attempt compares with."""
    return redact(error)[:ERROR_CHARS]


def note_head(client: redis.Redis, job_key: str, job_id: str, head: str) -> bool:
    """Record on a claimed job the commit its run indexes (kept if the job is parked)."""
    return _run(client, _NOTE_HEAD, [keys.job(job_key)], [job_id, head]) == 1


def held_back(client: redis.Redis, job_key: str, head: str | None = None) -> bool:
    """True when ``job_key`` is parked on its own error, at ``head`` if given: an automatic
    request (reconcile, a scheduled rebuild) must not start it again with a fresh count."""
    parked = parked_job(client, job_key)
    return parked is not None and jobspec.parked_at(parked, head)


def resend_orphans(client: redis.Redis, send: Sender, *, now: float | None = None) -> list[str]:
    """Re-send every running job whose run lost its lock, and every queued job whose message's
    holder let its hold lapse; returns their job keys."""
    now = time.time() if now is None else now
    args = [now, keys.JOB_PREFIX, _new_id(), keys.HOLD_PREFIX]
    flat = _run(client, _RESEND_ORPHANS, [keys.RUNNING, keys.HELD], args)
    resent = []
    for i in range(0, len(flat), 4):
        job_key, job_id, kind, queue = flat[i : i + 4]
        send(kind, job_key, job_id, queue)
        resent.append(job_key)
    return resent


def _record_failure(client: redis.Redis, job_key: str, error: str, now: float) -> None:
    entry = json.dumps({"job": job_key, "error": error, "at": now})
    pipe = client.pipeline()
    pipe.lpush(keys.FAILED, entry)
    pipe.ltrim(keys.FAILED, 0, keys.FAILED_KEEP - 1)
    pipe.execute()


def job_state(client: redis.Redis, job_key: str) -> dict[str, str]:
    return read_hash(client, keys.job(job_key))


def pending_jobs(client: redis.Redis, limit: int = 1000) -> list[dict[str, str]]:
    """Waiting, queued and running jobs (for the debug endpoint and tests)."""
    found: list[dict[str, str]] = []
    for name in client.scan_iter(match=keys.JOB_PREFIX + "*", count=200):
        data = read_hash(client, name)
        if data:
            found.append(data)
        if len(found) >= limit:
            break
    return found


def parked_job(client: redis.Redis, job_key: str) -> dict[str, str] | None:
    """One parked job's last hash (``last_error``, ``failed_on``...), None when not parked."""
    encoded = read_hash_field(client, keys.PARKED, job_key)
    return None if encoded is None else _decode_parked(encoded)


def parked_jobs(client: redis.Redis) -> dict[str, dict[str, str]]:
    """Parked job key -> the job's last hash (attempts, last_error, parked_at)."""
    return {job_key: _decode_parked(encoded)
            for job_key, encoded in read_hash(client, keys.PARKED).items()}


def _decode_parked(encoded: str) -> dict[str, str]:
    flat = json.loads(encoded)  # the job hash as HGETALL gave it: name, value, name, value...
    return dict(zip(flat[::2], flat[1::2], strict=True))


def queue_lengths(
    client: redis.Redis, queues: Iterable[str] = jobspec.BUILTIN_QUEUES
) -> dict[str, int]:
    """Messages waiting in each Celery queue (all priority steps), read at scrape time."""
    pipe = client.pipeline()
    names = list(dict.fromkeys(queues))
    for queue in names:
        for list_key in keys.kombu_queue_lists(queue):
            pipe.llen(list_key)
    counts = pipe.execute()
    steps = len(keys.KOMBU_PRIORITY_STEPS)
    return {q: sum(counts[i * steps : (i + 1) * steps]) for i, q in enumerate(names)}

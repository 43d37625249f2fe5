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
- ``finish``: deletes the job, or requeues it under a new id when a re-run was requested.
- ``resend_orphans``: a running job whose lock is no longer held by its run lost its worker
  (killed, OOM, node gone: the lease lapsed); it is re-sent under a new id at once, instead of
  waiting for kombu's visibility timeout. The scheduler runs it every tick.

A message whose job id no longer matches the hash is stale (a duplicate or superseded delivery)
and is dropped, which makes redelivery harmless. Times are unix seconds (float).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import redis

from freshmark.adapters.queue import keys
from freshmark.adapters.telemetry import counters
from freshmark.core import jobspec
from freshmark.core.jobspec import Claim, EnqueueResult, Finish, Job, JobSpec, Sender
from freshmark.core.redact import redact

QUEUED_STALE_FACTOR = 24

_ENQUEUE = """
local now, due_at, stale = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local max_wait, new_id, job_key = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local queued_stale = stale * tonumber(ARGV[7])
local first_field = 8  -- then (name, value) pairs; empty values keep what the hash has
local job = KEYS[1]
local state = redis.call('HGET', job, 'state')
local function update()
  for i = first_field, #ARGV, 2 do
    if ARGV[i + 1] ~= '' then redis.call('HSET', job, ARGV[i], ARGV[i + 1]) end
  end
  redis.call('HSET', job, 'updated_at', ARGV[1])
end
local function requeue(id)
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1], 'id', id, 'rerun', '0')
end
if not state then
  redis.call('HSET', job, 'id', new_id, 'key', job_key, 'attempts', 0, 'created_at', ARGV[1],
             'rerun', '0')
  update()
  if due_at > now then
    redis.call('HSET', job, 'state', 'waiting')
    redis.call('ZADD', KEYS[2], math.min(due_at, now + max_wait), job_key)
    return {'waiting', new_id}
  end
  requeue(new_id)
  return {'new', new_id}
end
local id = redis.call('HGET', job, 'id')
update()
if state == 'waiting' then
  if due_at <= now then
    redis.call('ZREM', KEYS[2], job_key)
    requeue(id)
    return {'new', id}
  end
  local created = tonumber(redis.call('HGET', job, 'created_at'))
  redis.call('ZADD', KEYS[2], math.min(due_at, created + max_wait), job_key)
  return {'coalesced', id}
end
-- A running job past its limits died silently; a queued one may just sit in a long backlog
-- (resending moves it to the back), so it gets QUEUED_STALE_FACTOR times longer.
local since = tonumber(redis.call('HGET', job, state == 'running' and 'started_at' or 'queued_at'))
local limit = state == 'running' and stale or queued_stale
if since and now - since > limit then
  requeue(new_id)
  return {'resend', new_id}
end
if state == 'running' then redis.call('HSET', job, 'rerun', '1') end
return {'coalesced', id}
"""

_DRAIN = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, job_key in ipairs(due) do
  redis.call('ZREM', KEYS[1], job_key)
  local job = ARGV[3] .. job_key
  if redis.call('HGET', job, 'state') == 'waiting' then
    redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1])
    local f = redis.call('HMGET', job, 'id', 'kind', 'queue')
    table.insert(out, job_key); table.insert(out, f[1])
    table.insert(out, f[2]); table.insert(out, f[3])
  end
end
return out
"""

_CLAIM = """
local job = KEYS[1]
local state = redis.call('HGET', job, 'state')
if not state then return {'gone'} end
if redis.call('HGET', job, 'id') ~= ARGV[1] or state == 'waiting' then return {'stale'} end
local attempts = redis.call('HINCRBY', job, 'attempts', 1)
if attempts > tonumber(ARGV[3]) then
  redis.call('HSET', job, 'parked_at', ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[4], cjson.encode(redis.call('HGETALL', job)))
  redis.call('DEL', job)
  redis.call('ZREM', KEYS[3], ARGV[4])
  return {'parked'}
end
redis.call('HSET', job, 'state', 'running', 'started_at', ARGV[2], 'lock', ARGV[5],
           'lock_token', ARGV[6])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[2], ARGV[4]) end
return {'claimed', unpack(redis.call('HGETALL', job))}
"""

_FINISH = """
local job = KEYS[1]
if redis.call('HGET', job, 'id') ~= ARGV[1] then return {'stale'} end
redis.call('ZREM', KEYS[3], ARGV[6])
if ARGV[4] ~= '' then redis.call('HSET', job, 'last_error', ARGV[4]) end
if ARGV[2] == 'retry' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3])
  return {'retry'}
end
if redis.call('HGET', job, 'rerun') == '1' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3], 'id', ARGV[5],
             'rerun', '0', 'attempts', 0)
  local f = redis.call('HMGET', job, 'kind', 'queue')
  return {'requeue', ARGV[5], f[1], f[2]}
end
redis.call('DEL', job)
-- A success clears an earlier parked run of the same job: the trouble is over.
if ARGV[2] == 'done' then redis.call('HDEL', KEYS[2], ARGV[6]) end
return {'done'}
"""

# A running job whose run no longer holds its lock lost its worker (the lease lapsed): queue it
# under a new id, so the dead run's message, if kombu ever restores it, is stale. Members that
# are no longer running (finished, resent by a request, deleted) just leave the set.
_RESEND_ORPHANS = """
local out, sent = {}, 0
for _, job_key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local job = ARGV[2] .. job_key
  local f = redis.call('HMGET', job, 'state', 'lock', 'lock_token', 'kind', 'queue')
  if f[1] ~= 'running' or not f[2] or f[2] == '' then
    redis.call('ZREM', KEYS[1], job_key)
  elseif redis.call('GET', f[2]) ~= f[3] then
    sent = sent + 1
    local id = ARGV[3] .. sent
    redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1], 'id', id, 'rerun', '0')
    redis.call('ZREM', KEYS[1], job_key)
    for _, value in ipairs({job_key, id, f[4], f[5]}) do table.insert(out, value) end
  end
end
return out
"""


def connect(url: str) -> redis.Redis:
    """A Redis client that returns str, with timeouts so a dead server fails fast."""
    return redis.Redis.from_url(
        url, decode_responses=True, socket_timeout=5, socket_connect_timeout=3
    )


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
    reply = _run(client, _CLAIM, [keys.job(job_key), keys.PARKED, keys.RUNNING], args)
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
    now: float | None = None,
) -> Finish:
    """Close a claimed job: ``done``/``failed`` delete it (or requeue if a re-run was asked
    for), ``retry`` returns it to ``queued`` keeping its attempt count. ``done`` also clears
    a parked entry of the same job key."""
    now = time.time() if now is None else now
    error = redact(error)  # stored errors are shown on /debug/queue
    args = [job_id, outcome, now, error[:500], _new_id(), job_key]
    reply = _run(client, _FINISH, [keys.job(job_key), keys.PARKED, keys.RUNNING], args)
    if reply[0] == "requeue":
        return Finish("requeue", reply[1], reply[2], reply[3])
    if reply[0] != "stale" and outcome == "failed":
        _record_failure(client, job_key, error, now)
    return Finish(reply[0])


def resend_orphans(client: redis.Redis, send: Sender, *, now: float | None = None) -> list[str]:
    """Re-send every running job whose run lost its lock; returns their job keys."""
    now = time.time() if now is None else now
    flat = _run(client, _RESEND_ORPHANS, [keys.RUNNING], [now, keys.JOB_PREFIX, _new_id()])
    resent = []
    for i in range(0, len(flat), 4):
        job_key, job_id, kind, queue = flat[i : i + 4]
        send(kind, job_key, job_id, queue)
        resent.append(job_key)
    return resent


def _record_failure(client: redis.Redis, job_key: str, error: str, now: float) -> None:
    entry = json.dumps({"job": job_key, "error": error[:500], "at": now})
    pipe = client.pipeline()
    pipe.lpush(keys.FAILED, entry).ltrim(keys.FAILED, 0, keys.FAILED_KEEP - 1).execute()


def job_state(client: redis.Redis, job_key: str) -> dict[str, str]:
    return client.hgetall(keys.job(job_key))


def pending_jobs(client: redis.Redis, limit: int = 1000) -> list[dict[str, str]]:
    """Waiting, queued and running jobs (for the debug endpoint and tests)."""
    found: list[dict[str, str]] = []
    for name in client.scan_iter(match=keys.JOB_PREFIX + "*", count=200):
        data = client.hgetall(name)
        if data:
            found.append(data)
        if len(found) >= limit:
            break
    return found


def parked_jobs(client: redis.Redis) -> dict[str, dict[str, str]]:
    """Parked job key -> the job's last hash (attempts, last_error, parked_at)."""
    parked: dict[str, dict[str, str]] = {}
    for job_key, encoded in client.hgetall(keys.PARKED).items():
        flat = json.loads(encoded)
        parked[job_key] = dict(zip(flat[::2], flat[1::2], strict=True))
    return parked


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

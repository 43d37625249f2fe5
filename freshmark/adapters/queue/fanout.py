"""The record of a split index run in Redis: which batch is claimed by whom, and which are in.

A large run (``ScaleOut.splits``) is cut into numbered batches. The coordinating job (it holds
the branch lock) starts a record, sends one message per batch and works through the batches
itself too; any worker process that receives a batch message may help (``workers.scaleout``).
The coordinator writes the manifest only once the record holds a result for every batch.

Every state change is one Lua script on the record (``keys.fanout(repo, scope)``: the
``branch`` argument of the functions below is the run's ``keys.fanout_scope``, its branch and
layer). Lease times come from the Redis server's clock, so hosts with skewed clocks agree on them:

- ``claim``: take batch n if it is not done and no live claim holds it. A claim past its lease,
  or held by a process the caller knows is dead (``take_over_from``), is taken over.
- ``renew``: the holder extends its lease; False when the claim was taken over or the record
  cancelled or replaced, and the holder must then stop before its next write.
- ``complete``: store batch n's counts once (a batch run twice counts once) and show the count
  on the job hash (progress).
- ``release``: the holder gives a failed batch back; the coordinator runs it itself, so a batch
  error reaches the job's own retry policy.
- ``cancel``: the coordinator failed, or a new coordinator found an old record: holders see it
  at their next renew, and ``live_claims`` says whose writes may still land.

Fields: ``id``, ``job`` (job key), ``head``, ``total``, ``done``, ``state`` (running |
cancelled), ``ttl_ms``, ``claim:<n>`` = ``<holder> <lease_until>``, ``result:<n>`` = JSON
counts, ``lexical:<n>`` = what the coordinator's lexical index needs of the records batch n
wrote (set with its result, dropped once the coordinator has taken it: the record holds the
text of the batches not yet taken only), ``error:<n>`` = the last error of a released batch.
Every script call by a live participant refreshes the TTL, so a record outlives its last
participant by ``ttl_ms``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import scripts
from freshmark.core.errors import RetryableError

RUNNING, CANCELLED = "running", "cancelled"

# cancel and remove use none of the prelude's helpers, so they run without it.
_START = scripts.lua("fanout_start", prelude="fanout_prelude")
_CLAIM = scripts.lua("fanout_claim", prelude="fanout_prelude")
_RENEW = scripts.lua("fanout_renew", prelude="fanout_prelude")
_COMPLETE = scripts.lua("fanout_complete", prelude="fanout_prelude")
_RELEASE = scripts.lua("fanout_release", prelude="fanout_prelude")
_CANCEL = scripts.lua("fanout_cancel")
_TAKEN = scripts.lua("fanout_taken")
_REMOVE = scripts.lua("fanout_remove")


class BatchLost(RetryableError):
    """This process's claim on a batch was taken over, or its run was cancelled: stop before
    writing (whoever holds the batch now writes the same records)."""


class FanOutLost(RetryableError):
    """The split run's record vanished or was cancelled under its coordinator (a Redis restart,
    or another coordinator took the branch over): the job runs again and re-plans."""


@dataclass(frozen=True)
class BatchClaim:
    batch: int
    holder: str
    lease_until: float  # Redis server clock, unix seconds


@dataclass(frozen=True)
class Record:
    """A split run as read from Redis, with the server's clock at the time of reading."""

    id: str
    job: str
    head: str
    total: int
    state: str
    claims: dict[int, BatchClaim]
    results: dict[int, dict[str, Any]]
    errors: dict[int, str]
    now: float
    lexical: dict[int, str] = field(default_factory=dict)  # as stored: JSON, not parsed

    @classmethod
    def from_hash(cls, data: dict[str, str], now: float) -> Record:
        claims: dict[int, BatchClaim] = {}
        results: dict[int, dict[str, Any]] = {}
        errors: dict[int, str] = {}
        lexical: dict[int, str] = {}
        for name, value in data.items():
            kind, _, number = name.partition(":")
            if not number.isdigit():
                continue
            batch = int(number)
            if kind == "claim":
                holder, _, until = value.rpartition(" ")
                claims[batch] = BatchClaim(batch, holder, float(until))
            elif kind == "result":
                results[batch] = json.loads(value)
            elif kind == "error":
                errors[batch] = value
            elif kind == "lexical":
                lexical[batch] = value
        return cls(
            id=data.get("id", ""), job=data.get("job", ""), head=data.get("head", ""),
            total=int(data.get("total", 0) or 0), state=data.get("state", ""),
            claims=claims, results=results, errors=errors, now=now, lexical=lexical,
        )

    @property
    def all_in(self) -> bool:
        return len(self.results) >= self.total

    def results_in_order(self) -> list[dict[str, Any]]:
        return [self.results[n] for n in range(self.total)]


IsDead = Callable[[str], bool]


def claimable(record: Record, is_dead: IsDead) -> list[int]:
    """Batches that may be claimed now, highest number first (helpers take messages from the
    lowest, so the coordinator meets them last): not done, and unclaimed, past their lease or
    held by a process known dead."""
    found: list[int] = []
    for batch in range(record.total - 1, -1, -1):
        claim = record.claims.get(batch)
        if batch in record.results:
            continue
        if claim is None or claim.lease_until <= record.now or is_dead(claim.holder):
            found.append(batch)
    return found


def live_claims(record: Record, is_dead: IsDead) -> list[BatchClaim]:
    """Claims whose holder may still write: inside their lease and not known dead."""
    return [c for c in record.claims.values()
            if c.lease_until > record.now and not is_dead(c.holder)]


# -- Redis edge ------------------------------------------------------------------------------


def _run(client: redis.Redis, script: str, keys_: list[str], args: list[Any]) -> Any:
    return client.register_script(script)(keys_, args)


def read(client: redis.Redis, repo: str, branch: str) -> Record | None:
    pipe = client.pipeline(transaction=True)
    pipe.hgetall(keys.fanout(repo, branch))
    pipe.time()
    data, (seconds, micros) = pipe.execute()
    return Record.from_hash(data, seconds + micros / 1e6) if data else None


def start(client: redis.Redis, repo: str, branch: str, *, fanout_id: str, job_key: str,
          head: str, total: int, ttl_seconds: float) -> None:
    """Replace any record of the branch with a new one of ``total`` unclaimed batches."""
    args = [fanout_id, job_key, head, total, int(ttl_seconds * 1000),
            keys.JOB_BATCHES_TOTAL, keys.JOB_BATCHES_DONE]
    _run(client, _START, [keys.fanout(repo, branch), keys.job(job_key)], args)


def claim(client: redis.Redis, repo: str, branch: str, fanout_id: str, batch: int, holder: str,
          lease_seconds: float, take_over_from: str = "") -> tuple[str, str]:
    """(outcome, current holder): claimed | done | gone | busy (then who holds it)."""
    args = [fanout_id, batch, holder, lease_seconds, take_over_from]
    reply = _run(client, _CLAIM, [keys.fanout(repo, branch)], args)
    return reply[0], (reply[1] if len(reply) > 1 else "")


def renew(client: redis.Redis, repo: str, branch: str, fanout_id: str, batch: int, holder: str,
          lease_seconds: float) -> bool:
    reply = _run(client, _RENEW, [keys.fanout(repo, branch)],
                 [fanout_id, batch, holder, lease_seconds])
    return bool(reply == "ok")


def complete(client: redis.Redis, repo: str, branch: str, fanout_id: str, batch: int,
             job_key: str, result: dict[str, Any], lexical: str = "") -> str:
    """completed | duplicate (another run of the batch was in first) | gone. ``lexical``
    (JSON) is kept with the result of the run of the batch that was in first."""
    args = [fanout_id, batch, json.dumps(result, sort_keys=True), keys.JOB_BATCHES_DONE,
            lexical]
    reply = _run(client, _COMPLETE, [keys.fanout(repo, branch), keys.job(job_key)], args)
    return str(reply[0])


def taken(client: redis.Redis, repo: str, branch: str, fanout_id: str,
          batches: Sequence[int]) -> bool:
    """The coordinator took these batches' lexical documents: drop them from the record."""
    if not batches:
        return True
    return bool(_run(client, _TAKEN, [keys.fanout(repo, branch)], [fanout_id, *batches]))


def release(client: redis.Redis, repo: str, branch: str, fanout_id: str, batch: int,
            holder: str, error: str = "") -> bool:
    args = [fanout_id, batch, holder, error[:500]]
    return bool(_run(client, _RELEASE, [keys.fanout(repo, branch)], args))


def cancel(client: redis.Redis, repo: str, branch: str, job_key: str, fanout_id: str = "") -> bool:
    """Stop the branch's record (``fanout_id`` '' : whichever is there)."""
    args = [fanout_id, keys.JOB_BATCHES_TOTAL, keys.JOB_BATCHES_DONE]
    return bool(_run(client, _CANCEL, [keys.fanout(repo, branch), keys.job(job_key)], args))


def remove(client: redis.Redis, repo: str, branch: str, job_key: str, fanout_id: str) -> bool:
    args = [fanout_id, keys.JOB_BATCHES_TOTAL, keys.JOB_BATCHES_DONE]
    return bool(_run(client, _REMOVE, [keys.fanout(repo, branch), keys.job(job_key)], args))

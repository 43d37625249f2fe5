"""Scale-out of a large index run: the coordinating job, and the batch tasks that help it.

A run whose diff touches at least ``[scale_out] min_files`` files (a first or full index, a big
merge) is split; smaller runs stay in their one task. The split needs a shared store (a Chroma
server): batches are written by other processes, maybe on other hosts.

- **The coordinator** is the index job itself, holding its execution lock (its layer's, or the
  branch's) for the whole run; runs of two layers of a branch split side by side, each under a
  record of its own (``keys.fanout_scope``). It
  plans the diff as always, cuts it into batches (``plan.batch_changes``), starts the run's
  record in Redis (``adapters.queue.fanout``), sends one message per batch to its own queue at the
  lowest priority, and then works through the batches too, from the last one down, until
  every batch has a result; on a first run it writes each batch's lexical documents to its
  host's lexical index as the batch comes in (``split_lexical``). Only then does
  ``index_repo`` go on to the tombstones of vanished paths, the manifest and the lexical
  snapshot: the stamp appears when everything is in.
- **A helper** is any worker process that takes a batch message: it claims the batch, embeds
  and writes it (``indexer.index_batch``, the coordinator's own per-batch code, with the run's
  stamp), and records its counts (and, when the message asks, its lexical documents). A
  batch that is done, held by a live process, or of a run that is over is dropped, so a
  redelivered or duplicate message is harmless.

Waiting on a Redis record rather than a Celery chord: a chord's counter on the Redis result
backend counts every delivery, so a batch delivered twice could fire the callback while another
is missing, and its callback would run outside the branch lock. Here completion is a set of
batch numbers, the finishing step runs in the job that holds the lock, and the coordinator never
waits on a batch nobody works on, even with a single worker process (it runs them itself).

Faults, none of which loses a file or duplicates a chunk (batches write by deterministic chunk
id, so a batch run twice writes the same records):

- A helper killed (``kill -9``) mid-batch: its claim's holder is found dead on this host at
  once, or its lease lapses (``lease_seconds``) on another host; the coordinator runs the batch.
- A helper that fails: it hands the batch back; the coordinator runs it, and its own error
  decides the job's outcome (retry or fail) as for any job.
- The coordinator killed: its job comes back (lock lease lapsed), takes the lock, finds the old
  record; it cancels it, waits until no old claim can still write (a live helper gives its
  claim back at its next renew), and plans again from the manifest, which was never advanced.
  Batches already written plan as unchanged.
- A holder renews its claim as it works (after each file and embedder batch, and before each
  write; at most every half second); a claim taken over makes it stop. One gap is left: a
  holder frozen for longer than its lease exactly between that check and its write could still
  land that write late.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from freshmark.adapters import keys
from freshmark.adapters.embedding.cache import EmbeddingCache
from freshmark.adapters.git.mirrors import mirror_path, sync_mirror
from freshmark.adapters.git.repo import GitRepo
from freshmark.adapters.queue import branch_lock, fanout
from freshmark.adapters.telemetry import counters
from freshmark.core import jobspec
from freshmark.core.config import Layer
from freshmark.core.errors import PermanentError
from freshmark.core.redact import redact
from freshmark.services.indexing.batches import (
    LEXICAL_RESULT,
    BatchRunner,
    IndexTools,
    LayerBatch,
    LexicalTaker,
    RunStamp,
)
from freshmark.services.indexing.indexer import index_batch
from workers.runtime import WorkerContext

log = logging.getLogger("freshmark.worker")

POLL_SECONDS = 0.2
RENEW_MIN_INTERVAL_SECONDS = 0.5
RUNNER_COORDINATOR, RUNNER_HELPER = "coordinator", "helper"

KeepClaim = Callable[[], None]


@dataclass(frozen=True)
class BatchMessage:
    """A batch task's payload: all it needs to run the batch on any host."""

    repo_id: str
    job_key: str
    fanout_id: str
    batch: int
    total: int
    queue: str
    stamp: RunStamp
    work: LayerBatch
    lexical: bool = False  # the coordinator takes the batch's lexical documents

    @property
    def label(self) -> str:
        return f"batch {self.batch + 1}/{self.total} of {self.repo_id}@{self.stamp.branch}"

    def to_payload(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "job_key": self.job_key, "fanout_id": self.fanout_id,
                "batch": self.batch, "total": self.total, "queue": self.queue,
                "stamp": self.stamp.to_dict(), "work": self.work.to_dict(),
                "lexical": self.lexical}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> BatchMessage:
        return cls(
            repo_id=payload["repo_id"], job_key=payload["job_key"],
            fanout_id=payload["fanout_id"],
            batch=int(payload["batch"]), total=int(payload["total"]), queue=payload["queue"],
            stamp=RunStamp.from_dict(payload["stamp"]), work=LayerBatch.from_dict(payload["work"]),
            lexical=bool(payload.get("lexical", False)),
        )


@dataclass(frozen=True)
class BatchSlot:
    """One batch of one split run, as this process claims it."""

    client: redis.Redis
    repo_id: str
    branch: str
    fanout_id: str
    batch: int
    holder: str
    lease_seconds: float

    def claim(self) -> str:
        """claimed | done | busy | gone; a holder that died on this host is taken over."""
        outcome, holder = fanout.claim(self.client, self.repo_id, self.branch, self.fanout_id,
                                       self.batch, self.holder, self.lease_seconds)
        if outcome == "busy" and branch_lock.holder_is_dead_here(holder):
            outcome, _ = fanout.claim(self.client, self.repo_id, self.branch, self.fanout_id,
                                      self.batch, self.holder, self.lease_seconds,
                                      take_over_from=holder)
        return outcome

    def renew(self) -> bool:
        return fanout.renew(self.client, self.repo_id, self.branch, self.fanout_id, self.batch,
                            self.holder, self.lease_seconds)

    def release(self, error: str) -> None:
        fanout.release(self.client, self.repo_id, self.branch, self.fanout_id, self.batch,
                       self.holder, error)

    def complete(self, job_key: str, counts: dict[str, Any], lexical: str = "") -> str:
        return fanout.complete(self.client, self.repo_id, self.branch, self.fanout_id,
                               self.batch, job_key, counts, lexical)


class Lease:
    """Keeps a claimed batch's lease while it runs: ``keep`` is the indexer's ``keep_claim``.

    It renews at most every ``RENEW_MIN_INTERVAL_SECONDS`` (a batch costs a handful of Redis
    calls, not one per file), and raises ``BatchLost`` once the claim is gone.
    """

    def __init__(self, slot: BatchSlot, clock: Callable[[], float] = time.monotonic):
        self.slot = slot
        self._clock = clock
        self._interval = min(RENEW_MIN_INTERVAL_SECONDS, slot.lease_seconds / 4)
        self._renewed_at = clock()  # the claim itself just set the lease

    def keep(self) -> None:
        now = self._clock()
        if now - self._renewed_at < self._interval:
            return
        if not self.slot.renew():
            raise fanout.BatchLost(f"batch {self.slot.batch + 1} was taken over or cancelled")
        self._renewed_at = now


def _give_back(slot: BatchSlot, error: str = "") -> None:
    """Drop this process's claim (a no-op once it was taken over): a claim left in a cancelled
    run would hold its next coordinator's drain for a whole lease."""
    with contextlib.suppress(redis.RedisError):
        slot.release(error)


def _run_claimed(slot: BatchSlot, job_key: str, queue: str, runner: str,
                 work: Callable[[KeepClaim], dict[str, Any]]) -> str:
    """Run a claimed batch and record its counts: completed | duplicate | gone. A batch that
    raises is handed back (the coordinator runs it) and the error goes on up; a batch whose
    run was cancelled gives its claim up at once, having stopped before its next write."""
    lease = Lease(slot)
    started = time.perf_counter()
    try:
        counts = work(lease.keep)
    except fanout.BatchLost:
        _give_back(slot)  # cancelled, or taken over (then the claim is not ours to drop)
        raise
    except Exception as exc:
        _give_back(slot, redact(f"{type(exc).__name__}: {exc}"))
        raise
    seconds = time.perf_counter() - started
    # The lexical documents travel apart from the counts: the coordinator drops them once
    # taken, while the counts stay in the record it reads until the run ends.
    lexical = str(counts.pop(LEXICAL_RESULT, ""))
    outcome = slot.complete(job_key, counts, lexical)
    if outcome == "gone":  # cancelled between the last renewal and the result
        _give_back(slot)
    counters.INDEX_BATCHES_TOTAL.labels(queue=queue, runner=runner).inc()
    counters.INDEX_BATCH_DURATION_SECONDS.labels(queue=queue).observe(seconds)
    return outcome


# -- the coordinator ---------------------------------------------------------------------------


class Coordinator:
    """``batches.FanOut`` for one index job of a configured repository."""

    def __init__(self, ctx: WorkerContext, job: jobspec.Job, repo_id: str,
                 sleep: Callable[[float], None] = time.sleep):
        self.scale_out = ctx.config.scale_out
        self.files_per_batch = self.scale_out.files_per_batch
        self.redis = ctx.redis
        self.send_batch = ctx.send_batch
        self.job_key, self.queue = job.key, job.spec.queue
        self.repo_id = repo_id
        # The record's scope (named ``branch`` as in ``fanout``'s calls), and the scopes whose
        # runs this one's lock excludes: a record they left was a dead coordinator's.
        self.branch = keys.fanout_scope(job.spec.branch, job.spec.layer)
        self.excluded_scopes = _excluded_scopes(job.spec, ctx.config.layers)
        # The record outlives a dead coordinator until its job can have come back for it.
        self.ttl_seconds = ctx.timings.visibility_timeout_seconds + self.scale_out.lease_seconds
        self.holder = branch_lock.lock_owner()
        self._sleep = sleep

    def wants(self, files: int) -> bool:
        return self.scale_out.splits(files)

    def run(self, stamp: RunStamp, batches: Sequence[LayerBatch], run_here: BatchRunner,
            take_lexical: LexicalTaker | None = None) -> list[dict[str, Any]]:
        self._drain_previous_run()
        fanout_id = uuid.uuid4().hex
        fanout.start(self.redis, self.repo_id, self.branch, fanout_id=fanout_id,
                     job_key=self.job_key, head=stamp.head, total=len(batches),
                     ttl_seconds=self.ttl_seconds)
        log.info("index %s@%s split into %d batches", self.repo_id, self.branch, len(batches))
        try:
            for number, batch in enumerate(batches):
                message = BatchMessage(self.repo_id, self.job_key, fanout_id, number,
                                       len(batches), self.queue, stamp, batch,
                                       lexical=take_lexical is not None)
                self.send_batch(message.to_payload(), self.queue)
            results = self._work_until_all_in(fanout_id, batches, run_here, take_lexical)
        except BaseException:
            # Helpers stop at their next renew; the job's next attempt drains and re-plans.
            with contextlib.suppress(redis.RedisError):
                fanout.cancel(self.redis, self.repo_id, self.branch, self.job_key, fanout_id)
            raise
        fanout.remove(self.redis, self.repo_id, self.branch, self.job_key, fanout_id)
        return results

    def _slot(self, fanout_id: str, batch: int) -> BatchSlot:
        return BatchSlot(self.redis, self.repo_id, self.branch, fanout_id, batch, self.holder,
                         self.scale_out.lease_seconds)

    def _read(self, fanout_id: str) -> fanout.Record:
        record = fanout.read(self.redis, self.repo_id, self.branch)
        if record is None or record.id != fanout_id or record.state != fanout.RUNNING:
            raise fanout.FanOutLost(
                f"the split run of {self.repo_id}@{self.branch} lost its record in Redis")
        return record

    def _work_until_all_in(self, fanout_id: str, batches: Sequence[LayerBatch],
                           run_here: BatchRunner,
                           take_lexical: LexicalTaker | None) -> list[dict[str, Any]]:
        taken: set[int] = set()
        while True:
            record = self._read(fanout_id)
            if take_lexical is not None:
                self._take_lexical(record, taken, take_lexical)
            if record.all_in:
                return record.results_in_order()
            batch = self._claim_next(record, fanout_id)
            if batch is None:  # every batch left is held by a live helper
                self._sleep(POLL_SECONDS)
                continue
            work = batches[batch]

            def run(keep: KeepClaim, work: LayerBatch = work) -> dict[str, Any]:
                return run_here(work, keep)

            with contextlib.suppress(fanout.BatchLost):  # taken over: its holder writes it
                _run_claimed(self._slot(fanout_id, batch), self.job_key, self.queue,
                             RUNNER_COORDINATOR, run)

    def _take_lexical(self, record: fanout.Record, taken: set[int],
                      take: LexicalTaker) -> None:
        """Each batch that came in since the last read, to ``take`` with the documents it
        sent (set with its result), which then leave the record."""
        new = sorted(set(record.results) - taken)
        for batch in new:
            take(batch, record.lexical.get(batch, ""))
        taken.update(new)
        fanout.taken(self.redis, self.repo_id, self.branch, record.id,
                     [b for b in new if b in record.lexical])

    def _claim_next(self, record: fanout.Record, fanout_id: str) -> int | None:
        for batch in fanout.claimable(record, branch_lock.holder_is_dead_here):
            outcome = self._slot(fanout_id, batch).claim()
            if outcome == "claimed":
                return batch
            if outcome == "gone":
                raise fanout.FanOutLost(f"the split run of {self.repo_id}@{self.branch} ended")
        return None

    def _drain_previous_run(self) -> None:
        """Records left by coordinators that died, of this run's scope or of one its lock
        excludes (no live run holds those): stop each, then wait until none of its batches can
        still be written (each claim released, lapsed or held by the dead)."""
        for scope in (self.branch, *self.excluded_scopes):
            if fanout.read(self.redis, self.repo_id, scope) is None:
                continue
            fanout.cancel(self.redis, self.repo_id, scope, self.job_key)
            log.warning("index %s@%s: an earlier split run was left over; draining it",
                        self.repo_id, scope)
            while True:
                record = fanout.read(self.redis, self.repo_id, scope)
                if record is None or not fanout.live_claims(record,
                                                            branch_lock.holder_is_dead_here):
                    break
                self._sleep(POLL_SECONDS)


def _excluded_scopes(spec: jobspec.JobSpec, layers: Sequence[Layer]) -> list[str]:
    """The record scopes of the runs a job's lock excludes: a layer's run excludes the
    whole-branch run, a whole-branch run every layer's."""
    if spec.layer != jobspec.ALL:
        return [keys.fanout_scope(spec.branch, jobspec.ALL)]
    return [keys.fanout_scope(spec.branch, layer.name) for layer in layers]


# -- a helper ----------------------------------------------------------------------------------


def _holds_commit(path: Path, commit: str) -> bool:
    if not path.exists():
        return False
    repo = GitRepo.open(path)
    try:
        repo.commit_time(commit)
        return True
    except PermanentError:
        return False
    finally:
        repo.close()


def _mirror_holding(ctx: WorkerContext, repo_id: str, commit: str) -> Path:
    """This host's mirror of the repository, fetched first if it lacks the run's head (a
    helper on another host than its coordinator)."""
    path = mirror_path(ctx.settings, repo_id)
    if not _holds_commit(path, commit):
        sync_mirror(ctx.settings, ctx.config.repo(repo_id))
    return path


def run_batch_message(payload: dict[str, Any], ctx: WorkerContext) -> dict[str, Any]:
    """Claim and run the batch a message names, unless it is done, held or of a finished run."""
    message = BatchMessage.from_payload(payload)
    _, _, branch, layer = jobspec.parse_job_key(message.job_key)
    slot = BatchSlot(ctx.redis, message.repo_id, keys.fanout_scope(branch, layer),
                     message.fanout_id, message.batch, branch_lock.lock_owner(),
                     ctx.config.scale_out.lease_seconds)
    outcome = slot.claim()
    if outcome != "claimed":
        return {"outcome": outcome}

    def work(keep_claim: KeepClaim) -> dict[str, Any]:
        path = _mirror_holding(ctx, message.repo_id, message.stamp.head)
        cache = EmbeddingCache(ctx.settings.cache_dir / "embeddings.sqlite")
        tools = IndexTools(ctx.config, ctx.embedder(), cache)
        return index_batch(path, stamp=message.stamp, batch=message.work, tools=tools,
                           store=ctx.store(), keep_claim=keep_claim, lexical=message.lexical)

    started = time.perf_counter()
    try:
        outcome = _run_claimed(slot, message.job_key, message.queue, RUNNER_HELPER, work)
    except fanout.BatchLost:
        log.info("%s: taken over or cancelled; stopped", message.label)
        return {"outcome": "lost"}
    except Exception as exc:
        log.warning("%s handed back to its coordinator: %s", message.label, redact(str(exc)))
        return {"outcome": "released", "error": redact(str(exc))}
    log.info("%s %s in %.2fs", message.label, outcome, time.perf_counter() - started)
    return {"outcome": outcome}

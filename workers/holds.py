"""The hold leases of one worker: every job message it has taken, until it lets go of it.

Celery's main process receives every message (``task_received``, also for a retry it keeps until
its countdown) and acknowledges or rejects it once the job is over; a pool process only runs it.
So the main process holds (``adapters.queue.holds``): a hold is taken as the message arrives,
renewed from one daemon thread every ``Timings.heartbeat_seconds``, and dropped at the first beat
after the message was acknowledged or rejected, or once the job no longer needs it (claimed,
when its branch lock takes over, or superseded by a newer message). A worker killed whole stops
renewing: its holds lapse within one lease, and the scheduler's sweep sends those jobs again.
A warm shutdown drops nothing: kombu restores the unacked messages, and should it fail to, the
sweep re-sends them once their holds lapse (the message restored as well is then stale).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import redis
from celery import signals

from freshmark.adapters.queue import branch_lock, holds, jobs
from freshmark.core import jobspec
from freshmark.core.settings import Settings
from workers.celery_app import TASK_FOR_KIND

log = logging.getLogger("freshmark.worker")

JOB_TASKS = frozenset(TASK_FOR_KIND.values())


@dataclass(frozen=True)
class Held:
    request: Any  # celery.worker.request.Request: ``acknowledged`` once acked or rejected
    job_key: str
    job_id: str


class HoldKeeper:
    """The holds of one process, by holder token (one per message taken)."""

    def __init__(self, client: redis.Redis, timings: jobspec.Timings):
        self.client = client
        self.lease_seconds = timings.lock_lease_seconds
        self.every_seconds = timings.heartbeat_seconds
        self._held: dict[str, Held] = {}
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self, request: Any) -> None:
        """Hold the job a message just received names (renewed from the next beat on)."""
        job_key, job_id = str(request.args[0]), str(request.args[1])
        token = branch_lock.lock_owner()
        item = Held(request, job_key, job_id)
        with self._guard:
            self._held[token] = item
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="job holds", daemon=True)
                self._thread.start()
        self._keep(token, item)

    def beat(self) -> None:
        """Renew every hold whose message is still ours; drop the others."""
        with self._guard:
            held = list(self._held.items())
        for token, item in held:
            self._keep(token, item)

    def held(self) -> int:
        with self._guard:
            return len(self._held)

    def stop(self) -> None:
        self._stop.set()

    def _keep(self, token: str, item: Held) -> None:
        if not item.request.acknowledged and holds.hold(
                self.client, item.job_key, item.job_id, token, self.lease_seconds):
            return
        holds.release(self.client, item.job_key, token)
        with self._guard:
            self._held.pop(token, None)

    def _run(self) -> None:
        while not self._stop.wait(self.every_seconds):
            try:
                self.beat()
            except (redis.RedisError, OSError) as exc:  # the next beat tries again
                log.warning("could not renew the holds of taken job messages: %s", exc)


_keeper: HoldKeeper | None = None


def keeper() -> HoldKeeper:
    """This process's keeper (only a worker's main process receives messages)."""
    global _keeper
    if _keeper is None:
        settings = Settings.from_env()
        _keeper = HoldKeeper(jobs.connect(settings.redis_url), jobspec.Timings.from_env())
    return _keeper


@signals.task_received.connect
def _on_received(request: Any = None, **_: Any) -> None:
    if request is None or request.name not in JOB_TASKS or len(request.args or ()) < 2:
        return  # batch messages are no job's: their claims have leases of their own
    try:
        keeper().take(request)
    except (redis.RedisError, OSError) as exc:  # kept: the next beat takes the hold
        log.warning("could not hold job %s: %s", request.args[0], exc)

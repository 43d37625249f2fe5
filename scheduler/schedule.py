"""The layered schedule: each layer's interval drives rebuild jobs on the layer's own queue.

Hot business directories are rebuilt often, infrastructure rarely (intervals from the config);
a reconcile pass and the retirement of idle branches run on their own intervals. Exactly one
scheduler acts at a time: it holds a Redis lock whose TTL it renews every tick, and a standby
takes over within one TTL of the holder dying. Last run times live in Redis too, so a restarted
(or replacement) scheduler does not fire everything again. Every tick also drains the due set
(debounced jobs whose time has come) and re-sends the jobs whose worker died: running ones
whose lock lease lapsed, and queued ones whose message's hold lease lapsed. Times are unix
seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import redis
from kombu.exceptions import OperationalError

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.adapters.queue.scheduler_lock import SchedulerLock
from freshmark.adapters.telemetry.layer_advice import read_advice
from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.dirstats import bounded_interval
from scheduler.auditor import FreshnessAuditor
from scheduler.outage import Outage

log = logging.getLogger("freshmark.scheduler")


@dataclass(frozen=True)
class Entry:
    """One periodic duty: its name (the key of its last run), interval and the jobs it queues."""

    name: str
    interval_seconds: float
    specs: tuple[jobspec.JobSpec, ...]


def retire_interval_seconds(config: Config) -> float:
    """Check for idle branches a few times per idle period, at most hourly."""
    return float(max(60, min(3600, config.branch_idle_seconds // 4)))


def schedule_entries(config: Config, advised: Mapping[str, int] | None = None) -> list[Entry]:
    """Layer rebuilds for every tracked branch, reconcile, retirement (pure). ``advised``:
    layer -> interval advised by ``audit --by-dir``, taken within ``core.dirstats`` bounds."""
    entries = []
    for layer in config.layers:
        every = bounded_interval(layer.interval_seconds, (advised or {}).get(layer.name))
        specs = tuple(
            jobspec.JobSpec(
                kind=jobspec.KIND_INDEX, repo=repo.id, branch=branch, layer=layer.name,
                queue=layer.queue, reason=f"schedule: layer {layer.name}",
            )
            for repo in config.repos
            for branch in repo.branches
        )
        if specs and every > 0:
            entries.append(Entry(f"layer:{layer.name}", float(every), specs))
    maintenance = (
        ("reconcile", float(config.reconcile_interval_seconds), jobspec.KIND_RECONCILE),
        ("retire_idle", retire_interval_seconds(config), jobspec.KIND_RETIRE_IDLE),
    )
    for name, interval, kind in maintenance:
        if interval > 0 and config.repos:
            spec = jobspec.JobSpec(kind=kind, repo=jobspec.ALL, queue=jobspec.QUEUE_MAINTENANCE,
                                   reason=name)
            entries.append(Entry(name, interval, (spec,)))
    return entries


def due_entries(
    entries: Sequence[Entry], last_runs: Mapping[str, float], now: float
) -> list[Entry]:
    """Entries never run, or whose interval has passed since their last run (pure)."""
    return [e for e in entries if now - last_runs.get(e.name, float("-inf")) >= e.interval_seconds]


@dataclass
class TickReport:
    leader: bool
    drained: int = 0
    resent: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()
    sent: int = 0


class Scheduler:
    # Audits freshness from the scheduler's own process while it is the active one (see
    # ``scheduler.auditor``); None: only the reconcile job on a worker audits.
    auditor: FreshnessAuditor | None = None

    def __init__(self, client: redis.Redis, config: Config, send: jobspec.Sender,
                 lock_ttl_seconds: float = 15.0, stale_seconds: float = 3600.0):
        self.client = client
        self.config = config
        self.send = send
        self.lock = SchedulerLock(client, lock_ttl_seconds)
        self.stale_seconds = stale_seconds
        self.entries = schedule_entries(config)

    def _adapt_entries(self) -> None:
        """Take the layer intervals ``audit --by-dir`` advised (the config switch is on)."""
        entries = schedule_entries(self.config, read_advice(self.client))
        before = {e.name: e.interval_seconds for e in self.entries}
        for entry in entries:
            if before.get(entry.name) != entry.interval_seconds:
                log.info("schedule %s now every %.0f s (layer advice)", entry.name,
                         entry.interval_seconds)
        self.entries = entries

    def _last_runs(self) -> dict[str, float]:
        last_runs = jobs.read_hash(self.client, keys.SCHEDULE_LAST_RUN)
        return {k: float(v) for k, v in last_runs.items()}

    def tick(self, now: float | None = None) -> TickReport:
        """One round: hold the lock, drain the due set, re-send orphaned jobs, fire what is due."""
        now = time.time() if now is None else now
        if not self.lock.hold():
            return TickReport(leader=False)
        report = TickReport(leader=True, drained=jobs.drain_due(self.client, self.send, now=now))
        report.resent = tuple(jobs.resend_orphans(self.client, self.send, now=now))
        for job_key in report.resent:
            log.warning("job %s lost its worker (its lease lapsed); sent again", job_key)
        if self.auditor is not None:
            self.auditor.maybe_start(now)
        if self.config.adapt_layer_intervals:
            self._adapt_entries()
        fired = due_entries(self.entries, self._last_runs(), now)
        for entry in fired:
            for spec in entry.specs:
                if jobs.held_back(self.client, spec.key):
                    continue  # parked on its own error: reconcile starts it once its branch moves
                result = jobs.submit(self.client, spec, self.send, stale_seconds=self.stale_seconds)
                report.sent += int(result.must_send)
            self.client.hset(keys.SCHEDULE_LAST_RUN, entry.name, now)
        report.fired = tuple(e.name for e in fired)
        if fired:
            log.info("scheduler fired %s (%d jobs sent)", ", ".join(report.fired), report.sent)
        return report

    def run(self, stop: threading.Event, tick_seconds: float = 1.0) -> None:
        """Tick until ``stop`` is set; a Redis outage is logged and retried, never fatal."""
        leader: bool | None = None  # unknown until the first tick: log either state once
        outage = Outage(log, "scheduler tick")
        try:
            while not stop.is_set():
                try:
                    report = self.tick()
                except (redis.RedisError, OperationalError, OSError) as exc:
                    stop.wait(outage.failed(exc, tick_seconds))
                    continue
                outage.ended()
                if report.leader != leader:
                    leader = report.leader
                    log.info("scheduler is %s", "active" if leader else "standby")
                stop.wait(tick_seconds)
        finally:
            try:
                self.lock.release()
            except (redis.RedisError, OSError):
                pass

"""Freshness measured beside the schedule, not only by the workers it measures.

The reconcile job audits freshness on a worker. When every worker is down (or the maintenance
queue is stuck behind long runs) no audit runs: the freshness gauges freeze at their last
values, which were taken when the index was fresh, and ``FreshmarkHotLayerStale`` can never
fire — exactly while the index goes stale. So the active scheduler audits too, on the reconcile
interval, in a thread of its own (a slow fetch never delays a tick): it fetches the mirrors,
under their locks like any worker, and publishes what it finds. Both audits publish the same
rows for the same heads; whichever ran last is what ``/metrics`` shows.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import redis

from freshmark.adapters.git.mirrors import RemoteUnavailable, sync_mirror
from freshmark.core.config import Config
from freshmark.core.errors import FreshmarkError
from freshmark.core.settings import Settings
from freshmark.services.upkeep.audit import run_audit

log = logging.getLogger("freshmark.scheduler")


class FreshnessAuditor:
    """Runs one audit at a time, at most once per ``interval_seconds`` (unix seconds)."""

    def __init__(self, settings: Settings, config: Config, client: Any, interval_seconds: float):
        self.settings, self.config, self.client = settings, config, client
        self.interval_seconds = interval_seconds
        self._last_start = float("-inf")
        self._thread: threading.Thread | None = None

    def maybe_start(self, now: float) -> bool:
        """Start an audit if the last one began an interval ago and has finished."""
        if self._thread is not None and self._thread.is_alive():
            return False
        if now - self._last_start < self.interval_seconds:
            return False
        self._last_start = now
        self._thread = threading.Thread(target=self.run_once, name="freshness-audit",
                                        daemon=True)
        self._thread.start()
        return True

    def run_once(self) -> int:
        """Fetch every configured mirror, audit and publish; returns the rows published."""
        for repo in self.config.repos:
            try:
                sync_mirror(self.settings, repo)
            except RemoteUnavailable as exc:  # its rows keep their old audit time: AuditStale
                log.warning("freshness audit: %s unreachable: %s", repo.id, exc)
        try:
            return len(run_audit(self.settings, self.config, redis=self.client).rows)
        except (FreshmarkError, OSError, redis.RedisError) as exc:
            log.warning("freshness audit failed (next interval retries): %s", exc)
            return 0

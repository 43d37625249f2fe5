"""A Redis outage under a running scheduler: a few log lines, not one per tick, and it recovers."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from cluster_support import PrivateRedis, Recorder, wait_until

from freshmark.adapters.queue import jobs
from freshmark.core.config import Config
from scheduler.outage import MAX_RETRY_WAIT_SECONDS, Outage
from scheduler.schedule import Scheduler

TICK_SECONDS = 0.01


def _said(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_an_outage_is_logged_when_it_starts_and_ends_not_every_tick(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    scheduler = Scheduler(jobs.connect(server.url), Config(), Recorder())
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,),
                              kwargs={"tick_seconds": TICK_SECONDS})
    caplog.set_level(logging.INFO, logger="freshmark.scheduler")
    thread.start()
    try:
        wait_until(lambda: _said(caplog, "scheduler is active"), 10, "the first tick")
        server.stop()
        time.sleep(1.5)  # 150 ticks at the normal pace
        server.start()
        wait_until(lambda: _said(caplog, "works again"), 15, "the scheduler to tick again")
    finally:
        stop.set()
        thread.join(timeout=15)
        server.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "tick failed (retrying" in warnings[0] and "works again after" in warnings[-1]
    assert len(warnings) <= 8


def test_the_wait_between_tries_doubles_up_to_its_cap_and_resets_once_a_try_works() -> None:
    outage = Outage(logging.getLogger("freshmark.test"), "queueing")
    waits = [outage.failed(OSError("refused"), 1.0) for _ in range(5)]
    assert waits == [2.0, 4.0, MAX_RETRY_WAIT_SECONDS, MAX_RETRY_WAIT_SECONDS,
                     MAX_RETRY_WAIT_SECONDS]
    outage.ended()
    assert outage.failed(OSError("refused"), 1.0) == 2.0

"""Where a push's time goes on its way to searchable, for ``bench_freshness.py``.

The worker side is read back from the workers' logs (Celery's ``received`` and ``succeeded``
lines of ``freshmark.index_branch``; the summary a run returns holds its fetch, stamp and
lexical times); the bench side (git push, webhook, the stamp seen, each search) is measured by
the bench. Worker log times are wall-clock with millisecond resolution, the bench's are turned
into wall-clock from one shared origin.

Per push, the steps in order (seconds):

- ``git_push_s``: ``git push`` into the bare remote
- ``webhook_s``: the signed webhook POST, answered once its jobs are queued
- ``pickup_s``: from the webhook answered to the worker receiving the hot job's message
- ``lock_claim_s``: in the task before the run and after it (lock, claim, heartbeat, finish)
- ``fetch_s``: the mirror fetch
- ``to_stamp_s``: the run from its start to its manifest written (diff, chunk, embed, write)
- ``seen_s``: from the manifest written to the bench seeing it (a 0.2 s poll of Chroma)
- ``search_s``: from the stamp seen to the first search that returns the symbol; ``searches``
  counts the tries (a try that misses waits 2 s for the next), ``search_call_s`` is the
  latency of the successful one.

``lexical_s`` (the run's lexical index after the stamp) is off the path: the server catches its
own lexical index up on the search.
"""

from __future__ import annotations

import ast
import re
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): \w+/[^\]]+\] (.*)$")
_RECEIVED = re.compile(r"Task freshmark\.index_branch\[([0-9a-f-]+)\] received")
_SUCCEEDED = re.compile(
    r"Task freshmark\.index_branch\[([0-9a-f-]+)\] succeeded in ([0-9.]+)s: (\{.*\})$")
STEPS = ("git_push_s", "webhook_s", "pickup_s", "lock_claim_s", "fetch_s", "to_stamp_s",
         "seen_s", "search_s")


@dataclass(frozen=True)
class WorkerRun:
    """One index run of one layer, as its worker logged it (wall-clock seconds)."""

    layer: str
    commit: str
    first_received_wall: float
    finished_wall: float
    task_seconds: float
    fetch_seconds: float
    index_seconds: float
    stamped_after_seconds: float
    lexical_seconds: float

    @property
    def stamp_wall(self) -> float:
        """When its manifest was written: the run's lexical step (and the job's finish, a Redis
        call or two) come after it."""
        return self.finished_wall - (self.index_seconds - self.stamped_after_seconds)


def _wall(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def worker_runs(logs: list[Path]) -> list[WorkerRun]:
    """Every successful layer run in the workers' logs, oldest first. A message received more
    than once (a lock-busy retry) counts from its first receipt."""
    received: dict[str, float] = {}
    runs: list[WorkerRun] = []
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            match = _LINE.match(line)
            if match is None:
                continue
            at, text = _wall(match.group(1)), match.group(2)
            if (got := _RECEIVED.search(text)) is not None:
                received.setdefault(got.group(1), at)
            elif (done := _SUCCEEDED.search(text)) is not None:
                run = _run(done, at, received.get(done.group(1), at))
                if run is not None:
                    runs.append(run)
    return sorted(runs, key=lambda r: r.finished_wall)


def _run(done: re.Match[str], at: float, first_received: float) -> WorkerRun | None:
    try:
        result = ast.literal_eval(done.group(3))
    except (ValueError, SyntaxError):
        return None
    if result.get("outcome") != "success" or len(result.get("layers", [])) != 1:
        return None
    return WorkerRun(result["layers"][0], result["commit"], first_received, at,
                     float(done.group(2)), float(result.get("fetch_seconds", 0.0)),
                     float(result["seconds"]), float(result.get("stamped_after_seconds", 0.0)),
                     float(result.get("lexical_seconds", 0.0)))


@dataclass(frozen=True)
class PushTimes:
    """What the bench measured of one push (wall-clock seconds; None: did not happen)."""

    index: int
    phase: str
    push_started_wall: float
    pushed_wall: float
    webhook_answered_wall: float
    stamp_seen_wall: float | None
    searchable_wall: float | None
    searches: int
    search_call_seconds: float | None


def breakdown(push: PushTimes, runs: list[WorkerRun], position: dict[str, int],
              layer: str = "hot") -> dict[str, Any] | None:
    """The steps of one push (module docstring), or None when no run of ``layer`` stamped it
    (or it coalesced into a run that started before it was pushed: not its own path)."""
    run = next((r for r in runs if r.layer == layer and position.get(r.commit, -1) >= push.index
                and r.finished_wall >= push.pushed_wall), None)
    if run is None or push.stamp_seen_wall is None or run.first_received_wall < push.pushed_wall:
        return None
    other = run.task_seconds - run.fetch_seconds - run.index_seconds
    steps: dict[str, Any] = {
        "index": push.index, "phase": push.phase,
        "git_push_s": push.pushed_wall - push.push_started_wall,
        "webhook_s": push.webhook_answered_wall - push.pushed_wall,
        "pickup_s": run.first_received_wall - push.webhook_answered_wall,
        "lock_claim_s": other,
        "fetch_s": run.fetch_seconds,
        "to_stamp_s": run.stamped_after_seconds,
        "seen_s": push.stamp_seen_wall - run.stamp_wall,
        "search_s": None if push.searchable_wall is None
        else push.searchable_wall - push.stamp_seen_wall,
        "searches": push.searches, "search_call_s": push.search_call_seconds,
        "lexical_s": run.lexical_seconds,
    }
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in steps.items()}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and max of each step over ``rows`` (those with a search count the search)."""
    figures: dict[str, Any] = {"pushes": len(rows)}
    for step in (*STEPS, "search_call_s", "lexical_s"):
        values = [row[step] for row in rows if row.get(step) is not None]
        if values:
            figures[step] = {"p50": round(statistics.median(values), 3),
                             "max": round(max(values), 3)}
    return figures

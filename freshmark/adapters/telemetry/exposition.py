"""Prometheus metrics: event counters written by any process, freshness gauges read at scrape time.

Two kinds of metric live here:

* **Events** (counters, one histogram) are incremented where they happen — in Celery prefork
  children, the scheduler, the HTTP server. With ``setup_multiprocess()`` called in the parent
  before it forks, every process writes its own mmap file and ``render_latest()`` in one process
  sums them (prometheus-client multiprocess mode).
* **Freshness state** (stale / tracked / tombstoned chunks, commits behind, lag, last success) is
  computed by the auditor (``services.upkeep.audit``) and *published* as rows to a
  ``FreshnessStore``:
  a Redis hash in a cluster (any host can read it) or a JSON file under ``settings.state_dir`` on
  one machine. A custom collector turns the latest rows into gauges at scrape time, so a gauge
  never outlives the branch it describes.
* **Queue lengths** are *handed in* as a ``QueueLengths`` callable, called at scrape time. This
  module never imports the job queue: metrics observe the queue, the queue does not know them.

* **Verdicts by directory** (``core.dirstats``) are *handed in* as a ``DirCounts`` callable too:
  the failure statistics of seed 000 step 7, at most ``MAX_EXPORTED_DIRS`` directories a branch.

Label values are repo ids, branch names, layer names, queue names, providers, outcomes and
verdicts — all bounded by the config — and directory prefixes, bounded by
``MAX_EXPORTED_DIRS`` per branch. Never file paths, never shas.

Only one process per deployment should pass ``store``/``queue_lengths`` to ``render_latest`` (the
HTTP server): the recording rules take ``max`` over duplicate series anyway, but one source keeps
the numbers honest.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import MetricsHandler

from freshmark.adapters.telemetry.counters import EVENT_METRICS
from freshmark.adapters.telemetry.freshness import (
    _FRESHNESS_GAUGES,
    FreshnessRow,
    FreshnessStore,
)
from freshmark.core.dirstats import DirStaleness

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

MAX_EXPORTED_DIRS = 20
DirCounts = Callable[[], Iterable[DirStaleness]]
"""Called once per scrape: the verdicts counted per directory prefix of every branch."""

QueueLengths = Callable[[], dict[str, int]]
"""Called once per scrape: queue name -> jobs waiting in it (a count, >= 0).

Whatever it raises (Redis down) propagates out of ``render_latest``, so the caller can fall back.
"""


class FreshnessCollector:
    """Reads the latest published rows and the handed-in queue lengths at scrape time; yields
    gauges. Either source may be None, and then its gauges are left out."""

    def __init__(self, store: FreshnessStore | None, queue_lengths: QueueLengths | None = None,
                 dir_counts: DirCounts | None = None):
        self._store = store
        self._queue_lengths = queue_lengths
        self._dir_counts = dir_counts

    def describe(self) -> list[Metric]:
        return []  # no collect() at registration: that would hit Redis

    def collect(self) -> Iterator[Metric]:
        if self._store is not None:
            yield from freshness_families(self._store.load())
        if self._queue_lengths is not None:
            queues = GaugeMetricFamily(
                "freshmark_queue_length", "Jobs waiting in each worker queue.", labels=["queue"]
            )
            for queue, length in sorted(self._queue_lengths().items()):
                queues.add_metric([queue], float(length))
            yield queues
        if self._dir_counts is not None:
            yield dir_family(self._dir_counts())


def dir_family(rows: Iterable[DirStaleness]) -> GaugeMetricFamily:
    """Verdicts given at use time per directory prefix: the ``MAX_EXPORTED_DIRS`` directories
    with the most verdicts of each branch."""
    family = GaugeMetricFamily(
        "freshmark_verdicts_by_dir",
        "Verdicts given when verifying results at use time, per directory prefix of the path "
        "(the directories with the most verdicts of each branch).",
        labels=["repo", "branch", "dir", "verdict"])
    by_branch: dict[tuple[str, str], list[DirStaleness]] = {}
    for row in rows:
        by_branch.setdefault((row.repo, row.branch), []).append(row)
    for (repo, branch), dirs in sorted(by_branch.items()):
        top = sorted(dirs, key=lambda d: (-d.total, d.directory))[:MAX_EXPORTED_DIRS]
        for row in sorted(top, key=lambda d: d.directory):
            for verdict, count in sorted(row.counts.items()):
                family.add_metric([repo, branch, row.directory, verdict], float(count))
    return family


def freshness_families(rows: Iterable[FreshnessRow]) -> list[GaugeMetricFamily]:
    """One gauge family per freshness figure, one sample per (repo, branch, layer)."""
    families = [
        GaugeMetricFamily(f"freshmark_{name}", text, labels=["repo", "branch", "layer"])
        for name, text in _FRESHNESS_GAUGES
    ]
    for row in sorted(rows, key=lambda r: (r.repo, r.branch, r.layer)):
        labels = [row.repo, row.branch, row.layer]
        for family, (name, _) in zip(families, _FRESHNESS_GAUGES, strict=True):
            family.add_metric(labels, float(getattr(row, name)))
    return families


class _Forward:
    """Exposes another registry's collectors inside a per-scrape registry."""

    def __init__(self, source: CollectorRegistry):
        self._source = source

    def collect(self) -> Iterable[Metric]:
        return self._source.collect()


def multiprocess_dir() -> Path | None:
    raw = os.environ.get(MULTIPROC_ENV)
    return Path(raw) if raw else None


def render_latest(
    *, store: FreshnessStore | None = None, queue_lengths: QueueLengths | None = None,
    dir_counts: DirCounts | None = None,
) -> tuple[bytes, str]:
    """The ``/metrics`` body and its content type, rendered by one process.

    Event metrics come from every process of the group (multiprocess files) or, without
    multiprocess mode, from this process. Freshness gauges appear when ``store`` is given, queue
    lengths when ``queue_lengths`` is; both are read now, and their errors propagate.
    """
    registry = CollectorRegistry()
    if multiprocess_dir() is not None:
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Forward(REGISTRY))
    if store is not None or queue_lengths is not None or dir_counts is not None:
        registry.register(FreshnessCollector(store, queue_lengths, dir_counts))
    return generate_latest(registry), CONTENT_TYPE_LATEST


def setup_multiprocess(directory: Path | None = None) -> Path:
    """Switch this process (and the children it forks) to multiprocess mode; returns the dir.

    Call once in the parent before forking workers. Without ``directory``,
    ``$PROMETHEUS_MULTIPROC_DIR`` is used, else a fresh directory under the system temp dir.
    The directory may be shared by the processes of one machine (workers, scheduler, server);
    see ``_clear_for_start`` for what a process starting into it removes.
    """
    chosen = directory or multiprocess_dir()
    if chosen is None:
        chosen = Path(tempfile.gettempdir()) / f"freshmark-metrics-{os.getpid()}"
    chosen.mkdir(parents=True, exist_ok=True)
    _clear_for_start(chosen)
    os.environ[MULTIPROC_ENV] = str(chosen)
    # prometheus-client picks its value class at import; metrics were created before this call,
    # so switch the class and re-create their values (labelled children are created lazily).
    values.ValueClass = values.get_value_class()
    for metric in EVENT_METRICS:
        _reset_values(metric)
    return chosen


def _owner_pid(path: Path) -> int | None:
    """The process a multiprocess file belongs to (prometheus-client names them ``TYPE_PID.db``)."""
    tail = path.stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _clear_for_start(directory: Path) -> None:
    """Wipe an earlier run's files, whose counts would otherwise be added to this run's; but a
    process joining a group that is running (a worker restarted beside a live server) keeps
    every file: unlinking a live process's file would hide everything it counts from then on
    (it keeps writing to the unlinked mmap), and the dead members' counters must stay so the
    summed counters never go back. Only the dead members' live gauges go."""
    owners = {pid for f in directory.glob("*.db") if (pid := _owner_pid(f)) is not None}
    running = {pid for pid in owners if pid != os.getpid() and _alive(pid)}
    if running:
        for pid in owners - running:
            multiprocess.mark_process_dead(pid, str(directory))
        return
    for stale in directory.glob("*.db"):
        stale.unlink()


def _reset_values(metric: Counter | Histogram) -> None:
    if metric._labelnames:
        with metric._lock:
            metric._metrics.clear()
    else:
        metric._metric_init()


def mark_process_dead(pid: int) -> None:
    """Bookkeeping when a prefork child exits (drops its live-gauge files; counters stay)."""
    directory = multiprocess_dir()
    if directory is not None:
        multiprocess.mark_process_dead(pid, str(directory))


def _handler_for(
    store: FreshnessStore | None, queue_lengths: QueueLengths | None
) -> type[MetricsHandler]:
    class Handler(MetricsHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body, content_type = render_latest(store=store, queue_lengths=queue_lengths)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None  # scrapes every 15 s would flood the worker log

    return Handler


def start_metrics_server(
    port: int,
    addr: str = "0.0.0.0",
    *,
    store: FreshnessStore | None = None,
    queue_lengths: QueueLengths | None = None,
) -> ThreadingHTTPServer:
    """Serve ``/metrics`` from a daemon thread (for worker and scheduler pods); returns the server.

    Workers pass neither ``store`` nor ``queue_lengths``: only the HTTP service exports freshness
    gauges and queue lengths.
    """
    server = ThreadingHTTPServer((addr, port), _handler_for(store, queue_lengths))
    thread = threading.Thread(target=server.serve_forever, name="freshmark-metrics", daemon=True)
    thread.start()
    return server

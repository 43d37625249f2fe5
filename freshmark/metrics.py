"""Prometheus metrics: event counters written by any process, freshness gauges read at scrape time.

Two kinds of metric live here:

* **Events** (counters, one histogram) are incremented where they happen — in Celery prefork
  children, the scheduler, the HTTP server. With ``setup_multiprocess()`` called in the parent
  before it forks, every process writes its own mmap file and ``render_latest()`` in one process
  sums them (prometheus-client multiprocess mode).
* **Freshness state** (stale / tracked / tombstoned chunks, commits behind, lag, last success) is
  computed by the auditor (``freshmark.audit``) and *published* as rows to a ``FreshnessStore``:
  a Redis hash in a cluster (any host can read it) or a JSON file under ``settings.state_dir`` on
  one machine. A custom collector turns the latest rows and the queue lengths into gauges at scrape
  time, so a gauge never outlives the branch it describes.

Label values are repo ids, branch names, layer names, queue names, providers, outcomes and
verdicts — all bounded by the config. Never paths, never shas.

Only one process per deployment should pass ``redis``/``store`` to ``render_latest`` (the HTTP
server): the recording rules take ``max`` over duplicate series anyway, but one source keeps the
numbers honest.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

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

from freshmark import keys

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
FRESHNESS_FILE_NAME = "freshness-latest.json"

# Job durations run from a no-op (well under a second) to a full re-index of a large repo.
_JOB_DURATION_BUCKETS_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

JOBS_TOTAL = Counter(
    "freshmark_jobs_total",
    "Index jobs finished, by queue and outcome (success, noop, retry, failed, parked).",
    ["queue", "outcome"],
)
JOB_DURATION_SECONDS = Histogram(
    "freshmark_job_duration_seconds",
    "Wall time of one index job, from start of execution to its end, in seconds.",
    ["queue"],
    buckets=_JOB_DURATION_BUCKETS_SECONDS,
)
JOBS_COALESCED_TOTAL = Counter(
    "freshmark_jobs_coalesced_total",
    "Enqueue requests folded into an already pending job for the same repo, branch and layer.",
)
JOBS_PARKED_TOTAL = Counter(
    "freshmark_jobs_parked_total",
    "Jobs parked after exhausting their attempts (poison jobs); each needs an operator.",
)
WEBHOOK_DELIVERIES_TOTAL = Counter(
    "freshmark_webhook_deliveries_total",
    "Webhook deliveries received, by provider and result (accepted, duplicate, rejected, ...).",
    ["provider", "result"],
)
VERIFICATION_VERDICTS_TOTAL = Counter(
    "freshmark_verification_verdicts_total",
    "Verdicts given when verifying retrieved chunks at use time (current, changed, ...).",
    ["verdict"],
)

# A batch of a split index run: seconds to minutes (256 files of MiniLM embedding).
_BATCH_DURATION_BUCKETS_SECONDS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

INDEX_BATCHES_TOTAL = Counter(
    "freshmark_index_batches_total",
    "Batches of split (scaled-out) index runs written, by queue and runner (the coordinating "
    "job's process, or a helper that took the batch's message).",
    ["queue", "runner"],
)
INDEX_BATCH_DURATION_SECONDS = Histogram(
    "freshmark_index_batch_duration_seconds",
    "Wall time of one batch of a split index run (read, chunk, embed, write), in seconds.",
    ["queue"],
    buckets=_BATCH_DURATION_BUCKETS_SECONDS,
)

EVENT_METRICS: tuple[Counter | Histogram, ...] = (
    JOBS_TOTAL,
    JOB_DURATION_SECONDS,
    INDEX_BATCHES_TOTAL,
    INDEX_BATCH_DURATION_SECONDS,
    JOBS_COALESCED_TOTAL,
    JOBS_PARKED_TOTAL,
    WEBHOOK_DELIVERIES_TOTAL,
    VERIFICATION_VERDICTS_TOTAL,
)


@dataclass(frozen=True)
class FreshnessRow:
    """The audited freshness of one (repo, branch, layer); every count is in chunks.

    ``stale_chunks <= tracked_chunks``; ``index_lag_seconds`` is 0 when the layer is at the head;
    timestamps are Unix seconds (UTC); ``layer_interval_seconds`` is the layer's rebuild interval
    from the config, exported so Prometheus can tell an overdue layer from an idle one.
    The JSON form (``to_json``) is what ``freshmark audit --json`` prints.
    """

    repo: str
    branch: str
    layer: str
    stale_chunks: int
    tracked_chunks: int
    tombstoned_chunks: int
    commits_behind: int
    index_lag_seconds: float
    layer_last_success_timestamp_seconds: float
    layer_interval_seconds: float
    audit_timestamp_seconds: float
    # Which index state the chunk counts describe (collection@generation); not exported.
    index_fingerprint: str = ""

    @property
    def stale_ratio(self) -> float:
        """Stale over tracked live chunks, 0–1 (0 for an empty layer)."""
        return self.stale_chunks / self.tracked_chunks if self.tracked_chunks else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stale_ratio"] = round(self.stale_ratio, 6)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FreshnessRow:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


# (FreshnessRow attribute = metric name without the prefix, help text)
_FRESHNESS_GAUGES: tuple[tuple[str, str], ...] = (
    ("stale_chunks", "Live chunks whose file changed at the branch head or is gone."),
    ("tracked_chunks", "Live chunks held for the branch and layer."),
    ("tombstoned_chunks", "Tombstoned chunks kept as history."),
    ("commits_behind", "Commits on the branch not yet indexed by the layer."),
    ("index_lag_seconds", "Seconds since the first commit the layer has not indexed (0 if none)."),
    (
        "layer_last_success_timestamp_seconds",
        "Unix time of the layer's last successful index run (no-op runs included).",
    ),
    ("layer_interval_seconds", "Configured rebuild interval of the layer, in seconds."),
    ("audit_timestamp_seconds", "Unix time the freshness auditor last measured this layer."),
)
FRESHNESS_METRIC_NAMES: tuple[str, ...] = tuple(f"freshmark_{n}" for n, _ in _FRESHNESS_GAUGES)


class FreshnessStore(Protocol):
    """Where the auditor's latest rows are published and where the scrape reads them."""

    def publish(self, rows: Iterable[FreshnessRow], replace_all: bool = False) -> None: ...

    def load(self) -> list[FreshnessRow]: ...


def _group_by_branch(rows: Iterable[FreshnessRow]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(keys.freshness_field(row.repo, row.branch), []).append(row.to_json())
    return grouped


def _rows_from_groups(groups: Iterable[list[dict[str, Any]]]) -> list[FreshnessRow]:
    return [FreshnessRow.from_json(item) for items in groups for item in items]


class RedisFreshnessStore:
    """A Redis hash (``keys.FRESHNESS_LATEST``): one field per (repo, branch), its rows as JSON.

    Publishing a branch replaces its rows atomically; ``replace_all`` (a full audit) also drops
    branches that no longer exist, so retired branches stop being exported.
    """

    def __init__(self, redis: Any, key: str | None = None):
        self._redis = redis
        self._key = key or keys.FRESHNESS_LATEST

    def publish(self, rows: Iterable[FreshnessRow], replace_all: bool = False) -> None:
        grouped = {field: json.dumps(items) for field, items in _group_by_branch(rows).items()}
        pipe = self._redis.pipeline(transaction=True)
        if replace_all:
            pipe.delete(self._key)
        if grouped:
            pipe.hset(self._key, mapping=grouped)
        pipe.execute()

    def load(self) -> list[FreshnessRow]:
        return _rows_from_groups(json.loads(raw) for raw in self._redis.hvals(self._key))


class FileFreshnessStore:
    """A JSON file (embedded, single machine): ``{"repo:branch": [row, ...]}``.

    Writes take an exclusive lock and replace the file atomically, so a scrape never reads half
    a file and two audits do not lose each other's branches.
    """

    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / FRESHNESS_FILE_NAME

    def _read_groups(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return data if isinstance(data, dict) else {}

    def publish(self, rows: Iterable[FreshnessRow], replace_all: bool = False) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_suffix(".lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            groups = {} if replace_all else self._read_groups()
            groups.update(_group_by_branch(rows))
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".freshness-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(groups, out)
            os.replace(tmp, self.path)

    def load(self) -> list[FreshnessRow]:
        return _rows_from_groups(self._read_groups().values())


def freshness_store_for(state_dir: Path, redis: Any | None = None) -> FreshnessStore:
    """Redis when the deployment has one (cluster), else the file under ``state_dir``."""
    return RedisFreshnessStore(redis) if redis is not None else FileFreshnessStore(state_dir)


def _queue_lengths(redis: Any) -> dict[str, int]:
    try:
        from freshmark.jobs import queue_lengths
    except ImportError:  # the cluster part is optional on one machine
        return {}
    return dict(queue_lengths(redis))


class FreshnessCollector:
    """Reads the latest published rows and queue lengths at scrape time and yields gauges."""

    def __init__(self, store: FreshnessStore | None, redis: Any | None = None):
        self._store = store
        self._redis = redis

    def describe(self) -> list[Metric]:
        return []  # no collect() at registration: that would hit Redis

    def collect(self) -> Iterator[Metric]:
        if self._store is not None:
            yield from freshness_families(self._store.load())
        if self._redis is not None:
            queues = GaugeMetricFamily(
                "freshmark_queue_length", "Jobs waiting in each worker queue.", labels=["queue"]
            )
            for queue, length in sorted(_queue_lengths(self._redis).items()):
                queues.add_metric([queue], float(length))
            yield queues


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
    redis: Any | None = None, store: FreshnessStore | None = None
) -> tuple[bytes, str]:
    """The ``/metrics`` body and its content type, rendered by one process.

    Event metrics come from every process of the group (multiprocess files) or, without
    multiprocess mode, from this process. Freshness gauges appear when ``store`` is given (or
    ``redis``, which implies the Redis store); queue lengths when ``redis`` is given.
    """
    registry = CollectorRegistry()
    if multiprocess_dir() is not None:
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Forward(REGISTRY))
    if store is None and redis is not None:
        store = RedisFreshnessStore(redis)
    if store is not None or redis is not None:
        registry.register(FreshnessCollector(store, redis))
    return generate_latest(registry), CONTENT_TYPE_LATEST


def setup_multiprocess(directory: Path | None = None) -> Path:
    """Switch this process (and the children it forks) to multiprocess mode; returns the dir.

    Call once in the parent before forking workers. Leftover ``*.db`` files from an earlier run
    are wiped, since their counts would otherwise be added to this run's. Without ``directory``,
    ``$PROMETHEUS_MULTIPROC_DIR`` is used, else a fresh directory under the system temp dir.
    """
    chosen = directory or multiprocess_dir()
    if chosen is None:
        chosen = Path(tempfile.gettempdir()) / f"freshmark-metrics-{os.getpid()}"
    chosen.mkdir(parents=True, exist_ok=True)
    for stale in chosen.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(chosen)
    # prometheus-client picks its value class at import; metrics were created before this call,
    # so switch the class and re-create their values (labelled children are created lazily).
    values.ValueClass = values.get_value_class()
    for metric in EVENT_METRICS:
        _reset_values(metric)
    return chosen


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


def _handler_for(redis: Any | None, store: FreshnessStore | None) -> type[MetricsHandler]:
    class Handler(MetricsHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body, content_type = render_latest(redis=redis, store=store)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return None  # scrapes every 15 s would flood the worker log

    return Handler


def start_metrics_server(
    port: int, addr: str = "0.0.0.0", redis: Any | None = None, store: FreshnessStore | None = None
) -> ThreadingHTTPServer:
    """Serve ``/metrics`` from a daemon thread (for worker and scheduler pods); returns the server.

    Workers pass neither ``redis`` nor ``store``: only the HTTP service exports freshness gauges.
    """
    server = ThreadingHTTPServer((addr, port), _handler_for(redis, store))
    thread = threading.Thread(target=server.serve_forever, name="freshmark-metrics", daemon=True)
    thread.start()
    return server

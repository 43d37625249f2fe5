"""Freshness rows: what the audit publishes for ``/metrics``, in Redis or a file."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from redis import Redis

from freshmark.adapters import keys
from freshmark.core.settings import Settings

FRESHNESS_FILE_NAME = "freshness-latest.json"


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

    def load_branch(self, repo: str, branch: str) -> list[FreshnessRow]:
        """The rows last published for one (repo, branch); empty if none."""

    def forget(self, repo: str, branch: str) -> None:
        """Stop exporting (repo, branch): its index was dropped."""


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

    def load_branch(self, repo: str, branch: str) -> list[FreshnessRow]:
        raw = self._redis.hget(self._key, keys.freshness_field(repo, branch))
        return _rows_from_groups([json.loads(raw)] if raw else [])

    def forget(self, repo: str, branch: str) -> None:
        self._redis.hdel(self._key, keys.freshness_field(repo, branch))


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
        self._rewrite(lambda groups: groups.update(_group_by_branch(rows)), replace_all)

    def forget(self, repo: str, branch: str) -> None:
        if self.path.exists():
            self._rewrite(lambda groups: groups.pop(keys.freshness_field(repo, branch), None))

    def _rewrite(self, change: Callable[[dict[str, Any]], object], empty: bool = False) -> None:
        """Apply ``change`` to the groups under the lock and replace the file atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_suffix(".lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            groups = {} if empty else self._read_groups()
            change(groups)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".freshness-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(groups, out)
            os.replace(tmp, self.path)

    def load(self) -> list[FreshnessRow]:
        return _rows_from_groups(self._read_groups().values())

    def load_branch(self, repo: str, branch: str) -> list[FreshnessRow]:
        group = self._read_groups().get(keys.freshness_field(repo, branch))
        return _rows_from_groups([group] if isinstance(group, list) else [])


def freshness_store_for(settings: Settings, redis: Any | None = None) -> FreshnessStore:
    """The deployment's one freshness store, chosen the same way by every process that writes
    or reads it (``audit``, the workers' scheduled audit, ``serve``'s ``/metrics``): Redis when
    ``FRESHMARK_REDIS_URL`` is set (a cluster: every pod shares it), else the file under
    ``FRESHMARK_HOME/state`` (one machine: every process shares the home). The default Redis
    URL a process falls back to for its job queue does not count: a one-machine ``audit``
    without Redis must publish where ``serve`` reads. ``redis``: a client to that URL the
    caller already holds (else one is made)."""
    if not settings.redis_url_set:
        return FileFreshnessStore(settings.state_dir)
    return RedisFreshnessStore(redis if redis is not None else Redis.from_url(settings.redis_url))

"""Failure statistics by directory (seed 000 §6 step 7): where stale results occur, and advice.

"If staleness concentrates in one directory, that directory changes too fast and needs more
frequent builds." Every verdict given at use time is also counted under its file's directory
prefix (the first ``DIR_DEPTH`` directories of its path), so the counts say where agents meet
changed and historical code. Cardinality is bounded: a branch keeps at most
``MAX_DIRS_PER_BRANCH`` prefixes and counts any further one under ``OTHER_DIR``.

``advise`` reads those counts against the layers: a directory whose stale share (changed plus
historical over all its verdicts, with at least ``MIN_VERDICTS`` of them) reaches
``STALE_SHARE_ADVICE`` is rebuilt too rarely for how fast it changes; the advice names its layer
and an interval scaled down by how far the share is over the bound (never below
``MIN_ADVISED_FRACTION`` of the layer's interval, nor below ``MIN_INTERVAL_SECONDS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.core.config import Layer

DIR_DEPTH = 2
ROOT_DIR = "."
OTHER_DIR = "(other)"
MAX_DIRS_PER_BRANCH = 200
STALE_VERDICTS = frozenset({"changed", "historical"})
MIN_VERDICTS = 20
STALE_SHARE_ADVICE = 0.2
MIN_ADVISED_FRACTION = 0.25
MIN_INTERVAL_SECONDS = 60


def dir_prefix(path: str, depth: int = DIR_DEPTH) -> str:
    """``src/orders/services/x.py`` -> ``src/orders/``; a file at the top -> ``.``."""
    parts = path.strip("/").split("/")[:-1]
    return "/".join(parts[:depth]) + "/" if parts else ROOT_DIR


def fold(prefix: str, known: Iterable[str], limit: int = MAX_DIRS_PER_BRANCH) -> str:
    """The prefix to count under, given the prefixes a branch already has."""
    held = set(known)
    return prefix if prefix in held or len(held) < limit else OTHER_DIR


@dataclass(frozen=True)
class DirStaleness:
    """Verdicts counted under one directory prefix of one branch."""

    repo: str
    branch: str
    directory: str
    counts: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def stale(self) -> int:
        return sum(n for verdict, n in self.counts.items() if verdict in STALE_VERDICTS)

    @property
    def stale_share(self) -> float:
        return self.stale / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "branch": self.branch, "dir": self.directory,
                "verdicts": dict(sorted(self.counts.items())), "total": self.total,
                "stale": self.stale, "stale_share": round(self.stale_share, 4)}


@dataclass(frozen=True)
class LayerAdvice:
    """Rebuild ``layer`` more often: ``directory`` meets stale code too often for its interval."""

    repo: str
    branch: str
    directory: str
    layer: str
    interval_seconds: int
    advised_interval_seconds: int
    stale_share: float
    verdicts: int

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "branch": self.branch, "dir": self.directory,
                "layer": self.layer, "interval_seconds": self.interval_seconds,
                "advised_interval_seconds": self.advised_interval_seconds,
                "stale_share": round(self.stale_share, 4), "verdicts": self.verdicts}

    def text(self) -> str:
        return (f"{self.directory} in {self.repo}@{self.branch}: {self.stale_share:.0%} of "
                f"{self.verdicts} results stale; layer {self.layer!r} rebuilds every "
                f"{self.interval_seconds} s — every {self.advised_interval_seconds} s would "
                "keep up (or give the directory a layer of its own)")


def layer_of(directory: str, layers: Sequence[Layer]) -> Layer | None:
    """The first layer whose globs take files of ``directory`` (a probe path inside it)."""
    probe = "x.py" if directory == ROOT_DIR else f"{directory}x.py"
    return next((layer for layer in layers if layer.matches(probe)), None)


def advised_interval(interval_seconds: int, stale_share: float) -> int:
    """The interval that would bring the share back to the bound, if staleness grows with the
    time between builds; bounded below (see the module docstring)."""
    scaled = interval_seconds * STALE_SHARE_ADVICE / max(stale_share, STALE_SHARE_ADVICE)
    floor = max(MIN_INTERVAL_SECONDS, interval_seconds * MIN_ADVISED_FRACTION)
    return int(min(interval_seconds, max(floor, scaled)))


def bounded_interval(interval_seconds: int, advised_seconds: int | None) -> int:
    """The interval a layer runs at when advice is acted on: never longer than its own, never
    shorter than the floor of ``advised_interval``."""
    if advised_seconds is None or interval_seconds <= 0:
        return interval_seconds
    floor = max(MIN_INTERVAL_SECONDS, int(interval_seconds * MIN_ADVISED_FRACTION))
    return max(floor, min(interval_seconds, advised_seconds))


def advise(rows: Iterable[DirStaleness], layers: Sequence[Layer]) -> list[LayerAdvice]:
    """Advice for every directory with enough verdicts and too high a stale share, worst first."""
    advice = []
    for row in rows:
        if row.directory == OTHER_DIR or row.total < MIN_VERDICTS or \
                row.stale_share < STALE_SHARE_ADVICE:
            continue
        layer = layer_of(row.directory, layers)
        if layer is None or layer.interval_seconds <= 0:
            continue
        advised = advised_interval(layer.interval_seconds, row.stale_share)
        if advised < layer.interval_seconds:
            advice.append(LayerAdvice(row.repo, row.branch, row.directory, layer.name,
                                      layer.interval_seconds, advised, row.stale_share,
                                      row.total))
    return sorted(advice, key=lambda a: (-a.stale_share, a.repo, a.branch, a.directory))

"""``audit --by-dir``: where agents meet stale code, and which layer should rebuild more often.

Reads the verdicts counted per directory prefix at use time (``adapters.telemetry.verdict_stats``)
and the config's layers; the rules are ``core.dirstats``. Cost: one read of the bounded table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.config import Config
from freshmark.core.dirstats import DirStaleness, LayerAdvice, advise
from freshmark.core.settings import Settings
from freshmark.services.repos import resolve_repo

STATUS_DIRS = 10


@dataclass(frozen=True)
class DirReport:
    rows: tuple[DirStaleness, ...]
    advice: tuple[LayerAdvice, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"dirs": [row.to_dict() for row in self.rows],
                "advice": [a.to_dict() for a in self.advice]}


def directory_report(settings: Settings, config: Config, store: Store, *,
                     target: str | None = None, branch: str | None = None) -> DirReport:
    """Verdicts per directory of every branch (or of ``target``'s, or one branch), the most
    stale first, with the layer advice they call for."""
    repo = resolve_repo(target, settings, config, store).name if target else None
    rows = VerdictStats.open(settings).dir_counts(repo, branch)
    ordered = sorted(rows, key=lambda r: (-r.stale_share, -r.total, r.repo, r.branch,
                                          r.directory))
    return DirReport(tuple(ordered), tuple(advise(rows, config.layers)))


def stale_dirs(settings: Settings, repo: str, branch: str) -> list[dict[str, Any]]:
    """For ``status``: the directories of a branch where most stale results were met."""
    rows = [r for r in VerdictStats.open(settings).dir_counts(repo, branch) if r.stale]
    rows.sort(key=lambda r: (-r.stale, r.directory))
    return [row.to_dict() for row in rows[:STATUS_DIRS]]

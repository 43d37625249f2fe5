"""The freshness auditor: per repo, branch and layer, how much of the index is no longer true.

For one layer indexed at commit C with the branch now at H:

* ``stale_chunks``: live chunks of the layer whose file changed or vanished between C and H;
* ``tracked_chunks``: all live chunks of the layer; ``tombstoned_chunks`` likewise;
* ``commits_behind``: commits in C..H; ``index_lag_seconds``: now minus the committer time of
  the oldest of them (0 when C == H);
* ``layer_last_success_timestamp_seconds``: the layer's ``indexed_at`` in the manifest, which
  the indexer advances on no-op runs too.

Cost grows with files changed, not with chunks held: stale chunks come from one tree diff per
distinct layer commit and a metadata-only store query restricted to the changed paths. The
tracked and tombstoned totals need a count over the layer, so they are reused from the last
published row while the collection's generation (bumped by every index run that wrote chunks)
is unchanged.

The pure part (``stale_by_layer``, ``changed_old_paths``, ``freshness_row``) takes plain values;
``audit`` and ``run_audit`` do the I/O and publish to a ``FreshnessStore`` for ``/metrics``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from freshmark.adapters.git.mirrors import mirror_path
from freshmark.adapters.git.repo import GitRepo, ObjectNotFound
from freshmark.adapters.store.calls import path_filters
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.freshness import (
    FreshnessRow,
    FreshnessStore,
    freshness_store_for,
)
from freshmark.core.config import Config, Layer, load_config
from freshmark.core.errors import FreshmarkError
from freshmark.core.manifest import Manifest
from freshmark.core.overlay import OverlayBase, base_commit_of
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE, TOMBSTONED, ChunkRecord
from freshmark.core.tree import FileChange, changed_paths
from freshmark.services.repos import name_choices, resolve_repo
from freshmark.services.upkeep.drop import BranchState, retire_gone_branch
from freshmark.services.upkeep.status import overlay_row

# Paths per ``$in`` filter; Chroma turns each into SQL variables.
DEFAULT_INTERVAL_SECONDS = Layer("default").interval_seconds


@dataclass(frozen=True)
class LayerStamp:
    """What the manifest says of one layer: its indexed commit and when (Unix seconds)."""

    name: str
    commit: str | None
    indexed_at_seconds: float
    interval_seconds: float


@dataclass(frozen=True)
class LayerCounts:
    """Tracked (live) and tombstoned chunks of one layer at one index generation."""

    tracked_chunks: int
    tombstoned_chunks: int


@dataclass
class AuditReport:
    """Rows that could be measured, and one line per branch that could not."""

    rows: list[FreshnessRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (repo label, branch)
    # (repo, branch) of a branch overlay -> its base and own size (``status.overlay_row``)
    overlays: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # branches deleted from their repository: (repo, branch, retired); not problems
    gone: list[tuple[str, str, bool]] = field(default_factory=list)


# -- pure core --------------------------------------------------------------------------------
def changed_old_paths(changes: Iterable[FileChange]) -> list[str]:
    """Paths as they were at the indexed commit that no longer hold the same file at the head.

    Modified, deleted and renamed-away paths; an added path had no chunks to go stale.
    """
    return sorted({c.old_path for c in changes if c.old_path and c.status != "added"})


def stale_by_layer(records: Iterable[ChunkRecord], changed_paths: Iterable[str]) -> dict[str, int]:
    """Live chunks per layer whose path is among ``changed_paths``."""
    changed = set(changed_paths)
    counts: dict[str, int] = {}
    for record in records:
        if record.status == LIVE and record.path in changed:
            counts[record.layer] = counts.get(record.layer, 0) + 1
    return counts


def parse_timestamp_seconds(iso: str | None) -> float:
    """Unix seconds of an ISO-8601 UTC stamp (``2026-09-29T10:41:00Z``); 0 when absent."""
    if not iso:
        return 0.0
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def layer_stamps(manifest: Manifest, layers: Sequence[Layer]) -> list[LayerStamp]:
    """The layers a manifest has stamped, with the configured intervals.

    A manifest without per-layer stamps stands for every configured layer at its commit.
    Layers the config no longer names keep the default interval.
    """
    intervals = {layer.name: float(layer.interval_seconds) for layer in layers}
    stamped = manifest.layers or {
        layer.name: {"commit": manifest.commit or "", "indexed_at": manifest.indexed_at or ""}
        for layer in layers
    }
    return [
        LayerStamp(
            name=name,
            commit=stamp.get("commit") or None,
            indexed_at_seconds=parse_timestamp_seconds(stamp.get("indexed_at")),
            interval_seconds=intervals.get(name, float(DEFAULT_INTERVAL_SECONDS)),
        )
        for name, stamp in sorted(stamped.items())
    ]


def repo_label(manifest: Manifest, config: Config) -> str:
    """The ``repo`` label of a branch's rows: its name, unless a configured repository owns that
    name as its id and this is another repository (a checkout indexed by path into the same
    store, which took the name first). That one is labelled with the name unique to its key,
    so two repositories never export one series, nor read each other's rows or layers."""
    name = manifest.repo
    if manifest.repo_key == f"id:{name}" or all(repo.id != name for repo in config.repos):
        return name
    return name_choices(manifest.repo_key, Path(manifest.repo_path or name), name)[-1]


def freshness_row(manifest: Manifest, stamp: LayerStamp, *, stale_chunks: int,
                  counts: LayerCounts, commits_behind: int, oldest_unindexed_seconds: float | None,
                  now_seconds: float, fingerprint: str) -> FreshnessRow:
    """Assemble one row; lag is 0 when nothing is unindexed and never negative (clock skew)."""
    lag = 0.0
    if commits_behind and oldest_unindexed_seconds is not None:
        lag = max(0.0, now_seconds - oldest_unindexed_seconds)
    return FreshnessRow(
        repo=manifest.repo,
        branch=manifest.branch,
        layer=stamp.name,
        stale_chunks=min(stale_chunks, counts.tracked_chunks),
        tracked_chunks=counts.tracked_chunks,
        tombstoned_chunks=counts.tombstoned_chunks,
        commits_behind=commits_behind,
        index_lag_seconds=round(lag, 3),
        layer_last_success_timestamp_seconds=stamp.indexed_at_seconds,
        layer_interval_seconds=stamp.interval_seconds,
        audit_timestamp_seconds=round(now_seconds, 3),
        index_fingerprint=fingerprint,
    )


def index_fingerprint(manifest: Manifest, below: str = "") -> str:
    """Changes whenever an index run may have changed the chunk counts of the collection (or,
    for an overlay, of the layers ``below`` it, given as their own fingerprint)."""
    own = f"{manifest.collection}@{manifest.generation}"
    return f"{own}+{below}" if below else own


def fingerprint_of(index: BranchView) -> str:
    below = index.below
    return index_fingerprint(index.manifest, fingerprint_of(below) if below else "")


# -- store and git I/O ------------------------------------------------------------------------
def _records_for(index: BranchView, paths: Sequence[str]) -> list[ChunkRecord]:
    """Chunk metadata (no text, no vectors) of the given paths, in bounded queries.

    Filtering on the path alone and checking status in Python is several times faster than
    adding ``status`` to the filter: Chroma then scans every live chunk of the collection.
    """
    out: list[ChunkRecord] = []
    for where in path_filters(paths):
        out.extend(index.get(where=where, include_text=False))
    return out


def count_layers(index: BranchView,
                 layers: Iterable[str]) -> dict[str, LayerCounts]:
    """Tracked and tombstoned chunks per layer: one count per layer plus the tombstones.

    This is the one part whose cost grows with the chunks held; ``_BranchAudit`` reuses its
    result while the index generation is unchanged.
    """
    tombstoned: dict[str, int] = {}
    for record in index.iter_records(where={"status": TOMBSTONED}, include_text=False):
        tombstoned[record.layer] = tombstoned.get(record.layer, 0) + 1
    return {
        layer: LayerCounts(index.count({"layer": layer}) - tombstoned.get(layer, 0),
                           tombstoned.get(layer, 0))
        for layer in layers
    }


@dataclass
class _BranchAudit:
    """One branch's audit; diffs are shared by layers stamped at the same commit."""

    repo: GitRepo
    index: BranchView
    head: str
    now_seconds: float
    previous: dict[str, FreshnessRow]
    problems: list[str]
    label: str
    layer_names: list[str] = field(default_factory=list)
    carry_counts: bool = False
    _stale: dict[str | None, dict[str, int] | None] = field(default_factory=dict)
    _counted: dict[str, LayerCounts] | None = None

    def stale_counts(self, commit: str | None) -> dict[str, int] | None:
        """Stale chunks per layer for chunks indexed at ``commit``; None if it cannot be diffed."""
        if commit not in self._stale:
            self._stale[commit] = self._diff_stale(commit)
        return self._stale[commit]

    def _diff_stale(self, commit: str | None) -> dict[str, int] | None:
        try:
            paths = set(changed_old_paths(self.repo.diff(commit, self.head))) \
                if commit is not None and commit != self.head else set()
            paths |= self._moved_under_overlay()
        except ObjectNotFound:
            return None
        ordered = sorted(paths)
        return stale_by_layer(_records_for(self.index, ordered), ordered) if ordered else {}

    def _moved_under_overlay(self) -> set[str]:
        """For an overlay: paths the base changed since the overlay was layered on it and the
        overlay does not hold. The base serves its new chunks there, which the branch may lack
        until its next run; the chunks whose file differs at the head count as stale."""
        base = OverlayBase.of(self.index.manifest)
        below_view = self.index.below
        if base is None or below_view is None:
            return set()
        below = below_view.manifest
        moved: set[str] = set()
        for layer, layered_on in base.layered_on.items():
            now = base_commit_of(below, layer)
            if now is not None and base.moved(layer, below):  # moved: the base has a commit
                moved |= changed_paths(self.repo.diff(layered_on, now))
        return moved - self.index.held_paths()

    def counts(self, layer: str) -> tuple[LayerCounts, str]:
        """The layer's counts and the index state they describe. The last row's are reused while
        that state is unchanged, or always with ``carry_counts`` (a refresh right after a run,
        which must not count the whole layer: the row keeps the old state's fingerprint, so the
        next scheduled audit recounts)."""
        last = self.previous.get(layer)
        fingerprint = fingerprint_of(self.index)
        if last is not None and (self.carry_counts or last.index_fingerprint == fingerprint):
            return LayerCounts(last.tracked_chunks, last.tombstoned_chunks), last.index_fingerprint
        if self._counted is None:
            self._counted = count_layers(self.index, self.layer_names)
        return self._counted.get(layer, LayerCounts(0, 0)), fingerprint

    def behind(self, commit: str | None) -> tuple[int, float | None]:
        if commit == self.head:
            return 0, None
        try:
            oldest = self.repo.oldest_unindexed_commit_time(commit, self.head)
            behind = self.repo.commits_between(commit, self.head)
        except ObjectNotFound:  # the stamp's commit is gone: all of the head's history is new
            return self.repo.commits_between(None, self.head), None
        return behind, oldest.timestamp() if oldest is not None else None

    def row(self, stamp: LayerStamp) -> FreshnessRow:
        manifest = self.index.manifest
        counts, fingerprint = self.counts(stamp.name)
        stale = self.stale_counts(stamp.commit)
        if stale is None:
            self.problems.append(
                f"{manifest.repo}@{manifest.branch} layer {stamp.name}: indexed commit "
                f"{(stamp.commit or '')[:12]} is gone from the repository (force push?); "
                "every live chunk counts as stale until the layer is re-indexed"
            )
        commits_behind, oldest = self.behind(stamp.commit)
        row = freshness_row(
            manifest, stamp,
            stale_chunks=counts.tracked_chunks if stale is None else stale.get(stamp.name, 0),
            counts=counts, commits_behind=commits_behind, oldest_unindexed_seconds=oldest,
            now_seconds=self.now_seconds, fingerprint=fingerprint,
        )
        return row if row.repo == self.label else replace(row, repo=self.label)


def _layers_for(config: Config, repo_name: str) -> tuple[Layer, ...]:
    for repo in config.repos:
        if repo.id == repo_name and repo.layers:
            return repo.layers
    return config.layers


def _repo_path(manifest: Manifest, settings: Settings) -> Path:
    if manifest.repo_path:
        return Path(manifest.repo_path)
    return mirror_path(settings, manifest.repo_key.removeprefix("id:"))


def audit_branch(repo: GitRepo, index: BranchView, config: Config, *,
                 now_seconds: float, previous: Callable[[str], list[FreshnessRow]],
                 problems: list[str], carry_counts: bool = False) -> list[FreshnessRow]:
    """Rows for every stamped layer of one branch collection, labelled by ``repo_label``;
    ``previous`` gives the last rows published under a label (``carry_counts``: see
    ``_BranchAudit.counts``)."""
    manifest = index.manifest
    label = repo_label(manifest, config)
    stamps = layer_stamps(manifest, _layers_for(config, label))
    last = {row.layer: row for row in previous(label) if row.branch == manifest.branch}
    run = _BranchAudit(repo, index, repo.branch_head(manifest.branch), now_seconds, last,
                       problems, label, [stamp.name for stamp in stamps], carry_counts)
    return [run.row(stamp) for stamp in stamps]


def _select_manifests(store: Store, settings: Settings, config: Config, target: str | None,
                      branch: str | None) -> list[Manifest]:
    if target is None:
        manifests = store.list_manifests()
    else:
        key = resolve_repo(target, settings, config, store).key
        manifests = [m for m in store.list_manifests(key) if m.repo_key == key]
    return [m for m in manifests if branch is None or m.branch == branch]


def _previous_rows(freshness: FreshnessStore | None) -> list[FreshnessRow]:
    if freshness is None:
        return []
    try:
        return freshness.load()
    except (OSError, ValueError, KeyError, TypeError):
        return []  # an unreadable cache only costs a recount


def _by_repo(rows: Iterable[FreshnessRow]) -> dict[str, list[FreshnessRow]]:
    grouped: dict[str, list[FreshnessRow]] = {}
    for row in rows:
        grouped.setdefault(row.repo, []).append(row)
    return grouped


def audit(settings: Settings, config: Config | None = None, *, target: str | None = None,
          branch: str | None = None, store: Store | None = None,
          freshness: FreshnessStore | None = None, now_seconds: float | None = None,
          retire: BranchState | None = None) -> AuditReport:
    """Audit every indexed branch (or those of ``target``, a path or repo id; or one ``branch``).

    ``freshness`` is read for the last published counts (reused while the index generation is
    unchanged); it is not written here. A branch deleted from its repository is no problem: it
    is listed in ``gone`` and, with ``retire`` (where its state lives), its index is dropped
    (``drop.retire_gone_branch``). A branch that cannot be audited (repository gone) becomes a
    line in ``problems`` and the others still get their rows.
    """
    config = config or load_config(settings.config_path)
    store = store or Store.open(settings)
    now = time.time() if now_seconds is None else now_seconds
    previous = _by_repo(_previous_rows(freshness))
    report = AuditReport()
    repos: dict[str, GitRepo] = {}
    branches: dict[str, set[str]] = {}
    for manifest in _select_manifests(store, settings, config, target, branch):
        try:
            repo = repos.get(manifest.repo_key) or GitRepo.open(_repo_path(manifest, settings))
            repos[manifest.repo_key] = repo
            heads = branches.setdefault(manifest.repo_key, set(repo.branches()))
            if manifest.branch not in heads:
                retired = retire is not None and retire_gone_branch(retire, manifest)
                report.gone.append((manifest.repo, manifest.branch, retired))
                continue
            index = store.branch(manifest.repo_key, manifest.branch)
            if index is None:
                continue  # dropped between listing and reading
            overlay = overlay_row(index)
            if overlay is not None:
                report.overlays[(manifest.repo, manifest.branch)] = overlay
            report.rows.extend(audit_branch(
                repo, index, config, now_seconds=now,
                previous=lambda label: previous.get(label, []), problems=report.problems,
            ))
        except FreshmarkError as exc:
            report.problems.append(f"{manifest.repo}@{manifest.branch}: {exc}")
            report.failed.append((repo_label(manifest, config), manifest.branch))
    for location, error in store.unreachable.items():
        report.problems.append(f"Chroma server {location}: its repositories were not "
                               f"audited: {error}")
    return report


def run_audit(settings: Settings, config: Config | None = None, redis: Any | None = None,
              store: Store | None = None, now_seconds: float | None = None) -> AuditReport:
    """The scheduled job: audit everything and publish it for ``/metrics``.

    Run it where the mirrors are, right after they were fetched (the reconcile job): the branch
    heads it compares against are the mirror's. Publishes to the deployment's freshness store
    (``freshness_store_for``: Redis with ``FRESHMARK_REDIS_URL``, through ``redis`` if given,
    else the file under ``settings.state_dir``). A full audit replaces what was
    published, so retired branches stop being exported; a branch that failed this time keeps
    its last rows, whose old ``audit_timestamp_seconds`` lets an alert see it.
    """
    freshness = freshness_store_for(settings, redis)
    store = store or Store.open(settings)
    config = config or load_config(settings.config_path)
    retire = BranchState.open(settings, store, redis, config=config)
    report = audit(settings, config, store=store, freshness=freshness, now_seconds=now_seconds,
                   retire=retire)
    publish_report(freshness, report, full=True)
    return report


def refresh_branch(settings: Settings, config: Config, store: Store,
                   freshness: FreshnessStore, repo_key: str, branch: str,
                   now_seconds: float | None = None) -> list[FreshnessRow]:
    """Measure one branch again right after an index run and publish its rows.

    Without it ``/metrics`` shows the staleness from before the run until the next scheduled
    audit (every reconcile, 30 s by default): a layer that caught up within a second would read
    stale for half a minute. Only the cheap parts are measured (the diff from each layer's
    stamp to the head, commits behind); the chunk totals are carried from the branch's last
    rows, so the refresh costs the diff, not the layer. Returns the rows published (none for a
    branch no longer indexed).
    """
    index = store.branch(repo_key, branch)
    if index is None:
        return []
    manifest = index.manifest
    repo = GitRepo.open(_repo_path(manifest, settings))
    rows = audit_branch(repo, index, config,
                        now_seconds=time.time() if now_seconds is None else now_seconds,
                        previous=lambda label: freshness.load_branch(label, branch),
                        problems=[], carry_counts=True)
    freshness.publish(rows)
    return rows


def publish_report(freshness: FreshnessStore, report: AuditReport, full: bool) -> None:
    """Publish rows; a ``full`` audit replaces everything but keeps failed branches' last rows."""
    if not full:
        freshness.publish(report.rows)
        return
    failed = set(report.failed)
    kept = [r for r in _previous_rows(freshness) if (r.repo, r.branch) in failed]
    freshness.publish([*report.rows, *kept], replace_all=True)

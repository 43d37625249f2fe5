"""The freshness auditor on real repositories indexed by the real indexer.

Expected figures are computed here independently of the auditor: changed paths from the git
CLI (``git diff --name-status --no-renames``), commit counts from ``git rev-list``, and chunk
counts by reading every stamped record of the branch collection.
"""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from repo_builder import RepoBuilder, git

from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry import exposition as metrics
from freshmark.adapters.telemetry.freshness import FileFreshnessStore, FreshnessRow
from freshmark.core.config import Config, Layer, RepoConfig
from freshmark.core.manifest import Manifest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tree import FileChange
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.upkeep.audit import (
    LayerCounts,
    audit,
    changed_old_paths,
    freshness_row,
    index_fingerprint,
    layer_stamps,
    refresh_branch,
    run_audit,
    stale_by_layer,
)

CONFIG = Config(layers=(
    Layer("hot", ("src/**",), interval_seconds=300, queue="hot"),
    Layer("infra", ("**",), interval_seconds=86400, queue="infra"),
))
T0 = "2026-03-10T09:00:00Z"


def functions(prefix: str, count: int) -> str:
    return "".join(f"def {prefix}_{i}(x):\n    return x + {i}\n\n\n" for i in range(count))


def build_shop(repo: RepoBuilder) -> str:
    for name, count in (("orders", 4), ("payments", 3), ("users", 2), ("stock", 3)):
        repo.write(f"src/{name}.py", functions(name, count))
    repo.write("infra/deploy.py", functions("deploy", 3))
    repo.write("infra/ci.py", functions("ci", 2))
    return repo.commit("initial", when=T0)


def change_shop(repo: RepoBuilder) -> None:
    """Modify one hot file, delete one, rename one, add one; modify one infra file."""
    repo.write("src/orders.py", functions("orders", 5))
    repo.delete("src/payments.py")
    repo.rename("src/users.py", "src/accounts.py")
    repo.write("src/new.py", functions("new", 2))
    repo.write("infra/deploy.py", functions("deploy", 4))


# -- pure core --------------------------------------------------------------------------------
def test_old_sides_of_modified_deleted_and_renamed_files_are_changed_but_added_are_not() -> None:
    changes = [
        FileChange("modified", "a.py", "a.py", "1", "2"),
        FileChange("deleted", "b.py", None, "3", None),
        FileChange("renamed", "c.py", "d.py", "4", "5", similarity=90),
        FileChange("added", None, "e.py", None, "6"),
    ]
    assert changed_old_paths(changes) == ["a.py", "b.py", "c.py"]


def test_only_live_chunks_of_changed_paths_count_as_stale_per_layer() -> None:
    def chunk(path: str, layer: str, status: str = "live") -> ChunkRecord:
        return ChunkRecord("r", "main", "c" * 40, path, "f", 1, 2, "t", "b", "s", layer=layer,
                           status=status)

    records = [chunk("a.py", "hot"), chunk("a.py", "hot"), chunk("a.py", "hot", "tombstoned"),
               chunk("b.py", "infra"), chunk("z.py", "hot")]
    assert stale_by_layer(records, ["a.py", "b.py"]) == {"hot": 2, "infra": 1}


def test_lag_is_zero_at_the_head_and_never_negative() -> None:
    manifest = Manifest(repo="r", repo_key="id:r", branch="main", embedder="e", collection="c",
                        layers={"hot": {"commit": "c" * 40, "indexed_at": "2026-01-01T00:00:00Z"}})
    stamp = layer_stamps(manifest, CONFIG.layers)[0]

    def lag(behind: int, oldest: float | None, now: float) -> float:
        return freshness_row(manifest, stamp, stale_chunks=1, counts=LayerCounts(5, 0),
                             commits_behind=behind, oldest_unindexed_seconds=oldest,
                             now_seconds=now, fingerprint="c@1").index_lag_seconds

    assert lag(0, None, 100.0) == 0
    assert lag(2, 40.0, 100.0) == 60
    assert lag(2, 140.0, 100.0) == 0  # clock skew between hosts
    assert stamp.interval_seconds == 300
    assert stamp.indexed_at_seconds == _iso_seconds("2026-01-01T00:00:00Z")


# -- real repositories, real indexer ----------------------------------------------------------
@pytest.fixture
def settings(fm_home: Path) -> Settings:
    return Settings.from_env()


@pytest.fixture
def shop(make_repo, settings: Settings) -> RepoBuilder:
    repo = make_repo("shop")
    build_shop(repo)
    index_repo(IndexRequest(repo.path), settings=settings, config=CONFIG)
    return repo


def live_chunks_by_layer_and_path(settings: Settings, repo: RepoBuilder,
                                  branch: str = "main") -> Counter[tuple[str, str]]:
    index = Store.open(settings).branch(f"path:{repo.path.resolve()}", branch)
    assert index is not None
    return Counter((r.layer, r.path) for r in index.iter_records(include_text=False)
                   if r.status == "live")


def tombstoned_by_layer(settings: Settings, repo: RepoBuilder) -> Counter[str]:
    index = Store.open(settings).branch(f"path:{repo.path.resolve()}", "main")
    assert index is not None
    return Counter(r.layer for r in index.iter_records(include_text=False)
                   if r.status == "tombstoned")


def stale_paths_by_git_cli(repo: RepoBuilder, old: str, new: str) -> set[str]:
    out = git(repo.path, "diff", "--name-status", "--no-renames", old, new)
    return {line.split("\t")[1] for line in out.splitlines() if line[0] in "MD"}


def rows_by_layer(rows: list[FreshnessRow]) -> dict[str, FreshnessRow]:
    return {r.layer: r for r in rows}


def test_fresh_index_has_no_stale_chunks_and_no_lag(shop: RepoBuilder, settings: Settings) -> None:
    report = audit(settings, CONFIG)

    live = live_chunks_by_layer_and_path(settings, shop)
    rows = rows_by_layer(report.rows)
    assert set(rows) == {"hot", "infra"}
    for layer, row in rows.items():
        assert row.repo == "shop" and row.branch == "main"
        assert row.stale_chunks == 0
        assert row.tracked_chunks == sum(n for (lay, _), n in live.items() if lay == layer) > 0
        assert row.commits_behind == 0 and row.index_lag_seconds == 0
    assert report.problems == []


def test_changed_deleted_and_renamed_files_count_as_stale_per_layer(
    store_env: str, make_repo, settings: Settings
) -> None:
    repo = make_repo("shop")
    indexed = build_shop(repo)
    index_repo(IndexRequest(repo.path), settings=settings, config=CONFIG)
    change_shop(repo)
    head = repo.commit("change")

    rows = rows_by_layer(audit(settings, CONFIG).rows)

    live = live_chunks_by_layer_and_path(settings, repo)
    stale_paths = stale_paths_by_git_cli(repo, indexed, head)
    for layer in ("hot", "infra"):
        expected = sum(n for (lay, path), n in live.items() if lay == layer and path in stale_paths)
        assert rows[layer].stale_chunks == expected > 0
        assert rows[layer].tracked_chunks == sum(n for (lay, _), n in live.items() if lay == layer)


def test_added_file_makes_nothing_stale(shop: RepoBuilder, settings: Settings) -> None:
    shop.write("src/brand_new.py", functions("fresh", 3))
    shop.commit("add a file")

    rows = rows_by_layer(audit(settings, CONFIG).rows)

    assert rows["hot"].stale_chunks == 0
    assert rows["hot"].commits_behind == 1


def test_commits_behind_and_lag_run_from_the_first_unindexed_commit(
    shop: RepoBuilder, settings: Settings
) -> None:
    indexed = shop.head()
    shop.write("src/orders.py", functions("orders", 6)).commit("one", when="2026-03-11T10:00:00Z")
    shop.write("src/stock.py", functions("stock", 1)).commit("two", when="2026-03-11T12:00:00Z")
    head = shop.commit("three", when="2026-03-12T08:00:00Z")
    now = 1_773_331_200.0  # 2026-03-12T16:00:00Z

    rows = rows_by_layer(audit(settings, CONFIG, now_seconds=now).rows)

    first_unindexed = min(
        int(t) for t in git(shop.path, "log", "--format=%ct", f"{indexed}..{head}").split()
    )
    assert rows["hot"].commits_behind == int(
        git(shop.path, "rev-list", "--count", f"{indexed}..{head}")
    ) == 3
    assert rows["hot"].index_lag_seconds == now - first_unindexed == 30 * 3600


def test_reindex_clears_staleness_and_counts_tombstones(shop: RepoBuilder,
                                                        settings: Settings) -> None:
    change_shop(shop)
    shop.commit("change")
    index_repo(IndexRequest(shop.path), settings=settings, config=CONFIG)

    rows = rows_by_layer(audit(settings, CONFIG).rows)

    tombstoned = tombstoned_by_layer(settings, shop)
    assert tombstoned["hot"] > 0
    for layer in ("hot", "infra"):
        assert rows[layer].stale_chunks == 0 and rows[layer].commits_behind == 0
        assert rows[layer].tombstoned_chunks == tombstoned[layer]


def test_last_success_is_the_layer_stamp_and_advances_on_noop_runs(
    shop: RepoBuilder, settings: Settings
) -> None:
    before = rows_by_layer(audit(settings, CONFIG).rows)["hot"]
    time.sleep(1.1)  # stamps have one-second resolution
    index_repo(IndexRequest(shop.path), settings=settings,
               config=CONFIG)  # nothing changed: a no-op run

    after = rows_by_layer(audit(settings, CONFIG).rows)["hot"]
    index = Store.open(settings).branch(f"path:{shop.path.resolve()}", "main")
    assert index is not None
    stamp = index.manifest.layers["hot"]["indexed_at"]
    assert after.layer_last_success_timestamp_seconds == pytest.approx(
        _iso_seconds(stamp)
    )
    assert after.layer_last_success_timestamp_seconds > before.layer_last_success_timestamp_seconds


def _iso_seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_layer_interval_comes_from_the_config(shop: RepoBuilder, settings: Settings) -> None:
    rows = rows_by_layer(audit(settings, CONFIG).rows)

    assert rows["hot"].layer_interval_seconds == 300
    assert rows["infra"].layer_interval_seconds == 86400


def test_counts_are_reused_while_the_index_generation_is_unchanged(
    shop: RepoBuilder, settings: Settings, tmp_path: Path
) -> None:
    first = audit(settings, CONFIG).rows
    cached = [_with(r, tracked_chunks=999) for r in first]
    store = FileFreshnessStore(tmp_path / "state")
    store.publish(cached)

    reused = rows_by_layer(audit(settings, CONFIG, freshness=store).rows)
    store.publish([_with(r, index_fingerprint="other@0") for r in cached])
    recounted = rows_by_layer(audit(settings, CONFIG, freshness=store).rows)

    assert reused["hot"].tracked_chunks == 999
    assert recounted["hot"].tracked_chunks == rows_by_layer(first)["hot"].tracked_chunks


def _with(row: FreshnessRow, **changes: object) -> FreshnessRow:
    data = {**row.to_json(), **changes}
    data.pop("stale_ratio")
    return FreshnessRow.from_json(data)


def test_new_index_run_invalidates_reused_counts(shop: RepoBuilder, settings: Settings) -> None:
    index = Store.open(settings).branch(f"path:{shop.path.resolve()}", "main")
    assert index is not None
    before = index_fingerprint(index.manifest)
    shop.write("src/stock.py", functions("stock", 7)).commit("more stock")
    index_repo(IndexRequest(shop.path), settings=settings, config=CONFIG)

    index = Store.open(settings).branch(f"path:{shop.path.resolve()}", "main")
    assert index is not None
    assert index_fingerprint(index.manifest) != before


def test_a_refresh_after_a_run_publishes_the_branch_fresh_without_waiting_for_the_audit(
    shop: RepoBuilder, settings: Settings, tmp_path: Path
) -> None:
    freshness = FileFreshnessStore(tmp_path / "state")
    shop.write("src/orders.py", functions("orders", 6)).commit("more orders")
    freshness.publish(audit(settings, CONFIG).rows)
    assert rows_by_layer(freshness.load())["hot"].stale_chunks > 0
    index_repo(IndexRequest(shop.path), settings=settings, config=CONFIG)

    refreshed = refresh_branch(settings, CONFIG, Store.open(settings), freshness,
                               f"path:{shop.path.resolve()}", "main")

    published = rows_by_layer(freshness.load_branch("shop", "main"))
    assert published == rows_by_layer(refreshed)
    for layer in ("hot", "infra"):
        assert published[layer].stale_chunks == 0 and published[layer].commits_behind == 0


def test_a_refresh_carries_the_chunk_totals_and_leaves_the_recount_to_the_next_audit(
    shop: RepoBuilder, settings: Settings, tmp_path: Path
) -> None:
    freshness = FileFreshnessStore(tmp_path / "state")
    freshness.publish(audit(settings, CONFIG).rows)
    before = rows_by_layer(freshness.load())["hot"]
    shop.write("src/brand_new.py", functions("fresh", 4)).commit("four more functions")
    index_repo(IndexRequest(shop.path), settings=settings, config=CONFIG)

    carried = rows_by_layer(refresh_branch(settings, CONFIG, Store.open(settings), freshness,
                                           f"path:{shop.path.resolve()}", "main"))["hot"]
    recounted = rows_by_layer(audit(settings, CONFIG, freshness=freshness).rows)["hot"]

    assert (carried.tracked_chunks, carried.index_fingerprint) == (
        before.tracked_chunks, before.index_fingerprint)
    assert recounted.tracked_chunks == before.tracked_chunks + 4
    assert recounted.index_fingerprint != before.index_fingerprint


def test_indexed_commit_lost_to_a_force_push_counts_everything_stale(
    shop: RepoBuilder, settings: Settings
) -> None:
    shop.write("src/orders.py", functions("orders", 9)).commit("to be rewritten")
    index_repo(IndexRequest(shop.path), settings=settings, config=CONFIG)
    git(shop.path, "reset", "-q", "--hard", "HEAD~1")
    shop.write("src/stock.py", functions("stock", 8)).commit("rewritten history")
    git(shop.path, "reflog", "expire", "--expire=now", "--all")
    git(shop.path, "gc", "-q", "--prune=now")

    report = audit(settings, CONFIG)

    rows = rows_by_layer(report.rows)
    assert rows["hot"].stale_chunks == rows["hot"].tracked_chunks > 0
    assert any("gone from the repository" in p for p in report.problems)


def test_a_repository_that_moved_is_a_problem_and_others_are_still_audited(
    make_repo, settings: Settings
) -> None:
    kept, moved = make_repo("kept"), make_repo("moved")
    for repo in (kept, moved):
        build_shop(repo)
        index_repo(IndexRequest(repo.path), settings=settings, config=CONFIG)
    shutil.move(str(moved.path), str(moved.path.parent / "elsewhere"))

    report = audit(settings, CONFIG)

    assert {r.repo for r in report.rows} == {"kept"}
    assert report.failed == [("moved", "main")]
    assert len(report.problems) == 1 and "moved@main" in report.problems[0]


def test_target_and_branch_select_what_is_audited(shop: RepoBuilder, settings: Settings,
                                                  make_repo) -> None:
    shop.branch("feature/x").checkout("feature/x")
    shop.write("src/orders.py", functions("orders", 1)).commit("feature work")
    index_repo(IndexRequest(shop.path, branch="feature/x"), settings=settings, config=CONFIG)
    other = make_repo("other")
    build_shop(other)
    index_repo(IndexRequest(other.path), settings=settings, config=CONFIG)

    by_path = audit(settings, CONFIG, target=str(shop.path))
    one_branch = audit(settings, CONFIG, target=str(shop.path), branch="feature/x")

    assert {(r.repo, r.branch) for r in by_path.rows} == {("shop", "main"), ("shop", "feature/x")}
    assert {(r.repo, r.branch) for r in one_branch.rows} == {("shop", "feature/x")}


def test_scheduled_audit_publishes_gauges_without_paths_or_shas(
    shop: RepoBuilder, settings: Settings
) -> None:
    change_shop(shop)
    head = shop.commit("change")

    report = run_audit(settings, CONFIG)

    body = metrics.render_latest(store=FileFreshnessStore(settings.state_dir))[0].decode()
    assert f'freshmark_stale_chunks{{branch="main",layer="hot",repo="shop"}} ' \
           f'{float(rows_by_layer(report.rows)["hot"].stale_chunks)}' in body
    label_values = set(re.findall(r'="([^"]*)"', body))
    assert not any(re.fullmatch(r"[0-9a-f]{40}", v) for v in label_values)
    assert head not in body and str(shop.path) not in body


def test_a_checkout_named_like_a_configured_repository_exports_series_of_its_own(
    shop: RepoBuilder, make_repo, settings: Settings
) -> None:
    # The checkout took the name "shop" first; the operator's config then names a repository
    # "shop" in the same store. Prometheus refuses two series with one label set.
    configured = make_repo("upstream")
    configured.write("src/orders.py", functions("orders", 2)).commit("two orders")
    config = Config(layers=CONFIG.layers, repos=(
        RepoConfig(id="shop", url=f"file://{configured.path}"),))
    index_repo(IndexRequest(configured.path, branch="main", repo_id="shop"),
               settings=settings, config=config)

    run_audit(settings, config)

    body = metrics.render_latest(store=FileFreshnessStore(settings.state_dir))[0].decode()
    series = re.findall(r'^freshmark_tracked_chunks\{branch="main",layer="(\w+)",repo="([^"]+)"\} '
                        r'(\S+)$', body, re.M)
    by_repo: dict[str, dict[str, float]] = {}
    for layer, repo, value in series:
        by_repo.setdefault(repo, {})[layer] = float(value)
    assert len(series) == 4 and set(by_repo) == {"shop", next(r for r in by_repo if r != "shop")}
    assert by_repo.pop("shop") == {"hot": 2.0, "infra": 0.0}
    (checkout,) = by_repo.values()
    live = live_chunks_by_layer_and_path(settings, shop)
    assert checkout == {layer: float(sum(n for (lay, _), n in live.items() if lay == layer))
                        for layer in ("hot", "infra")}

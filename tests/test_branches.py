"""On-demand branch requests and the retirement of deleted or idle branches."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from cluster_support import Recorder

from freshmark.adapters import keys
from freshmark.adapters.git import names
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.freshness import FreshnessRow
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.core.errors import BadInput, ConfigError
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.settings import Settings
from freshmark.services.upkeep import branches
from freshmark.services.upkeep.drop import BranchState

DAY = 86400.0
NOW = 1_800_000_000.0
SHOP = RepoConfig("shop", "file:///nowhere/shop.git", ("main", "release"))
CONFIG = Config(repos=(SHOP,), branch_idle_seconds=int(7 * DAY))


def manifest(branch: str, repo_key: str = "id:shop", used_days_ago: float = 0.0) -> Manifest:
    used = datetime.fromtimestamp(NOW - used_days_ago * DAY, UTC).isoformat().replace("+00:00", "Z")
    return Manifest(repo=repo_key.removeprefix("id:"), repo_key=repo_key, branch=branch,
                    embedder="hashing", collection=collection_name(repo_key, branch),
                    created_at=used, indexed_at=used, last_used_at=used)


@pytest.mark.parametrize("name", ["main", "feature/login", "release-1.2", "users/ann/fix_3"])
def test_ordinary_branch_names_are_valid(name: str) -> None:
    assert names.is_valid_branch_name(name)


@pytest.mark.parametrize("name", ["", "../x", "a..b", "-x", "x.lock", "a b", "a:b", "x" * 201,
                                  "tab\there", "end/"])
def test_hostile_branch_names_are_invalid(name: str) -> None:
    assert not names.is_valid_branch_name(name)


def test_new_branch_is_seeded_from_the_first_tracked_branch() -> None:
    assert branches.default_base(SHOP, "feature/x") == "main"
    assert branches.default_base(SHOP, "main") == ""


def test_on_demand_request_queues_one_job_on_the_ondemand_queue(redis_client: redis.Redis) -> None:
    send = Recorder()
    result = branches.request_branch_index(redis_client, CONFIG, "shop", "feature/x", send)
    assert send.sent == [(jobspec.KIND_INDEX, "index:shop:feature/x:*", result.job_id, "ondemand")]
    assert jobs.job_state(redis_client, result.job_key)["base_branch"] == "main"
    assert branches.is_active(redis_client, "shop", "feature/x")


def test_on_demand_request_takes_an_explicit_base(redis_client: redis.Redis) -> None:
    result = branches.request_branch_index(redis_client, CONFIG, "shop", "hotfix", Recorder(),
                                           base="release")
    assert jobs.job_state(redis_client, result.job_key)["base_branch"] == "release"


def test_on_demand_request_refuses_an_invalid_branch(redis_client: redis.Redis) -> None:
    with pytest.raises(BadInput):
        branches.request_branch_index(redis_client, CONFIG, "shop", "../../etc", Recorder())
    assert jobs.pending_jobs(redis_client) == []


def test_on_demand_request_for_an_unknown_repo_fails(redis_client: redis.Redis) -> None:
    with pytest.raises(ConfigError):
        branches.request_branch_index(redis_client, CONFIG, "nope", "x", Recorder())


def _plan(manifests: list[Manifest], heads: dict[str, str] | None,
          requested: dict[str, float] | None = None) -> list[tuple[str, str]]:
    planned = branches.plan_retirements(manifests, CONFIG, {"shop": heads}, requested or {}, NOW)
    return [(r.branch, r.reason) for r in planned]


def test_branch_gone_from_the_mirror_is_retired_as_deleted() -> None:
    assert _plan([manifest("feature")], {"main": "a" * 40}) == [("feature", "deleted")]


def test_tracked_branch_deleted_on_the_remote_is_retired_too() -> None:
    assert _plan([manifest("release")], {"main": "a" * 40}) == [("release", "deleted")]


def test_untracked_branch_idle_past_the_limit_is_retired() -> None:
    heads = {"main": "a" * 40, "old": "b" * 40}
    assert _plan([manifest("old", used_days_ago=8)], heads) == [("old", "idle")]


def test_tracked_branch_is_never_retired_for_idleness() -> None:
    assert _plan([manifest("main", used_days_ago=400)], {"main": "a" * 40}) == []


def test_a_recent_request_keeps_an_old_branch() -> None:
    requested = {keys.branch_activity_field("shop", "old"): NOW - DAY}
    assert _plan([manifest("old", used_days_ago=30)], {"old": "b" * 40}, requested) == []


def test_unreadable_mirror_means_idleness_only() -> None:
    stale = [manifest("gone-maybe", used_days_ago=1), manifest("old", used_days_ago=9)]
    assert _plan(stale, None) == [("old", "idle")]


def test_collections_of_unconfigured_repos_are_left_alone() -> None:
    local = manifest("main", repo_key="path:/home/dev/shop", used_days_ago=400)
    assert _plan([local], {"main": "a" * 40}) == []


def test_retire_drops_the_collection_and_the_activity(tmp_path: Path,
                                                      redis_client: redis.Redis) -> None:
    settings = Settings(home=tmp_path / "home")
    store = Store.open(settings)
    store.create_branch(manifest("feature"))
    branches.touch_activity(redis_client, "shop", "feature")
    retired = branches.Retirement("shop", "id:shop", "feature", "deleted")
    assert branches.retire(BranchState.open(settings, store, redis_client, config=CONFIG), retired)
    assert store.branch("id:shop", "feature") is None
    assert not branches.is_active(redis_client, "shop", "feature")


def test_retire_stops_exporting_the_branch_freshness(tmp_path: Path,
                                                     redis_client: redis.Redis) -> None:
    settings = Settings(home=tmp_path / "home")
    store = Store.open(settings)
    store.create_branch(manifest("feature"))
    state = BranchState.open(settings, store, redis_client, config=CONFIG)
    state.freshness.publish([FreshnessRow("shop", "feature", "default", 0, 1, 0, 0, 0.0, 0.0,
                                          60.0, 0.0)])
    assert branches.retire(state, branches.Retirement("shop", "id:shop", "feature", "deleted"))
    assert state.freshness.load() == []


def test_retire_keeps_a_branch_an_index_run_holds(tmp_path: Path,
                                                  redis_client: redis.Redis) -> None:
    settings = Settings(home=tmp_path / "home")
    store = Store.open(settings)
    store.create_branch(manifest("feature"))
    state = BranchState.open(settings, store, redis_client, config=CONFIG)
    state = dataclasses.replace(state, guard=dataclasses.replace(state.guard, wait_seconds=0.2))
    layer = CONFIG.layers[0].name
    redis_client.set(keys.layer_lock("shop", "feature", layer), "another-host:1:run")

    kept = branches.retire(state, branches.Retirement("shop", "id:shop", "feature", "idle"))

    assert not kept
    assert store.branch("id:shop", "feature") is not None
    assert not redis_client.exists(keys.branch_wants("shop", "feature"))

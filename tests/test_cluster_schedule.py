"""The layered schedule, the single-scheduler lock and the reconcile plan."""

from __future__ import annotations

from dataclasses import replace

import redis
from cluster_support import Recorder

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.adapters.queue.scheduler_lock import SchedulerLock
from freshmark.adapters.telemetry.layer_advice import publish_advice
from freshmark.core import jobspec
from freshmark.core.config import Config, Layer, RepoConfig
from freshmark.core.dirstats import LayerAdvice
from freshmark.core.manifest import Manifest
from freshmark.services.upkeep.reconcile import plan_repo
from scheduler.schedule import Scheduler, due_entries, schedule_entries

HOT = Layer("hot", ("src/**",), 300, "hot")
INFRA = Layer("infra", ("**",), 86400, "infra")
SHOP = RepoConfig("shop", "file:///nowhere/shop.git", ("main", "release"))
CONFIG = Config(layers=(HOT, INFRA), repos=(SHOP,), reconcile_interval_seconds=120)
HEAD, OLD = "a" * 40, "b" * 40


def test_each_layer_rebuilds_every_tracked_branch_on_its_own_queue() -> None:
    entries = {e.name: e for e in schedule_entries(CONFIG)}
    assert entries["layer:hot"].interval_seconds == 300
    assert entries["layer:infra"].interval_seconds == 86400
    assert {(s.branch, s.queue) for s in entries["layer:infra"].specs} == {
        ("main", "infra"), ("release", "infra")}


def test_reconcile_and_retirement_run_on_the_maintenance_queue() -> None:
    entries = {e.name: e for e in schedule_entries(CONFIG)}
    assert entries["reconcile"].interval_seconds == 120
    assert entries["reconcile"].specs[0].queue == jobspec.QUEUE_MAINTENANCE
    assert entries["retire_idle"].specs[0].kind == jobspec.KIND_RETIRE_IDLE


def test_hot_layer_is_due_long_before_infrastructure() -> None:
    entries = schedule_entries(CONFIG)
    last = {e.name: 1000.0 for e in entries}
    assert [e.name for e in due_entries(entries, last, 1000.0 + 301)] == ["layer:hot", "reconcile"]


def test_advice_shortens_a_layer_within_its_floor_and_never_lengthens_it() -> None:
    entries = {e.name: e for e in schedule_entries(CONFIG, {"hot": 10, "infra": 999_999})}
    assert entries["layer:hot"].interval_seconds == 75  # a quarter of 300 s is the floor
    assert entries["layer:infra"].interval_seconds == 86400


def test_a_scheduler_with_the_switch_on_takes_the_published_advice(
        redis_client: redis.Redis) -> None:
    advice = LayerAdvice("shop", "main", "src/orders/", "hot", 300, 100, 0.4, 50)
    publish_advice(redis_client, [advice])
    adaptive = Scheduler(redis_client, replace(CONFIG, adapt_layer_intervals=True), Recorder())
    adaptive.tick(now=5000.0)
    assert adaptive.tick(now=5000.0 + 101).fired == ("layer:hot",)


def test_a_scheduler_with_the_switch_off_ignores_the_advice(redis_client: redis.Redis) -> None:
    advice = LayerAdvice("shop", "main", "src/orders/", "hot", 300, 100, 0.4, 50)
    publish_advice(redis_client, [advice])
    plain = Scheduler(redis_client, CONFIG, Recorder())
    plain.tick(now=5000.0)
    assert plain.tick(now=5000.0 + 101).fired == ()


def test_only_one_of_two_schedulers_holds_the_lock(redis_client: redis.Redis) -> None:
    first, second = SchedulerLock(redis_client), SchedulerLock(redis_client)
    assert first.hold() and not second.hold()
    assert first.hold()  # renewing its own lock


def test_standby_takes_over_when_the_active_scheduler_releases(redis_client: redis.Redis) -> None:
    first, second = SchedulerLock(redis_client), SchedulerLock(redis_client)
    first.hold()
    first.release()
    assert second.hold() and not first.hold()


def test_standby_scheduler_sends_nothing(redis_client: redis.Redis) -> None:
    active_send, standby_send = Recorder(), Recorder()
    active = Scheduler(redis_client, CONFIG, active_send)
    standby = Scheduler(redis_client, CONFIG, standby_send)
    assert active.tick(now=5000.0).leader and not standby.tick(now=5000.0).leader
    assert standby_send.sent == [] and active_send.sent


def test_first_tick_fires_everything_and_the_next_nothing(redis_client: redis.Redis) -> None:
    send = Recorder()
    sched = Scheduler(redis_client, CONFIG, send)
    first = sched.tick(now=5000.0)
    assert set(first.fired) == {"layer:hot", "layer:infra", "reconcile", "retire_idle"}
    assert sched.tick(now=5001.0).fired == ()


def test_last_runs_survive_a_scheduler_restart(redis_client: redis.Redis) -> None:
    Scheduler(redis_client, CONFIG, Recorder()).tick(now=5000.0)
    redis_client.delete(keys.SCHEDULER_LOCK)  # the old scheduler died
    assert Scheduler(redis_client, CONFIG, Recorder()).tick(now=5010.0).fired == ()


def test_tick_drains_debounced_jobs_that_are_due(redis_client: redis.Redis) -> None:
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="wc-x", branch="main", path="/w/x")
    jobs.enqueue(redis_client, spec, delay_seconds=2.0, now=4990.0)
    send = Recorder()
    assert Scheduler(redis_client, CONFIG, send).tick(now=5000.0).drained == 1
    assert spec.key in send.keys()


def test_tick_resends_a_running_job_whose_lock_lapsed(redis_client: redis.Redis) -> None:
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main", layer="hot")
    queued = jobs.enqueue(redis_client, spec)
    jobs.claim(redis_client, spec.key, queued.job_id, max_attempts=3,
               lock=keys.branch_lock("shop", "main"), lock_token="dead-worker")
    send = Recorder()
    assert Scheduler(redis_client, CONFIG, send).tick(now=5000.0).resent == (spec.key,)
    assert spec.key in send.keys()


# --- reconcile plan (pure) -------------------------------------------------------------------


def _manifest(branch: str, hot: str, infra: str) -> Manifest:
    return Manifest(repo="shop", repo_key="id:shop", branch=branch, embedder="hashing",
                    collection="c", layers={"hot": {"commit": hot}, "infra": {"commit": infra}})


def test_reconcile_queues_only_the_layers_behind_the_head() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD}, [_manifest("main", HEAD, OLD)])
    assert [(s.branch, s.layer, s.queue) for s in plan.index] == [("main", "infra", "infra")]


def test_reconcile_indexes_a_tracked_branch_never_indexed_from_its_base() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD, "release": HEAD},
                     [_manifest("main", HEAD, HEAD)])
    assert {(s.branch, s.base_branch) for s in plan.index} == {("release", "main")}


def test_reconcile_keeps_on_demand_branches_fresh() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD, "feature": HEAD},
                     [_manifest("main", HEAD, HEAD), _manifest("feature", OLD, OLD)])
    assert {(s.branch, s.layer) for s in plan.index} == {("feature", "hot"), ("feature", "infra")}


def test_reconcile_retires_collections_whose_branch_is_gone() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD},
                     [_manifest("main", HEAD, HEAD), _manifest("feature", OLD, OLD)])
    assert [(s.kind, s.branch) for s in plan.retire] == [(jobspec.KIND_RETIRE, "feature")]


def test_reconcile_of_an_up_to_date_repo_is_empty() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD, "release": OLD},
                     [_manifest("main", HEAD, HEAD), _manifest("release", OLD, OLD)])
    assert plan.index == [] and plan.retire == []


def _overlay(branch: str, head: str, layered_on: str) -> Manifest:
    manifest = _manifest(branch, head, head)
    manifest.overlay = {"repo_key": "id:shop", "branch": "main",
                        "layered_on": {"hot": layered_on, "infra": layered_on}}
    return manifest


def test_reconcile_relayers_an_overlay_whose_base_moved() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD, "feature": OLD},
                     [_manifest("main", HEAD, HEAD), _overlay("feature", OLD, OLD)])
    assert {(s.branch, s.layer, s.reason) for s in plan.index} == {
        ("feature", "hot", "reconcile: base moved"), ("feature", "infra", "reconcile: base moved")}


def test_reconcile_leaves_an_overlay_layered_on_its_base_head() -> None:
    plan = plan_repo(SHOP, CONFIG.layers, {"main": HEAD, "feature": OLD},
                     [_manifest("main", HEAD, HEAD), _overlay("feature", OLD, HEAD)])
    assert plan.index == []

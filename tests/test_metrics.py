"""The /metrics exposition: event counters, freshness gauges read at scrape time, multiprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import REDIS_PORT, flushed
from prometheus_client.parser import text_string_to_metric_families

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.adapters.telemetry import counters
from freshmark.adapters.telemetry import exposition as metrics
from freshmark.adapters.telemetry.freshness import (
    FileFreshnessStore,
    FreshnessRow,
    RedisFreshnessStore,
)
from freshmark.core import jobspec

REDIS_DB = 13  # freshness telemetry tests; other suites use 11 and 12
REPO_ROOT = Path(__file__).resolve().parents[1]


LabelSet = tuple[tuple[str, str], ...]


def row(repo: str = "shop", branch: str = "main", layer: str = "hot",
        **values: float) -> FreshnessRow:
    base = dict(stale_chunks=3, tracked_chunks=40, tombstoned_chunks=2, commits_behind=5,
                index_lag_seconds=120.0, layer_last_success_timestamp_seconds=1_700_000_000.0,
                layer_interval_seconds=300.0, audit_timestamp_seconds=1_700_000_100.0)
    base.update(values)
    return FreshnessRow(repo=repo, branch=branch, layer=layer, **base)  # type: ignore[arg-type]


def samples(body: bytes) -> dict[tuple[str, LabelSet], float]:
    """Sample name and sorted labels -> value."""
    out: dict[tuple[str, LabelSet], float] = {}
    for family in text_string_to_metric_families(body.decode("utf-8")):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def labels(repo: str = "shop", branch: str = "main", layer: str = "hot") -> LabelSet:
    return tuple(sorted({"repo": repo, "branch": branch, "layer": layer}.items()))


@pytest.fixture
def redis_db() -> Iterator[redis.Redis]:
    yield from flushed(redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB))


def test_freshness_rows_become_gauges_per_repo_branch_and_layer(tmp_path: Path) -> None:
    store = FileFreshnessStore(tmp_path)
    store.publish([row(layer="hot", stale_chunks=3), row(layer="infra", stale_chunks=0)])

    got = samples(metrics.render_latest(store=store)[0])

    assert got[("freshmark_stale_chunks", labels(layer="hot"))] == 3
    assert got[("freshmark_stale_chunks", labels(layer="infra"))] == 0
    assert got[("freshmark_tracked_chunks", labels(layer="hot"))] == 40
    assert got[("freshmark_tombstoned_chunks", labels(layer="hot"))] == 2
    assert got[("freshmark_commits_behind", labels(layer="hot"))] == 5
    assert got[("freshmark_index_lag_seconds", labels(layer="hot"))] == 120
    assert got[("freshmark_layer_last_success_timestamp_seconds", labels())] == 1_700_000_000
    assert got[("freshmark_layer_interval_seconds", labels())] == 300


def test_without_a_store_no_freshness_gauges_are_exported() -> None:
    body, _ = metrics.render_latest()

    assert b"freshmark_jobs_total" in body
    assert b"freshmark_stale_chunks" not in body


def test_exposition_passes_promtool_check_metrics(tmp_path: Path, redis_db: redis.Redis) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: apt-get install -y --no-install-recommends prometheus")
    counters.JOBS_TOTAL.labels(queue="hot", outcome="success").inc()
    counters.JOB_DURATION_SECONDS.labels(queue="hot").observe(1.5)
    counters.WEBHOOK_DELIVERIES_TOTAL.labels(provider="github", result="accepted").inc()
    counters.VERIFICATION_VERDICTS_TOTAL.labels(verdict="current").inc()
    store = FileFreshnessStore(tmp_path)
    store.publish([row(), row(branch="feature/x", layer="infra")])

    body, content_type = metrics.render_latest(
        store=store, queue_lengths=lambda: jobs.queue_lengths(redis_db)
    )
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)

    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert content_type.startswith("text/plain")


def test_queue_lengths_are_read_from_redis_at_scrape_time(redis_db: redis.Redis) -> None:
    redis_db.rpush(jobspec.QUEUE_HOT, "a", "b", "c")
    redis_db.rpush(jobspec.QUEUE_INFRA, "d")

    got = samples(metrics.render_latest(
        store=RedisFreshnessStore(redis_db), queue_lengths=lambda: jobs.queue_lengths(redis_db)
    )[0])

    assert got[("freshmark_queue_length", (("queue", "hot"),))] == 3
    assert got[("freshmark_queue_length", (("queue", "infra"),))] == 1
    assert got[("freshmark_queue_length", (("queue", "ondemand"),))] == 0


def test_redis_store_serves_rows_published_by_another_client(redis_db: redis.Redis) -> None:
    RedisFreshnessStore(redis_db).publish([row(stale_chunks=7)])
    reader = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB)

    got = samples(metrics.render_latest(
        store=RedisFreshnessStore(reader), queue_lengths=lambda: jobs.queue_lengths(reader)
    )[0])

    assert got[("freshmark_stale_chunks", labels())] == 7
    assert redis_db.hexists(keys.FRESHNESS_LATEST, keys.freshness_field("shop", "main"))


def test_both_stores_load_one_branch_alone(tmp_path: Path, redis_db: redis.Redis) -> None:
    for store in (FileFreshnessStore(tmp_path), RedisFreshnessStore(redis_db)):
        store.publish([row(branch="main", stale_chunks=1), row(branch="dev", stale_chunks=2)])

        assert [(r.branch, r.stale_chunks) for r in store.load_branch("shop", "dev")] == [
            ("dev", 2)]
        assert store.load_branch("shop", "never-indexed") == []


def test_full_publish_drops_branches_that_are_gone(tmp_path: Path) -> None:
    store = FileFreshnessStore(tmp_path)
    store.publish([row(branch="main"), row(branch="old-feature")])

    store.publish([row(branch="main")], replace_all=True)

    assert {r.branch for r in store.load()} == {"main"}


def test_partial_publish_keeps_other_branches(redis_db: redis.Redis) -> None:
    store = RedisFreshnessStore(redis_db)
    store.publish([row(branch="main", stale_chunks=1), row(branch="dev")])

    store.publish([row(branch="main", stale_chunks=9)])

    by_branch = {r.branch: r for r in store.load()}
    assert set(by_branch) == {"main", "dev"}
    assert by_branch["main"].stale_chunks == 9


def test_stale_ratio_is_zero_for_an_empty_layer() -> None:
    assert row(stale_chunks=0, tracked_chunks=0).stale_ratio == 0.0
    assert row(stale_chunks=1, tracked_chunks=4).to_json()["stale_ratio"] == 0.25


def test_metrics_server_answers_with_the_exposition(tmp_path: Path) -> None:
    store = FileFreshnessStore(tmp_path)
    store.publish([row()])
    server = metrics.start_metrics_server(0, addr="127.0.0.1", store=store)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read()
            content_type = response.headers["Content-Type"]
    finally:
        server.shutdown()
        server.server_close()

    assert content_type.startswith("text/plain")
    assert samples(body)[("freshmark_stale_chunks", labels())] == 3


_PREFORK_SCRIPT = textwrap.dedent(
    """
    import multiprocessing, sys
    from pathlib import Path
    from freshmark.adapters.telemetry import counters, exposition

    directory = Path(sys.argv[1])
    (directory / "counter_99999.db").parent.mkdir(parents=True, exist_ok=True)
    (directory / "counter_99999.db").write_bytes(b"left over from an earlier run")
    exposition.setup_multiprocess(directory)

    def child(n):
        for _ in range(n):
            counters.JOBS_TOTAL.labels(queue="hot", outcome="success").inc()
        counters.JOBS_COALESCED_TOTAL.inc(n)

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=child, args=(n,)) for n in (2, 3, 4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        exposition.mark_process_dead(p.pid)
    sys.stdout.buffer.write(exposition.render_latest()[0])
    """
)


def test_prefork_children_counters_are_summed_by_one_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PREFORK_SCRIPT, str(tmp_path / "prom")],
        capture_output=True, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()

    got = samples(done.stdout)

    assert got[("freshmark_jobs_total", (("outcome", "success"), ("queue", "hot")))] == 9
    assert got[("freshmark_jobs_coalesced_total", ())] == 9
    assert not (tmp_path / "prom" / "counter_99999.db").exists()

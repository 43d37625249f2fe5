"""The long-running commands as real processes: ``freshmark scheduler`` and ``freshmark watch``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import Cluster, unit_cluster, wait_until
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.core import jobspec

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path, redis_client: redis.Redis) -> Iterator[Cluster]:
    with unit_cluster(tmp_path) as running:
        yield running


def test_second_scheduler_process_stays_standby(cluster: Cluster,
                                                redis_client: redis.Redis) -> None:
    cluster.start_scheduler()
    wait_until(lambda: redis_client.hget(keys.SCHEDULE_LAST_RUN, "reconcile"), 60,
               "the first scheduler to fire")
    holder = redis_client.get(keys.SCHEDULER_LOCK)
    cluster.spawn("scheduler", "--tick-seconds", "0.2", log_name="scheduler-2")
    wait_until(lambda: b"standby" in (cluster.root / "scheduler-2.log").read_bytes(), 60,
               "the second scheduler to report standby")
    assert redis_client.get(keys.SCHEDULER_LOCK) == holder


def test_watch_process_queues_the_checked_out_branch(cluster: Cluster, tmp_path: Path,
                                                     redis_client: redis.Redis) -> None:
    work = RepoBuilder.init(tmp_path / "wc")
    work.write("src/a.py", "A = 1\n").commit("a")
    cluster.spawn("watch", str(work.path), "--polling", log_name="watch")
    wait_until(lambda: redis_client.llen(jobspec.QUEUE_HOT), 60, "a message on the hot queue")
    pending = [k for k in redis_client.keys(keys.JOB_PREFIX + "*") if k.endswith(":main:*")]
    assert len(pending) == 1 and redis_client.hget(pending[0], "path") == str(work.path)

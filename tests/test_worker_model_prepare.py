"""A worker that embeds builds the model graph before it takes jobs: on a new host or pod the
build (~4 s of CPU) would otherwise fall in its first job, with every other process waiting on
the build's lock. A worker of the maintenance queue alone builds nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import REDIS_HOST, REDIS_PORT, UNIT_DB, Cluster, cluster_env, write_config

from freshmark.adapters.embedding import model_build_pending

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path, redis_client: redis.Redis) -> Iterator[Cluster]:
    config = write_config(tmp_path / "freshmark.toml", [
        {"id": "shop", "url": f"file://{tmp_path}/shop.git", "branches": ["main"]}])
    env = cluster_env(tmp_path, f"redis://{REDIS_HOST}:{REDIS_PORT}/{UNIT_DB}",
                      "http://127.0.0.1:9", config)
    env["FRESHMARK_EMBEDDER"] = "minilm"
    running = Cluster(tmp_path, env)
    yield running
    running.stop_all()


def _cache(cluster: Cluster) -> Path:
    return Path(cluster.env["FRESHMARK_HOME"]) / "cache"


def test_a_worker_of_an_index_queue_has_its_model_graph_when_ready(cluster: Cluster) -> None:
    assert model_build_pending("minilm", _cache(cluster))

    cluster.start_worker(queues="hot", concurrency=1)  # returns once the worker says ready

    assert not model_build_pending("minilm", _cache(cluster))
    assert b"model graph ready in" in (cluster.root / "worker-w1.log").read_bytes()


def test_a_maintenance_worker_builds_no_model_graph(cluster: Cluster) -> None:
    cluster.start_worker(queues="maintenance", concurrency=1)

    assert model_build_pending("minilm", _cache(cluster))
    assert not list((_cache(cluster) / "models").glob("*.onnx"))


def test_the_hashing_embedder_has_no_graph_to_build(tmp_path: Path) -> None:
    assert not model_build_pending("hashing", tmp_path / "cache")

"""A worker that embeds builds the model graph before it takes jobs: on a new host or pod the
build (~4 s of CPU) would otherwise fall in its first job, with every other process waiting on
the build's lock. A worker of the maintenance queue alone builds nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import Cluster, unit_cluster

from freshmark.adapters.embedding import model_build_pending

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path, redis_client: redis.Redis) -> Iterator[Cluster]:
    with unit_cluster(tmp_path, FRESHMARK_EMBEDDER="minilm") as running:
        yield running


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

"""One machine's processes share one multiprocess metrics directory: a worker started (or
restarted) beside a running ``freshmark serve`` must not wipe what the server counts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cluster_support import Cluster, shop_cluster

pytestmark = [pytest.mark.slow, pytest.mark.server]

_ACCEPTED = re.compile(
    r'^freshmark_webhook_deliveries_total\{provider="github",result="accepted"\} (\S+)$', re.M)


@pytest.fixture
def cluster(tmp_path: Path, chroma_server) -> Iterator[Cluster]:
    with shop_cluster(tmp_path, chroma_server.url) as running:
        yield running


def _accepted(cluster: Cluster) -> float:
    found = _ACCEPTED.search(httpx.get(f"{cluster.base_url}/metrics", timeout=10).text)
    return float(found.group(1)) if found else 0.0


def test_worker_started_beside_the_server_keeps_the_servers_counters(cluster: Cluster) -> None:
    cluster.start_worker(name="w1")
    cluster.start_server()
    _, work = cluster.repos["shop"]
    assert cluster.push_webhook("shop", work.head()).status_code == 202

    cluster.start_worker(name="w2")  # joins the running group
    assert cluster.push_webhook("shop", work.head()).status_code == 202

    assert _accepted(cluster) == 2

"""Freshness keeps being measured while no worker runs: the scheduler audits too, so the stale
gauges (and the alert on them) move when the workers that would index the change are down."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cluster_support import Cluster, shop_cluster, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.server]


@pytest.fixture
def cluster(tmp_path: Path, chroma_server) -> Iterator[Cluster]:
    # The scheduler audits on the reconcile interval: every second here.
    with shop_cluster(tmp_path, chroma_server.url,
                      service="reconcile_interval_seconds = 1") as running:
        yield running


def _gauge(cluster: Cluster, name: str) -> float:
    text = httpx.get(f"{cluster.base_url}/metrics", timeout=10).text
    found = re.search(rf'^{name}\{{[^}}]*repo="shop"[^}}]*\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_stale_chunks_rise_while_every_worker_is_stopped(cluster: Cluster) -> None:
    worker = cluster.start_worker()
    cluster.start_server()
    cluster.start_scheduler()
    _, work = cluster.repos["shop"]
    cluster.push_webhook("shop", work.head())
    cluster.wait_for_stamp("shop", work.head())
    wait_until(lambda: _gauge(cluster, "freshmark_tracked_chunks"), 60, "a first audit")
    cluster.kill(worker)

    work.write("src/app.py", "def hello():\n    return 'hello, world'\n").commit("greet")
    work.push("origin", "main")
    cluster.push_webhook("shop", work.head())

    wait_until(lambda: _gauge(cluster, "freshmark_stale_chunks") > 0, 60,
               "the changed chunk to be counted stale with no worker running")

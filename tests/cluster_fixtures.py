"""Fixtures for the cluster tests (loaded by conftest.py through ``pytest_plugins``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import REDIS_HOST, REDIS_PORT, UNIT_DB, PrivateRedis, client_for


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """Database 11 of the machine's Redis, empty at the start and the end of the test."""
    client = client_for(UNIT_DB)
    try:
        client.ping()
    except redis.RedisError as exc:  # required in CI (.ci/run starts it); skipped elsewhere
        if os.environ.get("CI"):
            pytest.fail(f"no Redis at {REDIS_HOST}:{REDIS_PORT}: {exc}")
        pytest.skip(f"no Redis at {REDIS_HOST}:{REDIS_PORT}: {exc}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()



"""Fixtures for the cluster tests (loaded by conftest.py through ``pytest_plugins``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import UNIT_DB, PrivateRedis, client_for, flushed


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """Database 11 of the machine's Redis, empty at the start and the end of the test."""
    yield from flushed(client_for(UNIT_DB))


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()



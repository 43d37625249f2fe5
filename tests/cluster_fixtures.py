"""Fixtures for the cluster tests (loaded by conftest.py through ``pytest_plugins``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import (
    PROCESS_DB,
    REDIS_HOST,
    REDIS_PORT,
    SUITE_REDIS,
    UNIT_DB,
    PrivateRedis,
    client_for,
    flushed,
)


@pytest.fixture(scope="session", autouse=True)
def suite_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite's own redis-server (``cluster_support.SuiteRedis``), for the whole session."""
    SUITE_REDIS.start(tmp_path_factory.mktemp("suite-redis"))
    yield
    SUITE_REDIS.stop()


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """Database 11 of the suite's Redis, empty at the start and the end of the test."""
    yield from flushed(client_for(UNIT_DB))


@pytest.fixture
def process_db() -> Iterator[str]:
    """The URL of database 12 of the suite's Redis (for worker and server processes), empty at
    the start and the end of the test."""
    for _ in flushed(client_for(PROCESS_DB)):
        yield f"redis://{REDIS_HOST}:{REDIS_PORT}/{PROCESS_DB}"


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    yield server
    server.stop()



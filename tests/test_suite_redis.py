"""The suite's Redis is one it started itself unless the caller hands it one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis
from cluster_support import SuiteRedis, flushed


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_without_a_port_the_suite_starts_a_redis_server_of_its_own(tmp_path: Path) -> None:
    suite = SuiteRedis.from_env({})
    suite.start(tmp_path)
    try:
        assert suite.owned and suite.port != 6379
        assert redis.Redis(port=suite.port).ping()
    finally:
        suite.stop()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=suite.port, socket_connect_timeout=1).ping()


def test_a_port_given_by_the_caller_is_used_and_no_server_is_started(tmp_path: Path) -> None:
    suite = SuiteRedis.from_env({"FRESHMARK_TEST_REDIS_PORT": "6555"})
    suite.start(tmp_path)
    assert (suite.port, suite.owned, suite.server) == (6555, False, None)


def test_a_redis_that_is_not_the_suites_is_never_flushed() -> None:
    with pytest.raises(AssertionError, match="refusing to flush"):
        next(flushed(redis.Redis(port=6379, db=11)))

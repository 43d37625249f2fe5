"""On-demand branch requests check the branch against the remote before queueing anything."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from cluster_support import REDIS_HOST, REDIS_PORT, UNIT_DB, Recorder, make_remote, write_config
from fastapi.testclient import TestClient

from freshmark.adapters.git.mirrors import remote_branches
from freshmark.adapters.queue import jobs
from freshmark.core.config import Config, RepoConfig
from freshmark.core.errors import BranchNotFound
from freshmark.faces.cli.main import cli
from freshmark.faces.http.app import create_app
from freshmark.services.upkeep import branches

TOKEN = "t0ken-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXPECTED = "no branch 'no-such-branch' in shop's remote; known: feature/x, main"


@pytest.fixture
def remote_url(tmp_path: Path) -> str:
    path, work = make_remote(tmp_path)
    work.branch("feature/x").push("origin", "feature/x")
    return f"file://{path}"


def test_remote_branches_lists_the_remote_heads(remote_url: str) -> None:
    assert remote_branches(remote_url) == ["feature/x", "main"]


def test_remote_branches_is_none_for_an_unreachable_remote() -> None:
    assert remote_branches("file:///nowhere/shop.git") is None


def test_unknown_branch_is_refused_naming_the_known_ones(redis_client: redis.Redis) -> None:
    config = Config(repos=(RepoConfig("shop", "file:///x", ("main",)),))
    with pytest.raises(BranchNotFound, match="known: feature/x, main$"):
        branches.request_branch_index(redis_client, config, "shop", "no-such-branch", Recorder(),
                                      known=["main", "feature/x"])
    assert jobs.pending_jobs(redis_client) == []


def test_unknown_base_branch_is_refused(redis_client: redis.Redis) -> None:
    config = Config(repos=(RepoConfig("shop", "file:///x", ("main",)),))
    with pytest.raises(BranchNotFound, match="'mian'"):
        branches.request_branch_index(redis_client, config, "shop", "main", Recorder(),
                                      base="mian", known=["main"])


def test_cli_branch_index_of_an_unknown_branch_exits_2_with_one_line(
        tmp_path: Path, remote_url: str, redis_client: redis.Redis,
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "fm.toml", [{"id": "shop", "url": remote_url}])
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    monkeypatch.setenv("FRESHMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FRESHMARK_REDIS_URL", f"redis://{REDIS_HOST}:{REDIS_PORT}/{UNIT_DB}")
    done = CliRunner().invoke(cli, ["branch", "index", "shop", "no-such-branch", "--wait"])
    assert done.exit_code == 2
    assert done.stderr == f"freshmark: error: {EXPECTED}\n" and done.stdout == ""
    assert jobs.pending_jobs(redis_client) == []


def test_cli_branch_index_of_an_unconfigured_repository_names_the_configured_ones(
        tmp_path: Path, remote_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "fm.toml", [{"id": "shop", "url": remote_url}])
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    monkeypatch.setenv("FRESHMARK_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(cli, ["branch", "index", "express", "main", "--local"])
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "freshmark: error: unknown repository 'express' (configured: shop); branch index works "
        "on configured repositories. For a working copy: freshmark index PATH")


def _http(remote_url: str, client: redis.Redis, send: Recorder) -> TestClient:
    config = Config(repos=(RepoConfig("shop", remote_url, ("main",)),),
                    api_token_env="FM_TEST_TOKEN")
    return TestClient(create_app(config=config, client=client, send=send,
                                 env={"FM_TEST_TOKEN": TOKEN}))


def test_http_on_demand_of_an_unknown_branch_is_404_with_the_same_message(
        remote_url: str, redis_client: redis.Redis) -> None:
    send = Recorder()
    answer = _http(remote_url, redis_client, send).post(
        "/branches/shop", json={"branch": "no-such-branch"}, headers=AUTH)
    assert answer.status_code == 404
    assert answer.json() == {"detail": {"error": "BranchNotFound", "message": EXPECTED}}
    assert send.sent == []


def test_http_on_demand_of_a_branch_the_remote_has_is_queued(
        remote_url: str, redis_client: redis.Redis) -> None:
    send = Recorder()
    answer = _http(remote_url, redis_client, send).post(
        "/branches/shop", json={"branch": "feature/x"}, headers=AUTH)
    assert answer.status_code == 202 and send.keys() == ["index:shop:feature/x:*"]

"""``freshmark audit``: the JSON contract, the table, publishing, and clear failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_builder import RepoBuilder

from freshmark.adapters.telemetry.freshness import FRESHNESS_FILE_NAME
from freshmark.faces.cli.main import cli

CONFIG_TOML = """
[[layers]]
name = "hot"
globs = ["src/**"]
interval_seconds = 300

[[layers]]
name = "infra"
globs = ["**"]
interval_seconds = 86400
"""
JSON_FIELDS = {"repo", "branch", "layer", "stale_chunks", "tracked_chunks", "stale_ratio",
               "commits_behind", "index_lag_seconds", "tombstoned_chunks",
               "layer_last_success_timestamp_seconds"}


@pytest.fixture
def runner(fm_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    config = tmp_path / "freshmark.toml"
    config.write_text(CONFIG_TOML, encoding="utf-8")
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    monkeypatch.delenv("FRESHMARK_REDIS_URL", raising=False)
    return CliRunner()


@pytest.fixture
def stale_shop(runner: CliRunner, make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/orders.py", "def cancel(order):\n    return order\n")
    repo.write("infra/ci.py", "def build():\n    return 1\n")
    repo.commit("initial")
    done = runner.invoke(cli, ["index", str(repo.path), "--json"])
    assert done.exit_code == 0, done.output
    repo.write("src/orders.py", "def cancel(order, reason):\n    return reason\n")
    repo.commit("change orders")
    return repo


def test_json_rows_use_the_metric_names_without_prefix(runner: CliRunner,
                                                       stale_shop: RepoBuilder) -> None:
    done = runner.invoke(cli, ["audit", str(stale_shop.path), "--json"])

    assert done.exit_code == 0, done.output
    rows = {r["layer"]: r for r in json.loads(done.stdout)}
    assert set(rows) == {"hot", "infra"}
    assert JSON_FIELDS <= set(rows["hot"])
    assert rows["hot"]["stale_chunks"] == rows["hot"]["tracked_chunks"] == 1
    assert rows["hot"]["stale_ratio"] == 1.0
    assert rows["hot"]["commits_behind"] == 1
    assert rows["infra"]["stale_chunks"] == 0


def test_table_has_one_line_per_layer(runner: CliRunner, stale_shop: RepoBuilder) -> None:
    done = runner.invoke(cli, ["audit", str(stale_shop.path)])

    assert done.exit_code == 0, done.output
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:5] == ["REPO", "BRANCH", "LAYER", "STALE", "TRACKED"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["shop", "main", "hot", "1"], ["shop", "main", "infra", "0"],
    ]


def test_audit_publishes_rows_for_metrics_unless_told_not_to(
    runner: CliRunner, stale_shop: RepoBuilder, fm_home: Path
) -> None:
    published = fm_home / "state" / FRESHNESS_FILE_NAME

    runner.invoke(cli, ["audit", str(stale_shop.path), "--no-publish"])
    assert not published.exists()
    runner.invoke(cli, ["audit", str(stale_shop.path)])
    assert "shop:main" in json.loads(published.read_text(encoding="utf-8"))


def test_unindexed_repository_fails_with_one_line(runner: CliRunner, make_repo) -> None:
    repo = make_repo("never")
    repo.write("a.py", "x = 1\n").commit("init")

    done = runner.invoke(cli, ["audit", str(repo.path)])

    assert done.exit_code == 2
    assert done.stderr.strip().count("\n") == 0
    assert "nothing indexed" in done.stderr


def test_unknown_repo_id_fails_with_one_line(runner: CliRunner) -> None:
    done = runner.invoke(cli, ["audit", "no-such-repo"])

    assert done.exit_code == 2
    assert done.stderr.startswith("freshmark: error:")


def test_metrics_of_serve_show_what_audit_published_without_a_redis_url(
    runner: CliRunner, stale_shop: RepoBuilder, redis_client
) -> None:
    from fastapi.testclient import TestClient

    from freshmark.core.settings import Settings
    from freshmark.faces.http.app import create_app

    assert runner.invoke(cli, ["audit", str(stale_shop.path)]).exit_code == 0
    # serve's job queue is a Redis (the default URL); its freshness store is audit's file.
    app = create_app(settings=Settings.from_env(), client=redis_client, send=lambda *a: None)
    body = TestClient(app).get("/metrics").text
    assert 'freshmark_stale_chunks{branch="main",layer="hot",repo="shop"} 1.0' in body

"""``status`` and ``audit`` measure a configured repository against the same head: the remote's,
fetched when reachable, else the mirror's with the age of its last fetch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from cluster_support import make_remote, write_config
from repo_builder import RepoBuilder

from freshmark.faces.cli.main import cli
from freshmark.services.upkeep.heads import MIRROR, REMOTE, HeadSource


@pytest.fixture
def pushed_without_webhook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                           ) -> tuple[Path, RepoBuilder]:
    """``shop`` indexed at its first commit, then one more commit pushed and never announced."""
    remote, work = make_remote(tmp_path)
    config = write_config(tmp_path / "fm.toml", [{"id": "shop", "url": f"file://{remote}",
                                                  "branches": ["main"]}])
    monkeypatch.setenv("FRESHMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FRESHMARK_EMBEDDER", "hashing")
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    monkeypatch.delenv("FRESHMARK_REDIS_URL", raising=False)
    monkeypatch.delenv("FRESHMARK_CHROMA_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["branch", "index", "shop", "main", "--local"])
    assert done.exit_code == 0, done.output
    work.write("src/app.py", "def hello():\n    return 'hi'\n").commit("no webhook for this")
    work.push("origin", "main")
    return remote, work


def _status(*args: str) -> dict:
    done = CliRunner().invoke(cli, ["status", "shop", "--json", *args])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)[0]["behind"]


def _audit() -> dict:
    done = CliRunner().invoke(cli, ["audit", "shop", "--json", "--no-publish"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)[0]


def test_status_and_audit_count_the_unannounced_push(pushed_without_webhook) -> None:
    _, work = pushed_without_webhook
    status, audit = _status(), _audit()
    assert status["head"] == work.head()
    assert status["commits_behind"] == audit["commits_behind"] == 1
    assert status["head_source"] == audit["head_source"] == REMOTE


def test_status_text_names_the_remotes_head(pushed_without_webhook) -> None:
    _, work = pushed_without_webhook
    done = CliRunner().invoke(cli, ["status", "shop"])
    assert f"head:       {work.head()[:12]} (remote's, fetched just now): 1 commit," in done.stdout


def test_audit_text_says_which_heads_it_measured(pushed_without_webhook) -> None:
    done = CliRunner().invoke(cli, ["audit", "shop", "--no-publish"])
    assert "shop: branch heads are the remote's, fetched just now" in done.stdout


def test_unreachable_remote_falls_back_to_the_mirror_and_says_how_old(
        pushed_without_webhook) -> None:
    remote, _ = pushed_without_webhook
    _status()  # fetched once: the mirror has the push
    shutil.move(remote, remote.with_name("moved.git"))
    status, audit = _status(), _audit()
    assert status["head_source"] == audit["head_source"] == MIRROR
    assert status["commits_behind"] == audit["commits_behind"] == 1
    assert "cannot fetch" in status["head_fetch_error"]
    assert status["head_fetched_at_seconds"] is not None


def test_mirror_source_description_gives_the_age_and_the_reason() -> None:
    source = HeadSource(MIRROR, fetched_at_seconds=1000.0, error="cannot fetch x")
    assert source.describe(now_seconds=1000.0 + 7500) == (
        "mirror's, fetched 2h05m ago (remote unreachable: cannot fetch x)")

"""``freshmark drop``: what was indexed can be deleted, a branch or a repository at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_builder import RepoBuilder

from freshmark.adapters.lexical.tantivy_engine import index_directory
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.freshness import FRESHNESS_FILE_NAME
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def shop(fm_home: Path, make_repo, monkeypatch: pytest.MonkeyPatch) -> RepoBuilder:
    monkeypatch.delenv("FRESHMARK_REDIS_URL", raising=False)
    repo = make_repo("shop")
    repo.write("src/app.py", "def cancel_order():\n    return 1\n").commit("one")
    repo.branch("release").branch("feature/x")
    for args in ([], ["--branch", "release"], ["--branch", "feature/x", "--base", "main"]):
        done = run("index", str(repo.path), *args)
        assert done.exit_code == 0, done.output
    return repo


def _indexed(settings: Settings) -> list[str]:
    return [m.branch for m in Store.open(settings).list_manifests()]


def test_drop_branch_removes_its_collection_lexical_index_and_state(shop: RepoBuilder) -> None:
    settings = Settings.from_env()
    assert run("search", "cancel order", "--repo", str(shop.path), "-b", "release").exit_code == 0
    assert run("audit", str(shop.path)).exit_code == 0
    [release] = [m for m in Store.open(settings).list_manifests() if m.branch == "release"]
    lexical = index_directory(settings.cache_dir, release.collection)
    assert lexical.is_dir() and lexical.with_name(f"{lexical.name}.files").is_dir()

    done = run("drop", str(shop.path), "--branch", "release", "--json")

    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"repo": "shop", "dropped": ["release"]}
    assert _indexed(settings) == ["feature/x", "main"]
    assert not lexical.exists() and not lexical.with_name(f"{lexical.name}.files").exists()
    assert VerdictStats.open(settings).counts("shop", "release") == {}
    published = json.loads((settings.state_dir / FRESHNESS_FILE_NAME).read_text())
    assert "shop:release" not in published and "shop:main" in published


def test_drop_of_a_base_that_overlays_use_exits_2_naming_them(shop: RepoBuilder) -> None:
    done = run("drop", str(shop.path), "--branch", "main")
    assert done.exit_code == 2
    assert "base of branch overlays: feature/x" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "main" in _indexed(Settings.from_env())


def test_drop_of_a_repository_drops_every_branch_overlays_first(shop: RepoBuilder) -> None:
    done = run("drop", str(shop.path))
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "dropped shop: feature/x, main, release"
    assert _indexed(Settings.from_env()) == []


def test_drop_of_a_repository_whose_directory_is_gone_still_works(shop: RepoBuilder) -> None:
    path = str(shop.path)
    import shutil

    shutil.rmtree(shop.path)
    assert run("drop", path).exit_code == 0
    assert _indexed(Settings.from_env()) == []


def test_drop_of_a_branch_never_indexed_exits_2_naming_the_indexed_ones(shop: RepoBuilder) -> None:
    done = run("drop", str(shop.path), "--branch", "nope")
    assert done.exit_code == 2 and "indexed: feature/x, main, release" in done.stderr


# --- over HTTP -----------------------------------------------------------------------------------

FULL, READ = "full-t0ken-for-drop", "read-t0ken-for-drop"


@pytest.fixture
def http(shop: RepoBuilder, redis_client):
    from cluster_support import Recorder
    from fastapi.testclient import TestClient

    from freshmark.core.config import Config
    from freshmark.faces.http.app import create_app

    env = {"FM_DROP_TOKEN": FULL, "FRESHMARK_API_READ_TOKEN": READ}
    app = create_app(config=Config(api_token_env="FM_DROP_TOKEN"), client=redis_client,
                     send=Recorder(), env=env, bind_host="127.0.0.1")
    return TestClient(app, base_url="http://127.0.0.1:8080")


def test_http_drop_of_a_branch_needs_the_full_token(http) -> None:
    refused = http.delete("/v1/repos/shop/branches/feature/x",
                          headers={"Authorization": f"Bearer {READ}"})
    assert refused.status_code == 403
    done = http.delete("/v1/repos/shop/branches/feature/x",
                       headers={"Authorization": f"Bearer {FULL}"})
    assert done.status_code == 200, done.text
    assert done.json() == {"repo": "shop", "dropped": ["feature/x"]}
    assert _indexed(Settings.from_env()) == ["main", "release"]


def test_http_drop_of_a_base_in_use_is_409_naming_the_overlays(http) -> None:
    answer = http.delete("/v1/repos/shop/branches/main",
                         headers={"Authorization": f"Bearer {FULL}"})
    assert answer.status_code == 409
    detail = answer.json()["detail"]
    assert detail["error"] == "BaseInUse" and "feature/x" in detail["message"]


# --- a branch deleted in the repository ----------------------------------------------------------


def test_status_reports_a_locally_deleted_branch_as_gone_and_retires_it(shop: RepoBuilder) -> None:
    from repo_builder import git

    git(shop.path, "branch", "-D", "release")
    done = run("status", str(shop.path))
    assert done.exit_code == 0, done.output
    assert "shop@release  gone: deleted from the repository; its index was dropped" in done.stdout
    assert _indexed(Settings.from_env()) == ["feature/x", "main"]


def test_audit_of_a_locally_deleted_branch_notes_it_and_exits_0(shop: RepoBuilder) -> None:
    from repo_builder import git

    git(shop.path, "branch", "-D", "release")
    first = run("audit", str(shop.path))
    assert first.exit_code == 0, first.output
    assert "shop@release was deleted from the repository; its index was dropped" in first.stderr
    assert "warning" not in first.stderr
    again = run("audit", str(shop.path))
    assert again.exit_code == 0 and again.stderr == ""


def test_http_drop_of_an_unknown_repository_is_404_and_drops_nothing(http) -> None:
    answer = http.delete("/v1/repos/..", headers={"Authorization": f"Bearer {FULL}"})
    other = http.delete("/v1/repos/no-such-repo", headers={"Authorization": f"Bearer {FULL}"})
    assert {answer.status_code, other.status_code} <= {404}
    assert other.json()["detail"]["error"] == "NotIndexed"
    assert _indexed(Settings.from_env()) == ["feature/x", "main", "release"]


def test_a_branch_dropped_by_another_process_is_indexed_again_by_this_one(
        shop: RepoBuilder) -> None:
    # A worker holds the branch's lexical index open; a CLI process drops the branch (its
    # directories go); the worker's next run must open the index anew, not lock a dead one.
    settings = Settings.from_env()
    assert run("search", "cancel order", "--repo", str(shop.path), "-b", "release").exit_code == 0
    [release] = [m for m in Store.open(settings).list_manifests() if m.branch == "release"]
    lexical = index_directory(settings.cache_dir, release.collection)
    freshmark = str(Path(sys.executable).parent / "freshmark")
    dropped = subprocess.run([freshmark, "drop", str(shop.path), "--branch", "release"],
                             capture_output=True, text=True, check=False)
    assert dropped.returncode == 0, dropped.stderr
    assert not lexical.exists()

    again = run("index", str(shop.path), "--branch", "release")

    assert again.exit_code == 0, again.output
    found = run("search", "cancel order", "--repo", str(shop.path), "-b", "release", "--json")
    assert found.exit_code == 0 and json.loads(found.output)["results"]


def test_drop_removes_the_dropped_collections_vector_files(shop: RepoBuilder) -> None:
    settings = Settings.from_env()
    chroma = settings.home / "chroma"

    def segment_dirs() -> set[str]:
        return {p.name for p in chroma.iterdir() if p.is_dir() and len(p.name) == 36}

    held = segment_dirs()
    done = run("drop", str(shop.path), "--branch", "release")
    assert done.exit_code == 0, done.output
    assert len(segment_dirs()) == len(held) - 1 and segment_dirs() < held
    kept = run("search", "cancel order", "--repo", str(shop.path), "-b", "feature/x", "--json")
    assert kept.exit_code == 0 and json.loads(kept.output)["results"]


def test_status_after_drop_names_the_path_typed_never_another_repositorys_id(
        fm_home: Path, make_repo) -> None:
    # Two clones of one directory name: the first indexed is ``repo``, the second ``y/repo``.
    first, second = make_repo("x/repo"), make_repo("y/repo")
    for repo in (first, second):
        repo.write("src/app.py", "def cancel_order():\n    return 1\n").commit("one")
        assert run("index", str(repo.path)).exit_code == 0
    assert run("drop", str(second.path)).exit_code == 0

    done = run("status", str(second.path))

    assert done.exit_code != 0
    assert f"{second.path} has no indexed branch yet" in done.stderr
    assert "repo has no indexed branch" not in done.stderr.replace(str(second.path), "")

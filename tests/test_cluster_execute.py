"""What the worker tasks run, in process: index from a mirror or a working copy, retire."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from cluster_support import Recorder, make_remote
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.embedding import LazyEmbedder
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.freshness import FreshnessRow, freshness_store_for
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from workers import execute
from workers.runtime import WorkerContext


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, RepoBuilder]:
    return make_remote(tmp_path)


def _context(tmp_path: Path, client: redis.Redis, config: Config) -> WorkerContext:
    settings = Settings(home=tmp_path / "home", embedder="hashing")
    return WorkerContext(settings=settings, config=config, timings=jobspec.Timings(), redis=client,
                         send=Recorder())


def _job(**fields: str) -> jobspec.Job:
    spec = jobspec.JobSpec(**{"kind": jobspec.KIND_INDEX, "repo": "shop", **fields})
    return jobspec.Job(key=spec.key, id="j1", spec=spec, attempts=1, created_at=0.0)


@pytest.mark.slow
def test_a_worker_whose_index_job_has_nothing_to_embed_loads_no_model(
        tmp_path: Path, remote, redis_client: redis.Redis) -> None:
    path, _ = remote
    config = Config(repos=(RepoConfig("shop", f"file://{path}"),))
    settings = Settings(home=tmp_path / "home", embedder="minilm")
    for fresh_process in range(2):  # the first indexes the remote, the second finds it indexed
        ctx = WorkerContext(settings=settings, config=config, timings=jobspec.Timings(),
                            redis=redis_client, send=Recorder())
        summary = execute.run_index(_job(branch="main"), ctx)
        embedder = ctx.embedder()
        assert isinstance(embedder, LazyEmbedder)
        assert (summary["noop"], embedder.loaded) == ((False, True), (True, False))[fresh_process]


def test_index_job_fetches_the_mirror_and_stamps_the_head(tmp_path: Path, remote,
                                                          redis_client: redis.Redis) -> None:
    path, work = remote
    config = Config(repos=(RepoConfig("shop", f"file://{path}"),))
    ctx = _context(tmp_path, redis_client, config)
    head = work.write("src/new.py", "N = 1\n").commit("new")
    work.push("origin", "main")
    summary = execute.run_index(_job(branch="main"), ctx)
    assert summary["commit"] == head
    assert ctx.store().branch("id:shop", "main").manifest.commit == head


def test_an_index_job_publishes_the_branch_fresh_without_waiting_for_the_audit(
        tmp_path: Path, remote, redis_client: redis.Redis) -> None:
    path, work = remote
    config = Config(repos=(RepoConfig("shop", f"file://{path}"),))
    ctx = _context(tmp_path, redis_client, config)
    freshness = freshness_store_for(ctx.settings, redis_client)
    execute.run_index(_job(branch="main"), ctx)
    stale_before = [_with_stale(row) for row in freshness.load_branch("shop", "main")]
    freshness.publish(stale_before)  # what an audit between the push and the run would show
    work.write("src/new.py", "N = 1\n").commit("new")
    work.push("origin", "main")

    execute.run_index(_job(branch="main"), ctx)

    rows = freshness.load_branch("shop", "main")
    assert rows and all(r.stale_chunks == 0 and r.commits_behind == 0 for r in rows)
    assert all(r.tracked_chunks > 0 for r in rows)


def _with_stale(row: FreshnessRow) -> FreshnessRow:
    return dataclasses.replace(row, stale_chunks=row.tracked_chunks, commits_behind=1)


def test_index_job_for_a_missing_branch_is_a_noop(tmp_path: Path, remote,
                                                  redis_client: redis.Redis) -> None:
    path, _ = remote
    ctx = _context(tmp_path, redis_client, Config(repos=(RepoConfig("shop", f"file://{path}"),)))
    assert execute.run_index(_job(branch="never-pushed"), ctx)["noop"]
    assert ctx.send.sent == []  # nothing to retire: it never had a collection


def test_watch_job_indexes_the_working_copy_in_place(tmp_path: Path,
                                                     redis_client: redis.Redis) -> None:
    work = RepoBuilder.init(tmp_path / "wc")
    head = work.write("src/a.py", "def a():\n    return 1\n").commit("a")
    ctx = _context(tmp_path, redis_client, Config())
    execute.run_index(_job(repo="wc-x", branch="main", path=str(work.path)), ctx)
    manifest = ctx.store().branch(f"path:{work.path.resolve()}", "main").manifest
    assert manifest.commit == head


def test_a_watch_job_publishes_the_working_copys_freshness(tmp_path: Path,
                                                          redis_client: redis.Redis) -> None:
    work = RepoBuilder.init(tmp_path / "wc")
    work.write("src/a.py", "def a():\n    return 1\n").commit("a")
    ctx = _context(tmp_path, redis_client, Config())

    execute.run_index(_job(repo="wc-x", branch="main", path=str(work.path)), ctx)

    rows = freshness_store_for(ctx.settings, redis_client).load()
    assert [(r.branch, r.stale_chunks, r.tracked_chunks) for r in rows] == [("main", 0, 1)]


def test_retire_job_keeps_a_branch_that_still_exists(tmp_path: Path, remote,
                                                     redis_client: redis.Redis) -> None:
    path, _ = remote
    ctx = _context(tmp_path, redis_client, Config(repos=(RepoConfig("shop", f"file://{path}"),)))
    execute.run_index(_job(branch="main"), ctx)
    result = execute.run_retire(_job(kind=jobspec.KIND_RETIRE, branch="main"), ctx)
    assert result["noop"] and ctx.store().branch("id:shop", "main") is not None


def test_retire_idle_job_drops_idle_untracked_branches_only(tmp_path: Path, remote,
                                                            redis_client: redis.Redis) -> None:
    path, work = remote
    work.branch("feature").push("origin", "feature")
    config = Config(repos=(RepoConfig("shop", f"file://{path}", ("main",)),), branch_idle_seconds=0)
    ctx = _context(tmp_path, redis_client, config)
    for branch in ("main", "feature"):
        execute.run_index(_job(branch=branch), ctx)
    redis_client.hset(keys.BRANCH_ACTIVITY, "shop:feature", 0)
    result = execute.run_retire_idle(_job(kind=jobspec.KIND_RETIRE_IDLE, repo="*"), ctx)
    store = Store.open(ctx.settings)
    assert result["retired"] == ["shop@feature (idle)"]
    assert store.branch("id:shop", "feature") is None and store.branch("id:shop", "main")


def test_branch_index_local_seeds_the_branch_from_its_base(tmp_path: Path, remote,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path, work = remote
    work.branch("feature").checkout("feature")
    work.write("src/feature.py", "def feature():\n    return 2\n").commit("feature")
    work.push("origin", "feature")
    config = tmp_path / "freshmark.toml"
    config.write_text(f'[[repos]]\nid = "shop"\nurl = "file://{path}"\nbranches = ["main"]\n')
    monkeypatch.setenv("FRESHMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FRESHMARK_EMBEDDER", "hashing")
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    runner = CliRunner()
    assert runner.invoke(cli, ["branch", "index", "shop", "main", "--local"]).exit_code == 0
    done = runner.invoke(cli, ["branch", "index", "shop", "feature", "--local", "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    assert summary["layered_on"] == "main" and summary["embeddings_computed"] == 1


def test_example_config_indexes_its_local_repository(tmp_path: Path, remote,
                                                     redis_client: redis.Redis) -> None:
    from dataclasses import replace

    from freshmark.core.config import load_config

    example = load_config(Path(__file__).resolve().parents[1] / "deploy" /
                          "freshmark.example.toml")
    (demo,) = example.repos
    assert demo.url == "file:///tmp/freshmark-demo.git"  # what the README's one-liner makes
    path, work = remote  # the same kind of bare repository, made where the test may write
    config = replace(example, repos=(replace(demo, id="shop", url=f"file://{path}"),))
    head = work.write("src/app.py", "def app():\n    return 1\n").commit("app")
    work.push("origin", "main")
    summary = execute.run_index(_job(branch="main"), _context(tmp_path, redis_client, config))
    assert summary["commit"] == head and summary["layers"] == ["hot", "infra"]

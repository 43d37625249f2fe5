"""What operators read: quiet HTTP clients, a clear status mid first build, a talking watcher."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from cluster_support import (
    FRESHMARK,
    REDIS_HOST,
    REDIS_PORT,
    UNIT_DB,
    Cluster,
    Recorder,
    cluster_env,
    make_remote,
    write_config,
)
from repo_builder import RepoBuilder

from freshmark.core.config import Config
from freshmark.core.progress import WORKING, IndexProgress
from freshmark.core.settings import Settings
from freshmark.faces.cli.cluster import CHATTY_LOGGERS, _setup_logging
from freshmark.faces.cli.main import cli
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from scheduler.watch import WatchOptions, WorkingCopyWatcher


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    builder = RepoBuilder.init(tmp_path / "shop")
    builder.write("src/app.py", "def a():\n    return 1\n").commit("one")
    return builder


@pytest.mark.parametrize("name", CHATTY_LOGGERS)
def test_http_client_requests_are_not_logged_at_info(name: str) -> None:
    _setup_logging("INFO")
    assert not logging.getLogger(name).isEnabledFor(logging.INFO)
    assert logging.getLogger(name).isEnabledFor(logging.WARNING)


class _Interrupted(Exception):
    pass


def _interrupt(event: IndexProgress) -> None:
    if event.phase == WORKING:
        raise _Interrupted


def test_status_during_the_first_build_says_so(fm_home: Path, repo: RepoBuilder) -> None:
    with pytest.raises(_Interrupted):  # stopped mid-run: the collection exists, no stamp yet
        index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config(),
                   progress=_interrupt)
    done = CliRunner().invoke(cli, ["status", str(repo.path)])
    assert done.exit_code == 0, done.output
    assert (f"{repo.head()[:12]} (local branch): first build in progress or interrupted, "
            "nothing stamped yet (freshmark index resumes it)") in done.stdout
    assert "None" not in done.stdout


def test_watch_logs_each_job_it_queues(repo: RepoBuilder, redis_client: redis.Redis,
                                       caplog: pytest.LogCaptureFixture) -> None:
    watcher = WorkingCopyWatcher(repo.path, redis_client, Recorder(),
                                 WatchOptions(debounce_seconds=2.0))
    with caplog.at_level(logging.INFO, logger="freshmark.watch"):
        watcher.flush(immediate=True)
        watcher.tally.note_overflow()
        watcher.flush(now=1000.0)
    lines = [r.getMessage() for r in caplog.records]
    key = f"index:{watcher.label}:main:*"
    assert lines[0] == f"watch: queued index of main (now; 0 file, 0 ref events) as {key}"
    assert lines[1].startswith("watch: reconcile: ")
    assert "index of main (due in 2 s; 0 file, 0 ref events, overflow)" in lines[1]


@pytest.mark.slow
def test_worker_does_not_log_each_chroma_request(tmp_path: Path, redis_client: redis.Redis,
                                                 chroma_server) -> None:
    remote, work = make_remote(tmp_path)
    config = write_config(tmp_path / "fm.toml", [{"id": "shop", "url": f"file://{remote}"}])
    env = cluster_env(tmp_path, f"redis://{REDIS_HOST}:{REDIS_PORT}/{UNIT_DB}",
                      chroma_server.url, config)
    cluster = Cluster(tmp_path, env)
    try:
        cluster.start_worker(queues="ondemand", concurrency=1)
        done = subprocess.run([*FRESHMARK, "branch", "index", "shop", "main", "--wait"],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "done" in done.stdout, done.stderr + cluster.logs()
        cluster.wait_for_stamp("shop", work.head())
    finally:
        cluster.stop_all()
    worker_log = (tmp_path / "worker-w1.log").read_text()
    assert "succeeded" in worker_log or "index" in worker_log
    assert "HTTP Request" not in worker_log

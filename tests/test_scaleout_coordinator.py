"""The coordinator of a split run and a batch message, in process (real Redis, Chroma server)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
from cluster_support import Recorder, make_remote

from freshmark.adapters.queue import fanout
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig, ScaleOut
from freshmark.core.settings import Settings
from freshmark.core.stamp import TOMBSTONED
from workers import execute, scaleout
from workers.runtime import WorkerContext

pytestmark = pytest.mark.server


class BatchRecorder:
    """Records the batch messages a coordinator sends (nobody takes them)."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], str]] = []

    def __call__(self, payload: dict[str, Any], queue: str) -> None:
        self.sent.append((payload, queue))


@pytest.fixture
def ctx(tmp_path: Path, redis_client: redis.Redis, chroma_server) -> WorkerContext:
    remote, work = make_remote(tmp_path / "remotes", "shop")
    for i in range(30):
        work.write(f"src/pkg{i % 3}/m{i}.py", f"def f{i}(x):\n    return x * {i}\n")
    work.commit("thirty files")
    work.push("origin", "main")
    settings = Settings(home=tmp_path / "home", embedder="hashing", chroma_url=chroma_server.url)
    config = Config(repos=(RepoConfig("shop", f"file://{remote}"),),
                    scale_out=ScaleOut(min_files=10, files_per_batch=4, lease_seconds=30))
    return WorkerContext(settings=settings, config=config, timings=jobspec.Timings(),
                         redis=redis_client, send=Recorder(), send_batch=BatchRecorder())


def _job() -> jobspec.Job:
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="shop", branch="main")
    return jobspec.Job(key=spec.key, id="j1", spec=spec, attempts=1, created_at=0.0)


def _drop_collection(ctx: WorkerContext) -> None:
    Store.open(ctx.settings).drop_branch("id:shop", "main")


def _dead_holder() -> str:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    return f"{socket.gethostname()}:{finished.stdout.strip()}:gone"


def test_split_run_without_helpers_is_finished_by_the_job_itself(ctx: WorkerContext) -> None:
    try:
        summary = execute.run_index(_job(), ctx)
        assert summary["batches"] == len(ctx.send_batch.sent) == 8  # 32 files, 4 per batch
        assert {queue for _, queue in ctx.send_batch.sent} == {jobspec.QUEUE_HOT}
        assert summary["files_seen"] == 32 and summary["chunks_added"] > 0
        manifest = ctx.store().branch("id:shop", "main").manifest
        assert manifest.commit == summary["commit"]
        assert fanout.read(ctx.redis, "shop", "main") is None  # the record is gone once done
    finally:
        _drop_collection(ctx)


def test_a_dead_coordinators_leftover_run_is_drained_before_the_new_run(
    ctx: WorkerContext,
) -> None:
    fanout.start(ctx.redis, "shop", "main", fanout_id="old", job_key=_job().key, head="c" * 40,
                 total=3, ttl_seconds=60)
    fanout.claim(ctx.redis, "shop", "main", "old", 1, _dead_holder(), lease_seconds=600)
    try:
        summary = execute.run_index(_job(), ctx)
        assert summary["batches"] == 8
        assert ctx.store().branch("id:shop", "main").manifest.commit == summary["commit"]
    finally:
        _drop_collection(ctx)


def test_a_batch_message_of_a_finished_run_writes_nothing(ctx: WorkerContext) -> None:
    try:
        execute.run_index(_job(), ctx)
        payload, _ = ctx.send_batch.sent[0]
        index = ctx.store().branch("id:shop", "main")
        paths = [c["new_path"] for c in payload["work"]["changes"]]
        # Marked so that a rewrite of the batch would show: it would write them live again.
        index.update_metadata([(r.id, {"status": TOMBSTONED})
                               for r in index.records_for_paths(paths)])
        assert scaleout.run_batch_message(payload, ctx) == {"outcome": "gone"}
        assert {r.status for r in index.records_for_paths(paths)} == {TOMBSTONED}
    finally:
        _drop_collection(ctx)

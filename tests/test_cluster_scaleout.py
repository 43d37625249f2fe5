"""A large index split into batches across real worker processes (real Redis, Celery, Chroma).

Two workers of one process each: the job's process coordinates (and embeds batches too), the
other one helps through batch messages. Helpers are caught mid-batch by stopping their process
group while they hold a claim (SIGSTOP), then checking that the claim is still unfinished.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from cluster_support import (
    SECRET_ENV,
    Cluster,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from prometheus_client import CollectorRegistry, multiprocess
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.lexical.tantivy_engine import TantivyChannel, TantivyEngine
from freshmark.adapters.queue import fanout
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE
from freshmark.core.tokenize import query_terms
from freshmark.services.indexing.indexer import IndexRequest, index_repo

pytestmark = [pytest.mark.slow, pytest.mark.server]

FILES_PER_BATCH = 5
# Pushes queue a run of the one layer: its split run's record is kept under (main, default).
SCOPE = keys.fanout_scope("main", "default")
SCALE_OUT = f"""[scale_out]
min_files = 40
files_per_batch = {FILES_PER_BATCH}
lease_seconds = 120
"""


@pytest.fixture
def cluster(tmp_path: Path, process_db: str, chroma_server) -> Iterator[Cluster]:
    remote, work = make_remote(tmp_path / "remotes", "shop")
    repo_id = f"shop-{uuid.uuid4().hex[:6]}"
    config = write_config(tmp_path / "freshmark.toml", [
        {"id": repo_id, "url": f"file://{remote}", "branches": ["main"], "provider": "github",
         "webhook_secret_env": SECRET_ENV}], layers=SCALE_OUT)
    # Jobs here run for tens of seconds: the time limits (85 % of this) must not cut them.
    env = cluster_env(tmp_path, process_db, chroma_server.url, config,
                      visibility_timeout_seconds=180)
    running = Cluster(tmp_path, env, repos={"shop": (repo_id, work)})
    yield running
    running.stop_all()


def _start(cluster: Cluster) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    workers = (cluster.start_worker(concurrency=1, name="w1"),
               cluster.start_worker(concurrency=1, name="w2"))
    cluster.start_server()
    return workers


def _big_commit(work: RepoBuilder, files: int = 150) -> str:
    body = "".join(f"def handler_{j}(order):\n    return order.total * {j}\n\n" for j in range(12))
    for i in range(files):
        work.write(f"src/pkg{i % 20}/mod{i}.py", f'"""Module {i}."""\n\n{body}')
    sha = work.commit("a large change")
    work.push("origin", "main")
    return sha


def _push(cluster: Cluster, sha: str) -> None:
    repo_id, _ = cluster.repos["shop"]
    assert cluster.push_webhook(repo_id, sha).status_code == 202


def _records(settings: Settings, repo_key: str) -> dict[str, tuple[object, ...]]:
    """Chunk id -> everything stamped on it but the wall-clock time of the run."""
    index = Store.open(settings).branch(repo_key, "main")
    assert index is not None
    return {r.id: (r.path, r.symbol, r.start_line, r.end_line, r.text_sha256, r.status,
                   r.commit, r.blob_sha, r.layer, r.updated_gen)
            for r in index.iter_records(include_text=False)}


def _clean_index(cluster: Cluster, root: Path) -> Settings:
    """The same commit indexed in one process, in a store of its own."""
    repo_id, _ = cluster.repos["shop"]
    clean = Settings(home=root / "clean", embedder="hashing")
    mirror = cluster.settings().mirrors_dir / f"{repo_id}.git"
    index_repo(IndexRequest(mirror, branch="main", repo_id=repo_id), settings=clean,
               config=Config())
    return clean


def _batches_written(cluster: Cluster) -> dict[str, float]:
    """Batches written per runner, summed over every worker process's metrics file."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(cluster.root / "prometheus"))
    return {runner: registry.get_sample_value("freshmark_index_batches_total",
                                              {"queue": "hot", "runner": runner}) or 0.0
            for runner in ("coordinator", "helper")}


def _pid_of(holder: str) -> int:
    return int(holder.split(":")[1])


def _stop_helper_mid_batch(cluster: Cluster, client: redis.Redis,
                           workers: tuple[subprocess.Popen[bytes], ...]) -> tuple[
                               subprocess.Popen[bytes], fanout.BatchClaim]:
    """Freeze the helper worker while it holds a claim on an unfinished batch."""
    repo_id, _ = cluster.repos["shop"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        record = fanout.read(client, repo_id, SCOPE)
        lock = client.get(keys.layer_lock(repo_id, "main", "default"))
        for claim in record.claims.values() if record and lock else ():
            if _pid_of(claim.holder) == _pid_of(lock):
                continue  # the coordinator's own batch
            try:
                group = os.getpgid(_pid_of(claim.holder))
            except ProcessLookupError:
                continue
            helper = next(w for w in workers if w.pid == group)
            os.killpg(helper.pid, signal.SIGSTOP)
            now = fanout.read(client, repo_id, SCOPE)
            if now and claim.batch not in now.results and now.claims.get(claim.batch) == claim:
                return helper, claim
            os.killpg(helper.pid, signal.SIGCONT)  # it finished first: catch the next one
        time.sleep(0.01)
    raise AssertionError(f"never caught a helper mid-batch\n{cluster.logs()}")


def _wait_for_all_but(client: redis.Redis, repo_id: str, missing: int) -> fanout.Record:
    def all_but_one_in() -> fanout.Record | None:
        record = fanout.read(client, repo_id, SCOPE)
        ready = record is not None and len(record.results) == record.total - 1
        return record if ready and missing not in record.results else None

    return wait_until(all_but_one_in, 120, "every batch but the frozen one")


def test_split_full_index_writes_what_a_single_task_index_writes(cluster: Cluster,
                                                                 tmp_path: Path) -> None:
    repo_id, work = cluster.repos["shop"]
    _start(cluster)
    head = _big_commit(work)
    _push(cluster, head)
    split = cluster.wait_for_stamp(repo_id, head, timeout_seconds=150)
    written = _batches_written(cluster)
    clean = _clean_index(cluster, tmp_path)
    unsplit = Store.open(clean).branch(f"id:{repo_id}", "main")
    files = 152  # the big commit's 150 and the remote's first two
    assert sum(written.values()) == -(-files // FILES_PER_BATCH)  # every batch written once
    assert _records(cluster.settings(), f"id:{repo_id}") == _records(clean, f"id:{repo_id}")
    assert (split.commit, split.layers["default"]["commit"], split.generation) == (
        unsplit.manifest.commit, unsplit.manifest.layers["default"]["commit"],
        unsplit.manifest.generation)
    some = sorted(_records(clean, f"id:{repo_id}"))[:50]
    stored = Store.open(cluster.settings()).branch(f"id:{repo_id}", "main").embeddings_for(some)
    expected = unsplit.embeddings_for(some)
    assert all(np.allclose(stored[i], expected[i]) for i in some)


def _first_runs(cluster: Cluster) -> dict[str, float]:
    """First runs by how the lexical index got their chunks, summed over every process."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(cluster.root / "prometheus"))
    return {outcome: registry.get_sample_value("freshmark_lexical_first_runs_total",
                                               {"outcome": outcome}) or 0.0
            for outcome in ("written", "caught_up")}


def _scores(channel: TantivyChannel, query: str) -> dict[str, float]:
    """Every hit's score (hits of equal score are ordered by where each index put them)."""
    hits, _ = channel.search(query_terms(query), 10_000)
    return {hit.id: round(hit.score, 4) for hit in hits}


def test_a_split_first_run_writes_its_lexical_index_from_every_batch_as_it_comes_in(
        cluster: Cluster, tmp_path: Path) -> None:
    repo_id, work = cluster.repos["shop"]
    _start(cluster)
    head = _big_commit(work)
    _push(cluster, head)
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=150)
    wait_until(lambda: sum(_first_runs(cluster).values()), 60, "the lexical index after the run")
    assert _batches_written(cluster)["helper"] > 0  # documents came from another process
    assert _first_runs(cluster) == {"written": 1.0, "caught_up": 0.0}  # nothing read back
    view = Store.open(cluster.settings()).branch(f"id:{repo_id}", "main")
    assert view is not None
    written = TantivyEngine(cluster.settings().cache_dir).channel(view)
    TantivyEngine(None).forget()
    caught_up = TantivyEngine(tmp_path / "elsewhere").channel(view)  # a host that never saw it
    assert written.counts() == caught_up.counts()
    for query in ("handler_3 order", "Module 17", "total"):
        assert _scores(written, query) == _scores(caught_up, query)


def test_manifest_is_not_written_until_the_last_batch_is_in(cluster: Cluster) -> None:
    repo_id, work = cluster.repos["shop"]
    workers = _start(cluster)
    client = cluster.client()
    first = cluster.manifest(repo_id)  # None: never indexed
    head = _big_commit(work)
    _push(cluster, head)
    helper, frozen = _stop_helper_mid_batch(cluster, client, workers)
    try:
        record = _wait_for_all_but(client, repo_id, frozen.batch)
        manifest = cluster.manifest(repo_id)
        assert manifest is not None and manifest.commit != head
        assert manifest.commit == (first.commit if first else None)
        job = keys.job(f"index:{repo_id}:main:default")
        assert client.hmget(job, keys.JOB_BATCHES_DONE, keys.JOB_BATCHES_TOTAL) == [
            str(record.total - 1), str(record.total)]
    finally:
        os.killpg(helper.pid, signal.SIGCONT)
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=120)


def test_helper_killed_mid_batch_loses_no_file_and_duplicates_no_chunk(cluster: Cluster,
                                                                       tmp_path: Path) -> None:
    repo_id, work = cluster.repos["shop"]
    workers = _start(cluster)
    client = cluster.client()
    head = _big_commit(work)
    _push(cluster, head)
    helper, frozen = _stop_helper_mid_batch(cluster, client, workers)
    cluster.kill(helper)  # kill -9 while it holds the batch
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=150)
    live = [r for r in _records(cluster.settings(), f"id:{repo_id}").values() if r[5] == LIVE]
    spans = [r[:4] for r in live]
    assert len(spans) == len(set(spans))  # no chunk twice
    clean = [r for r in _records(_clean_index(cluster, tmp_path), f"id:{repo_id}").values()
             if r[5] == LIVE]
    assert sorted(live) == sorted(clean)  # no file lost, nothing extra


def test_small_incremental_run_is_not_split(cluster: Cluster) -> None:
    repo_id, work = cluster.repos["shop"]
    _start(cluster)
    head = _big_commit(work)
    _push(cluster, head)
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=150)
    after_full = _batches_written(cluster)
    small = work.write("src/pkg0/mod0.py", "def changed():\n    return 1\n").commit("one file")
    work.push("origin", "main")
    _push(cluster, small)
    cluster.wait_for_stamp(repo_id, small, timeout_seconds=60)
    assert sum(after_full.values()) > 0  # the full index before it was split
    assert _batches_written(cluster) == after_full


def test_a_helper_whose_run_is_cancelled_gives_its_claim_back_at_once(cluster: Cluster) -> None:
    # A new coordinator cancels the run it finds left over, then waits until no claim of it can
    # still write: a helper that kept its claim held it for the whole lease (120 s here).
    repo_id, work = cluster.repos["shop"]
    workers = _start(cluster)
    client = cluster.client()
    head = _big_commit(work)
    _push(cluster, head)
    helper, frozen = _stop_helper_mid_batch(cluster, client, workers)
    coordinator = next(w for w in workers if w is not helper)
    os.killpg(coordinator.pid, signal.SIGSTOP)  # only the helper acts on the record now
    try:
        run_id = fanout.read(client, repo_id, SCOPE).id
        assert fanout.cancel(client, repo_id, SCOPE, f"index:{repo_id}:main:default")
        os.killpg(helper.pid, signal.SIGCONT)

        def given_back() -> bool:
            record = fanout.read(client, repo_id, SCOPE)
            return record is not None and record.id == run_id \
                and frozen.batch not in record.claims

        wait_until(given_back, 60, "the helper to give its claim on the cancelled run back")
    finally:
        os.killpg(helper.pid, signal.SIGCONT)
        os.killpg(coordinator.pid, signal.SIGCONT)
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=150)  # the job re-plans and lands

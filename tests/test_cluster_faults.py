"""Faults with real processes: a worker killed mid-job, Redis restarted, Chroma restarted, a
poison job. Few and bounded: every wait has a timeout; every process is stopped at the end."""

from __future__ import annotations

import os
import re
import signal
import time
import uuid
from pathlib import Path

import pytest
from celery import Celery
from cluster_support import (
    SECRET_ENV,
    Cluster,
    PrivateRedis,
    can_run_on_own_host,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from conftest import ChromaServer
from pausing_remote import PausingRemote
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.queue import branch_lock
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.core.stamp import LIVE
from freshmark.services.indexing.indexer import IndexRequest, index_repo

pytestmark = [pytest.mark.slow, pytest.mark.server]

LEASE_SECONDS = 6  # renewed every 2 s: a loaded 2-core test machine may stall a beat or two
# Long enough that kombu's own redelivery of a dead worker's message can't be what recovers a
# job in the tests below: only the lease lapsing and the scheduler's orphan sweep can.
LONG_VISIBILITY_SECONDS = 600
RECOVERY_DEADLINE_SECONDS = 120  # generous, and still far inside the visibility timeout
KILLED_JOB_FILES = 200  # a job of a few seconds: killed while it runs, not after
# The scheduler fires nothing by itself (no layer rebuilds, no reconcile): it only sweeps.
SWEEP_ONLY = {"layers": '[[layers]]\nname = "default"\ninterval_seconds = 0\n',
              "service": "reconcile_interval_seconds = 0",
              "visibility_timeout_seconds": LONG_VISIBILITY_SECONDS}


def _cluster(root: Path, redis_url: str, chroma_url: str, *, service: str = "",
             url: str | None = None, layers: str = "",
             visibility_timeout_seconds: int = 12) -> tuple[Cluster, str, RepoBuilder]:
    remote, work = make_remote(root / "remotes", "shop")
    repo_id = f"shop-{uuid.uuid4().hex[:6]}"
    config = write_config(root / "freshmark.toml", [
        {"id": repo_id, "url": url or f"file://{remote}", "branches": ["main"],
         "provider": "github", "webhook_secret_env": SECRET_ENV}], service=service, layers=layers)
    env = cluster_env(root, redis_url, chroma_url, config,
                      visibility_timeout_seconds=visibility_timeout_seconds,
                      lock_lease_seconds=LEASE_SECONDS)
    return Cluster(root, env), repo_id, work


def _big_commit(work: RepoBuilder, files: int = 100) -> str:
    body = "".join(f"def handler_{j}(order):\n    return order.total * {j}\n\n" for j in range(12))
    for i in range(files):
        work.write(f"src/pkg{i % 20}/mod{i}.py", f'"""Module {i}."""\n\n{body}')
    sha = work.commit("a large change")
    work.push("origin", "main")
    return sha


def _live_chunks(settings: Settings, repo_key: str) -> list[tuple[str, str, int, int]]:
    index = Store.open(settings).branch(repo_key, "main")
    assert index is not None
    return sorted((r.path, r.symbol, r.start_line, r.end_line)
                  for r in index.iter_records(include_text=False) if r.status == LIVE)


def test_worker_killed_mid_job_finishes_after_restart_without_duplicates(
    tmp_path: Path, process_db: str, chroma_server
) -> None:
    cluster, repo_id, work = _cluster(tmp_path, process_db, chroma_server.url)
    try:
        head = _big_commit(work)
        worker = cluster.start_worker(concurrency=1)
        cluster.start_server()
        assert cluster.push_webhook(repo_id, head).status_code == 202
        job = keys.job(f"index:{repo_id}:main:default")
        client = cluster.client()
        wait_until(lambda: client.hget(job, "state") == "running", 60, "the job to start")
        cluster.kill(worker)
        assert client.hget(job, "state") == "running"  # killed mid-job, not after it
        cluster.start_worker(concurrency=1, name="w2")
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=120)
    finally:
        cluster.stop_all()
    # The resumed index holds exactly what a clean run at the same commit holds.
    clean = Settings(home=tmp_path / "clean", embedder="hashing")
    mirror = cluster.settings().mirrors_dir / f"{repo_id}.git"
    index_repo(IndexRequest(mirror, branch="main", repo_id=repo_id), settings=clean,
               config=Config())
    resumed = _live_chunks(cluster.settings(), f"id:{repo_id}")
    assert len(resumed) == len(set(resumed))
    assert resumed == _live_chunks(clean, f"id:{repo_id}")


def test_redis_restart_mid_stream_loses_no_push(tmp_path: Path, private_redis: PrivateRedis,
                                                chroma_server) -> None:
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      service="reconcile_interval_seconds = 3")
    try:
        cluster.start_worker()
        cluster.start_server()
        cluster.start_scheduler()
        first = work.head()
        cluster.push_webhook(repo_id, first)
        cluster.wait_for_stamp(repo_id, first)
        private_redis.stop()  # no persistence: every queued message and job state is gone
        for n in range(2):  # pushes during the outage: their webhooks cannot be queued
            sha = work.write("src/app.py", f"def hello():\n    return {n}\n").commit(f"c{n}")
            work.push("origin", "main")
            assert cluster.push_webhook(repo_id, sha).status_code == 503
        private_redis.start()
        last = work.write("src/late.py", "L = 1\n").commit("no webhook at all")
        work.push("origin", "main")
        cluster.wait_for_stamp(repo_id, last, timeout_seconds=120)
    finally:
        cluster.stop_all()


def test_chroma_restart_is_retried_until_the_job_lands(tmp_path: Path, process_db: str) -> None:
    chroma = ChromaServer(tmp_path / "chroma-data")
    chroma.data_dir.mkdir()
    chroma.start()
    cluster, repo_id, work = _cluster(tmp_path, process_db, chroma.url,
                                      service="max_attempts = 20")
    try:
        cluster.start_worker()
        cluster.start_server()
        chroma.stop()
        head = work.head()
        cluster.push_webhook(repo_id, head)
        job = keys.job(f"index:{repo_id}:main:default")
        client = cluster.client()
        wait_until(lambda: "StoreUnavailable" in (client.hget(job, "last_error") or ""), 60,
                   "the job to fail on the stopped Chroma server")
        chroma.start()
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=120)
    finally:
        cluster.stop_all()
        chroma.stop()


def test_poison_job_is_parked_after_its_attempts_and_says_so(tmp_path: Path, process_db: str,
                                                             chroma_server) -> None:
    cluster, repo_id, _ = _cluster(tmp_path, process_db, chroma_server.url,
                                   service="max_attempts = 2",
                                   url=f"file://{tmp_path}/no-such-remote.git")
    try:
        cluster.start_worker()
        cluster.start_server()
        cluster.push_webhook(repo_id, "a" * 40)
        job_key = f"index:{repo_id}:main:default"
        client = cluster.client()
        wait_until(lambda: client.hexists(keys.PARKED, job_key), 90, "the job to be parked")
        assert "RemoteUnavailable" in client.hget(keys.PARKED, job_key)
        # The worker logs it just after parking the job in Redis.
        wait_until(lambda: f"job {job_key} parked after 2 attempts" in _log(cluster, "worker-w1"),
                   30, "the worker to log the parking")
    finally:
        cluster.stop_all()


# --- a dead worker's job comes back within a lease, not a visibility timeout ------------------


def _wait_running(cluster: Cluster, repo_id: str, head: str) -> dict[str, str]:
    """Push ``head`` and wait until its job runs; the job's hash then."""
    assert cluster.push_webhook(repo_id, head).status_code == 202
    client, job = cluster.client(), keys.job(f"index:{repo_id}:main:default")
    wait_until(lambda: client.hget(job, "state") == "running", 60, "the job to start")
    return client.hgetall(job)


def _wait_maintenance_done(cluster: Cluster) -> None:
    """The idle-branch retirement the scheduler fires when it starts has run: it fetches every
    mirror, and would otherwise take a pack meant for the index job."""
    client = cluster.client()
    retire = jobspec.JobSpec(kind=jobspec.KIND_RETIRE_IDLE, repo=jobspec.ALL,
                             queue=jobspec.QUEUE_MAINTENANCE, reason="retire_idle").key
    wait_until(lambda: client.hexists(keys.SCHEDULE_LAST_RUN, "retire_idle")
               and not client.exists(keys.job(retire)), 60, "the startup retirement to run")


def _holder_host_and_pid(running_job: dict[str, str]) -> tuple[str, int]:
    host, pid, _ = running_job["lock_token"].split(":")
    return host, int(pid)


def _still_running(cluster: Cluster, repo_id: str) -> bool:
    """Checked right after a kill: the job was killed mid-run, not after it finished."""
    return cluster.client().hget(keys.job(f"index:{repo_id}:main:default"), "state") == "running"


def _stop_consuming(cluster: Cluster, node: str) -> None:
    """The worker ``node`` finishes what it runs but takes no new message from any queue."""
    control = Celery(broker=cluster.env["FRESHMARK_REDIS_URL"]).control
    for queue in jobspec.BUILTIN_QUEUES:  # what start_worker's workers consume
        replies = control.cancel_consumer(queue, destination=[node], reply=True, timeout=10)
        assert replies and node in replies[0], replies


def _log(cluster: Cluster, name: str) -> str:
    return (cluster.root / f"{name}.log").read_text(errors="replace")


def _deliveries(worker_log: str) -> list[str]:
    """Celery task ids of the index messages a worker received, in order (a requeued message
    keeps its id; a re-sent job gets a new one)."""
    return re.findall(r"index_branch\[([0-9a-f-]+)\] received", worker_log)


def test_job_of_a_killed_worker_is_sent_again_once_its_lease_lapses(
    tmp_path: Path, private_redis: PrivateRedis, chroma_server
) -> None:
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      **SWEEP_ONLY)
    try:
        head = _big_commit(work, files=KILLED_JOB_FILES)
        worker = cluster.start_worker(concurrency=1)
        cluster.start_server()
        cluster.start_scheduler()
        _wait_running(cluster, repo_id, head)
        cluster.kill(worker)  # parent and child: no requeue, the message stays unacked
        assert _still_running(cluster, repo_id)
        cluster.start_worker(concurrency=1, name="w2")
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=RECOVERY_DEADLINE_SECONDS)
    finally:
        cluster.stop_all()
    assert f"job index:{repo_id}:main:default lost its worker" in _log(cluster, "scheduler")


def test_job_waiting_on_the_branch_lock_in_a_killed_worker_runs_again_within_a_lease(
    tmp_path: Path, private_redis: PrivateRedis, chroma_server
) -> None:
    # The worker keeps the job's lock-busy retry until its countdown: the job is queued, not
    # running, and its message is in the dead worker's hands until the visibility timeout.
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      **SWEEP_ONLY)
    try:
        worker = cluster.start_worker(concurrency=1)
        cluster.start_server()
        cluster.start_scheduler()
        client, job = cluster.client(), keys.job(f"index:{repo_id}:main:default")
        lock = keys.branch_lock(repo_id, "main")
        other_run = branch_lock.acquire(client, lock, LONG_VISIBILITY_SECONDS)  # a live holder
        assert other_run is not None
        head = work.head()
        assert cluster.push_webhook(repo_id, head).status_code == 202
        wait_until(lambda: len(_deliveries(_log(cluster, "worker-w1"))) >= 2, 60,
                   "the worker to take the job's lock-busy retry")
        cluster.kill(worker)
        assert client.hget(job, "state") == jobspec.QUEUED
        branch_lock.release(client, lock, other_run)
        cluster.start_worker(concurrency=1, name="w2")
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=RECOVERY_DEADLINE_SECONDS)
    finally:
        cluster.stop_all()
    assert f"job index:{repo_id}:main:default lost its worker" in _log(cluster, "scheduler")


def test_job_of_a_killed_pool_child_runs_again(tmp_path: Path, private_redis: PrivateRedis,
                                               chroma_server) -> None:
    # The child is killed at one chosen point inside the mirror fetch: while the remote holds
    # the pack of the pushed commit half-sent (the fetch that once left git locks behind).
    remote = PausingRemote(tmp_path / "remotes").start()
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      url=f"{remote.url}/shop.git", **SWEEP_ONLY)
    try:
        cluster.start_worker(concurrency=1)
        cluster.start_server()
        cluster.start_scheduler()
        cluster.push_webhook(repo_id, work.head())
        cluster.wait_for_stamp(repo_id, work.head())  # pack 1: the mirror's clone
        _wait_maintenance_done(cluster)  # its fetch must not be the one held
        remote.pause_on_pack = 2
        head = _big_commit(work, files=KILLED_JOB_FILES)
        assert cluster.push_webhook(repo_id, head).status_code == 202
        assert remote.paused.wait(60), "the job never fetched the pushed commit"
        job = cluster.client().hgetall(keys.job(f"index:{repo_id}:main:default"))
        _, child = _holder_host_and_pid(job)
        os.kill(child, signal.SIGKILL)
        assert _still_running(cluster, repo_id)
        remote.release()
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=RECOVERY_DEADLINE_SECONDS)
    finally:
        cluster.stop_all()
        remote.stop()


def test_stale_git_locks_in_the_mirror_do_not_stop_the_next_push_from_stamping(
    tmp_path: Path, private_redis: PrivateRedis, chroma_server
) -> None:
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      **SWEEP_ONLY)
    try:
        cluster.start_worker(concurrency=1)
        cluster.start_server()
        cluster.push_webhook(repo_id, work.head())
        cluster.wait_for_stamp(repo_id, work.head())
        mirror = cluster.settings().mirrors_dir / f"{repo_id}.git"
        for name in ("HEAD.lock", "packed-refs.lock", "refs/heads/main.lock"):
            (mirror / name).write_text("0" * 40 + "\n")  # what a kill -9 mid-fetch leaves
        head = work.write("src/late.py", "L = 1\n").commit("after the crash")
        work.push("origin", "main")
        cluster.push_webhook(repo_id, head)
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=RECOVERY_DEADLINE_SECONDS)
    finally:
        cluster.stop_all()
    assert "removed stale git lock" in _log(cluster, "worker-w1")


@pytest.mark.skipif(not can_run_on_own_host(), reason="needs unshare --uts to act as two hosts")
def test_job_of_a_killed_pool_child_requeued_to_another_host_is_not_held_up_by_its_lock(
    tmp_path: Path, private_redis: PrivateRedis, chroma_server
) -> None:
    # Two replicas of one queue's worker (the chart runs two for "hot"), each concurrency 1:
    # the requeued message goes to the idle one, which cannot tell that the lock's holder, a
    # process on another host, is dead. It used to wait for the lock's TTL (0.9 x visibility).
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma_server.url,
                                      **SWEEP_ONLY)
    try:
        head = _big_commit(work, files=KILLED_JOB_FILES)
        for name in ("a", "b"):
            cluster.start_worker(concurrency=1, name=name, host=f"fm-host-{name}")
        cluster.start_server()
        cluster.start_scheduler()
        host, child = _holder_host_and_pid(_wait_running(cluster, repo_id, head))
        killed, other = ("a", "b") if host == "fm-host-a" else ("b", "a")
        # The killed child's own worker would restart its pool and could take the requeued
        # message back itself; it stops consuming first, so only the other host can.
        _stop_consuming(cluster, f"{killed}@{host}")
        os.kill(child, signal.SIGKILL)
        assert _still_running(cluster, repo_id)
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=RECOVERY_DEADLINE_SECONDS)
    finally:
        cluster.stop_all()
    first_delivery = _deliveries(_log(cluster, f"worker-{killed}"))[0]
    assert first_delivery in _deliveries(_log(cluster, f"worker-{other}"))  # requeued there


def test_job_of_a_live_worker_keeps_its_lock_and_is_not_sent_again(
    tmp_path: Path, private_redis: PrivateRedis
) -> None:
    chroma = ChromaServer(tmp_path / "chroma-data")
    chroma.data_dir.mkdir()
    chroma.start()
    cluster, repo_id, work = _cluster(tmp_path, private_redis.url, chroma.url, **SWEEP_ONLY)
    try:
        cluster.start_worker(concurrency=1)
        cluster.start_server()
        cluster.start_scheduler()
        os.kill(chroma.proc.pid, signal.SIGSTOP)  # the job will wait on the store, worker alive
        running = _wait_running(cluster, repo_id, work.head())
        time.sleep(4 * LEASE_SECONDS)  # an unrenewed lock would have lapsed by now
        client, job = cluster.client(), keys.job(f"index:{repo_id}:main:default")
        assert client.hmget(job, "id", "attempts") == [running["id"], "1"]
        assert client.get(running["lock"]) == running["lock_token"]
        os.kill(chroma.proc.pid, signal.SIGCONT)
        cluster.wait_for_stamp(repo_id, work.head(), timeout_seconds=RECOVERY_DEADLINE_SECONDS)
        # The stamp is written before the run's last steps: wait for the job itself to finish.
        wait_until(lambda: not client.exists(job), RECOVERY_DEADLINE_SECONDS, "the job to finish")
    finally:
        os.kill(chroma.proc.pid, signal.SIGCONT)
        cluster.stop_all()
        chroma.stop()
    assert "lost its worker" not in _log(cluster, "scheduler")

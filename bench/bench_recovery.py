"""Recovery after a kill, with real processes: how long a killed worker's job stays stranded.

A private redis-server, a Chroma server, ``freshmark worker``/``serve``/``scheduler`` processes
and a bare ``file://`` remote, with a long visibility timeout (600 s), so that kombu's own
redelivery cannot be what recovers a job: only the leases can.

1. A lock-busy retry in a worker killed whole: the bench holds the branch lock as a live run of
   another layer would; a push's job meets the busy lock and its retry is taken by worker A,
   which is then killed (``kill -9`` of its process group) and the lock released. A standby
   worker B (consuming only ``maintenance`` until then) is told to consume the job's queue at the
   kill. Figures: seconds from the kill until the scheduler re-sent the job (its id changed) and
   until the branch is stamped at the push, against ``--lease-seconds``.
2. A split index whose coordinator is killed while a helper holds a batch: two workers, a
   commit of ``--files`` files cut into batches of 5 with ``lease_seconds = 120``; the
   coordinating pool process is killed (``kill -9``) while the other worker's process holds a
   claim. The helper's worker is stopped (SIGSTOP) from then until the next coordinator has
   cancelled the run, so that it is still mid-batch then, as a helper embedding a large batch
   with a real model is. Figures: seconds from the kill until the new coordinator started its
   own run (the record's id changed: the drain is over) and until the stamp.

    .venv/bin/python bench/bench_recovery.py [--lease-seconds 10] [--runs 3] [--files 150]
        [--skip 1|2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_cluster import Chroma  # noqa: E402 - after the path tweak
from celery import Celery
from cluster_support import (
    SECRET_ENV,
    Cluster,
    PrivateRedis,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.queue import branch_lock, fanout

VISIBILITY_SECONDS = 600
BATCH_LEASE_SECONDS = 120
NO_SCHEDULED_WORK = '[[layers]]\nname = "default"\ninterval_seconds = 0\n'


def _cluster(root: Path, redis_url: str, chroma_url: str, lease_seconds: int,
             layers: str = NO_SCHEDULED_WORK) -> Cluster:
    remote, work = make_remote(root / "remotes", "shop")
    repo_id = f"shop-{uuid.uuid4().hex[:6]}"
    config = write_config(root / "freshmark.toml", [
        {"id": repo_id, "url": f"file://{remote}", "branches": ["main"], "provider": "github",
         "webhook_secret_env": SECRET_ENV}], layers=layers,
        service="reconcile_interval_seconds = 0")
    env = cluster_env(root, redis_url, chroma_url, config,
                      visibility_timeout_seconds=VISIBILITY_SECONDS,
                      lock_lease_seconds=lease_seconds)
    return Cluster(root, env, repos={"shop": (repo_id, work)})


def _commit(work: RepoBuilder, files: int, version: int) -> str:
    body = "".join(f"def handler_{j}(order):\n    return order.total * {j + version}\n\n"
                   for j in range(12))
    for i in range(files):
        work.write(f"src/pkg{i % 20}/mod{i}.py", f'"""Module {i}."""\n\n{body}')
    sha = work.commit(f"revision {version}")
    work.push("origin", "main")
    return sha


def _receipts(cluster: Cluster, worker: str) -> int:
    """Index messages the worker received (a retry is received again under the same id)."""
    log = cluster.root / f"worker-{worker}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return len(re.findall(r"index_branch\[[0-9a-f-]+\] received", text))


# --- 1. a lock-busy retry in a worker killed whole ----------------------------------------------


def lock_busy_run(cluster: Cluster, run: int) -> dict[str, float]:
    repo_id, work = cluster.repos["shop"]
    client, job_key = cluster.client(), f"index:{repo_id}:main:default"
    worker_a = cluster.start_worker(concurrency=1, name=f"a{run}")
    standby = f"b{run}"
    cluster.start_worker(queues="maintenance", concurrency=1, name=standby)
    lock = keys.branch_lock(repo_id, "main")
    other_run = branch_lock.acquire(client, lock, VISIBILITY_SECONDS)
    assert other_run is not None
    head = _commit(work, 3, run)
    cluster.push_webhook(repo_id, head)
    wait_until(lambda: _receipts(cluster, f"a{run}") >= 2, 60, "the lock-busy retry to arrive")
    first_id = client.hget(keys.job(job_key), "id")
    cluster.kill(worker_a)
    killed = time.monotonic()
    branch_lock.release(client, lock, other_run)
    control = Celery(broker=cluster.env["FRESHMARK_REDIS_URL"]).control
    control.add_consumer("hot", destination=[f"{standby}@{socket.gethostname()}"], reply=True,
                         timeout=10)
    wait_until(lambda: client.hget(keys.job(job_key), "id") != first_id, VISIBILITY_SECONDS,
               "the job to be sent again")
    resent = time.monotonic() - killed
    cluster.wait_for_stamp(repo_id, head, timeout_seconds=VISIBILITY_SECONDS)
    return {"resent_s": round(resent, 1), "stamped_s": round(time.monotonic() - killed, 1)}


def bench_lock_busy(root: Path, redis_url: str, chroma_url: str, lease_seconds: int,
                    runs: int) -> dict[str, object]:
    cluster = _cluster(root / "lock-busy", redis_url, chroma_url, lease_seconds)
    try:
        cluster.start_server()
        cluster.start_scheduler()
        rows = []
        for run in range(runs):
            rows.append(lock_busy_run(cluster, run))
            print(json.dumps({"lock_busy_run": rows[-1]}), flush=True)
            cluster.stop_all()  # the next run's workers start afresh; server and scheduler too
            cluster.start_server()
            cluster.start_scheduler()
    finally:
        cluster.stop_all()
    return {"lease_seconds": lease_seconds, "runs": rows,
            "median_resent_s": statistics.median(r["resent_s"] for r in rows),
            "median_stamped_s": statistics.median(r["stamped_s"] for r in rows)}


# --- 2. a split run whose coordinator is killed while a helper holds a batch -----------------


def _coordinator_and_helper_claim(cluster: Cluster) -> tuple[int, int, str]:
    """(coordinator pid, helper pid, run id) once a helper holds a claim on an unfinished
    batch; the helper's worker is then stopped (SIGSTOP) so that it still holds it when the
    next coordinator cancels the run, as a helper embedding a large batch does."""
    repo_id, _ = cluster.repos["shop"]
    client = cluster.client()
    while True:
        record = fanout.read(client, repo_id, "main")
        lock = client.get(keys.branch_lock(repo_id, "main"))
        coordinator = int(lock.split(":")[1]) if lock else 0
        for claim in record.claims.values() if record and lock else ():
            helper = int(claim.holder.split(":")[1])
            if helper == coordinator or claim.batch in record.results:
                continue
            os.killpg(os.getpgid(helper), signal.SIGSTOP)
            now = fanout.read(client, repo_id, "main")
            if now and claim.batch not in now.results and now.claims.get(claim.batch) == claim:
                return coordinator, helper, record.id
            os.killpg(os.getpgid(helper), signal.SIGCONT)
        time.sleep(0.01)


def bench_drain(root: Path, redis_url: str, chroma_url: str, lease_seconds: int,
                files: int) -> dict[str, float]:
    layers = NO_SCHEDULED_WORK + (f"[scale_out]\nmin_files = 40\nfiles_per_batch = 5\n"
                                  f"lease_seconds = {BATCH_LEASE_SECONDS}\n")
    cluster = _cluster(root / "drain", redis_url, chroma_url, lease_seconds, layers=layers)
    repo_id, work = cluster.repos["shop"]
    try:
        for name in ("w1", "w2"):
            cluster.start_worker(concurrency=1, name=name)
        cluster.start_server()
        cluster.start_scheduler()
        head = _commit(work, files, 0)
        cluster.push_webhook(repo_id, head)
        coordinator, helper, old_run = _coordinator_and_helper_claim(cluster)
        helper_group = os.getpgid(helper)
        os.kill(coordinator, signal.SIGKILL)
        killed = time.monotonic()
        client = cluster.client()

        def cancelled() -> bool:
            record = fanout.read(client, repo_id, "main")
            return record is None or record.state == fanout.CANCELLED or record.id != old_run

        wait_until(cancelled, VISIBILITY_SECONDS, "the next coordinator to cancel the run")
        os.killpg(helper_group, signal.SIGCONT)

        def new_run() -> bool:
            record = fanout.read(client, repo_id, "main")
            return record is not None and record.id != old_run

        wait_until(new_run, VISIBILITY_SECONDS, "the new coordinator's run")
        drained = time.monotonic() - killed
        cluster.wait_for_stamp(repo_id, head, timeout_seconds=VISIBILITY_SECONDS)
        return {"batch_lease_seconds": BATCH_LEASE_SECONDS, "files": files,
                "new_run_started_s": round(drained, 1),
                "stamped_s": round(time.monotonic() - killed, 1)}
    finally:
        cluster.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lease-seconds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=150)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: 1,2")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    root = Path(tempfile.mkdtemp(prefix="freshmark-bench-recovery-"))
    redis, chroma = PrivateRedis(root / "redis"), None
    results: dict[str, object] = {}
    try:
        redis.start()
        chroma = Chroma(root)
        if "1" not in skip:
            results["lock_busy_worker_killed"] = bench_lock_busy(
                root, redis.url, chroma.url, args.lease_seconds, args.runs)
        if "2" not in skip:
            results["split_run_drain"] = bench_drain(root, redis.url, chroma.url,
                                                     args.lease_seconds, args.files)
    finally:
        if chroma is not None:
            chroma.stop()
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark the cluster path with real processes: a private redis-server, a Chroma server,
``freshmark worker`` (Celery prefork), ``freshmark serve`` and bare ``file://`` remotes.

1. Push-to-searchable latency: commit 10 changed files, push, send the signed webhook; the
   clock runs from the webhook request to the moment the branch's manifest (the stamp every
   search reads) names the new commit. Median and p95 over ``--pushes`` pushes.
2. Sustained pushes across ``--repos`` repositories for ``--seconds``: pushes per minute
   offered and absorbed, jobs run vs coalesced, queue length over time, time to drain.
3. On-demand branch from a base with d changed files (in process, embedded store): seconds
   and embeddings computed, against a full index of the same branch.

    .venv/bin/python bench/bench_cluster.py [--pushes 10] [--repos 20] [--seconds 60]
        [--rate-per-minute 240] [--base-files 300] [--changed 1,10,50] [--embedder hashing]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from cluster_support import (  # noqa: E402 - after the path tweak
    SECRET_ENV,
    Cluster,
    PrivateRedis,
    cluster_env,
    free_port,
    make_remote,
    wait_until,
    write_config,
)
from repo_builder import RepoBuilder

from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo


def module_text(i: int, version: int = 0, functions: int = 8) -> str:
    body = "".join(
        f"def handler_{i}_{j}(order, amount):\n"
        f"    \"\"\"Apply rule {j} of module {i} (revision {version}).\"\"\"\n"
        f"    total = order.total + amount * {j + version}\n"
        f"    return total if total > {j} else 0\n\n"
        for j in range(functions)
    )
    return f'"""Module {i}."""\n\n{body}'


def process_stat(stat: Path) -> tuple[int, float]:
    """(process group, user + system CPU seconds) of one ``/proc/<pid>/stat``."""
    fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command, which may hold ")"
    return int(fields[2]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class Chroma:
    def __init__(self, root: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        binary = Path(sys.executable).parent / "chroma"
        self.proc = subprocess.Popen(
            [str(binary), "run", "--path", str(root / "chroma"), "--port", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        import httpx

        def up() -> bool:
            try:
                return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 60, "the Chroma server")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def start_cluster(root: Path, redis_url: str, chroma_url: str, repos: int,
                  concurrency: int) -> Cluster:
    entries, works = [], {}
    suffix = uuid.uuid4().hex[:6]
    for n in range(repos):
        remote, work = make_remote(root / "remotes", f"r{n}")
        repo_id = f"r{n}-{suffix}"
        entries.append({"id": repo_id, "url": f"file://{remote}", "branches": ["main"],
                        "provider": "github", "webhook_secret_env": SECRET_ENV})
        works[f"r{n}"] = (repo_id, work)
    config = write_config(root / "freshmark.toml", entries,
                          service="reconcile_interval_seconds = 0")
    env = cluster_env(root, redis_url, chroma_url, config, visibility_timeout_seconds=600)
    cluster = Cluster(root, env, repos=works)
    cluster.start_worker(concurrency=concurrency)
    cluster.start_server()
    return cluster


def push_change(work: RepoBuilder, files: int, version: int) -> str:
    for i in range(files):
        work.write(f"src/m{i}.py", module_text(i, version))
    sha = work.commit(f"revision {version}")
    work.push("origin", "main")
    return sha


# --- 1. latency --------------------------------------------------------------------------------


def bench_latency(cluster: Cluster, pushes: int) -> dict[str, float]:
    repo_id, work = cluster.repos["r0"]
    cluster.push_webhook(repo_id, work.head())
    cluster.wait_for_stamp(repo_id, work.head(), timeout_seconds=120)  # warm: mirror + collection
    store = Store.open(cluster.settings())  # one client: polling must not add connect time
    latencies = []
    for version in range(1, pushes + 1):
        sha = push_change(work, 10, version)
        started = time.perf_counter()
        assert cluster.push_webhook(repo_id, sha).status_code == 202
        deadline = started + 120
        while store.branch(f"id:{repo_id}", "main").manifest.commit != sha:
            assert time.perf_counter() < deadline, cluster.logs()
            time.sleep(0.01)
        latencies.append(time.perf_counter() - started)
    return {"pushes": pushes, "median_s": statistics.median(latencies),
            "p95_s": percentile(latencies, 0.95), "max_s": max(latencies)}


# --- 2. sustained pushes -----------------------------------------------------------------------


def _sample_queues(cluster: Cluster, stop: threading.Event, samples: list[tuple[float, int, int]],
                   started: float) -> None:
    client = cluster.client()
    while not stop.wait(1.0):
        waiting = sum(jobs.queue_lengths(client).values())
        pending = len(jobs.pending_jobs(client))
        samples.append((round(time.perf_counter() - started, 1), waiting, pending))


def bench_sustained(cluster: Cluster, seconds: float, rate_per_minute: float) -> dict[str, object]:
    rng = random.Random(7)
    names = sorted(cluster.repos)
    for name in names:  # warm every repo first: mirror cloned, collection created
        repo_id, work = cluster.repos[name]
        cluster.push_webhook(repo_id, work.head())
    for name in names:
        repo_id, work = cluster.repos[name]
        cluster.wait_for_stamp(repo_id, work.head(), timeout_seconds=300)
    samples: list[tuple[float, int, int]] = []
    stop = threading.Event()
    started = time.perf_counter()
    sampler = threading.Thread(target=_sample_queues, args=(cluster, stop, samples, started))
    sampler.start()
    outcomes: dict[str, int] = {}
    heads: dict[str, str] = {}
    interval = 60.0 / rate_per_minute
    sent = 0
    while time.perf_counter() - started < seconds:
        name = rng.choice(names)
        repo_id, work = cluster.repos[name]
        sha = push_change(work, rng.randint(1, 5), sent + 100)
        answer = cluster.push_webhook(repo_id, sha).json()
        for job in answer.get("jobs", []):
            outcomes[job["outcome"]] = outcomes.get(job["outcome"], 0) + 1
        heads[repo_id] = sha
        sent += 1
        time.sleep(max(0.0, started + sent * interval - time.perf_counter()))
    offered_seconds = time.perf_counter() - started
    for repo_id, sha in heads.items():
        cluster.wait_for_stamp(repo_id, sha, timeout_seconds=600)
    drained_seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    return {
        "repos": len(names), "pushes": sent,
        "offered_pushes_per_min": round(sent / offered_seconds * 60, 1),
        "absorbed_pushes_per_min": round(sent / drained_seconds * 60, 1),
        "drain_after_last_push_s": round(drained_seconds - offered_seconds, 1),
        "enqueue_outcomes": outcomes,
        "max_queue_length": max((s[1] for s in samples), default=0),
        "max_pending_jobs": max((s[2] for s in samples), default=0),
        "queue_timeline_every_5s": [(t, q, p) for t, q, p in samples[::5]],
    }


# --- 3. on-demand branches ---------------------------------------------------------------------


def bench_ondemand(root: Path, base_files: int, changed: list[int], embedder: str) -> list[dict]:
    work = RepoBuilder.init(root / "ondemand-repo")
    for i in range(base_files):
        work.write(f"src/pkg{i % 10}/m{i}.py", module_text(i))
    work.commit("base")
    shared = Settings(home=root / "ondemand-home", embedder=embedder)
    base = index_repo(IndexRequest(work.path, branch="main", repo_id="od"), settings=shared,
                      config=Config())
    rows = []
    for d in changed:
        branch = f"feature-{d}"
        work.branch(branch).checkout(branch)
        for i in range(d):
            work.write(f"src/pkg{i % 10}/m{i}.py", module_text(i, version=d))
        work.commit(f"{d} files changed")
        work.checkout("main")
        request = IndexRequest(work.path, branch=branch, repo_id="od", base_branch="main")
        seeded = index_repo(request, settings=shared, config=Config())
        fresh = Settings(home=root / f"full-home-{d}", embedder=embedder)  # a cold cache
        full = index_repo(IndexRequest(work.path, branch=branch, repo_id="od"), settings=fresh,
                          config=Config())
        rows.append({
            "changed_files": d, "chunks_in_branch": full.chunks_added,
            "on_demand_s": seeded.seconds, "full_index_s": full.seconds,
            "time_ratio": round(seeded.seconds / full.seconds, 3),
            "on_demand_embeddings_computed": seeded.embeddings_computed,
            "full_embeddings_computed": full.embeddings_computed,
            "layered_on": seeded.layered_on,
        })
    return [{"base_index_s": base.seconds, "base_chunks": base.chunks_added}, *rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pushes", type=int, default=10)
    parser.add_argument("--repos", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate-per-minute", type=float, default=240)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--base-files", type=int, default=300)
    parser.add_argument("--changed", default="1,10,50")
    parser.add_argument("--embedder", default="hashing", help="for the on-demand part")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: 1,2,3")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    root = Path(tempfile.mkdtemp(prefix="freshmark-bench-cluster-"))
    results: dict[str, object] = {}
    redis, chroma, cluster = PrivateRedis(root / "redis"), None, None
    try:
        if not {"1", "2"} <= skip:
            redis.start()
            chroma = Chroma(root)
            cluster = start_cluster(root, redis.url, chroma.url, args.repos, args.concurrency)
            if "1" not in skip:
                results["push_to_searchable"] = bench_latency(cluster, args.pushes)
                print(json.dumps({"push_to_searchable": results["push_to_searchable"]}), flush=True)
            if "2" not in skip:
                results["sustained"] = bench_sustained(cluster, args.seconds, args.rate_per_minute)
                print(json.dumps({"sustained": results["sustained"]}), flush=True)
        if "3" not in skip:
            changed = [int(x) for x in args.changed.split(",")]
            results["on_demand"] = bench_ondemand(root, args.base_files, changed, args.embedder)
            print(json.dumps({"on_demand": results["on_demand"]}), flush=True)
    finally:
        if cluster is not None:
            cluster.stop_all()
        if chroma is not None:
            chroma.stop()
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

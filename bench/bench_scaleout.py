"""Scale-out full index: one real repository fully indexed by 1, 2 and 4 worker processes.

Real processes: a private redis-server, a Chroma server and ``freshmark worker --concurrency N``
(N prefork processes on this machine), with the default embedder (MiniLM int8). The repository
is cloned from a local mirror; ``--limit-files`` keeps every k-th file of its head (a spread of
small and large files) in one commit, to keep the run short. Each configuration starts from
nothing: a fresh ``FRESHMARK_HOME`` (no embedding cache, no mirror, models loaded cold in each
process) and a collection of its own; with ``--warm-model`` each home starts with the model
graph a host builds once (4.3 s of CPU here, which otherwise one process pays while the others
wait for it) and nothing else. The unsplit single task (``min_files = 0``) on one process is
the baseline.

Figures per configuration:

- wall seconds, from queuing the job to the manifest naming the head; job seconds, the job's
  own duration (its ``freshmark_job_duration_seconds``; mirror clone included)
- chunks/s, overall and per worker process (chunks written / job seconds / N)
- worker CPU seconds (user + system of the worker's whole process tree, from ``getrusage``
  once it is stopped and reaped), the steadier figure on a shared machine; and the CPU seconds
  the Chroma server and Redis used meanwhile (with every core pinned to a worker, that time is
  taken from the workers)
- speed-up against the split run on one process and against the unsplit single task
- batches written by the job's own process and by helpers
- coordination overhead: the share of process time (job seconds × N) spent outside batches —
  planning the diff, sending messages, waiting for the last batch, the tombstones, the
  manifest and the lexical snapshot — and the same in seconds of wall time
  (job seconds − batch seconds / N). The model load of each process falls inside its first
  batch, so it counts as batch work.

    .venv/bin/python bench/bench_scaleout.py [--repo /work/.mirror/pydata+xarray/repo]
        [--limit-files 120] [--files-per-batch 4] [--workers 1,2,4] [--embedder minilm]
        [--repeat 1]

With ``--repeat`` the whole set of configurations runs again in the same order (interleaved, so
a change in the machine's load spreads over all of them); the summary gives medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_cluster import Chroma, process_stat  # noqa: E402 - after the path tweak
from cluster_support import Cluster, PrivateRedis, cluster_env, wait_until, write_config
from prometheus_client import CollectorRegistry, multiprocess
from repo_builder import git

from freshmark.adapters import keys
from freshmark.adapters.embedding import prepare_embedder
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec
from freshmark.core.settings import Settings

DEFAULT_MIRROR = Path("/work/.mirror/pydata+xarray/repo")


def subset_repository(mirror: Path, root: Path, limit_files: int) -> tuple[Path, str, str, int]:
    """A one-commit repository of ``mirror``'s head files, every k-th one when ``limit_files``
    is set: (path, branch, head, files). No history: the worker's mirror clone stays cheap,
    so the job's time is the index."""
    work = root / "source"
    work.mkdir()
    files = [f for f in git(mirror, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0") if f]
    if limit_files and limit_files < len(files):
        stride = len(files) / limit_files
        files = [files[int(i * stride)] for i in range(limit_files)]
    for start in range(0, len(files), 200):  # ``git archive`` keeps modes and symlinks
        archive = subprocess.run(["git", "archive", "HEAD", "--", *files[start : start + 200]],
                                 cwd=mirror, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive.stdout, check=True)
    git(work, "init", "--quiet", "--initial-branch", "main")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", f"bench: {len(files)} files of {mirror}")
    return work, "main", git(work, "rev-parse", "HEAD"), len(files)


def _children_cpu_seconds() -> float:
    """CPU seconds of every reaped child process tree of this process (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _services_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds the shared services (the Chroma server, Redis) have used so far: what they
    take from the cores the pinned workers run on."""
    return sum(process_stat(Path(f"/proc/{pid}/stat"))[1] for pid in pids)


def metric(registry: CollectorRegistry, name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def run_configuration(base: Path, redis_url: str, chroma_url: str, source: Path, branch: str,
                      head: str, processes: int, split: bool, args: argparse.Namespace,
                      service_pids: list[int]) -> dict:
    label = f"{processes}p-{'split' if split else 'single'}"
    repo_id = f"bench-{label}-{uuid.uuid4().hex[:6]}"
    root = base / repo_id
    root.mkdir(parents=True)
    scale_out = (f"[scale_out]\nmin_files = {1 if split else 0}\n"
                 f"files_per_batch = {args.files_per_batch}\n")
    config = write_config(root / "freshmark.toml", [
        {"id": repo_id, "url": f"file://{source}", "branches": [branch]}], layers=scale_out)
    env = cluster_env(root, redis_url, chroma_url, config, visibility_timeout_seconds=7200)
    env["FRESHMARK_EMBEDDER"] = args.embedder
    seed = base / "model-seed" / "models"
    if args.warm_model and seed.is_dir():  # a host that built its graph before: only it is copied
        shutil.copytree(seed, Path(env["FRESHMARK_HOME"]) / "cache" / "models")
    if args.pin:
        env["FRESHMARK_EMBED_THREADS"] = "1"
    cluster = Cluster(root, env)
    from workers.celery_app import create_app, make_sender

    try:
        if args.pin:  # one worker process per core, each pinned to it with one embedding thread
            for n in range(processes):
                cluster.start_worker(concurrency=1, name=f"{label}-{n}",
                                     cpu=n % (os.cpu_count() or 1))
        else:
            cluster.start_worker(concurrency=processes, name=label)
        client = cluster.client()
        send = make_sender(create_app(Settings.from_env(env), jobspec.Timings.from_env(env)))
        store = Store.open(cluster.settings())
        spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo=repo_id, branch=branch)
        load_before = os.getloadavg()[0]
        services_before = _services_cpu_seconds(service_pids)
        started = time.perf_counter()
        jobs.submit(client, spec, send)

        def stamped() -> bool:
            index = store.branch(f"id:{repo_id}", branch)
            return index is not None and index.manifest.commit == head

        wait_until(stamped, args.timeout_seconds, f"{label} to stamp {head[:8]}")
        wall_seconds = time.perf_counter() - started
        services_seconds = _services_cpu_seconds(service_pids) - services_before
        wait_until(lambda: not client.exists(keys.job(spec.key)), 120, "the job to finish")
        chunks = store.branch(f"id:{repo_id}", branch).count()
    finally:
        cpu_before = _children_cpu_seconds()
        cluster.stop_all()
    worker_cpu_seconds = _children_cpu_seconds() - cpu_before
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(root / "prometheus"))
    hot = {"queue": jobspec.QUEUE_HOT}
    job_seconds = metric(registry, "freshmark_job_duration_seconds_sum", hot)
    batch_seconds = metric(registry, "freshmark_index_batch_duration_seconds_sum", hot)
    by_runner = {r: metric(registry, "freshmark_index_batches_total", {**hot, "runner": r})
                 for r in ("coordinator", "helper")}
    row = {
        "config": label, "processes": processes, "split": split, "chunks": chunks,
        "wall_s": round(wall_seconds, 1), "job_s": round(job_seconds, 1),
        "chunks_per_s": round(chunks / job_seconds, 1),
        "chunks_per_s_per_worker": round(chunks / job_seconds / processes, 1),
        "batches_by_coordinator": int(by_runner["coordinator"]),
        "batches_by_helpers": int(by_runner["helper"]),
        "batch_s_total": round(batch_seconds, 1),
        "worker_cpu_s": round(worker_cpu_seconds, 1),
        "chunks_per_cpu_s": round(chunks / worker_cpu_seconds, 1) if worker_cpu_seconds else None,
        "services_cpu_s": round(services_seconds, 1),
        "load_avg_at_start": round(load_before, 2),
        "uptime_at_end": subprocess.getoutput("uptime").strip(),
        "pinned": bool(args.pin),
    }
    if split:
        row["coordination_overhead_share"] = round(1 - batch_seconds / (job_seconds * processes),
                                                   3)
        row["outside_batches_s"] = round(job_seconds - batch_seconds / processes, 1)
    return row


def medians(rows: list[dict]) -> list[dict]:
    """One row per configuration: the median of each figure over its repeats."""
    out = []
    for label in dict.fromkeys(r["config"] for r in rows):
        runs = [r for r in rows if r["config"] == label]
        row = {"config": label, "processes": runs[0]["processes"], "split": runs[0]["split"],
               "runs": len(runs)}
        for name, value in runs[0].items():
            if name not in row and isinstance(value, int | float) and not isinstance(value, bool):
                row[name] = round(statistics.median(r[name] for r in runs), 3)
        out.append(row)
    return out


def with_ratios(rows: list[dict]) -> list[dict]:
    single = next((r for r in rows if not r["split"]), None)
    split_one = next((r for r in rows if r["split"] and r["processes"] == 1), None)
    for row in rows:
        if split_one:
            row["speedup_vs_split_1p"] = round(split_one["job_s"] / row["job_s"], 2)
        if single:
            row["speedup_vs_single_task"] = round(single["job_s"] / row["job_s"], 2)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=DEFAULT_MIRROR,
                        help="a local git repository or bare mirror to clone")
    parser.add_argument("--limit-files", type=int, default=120, help="0: every file")
    parser.add_argument("--files-per-batch", type=int, default=4)
    parser.add_argument("--workers", default="1,2,4", help="worker processes per run")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--no-single", action="store_true", help="skip the unsplit baseline")
    parser.add_argument("--single-workers", default="1",
                        help="worker processes for the unsplit control runs (e.g. 1,2)")
    parser.add_argument("--pin", action="store_true",
                        help="one worker process per core (taskset -c), one embedding thread")
    parser.add_argument("--warm-model", action="store_true",
                        help="copy a model graph built once into every configuration's home "
                             "(a host that has run before); the embedding cache stays empty")
    parser.add_argument("--timeout-seconds", type=float, default=3600)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="freshmark-bench-scaleout-"))
    redis, chroma = PrivateRedis(base / "redis"), None
    rows: list[dict] = []
    try:
        source, branch, head, files = subset_repository(args.repo, base, args.limit_files)
        print(json.dumps({"repository": str(args.repo), "files": files, "head": head,
                          "cores": os.cpu_count()}), flush=True)
        redis.start()
        if args.warm_model:
            prepare_embedder(args.embedder, base / "model-seed")  # none for hashing
        chroma = Chroma(base)
        service_pids = [p.pid for p in (chroma.proc, redis.proc) if p is not None]
        plan = [] if args.no_single else [(int(n), False)
                                          for n in args.single_workers.split(",")]
        plan += [(int(n), True) for n in args.workers.split(",")]
        for processes, split in plan * args.repeat:
            row = run_configuration(base, redis.url, chroma.url, source, branch, head,
                                    processes, split, args, service_pids)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if chroma is not None:
            chroma.stop()
        redis.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(with_ratios(medians(rows)), indent=2))


if __name__ == "__main__":
    main()

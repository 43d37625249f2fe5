"""The part of a split index run that does not split, timed by phase in one process.

One real split index job (``workers.execute.run_index``: mirror fetch, diff, plan, batches,
tombstones, manifest, lexical index) runs in this process against a private redis-server and a
Chroma server, with no helper: every batch message is dropped, so the job's coordinator runs
every batch itself, as with one worker. The repository is the one ``bench_scaleout`` builds
(every k-th file of a mirror's head in one commit). Each phase below is timed where it is
called (wall and this process's CPU seconds, cumulative); "outside batches" is the job less
its batches: what a second worker cannot take over. With ``--profile`` the functions that
take the most CPU outside batches are listed too (cProfile, batches left out).

    .venv/bin/python bench/profile_split_serial.py [--repo /work/.mirror/pydata+xarray/repo]
        [--limit-files 60] [--files-per-batch 4] [--embedder hashing] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cluster import Chroma  # noqa: E402 - after the path tweak
from bench_scaleout import DEFAULT_MIRROR, subset_repository
from cluster_support import PrivateRedis, cluster_env, write_config

from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.config import load_config
from freshmark.core.settings import Settings
from workers import execute, scaleout
from workers.celery_app import create_app, make_batch_sender
from workers.runtime import WorkerContext

# (module, attribute) of each phase timed; "batches" is what splits.
PHASES: dict[str, tuple[Any, str]] = {
    "batches": (scaleout, "_run_claimed"),
    "mirror_fetch": (execute, "sync_mirror"),
}


def _late_phases() -> dict[str, tuple[Any, str]]:
    """Phases inside ``index_repo``, patched where it looks them up."""
    from freshmark.adapters.git.repo import GitRepo
    from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
    from freshmark.services.indexing import indexer

    phases: dict[str, tuple[Any, str]] = {}
    try:  # absent before a split run's lexical documents came back with its batches
        from freshmark.services.indexing.split_lexical import SplitFeed
        phases["lexical_take"] = (SplitFeed, "take")
    except ImportError:
        pass
    return {
        **phases,
        "open_branch_index": (indexer, "open_branch_index"),
        "lexical_first_run_writer": (TantivyEngine, "first_run_writer"),
        "diff": (GitRepo, "diff"),
        "manifest": (indexer, "advance_manifest"),
        "lexical_after_run": (TantivyEngine, "after_run"),
        "record_counts": (indexer, "record_counts"),
    }


class Clock:
    """Cumulative wall and CPU seconds per phase (a phase inside another counts in both)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, list[float]] = {}  # CPU seconds of each call
        self.profiler: cProfile.Profile | None = None
        self._depth = 0

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            pause = name == "batches" and self.profiler is not None
            if pause:
                self.profiler.disable()  # type: ignore[union-attr]
            try:
                return function(*args, **kwargs)
            finally:
                if pause:
                    self.profiler.enable()  # type: ignore[union-attr]
                self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - wall
                self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu
                self.calls.setdefault(name, []).append(round(time.process_time() - cpu, 3))

        return timed


def run_once(base: Path, redis_url: str, chroma_url: str, source: Path, branch: str,
             args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    repo_id = f"serial-{uuid.uuid4().hex[:6]}"
    root = base / repo_id
    root.mkdir(parents=True)
    scale_out = f"[scale_out]\nmin_files = 1\nfiles_per_batch = {args.files_per_batch}\n"
    config_path = write_config(root / "freshmark.toml", [
        {"id": repo_id, "url": f"file://{source}", "branches": [branch]}], layers=scale_out)
    env = cluster_env(root, redis_url, chroma_url, config_path, visibility_timeout_seconds=7200)
    env["FRESHMARK_EMBEDDER"] = args.embedder
    env["FRESHMARK_EMBED_THREADS"] = "1"
    settings = Settings.from_env(env)
    config = load_config(config_path)
    timings = jobspec.Timings.from_env(env)
    clock = Clock()
    # Messages published for real; no worker takes them, so the job runs every batch itself.
    sender = make_batch_sender(create_app(settings, timings, config))
    ctx = WorkerContext(settings=settings, config=config, timings=timings,
                        redis=jobs.connect(redis_url),
                        send_batch=clock.wrap("send_batch", sender))
    ctx.embedder().embed(["warm the model up"])  # loaded before the clock, as in a worker
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo=repo_id, branch=branch)
    job = jobspec.Job(key=spec.key, id="j1", spec=spec, attempts=1, created_at=time.time())
    patched = []
    for name, (owner, attribute) in {**PHASES, **_late_phases()}.items():
        original = getattr(owner, attribute)
        setattr(owner, attribute, clock.wrap(name, original))
        patched.append((owner, attribute, original))
    profile_text = ""
    try:
        if args.profile:
            clock.profiler = cProfile.Profile()
            clock.profiler.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        summary = execute.run_index(job, ctx)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if clock.profiler is not None:
            clock.profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(clock.profiler, stream=out)
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats("tantivy_(engine|store)", 20)
            profile_text = out.getvalue()
    finally:
        for owner, attribute, original in reversed(patched):
            setattr(owner, attribute, original)
    row: dict[str, Any] = {
        "chunks": summary.get("chunks_added"), "batches": summary.get("batches"),
        "batches_read_back": summary.get("batches_read_back"),
        "job_wall_s": round(wall, 3), "job_cpu_s": round(cpu, 3),
        "outside_batches_wall_s": round(wall - clock.wall.get("batches", 0.0), 3),
        "outside_batches_cpu_s": round(cpu - clock.cpu.get("batches", 0.0), 3),
        "lexical_seconds": summary.get("lexical_seconds"),
    }
    for name in clock.wall:
        row[f"{name}_wall_s"] = round(clock.wall[name], 3)
        row[f"{name}_cpu_s"] = round(clock.cpu[name], 3)
    # In the order they ran: the coordinator alone runs them from the last one down.
    row["batch_cpu_s_each"] = clock.calls.get("batches", [])
    row["uptime"] = subprocess.getoutput("uptime").strip()
    return row, profile_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument("--limit-files", type=int, default=60)
    parser.add_argument("--files-per-batch", type=int, default=4)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="list the functions taking the most CPU outside batches")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="freshmark-profile-serial-"))
    redis, chroma = PrivateRedis(base / "redis"), None
    rows = []
    try:
        source, branch, head, files = subset_repository(args.repo, base, args.limit_files)
        print(json.dumps({"repository": str(args.repo), "files": files, "head": head}),
              flush=True)
        redis.start()
        chroma = Chroma(base)
        for _ in range(args.repeat):
            row, profile_text = run_once(base, redis.url, chroma.url, source, branch, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if profile_text:
                print(profile_text, flush=True)
    finally:
        if chroma is not None:
            chroma.stop()
        redis.stop()
        shutil.rmtree(base, ignore_errors=True)
    medians = {name: round(statistics.median(r[name] for r in rows), 3)
               for name, value in rows[0].items() if isinstance(value, float)}
    print(json.dumps({"medians": medians}, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark the freshness auditor and the /metrics scrape.

1. Audit time for one branch holding 100k live chunks (10 per file, 10k files, two layers) when
   1%, 10% and 100% of the files changed since the indexed commit. The store is populated
   directly with stamped records and random vectors (this measures the auditor, not embedding);
   the first build takes minutes and is kept under bench/out/ for later runs.
   "cold": tracked/tombstoned counts computed; "warm": reused from the last published rows
   (what the scheduled audit sees between index runs).
2. Scrape time of ``render_latest`` with 50 repos x 5 branches x 3 layers published, from the
   Redis store (cluster) and from the file store (one machine).

    python bench/bench_audit.py [--files 10000] [--chunks-per-file 10] [--repeat 5] [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freshmark.adapters.store.chroma import Store
from freshmark.adapters.telemetry.exposition import render_latest
from freshmark.adapters.telemetry.freshness import (
    FileFreshnessStore,
    FreshnessRow,
    RedisFreshnessStore,
)
from freshmark.core.config import Config, Layer
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord, chunk_id, utc_now_iso
from freshmark.services.upkeep.audit import audit

CONFIG = Config(layers=(Layer("hot", ("src/**",), 300, "hot"),
                        Layer("infra", ("**",), 86400, "infra")))
FRACTIONS = (0.01, 0.10, 1.0)
DIMENSIONS = 384
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def file_paths(count: int) -> list[str]:
    """80% hot (src/), 20% infra, 100 files per directory."""
    hot = int(count * 0.8)
    return [f"src/m{i // 100}/f{i}.py" if i < hot else f"deploy/d{i // 100}/f{i}.py"
            for i in range(count)]


def write_files(repo: Path, paths: list[str], version: int) -> None:
    for path in paths:
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"def f():\n    return {version}  # {path}\n", encoding="utf-8")


def build_repo(repo: Path, paths: list[str]) -> dict[str, str]:
    """A base commit and one branch per changed fraction; returns name -> head sha."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--initial-branch=main")
    write_files(repo, paths, 0)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    heads = {"base": git(repo, "rev-parse", "HEAD")}
    rng = random.Random(7)
    for fraction in FRACTIONS:
        name = f"changed-{int(fraction * 100)}pct"
        git(repo, "checkout", "-q", "-b", name, heads["base"])
        write_files(repo, rng.sample(paths, max(1, int(len(paths) * fraction))), 1)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", name)
        heads[name] = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return heads


def populate_store(settings: Settings, repo: Path, paths: list[str], base: str,
                   chunks_per_file: int) -> None:
    key = f"path:{repo.resolve()}"
    when = utc_now_iso()
    manifest = Manifest(repo="bench", repo_key=key, branch="main", embedder="hashing",
                        collection=collection_name(key, "main"), repo_path=str(repo.resolve()),
                        commit=base, indexed_at=when, generation=1,
                        layers={name: {"commit": base, "indexed_at": when}
                                for name in ("hot", "infra")})
    index = Store.open(settings).create_branch(manifest)
    rng = np.random.default_rng(7)
    batch: list[ChunkRecord] = []
    for path in paths:
        layer = "hot" if path.startswith("src/") else "infra"
        for n in range(chunks_per_file):
            symbol = f"f{n}"
            batch.append(ChunkRecord(
                repo="bench", branch="main", commit=base, path=path, symbol=symbol,
                start_line=n * 3 + 1, end_line=n * 3 + 2, indexed_at=when, blob_sha="0" * 40,
                content_sha256="0" * 64, layer=layer, id=chunk_id(path, symbol, 0), text="pass",
            ))
        if len(batch) >= 5000:
            index.upsert(batch, rng.standard_normal((len(batch), DIMENSIONS), dtype=np.float32))
            batch = []
    if batch:
        index.upsert(batch, rng.standard_normal((len(batch), DIMENSIONS), dtype=np.float32))
    index.save_manifest(manifest)


def prepare(out: Path, files: int, chunks_per_file: int, rebuild: bool) -> tuple[Settings, Path]:
    if rebuild and out.exists():
        shutil.rmtree(out)
    settings = Settings(home=out / "home", embedder="hashing")
    repo = out / "repo"
    if (out / "ready").exists():
        return settings, repo
    if out.exists():
        shutil.rmtree(out)
    paths = file_paths(files)
    started = time.perf_counter()
    heads = build_repo(repo, paths)
    populate_store(settings, repo, paths, heads["base"], chunks_per_file)
    (out / "ready").write_text("ok", encoding="utf-8")
    print(f"built repo ({files} files) and store ({files * chunks_per_file} chunks) "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    return settings, repo


def timed(fn, repeat: int) -> tuple[float, object]:
    seconds: list[float] = []
    result: object = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def bench_audit(settings: Settings, repo: Path, repeat: int) -> None:
    store = Store.open(settings)
    state = FileFreshnessStore(Path(tempfile.mkdtemp(prefix="fm-bench-state-")))
    print("audit of one branch, 100k-chunk scale (median of runs):")
    print(f"{'changed':>8} {'files':>6} {'stale':>7} {'tracked':>8} {'cold s':>8} {'warm s':>8}")
    for fraction in FRACTIONS:
        name = f"changed-{int(fraction * 100)}pct"
        git(repo, "update-ref", "refs/heads/main", git(repo, "rev-parse", name))
        cold, report = timed(lambda: audit(settings, CONFIG, store=store), repeat)
        state.publish(report.rows, replace_all=True)
        warm, _ = timed(lambda: audit(settings, CONFIG, store=store, freshness=state), repeat)
        changed = len(git(repo, "diff", "--name-only", f"{name}~1", name).splitlines())
        stale = sum(r.stale_chunks for r in report.rows)
        tracked = sum(r.tracked_chunks for r in report.rows)
        print(f"{fraction:>8.0%} {changed:>6} {stale:>7} {tracked:>8} {cold:>8.3f} {warm:>8.3f}",
              flush=True)
    git(repo, "update-ref", "refs/heads/main", git(repo, "rev-parse", "changed-1pct~1"))


def scrape_rows(repos: int, branches: int, layers: int) -> list[FreshnessRow]:
    now = time.time()
    return [FreshnessRow(f"repo{r}", f"branch-{b}", f"layer{lay}", 12, 4000, 30, 2, 60.0,
                         now - 100, 300.0, now)
            for r in range(repos) for b in range(branches) for lay in range(layers)]


def bench_scrape(repeat: int) -> None:
    rows = scrape_rows(50, 5, 3)
    print(f"scrape (render_latest) with {len(rows)} (repo, branch, layer) rows, median of "
          f"{repeat * 10}:")
    file_store = FileFreshnessStore(Path(tempfile.mkdtemp(prefix="fm-bench-scrape-")))
    file_store.publish(rows, replace_all=True)
    seconds, body = timed(lambda: render_latest(store=file_store)[0], repeat * 10)
    print(f"  file store:  {seconds * 1000:7.1f} ms, {len(body) / 1024:.0f} KiB")
    port = os.environ.get("FRESHMARK_TEST_REDIS_PORT")
    if not port:  # database 14 is flushed: only a redis-server started for this
        print("  redis store: skipped (set FRESHMARK_TEST_REDIS_PORT to a redis-server of yours)")
        return
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=int(port), db=14)
        client.ping()
    except Exception as exc:  # noqa: BLE001 (a bench without Redis still reports the file figure)
        print(f"  redis store: skipped ({exc})")
        return
    client.flushdb()
    RedisFreshnessStore(client).publish(rows, replace_all=True)
    seconds, body = timed(lambda: render_latest(redis=client)[0], repeat * 10)
    print(f"  redis store: {seconds * 1000:7.1f} ms, {len(body) / 1024:.0f} KiB "
          "(includes queue lengths)")
    client.flushdb()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--chunks-per-file", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached repo and store")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "audit")
    args = parser.parse_args()
    settings, repo = prepare(args.out, args.files, args.chunks_per_file, args.rebuild)
    bench_audit(settings, repo, args.repeat)
    bench_scrape(args.repeat)


if __name__ == "__main__":
    main()

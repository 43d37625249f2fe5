"""Fresh under a real commit stream: real history replayed into a running cluster.

A private redis-server, a Chroma server, ``--workers`` ``freshmark worker`` processes, the
scheduler and ``freshmark serve``, with the real embedder (MiniLM int8) and a config of two
layers on one repository (``hot``: ``src/**``; ``infra``: the rest). ``--commits``
consecutive first-parent commits of a mirror are pushed one by one into a bare remote, each
followed by its signed webhook, in phases:

1. replay: the real gaps between the commits divided by ``--compress`` (default: whatever fits
   the replay into ``--replay-seconds``)
2. steady: the next ``--steady-pushes`` commits at one push per ``--steady-interval-seconds``
3. bursts: ``--bursts`` times ``--burst-size`` commits pushed within one second
4. stop: every worker stopped for ``--stop-seconds`` while pushes go on (one per
   ``--stop-interval-seconds``), then started again

Per push, push → searchable: from ``git push`` to the first ``POST /v1/search`` for a symbol
the commit changed (a function or class of a non-test ``.py`` file) that returns it ``current``
with a stamp at that commit or a later one (which coalesced it). Commits that changed no such
symbol count from push to the hot layer's stamp, and so does a push whose symbol is gone at
the stamp that covered it (``superseded``: a later commit of the same coalesced run removed
it, so there is nothing of it left to find). ``/metrics`` is scraped every second (stale
ratio per layer, commits_behind, queue lengths, jobs coalesced); the hot layer's series is
written as a promtool test of ``FreshmarkHotLayerStale`` (steady phase repeated to 40 min: must
not fire; the stop phase with its last sample held 35 min: must fire). CPU seconds of the worker
processes per phase against the embeddings computed (rows added to the embedding cache).

Where each push's time went (git push, webhook, pick-up, lock and claim, fetch, run to the
stamp, the stamp seen, the search) is read against the workers' logs
(``freshness_breakdown.py``): one line per steady push is printed, every push is written to
``breakdown.json``, and each phase's medians are in the results under ``breakdown``.

    PYTHONPATH=. .venv/bin/python bench/bench_freshness.py
        [--mirror /work/.mirror/pallets+click/repo]
        [--commits 200] [--replay-seconds 240] [--steady-pushes 30] [--bursts 3]
        [--stop-seconds 120] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_cluster import Chroma, percentile, process_stat  # noqa: E402 - after the path tweak
from cluster_support import SECRET_ENV, Cluster, PrivateRedis, cluster_env, write_config
from freshness_breakdown import PushTimes, breakdown, summarize, worker_runs
from freshness_replay import (
    Commit,
    Sample,
    defines,
    first_parent_commits,
    parse_metrics,
    promtool_test,
    run_promtool,
)

from freshmark.adapters.embedding.cache import EmbeddingCache
from freshmark.adapters.store.chroma import Store

RULES = Path(__file__).resolve().parent.parent / "helm/freshmark/files/freshmark-rules.yaml"
LAYERS = ("hot", "infra")
SEARCH_K = 20
# Safe to use as is: ``older_identical`` is the same text as the head's, stamped earlier (the
# head moved on by the time the search ran), so a stamp at or after the push still holds it.
SAFE = ("current", "older_identical")
LAYER_TOML = """
[[layers]]
name = "hot"
globs = ["src/**"]
interval_seconds = {hot}
queue = "hot"

[[layers]]
name = "infra"
globs = ["**"]
interval_seconds = {infra}
queue = "infra"
"""


@dataclass
class Push:
    index: int
    sha: str
    phase: str
    target: tuple[str, str] | None
    files_changed: int
    pushed_at: float = 0.0
    outcomes: str = ""
    stamped_at: float | None = None
    searchable_at: float | None = None
    found_commit: str = ""
    next_search_at: float = 0.0  # round robin: a push not found yet waits its turn
    # wall-clock, for the breakdown against the workers' logs (``freshness_breakdown``)
    push_started_wall: float = 0.0
    pushed_wall: float = 0.0
    webhook_answered_wall: float = 0.0
    stamp_seen_wall: float | None = None
    searchable_wall: float | None = None
    searches: int = 0
    search_call_seconds: float | None = None
    # the symbol is gone at the stamp that covered the push: a later commit of the same run
    # removed it, so the push is done at that stamp (nothing of it is left to find)
    superseded: bool = False

    def times(self) -> PushTimes:
        return PushTimes(self.index, self.phase, self.push_started_wall, self.pushed_wall,
                         self.webhook_answered_wall, self.stamp_seen_wall,
                         self.searchable_wall, self.searches, self.search_call_seconds)

    def seconds(self) -> float | None:
        done = self.searchable_at if self.target and not self.superseded else self.stamped_at
        return None if done is None else done - self.pushed_at


def cpu_seconds(groups: list[int]) -> dict[int, float]:
    """User + system CPU seconds of the live processes of each given process group."""
    totals = dict.fromkeys(groups, 0.0)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            group, cpu = process_stat(stat)
        except OSError:
            continue
        if group in totals:
            totals[group] += cpu
    return totals


class Replay:
    def __init__(self, cluster: Cluster, repo_id: str, mirror: Path, remote: Path,
                 order: list[str]):
        self.cluster, self.repo_id, self.mirror, self.remote = cluster, repo_id, mirror, remote
        self.order, self.position = order, {sha: i for i, sha in enumerate(order)}
        self.pushes: list[Push] = []
        self.samples: list[Sample] = []
        self.stamps: list[tuple[float, int, int]] = []  # (t, hot position, infra position)
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.http = httpx.Client(base_url=cluster.base_url, timeout=30)

    def now(self) -> float:
        return time.monotonic() - self.started

    def push(self, commit: Commit, phase: str) -> None:
        record = Push(self.position[commit.sha], commit.sha, phase, commit.target,
                      commit.files_changed, pushed_at=self.now(), push_started_wall=time.time())
        subprocess.run(["git", "--git-dir", str(self.mirror), "push", "--quiet",
                        f"file://{self.remote}", f"{commit.sha}:refs/heads/main"], check=True)
        record.pushed_wall = time.time()
        answer = self.cluster.push_webhook(self.repo_id, commit.sha, before=commit.parent)
        record.webhook_answered_wall = time.time()
        record.outcomes = ",".join(j["outcome"] for j in answer.json().get("jobs", []))
        self.pushes.append(record)

    # -- watching ------------------------------------------------------------------------------
    def track(self) -> None:
        store = Store.open(self.cluster.settings())
        while not self.stop.wait(0.2):
            index = store.branch(f"id:{self.repo_id}", "main")
            if index is None:
                continue
            hot, infra = (self.position.get(index.manifest.layer_commit(n) or "", -1)
                          for n in LAYERS)
            self.stamps.append((self.now(), hot, infra))
            for push in list(self.pushes):
                if push.stamped_at is None and push.index <= hot:
                    push.stamped_at, push.stamp_seen_wall = self.now(), time.time()
                    push.superseded = push.target is not None and not defines(
                        self.mirror, self.order[hot], *push.target)
            waiting = [p for p in self.pushes if p.target and p.stamped_at is not None
                       and not p.superseded and p.searchable_at is None
                       and p.next_search_at <= self.now()]
            for push in sorted(waiting, key=lambda p: p.next_search_at)[:3]:
                self._search(push)
                push.next_search_at = self.now() + 2.0

    def _search(self, push: Push) -> None:
        path, symbol = push.target  # type: ignore[misc]
        push.searches += 1
        asked = time.perf_counter()
        try:
            answer = self.http.post("/v1/search", json={
                "query": symbol, "repo": self.repo_id, "k": SEARCH_K})
        except httpx.HTTPError:
            return
        for hit in answer.json().get("results", []) if answer.status_code == 200 else []:
            if (hit["path"], hit["symbol"]) == (path, symbol) and hit["verdict"] in SAFE \
                    and self.position.get(hit["commit"], -1) >= push.index:
                push.searchable_at, push.found_commit = self.now(), hit["commit"]
                push.searchable_wall = time.time()
                push.search_call_seconds = round(time.perf_counter() - asked, 3)
                return

    def diagnose(self, push: Push) -> str:
        """Why a push was never found: ``late`` (found now), ``not_in_top_k`` (a ranking miss,
        not a freshness one), or the verdict and stamp position the search returned."""
        self._search(push)
        if push.searchable_at is not None:
            return "late"
        path, symbol = push.target  # type: ignore[misc]
        answer = self.http.post("/v1/search", json={"query": symbol, "repo": self.repo_id,
                                                    "k": SEARCH_K}).json()
        for hit in answer.get("results", []):
            if (hit["path"], hit["symbol"]) == (path, symbol):
                return f"{hit['verdict']}@{self.position.get(hit['commit'], -1)}"
        return "not_in_top_k"

    def scrape(self) -> None:
        while not self.stop.wait(1.0):
            try:
                text = self.http.get("/metrics").text
            except httpx.HTTPError:
                continue
            self.samples.append(parse_metrics(text, self.now(), self.repo_id))

    def wait_layer(self, column: int, index: int, timeout_seconds: float) -> float | None:
        """Seconds until a layer (1 hot, 2 infra) is stamped at ``index`` or later; None if it
        was not within ``timeout_seconds``."""
        started = self.now()
        while self.now() - started < timeout_seconds:
            if self.stamps and self.stamps[-1][column] >= index:
                return round(self.now() - started, 1)
            time.sleep(0.5)
        return None

    def wait_drained(self, pushes: list[Push], timeout_seconds: float,
                     settle_seconds: float = 30.0) -> float | None:
        """Seconds from the first push to the last one searchable; None if some never were:
        every push is stamped and none became searchable for ``settle_seconds`` (those left
        are diagnosed at the end), or ``timeout_seconds`` passed."""
        deadline, last_change = time.monotonic() + timeout_seconds, time.monotonic()
        found = -1
        while time.monotonic() < deadline:
            done = [p.seconds() for p in pushes if p.seconds() is not None]
            if len(done) == len(pushes):
                return max(done, default=0.0)
            if len(done) != found:
                found, last_change = len(done), time.monotonic()
            stamped = all(p.stamped_at is not None for p in pushes)
            if stamped and time.monotonic() - last_change > settle_seconds:
                return None
            time.sleep(0.2)
        return None


def phase_figures(replay: Replay, phase: str, since: float, until: float) -> dict[str, object]:
    pushes = [p for p in replay.pushes if p.phase == phase]
    latencies = [s for p in pushes if (s := p.seconds()) is not None]
    window = [s for s in replay.samples if since <= s.t_seconds <= until]
    figures: dict[str, object] = {
        "pushes": len(pushes), "with_symbol": sum(1 for p in pushes if p.target),
        "searchable": len(latencies), "never_searchable": len(pushes) - len(latencies),
        "superseded": sum(1 for p in pushes if p.superseded),
        "outcomes": _count(",".join(p.outcomes for p in pushes).split(",")),
        "window_s": round(until - since, 1),
    }
    if latencies:
        figures.update(p50_s=round(statistics.median(latencies), 2),
                       p95_s=round(percentile(latencies, 0.95), 2), max_s=round(max(latencies), 2))
    if window:
        for layer in LAYERS:
            ratios = [s.ratio(layer) for s in window]
            behind = [s.gauges.get(("freshmark_commits_behind", layer), 0) for s in window]
            figures[f"{layer}_stale_ratio_avg"] = round(statistics.fmean(ratios), 5)
            figures[f"{layer}_stale_ratio_peak"] = round(max(ratios), 5)
            figures[f"{layer}_commits_behind_peak"] = max(behind)
        figures["queue_length_peak"] = max(sum(s.queues.values()) for s in window)
        figures["jobs_coalesced"] = window[-1].coalesced_total - window[0].coalesced_total
    pushed = [(p.pushed_at, p.index) for p in replay.pushes]
    true_behind = [sum(1 for at, i in pushed if at <= t and i > hot)
                   for t, hot, _ in replay.stamps if since <= t <= until]
    if true_behind:
        figures["hot_true_commits_behind_avg"] = round(statistics.fmean(true_behind), 2)
        figures["hot_true_commits_behind_peak"] = max(true_behind)
    return figures


def _count(items: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in filter(None, items):
        counts[item] = counts.get(item, 0) + 1
    return counts


class Meter:
    """Worker CPU seconds and embeddings computed between two calls of ``take``; a worker
    started since counts from zero (a stopped one loses what it spent since the last call)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.cache = EmbeddingCache(cluster.settings().cache_dir / "embeddings.sqlite")
        self.cpu, self.embedded = self._cpu(), self.cache.count()

    def _cpu(self) -> dict[int, float]:
        return cpu_seconds([p.pid for p in self.cluster.procs
                            if "worker" in " ".join(map(str, p.args))])

    def take(self, commits: int) -> dict[str, float]:
        cpu, embedded = self._cpu(), self.cache.count()
        cpu_delta = sum(v - self.cpu.get(g, 0.0) for g, v in cpu.items())
        embedded_delta = embedded - self.embedded
        self.cpu, self.embedded = cpu, embedded
        return {"worker_cpu_s": round(cpu_delta, 1), "embeddings_computed": embedded_delta,
                "cpu_s_per_commit": round(cpu_delta / max(commits, 1), 2),
                "cpu_ms_per_embedding": round(1000 * cpu_delta / embedded_delta, 1)
                if embedded_delta else 0.0}


def start(root: Path, args: argparse.Namespace, redis_url: str, chroma_url: str,
          remote: Path) -> tuple[Cluster, str]:
    repo_id = f"replay-{uuid.uuid4().hex[:6]}"
    layers = LAYER_TOML.format(hot=args.hot_interval_seconds, infra=args.infra_interval_seconds)
    config = write_config(root / "freshmark.toml", [
        {"id": repo_id, "url": f"file://{remote}", "branches": ["main"], "provider": "github",
         "webhook_secret_env": SECRET_ENV}], layers=layers,
        service=f"reconcile_interval_seconds = {args.reconcile_seconds}")
    env = cluster_env(root, redis_url, chroma_url, config, visibility_timeout_seconds=1800,
                      lock_lease_seconds=60)
    env["FRESHMARK_EMBEDDER"] = args.embedder
    cluster = Cluster(root, env)
    start_workers(cluster, args)
    cluster.start_scheduler()
    cluster.start_server()
    return cluster, repo_id


def start_workers(cluster: Cluster, args: argparse.Namespace) -> None:
    for n, queues in enumerate(args.worker_queues.split(";")[: args.workers], 1):
        cluster.start_worker(queues=queues, concurrency=1, name=f"w{n}")


def stop_workers(cluster: Cluster) -> None:
    for proc in [p for p in cluster.procs if "worker" in " ".join(map(str, p.args))]:
        cluster.kill(proc)
        cluster.procs.remove(proc)


def run_phases(replay: Replay, commits: list[Commit], args: argparse.Namespace,
               meter: Meter) -> dict[str, object]:
    results: dict[str, object] = {}
    n, s = args.commits, args.steady_pushes
    span = commits[n - 1].time_seconds - commits[0].time_seconds
    factor = args.compress or max(1.0, span / args.replay_seconds)
    results["compress_factor"] = round(factor)
    plan: list[tuple[str, list[tuple[float, Commit]]]] = [
        ("replay", [((c.time_seconds - commits[0].time_seconds) / factor, c)
                    for c in commits[:n]]),
        ("steady", [(i * args.steady_interval_seconds, c)
                    for i, c in enumerate(commits[n:n + s])])]
    rest = commits[n + s:]
    for b in range(args.bursts):
        burst = rest[b * args.burst_size:(b + 1) * args.burst_size]
        plan.append((f"burst{b + 1}", [(i * 0.9 / args.burst_size, c)
                                       for i, c in enumerate(burst)]))
    rest = rest[args.bursts * args.burst_size:]
    stop_pushes = int(args.stop_seconds // args.stop_interval_seconds)
    plan.append(("stop", [(i * args.stop_interval_seconds, c)
                          for i, c in enumerate(rest[:stop_pushes])]))
    for phase, timed in plan:
        since = replay.now()
        if phase == "stop":
            stop_workers(replay.cluster)
        for offset, commit in timed:
            time.sleep(max(0.0, since + offset - replay.now()))
            replay.push(commit, phase)
        if phase == "stop":
            time.sleep(max(0.0, since + args.stop_seconds - replay.now()))
            results["stop_ended_at_s"] = round(replay.now(), 1)
            start_workers(replay.cluster, args)
        pushes = [p for p in replay.pushes if p.phase == phase]
        drained = replay.wait_drained(pushes, args.drain_timeout_seconds)
        if phase == "stop":
            results["infra_stamped_at_last_push_after_restart_s"] = replay.wait_layer(
                1, pushes[-1].index, args.drain_timeout_seconds)
        figures = phase_figures(replay, phase, since, replay.now())
        figures.update(meter.take(len(pushes)), drained_after_first_push_s=drained,
                       load_avg=os.getloadavg(), started_at_s=round(since, 1))
        results[phase] = figures
        print(json.dumps({phase: figures}), flush=True)
    return results


def rule_checks(replay: Replay, results: dict[str, object], out: Path) -> dict[str, object]:
    checks: dict[str, object] = {}
    steady = results["steady"]
    assert isinstance(steady, dict)
    since, until = steady["started_at_s"], steady["started_at_s"] + steady["window_s"]
    window = [s for s in replay.samples if since <= s.t_seconds <= until]
    stop = results["stop"]
    assert isinstance(stop, dict)
    stop_window = [s for s in replay.samples
                   if stop["started_at_s"] <= s.t_seconds <= results["stop_ended_at_s"]]
    for name, samples, firing, repeat, hold in (
            ("steady", window, False, 1 + 2400 // max(len(window), 1), 0),
            ("stop", stop_window, True, 1, 2100)):
        if not samples:
            checks[name] = "no samples"
            continue
        path = out / f"promtool-{name}.test.yaml"
        path.write_text(promtool_test(samples, replay.repo_id, list(LAYERS), RULES, firing,
                                      f"{name} phase, HotLayerStale firing={firing}",
                                      repeat=repeat, hold_last_seconds=hold))
        passed, output = run_promtool(path)
        checks[name] = {"expect_firing": firing, "as_expected": passed, "file": str(path),
                        "promtool": output if not passed else "SUCCESS"}
    return checks


def push_breakdown(replay: Replay, out: Path) -> dict[str, object]:
    """Per push, where its time went (``freshness_breakdown``): every row to
    ``breakdown.json``, one line per steady push printed, and each phase's medians."""
    runs = worker_runs(sorted(replay.cluster.root.glob("worker-*.log")))
    rows = [row for push in replay.pushes
            if (row := breakdown(push.times(), runs, replay.position)) is not None]
    (out / "breakdown.json").write_text(json.dumps(rows))
    for row in rows:
        if row["phase"] == "steady":
            print(json.dumps({"push": row}), flush=True)
    phases = dict.fromkeys(p.phase for p in replay.pushes)
    return {phase: summarize([r for r in rows if r["phase"] == phase]) for phase in phases}


def _interrupted(*_: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: stop the cluster on the way out (finally blocks)


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupted)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror/pallets+click/repo"))
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--replay-seconds", type=float, default=240)
    parser.add_argument("--compress", type=float, default=0, help="0: fit --replay-seconds")
    parser.add_argument("--steady-pushes", type=int, default=30)
    parser.add_argument("--steady-interval-seconds", type=float, default=10)
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--burst-size", type=int, default=10)
    parser.add_argument("--stop-seconds", type=float, default=120)
    parser.add_argument("--stop-interval-seconds", type=float, default=4,
                        help="seconds between pushes while the workers are stopped")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-queues", default="hot,maintenance,ondemand;hot,infra")
    parser.add_argument("--hot-interval-seconds", type=int, default=300)
    parser.add_argument("--infra-interval-seconds", type=int, default=900)
    parser.add_argument("--reconcile-seconds", type=int, default=30)
    parser.add_argument("--drain-timeout-seconds", type=float, default=300)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--keep-root", action="store_true",
                        help="keep the cluster's directory (logs, data) for a post-mortem")
    parser.add_argument("--out", type=Path,
                        default=Path(tempfile.gettempdir()) / "freshmark-freshness",
                        help="where the series, pushes and promtool tests are kept")
    args = parser.parse_args()
    total = (args.commits + args.steady_pushes + args.bursts * args.burst_size
             + int(args.stop_seconds // args.stop_interval_seconds))
    base, commits = first_parent_commits(args.mirror, total)
    root = Path(tempfile.mkdtemp(prefix="freshmark-bench-freshness-"))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    redis, chroma, cluster = PrivateRedis(root / "redis"), None, None
    results: dict[str, object] = {"mirror": str(args.mirror), "base": base, "commits": total,
                                  "uptime": subprocess.getoutput("uptime")}
    try:
        redis.start()
        chroma = Chroma(root)
        remote = root / "remote.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
        subprocess.run(["git", "--git-dir", str(args.mirror), "push", "--quiet",
                        f"file://{remote}", f"{base}:refs/heads/main"], check=True)
        cluster, repo_id = start(root, args, redis.url, chroma.url, remote)
        replay = Replay(cluster, repo_id, args.mirror, remote, [base, *(c.sha for c in commits)])
        meter = Meter(cluster)
        cluster.push_webhook(repo_id, base)
        threads = [threading.Thread(target=replay.track), threading.Thread(target=replay.scrape)]
        for thread in threads:
            thread.start()
        try:
            warm = time.monotonic()
            while not all(replay.stamps and replay.stamps[-1][1 + i] == 0 for i in range(2)):
                time.sleep(0.5)
            results["full_index"] = {"seconds": round(time.monotonic() - warm, 1),
                                     **meter.take(1), "load_avg": os.getloadavg()}
            print(json.dumps({"full_index": results["full_index"]}), flush=True)
            results.update(run_phases(replay, commits, args, meter))
            results["promtool"] = rule_checks(replay, results, out)
            results["final_gauges"] = {f"{k[0]}|{k[1]}": v
                                       for k, v in replay.samples[-1].gauges.items()}
            results["breakdown"] = push_breakdown(replay, out)
            results["never_searchable"] = [
                (p.index, p.sha[:8], p.phase, *p.target, replay.diagnose(p))
                for p in replay.pushes if p.target and p.seconds() is None]
            results["superseded"] = [(p.index, p.sha[:8], p.phase, *p.target)
                                     for p in replay.pushes if p.superseded and p.target]
        finally:
            replay.stop.set()
            for thread in threads:
                thread.join()
        (out / "pushes.json").write_text(json.dumps([asdict(p) for p in replay.pushes]))
        (out / "samples.json").write_text(json.dumps([
            {"t": s.t_seconds, "gauges": {f"{k[0]}|{k[1]}": v for k, v in s.gauges.items()},
             "queues": s.queues, "coalesced": s.coalesced_total} for s in replay.samples]))
        (out / "stamps.json").write_text(json.dumps(replay.stamps))
    finally:
        if cluster is not None:
            cluster.stop_all()
        if chroma is not None:
            chroma.stop()
        redis.stop()
        if not args.keep_root:
            shutil.rmtree(root, ignore_errors=True)
    results["uptime_end"] = subprocess.getoutput("uptime")
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()

"""Many small repositories over three Chroma servers: is a search on each as fast as on one
repository alone, and what does adding a fourth server move?

Corpus: ``--repos`` small git repositories, each of ``--files`` distinct real source files
taken in turn from the local bare mirrors (/work/.mirror/*: requests, click, httpx, gin,
express, seaborn, xarray, astropy), so no two repositories hold the same text. Vectors come
from the hashing embedder (``FRESHMARK_EMBEDDER=hashing``): the figures are of the store and
the search path, not of a model.

Steps, each printed with its figures:
1. start four ``chroma run`` servers on free loopback ports;
2. index every repository in-process over the first three (``FRESHMARK_CHROMA_URLS``);
3. search ``--sample`` repositories (spread over the three servers) with queries drawn from
   their own functions: the first search of each in this process, then warm repeats; wall
   and process CPU per query, per server;
4. the same repositories, each indexed alone on the empty fourth server, searched the same way
   (the "one repository alone" baseline);
5. the fourth server emptied and listed too: ``shards plan`` (how many repositories move) and
   ``shards move`` (how long).

    PYTHONPATH=. python bench/bench_shards.py --repos 1000
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import chromadb
import pygit2
from chromadb.config import Settings as ChromaSettings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_cluster import process_stat  # noqa: E402 - after the path tweak
from conftest import ChromaServer  # noqa: E402
from repo_builder import RepoBuilder  # noqa: E402

from freshmark.adapters.embedding import get_embedder  # noqa: E402
from freshmark.adapters.store.chroma import Store  # noqa: E402
from freshmark.core.config import Config  # noqa: E402
from freshmark.core.ports import Embedder  # noqa: E402
from freshmark.core.request import SearchRequest  # noqa: E402
from freshmark.core.settings import Settings  # noqa: E402
from freshmark.services.indexing.indexer import IndexRequest, index_repo  # noqa: E402
from freshmark.services.retrieval.search import search  # noqa: E402
from freshmark.services.upkeep.shards import move, plan  # noqa: E402

MIRRORS = Path("/work/.mirror")
SUFFIXES = (".py", ".go", ".js")
MIN_FILE_BYTES, MAX_FILE_BYTES = 400, 12_000
DEF = re.compile(r"^\s*(?:def|func|function|class)\s+([A-Za-z_][A-Za-z0-9_]{3,})", re.M)


def source_files() -> Iterator[tuple[str, bytes]]:
    """Real source files: the mirrors' HEAD trees first, then earlier versions of files from
    their histories (newest first), each blob once, so no two repositories share a text."""
    seen: set[pygit2.Oid] = set()
    mirrors = [pygit2.Repository(str(m)) for m in sorted(MIRRORS.glob("*+*/repo"))]
    for repo in mirrors:
        yield from _fresh(repo, _tree_blobs(repo, repo.head.peel(pygit2.Commit).tree), seen)
    for repo in mirrors:
        yield from _fresh(repo, _history_blobs(repo), seen)


def _tree_blobs(repo: pygit2.Repository, tree: pygit2.Tree) -> Iterator[tuple[str, pygit2.Oid]]:
    stack = [("", tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in sorted(current, key=lambda e: e.name or ""):
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                stack.append((f"{path}/", repo[entry.id]))
            elif path.endswith(SUFFIXES):
                yield path, entry.id


def _history_blobs(repo: pygit2.Repository) -> Iterator[tuple[str, pygit2.Oid]]:
    """The files each commit changed, as that commit left them."""
    for commit in repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL):
        if len(commit.parents) != 1:
            continue
        for delta in repo.diff(commit.parents[0], commit).deltas:
            path = delta.new_file.path
            if delta.status_char() in "AM" and path.endswith(SUFFIXES):
                yield path, delta.new_file.id


def _fresh(repo: pygit2.Repository, blobs: Iterator[tuple[str, pygit2.Oid]],
           seen: set[pygit2.Oid]) -> Iterator[tuple[str, bytes]]:
    name = Path(repo.path.rstrip("/")).parent.name
    for path, oid in blobs:
        if oid in seen:
            continue
        seen.add(oid)
        data = repo[oid].data
        if MIN_FILE_BYTES <= len(data) <= MAX_FILE_BYTES and DEF.search(
                data.decode("utf-8", "replace")):
            yield f"{name}/{path}", data


def build_repos(root: Path, count: int, files_each: int) -> list[RepoBuilder]:
    pool = source_files()
    repos = []
    for number in range(count):
        repo = RepoBuilder.init(root / f"repo{number:04d}")
        paths: set[str] = set()
        while len(paths) < files_each:
            origin, data = next(pool)
            path = origin.replace("+", "_")
            if path not in paths:  # two versions of one file in one repo: skip the second
                paths.add(path)
                repo.write(path, data)
        repo.commit("import")
        repos.append(repo)
    return repos


def queries_of(repo: RepoBuilder, count: int) -> list[str]:
    names: list[str] = []
    for path in sorted(p for p in repo.path.rglob("*") if p.suffix in SUFFIXES):
        names += DEF.findall(path.read_text("utf-8", "replace"))
    words = [re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", n).strip() for n in names]
    return (words * count)[:count] if words else ["main"] * count


def index_all(repos: Sequence[RepoBuilder], settings: Settings, store: Store,
              embedder: Embedder) -> float:
    started = time.perf_counter()
    for number, repo in enumerate(repos, start=1):
        index_repo(IndexRequest(repo.path), settings=settings, config=Config(), store=store,
                   embedder=embedder)
        if number % 100 == 0:
            print(f"  indexed {number} ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


def timed_search(query: str, repo: RepoBuilder, settings: Settings, store: Store,
                 embedder: Embedder) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    response = search(SearchRequest.build(query), str(repo.path), settings=settings,
                      store=store, embedder=embedder)
    if not response.results:
        raise RuntimeError(f"no result for {query!r} in {repo.path.name}")
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def measure(repos: Sequence[RepoBuilder], settings: Settings, store: Store,
            embedder: Embedder, rounds: int) -> dict[str, list[float]]:
    """First search per repository, then ``rounds`` warm searches of each (ms)."""
    out: dict[str, list[float]] = {"first_wall": [], "first_cpu": [], "warm_wall": [],
                                   "warm_cpu": []}
    for repo in repos:
        queries = queries_of(repo, rounds + 1)
        wall, cpu = timed_search(queries[0], repo, settings, store, embedder)
        out["first_wall"].append(wall)
        out["first_cpu"].append(cpu)
        for query in queries[1:]:
            wall, cpu = timed_search(query, repo, settings, store, embedder)
            out["warm_wall"].append(wall)
            out["warm_cpu"].append(cpu)
    return out


def pct(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def line(label: str, samples: dict[str, list[float]]) -> str:
    def fig(key: str) -> str:
        values = samples[key]
        return f"p50 {statistics.median(values):6.1f} / p95 {pct(values, 0.95):6.1f}"
    return (f"  {label:<28} first wall {fig('first_wall')}  warm wall {fig('warm_wall')}  "
            f"warm cpu {fig('warm_cpu')} ms  (n={len(samples['warm_wall'])})")


def server_cpu_ms(server: ChromaServer) -> float:
    """CPU the server process has used (user + system), from /proc."""
    assert server.proc is not None
    return process_stat(Path(f"/proc/{server.proc.pid}/stat"))[1] * 1000


def server_share(cpu_ms: float, searches: int) -> str:
    return f"  server cpu {cpu_ms / searches:5.1f} ms/search"


def empty(server: ChromaServer) -> None:
    client = chromadb.HttpClient(host="127.0.0.1", port=server.port,
                                 settings=ChromaSettings(anonymized_telemetry=False))
    for collection in client.list_collections():
        client.delete_collection(collection.name)


def settings_for(home: Path, servers: Sequence[ChromaServer]) -> Settings:
    return Settings(home=home, embedder="hashing",
                    chroma_urls=tuple(server.url for server in servers))


def sample_by_server(repos: Sequence[RepoBuilder], store: Store, keys: dict[str, str],
                     each: int) -> dict[str, list[RepoBuilder]]:
    by_server: dict[str, list[RepoBuilder]] = {shard.location: [] for shard in store.shards}
    for repo in random.Random(7).sample(list(repos), len(repos)):
        chosen = by_server[store.home(keys[repo.path.name]).location]
        if len(chosen) < each:
            chosen.append(repo)
    return by_server


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--files", type=int, default=3, help="source files per repository")
    parser.add_argument("--sample", type=int, default=10, help="repositories searched per server")
    parser.add_argument("--rounds", type=int, default=5, help="warm searches per repository")
    args = parser.parse_args(argv)

    # A stopped bench still stops its servers (the ``finally`` below runs on SIGTERM too).
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="fm-bench-shards-"))
    servers = [ChromaServer(work / f"chroma{n}" / "data") for n in range(4)]
    try:
        for server in servers:
            server.data_dir.mkdir(parents=True)
            server.start()
        return run(args, work, servers)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path, servers: list[ChromaServer]) -> int:
    print(f"load (1/5/15 min) at start: {uptime()}")
    repos = build_repos(work / "repos", args.repos, args.files)
    print(f"{len(repos)} repositories of {args.files} real source files each "
          "(hashing embedder)")
    settings = settings_for(work / "home", servers[:3])
    store = Store.open(settings)
    embedder = get_embedder("hashing", settings.cache_dir)
    seconds = index_all(repos, settings, store, embedder)
    manifests = store.list_manifests()
    keys = {Path(m.repo_path or "").name: m.repo_key for m in manifests}
    held = {shard.location: [n for n in shard.names() if n.startswith("fm-")]
            for shard in store.shards}
    chunks = sum(shard.get(name).count() for shard in store.shards
                 for name in held[shard.location])
    print(f"indexed in {seconds:.0f} s ({seconds / len(repos) * 1000:.0f} ms a repository); "
          f"collections per server: {[len(names) for names in held.values()]}; "
          f"{chunks} chunks in all")
    print(f"load after indexing: {uptime()}")

    sampled = sample_by_server(repos, store, keys, args.sample)
    print(f"search, {args.sample} repositories per server, {args.rounds} warm queries each:")
    by_location = dict(zip([shard.location for shard in store.shards], servers, strict=False))
    for location, chosen in sampled.items():
        before = server_cpu_ms(by_location[location])
        samples = measure(chosen, settings, store, embedder, args.rounds)
        print(line(f"on {location}", samples)
              + server_share(server_cpu_ms(by_location[location]) - before,
                             len(chosen) * (args.rounds + 1)))
    print(f"load: {uptime()}")

    alone_settings = settings_for(work / "home-alone", servers[3:])
    alone_store = Store.open(alone_settings)
    chosen = [repo for group in sampled.values() for repo in group]
    alone: dict[str, list[float]] = {"first_wall": [], "first_cpu": [], "warm_wall": [],
                                     "warm_cpu": []}
    alone_server_ms = 0.0
    for repo in chosen:
        empty(servers[3])
        index_repo(IndexRequest(repo.path), settings=alone_settings, config=Config(),
                   store=alone_store, embedder=embedder)
        before = server_cpu_ms(servers[3])
        for key, values in measure([repo], alone_settings, alone_store, embedder,
                                   args.rounds).items():
            alone[key] += values
        alone_server_ms += server_cpu_ms(servers[3]) - before
    print(line("each repository alone", alone)
          + server_share(alone_server_ms, len(chosen) * (args.rounds + 1)))
    print(f"load: {uptime()}")

    empty(servers[3])
    four = Store.open(settings_for(work / "home", servers))
    started = time.perf_counter()
    pending = plan(four)
    plan_seconds = time.perf_counter() - started
    collections = sum(len(m.collections) for m in pending)
    print(f"fourth server added: plan {plan_seconds:.1f} s, {len(pending)} of {len(repos)} "
          f"repositories ({len(pending) / len(repos):.1%}) and {collections} collections move")
    started = time.perf_counter()
    report = move(four)
    print(f"move: {time.perf_counter() - started:.1f} s, complete={report.complete}, "
          f"left to move after: {len(plan(four))}")
    print(f"load at end: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

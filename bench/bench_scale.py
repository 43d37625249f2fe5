"""What every process costs as the index grows: issue 20's table at several sizes.

Corpus: one monorepo per size built from the bare mirrors under ``--mirrors`` (real code of
many repositories at many historical versions, tags spread over each history): versions are
taken round-robin over the repositories, and a file goes in only if its exact content (git
blob) is not in the corpus yet, so the corpus holds distinct files, never copies. Files are
added until freshmark's chunker counts ``--sizes`` chunks. The embedder is the hashing tier
(``FRESHMARK_EMBEDDER=hashing``): every figure but the model's own cost.

Per size, each phase in a new process of the real CLI or services, its CPU time and peak RSS
read from the kernel (``wait4``):

- full index (``freshmark index``): CPU, wall, peak RSS;
- a 10-file incremental run (10 files edited, one commit): CPU, peak RSS;
- ``freshmark status``: CPU;
- ``freshmark search --json``: CPU, wall; and with ``FRESHMARK_SERVER_URL`` set to a
  ``freshmark serve`` the bench starts (the CLI process's CPU and wall, the server warm);
- a query process (``services.retrieval.search``): the first search (CPU and wall, store and
  lexical index opened by it; Chroma's client library imported before, as a server or worker
  does at start: the CLI rows include that import), 50 short queries (CPU p50/p95) and the
  RSS after them (and its anonymous part, beside file-backed maps), then long issue-report
  queries (CPU p50/p95);
- disk: the Chroma directory and the cache (lexical snapshots or indexes, embedding cache).

The last table gives each row's growth exponent between consecutive sizes (1: linear in the
chunks held, 0: flat).

The processes measured run freshmark's sources compiled to bytecode first, as an install
does (pip compiles what it installs, the image included): on a machine that sets
``PYTHONDONTWRITEBYTECODE`` a source tree is otherwise compiled again by every new process,
~0.1 s of CPU that no installed freshmark pays. ``--source-compiled-each-start`` measures
that instead.

Usage::

    /work/main/.venv/bin/python bench/bench_scale.py --sizes 100000,300000 \\
        --mirrors /work/.mirror --work /tmp/fm-scale [--lexical tantivy] [--json OUT]
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pygit2

from freshmark.core.chunking import chunk_text_capped
from freshmark.core.chunking.languages import detect_language
from freshmark.core.config import DEFAULT_MAX_CHUNKS_PER_FILE

# Text a code index holds: sources of the mirrors' languages and their docs.
EXTENSIONS = frozenset({".py", ".pyx", ".js", ".mjs", ".ts", ".go", ".c", ".h", ".cpp",
                        ".md", ".rst", ".toml", ".cfg", ".yaml", ".yml"})
MAX_FILE_BYTES = 200_000
VERSIONS_PER_REPO = 40
SHORT_QUERIES = (
    "parse http headers", "read config file", "retry on connection error", "cookie jar",
    "redirect handling", "timeout settings", "json decode error", "url encode params",
    "command line option default", "click group subcommand", "route middleware",
    "render template", "unit conversion", "fits file header", "coordinate transform",
    "dataset merge", "groupby reduce", "plot color palette", "histogram bins",
    "async client close", "stream response body", "proxy authentication", "ssl verify",
    "session adapter mount", "multipart file upload", "time series resample",
    "netcdf encoding", "wcs projection", "table column units", "logging configuration",
    "environment variable", "cache invalidation", "thread safety lock", "gzip decoding",
    "chunked transfer", "status code error", "query string parse", "path parameter",
    "static files", "error handler", "regression fit", "kernel density", "legend position",
    "axis labels", "missing values", "interpolate", "coordinates frame", "quantity array",
    "cosmology distance", "sky coordinates",
)
LONG_QUERIES = (
    "When a request is redirected from https to http the Authorization header is still "
    "sent to the new host. I expected the session to strip credentials on a redirect to "
    "another origin. Traceback shows rebuild_auth and resolve_redirects in the call stack.",
    "Merging two datasets with different coordinate orders raises a ValueError about "
    "conflicting sizes for dimension time, although both have the same length. The error "
    "comes from align and reindex when join is outer and fill_value is not given.",
    "The command line tool ignores the default value of an option when the environment "
    "variable is set to an empty string; the help output still shows the default, and the "
    "callback receives None. Expected the default to apply as documented.",
    "Converting a Quantity with units of parsec to light years loses precision for arrays "
    "of float32; the result is rounded and the unit conversion scale is computed in double "
    "but cast back. The table column keeps the wrong dtype after the conversion.",
    "A histogram with many bins and a log scale on the y axis draws empty bars at zero "
    "counts and the legend shows the wrong color for the hue level; the palette is not "
    "applied to the second layer of the plot and the kde line is missing.",
    "The async client does not close the connection pool when the response stream is "
    "not fully read, leaking sockets until the event loop shuts down; the transport logs "
    "a warning about an unclosed connection and a timeout on the next request.",
    "Route parameters with a trailing slash are not matched when strict routing is off; "
    "the router returns 404 instead of calling the handler, and the middleware that "
    "parses the body runs twice for a HEAD request.",
    "Reading a FITS file whose header has a long card with CONTINUE keywords fails with "
    "a VerifyError; the card value is truncated and the WCS projection built from the "
    "header is wrong after the file is written back.",
    "Grouped reductions over a dimension with missing values return NaN for every group "
    "although skipna is True; the flox path and the numpy fallback give different results "
    "and the resulting coordinate loses its attributes.",
    "Posting a multipart form with a file object opened in text mode sends an empty body; "
    "the content length header is computed before the file is read and the boundary is "
    "missing in the final part, so the server answers 400.",
)
QUERIES_BEFORE_RSS = 50
EDITED_FILES = 10


# -- corpus -----------------------------------------------------------------------------------
def _versions(mirror: pygit2.Repository, wanted: int) -> list[tuple[str, pygit2.Commit]]:
    """The default head and up to ``wanted - 1`` tagged commits spread over the history,
    newest first."""
    tagged: dict[str, tuple[str, pygit2.Commit]] = {}
    for ref in mirror.references:
        if not ref.startswith("refs/tags/"):
            continue
        try:
            commit = mirror.revparse_single(ref).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        tagged.setdefault(str(commit.id), (ref.removeprefix("refs/tags/"), commit))
    ordered = sorted(tagged.values(), key=lambda pair: pair[1].commit_time, reverse=True)
    step = max(1.0, len(ordered) / max(1, wanted - 1))
    spread = [ordered[int(i * step)] for i in range(min(wanted - 1, len(ordered)))]
    head = mirror.head.peel(pygit2.Commit)
    return [("head", head), *[(name, commit) for name, commit in spread
                              if commit.id != head.id]]


def _files(tree: pygit2.Tree, prefix: str = "") -> Iterator[tuple[str, pygit2.Oid]]:
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            yield from _files(entry.peel(pygit2.Tree), path + "/")
        elif entry.type_str == "blob" and Path(path).suffix in EXTENSIONS:
            yield path, entry.id


def _label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:60]


def build_corpus(mirrors: Path, chunks_wanted: int, into: Path) -> dict[str, Any]:
    """A git work tree of distinct files from every mirror's versions, committed once."""
    done = into / "corpus.json"
    if done.exists():
        return dict(json.loads(done.read_text()))
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    repos = {path.name.split("+")[-1]: pygit2.Repository(str(path / "repo"))
             for path in sorted(mirrors.iterdir()) if (path / "repo").is_dir()}
    versions = {name: _versions(repo, VERSIONS_PER_REPO) for name, repo in repos.items()}
    seen: set[pygit2.Oid] = set()
    chunks = files = 0
    used: dict[str, int] = {}
    for round_ in range(VERSIONS_PER_REPO):
        for name, repo in repos.items():
            if round_ >= len(versions[name]) or chunks >= chunks_wanted:
                continue
            label, commit = versions[name][round_]
            used[name] = used.get(name, 0) + 1
            for path, oid in _files(commit.tree):
                if oid in seen or chunks >= chunks_wanted:
                    continue
                seen.add(oid)
                data = repo[oid].data
                if len(data) > MAX_FILE_BYTES or b"\0" in data[:8000]:
                    continue
                text = data.decode("utf-8", errors="replace")
                found, _ = chunk_text_capped(path, text, detect_language(path),
                                             DEFAULT_MAX_CHUNKS_PER_FILE)
                target = into / name / _label(label) / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                chunks += len(found)
                files += 1
    _git(into, "init", "-q", "--initial-branch=main")
    _git(into, "add", "-A")
    _git(into, "commit", "-q", "-m", "corpus")
    info = {"chunks_counted": chunks, "files": files, "versions_per_repo": used,
            "repositories": len(used)}
    done.write_text(json.dumps(info))
    return info


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def edit_files(repo: Path, count: int, round_: int) -> list[str]:
    """Append a function to ``count`` Python files spread over the corpus; one commit."""
    paths = sorted(_git(repo, "ls-files", "*.py").split())
    step = max(1, len(paths) // count)
    edited = paths[::step][:count]
    for i, rel in enumerate(edited):
        with (repo / rel).open("a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef bench_edit_{round_}_{i}(value):\n"
                         f"    return value * {i + 2}  # edited by the scale bench\n")
    _git(repo, "commit", "-q", "-am", f"edit {count} files")
    return edited


# -- measured processes -----------------------------------------------------------------------
def _run(argv: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Run one process; its CPU seconds, wall seconds and peak RSS (MiB) from ``wait4``
    (its output goes to files: ``communicate`` would reap it before ``wait4``)."""
    work = Path(env["FRESHMARK_HOME"])
    out_path, err_path = work / "stdout.txt", work / "stderr.txt"
    started = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(list(argv), env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{list(argv)[1:5]} failed: {err_path.read_text()[-2000:]}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall,
            "rss_mib": usage.ru_maxrss / 1024, "stdout": out_path.read_text()}


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    return _run([sys.executable, "-m", "freshmark.faces.cli.main", *args], env)


def query_process(env: dict[str, str], repo: Path) -> dict[str, Any]:
    got = _run([sys.executable, str(Path(__file__).resolve()), "--queries", str(repo)], env)
    return {**json.loads(got["stdout"].splitlines()[-1]), "process_rss_mib": got["rss_mib"]}


def _memory_mib() -> dict[str, float]:
    fields: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


def run_queries(repo: Path) -> None:
    """In this (new) process: the first search, short queries, RSS, long queries."""
    from freshmark.adapters.store.shard import import_client_library
    from freshmark.core.config import Config
    from freshmark.core.request import SearchRequest
    from freshmark.core.settings import Settings
    from freshmark.services.retrieval.search import search

    settings, config = Settings.from_env(), Config()
    import_client_library(settings)  # as ``freshmark serve`` and a worker do at start

    def one(query: str) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        search(SearchRequest.build(query, k=10), str(repo), settings=settings, config=config)
        return time.process_time() - cpu, time.perf_counter() - wall

    first_cpu, first_wall = one(SHORT_QUERIES[0])
    short = [one(SHORT_QUERIES[i % len(SHORT_QUERIES)])[0] for i in range(QUERIES_BEFORE_RSS)]
    memory = _memory_mib()
    long = [one(query)[0] for query in LONG_QUERIES * 2]
    print(json.dumps({"first_cpu_s": first_cpu, "first_wall_s": first_wall,
                      "short_ms": _percentiles_ms(short), "long_ms": _percentiles_ms(long),
                      "rss_mib": memory.get("VmRSS", 0.0), "anon_mib": memory.get("RssAnon", 0.0),
                      "file_mib": memory.get("RssFile", 0.0)}))


def run_warm_incremental(repo: Path) -> None:
    """In this (new) process, as a worker runs pushes: one 10-file incremental run to warm
    it (imports, store, embedder), then another 10-file commit indexed and measured alone:
    the CPU and RSS growth of a run in a process that is already up."""
    from freshmark.core.config import load_config
    from freshmark.core.settings import Settings
    from freshmark.services.indexing.indexer import IndexRequest, index_repo

    settings = Settings.from_env()
    config = load_config(settings.config_path)
    times = []
    for _ in range(2):
        edit_files(repo, EDITED_FILES, 1 + _edit_rounds(repo))
        before = _memory_mib()
        cpu, wall = time.process_time(), time.perf_counter()
        index_repo(IndexRequest(repo_path=repo), settings=settings, config=config)
        times.append({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                      "rss_before_mib": before.get("VmRSS", 0.0),
                      "rss_after_mib": _memory_mib().get("VmRSS", 0.0)})
    print(json.dumps({"first": times[0], **times[1]}))


def warm_incremental_process(env: dict[str, str], repo: Path) -> dict[str, Any]:
    got = _run([sys.executable, str(Path(__file__).resolve()), "--warm-incremental",
                str(repo)], env)
    return {**json.loads(got["stdout"].splitlines()[-1]), "process_rss_mib": got["rss_mib"]}


def run_catch_up(repo: Path) -> None:
    """In this (new) process, on a host whose cache never saw the branch: open the branch,
    then build its lexical index from the store (the catch-up a follower makes); its CPU,
    wall and RSS before and after (peak RSS from ``wait4``)."""
    from freshmark.adapters.lexical.registry import lexical_engine
    from freshmark.core.config import Config
    from freshmark.core.settings import Settings
    from freshmark.services.open_branch import open_branch

    settings = Settings.from_env()
    opened = open_branch(str(repo), settings=settings, config=Config(), branch=None,
                         worktree=False, store=None, need_index=True)
    assert opened.index is not None
    before = _memory_mib()
    cpu, wall = time.process_time(), time.perf_counter()
    lexical_engine(settings).channel(opened.index)
    print(json.dumps({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                      "rss_before_mib": before.get("VmRSS", 0.0)}))


def catch_up_process(env: dict[str, str], repo: Path) -> dict[str, Any]:
    """The follower's catch-up, with the host's lexical indexes deleted first."""
    shutil.rmtree(Path(env["FRESHMARK_HOME"]) / "cache" / "tantivy", ignore_errors=True)
    got = _run([sys.executable, str(Path(__file__).resolve()), "--catch-up", str(repo)], env)
    return {**json.loads(got["stdout"].splitlines()[-1]), "rss_mib": got["rss_mib"]}


def _percentiles_ms(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"p50": statistics.median(ordered) * 1000, "p95": p95 * 1000}


def disk_mib(path: Path) -> float:
    if not path.exists():
        return 0.0
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return total / 2**20


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class ChromaServer:
    """``chroma run`` on a free loopback port (``--chroma-server``): the store then lives in
    its own process, and the freshmark processes' RSS is theirs alone."""

    def __init__(self, data_dir: Path):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        binary = Path(sys.executable).parent / "chroma"
        data_dir.mkdir(parents=True, exist_ok=True)
        log = (data_dir.parent / "chroma-server.log").open("ab")  # noqa: SIM115 - the server's
        self.proc = subprocess.Popen([str(binary), "run", "--path", str(data_dir), "--host",
                                      "127.0.0.1", "--port", str(self.port)],
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("chroma server did not start in time")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2):
            return True
    except OSError:
        return False


def cli_via_server(env: dict[str, str], repo: Path, work: Path) -> dict[str, dict[str, float]]:
    """``freshmark search --json`` and ``freshmark status --json`` with
    ``FRESHMARK_SERVER_URL`` set: the CLI process's CPU (median of 3, after one call warmed
    the server), beside a ``freshmark serve`` of its own (with a private Redis for its
    queue)."""
    redis_port, port = _free_port(), _free_port()
    logs = (work / "serve.log").open("ab")  # noqa: SIM115 - the server's
    redis_proc = subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "",
                                   "--appendonly", "no"], stdout=logs, stderr=logs)
    served = {**env, "FRESHMARK_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
              "FRESHMARK_API_TOKEN": "bench-scale-token"}
    server = subprocess.Popen([sys.executable, "-m", "freshmark.faces.cli.main", "serve",
                               "--port", str(port), "--loglevel", "warning"], env=served,
                              stdout=logs, stderr=logs)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _answers(url) and time.monotonic() < deadline:
            time.sleep(0.5)
        client = {**served, "FRESHMARK_SERVER_URL": url}
        out = {}
        for name, args in (("search", ("search", SHORT_QUERIES[1], "--repo", str(repo),
                                       "--json")),
                           ("status", ("status", str(repo), "--json"))):
            warm = cli(client, *args)
            runs = [cli(client, *args) for _ in range(3)]
            out[name] = {"cpu_s": statistics.median(r["cpu_s"] for r in runs),
                         "wall_s": statistics.median(r["wall_s"] for r in runs),
                         "first_wall_s": warm["wall_s"]}
        return out
    finally:
        for proc in (server, redis_proc):
            proc.terminate()
            proc.wait(timeout=60)


def _earlier_row(rows_json: Path | None, size: int) -> dict[str, Any] | None:
    """The row of ``size`` an earlier run wrote to ``rows_json`` (``--after-index``)."""
    if rows_json is None:
        return None
    rows = [r for r in json.loads(rows_json.read_text()) if r["size"] == size]
    if not rows:
        raise SystemExit(f"{rows_json} has no row of {size:,} chunks")
    return dict(rows[-1])


def _edit_rounds(repo: Path) -> int:
    """How many edit commits the corpus has had (its first commit is the corpus)."""
    return int(_git(repo, "rev-list", "--count", "HEAD")) - 1


# -- one size ---------------------------------------------------------------------------------
def bench_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """One size's row: embedded store, or a Chroma server of the bench's own."""
    work = args.work / f"size-{size}"
    if args.after_index is None:
        shutil.rmtree(work / "home-chroma-server", ignore_errors=True)
    server = ChromaServer(work / "home-chroma-server") if args.chroma_server else None
    try:
        row = _bench_size(size, args, server.url if server else None)
        if server is not None:
            row["chroma_server_peak_rss_mib"] = server.peak_rss_mib()
            row["disk_mib"]["chroma"] = disk_mib(work / "home-chroma-server")
        return row
    finally:
        if server is not None:
            server.stop()


def _bench_size(size: int, args: argparse.Namespace, chroma_url: str | None) -> dict[str, Any]:
    work = args.work / f"size-{size}"
    corpus = build_corpus(args.mirrors, size, work / "corpus")
    repo = work / "corpus"
    home = work / "home"
    earlier = _earlier_row(args.after_index, size)
    if earlier is None:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
    env = {**os.environ, "FRESHMARK_HOME": str(home), "FRESHMARK_EMBEDDER": "hashing",
           "PYTHONPATH": str(ROOT)}
    for name in ("FRESHMARK_CONFIG", "FRESHMARK_CHROMA_URL", "FRESHMARK_SERVER_URL"):
        env.pop(name, None)
    if args.lexical:
        env["FRESHMARK_LEXICAL"] = args.lexical
    if chroma_url:
        env["FRESHMARK_CHROMA_URL"] = chroma_url
    row: dict[str, Any] = {"size": size, "corpus": corpus, "load_before": uptime()}
    if earlier is None:
        full = cli(env, "index", str(repo), "--json")
        summary = json.loads(full["stdout"])
        row["chunks"] = int(summary.get("chunks_added", 0))
        row["index"] = {k: full[k] for k in ("cpu_s", "wall_s", "rss_mib")}
        print(f"  full index: {row['chunks']} chunks, {full['cpu_s']:.0f} s CPU, "
              f"{full['rss_mib']:.0f} MiB ({uptime()})", flush=True)
    else:  # the index an earlier run left, with that run's full-index figures
        row.update(chunks=earlier["chunks"], index=earlier["index"],
                   index_from=str(args.after_index))
    if args.catch_up_only:
        row["catch_up"] = catch_up_process(env, repo)
        print(f"  catch-up on a new host: {json.dumps(row['catch_up'])}", flush=True)
        row["disk_mib"] = {"chroma": disk_mib(home / "chroma"), "cache": disk_mib(home / "cache")}
        row["load_after"] = uptime()
        return row
    row["first_query"] = query_process(env, repo)  # the first process after the index
    edit_files(repo, EDITED_FILES, 1 if earlier is None else 1 + _edit_rounds(repo))
    incremental = cli(env, "index", str(repo), "--json")
    row["incremental"] = {k: incremental[k] for k in ("cpu_s", "wall_s", "rss_mib")}
    row["warm_incremental"] = warm_incremental_process(env, repo)
    row["status"] = {k: v for k, v in cli(env, "status", str(repo), "--json").items()
                     if k != "stdout"}
    row["cli_search"] = {k: v for k, v in cli(env, "search", SHORT_QUERIES[1], "--repo",
                                               str(repo), "--json").items() if k != "stdout"}
    via_server = cli_via_server(env, repo, work)
    row["cli_search_via_server"] = via_server["search"]
    row["status_via_server"] = via_server["status"]
    row["queries"] = query_process(env, repo)
    row["disk_mib"] = {"chroma": disk_mib(home / "chroma"), "cache": disk_mib(home / "cache")}
    row["load_after"] = uptime()
    return row


ROWS: tuple[tuple[str, Any], ...] = (
    ("query-process RSS after 50 queries (MiB)", lambda r: r["queries"]["rss_mib"]),
    ("  of it anonymous (MiB)", lambda r: r["queries"]["anon_mib"]),
    ("first search in a new process, CPU (s)", lambda r: r["queries"]["first_cpu_s"]),
    ("first search in a new process, wall (s)", lambda r: r["queries"]["first_wall_s"]),
    ("short query CPU p50 (ms)", lambda r: r["queries"]["short_ms"]["p50"]),
    ("short query CPU p95 (ms)", lambda r: r["queries"]["short_ms"]["p95"]),
    ("long query CPU p50 (ms)", lambda r: r["queries"]["long_ms"]["p50"]),
    ("long query CPU p95 (ms)", lambda r: r["queries"]["long_ms"]["p95"]),
    ("indexer peak RSS, full index (MiB)", lambda r: r["index"]["rss_mib"]),
    ("full index CPU (s)", lambda r: r["index"]["cpu_s"]),
    ("10-file incremental CPU (s)", lambda r: r["incremental"]["cpu_s"]),
    ("10-file incremental peak RSS (MiB)", lambda r: r["incremental"]["rss_mib"]),
    ("10-file incremental CPU in a warm process (s)",
     lambda r: r["warm_incremental"]["cpu_s"]),
    ("  its process's peak RSS (MiB)", lambda r: r["warm_incremental"]["process_rss_mib"]),
    ("status CPU (s)", lambda r: r["status"]["cpu_s"]),
    ("status CPU via a running server (s)", lambda r: r["status_via_server"]["cpu_s"]),
    ("CLI search --json CPU (s)", lambda r: r["cli_search"]["cpu_s"]),
    ("CLI search --json CPU via a running server (s)",
     lambda r: r["cli_search_via_server"]["cpu_s"]),
    ("CLI search --json wall via a running server (s)",
     lambda r: r["cli_search_via_server"]["wall_s"]),
    ("disk: Chroma (MiB)", lambda r: r["disk_mib"]["chroma"]),
    ("disk: cache, lexical + embeddings (MiB)", lambda r: r["disk_mib"]["cache"]),
)


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    sizes = [r["chunks"] for r in rows]
    head = "| | " + " | ".join(f"{n:,} chunks" for n in sizes)
    pairs = list(zip(sizes, sizes[1:], strict=False))
    head += "".join(f" | exponent {a // 1000}k→{b // 1000}k" for a, b in pairs) + " |"
    print(head)
    print("|---" * (1 + len(sizes) + len(pairs)) + "|")
    for label, read in ROWS:
        values = [float(read(r)) for r in rows]
        cells = [f"{v:,.2f}" if v < 10 else f"{v:,.0f}" for v in values]
        exponents = [math.log(b / a) / math.log(nb / na) if a > 0 and b > 0 else math.nan
                     for (a, b), (na, nb) in zip(zip(values, values[1:], strict=False),
                                                 pairs, strict=True)]
        print(f"| {label} | " + " | ".join(cells)
              + "".join(f" | {e:.2f}" for e in exponents) + " |")
    for r in rows:
        if "chroma_server_peak_rss_mib" in r:
            print(f"{r['chunks']:,} chunks: Chroma server peak RSS "
                  f"{r['chroma_server_peak_rss_mib']:,.0f} MiB")
        print(f"{r['chunks']:,} chunks: corpus {r['corpus']}; load before: {r['load_before']}; "
              f"after: {r['load_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000",
                        help="Chunk counts, comma-separated.")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/fm-scale"))
    parser.add_argument("--lexical", default=None, help="FRESHMARK_LEXICAL for every process.")
    parser.add_argument("--chroma-server", action="store_true",
                        help="Keep the store in a Chroma server the bench starts (its peak RSS "
                             "is reported apart), not embedded in each process.")
    parser.add_argument("--json", type=Path, default=None, help="Write the rows here.")
    parser.add_argument("--catch-up-only", action="store_true",
                        help="Only the full index and, after it, the lexical catch-up of a "
                             "host that never saw the branch (its lexical indexes deleted).")
    parser.add_argument("--after-index", type=Path, default=None, metavar="ROWS_JSON",
                        help="Keep the store, corpus and index an earlier run of the same "
                             "--work left (its --json, whose full-index figures are carried "
                             "over) and measure everything after the full index again.")
    parser.add_argument("--source-compiled-each-start", action="store_true",
                        help="Do not compile freshmark's sources first: with "
                             "PYTHONDONTWRITEBYTECODE set, each process compiles them again.")
    parser.add_argument("--queries", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--catch-up", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warm-incremental", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.queries is not None:
        run_queries(args.queries)
        return
    if args.catch_up is not None:
        run_catch_up(args.catch_up)
        return
    if args.warm_incremental is not None:
        run_warm_incremental(args.warm_incremental)
        return
    if not args.source_compiled_each_start:
        compileall.compile_dir(ROOT / "freshmark", quiet=1)
        print(f"freshmark's sources compiled to bytecode under {ROOT / 'freshmark'}, as an "
              "install does", flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"== {size:,} chunks ({uptime()})", flush=True)
        rows.append(bench_size(size, args))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        if not args.catch_up_only:
            print_table(rows)


if __name__ == "__main__":
    main()

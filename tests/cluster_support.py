"""Helpers for the cluster tests: a recording sender, a private redis-server, worker / server /
scheduler subprocesses, a remote with a tracked branch and a config file (fixtures that use
them are in ``cluster_fixtures``).

The suite's Redis is a redis-server it starts itself on a free loopback port (``SUITE_REDIS``,
started by the session fixture ``suite_redis`` and stopped at the end); databases 11 (unit
tests) and 12 (process tests) of it are flushed around every test. No other server is ever
flushed: the machine's Redis on 6379 is never touched. ``FRESHMARK_TEST_REDIS_PORT=PORT``
hands the suite a redis-server the caller started for it instead (e.g. to run two checkouts'
suites side by side, or to look at the keys a test left). Destructive tests (restarting
Redis) start a private redis-server of their own on another free port.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis
from repo_builder import RepoBuilder

from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core.manifest import Manifest
from freshmark.core.settings import Settings

REDIS_HOST = "127.0.0.1"
UNIT_DB, PROCESS_DB = 11, 12
REPO_ROOT = Path(__file__).resolve().parent.parent
# The ``freshmark`` console script, whether or not the package is installed.
FRESHMARK = (sys.executable, "-c", "from freshmark.faces.cli.main import main; main()")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], object], timeout_seconds: float, what: str) -> object:
    """Poll ``predicate`` until it returns something truthy; fail the test on timeout."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_seconds:.0f} s waiting for {what}")


def client_for(db: int) -> redis.Redis:
    return jobs.connect(f"redis://{REDIS_HOST}:{REDIS_PORT}/{db}")


def flushed(client: redis.Redis) -> Iterator[redis.Redis]:
    """Body of a Redis fixture: the database is empty at the start and the end of the test.

    Only the suite's Redis is ever flushed. Redis is required in CI (``.ci/run`` installs
    redis-server) and skipped on a machine without it.
    """
    port = client.connection_pool.connection_kwargs.get("port")
    if port != REDIS_PORT:
        raise AssertionError(f"refusing to flush Redis on port {port}: not the suite's")
    try:
        client.ping()
    except redis.RedisError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"no Redis at {REDIS_HOST}:{REDIS_PORT}: {exc}")
        pytest.skip(f"no Redis at {REDIS_HOST}:{REDIS_PORT}: {exc}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


class Recorder:
    """A real job sender that records what would go to the broker: (kind, key, id, queue)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str, str]] = []

    def __call__(self, kind: str, job_key: str, job_id: str, queue: str) -> None:
        self.sent.append((kind, job_key, job_id, queue))

    def keys(self) -> list[str]:
        return [s[1] for s in self.sent]


class PrivateRedis:
    """A redis-server of our own on a free port (or ``port``): safe to kill and restart."""

    def __init__(self, workdir: Path, port: int | None = None):
        self.port = port or free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = jobs.connect(self.url)
        wait_until(lambda: _pings(client), 10, "private redis-server to start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


TEST_REDIS_PORT_ENV = "FRESHMARK_TEST_REDIS_PORT"


# Two layers of one repository on queues of their own, each run as soon as it is asked for
# (the layer tests hold one layer's run and watch the other's).
HOT_AND_INFRA_LAYERS = """
[[layers]]
name = "hot"
globs = ["src/**"]
interval_seconds = 0
queue = "hot"

[[layers]]
name = "infra"
globs = ["infra/**"]
interval_seconds = 0
queue = "infra"
"""
HELD_RUN_LIMIT_SECONDS = 600  # a held run's time limits (a share of it) never stop it
EVENT_DEADLINE_SECONDS = 120  # a wait for an event, generous for a loaded 2-core machine


@dataclass
class SuiteRedis:
    """The suite's Redis: a redis-server of its own (``owned``), or the caller's on
    ``$FRESHMARK_TEST_REDIS_PORT``. The port is chosen at import, before any test module reads
    ``REDIS_PORT``; the server starts with the session (``start``)."""

    port: int
    owned: bool
    server: PrivateRedis | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SuiteRedis:
        given = env.get(TEST_REDIS_PORT_ENV, "").strip()
        return cls(int(given), owned=False) if given else cls(free_port(), owned=True)

    def start(self, workdir: Path) -> None:
        """Start the suite's own server; without redis-server installed the Redis tests skip
        (``flushed``) rather than reach for a server the suite did not start."""
        if not self.owned or self.server is not None or shutil.which("redis-server") is None:
            return
        self.server = PrivateRedis(workdir, self.port)
        self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


SUITE_REDIS = SuiteRedis.from_env(os.environ)
REDIS_PORT = SUITE_REDIS.port


# --- cluster processes -----------------------------------------------------------------------

SECRET_ENV = "FM_TEST_WEBHOOK_SECRET"
SECRET = "cluster-test-secret"


def cluster_env(root: Path, redis_url: str, chroma_url: str, config: Path,
                visibility_timeout_seconds: int = 12,
                lock_lease_seconds: int = 6) -> dict[str, str]:
    """The environment of every cluster process of one test (fast embedder, short timeouts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHMARK_", "PROMETHEUS"))}
    (root / "prometheus").mkdir(parents=True, exist_ok=True)
    env.update({
        "FRESHMARK_HOME": str(root / "home"),
        "FRESHMARK_EMBEDDER": "hashing",
        "FRESHMARK_CONFIG": str(config),
        "FRESHMARK_REDIS_URL": redis_url,
        "FRESHMARK_CHROMA_URL": chroma_url,
        "FRESHMARK_VISIBILITY_TIMEOUT_SECONDS": str(visibility_timeout_seconds),
        "FRESHMARK_RESTORE_INTERVAL_SECONDS": "1",
        "FRESHMARK_LOCK_LEASE_SECONDS": str(lock_lease_seconds),
        "PROMETHEUS_MULTIPROC_DIR": str(root / "prometheus"),
        SECRET_ENV: SECRET,
        "PYTHONPATH": str(REPO_ROOT),
    })
    return env


@dataclass
class Cluster:
    """One test's cluster processes; every process is in its own group and is stopped at the end."""

    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    base_url: str = ""
    # name -> (repo id, working copy that pushes to the repo's remote)
    repos: dict[str, tuple[str, RepoBuilder]] = field(default_factory=dict)

    def client(self) -> redis.Redis:
        return jobs.connect(self.env["FRESHMARK_REDIS_URL"])

    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    def spawn(self, *args: str, log_name: str, host: str | None = None,
              cpu: int | None = None) -> subprocess.Popen[bytes]:
        """``freshmark ARGS`` in its own process group (so kill -9 takes its children too), on a
        host of its own name when ``host`` is given (see ``on_own_host``), pinned to one CPU
        (``taskset``) when ``cpu`` is."""
        log = open(self.root / f"{log_name}.log", "ab")  # noqa: SIM115 - owned by the process
        argv = [*FRESHMARK, *args]
        argv = on_own_host(host, argv) if host else argv
        proc = subprocess.Popen(
            ["taskset", "-c", str(cpu), *argv] if cpu is not None else argv,
            cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def start_worker(self, queues: str = "hot,infra,ondemand,maintenance", concurrency: int = 2,
                     name: str = "w1", host: str | None = None,
                     cpu: int | None = None) -> subprocess.Popen[bytes]:
        log_path = self.root / f"worker-{name}.log"
        start = log_path.stat().st_size if log_path.exists() else 0
        proc = self.spawn("worker", "--queues", queues, "--concurrency", str(concurrency),
                          "--name", f"{name}@%h", log_name=f"worker-{name}", host=host, cpu=cpu)

        def ready() -> bool:
            return b"ready." in log_path.read_bytes()[start:] or proc.poll() is not None

        wait_until(ready, 90, "the worker to be ready")
        assert proc.poll() is None, self.logs()
        return proc

    def start_server(self) -> subprocess.Popen[bytes]:
        port = free_port()
        proc = self.spawn("serve", "--port", str(port), "--loglevel", "warning", log_name="serve")
        self.base_url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _healthy(self.base_url) or proc.poll() is not None, 60,
                   "the server to answer /healthz")
        assert proc.poll() is None, self.logs()
        return proc

    def start_scheduler(self) -> subprocess.Popen[bytes]:
        return self.spawn("scheduler", "--tick-seconds", "0.5", log_name="scheduler")

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the whole process group: no warm shutdown, no message restored on exit."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=20)

    def stop_all(self) -> None:
        # Newest first: the scheduler and the server stop sending work before the workers stop,
        # so a sweep never sees a job its worker was stopped in the middle of.
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(proc)
        self.procs.clear()

    def logs(self) -> str:
        parts = [f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                 for p in sorted(self.root.glob("*.log"))]
        return "\n".join(parts)

    # -- what tests and benchmarks do to it -----------------------------------------------------
    def push_webhook(self, repo_id: str, after: str, *, before: str = "1" * 40,
                     branch: str = "main", delivery: str | None = None) -> httpx.Response:
        body = json.dumps({"ref": f"refs/heads/{branch}", "before": before, "after": after,
                           "deleted": set(after) == {"0"}}).encode()
        digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={digest}",
                   "X-GitHub-Delivery": delivery or uuid.uuid4().hex,
                   "Content-Type": "application/json"}
        return httpx.post(f"{self.base_url}/webhooks/{repo_id}", content=body, headers=headers,
                          timeout=10)

    def manifest(self, repo_id: str, branch: str = "main") -> Manifest | None:
        index = Store.open(self.settings()).branch(f"id:{repo_id}", branch)
        return index.manifest if index is not None else None

    def layer_commit(self, repo_id: str, layer: str, branch: str = "main") -> str | None:
        """The commit ``layer`` of the branch is stamped at; None before its first stamp."""
        found = self.manifest(repo_id, branch)
        return found.layer_commit(layer) if found is not None else None

    def wait_for_stamp(self, repo_id: str, commit: str, branch: str = "main",
                       timeout_seconds: float = 60) -> Manifest:
        def stamped() -> Manifest | None:
            found = self.manifest(repo_id, branch)
            return found if found is not None and found.commit == commit else None

        try:
            return wait_until(stamped, timeout_seconds, f"{repo_id}@{branch} at {commit[:8]}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None


def on_own_host(host: str, argv: list[str]) -> list[str]:
    """``argv`` in a UTS namespace of its own whose host name is ``host``: to this machine's
    processes it looks like a process on another machine (``socket.gethostname()``)."""
    return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, *argv]


def can_run_on_own_host() -> bool:
    """True where ``on_own_host`` works (root, or a user allowed to make UTS namespaces)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(on_own_host("freshmark-probe", ["true"]), capture_output=True)
    return probe.returncode == 0


def _healthy(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def write_config(path: Path, repos: list[dict[str, object]], *, layers: str = "",
                 service: str = "") -> Path:
    """A TOML config with the given repos (``id``, ``url``, ``branches``, ``provider``...)."""
    lines = [layers, "[service]", service]
    for repo in repos:
        lines.append("[[repos]]")
        for name, value in repo.items():
            if isinstance(value, list):
                items = ", ".join(f'"{v}"' for v in value)
                lines.append(f"{name} = [{items}]")
            else:
                lines.append(f'{name} = "{value}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_remote(root: Path, name: str = "shop") -> tuple[Path, RepoBuilder]:
    """A bare remote with one commit on ``main`` and a working copy that pushes to it."""
    remote = RepoBuilder.init(root / f"{name}.git", bare=True).path
    work = RepoBuilder.init(root / f"{name}-work")
    work.add_remote("origin", f"file://{remote}")
    work.write("src/app.py", "def hello():\n    return 'hello'\n")
    work.write("infra/deploy.sh", "#!/bin/sh\necho deploy\n")
    work.commit("initial")
    work.push("origin", "main")
    return remote, work


@contextmanager
def unit_cluster(root: Path, **env: str) -> Iterator[Cluster]:
    """A cluster (no process started yet) on the unit database, configured with a repository
    ``shop`` that need not exist and no reachable Chroma: for processes that start, not index.
    ``env`` overrides the processes' environment."""
    config = write_config(root / "freshmark.toml", [
        {"id": "shop", "url": f"file://{root}/shop.git", "branches": ["main"]}])
    running = Cluster(root, {**cluster_env(root, f"redis://{REDIS_HOST}:{REDIS_PORT}/{UNIT_DB}",
                                           "http://127.0.0.1:9", config), **env})
    try:
        yield running
    finally:
        running.stop_all()


@contextmanager
def shop_cluster(root: Path, chroma_url: str, *, service: str = "") -> Iterator[Cluster]:
    """A cluster (no process started yet) configured with one GitHub repository ``shop``, its
    webhooks signed with ``SECRET_ENV``, on the process database, flushed before and after."""
    remote, work = make_remote(root / "remotes", "shop")
    config = write_config(root / "freshmark.toml", [
        {"id": "shop", "url": f"file://{remote}", "branches": ["main"], "provider": "github",
         "webhook_secret_env": SECRET_ENV}], service=service)
    client_for(PROCESS_DB).flushdb()
    env = cluster_env(root, f"redis://{REDIS_HOST}:{REDIS_PORT}/{PROCESS_DB}", chroma_url, config)
    running = Cluster(root, env, repos={"shop": ("shop", work)})
    try:
        yield running
    finally:
        running.stop_all()
        client_for(PROCESS_DB).flushdb()

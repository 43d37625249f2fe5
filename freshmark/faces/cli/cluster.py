"""Cluster commands: ``worker``, ``serve``, ``scheduler``, ``watch`` and ``branch index``.

Registered into the main ``freshmark`` group by ``register(cli)``. Every long-running command
reads ``FRESHMARK_REDIS_URL`` (broker and job state), ``FRESHMARK_CONFIG`` and the store
settings from the environment, like the pods of the Helm chart do.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from freshmark.adapters import keys
from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.settings import Settings
from freshmark.faces.cli.common import examples

DEFAULT_WORKER_QUEUES = ",".join(jobspec.BUILTIN_QUEUES)


# HTTP clients that log every request at INFO (the Chroma client's httpx calls: one line per
# read and write of every job); an operator wants their warnings, not their traffic.
CHATTY_LOGGERS = ("httpx", "httpcore", "chromadb", "urllib3")


def quiet_chatty_loggers() -> None:
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    quiet_chatty_loggers()


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def _clean(fn: Any) -> Any:
    from freshmark.faces.cli.common import fail_cleanly

    return fail_cleanly(fn)


@click.command(epilog=examples(
    "freshmark worker --queues hot,infra,ondemand,maintenance --concurrency 2",
    "freshmark worker -Q ondemand --metrics-port 9101",
))
@click.option("--queues", "-Q", default=DEFAULT_WORKER_QUEUES, show_default=True,
              help="Comma-separated queues to consume (one deployment per queue in the chart).")
@click.option("--concurrency", "-c", type=click.IntRange(1), default=1, show_default=True,
              help="Worker processes (prefork children).")
@click.option("--pool", type=click.Choice(["prefork", "solo"]), default="prefork",
              show_default=True)
@click.option("--name", "-n", default=None, help="Node name (default: freshmark-<queues>@%h).")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option("--metrics-port", type=int, default=0,
              help="Serve this worker's /metrics on a port (0: off).")
def worker(queues: str, concurrency: int, pool: str, name: str | None, loglevel: str,
           metrics_port: int) -> None:
    """Run a Celery worker for index jobs (late acks, prefetch 1, one job per process).

    A worker of any queue but maintenance builds the model graph first when its host has
    none yet (~4 s of CPU, once), so its first job does not wait for it.
    """
    import os

    from freshmark.faces.cli.common import load_settings

    _clean(load_settings)()  # a missing or malformed config: one line, before any job is taken
    if metrics_port:
        os.environ["FRESHMARK_WORKER_METRICS_PORT"] = str(metrics_port)
    os.environ["FRESHMARK_WORKER_CONCURRENCY"] = str(concurrency)
    os.environ["FRESHMARK_WORKER_QUEUES"] = queues  # a worker that embeds prepares its model
    from workers.celery_app import app

    quiet_chatty_loggers()  # named loggers keep their level through Celery's setup and fork
    node = name or f"freshmark-{queues.replace(',', '-')}@%h"
    app.worker_main([
        "worker", "--queues", queues, "--concurrency", str(concurrency), "--pool", pool,
        "--hostname", node, "--loglevel", loglevel,
        # Heartbeats, gossip and mingle are broadcast chatter this service never reads.
        "--without-heartbeat", "--without-gossip", "--without-mingle",
    ])


@click.command(epilog=examples(
    "freshmark serve --host 0.0.0.0 --port 8080",
    "curl http://127.0.0.1:8080/healthz",
))
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--loglevel", "-l", default="info", show_default=True)
def serve(host: str, port: int, loglevel: str) -> None:
    """Serve webhooks, on-demand branches, the search API, /healthz and /metrics.

    \b
    Tokens (Authorization: Bearer TOKEN) on every route that returns code or takes work:
      $FRESHMARK_API_TOKEN       everything (the variable's name: [service] api_token_env)
      $FRESHMARK_API_READ_TOKEN  search, verify, context, MCP and /debug/queue only
    With no token set only a loopback-bound server (the default --host) stays open; bound
    elsewhere it answers 403 to every API route. /healthz, signed webhooks and /metrics
    (unless [service] metrics_require_token) need none.
    """
    from freshmark.faces.http.app import create_app
    from freshmark.faces.http.serving import listening_socket
    from freshmark.faces.http.serving import serve as serve_app

    quiet_chatty_loggers()

    def run() -> None:
        listener = listening_socket(host, port)
        # The bind address decides whether a server without a token may stay open (loopback).
        serve_app(create_app(bind_host=host), listener, loglevel.lower())

    _clean(run)()


@click.command(epilog=examples(
    "freshmark scheduler                     # a second one waits as a standby",
    "freshmark scheduler --loglevel DEBUG",
))
@click.option("--tick-seconds", type=float, default=1.0, show_default=True)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
def scheduler(tick_seconds: float, loglevel: str) -> None:
    """Run the layered schedules, reconcile and retirement (one active scheduler at a time)."""
    from freshmark.faces.cli.common import load_settings
    from scheduler.auditor import FreshnessAuditor
    from scheduler.schedule import Scheduler
    from workers.celery_app import send_job

    _setup_logging(loglevel)

    def run() -> None:
        from freshmark.adapters.queue import jobs

        settings, config = load_settings()
        timings = jobspec.Timings.from_env()
        client = jobs.connect(settings.redis_url)
        sched = Scheduler(client, config, send_job, stale_seconds=timings.stale_seconds)
        if config.reconcile_interval_seconds > 0 and config.repos:
            sched.auditor = FreshnessAuditor(settings, config, client,
                                             config.reconcile_interval_seconds)
        sched.run(_stop_on_signals(), tick_seconds=tick_seconds)

    _clean(run)()


@click.command(epilog=examples(
    "freshmark watch                          # the repository of the current directory",
    "freshmark watch ~/src/shop",
    "freshmark watch /mnt/nfs/shop --polling  # NFS and bind mounts send no inotify events",
))
@click.argument("path", required=False, default=".",
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--polling", is_flag=True, help="Poll instead of inotify (NFS, bind mounts).")
@click.option("--poll-interval-seconds", type=float, default=1.0, show_default=True)
@click.option("--debounce-seconds", type=float, default=2.0, show_default=True)
@click.option("--max-wait-seconds", type=float, default=30.0, show_default=True)
@click.option("--queue", default=jobspec.QUEUE_HOT, show_default=True)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
def watch(path: Path, polling: bool, poll_interval_seconds: float, debounce_seconds: float,
          max_wait_seconds: float, queue: str, loglevel: str) -> None:
    """Watch a working copy and queue debounced index jobs for its checked-out branch.

    PATH: any directory of the work tree (default: the current one).
    """
    from scheduler.watch import WatchOptions, WorkingCopyWatcher
    from workers.celery_app import send_job

    _setup_logging(loglevel)

    def run() -> None:
        from freshmark.adapters.git.repo import GitRepo
        from freshmark.adapters.queue import jobs

        settings = Settings.from_env()
        top_level = GitRepo.discover(path).path  # a subdirectory watches its whole repository
        client = jobs.connect(settings.redis_url)
        client.ping()  # fail now, not at the first change, when Redis is down
        options = WatchOptions(queue=queue, debounce_seconds=debounce_seconds,
                               max_wait_seconds=max_wait_seconds, polling=polling,
                               poll_interval_seconds=poll_interval_seconds)
        watcher = WorkingCopyWatcher(top_level, client, send_job, options)
        click.echo(f"watching {watcher.root} ({'polling' if polling else 'inotify'}) "
                   f"as {watcher.label}", err=True)
        watcher.run(_stop_on_signals())

    _clean(run)()


def _index_locally(settings: Settings, config: Config, repo_id: str, branch: str,
                   base: str | None) -> dict[str, Any]:
    from freshmark.adapters.git.mirrors import sync_mirror
    from freshmark.services.indexing.indexer import IndexRequest, index_repo
    from freshmark.services.upkeep.branches import default_base

    repo = config.repo(repo_id)
    state = sync_mirror(settings, repo)
    base_branch = (base if base is not None else default_base(repo, branch)) or None
    request = IndexRequest(state.path, branch=branch, repo_id=repo_id, base_branch=base_branch,
                           base_named=base is not None)
    summary = index_repo(request, settings=settings, config=config)
    return summary.to_dict()


def _require_configured(config: Config, repo_id: str) -> None:
    """``branch index`` fetches from a configured remote; a repository indexed by path is not
    one, and the way to index its branches is ``freshmark index``: say so."""
    from freshmark.core.errors import BadInput

    configured = [r.id for r in config.repos]
    if repo_id not in configured:
        where = (f"configured: {', '.join(configured)}" if configured
                 else "the config has no [[repos]]")
        raise BadInput(f"unknown repository {repo_id!r} ({where}); branch index works on "
                       "configured repositories. For a working copy: freshmark index PATH "
                       "--branch B --base MAIN")


def _wait_for(client: Any, job_key: str, timeout_seconds: float) -> str:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if not client.exists(keys.job(job_key)):
            return "parked" if client.hexists(keys.PARKED, job_key) else "done"
        time.sleep(0.2)
    return "timeout"


@click.command("index", epilog=examples(
    "freshmark branch index shop feature/login --base main --wait",
    "freshmark branch index shop main --local   # in this process, no worker needed",
))
@click.argument("repo")
@click.argument("branch")
@click.option("--base", help="Layer it on this branch's index (default: the repo's first "
              "tracked).")
@click.option("--local", is_flag=True, help="Index in this process instead of queueing a job.")
@click.option("--wait", is_flag=True, help="Wait for the queued job to finish.")
@click.option("--timeout-seconds", type=float, default=600.0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def branch_index(repo: str, branch: str, base: str | None, local: bool, wait: bool,
                 timeout_seconds: float, as_json: bool) -> None:
    """Index BRANCH of the configured repository REPO on demand, as an overlay on its base."""
    from freshmark.faces.cli.common import emit_json, load_settings
    from freshmark.services.upkeep.branches import request_branch_index

    def run() -> None:
        settings, config = load_settings()
        _require_configured(config, repo)
        if local:
            summary = _index_locally(settings, config, repo, branch, base)
            emit_json(summary) if as_json else click.echo(
                f"{repo}@{branch} -> {summary['commit'][:12]}: "
                f"{summary['embeddings_computed']} embeddings computed, "
                f"{summary['embeddings_reused']} reused, {summary['seconds']:.2f} s"
            )
            return
        from freshmark.adapters.git.mirrors import remote_branches
        from freshmark.adapters.queue import jobs
        from workers.celery_app import send_job

        known = remote_branches(config.repo(repo).url)
        client = jobs.connect(settings.redis_url)
        result = request_branch_index(client, config, repo, branch, send_job, base, known)
        state = _wait_for(client, result.job_key, timeout_seconds) if wait else "queued"
        out: dict[str, Any] = {"job": result.job_key, "outcome": result.outcome, "state": state}
        parked = jobs.parked_job(client, result.job_key) if state == "parked" else None
        if parked is not None:
            out["error"] = parked.get("last_error", "")
        emit_json(out) if as_json else click.echo(
            f"{result.job_key}: {result.outcome}, {state}"
            + (f": {out['error']}" if out.get("error") else ""))
        if state in ("parked", "timeout"):
            # Its own error (a base never indexed, a bad config) is the request's: 2; a
            # service that stayed down through the retries: 3, try again.
            own = parked is not None and parked.get("failed_on") == jobspec.FAILED_ON_ERROR
            sys.exit(2 if own else 3)

    _clean(run)()


def register(cli: click.Group) -> None:
    """Add the cluster commands to the main CLI (``branch`` joins an existing group if any)."""
    for command in (worker, serve, scheduler, watch):
        cli.add_command(command)
    group = cli.commands.get("branch")
    if not isinstance(group, click.Group):
        group = click.Group("branch", help="On-demand branch indexes.", epilog=examples(
            "freshmark branch index shop feature/login --wait"))
        cli.add_command(group)
    group.add_command(branch_index)

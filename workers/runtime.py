"""Per-process state of a worker (settings, config, Redis, store) and its lifecycle hooks.

Clients are created lazily in the process that uses them: a prefork child must not share the
parent's sockets. The config is re-read when its file changes, so a config map update reaches
running workers without a restart.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from celery import signals

from freshmark.adapters.embedding import LazyEmbedder, model_build_pending, prepare_embedder
from freshmark.adapters.embedding.threads import available_threads
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.shard import import_client_library
from freshmark.adapters.telemetry import exposition as metrics
from freshmark.core import jobspec
from freshmark.core.config import Config, load_config
from freshmark.core.errors import ConfigError
from freshmark.core.ports import Embedder
from freshmark.core.redact import install_log_redaction
from freshmark.core.settings import Settings
from workers.celery_app import BatchSender, send_batch, send_job

log = logging.getLogger("freshmark.worker")

# A graph build takes ~4 s of CPU; past this the worker starts anyway and its first job builds.
MODEL_PREPARE_TIMEOUT_SECONDS = 300.0


@dataclass
class WorkerContext:
    settings: Settings
    config: Config
    timings: jobspec.Timings
    redis: redis.Redis
    send: jobspec.Sender = send_job
    send_batch: BatchSender = send_batch
    _store: Store | None = field(default=None, repr=False)
    _embedder: Embedder | None = field(default=None, repr=False)

    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.settings)
        return self._store

    def embedder(self) -> Embedder:
        """One embedder per worker process: the model graph loads once, not once per job.

        Prefork children share the machine's cores, so each one gets its share of threads
        (``FRESHMARK_WORKER_CONCURRENCY`` is set by ``freshmark worker``) of the cores the
        process really has; ``FRESHMARK_EMBED_THREADS`` overrides it.

        The model loads at the first text the process embeds, not when a job starts: a split
        run's coordinator sends its batches out first, so helpers load their models while it
        loads its own (not one after the other), and a run with nothing to embed loads none.
        """
        if self._embedder is None:
            children = max(1, int(os.environ.get("FRESHMARK_WORKER_CONCURRENCY", "1")))
            threads = self.settings.embed_threads or available_threads(children)
            self._embedder = LazyEmbedder(self.settings.embedder, self.settings.cache_dir,
                                          threads=threads)
        return self._embedder


_context: WorkerContext | None = None
_config_stamp: tuple[str, float] | None = None


def _stamp_of(path: Path | None) -> tuple[str, float]:
    if path is None:
        return ("", 0.0)
    try:
        return (str(path), path.stat().st_mtime)
    except OSError:
        return (str(path), -1.0)


def current_context() -> WorkerContext:
    """This process's context; the config is reloaded when its file changed on disk (kept
    as it was when the new file does not load)."""
    global _context, _config_stamp
    settings = _context.settings if _context else Settings.from_env()
    stamp = _stamp_of(settings.config_path)
    if _context is None:
        _context = WorkerContext(
            settings=settings,
            config=load_config(settings.config_path),
            timings=jobspec.Timings.from_env(),
            redis=jobs.connect(settings.redis_url),
        )
    elif stamp != _config_stamp:
        try:
            _context.config = load_config(settings.config_path)
        except ConfigError as exc:  # an edit half saved or mistyped must not stop the jobs
            log.error("config at %s not reloaded, the last good one stays: %s",
                      settings.config_path, exc)
        else:
            log.info("config reloaded from %s", settings.config_path)
    _config_stamp = stamp
    return _context


def reset_context() -> None:
    global _context, _config_stamp
    _context, _config_stamp = None, None


@signals.worker_init.connect
def _on_worker_init(**_: Any) -> None:
    """In the parent, before children fork: one multiprocess metrics directory for all."""
    metrics.setup_multiprocess()
    port = int(os.environ.get("FRESHMARK_WORKER_METRICS_PORT", "0") or 0)
    if port:
        metrics.start_metrics_server(port)


@signals.celeryd_after_setup.connect
def _on_worker_setup(**_: Any) -> None:
    """In the parent, with logging set up, before the pool forks and the worker consumes:
    the model graph built, Chroma's client library imported (the children share it)."""
    prepare_model(os.environ.get("FRESHMARK_WORKER_QUEUES", ""))
    import_client_library(Settings.from_env())


def prepare_model(queues: str) -> None:
    """Build the model graph before the worker takes jobs, when it consumes a queue that embeds
    (any but maintenance), so a new host's or pod's first job does not wait for the build.

    The build runs in a process of its own (spawned, not forked): the pool children fork from
    this parent with none of the build's memory or threads. A failed or overlong build is
    logged and the worker starts anyway: its first job builds, or reports what is wrong.
    """
    if not set(filter(None, queues.split(","))) - {jobspec.QUEUE_MAINTENANCE}:
        return
    settings = Settings.from_env()
    try:
        if not model_build_pending(settings.embedder, settings.cache_dir):
            return
    except ConfigError as exc:  # no model package, an unknown name: the first job says so
        log.warning("model graph not prepared: %s", exc)
        return
    started = time.monotonic()
    build = multiprocessing.get_context("spawn").Process(
        target=prepare_embedder, args=(settings.embedder, settings.cache_dir),
        name="freshmark-model-prepare")
    build.start()
    build.join(MODEL_PREPARE_TIMEOUT_SECONDS)
    if build.is_alive():
        build.terminate()
        build.join()
        log.warning("model graph not ready after %.0f s; the first job builds it",
                    MODEL_PREPARE_TIMEOUT_SECONDS)
    elif build.exitcode != 0:
        log.warning("model graph build failed (exit %s); the first job tries again",
                    build.exitcode)
    else:
        log.info("model graph ready in %.1f s", time.monotonic() - started)


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _on_logging_ready(logger: logging.Logger | None = None, **_: Any) -> None:
    """Celery's handlers, and every line they write, pass through credential redaction."""
    install_log_redaction(logger)


@signals.worker_process_init.connect
def _on_child_start(**_: Any) -> None:
    reset_context()


@signals.worker_process_shutdown.connect
def _on_child_exit(pid: int | None = None, **_: Any) -> None:
    if pid:
        metrics.mark_process_dead(pid)

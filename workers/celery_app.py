"""The Celery app: broker settings, queues and the one function producers use to send a job.

Settings follow OPS.md: late acks, requeue when a worker dies, prefetch 1, results ignored, and
limits ordered soft < hard < visibility timeout (``core.jobspec.Timings``). A job whose worker
dies without a requeue (the whole worker killed, or the requeued message landing on another
host) does not wait for the visibility timeout: its lock lease lapses, or the hold lease on a
message it had not started yet (``workers.holds``), and the scheduler re-sends it
(``adapters.queue.jobs.resend_orphans``).
kombu's Redis transport scans for messages whose visibility timeout has passed only every
``unacked_restore_interval * unacked_restore_throttle`` seconds (10 * 10 by default, which is
where the "visibility timeout + ~100 s" comes from); the throttle is set to 1 so a killed
worker's job comes back within ``restore_interval_seconds`` of the timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Celery
from kombu import Queue

from freshmark.core import jobspec
from freshmark.core.config import Config
from freshmark.core.settings import Settings

TASK_FOR_KIND = {
    jobspec.KIND_INDEX: "freshmark.index_branch",
    jobspec.KIND_RETIRE: "freshmark.retire_branch",
    jobspec.KIND_RECONCILE: "freshmark.reconcile",
    jobspec.KIND_RETIRE_IDLE: "freshmark.retire_idle",
}


# One batch of a split index run (``workers.scaleout``): sent by the coordinating job to its own
# queue at the lowest priority, so jobs of other branches that arrive meanwhile go first.
TASK_INDEX_BATCH = "freshmark.index_batch"
BATCH_PRIORITY = 9

BatchSender = Callable[[dict[str, Any], str], None]  # (message payload, queue)

# Task name -> {"queue": default queue}; filled by ``workers.decorator.job_task``. Producers
# always name the queue (a layer's jobs go to the layer's queue); this is the fallback.
TASK_ROUTES: dict[str, dict[str, str]] = {}


def queue_names(config: Config | None = None) -> list[str]:
    """The built-in queues plus any queue a layer names, in a stable order."""
    names = list(jobspec.BUILTIN_QUEUES)
    for layer in config.layers if config else ():
        if layer.queue not in names:
            names.append(layer.queue)
    return names


def celery_config(settings: Settings, timings: jobspec.Timings,
                  queues: list[str]) -> dict[str, Any]:
    return {
        "broker_url": settings.redis_url,
        # kombu's Redis transport, made to survive a broker restart (see workers/broker_loss.py).
        "broker_transport": "workers.broker_loss:Transport",
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": timings.visibility_timeout_seconds,
            "unacked_restore_interval": timings.restore_interval_seconds,
            "unacked_restore_throttle": 1,
            # The restore sweep takes a Redis mutex; one left by a killed worker would block
            # every sweep for this long (kombu's default is 300 s).
            "unacked_mutex_expire": 15,
            "socket_timeout": 10,
            "socket_connect_timeout": 5,
            "health_check_interval": 10,
        },
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_ignore_result": True,
        "result_backend": None,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_soft_time_limit": timings.soft_time_limit_seconds,
        "task_time_limit": timings.time_limit_seconds,
        "task_default_queue": jobspec.QUEUE_HOT,
        "task_routes": TASK_ROUTES,
        "task_queues": [Queue(name, routing_key=name) for name in queues],
        # A webhook answer must not hang on a dead broker: fail fast, reconcile catches up.
        "task_publish_retry_policy": {
            "max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5,
        },
        "worker_prefetch_multiplier": 1,
        # The message comes back after a lost connection anyway; running it twice buys nothing.
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "worker_max_tasks_per_child": 500,
        "worker_send_task_events": False,
    }


def create_app(
    settings: Settings | None = None,
    timings: jobspec.Timings | None = None,
    config: Config | None = None,
) -> Celery:
    settings = settings or Settings.from_env()
    timings = timings or jobspec.Timings.from_env()
    # The task base makes a late ack after a lost broker connection harmless (broker_loss.py).
    # ``workers.holds`` is loaded for its signal: a worker holds each job message it takes.
    celery = Celery("freshmark", include=["workers.tasks", "workers.holds"],
                    task_cls="workers.broker_loss:FreshmarkTask")
    celery.conf.update(celery_config(settings, timings, queue_names(config)))
    return celery


def make_sender(celery: Celery) -> jobspec.Sender:
    """A ``core.jobspec.Sender`` that publishes through ``celery``'s broker connection."""

    def send(kind: str, job_key: str, job_id: str, queue: str) -> None:
        celery.send_task(TASK_FOR_KIND[kind], args=[job_key, job_id], queue=queue,
                         routing_key=queue)

    return send


def make_batch_sender(celery: Celery) -> BatchSender:
    """Publishes batch messages of a split index run through ``celery``'s broker connection."""

    def send(payload: dict[str, Any], queue: str) -> None:
        celery.send_task(TASK_INDEX_BATCH, args=[payload], queue=queue, routing_key=queue,
                         priority=BATCH_PRIORITY)

    return send


app = create_app()
# What every producer uses: hand a job to the broker named by FRESHMARK_REDIS_URL.
send_job: jobspec.Sender = make_sender(app)
send_batch: BatchSender = make_batch_sender(app)

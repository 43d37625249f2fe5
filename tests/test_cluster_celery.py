"""The Celery settings that make a killed worker's job come back once, and quickly."""

from __future__ import annotations

from pathlib import Path

import redis
from cluster_support import REDIS_PORT, UNIT_DB

from freshmark.adapters import keys
from freshmark.core import jobspec
from freshmark.core.config import Config, Layer
from freshmark.core.settings import Settings
from workers.celery_app import (
    TASK_FOR_KIND,
    TASK_INDEX_BATCH,
    app,
    celery_config,
    create_app,
    make_batch_sender,
    queue_names,
)

SETTINGS = Settings(home=Path("/tmp/unused"), redis_url=f"redis://127.0.0.1:{REDIS_PORT}/12")


def test_late_acks_requeue_on_worker_loss_and_prefetch_one() -> None:
    conf = celery_config(SETTINGS, jobspec.Timings(), ["hot"])
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1 and conf["task_ignore_result"]


def test_time_limits_sit_below_the_visibility_timeout() -> None:
    timings = jobspec.Timings(visibility_timeout_seconds=1200)
    conf = celery_config(SETTINGS, timings, ["hot"])
    visibility = conf["broker_transport_options"]["visibility_timeout"]
    assert conf["task_soft_time_limit"] < conf["task_time_limit"] < visibility == 1200


def test_unacked_messages_are_scanned_every_restore_interval() -> None:
    conf = celery_config(SETTINGS, jobspec.Timings(restore_interval_seconds=2), ["hot"])
    options = conf["broker_transport_options"]
    assert options["unacked_restore_interval"] == 2 and options["unacked_restore_throttle"] == 1
    assert options["unacked_mutex_expire"] < 300  # kombu's default stalls sweeps after a kill


def test_layer_queues_join_the_builtin_queues() -> None:
    config = Config(layers=(Layer("docs", ("docs/**",), 600, "slow"),))
    assert queue_names(config) == ["hot", "infra", "ondemand", "maintenance", "slow"]


def test_every_job_kind_has_a_registered_task() -> None:
    import workers.tasks  # noqa: F401 - registers the tasks on the app

    assert set(TASK_FOR_KIND.values()) <= set(app.tasks)


def test_batch_messages_wait_in_the_queues_lowest_priority_list(redis_client: redis.Redis) -> None:
    import workers.tasks  # noqa: F401 - registers the tasks on the app

    settings = Settings(home=Path("/tmp/unused"),
                        redis_url=f"redis://127.0.0.1:{REDIS_PORT}/{UNIT_DB}")
    send_batch = make_batch_sender(create_app(settings, jobspec.Timings()))
    send_batch({"batch": 0}, "hot")
    waiting = {name: redis_client.llen(name) for name in keys.kombu_queue_lists("hot")}
    assert waiting == {**dict.fromkeys(keys.kombu_queue_lists("hot"), 0),
                       keys.kombu_queue_lists("hot")[-1]: 1}  # behind every job of the queue
    assert TASK_INDEX_BATCH in app.tasks

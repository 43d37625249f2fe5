"""Every freshmark task acks and rejects through the broker-loss-safe request, so a late ack
after a lost Redis connection cannot stop the worker (see ``workers/broker_loss.py``)."""

from __future__ import annotations

from cluster_support import REDIS_PORT

from workers.broker_loss import BrokerLossSafeRequest
from workers.celery_app import app


def test_every_task_uses_the_broker_loss_safe_request() -> None:
    import workers.tasks  # noqa: F401 - registers the tasks

    ours = [t for name, t in app.tasks.items() if name.startswith("freshmark.")]
    assert ours
    assert all(t.Request is BrokerLossSafeRequest for t in ours)


def test_worker_broker_uses_the_collected_connection_safe_transport() -> None:
    from workers.broker_loss import Transport

    with app.connection_for_write() as connection:
        assert connection.transport_cls == "workers.broker_loss:Transport"
        assert isinstance(connection.transport, Transport)


def test_channel_of_a_collected_connection_raises_a_connection_error() -> None:
    import pytest
    from kombu import Connection
    from redis.exceptions import ConnectionError as RedisConnectionError

    connection = Connection(f"redis://127.0.0.1:{REDIS_PORT}/14",
                            transport="workers.broker_loss:Transport")
    channel = connection.channel()
    channel.connection.client = None  # what Celery's connection.collect() leaves behind
    try:
        with pytest.raises(RedisConnectionError):
            channel._connparams()
    finally:
        connection.release()

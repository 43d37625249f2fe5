"""Acks and rejects that outlive their broker connection must not stop the worker.

With late acks, a job that ends while the worker is reconnecting to Redis (the child finished,
or failed on the lost Redis, just as the consumer noticed the loss) is acked or rejected later,
from the event loop, on the channel of the connection Celery has already collected. kombu's
Redis channel of a collected connection has no connection info left, so the ack raises
``AttributeError`` instead of a connection error; nothing in Celery catches it, the consumer
dies and the worker shuts down instead of resuming.

``BrokerLossSafeRequest`` hands kombu that error as one more "couldn't ack" error: kombu logs
it and the loop goes on. Nothing is lost: an un-acked message stays in Redis and comes back
after the visibility timeout, and a restarted Redis has no message left to ack; the job state
in Redis drops the duplicate run either way.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from celery.worker.request import Request, logger
from kombu.transport import redis as kombu_redis
from redis import exceptions as redis_exceptions

# What an ack or reject on a channel of a collected Redis connection raises (kombu 5.x).
STALE_CHANNEL_ERRORS: tuple[type[BaseException], ...] = (AttributeError,)


class BrokerLossSafeRequest(Request):
    """A task request whose deferred ack/reject tolerates a channel of a lost connection."""

    acknowledged: bool  # Celery's ``Request`` sets it (False on the class); celery is untyped

    def _ack_errors(self) -> tuple[type[BaseException], ...]:
        return tuple(self._connection_errors) + STALE_CHANNEL_ERRORS

    def acknowledge(self) -> None:
        if not self.acknowledged:
            self._on_ack(logger, self._ack_errors())
            self.acknowledged = True

    def reject(self, requeue: bool = False) -> None:
        if not self.acknowledged:
            self._on_reject(logger, self._ack_errors(), requeue)
            self.acknowledged = True
            self.send_event("task-rejected", requeue=requeue)


class FreshmarkTask(Task):
    """The base of every freshmark task (``Celery(task_cls=...)``)."""

    Request = BrokerLossSafeRequest


class CollectedConnectionSafeChannel(kombu_redis.Channel):
    """A Redis channel that reports a collected connection as a *connection* error.

    On connection loss Celery first collects the connection (``transport.client = None``), then
    closes it; closing restores un-acked messages, which needs a fresh client pool built from
    ``connection.client``. kombu 5.7 reads that attribute unguarded and raises
    ``AttributeError``, which neither Celery nor kombu treats as a connection error, so the
    consumer died instead of reconnecting. As a ``redis`` ``ConnectionError`` it is swallowed
    like any other error of a lost broker, and the consumer goes on to reconnect.
    """

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise redis_exceptions.ConnectionError("broker connection was already collected")
        return super()._connparams(asynchronous)


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with ``CollectedConnectionSafeChannel`` (``broker_transport``)."""

    Channel = CollectedConnectionSafeChannel


# ``broker_transport`` value that selects it (the ``redis://`` URL still gives host and db).
TRANSPORT_PATH = "workers.broker_loss:Transport"

"""The webhook endpoint: answer in milliseconds, queue the work, trust nothing unsigned.

Order of checks, cheapest first and nothing parsed before the signature: unknown repo (404),
no signature header (401, before a byte of the body is read), declared or actual size over the
cap (413), body not there within the deadline (408), signature (401), event type (pings and
other events are acknowledged and ignored), payload (400), delivery id already seen (200
duplicate), then the jobs are queued (202). Every answer is small JSON ``{"result": ...}``
and counted in ``freshmark_webhook_deliveries_total{provider, result}``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import anyio
import redis
from kombu.exceptions import OperationalError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.adapters.telemetry import counters
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.core.errors import BadInput
from freshmark.services.upkeep.branches import is_active
from scheduler import webhooks

log = logging.getLogger("freshmark.webhooks")


# A 25 MB push arrives in well under this on any working link; slower is a client holding
# the connection open.
BODY_TIMEOUT_SECONDS = 30.0


class TooLarge(Exception):
    pass


async def read_capped(request: Request, max_bytes: int,
                      timeout_seconds: float = BODY_TIMEOUT_SECONDS) -> bytes:
    """The raw body, refusing more than ``max_bytes`` whatever Content-Length claims
    (``TooLarge``) and a body still arriving after ``timeout_seconds`` (``TimeoutError``);
    a Content-Length that is not a number is ``BadInput``."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or len(declared) > 18):
        raise BadInput("Content-Length is not a number")
    if declared is not None and int(declared) > max_bytes:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    with anyio.fail_after(timeout_seconds):
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise TooLarge
            chunks.append(chunk)
    return b"".join(chunks)


def _count(provider: str, result: str) -> None:
    counters.WEBHOOK_DELIVERIES_TOTAL.labels(provider=provider, result=result).inc()


def answer(provider: str, result: str, status: int, **extra: Any) -> JSONResponse:
    _count(provider, result)
    return JSONResponse({"result": result, **extra}, status_code=status)


class WebhookReceiver:
    """Holds what a delivery needs: the config, Redis, the job sender and the environment
    the webhook secrets are read from (by the variable name each repo config gives)."""

    def __init__(
        self,
        config: Config,
        client: redis.Redis,
        send: jobspec.Sender,
        env: Mapping[str, str] | None = None,
        max_body_bytes: int = webhooks.MAX_BODY_BYTES,
        stale_seconds: float = 3600.0,
        body_timeout_seconds: float = BODY_TIMEOUT_SECONDS,
    ):
        self.config = config
        self.client = client
        self.send = send
        self.env = os.environ if env is None else env
        self.max_body_bytes = max_body_bytes
        self.stale_seconds = stale_seconds
        self.body_timeout_seconds = body_timeout_seconds

    def _repo(self, repo_id: str) -> RepoConfig | None:
        return next((r for r in self.config.repos if r.id == repo_id), None)

    def _secret(self, repo: RepoConfig) -> str:
        return self.env.get(repo.webhook_secret_env or "", "") if repo.webhook_secret_env else ""

    async def handle(self, repo_id: str, request: Request) -> JSONResponse:
        repo = self._repo(repo_id)
        if repo is None:
            return answer("unknown", "unknown_repo", 404)
        provider = repo.provider
        if not webhooks.has_signature(provider, request.headers):
            return answer(provider, "unauthorized", 401)
        try:
            body = await read_capped(request, self.max_body_bytes, self.body_timeout_seconds)
        except TooLarge:
            return answer(provider, "too_large", 413, limit_bytes=self.max_body_bytes)
        except TimeoutError:
            return answer(provider, "timeout", 408, error="body not received in time")
        except (ClientDisconnect, BadInput) as exc:
            return answer(provider, "malformed", 400, error=str(exc) or "client disconnected")
        if not webhooks.signature_ok(provider, self._secret(repo), body, request.headers):
            return answer(provider, "unauthorized", 401)
        event = webhooks.event_of(provider, request.headers)
        if event != "push":
            return answer(provider, "ignored", 200 if event == "ping" else 202, event=event)
        try:
            push = webhooks.parse_push(body)
        except BadInput as exc:
            return answer(provider, "malformed", 400, error=str(exc))
        return self._queue(repo, push, webhooks.delivery_id_of(provider, request.headers, body))

    def _queue(self, repo: RepoConfig, push: webhooks.PushEvent, delivery_id: str) -> JSONResponse:
        provider = repo.provider
        seen_key = keys.delivery(provider, repo.id, delivery_id)
        try:
            if not self.client.set(seen_key, "1", nx=True, ex=keys.DELIVERY_TTL_SECONDS):
                return answer(provider, "duplicate", 200, delivery=delivery_id)
            active = push.branch is not None and is_active(self.client, repo.id, push.branch)
            plan = webhooks.plan_push(push, repo, self.config.layers, active)
            queued = [
                jobs.submit(self.client, spec, self.send, stale_seconds=self.stale_seconds)
                for spec in plan.specs
            ]
        except (redis.RedisError, OperationalError, OSError) as exc:
            self._forget(seen_key)
            log.error("webhook for %s not queued: %s", repo.id, exc)
            return answer(provider, "unavailable", 503, error="queue unavailable; retry later")
        if plan.result == "ignored":
            return answer(provider, "ignored", 202, why=plan.why)
        return answer(
            provider, "accepted", 202, delivery=delivery_id,
            jobs=[{"job": q.job_key, "outcome": q.outcome} for q in queued],
        )

    def _forget(self, seen_key: str) -> None:
        """Let a redelivery through after a failed enqueue (best effort: Redis may be down)."""
        try:
            self.client.delete(seen_key)
        except (redis.RedisError, OSError):
            pass

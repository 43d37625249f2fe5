"""The webhook endpoint: answer in milliseconds, queue the work, trust nothing unsigned.

Order of checks, cheapest first and nothing parsed before the signature: unknown repo (404),
a signature header absent or not of the provider's form, no secret configured, or a wrong
GitLab token (401, before a byte of the body is read), too many unverified bodies already
streaming (503 with ``Retry-After``), declared or actual size over the cap (413), body not
there within the deadline (408), signature (401, its HMAC computed chunk by chunk as the body
arrives), event type (pings and other events are acknowledged and ignored), payload (400),
delivery id already seen (200 duplicate), then the jobs are queued (202). Every answer is
small JSON ``{"result": ...}`` and counted in
``freshmark_webhook_deliveries_total{provider, result}``.

Memory: a body is spooled (``tempfile.SpooledTemporaryFile``: in memory up to
``SPOOL_BYTES``, then an unlinked temporary file) while its signature is unknown, and read
into memory only once it verified; at most ``max_unverified_bodies`` stream at once. So
forged 25 MB bodies cost a few MiB of the server's memory, not 25 MB each.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping
from typing import IO, Any

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


# Deliveries are small (a push is a few KiB); bigger bodies spill to an unlinked file.
SPOOL_BYTES = 1024 * 1024
# Bodies whose signature is still unknown, streaming at once; beyond, 503 at once.
MAX_UNVERIFIED_BODIES = 8


class TooLarge(Exception):
    pass


def _check_declared_length(request: Request, max_bytes: int) -> None:
    """``BadInput`` for a Content-Length that is not a number, ``TooLarge`` over the cap."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or len(declared) > 18):
        raise BadInput("Content-Length is not a number")
    if declared is not None and int(declared) > max_bytes:
        raise TooLarge


async def stream_signed(request: Request, check: webhooks.BodySignature, max_bytes: int,
                        timeout_seconds: float = BODY_TIMEOUT_SECONDS) -> IO[bytes]:
    """The raw body spooled (memory, then an unlinked file), fed to ``check`` chunk by chunk;
    ``TooLarge`` past ``max_bytes`` whatever Content-Length claims, ``TimeoutError`` for a
    body still arriving after ``timeout_seconds``, ``BadInput`` for a nonsense length. The
    caller closes the spool."""
    _check_declared_length(request, max_bytes)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - returned
    size = 0
    try:
        with anyio.fail_after(timeout_seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge
                check.update(chunk)
                spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _count(provider: str, result: str) -> None:
    counters.WEBHOOK_DELIVERIES_TOTAL.labels(provider=provider, result=result).inc()


def answer(provider: str, result: str, status: int, headers: Mapping[str, str] | None = None,
           **extra: Any) -> JSONResponse:
    _count(provider, result)
    return JSONResponse({"result": result, **extra}, status_code=status, headers=headers)


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
        max_unverified_bodies: int = MAX_UNVERIFIED_BODIES,
    ):
        self.config = config
        self.client = client
        self.send = send
        self.env = os.environ if env is None else env
        self.max_body_bytes = max_body_bytes
        self.stale_seconds = stale_seconds
        self.body_timeout_seconds = body_timeout_seconds
        self.max_unverified_bodies = max_unverified_bodies
        self.unverified_bodies = 0  # streaming now; one event loop, so a plain counter
        for repo in config.repos:
            if not self._secret(repo):
                log.warning("webhooks for %s will be refused (401): %s", repo.id,
                            self._why_no_secret(repo))

    def _why_no_secret(self, repo: RepoConfig) -> str:
        """Why a repository has no webhook secret: named by its variable, never its value."""
        if not repo.webhook_secret_env:
            return "its config names no webhook_secret_env"
        return f"${repo.webhook_secret_env} is not set"

    def _repo(self, repo_id: str) -> RepoConfig | None:
        return next((r for r in self.config.repos if r.id == repo_id), None)

    def _secret(self, repo: RepoConfig) -> str:
        return self.env.get(repo.webhook_secret_env or "", "") if repo.webhook_secret_env else ""

    async def handle(self, repo_id: str, request: Request) -> JSONResponse:
        repo = self._repo(repo_id)
        if repo is None:
            return answer("unknown", "unknown_repo", 404)
        provider = repo.provider
        given = webhooks.signature_of(provider, request.headers)
        if given is None:
            return answer(provider, "unauthorized", 401, error="signature header missing or "
                          "not of the provider's form")
        check = webhooks.BodySignature(provider, self._secret(repo), given)
        if check.refused_before_body():
            if not self._secret(repo):  # the operator's to fix, not the sender's
                log.warning("webhook for %s refused: %s", repo.id, self._why_no_secret(repo))
            return answer(provider, "unauthorized", 401)
        counted = not check.authenticated_before_body
        if counted and self.unverified_bodies >= self.max_unverified_bodies:
            return answer(provider, "busy", 503, headers={"Retry-After": "5"},
                          error="too many deliveries arriving at once; retry")
        self.unverified_bodies += counted
        try:
            body = await self._verified_body(request, check)
        except TooLarge:
            return answer(provider, "too_large", 413, limit_bytes=self.max_body_bytes)
        except TimeoutError:
            return answer(provider, "timeout", 408, error="body not received in time")
        except (ClientDisconnect, BadInput) as exc:
            return answer(provider, "malformed", 400, error=str(exc) or "client disconnected")
        finally:
            self.unverified_bodies -= counted
        if body is None:
            return answer(provider, "unauthorized", 401)
        event = webhooks.event_of(provider, request.headers)
        if event != "push":
            return answer(provider, "ignored", 200 if event == "ping" else 202, event=event)
        try:
            push = webhooks.parse_push(body)
        except BadInput as exc:
            return answer(provider, "malformed", 400, error=str(exc))
        return self._queue(repo, push, webhooks.delivery_id_of(provider, request.headers, body))

    async def _verified_body(self, request: Request,
                             check: webhooks.BodySignature) -> bytes | None:
        """The body once its signature matched, else None (never read into memory then)."""
        with await stream_signed(request, check, self.max_body_bytes,
                                 self.body_timeout_seconds) as spool:
            return spool.read() if check.matches() else None

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

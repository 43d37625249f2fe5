"""The HTTP service behind ``freshmark serve``: webhooks, on-demand branches, health, metrics.

Routes:
  POST /webhooks/{repo_id}      push webhooks (GitHub, GitLab, Gitea/Forgejo: from the repo config)
  POST /branches/{repo_id}      on-demand branch index, ``{"branch": "...", "base": "..."}``
  GET  /debug/queue             pending, parked and failed jobs, queue lengths
  GET  /healthz                 200 when Redis answers, else 503
  GET  /metrics                 Prometheus exposition (events, freshness, queue lengths)
plus the search API (``faces.http.search_routes``), ``DELETE /v1/repos/{repo}[/branches/{branch}]``
(``faces.http.repo_routes``) and the MCP endpoint (``faces.mcp.server``,
mounted at ``/mcp``) when those modules are installed.

Everything but ``/healthz``, the (signed) webhooks and, by default, ``/metrics`` needs a bearer
token (``faces.http.auth``); without one (loopback only) ``Host`` and ``Origin`` are checked on
every route (``faces.http.origin``). API bodies must be JSON, capped in size and arrival time
(``faces.http.limits``). Every refusal has one shape, ``{"detail": {"error", "message"}}``,
its message passed through ``core.redact.public_message`` (no secret, no host path).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from kombu.exceptions import OperationalError
from starlette.concurrency import run_in_threadpool

from freshmark import __version__
from freshmark.adapters import keys
from freshmark.adapters.git.mirrors import remote_branches
from freshmark.adapters.queue import jobs
from freshmark.adapters.store.shard import import_client_library
from freshmark.adapters.telemetry import exposition as metrics
from freshmark.adapters.telemetry.freshness import freshness_store_for
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core import jobspec
from freshmark.core.config import Config, load_config
from freshmark.core.errors import BadInput, BranchNotFound, ConfigError
from freshmark.core.redact import hide_paths, public_message, redact
from freshmark.core.settings import Settings
from freshmark.faces.api.hosts import allowed_hosts
from freshmark.faces.http import route_docs as docs
from freshmark.faces.http.auth import BearerAuth, tokens_from_env
from freshmark.faces.http.limits import BodyLimit, BodyLimits
from freshmark.faces.http.origin import HostGuard
from freshmark.services.upkeep.branches import request_branch_index
from scheduler.receiver import WebhookReceiver

log = logging.getLogger("freshmark.server")


def _default_send() -> jobspec.Sender:
    from workers.celery_app import send_job

    return send_job


def error_answer(status: int, error: str, message: str) -> JSONResponse:
    """A refusal in freshmark's one error shape; the message never holds a secret or a path."""
    return JSONResponse({"detail": {"error": error, "message": public_message(message)}},
                        status_code=status)


def _unknown_repo(repo_id: str, config: Config) -> JSONResponse:
    shown = repo_id if len(repo_id) <= 80 else repo_id[:77] + "..."
    return error_answer(404, "UnknownRepository", (
        f"no repository {shown!r} in the config; a [[repos]] entry with this id makes it "
        f"known ({len(config.repos)} configured)"))


async def _json_object(request: Request) -> dict[str, Any]:
    """The JSON object of a body ``faces.http.limits`` already bounded and typed."""
    try:
        data = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BadInput("body is not JSON (or nested too deeply)") from exc
    if not isinstance(data, dict):
        raise BadInput("body must be a JSON object")
    return data


def _branch_request(data: dict[str, Any]) -> tuple[str, str | None]:
    unknown = sorted(str(name)[:40] for name in data if name not in ("branch", "base"))
    if unknown:  # a misspelt 'base' would index the branch whole, not on the base meant
        raise BadInput(f"unknown field {', '.join(map(repr, unknown[:5]))}: a branch request "
                       "takes 'branch' and an optional 'base'")
    branch, base = data.get("branch"), data.get("base")
    if not isinstance(branch, str) or (base is not None and not isinstance(base, str)):
        raise BadInput("'branch' (and optional 'base') must be strings")
    return branch, base


class _Routes:
    """Handlers closed over one app's config, Redis client, sender and environment."""

    def __init__(self, settings: Settings, config: Config, client: redis.Redis,
                 send: jobspec.Sender, env: Mapping[str, str],
                 dir_counts: metrics.DirCounts | None = None):
        self.config, self.client, self.send, self.env = config, client, send, env
        self.freshness = freshness_store_for(settings, client)  # where ``audit`` publishes
        self.dir_counts = dir_counts

    async def ondemand(self, repo_id: str, request: Request) -> JSONResponse:
        try:
            branch, base = _branch_request(await _json_object(request))
            url = self.config.repo(repo_id).url
            known = await run_in_threadpool(remote_branches, url)  # ls-remote blocks
            result = request_branch_index(
                self.client, self.config, repo_id, branch, self.send, base, known
            )
        except ConfigError:
            return _unknown_repo(repo_id, self.config)
        except BranchNotFound as exc:
            return error_answer(404, "BranchNotFound", str(exc))
        except BadInput as exc:
            return error_answer(400, "BadInput", str(exc))
        except (redis.RedisError, OperationalError, OSError):
            return error_answer(503, "QueueUnavailable", "queue unavailable; retry later")
        return JSONResponse(
            {"job": result.job_key, "outcome": result.outcome, "queue": result.queue},
            status_code=202,
        )

    def debug_queue(self) -> JSONResponse:
        try:
            failed = [json.loads(x) for x in self.client.lrange(keys.FAILED, 0, 49)]
            shown = {
                "queues": jobs.queue_lengths(self.client, _queues(self.config)),
                "due": self.client.zcard(keys.DUE),
                "pending": jobs.pending_jobs(self.client, limit=200),
                "parked": jobs.parked_jobs(self.client),
                "failed": failed,
            }
            # Entries stored before redaction existed may still hold credentials; errors name
            # the mirror or working copy they touched, which is this host's business only.
            return JSONResponse(json.loads(hide_paths(redact(json.dumps(shown)))))
        except (redis.RedisError, OSError):
            return error_answer(503, "QueueUnavailable", "queue unavailable; retry later")

    def healthz(self) -> JSONResponse:
        try:
            self.client.ping()
        except (redis.RedisError, OSError) as exc:
            return JSONResponse({"status": "unavailable", "redis": public_message(str(exc))[:200]},
                                status_code=503)
        return JSONResponse({"status": "ok", "version": __version__})

    def metrics(self) -> Response:
        queues = _queues(self.config)  # the layers' own queues too, as /debug/queue shows
        try:
            body, content_type = metrics.render_latest(
                store=self.freshness,
                queue_lengths=lambda: jobs.queue_lengths(self.client, queues),
                dir_counts=self.dir_counts,
            )
        except (redis.RedisError, OSError):
            body, content_type = metrics.render_latest(dir_counts=self.dir_counts)
        return Response(content=body, media_type=content_type)


def _add_service_routes(app: FastAPI, receiver: WebhookReceiver, routes: _Routes) -> None:
    """The service routes, each documented with the answers it really gives (``route_docs``);
    their handlers write their own responses, so ``response_model`` is None throughout."""
    add = app.add_api_route
    add("/webhooks/{repo_id}", receiver.handle, methods=["POST"], response_model=None,
        status_code=202, responses=docs.WEBHOOK, openapi_extra=docs.WEBHOOK_BODY,
        summary="Push webhook (GitHub, GitLab, Gitea/Forgejo), signed")
    add("/branches/{repo_id}", routes.ondemand, methods=["POST"], response_model=None,
        status_code=202, responses=docs.BRANCHES, openapi_extra=docs.BRANCH_BODY,
        summary="Index a branch on demand (needs the full API token)")
    add("/debug/queue", routes.debug_queue, methods=["GET"], response_model=None,
        responses=docs.DEBUG_QUEUE, summary="Pending, parked and failed jobs; queue lengths")
    add("/healthz", routes.healthz, methods=["GET"], response_model=None,
        responses=docs.HEALTHZ, summary="200 when Redis answers, else 503")
    add("/metrics", routes.metrics, methods=["GET"], response_model=None,
        response_class=PlainTextResponse, responses=docs.METRICS,
        summary="Prometheus exposition")


def _document_answers(app: FastAPI) -> None:
    """``/openapi.json`` as FastAPI builds it, less the 422s no service route gives."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = docs.without_phantom_422(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _queues(config: Config) -> list[str]:
    names = list(jobspec.BUILTIN_QUEUES)
    return names + [layer.queue for layer in config.layers if layer.queue not in names]


def _optional_module(name: str) -> Any | None:
    """Import a sibling module if it is installed; errors inside it are not hidden."""
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _include_search_api(app: FastAPI) -> None:
    module = _optional_module("freshmark.faces.http.search_routes")
    if module is not None:
        app.include_router(module.router)
        app.include_router(importlib.import_module("freshmark.faces.http.repo_routes").router)
        module.install_error_handlers(app)


def _mount_mcp(app: FastAPI, env: Mapping[str, str]) -> Any | None:
    """Mount a fresh MCP server's Streamable HTTP app at /mcp (endpoint ``/mcp/``); returns the
    server, whose session manager the lifespan runs (a mounted app's own lifespan does not)."""
    module = _optional_module("freshmark.faces.mcp.server")
    if module is None:
        return None
    server = module.build_server()  # one per app: a session manager runs only once
    app.mount("/mcp", module.create_asgi_app(server, hosts=allowed_hosts(env)))
    return server


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    manager = getattr(getattr(app.state, "mcp_server", None), "session_manager", None)
    if manager is None:
        yield
        return
    async with manager.run():
        yield


def create_app(
    settings: Settings | None = None,
    config: Config | None = None,
    client: redis.Redis | None = None,
    send: jobspec.Sender | None = None,
    env: Mapping[str, str] | None = None,
    bind_host: str | None = None,
    limits: BodyLimits | None = None,
) -> FastAPI:
    """The service app. ``bind_host`` is the address the server listens on: with no API
    token set, only a loopback-only server stays open (None: unknown, so closed)."""
    settings = settings or Settings.from_env()
    config = config or load_config(settings.config_path)
    import_client_library(settings)  # at start, not in the first search's time
    client = client or jobs.connect(settings.redis_url)
    send = send or _default_send()
    env = os.environ if env is None else env
    timings = jobspec.Timings.from_env()
    limits = limits or BodyLimits()
    receiver = WebhookReceiver(config, client, send, env, stale_seconds=timings.stale_seconds,
                               body_timeout_seconds=limits.webhook_timeout_seconds,
                               max_unverified_bodies=limits.webhook_unverified_bodies)
    routes = _Routes(settings, config, client, send, env,
                     VerdictStats.open(settings).dir_counts)

    app = FastAPI(title="freshmark", version=__version__, lifespan=_lifespan)
    _add_service_routes(app, receiver, routes)
    _include_search_api(app)
    _document_answers(app)
    app.state.mcp_server = _mount_mcp(app, env)
    tokens = tokens_from_env(env, config.api_token_env, bind_host,
                             metrics_public=not config.metrics_require_token)
    if not tokens.any_set and not tokens.open_without_token:
        log.warning("no API token set ($%s) and not bound to loopback only: every API route "
                    "answers 403; webhooks, /healthz and /metrics still work", config.api_token_env)
    # Added last runs first: Host, Origin and auth refuse before any body is read.
    app.add_middleware(BodyLimit, limits=limits)
    app.add_middleware(BearerAuth, tokens=tokens)
    if tokens.open_without_token:
        app.add_middleware(HostGuard, hosts=allowed_hosts(env))
    return app

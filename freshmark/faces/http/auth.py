"""Who may call what on ``freshmark serve``: bearer tokens checked before any handler runs.

Every route needs a token except ``/healthz`` and the webhooks (they carry their own signature);
``/metrics`` is public unless the config says ``metrics_require_token``. The full token
(``$FRESHMARK_API_TOKEN``, the name comes from ``config.api_token_env``) may do everything; the
optional read token (``$FRESHMARK_API_READ_TOKEN``) may search, verify, build context, read
``/debug/queue`` and use MCP, but not ask for work (``POST /branches/*``) or drop an index
(``DELETE /v1/repos/*``).

With no token set the server fails closed, unless it listens on loopback only: then local use
stays open, as a developer's laptop expects. Tokens are compared in constant time and never
logged or echoed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from starlette.types import ASGIApp, Receive, Scope, Send

from freshmark.core.redact import public_message

READ_TOKEN_ENV = "FRESHMARK_API_READ_TOKEN"


class Need(Enum):
    PUBLIC = "public"
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class ApiTokens:
    """The tokens one server accepts; empty strings mean "not set"."""

    full: str
    read: str
    full_env: str
    open_without_token: bool  # no token set and the server listens on loopback only
    metrics_public: bool = True

    @property
    def any_set(self) -> bool:
        return bool(self.full or self.read)


def is_loopback(host: str | None) -> bool:
    """True for a bind address only this machine can reach (``127.0.0.1``, ``::1``,
    ``localhost``); False for wildcards (``0.0.0.0``, ``::``), names and None (unknown)."""
    if not host:
        return False
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tokens_from_env(env: Mapping[str, str], full_env: str, bind_host: str | None,
                    metrics_public: bool = True) -> ApiTokens:
    full, read = env.get(full_env, "").strip(), env.get(READ_TOKEN_ENV, "").strip()
    return ApiTokens(full=full, read=read, full_env=full_env, metrics_public=metrics_public,
                     open_without_token=not (full or read) and is_loopback(bind_host))


def need_of(method: str, path: str, metrics_public: bool) -> Need:
    """What a request needs (pure). Unknown paths need a token too: fail closed."""
    if path == "/healthz" or path.startswith("/webhooks/"):
        return Need.PUBLIC
    if path == "/metrics":
        return Need.PUBLIC if metrics_public else Need.READ
    if path.startswith(("/branches/", "/v1/repos/")) and method.upper() != "GET":
        return Need.WRITE
    return Need.READ


def _same(expected: str, given: bytes) -> bool:
    return bool(expected) and hmac.compare_digest(expected.encode("utf-8"), given)


def granted(authorization: bytes | None, tokens: ApiTokens) -> Need | None:
    """The most a request's ``Authorization`` header allows: WRITE, READ or None."""
    scheme, _, token = (authorization or b"").partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    token = token.strip()
    full_ok, read_ok = _same(tokens.full, token), _same(tokens.read, token)
    return Need.WRITE if full_ok else Need.READ if read_ok else None


def refusal(need: Need, authorization: bytes | None,
            tokens: ApiTokens) -> tuple[int, str, str] | None:
    """None to let a request through, else (status, error type, one-line message)."""
    if need is Need.PUBLIC or tokens.open_without_token:
        return None
    if not tokens.any_set:
        return 403, "NotConfigured", f"API token not configured: set ${tokens.full_env}"
    have = granted(authorization, tokens)
    if have is None:
        return 401, "Unauthorized", "missing or wrong bearer token"
    if need is Need.WRITE and have is not Need.WRITE:
        return 403, "Forbidden", "the read-only token cannot ask for work; use the API token"
    return None


async def send_error(send: Send, status: int, error: str, message: str,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A small JSON error in freshmark's shape, ``{"detail": {"error", "message"}}``."""
    body = json.dumps({"detail": {"error": error, "message": public_message(message)}}
                      ).encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: refuse a request before its body is read or any handler runs."""

    def __init__(self, app: ASGIApp, tokens: ApiTokens):
        self.app, self.tokens = app, tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        need = need_of(scope["method"], scope["path"], self.tokens.metrics_public)
        header = dict(scope["headers"]).get(b"authorization")
        refused = refusal(need, header, self.tokens)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, error, message = refused
        challenge = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send_error(send, status, error, message, challenge)

"""What every API request body must be, checked before handlers: JSON, bounded, valid Unicode.

A request that sends a body (POST, PUT, PATCH) must say ``Content-Type: application/json``
(415 otherwise): a browser sends other types cross-site without a CORS preflight, so this also
closes that door. A declared ``Content-Length`` over the cap is refused at once (413) without
reading a byte; a body that grows past the cap while streaming (chunked, or a lying length) is
refused as soon as it does; a body that does not arrive within ``timeout_seconds`` is refused
with 408, so a slow client cannot hold a worker thread. JSON text that escapes a lone surrogate
(``"\\ud800"``, which no UTF-8 text can hold) is refused with 400 before any handler meets it.
Webhook routes are left to the receiver, which checks the signature header first and applies
its own cap and deadline (``scheduler.receiver``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from freshmark.faces.http.auth import send_error

WEBHOOK_PREFIX = "/webhooks/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True)
class BodyLimits:
    """Caps for request bodies: bytes for API routes, seconds for any body to arrive."""

    api_bytes: int = 1024 * 1024
    timeout_seconds: float = 15.0
    webhook_timeout_seconds: float = 30.0  # a 25 MB push needs longer than an API call
    webhook_unverified_bodies: int = 8  # webhook bodies streaming before their signature


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length a client declared; ValueError when it is not a plain number."""
    raw = dict(headers).get(b"content-length")
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise ValueError("Content-Length is not a number")
    return int(raw)


async def read_body(receive: Receive, max_bytes: int) -> bytes:
    """All of a request's body, refusing more than ``max_bytes`` (``BodyTooLarge``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def is_json_type(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request declares a JSON body (``application/json``, parameters allowed)."""
    raw = dict(headers).get(b"content-type", b"")
    return raw.split(b";", 1)[0].strip().lower() == b"application/json"


def has_lone_surrogate(body: bytes) -> bool:
    """Whether a JSON body escapes a UTF-16 surrogate that is not half of a pair. A body that
    is not JSON at all is left to the handler, which says what is wrong with it."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:
        return False
    return False


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the buffered body over once, then waits on the real one
    (so streaming responses still see the client disconnect)."""
    pending = [body]

    async def replay() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replay


class BodyLimit:
    """ASGI middleware buffering each API request body within the limits, then replaying it."""

    def __init__(self, app: ASGIApp, limits: BodyLimits):
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(WEBHOOK_PREFIX):
            await self.app(scope, receive, send)
            return
        cap = self.limits.api_bytes
        try:
            declared = declared_length(scope["headers"])
        except ValueError as exc:
            await send_error(send, 400, "BadInput", str(exc))
            return
        if declared is not None and declared > cap:
            await send_error(send, 413, "TooLarge", f"body larger than {cap} bytes")
            return
        if scope["method"] in BODY_METHODS and not is_json_type(scope["headers"]):
            await send_error(send, 415, "UnsupportedMediaType",
                             "send the body as JSON with Content-Type: application/json")
            return
        try:
            with anyio.fail_after(self.limits.timeout_seconds):
                body = await read_body(receive, cap)
        except BodyTooLarge:
            await send_error(send, 413, "TooLarge", f"body larger than {cap} bytes")
            return
        except TimeoutError:
            await send_error(send, 408, "Timeout", "request body not received in time")
            return
        except ClientGone:
            return
        if has_lone_surrogate(body):
            await send_error(send, 400, "BadInput", "the body escapes a lone UTF-16 surrogate "
                             "(such as \\ud800), which is not Unicode text")
            return
        await self.app(scope, replaying(body, receive), send)

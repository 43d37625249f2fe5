"""``Host`` and ``Origin`` checked on every route while the server asks for no token.

Without a token (a loopback-only server, ``faces.http.auth``) the only thing that tells a local
program from a web page the user has open is what the browser cannot forge: the ``Host`` it
connected to and the ``Origin`` of the page (``faces.api.hosts``). With a token set, a page
cannot send it (it is not a cookie, and the header forces a CORS preflight), so the check is off
and the server answers whatever names its proxy gives it.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from freshmark.faces.api import hosts as host_policy
from freshmark.faces.http.auth import send_error


class HostGuard:
    """ASGI middleware refusing foreign ``Host`` (421) and ``Origin`` (403) values before any
    body is read or any handler runs."""

    def __init__(self, app: ASGIApp, hosts: Sequence[str]):
        self.app, self.hosts = app, list(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host, origin = headers.get(b"host"), headers.get(b"origin")
        refused = host_policy.refusal(host.decode("latin-1") if host is not None else None,
                                      origin.decode("latin-1") if origin is not None else None,
                                      self.hosts)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, message = refused
        await send_error(send, status, "Misdirected" if status == 421 else "Forbidden", message)

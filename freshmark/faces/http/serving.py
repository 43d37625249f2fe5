"""How ``freshmark serve`` runs its app under uvicorn: with deadlines on what clients send.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) but never one whose
request headers are still arriving: a client that connects and sends nothing, or one header
byte now and then, holds a socket and a file descriptor for as long as it likes (200 such
clients held 200 descriptors). ``HeaderDeadlineProtocol`` is uvicorn's httptools protocol with
one more timer, hand-written because uvicorn has no such setting: armed when a connection opens
and when a request's first byte arrives, cancelled when its headers are complete; when it fires
the connection is closed. Bodies have their own deadlines (``faces.http.limits`` for the API,
``scheduler.receiver`` for webhooks).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from freshmark.core.errors import BadInput

HEADER_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers are not
    complete within ``header_timeout_seconds``."""

    header_timeout_seconds = HEADER_TIMEOUT_SECONDS

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout_seconds,
                                                         self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, host: str, port: int, log_level: str = "info",
                  header_timeout_seconds: float = HEADER_TIMEOUT_SECONDS) -> uvicorn.Config:
    """The uvicorn configuration ``freshmark serve`` runs ``app`` with."""
    protocol = type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,),
                    {"header_timeout_seconds": header_timeout_seconds})
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http=protocol,
                          timeout_keep_alive=KEEP_ALIVE_SECONDS, lifespan="on")


def serve(app: Any, listener: socket.socket, log_level: str = "info") -> None:
    """Serve ``app`` on ``listener`` (from ``listening_socket``) until asked to stop."""
    host, port = listener.getsockname()[:2]
    config = server_config(app, host, port, log_level)  # sets up uvicorn's loggers
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    logging.getLogger("uvicorn.error").info("serving on %s (Ctrl+C to stop)", url)
    uvicorn.Server(config).run(sockets=[listener])


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` before the app is built, so that an address in use or
    not on this host is one clear error (exit 2), not an app started and then stopped."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as exc:
        listener.close()
        hint = (" (another server on it? choose a free one with --port)"
                if exc.errno == errno.EADDRINUSE else "")
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from exc
    listener.set_inheritable(True)
    return listener

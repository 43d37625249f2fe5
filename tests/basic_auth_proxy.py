"""A real HTTP listener in front of a real Chroma server that demands HTTP basic auth.

``chroma run`` (1.x) has no authentication of its own; deployments put it behind a proxy that
checks credentials. This is that proxy, small: it answers 401 to a request without the right
``Authorization: Basic`` header, forwards every other request to Chroma, and records the
``Authorization`` values it received.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class _Handler(BaseHTTPRequestHandler):
    upstream = ""
    expected = ""
    received: list[str] = []

    def _forward(self) -> None:
        given = self.headers.get("Authorization", "")
        self.received.append(given)
        if given != self.expected:
            self._reply(401, b'{"error": "Unauthorized"}', {"WWW-Authenticate": "Basic"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        answer = httpx.request(self.command, self.upstream + self.path, headers=headers,
                               content=body, timeout=30)
        self._reply(answer.status_code, answer.content,
                    {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP})

    def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


@contextmanager
def basic_auth_proxy(upstream: str, user: str, password: str) -> Iterator[tuple[str, list[str]]]:
    """Yields (proxy base URL without credentials, the Authorization values received)."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    received: list[str] = []
    handler = type("Handler", (_Handler,), {"upstream": upstream, "received": received,
                                            "expected": f"Basic {token}"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()

"""A real uvicorn server on a loopback port, in a thread of the test process (for tests that
need real sockets: slow bodies, lying lengths, connection resets), configured as
``freshmark serve`` runs it (``faces.http.serving``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from cluster_support import free_port, wait_until

from freshmark.faces.http.serving import HEADER_TIMEOUT_SECONDS, server_config


@contextmanager
def live_server(app: Any, header_timeout_seconds: float = HEADER_TIMEOUT_SECONDS
                ) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1; yields the base URL and stops the server afterwards."""
    port = free_port()
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, "error",
                                          header_timeout_seconds=header_timeout_seconds))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 20, "uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def raw_exchange(base_url: str, head: bytes, body: bytes = b"", wait_seconds: float = 10.0
                 ) -> tuple[int, float]:
    """Send ``head`` (request line and headers, CRLF-terminated) and ``body`` on a raw socket;
    (status, seconds until the status line came back). The body may be short on purpose."""
    host, port = base_url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=wait_seconds) as sock:
        sock.sendall(head + b"\r\n" + body)
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    elapsed = time.monotonic() - started
    return int(data.split(b" ", 2)[1]), elapsed

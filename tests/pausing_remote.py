"""A smart-HTTP git remote (``git http-backend`` behind a threaded HTTP server) that can stop
half-way through sending a pack, so a test kills a fetching process at a chosen point inside
the fetch instead of at a moment picked by timing.

``pause_on_pack=n`` holds the n-th pack response (1-based) after its first half is sent, sets
``paused`` and waits until ``release()``; every other request is served whole.
"""

from __future__ import annotations

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

_PACK_SIGNATURE = b"PACK"
_RELEASE_TIMEOUT_SECONDS = 300.0


class PausingRemote:
    """Serves the bare repositories under ``root`` at ``url`` + ``/<name>.git``."""

    def __init__(self, root: Path, pause_on_pack: int = 0):
        self.root = root
        self.pause_on_pack = pause_on_pack
        self.packs_started = 0
        self.paused = threading.Event()
        self._released = threading.Event()
        self._count_lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> PausingRemote:
        self._thread.start()
        return self

    def release(self) -> None:
        self._released.set()

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def _holds_this_pack(self) -> bool:
        with self._count_lock:
            self.packs_started += 1
            return self.packs_started == self.pause_on_pack

    def _serve(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        parts = urlsplit(handler.path)
        env = {**os.environ, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": parts.path, "QUERY_STRING": parts.query,
               "REQUEST_METHOD": handler.command,
               "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
               "HTTP_CONTENT_ENCODING": handler.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": handler.headers.get("Git-Protocol", "")}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                             check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        handler_headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                handler_headers.append((name, value.strip()))
        handler.send_response(status)
        for name, value in handler_headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        at = payload.find(_PACK_SIGNATURE)
        if at >= 0 and self._holds_this_pack():
            half = at + (len(payload) - at) // 2
            handler.wfile.write(payload[:half])
            handler.wfile.flush()
            self.paused.set()
            self._released.wait(_RELEASE_TIMEOUT_SECONDS)
            payload = payload[half:]
        try:
            handler.wfile.write(payload)
        except ConnectionError:
            pass  # the fetching process was killed while the pack was held

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # libgit2 reads a response by its length

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                remote._serve(self, b"")

            def do_POST(self) -> None:  # noqa: N802
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    remote._serve(self, _read_chunked(self))
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    remote._serve(self, self.rfile.read(length))

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


def _read_chunked(handler: BaseHTTPRequestHandler) -> bytes:
    body = bytearray()
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
        if size == 0:
            handler.rfile.readline()
            return bytes(body)
        body += handler.rfile.read(size)
        handler.rfile.readline()

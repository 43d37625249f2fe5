"""``freshmark serve`` does not let a client hold a connection without sending a request: headers
that never complete and connections that send nothing are closed (``faces.http.serving``);
MCP sessions are bounded and released when deleted. Real uvicorn servers on loopback."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
import redis
from cluster_support import Recorder, wait_until
from live_server import live_server

from freshmark.core.config import Config
from freshmark.faces.http.app import create_app
from freshmark.faces.mcp import server as mcp_server

HEADER_TIMEOUT_SECONDS = 1.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "tests", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


@pytest.fixture
def server(fm_home, redis_client: redis.Redis) -> Iterator[str]:
    app = create_app(config=Config(), client=redis_client, send=Recorder(), env={},
                     bind_host="127.0.0.1")
    with live_server(app, header_timeout_seconds=HEADER_TIMEOUT_SECONDS) as base_url:
        yield base_url


def _connect(base_url: str) -> socket.socket:
    host, port = base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed the connection (recv sees the end of the stream)."""
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_a_connection_that_sends_nothing_is_closed(server):
    with _connect(server) as sock:
        assert _closed_by_server(sock)


def test_headers_trickling_in_one_byte_at_a_time_are_cut_off(server):
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.settimeout(0.3)
        closed = False
        for _ in range(200):  # a byte every 0.3 s would take a minute to finish a header
            try:
                sock.sendall(b"X")
                closed = _closed_by_server(sock)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            if closed:
                break
    assert closed


def test_a_request_whose_headers_complete_is_answered(server):
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(HEADER_TIMEOUT_SECONDS / 4)
        sock.sendall(b"\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 ")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_two_hundred_slow_header_connections_give_their_descriptors_back(server):
    before = _open_descriptors()
    slow = [_connect(server) for _ in range(200)]
    for sock in slow:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 1")
    for sock in slow:
        assert _closed_by_server(sock)
        sock.close()
    # The server runs in this process: its sockets are counted with the test's.
    wait_until(lambda: _open_descriptors() <= before + 5, 30, "the server to close them")


def _open_session(base_url: str) -> httpx.Response:
    return httpx.post(f"{base_url}/mcp/", json=INITIALIZE, headers=MCP_HEADERS)


def test_mcp_sessions_beyond_the_bound_are_refused_with_503(server):
    opened = [_open_session(server) for _ in range(mcp_server.MAX_SESSIONS)]
    assert {answer.status_code for answer in opened} == {200}
    assert _open_session(server).status_code == 503


def test_a_deleted_mcp_session_frees_its_place(server):
    opened = [_open_session(server) for _ in range(mcp_server.MAX_SESSIONS)]
    session_id = opened[0].headers["mcp-session-id"]
    deleted = httpx.delete(f"{server}/mcp/", headers={**MCP_HEADERS,
                                                      "mcp-session-id": session_id})
    assert deleted.status_code == 200
    assert _open_session(server).status_code == 200

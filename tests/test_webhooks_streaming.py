"""A webhook body is verified while it streams and never held unless it verified: a forged or
malformed signature is refused before the body is read, at most a few unverified bodies stream
at once. Each test runs a real uvicorn server on loopback (``live_server``), raw sockets where a
client must misbehave."""

from __future__ import annotations

import hashlib
import hmac
import socket
from collections.abc import Iterator

import httpx
import pytest
import redis
from cluster_support import Recorder, wait_until
from live_server import live_server, raw_exchange
from test_webhooks import CONFIG, ENV, SECRET, github_headers, push_body

from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app
from freshmark.faces.http.limits import BodyLimits

MIB = 1024 * 1024
# A repository whose secret is not set, beside test_webhooks' shop (GitHub) and lab (GitLab).
UNSET = RepoConfig("unset", "file:///nowhere/unset.git", ("main",), "github", "UNSET_SECRET")
REPOS = Config(repos=(*CONFIG.repos, UNSET), layers=CONFIG.layers)


def _server(redis_client: redis.Redis, send: Recorder, unverified_bodies: int = 8):
    app = create_app(config=REPOS, client=redis_client, send=send,
                     env=ENV, bind_host="127.0.0.1",
                     limits=BodyLimits(webhook_unverified_bodies=unverified_bodies))
    return live_server(app)


@pytest.fixture
def sent() -> Recorder:
    return Recorder()


@pytest.fixture
def server(redis_client, sent) -> Iterator[str]:
    with _server(redis_client, sent) as base_url:
        yield base_url


def _head(path: str, headers: dict[str, str], length: int) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             f"Content-Length: {length}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n").encode()


@pytest.mark.parametrize("signature", ["sha256=0", "sha256=" + "g" * 64, "x" * 71,
                                       "md5=" + "0" * 32, "0" * 64])
def test_a_malformed_signature_header_is_401_before_the_body_arrives(server, signature):
    head = _head("/webhooks/shop", {"X-GitHub-Event": "push",
                                    "X-Hub-Signature-256": signature}, 25 * MIB)
    status, _ = raw_exchange(server, head)  # the 25 MB body is never sent
    assert status == 401


def test_a_wrong_gitlab_token_is_401_before_the_body_arrives(server):
    head = _head("/webhooks/lab", {"X-Gitlab-Event": "Push Hook",
                                   "X-Gitlab-Token": "not-the-t0ken"}, 25 * MIB)
    assert raw_exchange(server, head)[0] == 401


def test_a_repository_without_a_secret_refuses_before_the_body_arrives(server):
    head = _head("/webhooks/unset", {"X-GitHub-Event": "push",
                                     "X-Hub-Signature-256": "sha256=" + "0" * 64}, 25 * MIB)
    assert raw_exchange(server, head)[0] == 401


def test_a_well_formed_forged_signature_is_401_after_the_body_streamed(server, sent):
    body = push_body()
    headers = {**github_headers(body), "X-Hub-Signature-256": "sha256=" + "0" * 64}
    answer = httpx.post(f"{server}/webhooks/shop", content=body, headers=headers)
    assert answer.status_code == 401 and sent.sent == []


def test_a_signed_body_arriving_in_chunks_is_verified_and_queued(server, sent):
    body = push_body()
    pieces = [body[i:i + 7] for i in range(0, len(body), 7)]
    answer = httpx.post(f"{server}/webhooks/shop", content=iter(pieces),
                        headers=github_headers(body))
    assert answer.status_code == 202 and len(sent.sent) == 2


def test_a_signed_body_over_the_spool_size_is_still_verified(server, sent):
    body = push_body()[:-1] + b', "padding": "' + b"x" * (2 * MIB) + b'"}'
    answer = httpx.post(f"{server}/webhooks/shop", content=body, headers=github_headers(body))
    assert answer.status_code == 202 and len(sent.sent) == 2


def _hold_open(base_url: str) -> socket.socket:
    """A delivery whose body never finishes: it holds one unverified-body place."""
    host, port = base_url.removeprefix("http://").split(":")
    held = socket.create_connection((host, int(port)), timeout=10)
    signature = "sha256=" + hmac.new(SECRET.encode(), b"x", hashlib.sha256).hexdigest()
    held.sendall(_head("/webhooks/shop", {"X-GitHub-Event": "push",
                                          "X-Hub-Signature-256": signature}, MIB) + b"\r\n{")
    return held


def _forged(base_url: str) -> int:
    body = push_body()
    headers = {**github_headers(body), "X-Hub-Signature-256": "sha256=" + "0" * 64}
    return httpx.post(f"{base_url}/webhooks/shop", content=body, headers=headers).status_code


def test_beyond_the_unverified_body_cap_a_delivery_is_503_with_retry_after(redis_client, sent):
    with _server(redis_client, sent, unverified_bodies=1) as base_url:
        held = _hold_open(base_url)
        try:
            wait_until(lambda: _forged(base_url) == 503, 20, "the cap to refuse a second body")
            body = push_body()
            refused = httpx.post(f"{base_url}/webhooks/shop", content=body,
                                 headers=github_headers(body))
        finally:
            held.close()
    assert refused.status_code == 503 and refused.headers["retry-after"]
    assert refused.json()["result"] == "busy" and sent.sent == []


def test_a_finished_body_gives_its_place_back(redis_client, sent):
    with _server(redis_client, sent, unverified_bodies=1) as base_url:
        held = _hold_open(base_url)
        wait_until(lambda: _forged(base_url) == 503, 20, "the cap to refuse a second body")
        held.close()
        wait_until(lambda: _forged(base_url) == 401, 20, "the place to be given back")

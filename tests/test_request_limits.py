"""Bounded cost per request: body size and arrival time on every route, unsigned webhooks
refused before their body is read. Real sockets where timing matters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient
from live_server import live_server, raw_exchange

from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app
from freshmark.faces.http.limits import BodyLimits

TOKEN = "limits-t0ken"
CONFIG = Config(repos=(RepoConfig("shop", "file:///nowhere/shop.git", ("main",), "github",
                                  "SHOP_SECRET"),), api_token_env="FM_TEST_TOKEN")
ENV = {"FM_TEST_TOKEN": TOKEN, "SHOP_SECRET": "s3cret"}
LIMITS = BodyLimits(api_bytes=4096, timeout_seconds=1.0, webhook_timeout_seconds=1.0)
AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()


def _app(redis_client: redis.Redis, send: Recorder | None = None):
    return create_app(config=CONFIG, client=redis_client, send=send or Recorder(), env=ENV,
                      limits=LIMITS)


@pytest.fixture
def http(redis_client: redis.Redis) -> TestClient:
    return TestClient(_app(redis_client), headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture
def base_url(redis_client: redis.Redis) -> Iterator[str]:
    with live_server(_app(redis_client)) as url:
        yield url


@pytest.mark.parametrize("path", ["/v1/search", "/v1/verify", "/v1/context", "/branches/shop",
                                  "/mcp/"])
def test_a_declared_body_over_the_cap_is_413(http, path):
    answer = http.post(path, content=b"{}", headers={"Content-Length": str(10**12)})
    assert answer.status_code == 413 and answer.json()["detail"]["error"] == "TooLarge"


def test_a_streamed_body_growing_over_the_cap_is_413(http):
    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
        yield b'{"query": "'
        for _ in range(10):
            yield b"x" * 1000

    assert http.post("/v1/search", content=chunks(),
                     headers={"Content-Type": "application/json"}).status_code == 413


@pytest.mark.parametrize("length", ["-5", "abc", "1e3", "9" * 40])
def test_a_nonsense_content_length_is_400(http, length):
    answer = http.post("/v1/search", content=b"{}", headers={"Content-Length": length})
    assert answer.status_code == 400


def test_a_body_under_the_cap_reaches_the_handler(http):
    answer = http.post("/v1/search", json={"query": "", "repo": "shop"})
    assert answer.status_code == 400 and answer.json()["detail"]["error"] == "BadInput"


def test_a_huge_declared_body_is_refused_before_it_is_sent(base_url):
    head = (b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH
            + b"Content-Type: application/json\r\nContent-Length: 300000000\r\n")
    status, seconds = raw_exchange(base_url, head)
    assert status == 413 and seconds < 1.0


def test_a_body_that_never_finishes_is_408_after_the_deadline(base_url):
    head = (b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n")
    status, seconds = raw_exchange(base_url, head, body=b'{"query": ')
    assert status == 408 and 0.9 <= seconds < 5


def test_an_unauthenticated_request_is_refused_before_its_body(base_url):
    head = (b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n")
    status, seconds = raw_exchange(base_url, head)
    assert status == 401 and seconds < 0.9


def test_an_unsigned_webhook_is_refused_before_its_body(base_url):
    head = (b"POST /webhooks/shop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: push\r\n"
            b"Content-Type: application/json\r\nContent-Length: 20000000\r\n")
    status, seconds = raw_exchange(base_url, head)
    assert status == 401 and seconds < 0.9


def test_a_signed_webhook_whose_body_never_finishes_is_408(base_url):
    head = (b"POST /webhooks/shop HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: push\r\n"
            b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\nContent-Length: 100\r\n")
    status, seconds = raw_exchange(base_url, head, body=b"{")
    assert status == 408 and 0.9 <= seconds < 5

"""The HTTP service: health, metrics, the token-protected on-demand and debug endpoints
(authentication itself: ``test_api_auth``)."""

from __future__ import annotations

import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient

from freshmark.adapters.queue import jobs
from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app

TOKEN = "t0ken-for-tests"
CONFIG = Config(repos=(RepoConfig("shop", "file:///nowhere/shop.git", ("main",)),),
                api_token_env="FM_TEST_TOKEN")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def send() -> Recorder:
    return Recorder()


@pytest.fixture
def http(redis_client: redis.Redis, send: Recorder) -> TestClient:
    app = create_app(config=CONFIG, client=redis_client, send=send, env={"FM_TEST_TOKEN": TOKEN})
    return TestClient(app)


def test_healthz_is_ok_while_redis_answers(http: TestClient) -> None:
    answer = http.get("/healthz")
    assert answer.status_code == 200 and answer.json()["status"] == "ok"


def test_healthz_is_503_without_redis(send: Recorder) -> None:
    dead = jobs.connect("redis://127.0.0.1:1/0")
    http = TestClient(create_app(config=CONFIG, client=dead, send=send, env={}))
    assert http.get("/healthz").status_code == 503


def test_metrics_expose_queue_lengths_and_job_counters(http: TestClient,
                                                       redis_client: redis.Redis) -> None:
    redis_client.rpush("ondemand", "m1")
    text = http.get("/metrics").text
    assert 'freshmark_queue_length{queue="ondemand"} 1.0' in text
    assert "freshmark_jobs_total" in text


def test_on_demand_branch_with_the_token_is_queued(http: TestClient, send: Recorder) -> None:
    answer = http.post("/branches/shop", json={"branch": "feature/x"}, headers=AUTH)
    assert answer.status_code == 202 and answer.json()["queue"] == "ondemand"
    assert send.keys() == ["index:shop:feature/x:*"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"},
                                     {"Authorization": TOKEN}, {"Authorization": "Basic x"}])
def test_on_demand_without_the_right_token_is_401(http: TestClient, send: Recorder,
                                                  headers: dict[str, str]) -> None:
    answer = http.post("/branches/shop", json={"branch": "x"}, headers=headers)
    assert answer.status_code == 401 and send.sent == []


def test_on_demand_is_refused_when_no_token_is_configured(redis_client: redis.Redis,
                                                          send: Recorder) -> None:
    http = TestClient(create_app(config=CONFIG, client=redis_client, send=send, env={}))
    assert http.post("/branches/shop", json={"branch": "x"}, headers=AUTH).status_code == 403


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"branch": 5}', b'{"branch": "../x"}',
                                  b'{"branch": "x", "base": "a..b"}'])
def test_on_demand_with_a_bad_body_is_400(http: TestClient, send: Recorder, body: bytes) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    assert http.post("/branches/shop", content=body, headers=headers).status_code == 400
    assert send.sent == []


def test_on_demand_for_an_unknown_repo_is_404(http: TestClient) -> None:
    assert http.post("/branches/nope", json={"branch": "x"}, headers=AUTH).status_code == 404


def test_debug_queue_shows_pending_jobs_to_token_holders(http: TestClient) -> None:
    http.post("/branches/shop", json={"branch": "feature/x"}, headers=AUTH)
    assert http.get("/debug/queue").status_code == 401
    shown = http.get("/debug/queue", headers=AUTH).json()
    assert [job["key"] for job in shown["pending"]] == ["index:shop:feature/x:*"]


def test_search_api_is_served_under_v1(http: TestClient) -> None:
    assert "/v1/search" in http.get("/openapi.json", headers=AUTH).json()["paths"]


def test_mcp_endpoint_answers_initialize(redis_client: redis.Redis, send: Recorder) -> None:
    app = create_app(config=CONFIG, client=redis_client, send=send, env={},
                     bind_host="127.0.0.1")  # no token, loopback only: open, as for local use
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    # runs the lifespan, hence the MCP session manager; the Host must be a loopback name
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:
        answer = client.post("/mcp/", json=hello,
                             headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 200 and '"serverInfo"' in answer.text

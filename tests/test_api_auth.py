"""Bearer tokens on every route that returns code or takes work; MCP's DNS rebinding guard."""

from __future__ import annotations

import logging

import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient

from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app
from freshmark.faces.http.auth import Need, is_loopback, need_of

FULL, READ = "full-t0ken-for-tests", "read-t0ken-for-tests"
CONFIG = Config(repos=(RepoConfig("shop", "file:///nowhere/shop.git", ("main",), "github",
                                  "SHOP_SECRET"),), api_token_env="FM_TEST_TOKEN")
TOKENS = {"FM_TEST_TOKEN": FULL, "FRESHMARK_API_READ_TOKEN": READ, "SHOP_SECRET": "s"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
PROTECTED = [
    ("POST", "/v1/search"), ("POST", "/v1/verify"), ("POST", "/v1/context"),
    ("POST", "/mcp/"), ("POST", "/branches/shop"), ("GET", "/debug/queue"),
    ("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/no/such/route"),
]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def app_client(redis_client: redis.Redis, env: dict[str, str], bind_host: str | None = None,
               config: Config = CONFIG) -> TestClient:
    app = create_app(config=config, client=redis_client, send=Recorder(), env=env,
                     bind_host=bind_host)
    return TestClient(app, base_url="http://127.0.0.1:8080")


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_protected_routes_without_a_token_are_401(redis_client, method, path):
    answer = app_client(redis_client, TOKENS).request(method, path, json={})
    assert answer.status_code == 401, answer.text
    assert answer.json()["detail"]["error"] == "Unauthorized"
    assert answer.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("header", ["Bearer wrong", FULL, f"Basic {FULL}", f"Bearer {FULL}x",
                                    "Bearer"])
def test_a_wrong_or_malformed_authorization_header_is_401(redis_client, header):
    http = app_client(redis_client, TOKENS)
    assert http.get("/debug/queue", headers={"Authorization": header}).status_code == 401


def test_the_read_token_reads_but_cannot_ask_for_work(redis_client):
    http = app_client(redis_client, TOKENS)
    assert http.get("/debug/queue", headers=bearer(READ)).status_code == 200
    work = http.post("/branches/shop", json={"branch": "x"}, headers=bearer(READ))
    assert work.status_code == 403 and work.json()["detail"]["error"] == "Forbidden"


def test_the_full_token_asks_for_work(redis_client):
    http = app_client(redis_client, TOKENS)
    assert http.post("/branches/shop", json={"branch": "x"},
                     headers=bearer(FULL)).status_code == 202


@pytest.mark.parametrize("bind_host", [None, "0.0.0.0", "::", "10.0.0.5", "example.com"])
def test_no_token_on_a_reachable_bind_fails_closed(redis_client, bind_host):
    http = app_client(redis_client, {}, bind_host=bind_host)
    answer = http.post("/v1/search", json={"query": "x", "repo": "shop"})
    assert answer.status_code == 403 and "FM_TEST_TOKEN" in answer.json()["detail"]["message"]


def test_a_server_that_fails_closed_says_so_at_start(redis_client, caplog):
    with caplog.at_level(logging.WARNING, logger="freshmark.server"):
        app_client(redis_client, {}, bind_host="0.0.0.0")
    assert "no API token set ($FM_TEST_TOKEN)" in caplog.text


@pytest.mark.parametrize("bind_host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_no_token_on_a_loopback_bind_stays_open(redis_client, bind_host):
    http = app_client(redis_client, {}, bind_host=bind_host)
    assert http.get("/debug/queue").status_code == 200


def test_a_token_set_is_required_even_on_loopback(redis_client):
    http = app_client(redis_client, TOKENS, bind_host="127.0.0.1")
    assert http.get("/debug/queue").status_code == 401


def test_healthz_and_metrics_are_public_by_default(redis_client):
    http = app_client(redis_client, TOKENS)
    assert http.get("/healthz").status_code == 200
    assert http.get("/metrics").status_code == 200


def test_metrics_need_a_token_when_configured(redis_client):
    config = Config(repos=CONFIG.repos, api_token_env="FM_TEST_TOKEN", metrics_require_token=True)
    http = app_client(redis_client, TOKENS, config=config)
    assert http.get("/metrics").status_code == 401
    assert http.get("/metrics", headers=bearer(READ)).status_code == 200


def test_webhooks_are_left_to_their_signature_check(redis_client):
    answer = app_client(redis_client, TOKENS).post("/webhooks/shop", content=b"{}",
                                                   headers={"X-Hub-Signature-256": "sha256=0"})
    assert answer.status_code == 401 and answer.json()["result"] == "unauthorized"


def test_tokens_never_reach_the_logs(redis_client, caplog):
    http = app_client(redis_client, TOKENS)
    with caplog.at_level(logging.DEBUG):
        http.get("/debug/queue", headers=bearer(FULL))
        http.get("/debug/queue", headers=bearer(READ + "-guess"))
    assert FULL not in caplog.text and READ not in caplog.text


def test_mcp_answers_a_token_holder_on_a_loopback_host(redis_client):
    with app_client(redis_client, TOKENS) as http:  # runs the lifespan: MCP's session manager
        answer = http.post("/mcp/", json=INITIALIZE, headers={**MCP_HEADERS, **bearer(READ)})
    assert answer.status_code == 200 and '"serverInfo"' in answer.text


@pytest.mark.parametrize(("headers", "status"), [
    ({"Host": "evil.example"}, 421),
    ({"Origin": "http://evil.example"}, 403),
])
def test_mcp_refuses_foreign_hosts_and_origins_even_with_a_token(redis_client, headers, status):
    with app_client(redis_client, TOKENS) as http:
        answer = http.post("/mcp/", json=INITIALIZE,
                           headers={**MCP_HEADERS, **bearer(FULL), **headers})
    assert answer.status_code == status


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("", False), (None, False), ("192.168.1.2", False),
])
def test_only_loopback_addresses_count_as_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_what_each_route_needs():
    assert need_of("GET", "/healthz", True) is Need.PUBLIC
    assert need_of("POST", "/webhooks/shop", True) is Need.PUBLIC
    assert need_of("GET", "/metrics", False) is Need.READ
    assert need_of("POST", "/branches/shop", True) is Need.WRITE
    assert need_of("POST", "/mcp/", True) is Need.READ

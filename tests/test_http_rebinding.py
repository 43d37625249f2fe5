"""A loopback server that asks for no token answers local programs only: a web page cannot
reach it through a hostile name (DNS rebinding, ``Host``) or from its own site (``Origin``),
and cannot send it work with a body that needs no CORS preflight (415). Each test runs a real
uvicorn server on loopback (``live_server``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from cluster_support import Recorder
from live_server import live_server
from search_fixtures import build_shop

from freshmark.adapters.queue import jobs
from freshmark.core.config import Config, RepoConfig
from freshmark.faces.http.app import create_app

CONFIG = Config(repos=(RepoConfig("demo", "file:///nowhere/demo.git"),))
ATTACKER = "attacker.example:7881"
SEARCH = {"query": "cancel_order", "repo": "shop", "k": 1}


@pytest.fixture
def sent() -> Recorder:
    return Recorder()


@pytest.fixture
def open_server(fm_home: Path, redis_client: redis.Redis, sent: Recorder) -> Iterator[str]:
    """No token set, bound to loopback: the mode that stays open for local programs."""
    app = create_app(config=CONFIG, client=redis_client, send=sent, env={},
                     bind_host="127.0.0.1")
    with live_server(app) as base_url:
        yield base_url


def test_a_search_through_a_foreign_host_name_is_421_without_code(open_server, make_repo):
    build_shop(make_repo)
    answer = httpx.post(f"{open_server}/v1/search", json=SEARCH, headers={"Host": ATTACKER})
    assert answer.status_code == 421
    assert answer.json()["detail"]["error"] == "Misdirected" and "results" not in answer.text


def test_the_same_search_through_the_loopback_name_is_answered(open_server, make_repo):
    build_shop(make_repo)
    answer = httpx.post(f"{open_server}/v1/search", json=SEARCH)
    assert answer.status_code == 200 and answer.json()["results"]


@pytest.mark.parametrize("path", ["/debug/queue", "/openapi.json", "/docs", "/metrics",
                                  "/healthz"])
def test_every_read_route_refuses_a_foreign_host(open_server, path):
    assert httpx.get(f"{open_server}{path}", headers={"Host": ATTACKER}).status_code == 421


def test_a_host_header_that_only_starts_like_loopback_is_refused(open_server):
    answer = httpx.get(f"{open_server}/openapi.json", headers={"Host": "127.0.0.1:80.evil"})
    assert answer.status_code == 421


def test_a_request_from_another_sites_page_is_403(open_server):
    answer = httpx.get(f"{open_server}/debug/queue",
                       headers={"Origin": f"http://{ATTACKER}"})
    assert answer.status_code == 403 and answer.json()["detail"]["error"] == "Forbidden"


def test_a_page_served_from_loopback_may_call(open_server):
    port = open_server.rsplit(":", 1)[1]
    answer = httpx.get(f"{open_server}/openapi.json",
                       headers={"Origin": f"http://localhost:{port}"})
    assert answer.status_code == 200


def test_a_cross_site_text_plain_post_for_work_is_refused_and_queues_nothing(
        open_server, sent, redis_client):
    answer = httpx.post(f"{open_server}/branches/demo", content=b'{"branch": "main"}',
                        headers={"Content-Type": "text/plain", "Host": ATTACKER,
                                 "Origin": f"http://{ATTACKER}"})
    assert answer.status_code == 421
    assert sent.sent == [] and jobs.pending_jobs(redis_client) == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
def test_a_body_not_declared_as_json_is_415_even_from_loopback(open_server, sent,
                                                                content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    answer = httpx.post(f"{open_server}/branches/demo", content=b'{"branch": "main"}',
                        headers=headers)
    assert answer.status_code == 415
    assert answer.json()["detail"]["error"] == "UnsupportedMediaType" and sent.sent == []


def test_a_search_body_declared_as_text_is_415(open_server):
    answer = httpx.post(f"{open_server}/v1/search", content=b'{"query": "q", "repo": "x"}',
                        headers={"Content-Type": "text/plain"})
    assert answer.status_code == 415


def test_a_name_in_freshmark_allowed_hosts_is_answered(fm_home, redis_client):
    app = create_app(config=CONFIG, client=redis_client, send=Recorder(),
                     env={"FRESHMARK_ALLOWED_HOSTS": "devbox.internal:*"}, bind_host="127.0.0.1")
    with live_server(app) as base_url:
        allowed = httpx.get(f"{base_url}/openapi.json", headers={"Host": "devbox.internal:8080"})
        other = httpx.get(f"{base_url}/openapi.json", headers={"Host": ATTACKER})
    assert (allowed.status_code, other.status_code) == (200, 421)


def test_with_a_token_set_the_host_is_not_checked(fm_home, redis_client):
    """A page cannot send the bearer token, so the server answers the names its proxy uses."""
    app = create_app(config=CONFIG, client=redis_client, send=Recorder(),
                     env={"FRESHMARK_API_TOKEN": "t0ken-of-tests"}, bind_host="127.0.0.1")
    with live_server(app) as base_url:
        answer = httpx.get(f"{base_url}/openapi.json",
                           headers={"Host": "freshmark.svc:8080",
                                    "Authorization": "Bearer t0ken-of-tests"})
    assert answer.status_code == 200

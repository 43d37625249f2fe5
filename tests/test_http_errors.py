"""Every refusal of ``freshmark serve`` has one shape, ``{"detail": {"error", "message"}}``, says
what would make the request work, and holds no secret and no host path; text that is not
Unicode is a 4xx. Each test runs a real uvicorn server on loopback (``live_server``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import redis
from click.testing import CliRunner
from cluster_support import Recorder
from live_server import live_server
from mcp import Client
from search_fixtures import build_shop

from freshmark.adapters import keys
from freshmark.core import jobspec
from freshmark.core.config import Config, RepoConfig
from freshmark.faces.cli.main import cli
from freshmark.faces.http.app import create_app
from freshmark.faces.mcp.server import build_server

CONFIG = Config(repos=(RepoConfig("demo", "file:///nowhere/demo.git"),))
CHROMA_PASSWORD = "chr0ma-pa55w0rd"
# Port 1 refuses at once: the store is down, and its URL carries credentials.
CHROMA_URL = f"http://freshmark:{CHROMA_PASSWORD}@127.0.0.1:1"
LONE_SURROGATE = b'"\\ud800"'


@pytest.fixture
def server(fm_home: Path, redis_client: redis.Redis, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    config_file = tmp_path / "freshmark.toml"  # what the search routes read per request
    config_file.write_text('[[repos]]\nid = "demo"\nurl = "file:///nowhere/demo.git"\n')
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config_file))
    app = create_app(config=CONFIG, client=redis_client, send=Recorder(), env={},
                     bind_host="127.0.0.1")
    with live_server(app) as base_url:
        yield base_url


def _post(base_url: str, path: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{base_url}{path}", content=body,
                      headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(("path", "template"), [
    ("/v1/search", b'{"query": %s, "repo": "shop"}'),
    ("/v1/context", b'{"query": %s, "repo": "shop"}'),
    ("/v1/verify", b'{"content": %s, "repo": "shop"}'),
    ("/v1/search", b'{"query": "q", "repo": %s}'),
    ("/branches/demo", b'{"branch": %s}'),
])
def test_a_lone_surrogate_escape_is_400_not_a_500(server, make_repo, path, template):
    build_shop(make_repo)  # the query reaches the search stack, where it used to fail
    answer = _post(server, path, template % LONE_SURROGATE)
    assert answer.status_code == 400
    assert answer.json()["detail"]["error"] == "BadInput" and "surrogate" in answer.text


def test_a_surrogate_pair_escape_is_ordinary_text(server, make_repo):
    build_shop(make_repo)
    answer = _post(server, "/v1/search", b'{"query": "cancel \\ud83d\\ude00", "repo": "shop"}')
    assert answer.status_code == 200


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/search", b'{"query": "q", "repo": "shop", "top_k": 3}'),
    ("/v1/search/files", b'{"query": "q", "repo": "shop", "top_k": 3}'),
    ("/v1/context", b'{"query": "q", "repo": "shop", "budget_tokens": 900}'),
    ("/v1/verify", b'{"content": "a.py", "repo": "shop", "worktee": true}'),
])
def test_a_misspelt_field_is_named_in_a_422_not_ignored(server, path, body):
    answer = _post(server, path, body)
    assert answer.status_code == 422 and answer.json()["detail"]["error"] == "BadInput"
    name = json.loads(body).keys() - {"query", "repo", "content"}
    assert name.pop() in answer.json()["detail"]["message"]


def test_a_misspelt_field_of_a_branch_request_is_named_in_a_400(server):
    answer = _post(server, "/branches/demo", b'{"branch": "stable", "bsae": "main"}')
    assert answer.status_code == 400 and "'bsae'" in answer.json()["detail"]["message"]


def test_branch_route_errors_have_the_one_error_shape(server):
    answer = _post(server, "/branches/demo", b"[]")
    assert answer.status_code == 400
    assert set(answer.json()) == {"detail"} and set(answer.json()["detail"]) == {"error",
                                                                                  "message"}


def test_a_branch_body_over_64_kib_is_read_up_to_the_1_mib_cap(server):
    padded = json.dumps({"branch": "../x", "padding": "x" * 100_000}).encode()
    answer = _post(server, "/branches/demo", padded)
    assert answer.status_code == 400 and "branch" in answer.json()["detail"]["message"]


def test_a_branch_body_over_1_mib_is_413(server):
    answer = _post(server, "/branches/demo", b'{"branch": "' + b"x" * (1024 * 1024) + b'"}')
    assert answer.status_code == 413 and answer.json()["detail"]["error"] == "TooLarge"


def test_an_unknown_repository_for_work_says_a_repos_entry_makes_it_known(server):
    answer = _post(server, "/branches/nope", b'{"branch": "main"}')
    assert answer.status_code == 404
    assert answer.json()["detail"]["error"] == "UnknownRepository"
    assert "[[repos]]" in answer.json()["detail"]["message"]


def test_an_unknown_repository_to_search_says_a_repos_entry_makes_it_known(server):
    answer = _post(server, "/v1/search", b'{"query": "q", "repo": "nope"}')
    assert answer.status_code == 404 and "[[repos]]" in answer.json()["detail"]["message"]


def test_a_misspelt_repository_name_gets_the_indexed_names_like_it(server, make_repo):
    build_shop(make_repo)
    answer = _post(server, "/v1/search", b'{"query": "q", "repo": "shpo"}')
    assert answer.status_code == 404
    assert "indexed repositories like it: shop" in answer.json()["detail"]["message"]


def test_a_path_gets_no_names_whatever_is_indexed(server, make_repo):
    build_shop(make_repo)
    answer = _post(server, "/v1/search", b'{"query": "q", "repo": "/srv/shop"}')
    assert answer.status_code == 404 and "like it" not in answer.json()["detail"]["message"]


def test_a_configured_repository_never_indexed_is_not_called_gone(server):
    answer = _post(server, "/v1/search", b'{"query": "q", "repo": "demo"}')
    assert answer.status_code == 404
    detail = answer.json()["detail"]
    assert detail["error"] == "NotIndexed" and "not indexed yet" in detail["message"]
    assert "gone" not in detail["message"]


def test_debug_queue_errors_name_no_host_path(server, redis_client):
    mirror = "/srv/freshmark-home/mirrors/fan.git"
    error = f"cannot fetch https://github.com/o/fan.git into {mirror}: timed out"
    spec = jobspec.JobSpec(kind=jobspec.KIND_INDEX, repo="fan", branch="main", layer="hot",
                           queue="hot")
    redis_client.lpush(keys.FAILED, json.dumps({"job": spec.key, "error": error, "at": 1}))
    redis_client.hset(keys.PARKED, spec.key, json.dumps(["last_error", error]))
    shown = httpx.get(f"{server}/debug/queue")
    assert shown.status_code == 200
    assert "/srv/freshmark-home" not in shown.text and "fan.git" in shown.text


def test_chroma_url_credentials_are_not_in_the_search_503(server, monkeypatch):
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", CHROMA_URL)
    answer = _post(server, "/v1/search", b'{"query": "q", "repo": "demo"}')
    assert answer.status_code == 503
    assert CHROMA_PASSWORD not in answer.text and "http://***@127.0.0.1:1" in answer.text


def test_chroma_url_credentials_are_not_in_an_mcp_tool_error(fm_home, monkeypatch):
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", CHROMA_URL)

    async def run() -> tuple[bool, str]:
        async with Client(build_server()) as client:
            result = await client.call_tool("search", {"query": "q", "repo": "demo"})
            return result.is_error, "".join(getattr(b, "text", "") for b in result.content)

    is_error, text = anyio.run(run)
    assert is_error and "StoreUnavailable" in text and CHROMA_PASSWORD not in text


def test_chroma_url_credentials_are_not_in_a_cli_error(fm_home, make_repo, monkeypatch):
    repo = make_repo("shop")
    repo.write("a.py", "x = 1\n")
    repo.commit("initial")
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", CHROMA_URL)
    result = CliRunner().invoke(cli, ["search", "q", "--repo", str(repo.path)])
    assert result.exit_code != 0 and "***@127.0.0.1:1" in result.output
    assert CHROMA_PASSWORD not in result.output

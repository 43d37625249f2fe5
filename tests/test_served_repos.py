"""Over HTTP and MCP, ``repo`` names what the server knows, never a host path; bad input of
any kind is a one-line 4xx. Requests go through the whole app (auth, limits, handlers)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import pytest
import redis
from cluster_support import Recorder
from fastapi.testclient import TestClient
from mcp import Client
from search_fixtures import PATHS, build_shop, file_sha256

from freshmark.core.config import Config
from freshmark.core.errors import NotIndexed
from freshmark.core.settings import Settings
from freshmark.faces.api.served import MAX_BUDGET_TOKENS, MAX_VERIFY_LINES
from freshmark.faces.http.app import create_app
from freshmark.faces.mcp.server import build_server
from freshmark.services.repos import resolve_repo


@pytest.fixture
def http(fm_home: Path, redis_client: redis.Redis) -> TestClient:
    app = create_app(config=Config(), client=redis_client, send=Recorder(), env={},
                     bind_host="127.0.0.1")
    return TestClient(app, base_url="http://127.0.0.1:8080")


def _verify(http: TestClient, repo: str, worktree: bool = False, content: str = "a.py\tabcdef12"):
    return http.post("/v1/verify", json={"content": content, "repo": repo, "worktree": worktree})


def _message_without(answer, name: str) -> str:
    return answer.json()["detail"]["message"].replace(name, "<repo>")


def test_an_unindexed_git_repository_path_is_not_served(http, make_repo):
    other = make_repo("other")
    other.write("a.py", "x = 1\n")
    other.commit("initial")
    answer = _verify(http, str(other.path), worktree=True)
    assert answer.status_code == 404 and answer.json()["detail"]["error"] == "NotIndexed"


def test_no_answer_tells_a_git_repository_from_a_file_or_a_missing_path(http, make_repo,
                                                                         tmp_path):
    other = make_repo("other")
    other.write("a.py", "x = 1\n")
    other.commit("initial")
    names = [str(other.path), "/etc", "/no/such/path", str(tmp_path), "/etc/passwd"]
    answers = [_verify(http, name, worktree=True) for name in names]
    assert {a.status_code for a in answers} == {404}
    assert len({_message_without(a, n) for a, n in zip(answers, names, strict=True)}) == 1


def test_an_indexed_repository_is_served_by_name_and_by_its_path(http, make_repo):
    shop = build_shop(make_repo)
    for name in ("shop", str(shop.path)):
        answer = http.post("/v1/search", json={"query": "cancel_order", "repo": name, "k": 1})
        assert answer.status_code == 200, answer.text


def test_errors_about_a_known_repository_do_not_say_where_it_lives(http, make_repo):
    shop = build_shop(make_repo)
    answer = http.post("/v1/search", json={"query": "cancel", "repo": "shop", "branch": "nope"})
    assert answer.status_code == 404 and answer.json()["detail"]["error"] == "BranchNotFound"
    assert str(shop.path) not in answer.text and "shop" in answer.json()["detail"]["message"]


def test_file_search_refuses_host_paths_too(http):
    answer = http.post("/v1/search/files", json={"query": "cancel", "repo": "/etc"})
    assert answer.status_code == 404 and answer.json()["detail"]["error"] == "NotIndexed"


def test_worktree_mode_reads_only_tracked_files(http, make_repo):
    shop = build_shop(make_repo)
    shop.repo.write("secret.env", "TOKEN=hunter2\n")  # untracked, next to tracked code
    secret = hashlib.sha256(b"TOKEN=hunter2\n").hexdigest()[:12]
    tracked = file_sha256(shop, shop.head, PATHS["service"])[:12]
    content = f"secret.env\t{secret}\n{PATHS['service']}\t{tracked}"
    answer = _verify(http, "shop", worktree=True, content=content)
    assert answer.status_code == 200, answer.text
    secret_line, tracked_line = answer.json()["lines"]
    # The untracked file is as good as absent: no hash comparison, no "current".
    assert secret_line["verdict"] == "unverifiable" and "hash" not in secret_line["reason"]
    assert tracked_line["verdict"] == "current"


def test_worktree_mode_is_refused_for_a_configured_remotes_mirror(http, fm_home, tmp_path,
                                                                  monkeypatch):
    config = tmp_path / "fm.toml"
    config.write_text('[[repos]]\nid = "remote"\nurl = "https://git.example/r.git"\n')
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    (Settings.from_env().mirrors_dir / "remote.git").mkdir(parents=True)
    answer = _verify(http, "remote", worktree=True)
    assert answer.status_code == 400 and "working copy" in answer.json()["detail"]["message"]


@pytest.mark.parametrize("repo", ["a" * 5000, "shop\x00", "a\nb", "", "   "])
def test_a_repo_no_repository_can_have_is_400_with_one_line(http, repo):
    answer = http.post("/v1/search", json={"query": "cancel", "repo": repo})
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert detail["error"] == "BadInput" and "\n" not in detail["message"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/json", "text/plain; "
                                          "charset=latin-1", "application/octet-stream"])
def test_a_body_that_is_not_utf8_is_422_with_one_line(http, content_type):
    answer = http.post("/v1/search", content=b"\xff\xfe\x00\x80q",
                       headers={"Content-Type": content_type})
    assert 400 <= answer.status_code < 500, answer.text
    assert "\n" not in answer.text


def test_a_schema_error_is_one_line_without_the_input(http):
    answer = http.post("/v1/search", json={"query": "x", "repo": "shop", "k": "é" * 50})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert detail["error"] == "BadInput" and detail["message"].startswith("body.k:")
    assert "é" not in detail["message"]


def test_verify_takes_at_most_the_line_cap_over_the_network(http):
    answer = _verify(http, "shop", content="a.py\tabcdef12\n" * (MAX_VERIFY_LINES + 1))
    assert answer.status_code == 400 and "lines" in answer.json()["detail"]["message"]


def test_context_budget_over_the_network_cap_is_400(http):
    answer = http.post("/v1/context", json={"query": "cancel", "repo": "shop",
                                             "budget": MAX_BUDGET_TOKENS + 1})
    assert answer.status_code == 400 and "budget" in answer.json()["detail"]["message"]


def test_the_mcp_tools_refuse_host_paths_too(fm_home):
    async def run() -> tuple[bool, str]:
        async with Client(build_server()) as client:
            result = await client.call_tool("verify", {"content": "a.py\tabcdef12",
                                                       "repo": "/etc", "worktree": True})
            return result.is_error, "".join(getattr(b, "text", "") for b in result.content)

    is_error, text = anyio.run(run)
    assert is_error and "NotIndexed: no repository" in text and "not a git" not in text


def test_the_cli_still_takes_a_path_and_survives_names_the_os_cannot_take(fm_home, make_repo):
    other = make_repo("other")
    other.write("a.py", "x = 1\n")
    other.commit("initial")
    settings = Settings.from_env()
    assert resolve_repo(str(other.path), settings, Config()).path == other.path.resolve()
    with pytest.raises(NotIndexed):
        resolve_repo("a\x00b" + "c" * 5000, settings, Config())


def test_k_true_is_refused_not_taken_as_one(http):
    answer = http.post("/v1/search", json={"query": "cancel", "repo": "shop", "k": True})
    assert answer.status_code == 422 and answer.json()["detail"]["message"].startswith("body.k")

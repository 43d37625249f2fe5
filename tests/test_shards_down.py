"""One of three real Chroma servers stopped: the repositories it holds fail with a retryable
error naming it (without credentials), and those on the other servers keep working."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ChromaServer
from repo_builder import RepoBuilder

from freshmark.core.errors import StoreUnavailable
from freshmark.core.placement import home_index, parse_servers
from freshmark.faces.cli.main import cli

REPOS = 4
MAX_REPOS = 24  # 24 repositories all placed on one of three servers: p ~ 1e-11
PASSWORD = "s3cret-pa55"


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _urls(servers: list[ChromaServer]) -> list[str]:
    # Credentials in each URL: the servers do not ask for them, and no message may show them.
    return [f"http://fm:{PASSWORD}@127.0.0.1:{s.port}" for s in servers]


@pytest.fixture
def one_server_down(fm_home: Path, make_repo, chroma_shards: list[ChromaServer],
                    monkeypatch: pytest.MonkeyPatch
                    ) -> Iterator[tuple[list[RepoBuilder], list[RepoBuilder], ChromaServer]]:
    """(repositories on the stopped server, repositories on the others, the stopped server)."""
    servers = chroma_shards[:3]
    monkeypatch.setenv("FRESHMARK_CHROMA_URLS", ",".join(_urls(servers)))
    monkeypatch.delenv("FRESHMARK_REDIS_URL", raising=False)
    identities = [s.identity for s in parse_servers(_urls(servers), "FRESHMARK_CHROMA_URLS")]
    repos: list[RepoBuilder] = []
    homes: list[int] = []
    # Placement hashes each repository's path (new in every run): repositories are added until
    # they span at least two servers, so one can be stopped with others still answering.
    for number in range(MAX_REPOS):
        if len(repos) >= REPOS and len(set(homes)) > 1:
            break
        repo = make_repo(f"svc{number}")
        repo.write("src/app.py", f"def handler_{number}():\n    return {number}\n").commit("one")
        done = run("index", str(repo.path))
        assert done.exit_code == 0, done.output
        repos.append(repo)
        homes.append(home_index(f"path:{repo.path.resolve()}", identities))
    down = max(set(homes), key=homes.count)
    on_it = [r for r, h in zip(repos, homes, strict=True) if h == down]
    others = [r for r, h in zip(repos, homes, strict=True) if h != down]
    assert on_it and others, "the repositories must span the stopped server and another"
    servers[down].stop()
    try:
        yield on_it, others, servers[down]
    finally:
        servers[down].start()


def _says_server_down(output: str, server: ChromaServer) -> bool:
    return f"127.0.0.1:{server.port}" in output and "unreachable" in output \
        and PASSWORD not in output


def test_search_on_another_server_still_answers(one_server_down) -> None:
    _, others, _ = one_server_down
    for repo in others:
        done = run("search", "handler", "--repo", str(repo.path), "--json")
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["results"]


def test_search_on_the_stopped_server_is_a_retryable_error_naming_it(one_server_down) -> None:
    on_it, _, server = one_server_down
    done = run("search", "handler", "--repo", str(on_it[0].path), "--json")
    assert done.exit_code == StoreUnavailable.exit_code
    assert _says_server_down(done.output, server), done.output


def test_status_on_another_server_still_answers(one_server_down) -> None:
    _, others, _ = one_server_down
    done = run("status", str(others[0].path), "--json")
    assert done.exit_code == 0, done.output


def test_status_on_the_stopped_server_is_a_retryable_error_naming_it(one_server_down) -> None:
    on_it, _, server = one_server_down
    done = run("status", str(on_it[0].path), "--json")
    assert done.exit_code == StoreUnavailable.exit_code
    assert _says_server_down(done.output, server), done.output


def test_audit_gives_the_other_servers_rows_and_names_the_stopped_one(one_server_down) -> None:
    on_it, others, server = one_server_down
    done = run("audit", "--json", "--no-publish")
    rows = json.loads(done.stdout)
    assert {row["repo"] for row in rows} == {r.path.name for r in others}
    assert _says_server_down(done.stderr, server), done.output

"""The store over three real Chroma servers: each repository, all its branches with it, on the
server rendezvous hashing gives it; index, search, audit and drop work on every server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ChromaServer
from repo_builder import RepoBuilder, git

from freshmark.adapters.store.chroma import Store
from freshmark.core.placement import home_index, parse_servers
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli

REPOS = 6
MAX_REPOS = 24


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def use_servers(monkeypatch: pytest.MonkeyPatch, servers: list[ChromaServer]) -> None:
    monkeypatch.setenv("FRESHMARK_CHROMA_URLS", ",".join(s.url for s in servers))
    monkeypatch.delenv("FRESHMARK_REDIS_URL", raising=False)


def build_repo(make_repo, number: int) -> RepoBuilder:
    """A repository with a distinct function, a release branch and a feature overlay."""
    repo = make_repo(f"svc{number}")
    repo.write("src/app.py", f"def handler_{number}():\n    return {number}\n").commit("one")
    repo.branch("release").branch("feature/x")
    for args in ([], ["--branch", "release"], ["--branch", "feature/x", "--base", "main"]):
        done = run("index", str(repo.path), *args)
        assert done.exit_code == 0, done.output
    return repo


@pytest.fixture
def fleet(fm_home: Path, make_repo, chroma_shards: list[ChromaServer],
          monkeypatch: pytest.MonkeyPatch) -> list[RepoBuilder]:
    servers = chroma_shards[:3]
    use_servers(monkeypatch, servers)
    identities = [s.identity for s in parse_servers([s.url for s in servers],
                                                    "FRESHMARK_CHROMA_URLS")]
    repos: list[RepoBuilder] = []
    homes: set[int] = set()
    # Placement hashes each repository's path and the servers' ports (new in every run):
    # repositories are added until they span at least two servers (six on one: 1 run in 243).
    for number in range(MAX_REPOS):
        if len(repos) >= REPOS and len(homes) > 1:
            break
        repos.append(build_repo(make_repo, number))
        homes.add(home_index(f"path:{repos[-1].path.resolve()}", identities))
    return repos


def collections_by_server(store: Store) -> dict[str, set[str]]:
    return {shard.identity: {n for n in shard.names() if n.startswith("fm-")}
            for shard in store.shards}


def test_every_branch_of_a_repository_is_on_its_home_server(fleet: list[RepoBuilder]) -> None:
    store = Store.open(Settings.from_env())
    identities = [shard.identity for shard in store.shards]
    held = collections_by_server(store)
    manifests = store.list_manifests()

    assert len(manifests) == 3 * REPOS
    for manifest in manifests:
        home = identities[home_index(manifest.repo_key, identities)]
        assert [i for i, names in held.items() if manifest.collection in names] == [home]


def test_repositories_are_spread_over_more_than_one_server(fleet: list[RepoBuilder]) -> None:
    held = collections_by_server(Store.open(Settings.from_env()))

    assert sum(1 for names in held.values() if names) >= 2


def test_search_finds_each_repository_on_its_server(fleet: list[RepoBuilder]) -> None:
    for number, repo in enumerate(fleet):
        done = run("search", f"handler_{number}", "--repo", str(repo.path), "--json",
                   "-b", "feature/x")

        assert done.exit_code == 0, done.output
        top = json.loads(done.stdout)["results"][0]
        assert top["path"] == "src/app.py" and f"handler_{number}" in top["text"]


def test_audit_lists_the_branches_of_every_server(fleet: list[RepoBuilder]) -> None:
    done = run("audit", "--json")

    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout)
    assert len(rows) == 3 * REPOS


def test_drop_removes_a_repository_from_its_server_only(fleet: list[RepoBuilder]) -> None:
    store = Store.open(Settings.from_env())
    before = {m.collection for m in store.list_manifests()}
    gone = {m.collection for m in store.list_manifests("svc0")}
    assert len(gone) == 3

    done = run("drop", str(fleet[0].path))

    assert done.exit_code == 0, done.output
    assert {m.collection for m in store.list_manifests()} == before - gone


def test_audit_retires_a_branch_deleted_from_its_repository_on_its_server(
        fleet: list[RepoBuilder]) -> None:
    git(fleet[1].path, "branch", "-D", "release")

    done = run("audit", str(fleet[1].path))

    assert done.exit_code == 0, done.output
    store = Store.open(Settings.from_env())
    assert sorted(m.branch for m in store.list_manifests("svc1")) == ["feature/x", "main"]
    assert sum(n.startswith("fm-svc1-release") for s in store.shards for n in s.names()) == 0

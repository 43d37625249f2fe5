"""Two checkouts with the same directory name never share a repository name."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_builder import RepoBuilder

from freshmark.adapters.store.chroma import Store
from freshmark.adapters.store.names import REGISTRY
from freshmark.adapters.store.shard import Shard
from freshmark.core.config import Config
from freshmark.core.errors import BadInput, NotIndexed
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from freshmark.services import repos
from freshmark.services.repos import resolve_repo, unique_name

A_KEY, B_KEY = "path:/src/a/fresh", "path:/src/b/fresh"


def test_a_free_name_is_the_directory_name() -> None:
    assert unique_name(B_KEY, Path("/src/b/fresh"), "fresh", {}) == "fresh"


def test_a_taken_name_is_qualified_by_the_parent_directory() -> None:
    assert unique_name(B_KEY, Path("/src/b/fresh"), "fresh", {"fresh": A_KEY}) == "b/fresh"


def test_a_repository_keeps_the_name_it_already_has() -> None:
    taken = {"fresh": A_KEY, "b/fresh": B_KEY}
    assert unique_name(B_KEY, Path("/src/b/fresh"), "fresh", taken) == "b/fresh"


def test_a_taken_qualified_name_gets_a_digest_of_the_key() -> None:
    taken = {"fresh": A_KEY, "b/fresh": "path:/other/b/fresh"}
    name = unique_name(B_KEY, Path("/src/b/fresh"), "fresh", taken)
    assert name.startswith("b/fresh-") and len(name) == len("b/fresh-") + 8


def _checkout(root: Path) -> RepoBuilder:
    repo = RepoBuilder.init(root / "fresh")
    repo.write("src/app.py", f"def where():\n    return {str(root.name)!r}\n").commit("init")
    return repo


@pytest.fixture
def two_freshes(tmp_path: Path) -> tuple[RepoBuilder, RepoBuilder]:
    return _checkout(tmp_path / "a"), _checkout(tmp_path / "b")


def _index(repo: RepoBuilder) -> None:
    done = CliRunner().invoke(cli, ["index", str(repo.path)])
    assert done.exit_code == 0, done.output


def test_second_checkout_of_the_same_name_is_indexed_under_a_qualified_name(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder]) -> None:
    for repo in two_freshes:
        _index(repo)
    names = {m.repo: m.repo_path for m in Store.open(Settings.from_env()).list_manifests()}
    assert names == {"fresh": str(two_freshes[0].path.resolve()),
                     "b/fresh": str(two_freshes[1].path.resolve())}


def test_audit_shows_one_distinct_row_per_checkout(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder]) -> None:
    for repo in two_freshes:
        _index(repo)
    done = CliRunner().invoke(cli, ["audit", "--no-publish"])
    repos = [line.split()[0] for line in done.stdout.splitlines()[1:]]
    assert done.exit_code == 0 and repos == ["b/fresh", "fresh"]


def test_a_name_shared_by_two_indexed_repositories_is_an_error_listing_both(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Indexes built before names were unique can still share one.
    monkeypatch.setattr(repos, "registered_name", lambda registry, key, path, wanted: wanted)
    for repo in two_freshes:
        _index(repo)
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env()
    with pytest.raises(BadInput, match="'fresh' is ambiguous: fresh at .*/a/fresh; fresh at "
                                       ".*/b/fresh; pass its path instead"):
        resolve_repo("fresh", settings, Config(), Store.open(settings))


def _names(settings: Settings) -> dict[str, str]:
    return {m.repo: m.repo_path for m in Store.open(settings).list_manifests()}


def test_a_first_index_reads_names_by_id_without_listing_the_store(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _index(two_freshes[0])  # the registry exists from here on
    listed: list[str] = []
    original = Shard.collections
    monkeypatch.setattr(Shard, "collections",
                        lambda shard: listed.append(shard.location) or original(shard))
    _index(two_freshes[1])
    assert listed == [] and _names(Settings.from_env())["b/fresh"] == str(
        two_freshes[1].path.resolve())


def test_a_store_indexed_before_the_registry_keeps_its_names_taken(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder]) -> None:
    _index(two_freshes[0])
    settings = Settings.from_env()
    Store.open(settings).shards[0].delete(REGISTRY)  # as a store written before it
    _index(two_freshes[1])
    assert _names(settings) == {"fresh": str(two_freshes[0].path.resolve()),
                                "b/fresh": str(two_freshes[1].path.resolve())}


def test_dropping_a_repository_frees_its_name(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder]) -> None:
    _index(two_freshes[0])
    dropped = CliRunner().invoke(cli, ["drop", str(two_freshes[0].path)])
    assert dropped.exit_code == 0, dropped.output
    _index(two_freshes[1])
    assert _names(Settings.from_env()) == {"fresh": str(two_freshes[1].path.resolve())}


def test_an_unknown_name_is_answered_with_the_indexed_repositories_like_it(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for repo in two_freshes:
        _index(repo)
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env()
    with pytest.raises(NotIndexed, match="never indexed; indexed repositories like it: "
                                         "b/fresh, fresh$"):
        resolve_repo("frsh", settings, Config(), Store.open(settings))


def test_a_name_like_no_indexed_repository_points_to_where_they_are_listed(
        fm_home: Path, two_freshes: tuple[RepoBuilder, RepoBuilder],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _index(two_freshes[0])
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["status", "inventory"])
    assert done.exit_code == 2
    assert "no repository 'inventory'" in done.output
    assert "`freshmark audit` lists the indexed repositories" in done.output


def _config_naming(repo_id: str) -> Config:
    from freshmark.core.config import RepoConfig

    return Config(repos=(RepoConfig(repo_id, f"file:///nowhere/{repo_id}.git"),))


def test_a_configured_id_is_not_hidden_by_a_directory_of_its_name_never_indexed(
        fm_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _checkout(tmp_path)  # ./fresh, a clone nobody indexed by its path
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env()
    handle = resolve_repo("fresh", settings, _config_naming("fresh"), Store.open(settings))
    assert (handle.key, handle.repo_id) == ("id:fresh", "fresh")


def test_a_directory_indexed_by_its_path_keeps_its_bare_name_beside_a_configured_id(
        fm_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _checkout(tmp_path)
    _index(repo)
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env()
    handle = resolve_repo("fresh", settings, _config_naming("fresh"), Store.open(settings))
    assert handle.repo_id is None and handle.path == repo.path.resolve()

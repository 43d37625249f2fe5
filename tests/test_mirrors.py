"""Bare mirrors of file:// remotes: clone, fetch, prune, forced pushes, dead remotes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cluster_support import make_remote
from repo_builder import RepoBuilder, git

from freshmark.adapters.git.mirrors import (
    RemoteUnavailable,
    read_heads,
    remove_mirror,
    sync_mirror,
)
from freshmark.core.config import RepoConfig
from freshmark.core.errors import RetryableError
from freshmark.core.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def remote(tmp_path: Path) -> tuple[RepoConfig, RepoBuilder]:
    path, work = make_remote(tmp_path)
    return RepoConfig("shop", f"file://{path}"), work


def test_first_sync_clones_every_branch(settings: Settings, remote) -> None:
    repo, work = remote
    work.branch("feature").push("origin", "feature")
    state = sync_mirror(settings, repo)
    assert state.cloned and state.heads == {"main": work.head(), "feature": work.head()}
    assert git(state.path, "rev-parse", "--is-bare-repository") == "true"


def test_fetch_brings_the_new_head(settings: Settings, remote) -> None:
    repo, work = remote
    sync_mirror(settings, repo)
    new = work.write("src/b.py", "B = 2\n").commit("b")
    work.push("origin", "main")
    state = sync_mirror(settings, repo)
    assert not state.cloned and state.heads["main"] == new
    assert state.moved_branches == ["main"]


def test_branch_deleted_on_the_remote_is_pruned(settings: Settings, remote) -> None:
    repo, work = remote
    work.branch("gone").push("origin", "gone")
    sync_mirror(settings, repo)
    work.push("origin", ":gone")
    state = sync_mirror(settings, repo)
    assert "gone" not in state.heads and state.deleted_branches == ["gone"]


def test_forced_push_moves_the_mirror_head_back(settings: Settings, remote) -> None:
    repo, work = remote
    first = work.head()
    work.write("src/c.py", "C = 3\n").commit("c")
    work.push("origin", "main")
    sync_mirror(settings, repo)
    work.reset_hard(first).push("origin", "main", force=True)
    assert sync_mirror(settings, repo).heads["main"] == first


def test_unreachable_remote_is_a_retryable_error(settings: Settings, tmp_path: Path) -> None:
    repo = RepoConfig("ghost", f"file://{tmp_path}/does-not-exist.git")
    with pytest.raises(RemoteUnavailable) as caught:
        sync_mirror(settings, repo)
    assert isinstance(caught.value, RetryableError)
    assert not (settings.mirrors_dir / "ghost.git").exists()  # no half mirror left behind


def test_remote_url_change_in_the_config_is_followed(settings: Settings, remote,
                                                     tmp_path: Path) -> None:
    repo, work = remote
    sync_mirror(settings, repo)
    moved, moved_work = make_remote(tmp_path / "moved")
    moved_head = moved_work.write("src/moved.py", "M = 1\n").commit("only in the new home")
    moved_work.push("origin", "main")
    state = sync_mirror(settings, RepoConfig("shop", f"file://{moved}"))
    assert state.heads["main"] == moved_head != work.head()


def test_concurrent_syncs_of_one_mirror_all_succeed(settings: Settings, remote) -> None:
    repo, work = remote
    errors: list[BaseException] = []

    def sync() -> None:
        try:
            sync_mirror(settings, repo)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=sync) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and read_heads(settings.mirrors_dir / "shop.git") == {"main": work.head()}


def test_remove_mirror_deletes_it(settings: Settings, remote) -> None:
    repo, _ = remote
    sync_mirror(settings, repo)
    assert remove_mirror(settings, "shop") and not (settings.mirrors_dir / "shop.git").exists()


def test_mirror_head_names_the_first_tracked_branch(settings: Settings, remote) -> None:
    repo, work = remote
    work.branch("develop").push("origin", "develop")
    tracked = RepoConfig("shop", repo.url, ("develop", "main"))
    state = sync_mirror(settings, tracked)
    assert git(state.path, "symbolic-ref", "HEAD") == "refs/heads/develop"

"""A mirror after a process was killed inside a clone or fetch: what it left behind (git lock
files, a staging directory) never stops the next sync. Kills are real ``SIGKILL``s of a forked
process, made at a chosen point: while the remote holds a pack half-sent."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_support import make_remote
from pausing_remote import PausingRemote
from repo_builder import RepoBuilder

from freshmark.adapters.git.mirrors import mirror_path, read_heads, sync_mirror
from freshmark.adapters.telemetry import counters
from freshmark.core.config import RepoConfig
from freshmark.core.settings import Settings

# What a kill -9 between libgit2's lock and its rename leaves in a mirror.
STALE_GIT_LOCKS = ("HEAD.lock", "packed-refs.lock", "refs/heads/main.lock", "config.lock")
PAUSE_WAIT_SECONDS = 60


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[PausingRemote, RepoBuilder]]:
    make_remote(tmp_path / "remotes", "shop")
    work = RepoBuilder(tmp_path / "remotes" / "shop-work")
    remote = PausingRemote(tmp_path / "remotes").start()
    yield remote, work
    remote.stop()


def _new_commit(work: RepoBuilder, files: int = 40) -> str:
    for i in range(files):  # incompressible: the pack is large enough to be held half-sent
        work.write(f"src/blob{i}.py", f"DATA = {os.urandom(3000).hex()!r}\n")
    sha = work.commit("a change")
    work.push("origin", "main")
    return sha


def _kill_while_the_pack_is_held(settings: Settings, repo: RepoConfig,
                                 remote: PausingRemote) -> None:
    child = multiprocessing.get_context("fork").Process(target=sync_mirror,
                                                        args=(settings, repo))
    child.start()
    assert remote.paused.wait(PAUSE_WAIT_SECONDS), "the remote never held a pack"
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    remote.release()


def test_stale_git_locks_of_a_killed_fetch_do_not_stop_the_next_fetch(
    settings: Settings, tmp_path: Path
) -> None:
    remote_path, work = make_remote(tmp_path / "remotes", "shop")
    repo = RepoConfig("shop", f"file://{remote_path}")
    path = sync_mirror(settings, repo).path
    for name in STALE_GIT_LOCKS:
        (path / name).write_text("0" * 40 + "\n")
    head = _new_commit(work, files=2)
    removed_before = counters.GIT_STALE_LOCKS_REMOVED_TOTAL._value.get()
    assert sync_mirror(settings, repo).heads["main"] == head
    assert not [name for name in STALE_GIT_LOCKS if (path / name).exists()]
    assert counters.GIT_STALE_LOCKS_REMOVED_TOTAL._value.get() - removed_before == 4


def test_fetch_killed_mid_pack_is_followed_by_one_that_lands(settings: Settings,
                                                              served) -> None:
    remote, work = served
    repo = RepoConfig("shop", f"{remote.url}/shop.git")
    sync_mirror(settings, repo)  # pack 1: the clone
    remote.pause_on_pack = 2
    head = _new_commit(work)
    _kill_while_the_pack_is_held(settings, repo, remote)
    assert read_heads(mirror_path(settings, "shop"))["main"] != head  # killed before the refs
    assert sync_mirror(settings, repo).heads["main"] == head


def test_clone_killed_mid_pack_leaves_no_staging_directory_after_the_next_sync(
    settings: Settings, served
) -> None:
    remote, work = served
    remote.pause_on_pack = 1
    head = _new_commit(work)
    repo = RepoConfig("shop", f"{remote.url}/shop.git")
    _kill_while_the_pack_is_held(settings, repo, remote)
    assert not mirror_path(settings, "shop").exists()
    assert sync_mirror(settings, repo).heads == {"main": head}
    assert sorted(p.name for p in settings.mirrors_dir.iterdir()) == [
        "shop.git", "shop.git.fetched", "shop.git.lock"]

"""A subdirectory of a work tree stands for its repository, as it does for git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_builder import RepoBuilder

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.errors import NotARepository

FRESHMARK = [str(Path(sys.executable).parent / "freshmark")]


def fm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FRESHMARK, *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=300)


@pytest.fixture
def shop(make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/orders.py", "def cancel_order(order):\n    order.cancelled = True\n")
    repo.write("README.md", "# shop\n")
    repo.commit("initial")
    return repo


def test_discover_finds_the_top_level_from_a_subdirectory(shop: RepoBuilder) -> None:
    found = GitRepo.discover(shop.path / "src")
    assert found.path == shop.path.resolve() and found.key() == GitRepo.open(shop.path).key()


def test_discover_outside_any_repository_is_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match="nor any parent"):
        GitRepo.discover(plain)


def test_index_from_a_subdirectory_builds_the_top_level_index(fm_home: Path,
                                                              shop: RepoBuilder) -> None:
    from_sub = fm("index", ".", "--json", cwd=shop.path / "src")
    assert from_sub.returncode == 0, from_sub.stderr
    again = json.loads(fm("index", str(shop.path), "--json", cwd=shop.path).stdout)
    summary = json.loads(from_sub.stdout)
    assert summary["repo"] == "shop" and summary["files_seen"] == 2
    assert again["noop"] and again["commit"] == summary["commit"]  # the same index


def test_search_with_repo_dot_in_a_subdirectory_finds_the_repository(fm_home: Path,
                                                                     shop: RepoBuilder) -> None:
    assert fm("index", str(shop.path), cwd=shop.path).returncode == 0
    done = fm("search", "cancel order", "--repo", ".", "--json", cwd=shop.path / "src")
    assert done.returncode == 0, done.stderr
    assert "src/orders.py" in done.stdout and "cancel_order" in done.stdout


def test_search_without_repo_searches_the_repository_the_directory_is_in(
        fm_home: Path, shop: RepoBuilder) -> None:
    assert fm("index", str(shop.path), cwd=shop.path).returncode == 0
    done = fm("search", "cancel order", "--json", cwd=shop.path / "src")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["path"] == "src/orders.py"


def test_context_without_repo_outside_any_repository_says_to_name_one(
        fm_home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = fm("context", "cancel order", cwd=plain)
    assert done.returncode == 2
    assert "name one with --repo" in done.stderr and "Traceback" not in done.stderr


def test_index_and_status_without_a_path_take_the_current_directory(
        fm_home: Path, shop: RepoBuilder) -> None:
    built = fm("index", "--json", cwd=shop.path / "src")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["files_seen"] == 2
    rows = json.loads(fm("status", "--json", cwd=shop.path / "src").stdout)
    assert [row["branch"] for row in rows] == ["main"]


def test_index_without_a_path_outside_any_repository_is_one_line_with_exit_2(
        fm_home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = fm("index", cwd=plain)
    assert done.returncode == 2
    assert "not a git repository" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_watch_without_a_path_watches_the_current_directory(
        fm_home: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = fm("watch", cwd=plain)  # the current directory is looked at, and is no repository
    assert done.returncode == 2
    assert "not a git repository" in done.stderr and "Missing argument" not in done.stderr

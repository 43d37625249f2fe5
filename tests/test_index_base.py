"""``freshmark index --base``: a base that is not an indexed branch is refused, and a base that
does not apply (the branch is already indexed) is said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_builder import RepoBuilder

from freshmark.faces.cli.main import cli


@pytest.fixture
def shop(fm_home: Path, make_repo) -> RepoBuilder:
    repo = make_repo("shop")
    repo.write("src/app.py", "def a():\n    return 1\n").commit("one")
    repo.branch("release").branch("feature/x")
    assert CliRunner().invoke(cli, ["index", str(repo.path)]).exit_code == 0  # main
    return repo


def _index(repo: RepoBuilder, *args: str):
    return CliRunner().invoke(cli, ["index", str(repo.path), "--json", *args])


def test_a_base_that_is_no_branch_exits_2_naming_the_indexed_branches(shop: RepoBuilder) -> None:
    done = _index(shop, "--branch", "feature/x", "--base", "develop")
    assert done.exit_code == 2
    assert "no branch 'develop'" in done.stderr and "indexed branch: main" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_base_that_is_not_indexed_exits_2_and_stores_nothing(shop: RepoBuilder) -> None:
    done = _index(shop, "--branch", "feature/x", "--base", "release")
    assert done.exit_code == 2 and "'release' of shop is not indexed" in done.stderr
    status = CliRunner().invoke(cli, ["status", str(shop.path), "--json"])
    assert [row["branch"] for row in json.loads(status.stdout)] == ["main"]


def test_a_base_on_an_already_indexed_branch_is_reported_as_not_applied(
    shop: RepoBuilder,
) -> None:
    assert _index(shop, "--branch", "release").exit_code == 0  # a whole index
    done = _index(shop, "--branch", "release", "--base", "main")
    assert done.exit_code == 0
    assert "does not apply" in json.loads(done.stdout)["base_note"]
    assert "freshmark: note: --base main does not apply" in done.stderr


def test_an_indexed_base_makes_the_new_branch_an_overlay_on_it(shop: RepoBuilder) -> None:
    done = _index(shop, "--branch", "feature/x", "--base", "main")
    assert done.exit_code == 0 and json.loads(done.stdout)["layered_on"] == "main"


def test_status_counts_one_commit_behind_in_the_singular(shop: RepoBuilder) -> None:
    shop.write("src/app.py", "def a():\n    return 2\n").commit("two")
    done = CliRunner().invoke(cli, ["status", str(shop.path)])
    assert "1 commit, 1 file changed since indexing" in done.stdout

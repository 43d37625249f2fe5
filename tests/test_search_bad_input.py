"""Bad input to search and context gets one clear line and a non-zero exit; nothing is lost."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from search_fixtures import build_shop, index

from freshmark.adapters.store.chroma import Store
from freshmark.core.errors import BadInput, BranchNotFound, NotIndexed, RepositoryGone
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from freshmark.services.retrieval.search import search


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("query", ["", "   \n\t "])
def test_empty_query_is_refused(fm_home, make_repo, query):
    shop = build_shop(make_repo)
    code, out, err = run_cli("search", query, "--repo", str(shop.path))
    assert code == 2 and out == ""
    assert err.strip() == "freshmark: error: query is empty; give words or a symbol name to " \
                          "search for"


@pytest.mark.parametrize("command", ["search", "context"])
@pytest.mark.parametrize("query", ["?!.,;", "::", "!!!???..."])
def test_a_query_of_punctuation_alone_is_refused(fm_home, make_repo, command, query):
    shop = build_shop(make_repo)
    code, out, err = run_cli(command, query, "--repo", str(shop.path))
    assert (code, out) == (2, "")
    assert err.strip() == "freshmark: error: query has no word or name, only punctuation; " \
                          "give words or a symbol name to search for"


def test_a_query_in_any_script_is_words():
    assert SearchRequest.build("заказ отмена").query == "заказ отмена"


@pytest.mark.parametrize("args", [("search", "cancel order", "--branch", ""),
                                  ("context", "cancel order", "-b", " "),
                                  ("status", "--branch", ""), ("index", "--branch", "")])
def test_an_empty_branch_name_is_refused_not_taken_for_the_default(fm_home, make_repo, args):
    shop = build_shop(make_repo)
    code, out, err = run_cli(*args, *(["--repo", str(shop.path)] if args[0] in
                                      ("search", "context", "status") else [str(shop.path)]))
    assert (code, out) == (2, "")
    assert "'--branch' / '-b': empty; name a branch, or leave the option out for the " \
           "default" in err and len(err.strip().splitlines()) == 1


def test_an_empty_branch_name_is_refused_by_the_request():
    with pytest.raises(BadInput, match="branch is empty"):
        SearchRequest.build("cancel order", branch="")


def test_query_over_the_size_limit_is_refused_with_its_size(fm_home, make_repo):
    shop = build_shop(make_repo)
    code, _, err = run_cli("search", "x" * 120_000, "--repo", str(shop.path))
    assert code == 2 and "query is 120000 bytes, over the 100000-byte limit" in err


def test_query_with_binary_content_is_refused(fm_home, make_repo):
    shop = build_shop(make_repo)
    with pytest.raises(BadInput, match="binary"):
        search(SearchRequest.build("cancel\x00\x01order"), str(shop.path),
               settings=Settings.from_env())


def test_a_query_byte_that_is_not_utf8_gets_one_line_and_exit_2(fm_home, make_repo):
    # A shell passes the byte \xff through as a lone surrogate (surrogateescape).
    shop = build_shop(make_repo)
    for command in ("search", "context"):
        code, out, err = run_cli(command, "validate \udcff value", "--repo", str(shop.path))
        assert (code, out) == (2, "")
        assert err.strip() == "freshmark: error: query is not valid UTF-8 text (at " \
                              "character 9); send plain text"


@pytest.mark.parametrize("k", [0, -1, 101])
def test_k_out_of_range_is_refused(fm_home, make_repo, k):
    shop = build_shop(make_repo)
    with pytest.raises(BadInput, match="k must be a whole number from 1 to 100"):
        search(SearchRequest.build("cancel", k=k), str(shop.path), settings=Settings.from_env())


def test_unknown_repository_is_named(fm_home, tmp_path):
    code, _, err = run_cli("search", "cancel", "--repo", "no-such-repo")
    assert code == 2 and "no repository 'no-such-repo'" in err


def test_unknown_branch_lists_the_known_ones(fm_home, make_repo):
    shop = build_shop(make_repo)
    code, _, err = run_cli("search", "cancel", "--repo", str(shop.path), "--branch", "nope")
    assert code == 2 and "branch 'nope' not found" in err and "known: main" in err


def test_branch_never_indexed_says_how_to_index_it(fm_home, make_repo):
    shop = build_shop(make_repo)
    shop.repo.branch("feature/new")
    with pytest.raises(NotIndexed) as raised:
        search(SearchRequest.build("cancel", branch="feature/new"), str(shop.path),
               settings=Settings.from_env())
    assert str(raised.value) == (f"branch shop@feature/new has not been indexed yet; run: "
                                 f"freshmark index {shop.path} --branch feature/new")


def test_repository_never_indexed_says_so(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    with pytest.raises(NotIndexed, match="has not been indexed yet"):
        search(SearchRequest.build("cancel"), str(shop.path), settings=Settings.from_env())


def test_repository_moved_since_indexing_is_named_gone(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo)
    shutil.move(shop.path, tmp_path / "moved-shop")
    code, _, err = run_cli("search", "cancel", "--repo", str(shop.path))
    assert code == 2 and "was indexed but is gone (moved or deleted)" in err


def test_repository_deleted_since_indexing_is_gone_by_id_too(fm_home, make_repo):
    shop = build_shop(make_repo)
    shutil.rmtree(shop.path)
    with pytest.raises(RepositoryGone, match="moved or deleted"):
        search(SearchRequest.build("cancel"), "shop", settings=Settings.from_env())


def test_bad_input_leaves_the_index_and_counts_untouched(fm_home, make_repo):
    shop = build_shop(make_repo)
    settings = Settings.from_env()
    branch_index = Store.open(settings).branch(shop.key, "main")
    before = branch_index.count()
    for bad in ("", "x" * 200_000):
        with pytest.raises(BadInput):
            search(SearchRequest.build(bad), str(shop.path), settings=settings)
    with pytest.raises(BranchNotFound):
        search(SearchRequest.build("cancel", branch="nope"), str(shop.path), settings=settings)
    assert branch_index.count() == before
    assert not (settings.state_dir / "verdicts.sqlite").exists()


def test_a_repository_never_indexed_is_named_by_the_path_typed_not_a_namesakes_name(
        fm_home, make_repo):
    indexed = make_repo("x/repo")
    indexed.write("a.py", "def f():\n    return 1\n").commit("one")
    index(indexed.path)
    other = make_repo("y/repo")
    other.write("a.py", "def f():\n    return 2\n").commit("two")
    with pytest.raises(NotIndexed) as raised:
        search(SearchRequest.build("f"), str(other.path), settings=Settings.from_env())
    assert str(raised.value).startswith(f"branch {other.path}@main has not been indexed yet")

"""The lexical channel on real overlay branches (indexer, store, ``overlay.LayeredIndex``): one
index per collection, shared with the base, equal to an index of the chunks the branch sees."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from repo_builder import git
from test_overlay import (
    ORDER,
    SERVICE_PATH,
    feature_branch,
    index_branch,
    key,
    move_base,
    store,
    view,
)

from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.adapters.lexical.index import LexicalIndex
from freshmark.adapters.lexical.layers import LayeredLexical
from freshmark.adapters.lexical.registry import forget_lexical, lexical_for
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.core.request import SearchRequest
from freshmark.core.tokenize import query_terms
from freshmark.services.retrieval.hybrid import hybrid_search

QUERIES = ("cancel order", "delivered shipped", "refund", "idempotent handler", "payment")


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    forget_lexical()
    yield
    forget_lexical()


def layered_lexical(index: LayeredIndex) -> LayeredLexical:
    lexical = lexical_for(index, None)  # type: ignore[arg-type]
    assert isinstance(lexical, LayeredLexical)
    return lexical


def assert_equals_an_index_of_what_the_branch_sees(index: LayeredIndex) -> None:
    flat = LexicalIndex("flat")
    flat.apply(index.iter_records())  # the visible records of every layer
    layered = layered_lexical(index)
    for query in QUERIES:
        for history in (False, True):
            hits, _, files = layered.search_with_files(query_terms(query), 20, 5,
                                                       include_history=history)
            flat_hits, _, flat_files = flat.search_with_files(query_terms(query), 20, 5,
                                                              include_history=history)
            assert {h.id: h.score for h in hits} == pytest.approx(
                {h.id: h.score for h in flat_hits}, rel=1e-5)
            assert files.scores == pytest.approx(flat_files.scores, rel=1e-6)


def test_overlay_search_shares_the_base_lexical_index(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    base_lexical = lexical_for(store().branch(key(repo), "main"), None)
    layered = layered_lexical(view(repo, "feature"))
    assert [x.collection for x in layered.indexes] == [view(repo, "feature").name,
                                                        base_lexical.collection]
    assert layered.indexes[1] is base_lexical
    assert layered.hidden[1] == frozenset({ORDER})


def test_overlay_lexical_search_equals_an_index_of_the_visible_chunks(store_env,
                                                                      make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    assert_equals_an_index_of_what_the_branch_sees(view(repo, "feature"))
    move_base(repo)  # the base's index moves on by its own generation
    index_branch(repo)
    assert_equals_an_index_of_what_the_branch_sees(view(repo, "feature"))


def test_overlay_lexical_index_rebuilds_after_a_merge_purges_records(store_env,
                                                                     make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    move_base(repo)
    index_branch(repo)
    before = view(repo, "feature")
    service_ids = [r.id for r in before.top.iter_records() if r.path == SERVICE_PATH]
    own = layered_lexical(before).indexes[0]
    assert service_ids and all(i in own.live or i in own.history for i in service_ids)
    git(repo.path, "merge", "-q", "--no-edit", "main")
    index_branch(repo)  # the overlay's copy of the service file is deleted, not tombstoned
    index = view(repo, "feature")
    assert index.manifest.purged_generation == index.manifest.generation
    layered = layered_lexical(index)
    assert layered.indexes[0] is own
    assert not any(i in own.live or i in own.history for i in service_ids)
    assert len(own) == index.top.count()
    assert_equals_an_index_of_what_the_branch_sees(index)


def test_hybrid_search_on_an_overlay_returns_only_visible_chunks(store_env, make_repo) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    index = view(repo, "feature")
    visible = {r.id: r.branch for r in index.iter_records()}
    request = SearchRequest.build("cancel delivered order", k=10)
    results, _ = hybrid_search(index, HashingEmbedder(), request)
    assert results
    assert all(visible[c.record.id] == c.record.branch for c in results)
    assert {c.record.branch for c in results if c.record.path == ORDER} == {"feature"}

"""The lexical channel on real overlay branches (indexer, store, ``overlay.LayeredIndex``): one
index per collection, the base's shared, finding exactly the chunks the branch sees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
from freshmark.adapters.lexical.tantivy_engine import TantivyEngine, index_directory
from freshmark.adapters.lexical.tantivy_store import TantivyCollection
from freshmark.adapters.store.layered import LayeredIndex
from freshmark.core.lexical_document import document_tokens
from freshmark.core.request import SearchRequest
from freshmark.core.tokenize import query_terms
from freshmark.services.retrieval.hybrid import hybrid_search

QUERIES = ("cancel order", "delivered shipped", "refund", "idempotent handler", "payment")


@pytest.fixture(autouse=True)
def fresh_engine() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


def assert_finds_the_chunks_the_branch_sees(index: LayeredIndex, cache: Path) -> None:
    visible = {r.id: r for r in index.iter_records()}  # the visible records of every layer
    channel = TantivyEngine(cache).channel(index)  # type: ignore[arg-type]
    for query in QUERIES:
        terms = query_terms(query)
        for history in (False, True):
            hits, _, files = channel.search_with_files(terms, 200, 5, include_history=history)
            shown = {i for i, r in visible.items() if set(terms) & set(document_tokens(r))
                     and (history or r.status == "live")}
            assert {h.id for h in hits} == shown, query
            assert set(files.scores) == {visible[i].path for i in shown
                                         if visible[i].status == "live"}, query


def test_overlay_search_reads_the_base_index_without_copying_it(store_env, make_repo,
                                                                tmp_path: Path) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    base, feature = store().branch(key(repo), "main"), view(repo, "feature")
    assert base is not None
    TantivyEngine(tmp_path).channel(feature)  # type: ignore[arg-type]
    held = {name: TantivyCollection(name, index_directory(tmp_path, name)).searcher().num_docs
            for name in (base.name, feature.name)}
    assert held == {base.name: base.count(), feature.name: feature.top.count()}


def test_overlay_lexical_search_finds_the_visible_chunks(store_env, make_repo,
                                                        tmp_path: Path) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    assert_finds_the_chunks_the_branch_sees(view(repo, "feature"), tmp_path)
    move_base(repo)  # the base's index moves on by its own generation
    index_branch(repo)
    assert_finds_the_chunks_the_branch_sees(view(repo, "feature"), tmp_path)


def test_overlay_lexical_index_rebuilds_after_a_merge_purges_records(store_env, make_repo,
                                                                     tmp_path: Path) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    move_base(repo)
    index_branch(repo)
    before = view(repo, "feature")
    service_ids = {r.id for r in before.top.iter_records() if r.path == SERVICE_PATH}
    assert service_ids
    assert_finds_the_chunks_the_branch_sees(before, tmp_path)  # the overlay's index holds them
    git(repo.path, "merge", "-q", "--no-edit", "main")
    index_branch(repo)  # the overlay's copy of the service file is deleted, not tombstoned
    index = view(repo, "feature")
    assert index.manifest.purged_generation == index.manifest.generation
    own = TantivyCollection(index.name, index_directory(tmp_path, index.name))
    own.refresh(index.top)
    assert own.searcher().num_docs == index.top.count()
    assert_finds_the_chunks_the_branch_sees(index, tmp_path)


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

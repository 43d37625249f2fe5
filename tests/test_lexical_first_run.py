"""A branch's first index run writes its chunks to the host's tantivy index as it writes
them to the store, so the lexical index needs no read of the collection after the run; what
it then finds is what an index caught up from the store finds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_recorder import recording
from test_index_streaming import FILES, FUNCTIONS_PER_FILE, forty_files, indexed

from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.adapters.store.chroma import Store
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings
from freshmark.core.tokenize import query_terms
from freshmark.services.indexing.run import IndexRun

QUERIES = ("f3_1", "f17_2 m17", "f29_0 x")  # names: no ties among the hits compared


@pytest.fixture(autouse=True)
def fresh_engines() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


def _branch(store: Store, collection: str) -> BranchView:
    manifest = next(m for m in store.list_manifests() if m.collection == collection)
    view = store.branch(manifest.repo_key, manifest.branch)
    assert view is not None
    return view


def test_a_first_index_reads_no_chunk_back_for_its_lexical_index(store_env, make_repo):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    traffic = recording(store)
    summary = indexed(repo, store)
    view = _branch(store, summary.collection)
    channel = TantivyEngine(Settings.from_env().cache_dir).channel(view)
    assert traffic.read_total(summary.collection) == 0
    assert channel.counts().live == FILES * FUNCTIONS_PER_FILE


def test_a_first_index_written_through_finds_what_a_catch_up_finds(store_env, make_repo,
                                                                     tmp_path: Path):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    view = _branch(store, indexed(repo, store).collection)
    written = TantivyEngine(Settings.from_env().cache_dir).channel(view)
    TantivyEngine(None).forget()
    caught_up = TantivyEngine(tmp_path / "elsewhere").channel(view)  # a host that never saw it
    for query in QUERIES:
        terms = query_terms(query)
        assert written.search_with_files(terms, 3, 2) == caught_up.search_with_files(terms, 3, 2)


def test_a_first_index_that_fails_releases_the_lexical_index_to_the_next_run(
        store_env, make_repo, monkeypatch: pytest.MonkeyPatch):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    original = IndexRun.apply_batch
    batches: list[int] = []
    dying = [True]

    def fails_after_one_batch(run: IndexRun, layer, changes) -> None:
        if batches and dying[0]:
            raise RuntimeError("the run dies mid-way")
        batches.append(len(changes))
        original(run, layer, changes)

    monkeypatch.setattr(IndexRun, "apply_batch", fails_after_one_batch)
    # The failure is kept, traceback and all (as a worker that reports it does): what the
    # failed run held must have been released by the run itself, not by garbage collection.
    with pytest.raises(RuntimeError) as failure:
        indexed(repo, store)
    dying[0] = False
    view = _branch(store, indexed(repo, store).collection)
    channel = TantivyEngine(Settings.from_env().cache_dir).channel(view)
    assert channel.counts().live == FILES * FUNCTIONS_PER_FILE
    assert failure.value.args == ("the run dies mid-way",)

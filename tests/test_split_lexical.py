"""A split first run's lexical index, written from each batch's documents as the batch comes in
(``split_lexical``): nothing read back after the run, the same index a catch-up from the store
builds, a batch over the bound read back alone, and anything unreadable left to the catch-up.

The batches run here one after the other, as a coordinator runs them when no helper takes a
message (the cluster tests run them in real worker processes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from store_recorder import recording
from test_index_streaming import FILES, FUNCTIONS_PER_FILE, forty_files
from test_lexical_first_run import QUERIES

from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config
from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.ports import BranchView
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tokenize import query_terms
from freshmark.services.indexing import split_lexical
from freshmark.services.indexing.batches import (
    LEXICAL_RESULT,
    BatchRunner,
    LayerBatch,
    LexicalTaker,
    RunStamp,
    no_claim,
)
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.indexing.summary import IndexSummary

FILES_PER_BATCH = 6

Alter = Callable[[int, str], str]


class InOrder:
    """A ``FanOut`` whose coordinator runs every batch itself, in order; ``alter`` stands for
    what the documents of batch n look like when they come in."""

    files_per_batch = FILES_PER_BATCH

    def __init__(self, alter: Alter = lambda number, sent: sent) -> None:
        self.alter = alter

    def wants(self, files: int) -> bool:
        return True

    def run(self, stamp: RunStamp, batches: Sequence[LayerBatch], run_here: BatchRunner,
            take_lexical: LexicalTaker | None = None) -> list[dict[str, Any]]:
        results = []
        for number, batch in enumerate(batches):
            result = run_here(batch, no_claim)
            sent = str(result.pop(LEXICAL_RESULT, ""))
            if take_lexical is not None:
                take_lexical(number, self.alter(number, sent))
            results.append(result)
        return results


@pytest.fixture(autouse=True)
def fresh_engines() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


def _first_runs(outcome: str) -> float:
    return REGISTRY.get_sample_value("freshmark_lexical_first_runs_total",
                                     {"outcome": outcome}) or 0.0


def _split(repo_path: Path, store: Store, alter: Alter | None = None) -> IndexSummary:
    fan_out = InOrder(alter) if alter else InOrder()
    return index_repo(IndexRequest(repo_path), settings=Settings.from_env(), config=Config(),
                      store=store, fan_out=fan_out)


def _view(store: Store, summary: IndexSummary) -> BranchView:
    manifest = next(m for m in store.list_manifests() if m.collection == summary.collection)
    view = store.branch(manifest.repo_key, manifest.branch)
    assert view is not None
    return view


def _same_as_a_catch_up(view: BranchView, elsewhere: Path) -> None:
    written = TantivyEngine(Settings.from_env().cache_dir).channel(view)
    TantivyEngine(None).forget()
    caught_up = TantivyEngine(elsewhere).channel(view)  # a host that never saw the run
    assert written.counts() == caught_up.counts()
    for query in QUERIES:
        terms = query_terms(query)
        assert written.search_with_files(terms, 3, 2) == caught_up.search_with_files(terms, 3, 2)


def test_a_split_first_run_reads_no_chunk_back_for_its_lexical_index(store_env, make_repo):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    traffic = recording(store)
    written_before = _first_runs("written")
    summary = _split(repo.path, store)
    assert summary.batches == -(-FILES // FILES_PER_BATCH)
    assert traffic.read_total(summary.collection) == 0
    assert _first_runs("written") == written_before + 1
    view = _view(store, summary)
    channel = TantivyEngine(Settings.from_env().cache_dir).channel(view)
    assert channel.counts().live == FILES * FUNCTIONS_PER_FILE


def test_a_split_first_run_written_from_its_batches_finds_what_a_catch_up_finds(
        store_env, make_repo, tmp_path: Path):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    _same_as_a_catch_up(_view(store, _split(repo.path, store)), tmp_path / "elsewhere")


def test_a_batch_over_the_bound_is_read_back_alone(store_env, make_repo, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    traffic = recording(store)
    monkeypatch.setattr(split_lexical, "MAX_BATCH_DOCUMENT_BYTES", 1)
    written_before = _first_runs("written")
    summary = _split(repo.path, store)
    assert summary.batches_read_back == summary.batches
    # A batch's own chunks at a time (ids, then records): never the collection after the run.
    assert traffic.largest_read() == FILES_PER_BATCH * FUNCTIONS_PER_FILE
    assert _first_runs("written") == written_before + 1
    _same_as_a_catch_up(_view(store, summary), tmp_path / "elsewhere")


def test_documents_that_cannot_be_read_leave_the_index_to_the_catch_up(
        store_env, make_repo, tmp_path: Path):
    repo = forty_files(make_repo)
    store = Store.open(Settings.from_env())
    caught_up_before = _first_runs("caught_up")
    summary = _split(repo.path, store, alter=lambda n, sent: "{not json" if n == 1 else sent)
    assert _first_runs("caught_up") == caught_up_before + 1
    _same_as_a_catch_up(_view(store, summary), tmp_path / "elsewhere")


def test_batch_documents_over_the_bound_are_not_kept() -> None:
    def record(n: int) -> ChunkRecord:
        return ChunkRecord("r", "main", "c" * 40, f"m{n}.py", f"f{n}", 1, 2, "t", "b", "s",
                           id=f"id{n}", text=" ".join(f"word{i}" for i in range(20)))

    one = LexicalDocument.of(record(1)).size_bytes
    documents = split_lexical.BatchDocuments(max_bytes=2 * one + one // 2)
    documents.written([LexicalDocument.of(record(1)), LexicalDocument.of(record(2))])
    assert json.loads(documents.to_json())["documents"][1][0] == "id2"
    documents.written([LexicalDocument.of(record(3))])
    assert documents.to_json() == "" and documents.documents is None

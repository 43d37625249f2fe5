"""The tantivy lexical engine on real stores and real repositories: its filters, overlays,
catch-up by generation, one on-disk index shared by processes, and a writer killed with its
lock held blocking nobody. What it scores: tests/test_lexical_scoring.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy
from search_fixtures import build_shop
from test_overlay import ORDER, feature_branch, index_branch, view
from test_retrieval import CODE, Writer, make_record

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.lexical import tantivy_store
from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.lexical.tantivy_engine import TantivyEngine, index_directory
from freshmark.adapters.lexical.tantivy_store import (
    STATE_FILE,
    IndexState,
    TantivyCollection,
)
from freshmark.adapters.store.chroma import BranchIndex, Store
from freshmark.core.errors import ConfigError
from freshmark.core.lexical_document import LexicalDocument, document_tokens
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord, chunk_id, utc_now_iso
from freshmark.core.tokenize import query_terms
from freshmark.services.retrieval.search import search

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_engines() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


@pytest.fixture
def shop(store_env: str) -> BranchIndex:
    settings = Settings.from_env()
    embedder = get_embedder("hashing", settings.cache_dir)
    key = f"shop-{os.urandom(6).hex()}"
    manifest = Manifest(repo="shop", repo_key=key, branch="main", embedder=embedder.id,
                        collection=collection_name(key, "main"), created_at=utc_now_iso())
    index = Store.open(settings).create_branch(manifest)
    Writer(index, embedder).run([make_record(p, s, t) for (p, s), t in CODE.items()])
    return index


def writer(index: BranchIndex) -> Writer:
    return Writer(index, get_embedder("hashing", Settings.from_env().cache_dir))


def top_ids(channel, query: str, n: int = 5, **filters) -> list[str]:
    hits, _ = channel.search(query_terms(query), n, **filters)
    return [hit.id for hit in hits]


def test_kinds_filter_keeps_only_those_kinds(shop: BranchIndex, tmp_path: Path) -> None:
    writer(shop).run([make_record("docs/orders.md", "restock", "restock the order\n",
                                  file_kind="doc")])
    channel = TantivyEngine(tmp_path).channel(shop)
    doc_id = chunk_id("docs/orders.md", "restock", 0)
    assert doc_id in top_ids(channel, "restock")
    assert top_ids(channel, "restock", kinds=["doc"]) == [doc_id]
    assert doc_id not in top_ids(channel, "restock", kinds=["source"])


def test_excluded_kinds_only_when_asked(shop: BranchIndex, tmp_path: Path) -> None:
    writer(shop).run([make_record("gen/orders_pb2.py", "restock_pb", "restock()\n",
                                  file_kind="generated")])
    channel = TantivyEngine(tmp_path).channel(shop)
    generated = chunk_id("gen/orders_pb2.py", "restock_pb", 0)
    assert generated not in top_ids(channel, "restock")
    assert generated in top_ids(channel, "restock", include_excluded=True)


def test_tombstoned_chunk_is_hidden_unless_history(shop: BranchIndex, tmp_path: Path) -> None:
    gone = chunk_id("src/orders/service.py", "OrderService.cancel_order", 0)
    engine = TantivyEngine(tmp_path)
    assert top_ids(engine.channel(shop), "restock")[0] == gone
    writer(shop).run(tombstone=[gone])
    assert gone not in top_ids(engine.channel(shop), "restock")
    hits, _ = engine.channel(shop).search(query_terms("restock"), 5, include_history=True)
    assert hits[0].id == gone and hits[0].tombstoned


def test_the_share_of_chunks_passing_filters_follows_a_run_that_tombstones_one(
        shop: BranchIndex, tmp_path: Path) -> None:
    engine = TantivyEngine(tmp_path)
    shown = engine.channel(shop).passing_share(False, True)
    assert shown == 1.0
    assert engine.channel(shop).passing_share(False, True) == shown  # the same state again
    writer(shop).run(tombstone=[chunk_id("src/orders/service.py", "OrderService.cancel_order",
                                         0)])

    after = engine.channel(shop).passing_share(False, True)

    assert after == pytest.approx((len(CODE) - 1) / len(CODE))


def test_catch_up_fetches_only_the_records_of_new_runs(shop: BranchIndex,
                                                       tmp_path: Path) -> None:
    collection = TantivyCollection(shop.name, index_directory(tmp_path, shop.name))
    assert collection.refresh(shop) == len(CODE)
    assert collection.refresh(shop) == 0
    writer(shop).run([make_record("src/a.py", "alpha", "def alpha(): pass\n")])
    assert collection.refresh(shop) == 1
    assert top_ids(TantivyEngine(tmp_path).channel(shop), "alpha") == \
        [chunk_id("src/a.py", "alpha", 0)]


@pytest.fixture
def tokenized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the chunks a catch-up tokenizes (``LexicalDocument.of``, still real)."""
    seen: list[str] = []
    real = tantivy_store.LexicalDocument.of

    def counted(record: ChunkRecord) -> LexicalDocument:
        seen.append(record.id)
        return real(record)

    monkeypatch.setattr(tantivy_store.LexicalDocument, "of", staticmethod(counted))
    return seen


def restamped(path: str, symbol: str, text: str) -> ChunkRecord:
    """A chunk as a later commit stamps it: the same text under another commit and blob."""
    record = make_record(path, symbol, text)
    record.commit, record.blob_sha = "f" * 40, "a" * 40
    return record


def test_a_catch_up_rewrites_a_changed_chunk_and_leaves_a_restamped_one(
        shop: BranchIndex, tmp_path: Path, tokenized: list[str]) -> None:
    collection = TantivyCollection(shop.name, index_directory(tmp_path, shop.name))
    collection.refresh(shop)
    (same_path, same_symbol), same_text = next(iter(CODE.items()))
    writer(shop).run([restamped(same_path, same_symbol, same_text),
                      make_record("src/a.py", "alpha", "def alpha(): return restock\n")])
    tokenized.clear()

    assert collection.refresh(shop) == 2  # both fetched and brought in step

    assert tokenized == [chunk_id("src/a.py", "alpha", 0)]
    channel = TantivyEngine(tmp_path).channel(shop)
    assert chunk_id("src/a.py", "alpha", 0) in top_ids(channel, "restock", n=20)
    assert chunk_id(same_path, same_symbol, 0) in top_ids(channel, same_symbol, n=20)


def test_a_chunk_stamped_without_a_text_hash_is_always_rewritten(
        shop: BranchIndex, tmp_path: Path, tokenized: list[str]) -> None:
    collection = TantivyCollection(shop.name, index_directory(tmp_path, shop.name))
    collection.refresh(shop)
    (path, symbol), text = next(iter(CODE.items()))
    older = restamped(path, symbol, text)
    older.text_sha256 = ""  # as an older freshmark stamped it
    writer(shop).run([older])
    tokenized.clear()

    collection.refresh(shop)

    assert tokenized == [chunk_id(path, symbol, 0)]


def test_a_catch_up_compares_with_what_another_process_committed_since(
        shop: BranchIndex, tmp_path: Path) -> None:
    directory = index_directory(tmp_path, shop.name)
    this_process = TantivyCollection(shop.name, directory)
    other_process = TantivyCollection(shop.name, directory)
    first, second = "def alpha(): return restock\n", "def alpha(): return reorder\n"
    writer(shop).run([make_record("src/a.py", "alpha", first)])
    this_process.refresh(shop)  # its reader holds the first text
    writer(shop).run([make_record("src/a.py", "alpha", second)])
    other_process.refresh(shop)
    writer(shop).run([make_record("src/a.py", "alpha", first)])  # the text back as it was

    this_process.refresh(shop)

    channel = TantivyEngine(tmp_path).channel(shop)
    alpha = chunk_id("src/a.py", "alpha", 0)
    assert alpha in top_ids(channel, "restock", n=20)
    assert alpha not in top_ids(channel, "reorder", n=20)


def test_whole_file_scores_rank_the_file_of_the_best_chunk(shop: BranchIndex,
                                                           tmp_path: Path) -> None:
    channel = TantivyEngine(tmp_path).channel(shop)
    _, _, files = channel.search_with_files(query_terms("order"), 5, 2)
    assert [h.id for h in files.best_chunks][:1] == \
        [chunk_id("src/orders/service.py", "OrderService.cancel_order", 0)]
    assert set(files.scores) >= {"src/orders/service.py"}
    assert files.best_chunks[0].score == files.scores["src/orders/service.py"]


def test_overlay_hides_the_base_chunks_of_paths_it_holds(store_env, make_repo,
                                                         tmp_path: Path) -> None:
    repo = feature_branch(make_repo)
    index_branch(repo)
    branch = view(repo, "feature")
    terms = query_terms("cancel order status")
    hits, _ = TantivyEngine(tmp_path).channel(branch).search(  # type: ignore[arg-type]
        terms, 50, include_history=True)
    ids = [hit.id for hit in hits]
    assert len(ids) == len(set(ids))  # the base's chunk of a path the overlay holds is hidden
    assert ORDER in {record.path for record in branch.own.iter_records()}
    visible = {record.id: record for record in branch.iter_records()}  # one per id, top first
    matching = {i for i, r in visible.items() if set(terms) & set(document_tokens(r))}
    assert set(ids) == matching
    assert {visible[i].branch for i in ids if visible[i].path == ORDER} == {"feature"}


CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from freshmark.adapters.lexical.tantivy_engine import TantivyEngine, _collection
    from freshmark.adapters.store.chroma import Store
    from freshmark.core.settings import Settings
    from freshmark.core.tokenize import query_terms
    cache, repo_key, query = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    view = Store.open(Settings.from_env()).branch(repo_key, "main")
    applied = _collection(view.name, cache).refresh(view)
    hits, _ = TantivyEngine(cache).channel(view).search(query_terms(query), 5)
    print(json.dumps({"applied": applied, "ids": [h.id for h in hits]}))
""")


def test_a_second_process_searches_the_same_index_without_fetching(shop: BranchIndex,
                                                                   tmp_path: Path) -> None:
    expected = top_ids(TantivyEngine(tmp_path).channel(shop), "order")
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path),
                            shop.manifest.repo_key, "order"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    answer = json.loads(child.stdout.strip().splitlines()[-1])
    assert answer == {"applied": 0, "ids": expected}


HOLD_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from freshmark.adapters.lexical.tantivy_store import STATE_FILE, IndexState, TantivyCollection
    collection = TantivyCollection("held", Path(sys.argv[1]))
    writer = collection.index.writer(heap_size=15_000_000, num_threads=1)
    print("holding", flush=True)
    time.sleep(120)
""")


def test_a_writer_killed_holding_the_lock_does_not_block_the_next(shop: BranchIndex,
                                                                  tmp_path: Path) -> None:
    directory = index_directory(tmp_path, shop.name)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITER, str(directory)],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        collection = TantivyCollection(shop.name, directory)
        assert collection.refresh(shop, wait_seconds=0.0) == 0  # busy: nothing written
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert (directory / ".tantivy-writer.lock").exists()  # the lock file stays behind
    assert collection.refresh(shop, wait_seconds=0.0) == len(CODE)


def test_an_index_of_another_schema_is_rebuilt_not_trusted(shop: BranchIndex,
                                                            tmp_path: Path) -> None:
    directory = index_directory(tmp_path, shop.name)
    TantivyCollection(shop.name, directory).refresh(shop)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=True)
    older = tantivy.Index(builder.build(), path=str(directory.with_name(f"{shop.name}.files")),
                          reuse=False)  # an older layout, under a state that says current
    del older
    assert TantivyCollection(shop.name, directory).refresh(shop) == len(CODE)


def test_index_runs_leave_the_tantivy_index_current_for_search(fm_home: Path,
                                                                make_repo) -> None:
    shop = build_shop(make_repo)  # index runs: the engine's after_run catches the index up
    settings = Settings.from_env()
    view = Store.open(settings).branch(f"path:{shop.path.resolve()}", "main")
    assert view is not None
    state = IndexState.read(index_directory(settings.cache_dir, view.name) / STATE_FILE)
    assert state is not None and state.generation == view.manifest.generation
    request = SearchRequest.build("cancel order", k=5)
    found = search(request, str(shop.path), settings=settings).to_dict()["results"]
    assert found and found[0]["path"].endswith("service.py")


def test_settings_choose_the_lexical_engine(fm_home: Path) -> None:
    assert isinstance(lexical_engine(Settings.from_env()), TantivyEngine)
    with pytest.raises(ConfigError, match="FRESHMARK_LEXICAL"):
        Settings.from_env({"FRESHMARK_LEXICAL": "bm25"})


def test_a_catch_up_committed_in_groups_scores_as_one_committed_at_once(
        shop: BranchIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = TantivyEngine(tmp_path / "whole").channel(shop)
    monkeypatch.setattr(tantivy_store, "COMMIT_RECORDS", 1)  # every file's chunks split apart
    grouped = TantivyEngine(tmp_path / "grouped").channel(shop)
    for query in ("order", "cancel order restock", "invoice total"):
        terms = query_terms(query)
        assert grouped.search_with_files(terms, 5, 3) == whole.search_with_files(terms, 5, 3)


def _segment_ids(directory: Path) -> set[str]:
    meta = json.loads((directory / "meta.json").read_text())
    return {segment["segment_id"] for segment in meta["segments"]}


def test_small_runs_after_a_bulk_write_do_not_merge_its_segments_again(tmp_path: Path) -> None:
    directory = tmp_path / "bulk"
    collection = TantivyCollection("bulk", directory)
    bulk = 2 * max(tantivy_store.COMMIT_RECORDS, tantivy_store.FILE_COMMIT_PATHS) + 1_000
    collection.apply([make_record(f"src/m{i}.py", f"f{i}", f"def f{i}(): return {i}\n")
                      for i in range(bulk)], wait_seconds=5.0)  # a file each: both indexes
    written = {}
    for index in (directory, directory.with_name("bulk.files")):
        meta = json.loads((index / "meta.json").read_text())
        written[index] = {segment["segment_id"] for segment in meta["segments"]
                          if segment["max_doc"] >= tantivy_store.COMMIT_RECORDS}
        assert len(written[index]) >= 2

    for run in range(10):  # each small run's commit is a segment of its own
        collection.apply([make_record(f"src/n{run}.py", "g", f"def g(): return {run}\n")],
                         wait_seconds=5.0)

    for index, segments in written.items():
        assert segments <= _segment_ids(index)

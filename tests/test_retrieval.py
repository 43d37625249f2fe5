"""Hybrid search over a real store: filters, incremental agreement of both channels, bad input.

Index runs are emulated the way the indexer writes: every chunk written in a run carries
``updated_gen = manifest.generation + 1`` and the manifest advances last.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.lexical.tantivy_engine import (
    TantivyChannel,
    TantivyEngine,
    index_directory,
)
from freshmark.adapters.lexical.tantivy_store import TantivyCollection
from freshmark.adapters.store.chroma import BranchIndex, Store
from freshmark.core.errors import BadInput
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.request import DEFAULT_KINDS, MAX_QUERY_BYTES, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import TOMBSTONED, ChunkRecord, chunk_id, sha256_hex, utc_now_iso
from freshmark.core.tokenize import query_terms
from freshmark.services.retrieval.channels import MAX_VECTOR_READ, vector_channel
from freshmark.services.retrieval.hybrid import hybrid_search

CODE = {
    ("src/orders/service.py", "OrderService.cancel_order"): (
        "def cancel_order(self, order_id):\n"
        "    order = self.repo.get(order_id)\n"
        "    order.status = 'cancelled'\n"
        "    self.inventory.restock(order.items)\n"
    ),
    ("src/orders/service.py", "OrderService.create_order"): (
        "def create_order(self, cart):\n    return self.repo.add(Order(items=cart.items))\n"
    ),
    ("src/billing/invoice.py", "Invoice.total"): (
        "def total(self):\n    return sum(line.amount for line in self.lines)\n"
    ),
    ("src/users/lookup.py", "get_user_by_id"): (
        "def get_user_by_id(user_id):\n    return USERS[user_id]\n"
    ),
}


def make_record(path: str, symbol: str, text: str, *, ordinal: int = 0,
                file_kind: str = "source", signature: str | None = None) -> ChunkRecord:
    return ChunkRecord(
        repo="shop", branch="main", commit="c" * 40, path=path, symbol=symbol,
        start_line=1, end_line=text.count("\n") + 1, indexed_at=utc_now_iso(),
        blob_sha="b" * 40, content_sha256=sha256_hex(text), kind="method", language="python",
        signature=text.splitlines()[0] if signature is None else signature,
        file_kind=file_kind, id=chunk_id(path, symbol, ordinal), text=text,
        text_sha256=sha256_hex(text),
    )


class Writer:
    """Writes like an index run: chunks stamped with the next generation, the manifest last."""

    def __init__(self, index: BranchIndex, embedder: object):
        self.index = index
        self.embedder = embedder

    def run(self, upsert: Sequence[ChunkRecord] = (), tombstone: Sequence[str] = (),
            advance: bool = True) -> None:
        generation = self.index.reload_manifest().generation + 1
        for record in upsert:
            record.updated_gen = generation
        if upsert:
            vectors = self.embedder.embed([r.text for r in upsert])  # type: ignore[attr-defined]
            self.index.upsert(list(upsert), np.asarray(vectors))
        if tombstone:
            self.index.update_metadata([
                (i, {"status": TOMBSTONED, "tombstoned_in": "d" * 40, "updated_gen": generation})
                for i in tombstone
            ])
        if advance:
            manifest = self.index.reload_manifest()
            manifest.generation = generation
            manifest.commit = "e" * 40
            self.index.save_manifest(manifest)


@pytest.fixture
def settings(store_env: str) -> Iterator[Settings]:
    TantivyEngine(None).forget()
    yield Settings.from_env()
    TantivyEngine(None).forget()


@pytest.fixture
def embedder(settings: Settings) -> object:
    return get_embedder("hashing", settings.cache_dir)


@pytest.fixture
def repo_key() -> str:
    """A key of its own per test: the Chroma server outlives a test, its collections too."""
    return f"shop-{uuid.uuid4().hex}"


@pytest.fixture
def index(settings: Settings, embedder: object, repo_key: str) -> BranchIndex:
    store = Store.open(settings)
    manifest = Manifest(repo="shop", repo_key=repo_key, branch="main", embedder="hashing",
                        collection=collection_name(repo_key, "main"),
                        created_at=utc_now_iso())
    manifest.embedder = getattr(embedder, "id", "hashing")
    index = store.create_branch(manifest)
    Writer(index, embedder).run([make_record(p, s, t) for (p, s), t in CODE.items()])
    return index


def search(index: BranchIndex, embedder: object, query: str, k: int = 5, **kwargs: Any):
    request = SearchRequest.build(query, k=k, **kwargs)
    results, _ = hybrid_search(index, embedder, request)  # type: ignore[arg-type]
    return results


def symbols(results: list) -> list[str]:
    return [c.record.symbol for c in results]


def test_named_symbol_ranks_first(index: BranchIndex, embedder: object) -> None:
    assert symbols(search(index, embedder, "cancel_order"))[0] == "OrderService.cancel_order"


def test_camel_case_query_finds_snake_case_code(index: BranchIndex, embedder: object) -> None:
    assert symbols(search(index, embedder, "getUserById"))[0] == "get_user_by_id"


def test_results_carry_channel_ranks_and_scores(index: BranchIndex, embedder: object) -> None:
    top = search(index, embedder, "restock inventory")[0]
    assert top.record.symbol == "OrderService.cancel_order"
    assert top.bm25_rank == 1 and top.bm25 is not None and top.bm25 > 0
    assert top.vector_rank is not None and top.vector_sim is not None
    assert top.rrf > 0 and set(top.features) >= {"symbol_hit", "path_hit", "length_fit"}


def test_timings_cover_every_stage(index: BranchIndex, embedder: object) -> None:
    _, timings = hybrid_search(index, embedder, SearchRequest.build("restock", k=3))  # type: ignore[arg-type]
    assert set(timings.to_dict()) == {"embed_seconds", "lexical_seconds", "vector_seconds",
                                      "fusion_seconds"}
    assert timings.total_seconds > 0


def test_returns_at_most_k(index: BranchIndex, embedder: object) -> None:
    assert len(search(index, embedder, "order", k=2)) == 2


def test_added_chunk_is_found_after_its_run(index: BranchIndex, embedder: object) -> None:
    assert "refund" not in " ".join(c.record.text for c in search(index, embedder, "refund"))
    Writer(index, embedder).run([make_record(
        "src/billing/refund.py", "refund_payment",
        "def refund_payment(payment):\n    payment.refund()\n")])
    top = search(index, embedder, "refund_payment")[0]
    assert top.record.symbol == "refund_payment"
    assert top.bm25_rank == 1 and top.vector_rank is not None


def test_updated_chunk_is_searched_by_its_new_text(index: BranchIndex, embedder: object) -> None:
    search(index, embedder, "restock")  # the lexical index now holds the old text
    path, symbol = "src/orders/service.py", "OrderService.cancel_order"
    Writer(index, embedder).run([make_record(
        path, symbol, "def cancel_order(self, order_id):\n    self.ledger.void(order_id)\n")])
    by_new = search(index, embedder, "ledger void")[0]
    assert by_new.record.symbol == symbol and by_new.bm25_rank == 1
    assert "ledger" in by_new.record.text
    assert all(c.record.symbol != symbol or c.bm25_rank is None
               for c in search(index, embedder, "restock inventory"))


def test_tombstone_leaves_both_channels_at_once(index: BranchIndex, embedder: object) -> None:
    gone = chunk_id("src/orders/service.py", "OrderService.cancel_order", 0)
    assert gone in [c.record.id for c in search(index, embedder, "cancel_order restock")]
    Writer(index, embedder).run(tombstone=[gone])
    assert gone not in [c.record.id for c in search(index, embedder, "cancel_order restock")]
    hits, _ = TantivyEngine(None).channel(index).search(query_terms("cancel_order restock"), 10,
                                                        include_history=True)
    assert (gone, True) in [(h.id, h.tombstoned) for h in hits]


def test_tombstoned_chunk_is_found_with_history(index: BranchIndex, embedder: object) -> None:
    gone = chunk_id("src/orders/service.py", "OrderService.cancel_order", 0)
    Writer(index, embedder).run(tombstone=[gone])
    found = search(index, embedder, "cancel_order restock", include_history=True)
    assert found[0].record.id == gone and found[0].record.status == TOMBSTONED
    assert found[0].bm25_rank == 1 and found[0].vector_rank is not None


def test_excluded_kinds_appear_only_when_asked(index: BranchIndex, embedder: object) -> None:
    generated = make_record("gen/orders_pb2.py", "restock_pb", "def restock_pb(): restock()\n",
                            file_kind="generated")
    Writer(index, embedder).run([generated])
    assert generated.id not in [c.record.id for c in search(index, embedder, "restock_pb")]
    found = search(index, embedder, "restock_pb", include_excluded=True)
    assert found[0].record.id == generated.id


def test_parts_of_one_function_come_back_once(index: BranchIndex, embedder: object) -> None:
    signature = "def reconcile_ledger(entries):"
    parts = [make_record("src/billing/ledger.py", "reconcile_ledger",
                         f"{signature}\n    # part {n}: reconcile ledger entries\n    step_{n}()\n",
                         ordinal=n, signature=signature) for n in range(3)]
    Writer(index, embedder).run(parts)
    found = search(index, embedder, "reconcile ledger entries", k=5)
    assert symbols(found).count("reconcile_ledger") == 1


def test_live_results_survive_a_crowd_of_tombstoned_neighbours(
    index: BranchIndex, embedder: object
) -> None:
    crowd = [make_record(f"src/old/restock_{i}.py", f"restock_{i}",
                         f"def restock_{i}(items):\n    restock(items)\n") for i in range(40)]
    Writer(index, embedder).run(crowd)
    Writer(index, embedder).run(tombstone=[r.id for r in crowd])
    found = search(index, embedder, "restock items", k=3)
    assert found and all(c.record.status == "live" for c in found)
    assert all(c.vector_rank is not None for c in found)  # the vector channel still delivered


class _QueryLog:
    """The index, with every ``query`` call's ``where`` noted (the channel's only store read)."""

    def __init__(self, index: BranchIndex):
        self.index, self.wheres, self.sizes = index, [], []

    def query(self, vector, n, where=None):
        self.wheres.append(where)
        self.sizes.append(n)
        return self.index.query(vector, n, where=where)


def _tombstoned_crowd(index: BranchIndex, embedder: object) -> np.ndarray:
    crowd = [make_record(f"src/old/restock_{i}.py", f"restock_{i}",
                         f"def restock_{i}(items):\n    restock(items)\n") for i in range(60)]
    Writer(index, embedder).run(crowd)
    Writer(index, embedder).run(tombstone=[r.id for r in crowd])
    return embedder.embed_query("restock items")  # type: ignore[attr-defined]


def test_vector_channel_widens_its_read_past_a_crowd_of_filtered_neighbours(
    index: BranchIndex, embedder: object
) -> None:
    vector = _tombstoned_crowd(index, embedder)
    # A share of 1.0 claims nothing is filtered: the first two reads come back all tombstoned.
    found = vector_channel(index, vector, 3, False, DEFAULT_KINDS, passing_share=1.0)
    assert len(found) == 3 and all(record.status == "live" for record, _ in found)


def test_vector_channel_never_asks_the_store_to_filter_and_reads_a_bounded_number(
    index: BranchIndex, embedder: object
) -> None:
    vector = _tombstoned_crowd(index, embedder)
    logged = _QueryLog(index)
    vector_channel(logged, vector, 3, False, frozenset({"translation"}),  # type: ignore[arg-type]
                   passing_share=0.0)
    assert logged.wheres and all(where is None for where in logged.wheres)
    assert max(logged.sizes) <= MAX_VECTOR_READ


def test_refresh_fetches_only_what_changed(index: BranchIndex, embedder: object) -> None:
    lexical = TantivyCollection(index.name, None)
    assert lexical.refresh(index) == len(CODE)
    assert lexical.refresh(index) == 0  # same generation: one manifest read, no fetch
    Writer(index, embedder).run([make_record("src/a.py", "alpha", "def alpha(): pass\n")])
    assert lexical.refresh(index) == 1


def test_in_flight_writes_are_fetched_again_when_the_run_ends(
    index: BranchIndex, embedder: object
) -> None:
    lexical = TantivyCollection(index.name, None)
    lexical.refresh(index)
    writer = Writer(index, embedder)
    writer.run([make_record("src/a.py", "alpha", "def alpha(): pass\n")], advance=False)
    assert lexical.refresh(index) == 0  # the run has not finished: manifest unchanged
    writer.run([make_record("src/b.py", "beta", "def beta(): pass\n")])
    assert lexical.refresh(index) == 2  # both runs' chunks carry a generation above ours
    hits, _ = TantivyChannel([(lexical, frozenset())], None).search(["alpha"], 1)
    assert [h.id for h in hits] == [chunk_id("src/a.py", "alpha", 0)]


def test_chunk_tombstoned_mid_run_is_already_filtered(index: BranchIndex, embedder: object) -> None:
    gone = chunk_id("src/orders/service.py", "OrderService.cancel_order", 0)
    search(index, embedder, "restock")
    Writer(index, embedder).run(tombstone=[gone], advance=False)
    assert gone not in [c.record.id for c in search(index, embedder, "cancel_order restock")]


def test_chunk_removed_from_the_store_is_forgotten(index: BranchIndex, embedder: object) -> None:
    gone = chunk_id("src/users/lookup.py", "get_user_by_id", 0)
    search(index, embedder, "get_user_by_id")
    index._collection.delete(ids=[gone])  # a purge the generations cannot show
    assert gone not in [c.record.id for c in search(index, embedder, "get_user_by_id")]
    hits, _ = TantivyEngine(None).channel(index).search(query_terms("get_user_by_id"), 10,
                                                        include_history=True)
    assert gone not in [h.id for h in hits]


def test_the_index_on_disk_lets_a_new_process_fetch_only_the_delta(
    index: BranchIndex, embedder: object, settings: Settings
) -> None:
    TantivyEngine(settings.cache_dir).channel(index)
    directory = index_directory(settings.cache_dir, index.name)
    Writer(index, embedder).run([make_record("src/a.py", "alpha", "def alpha(): pass\n")])
    TantivyEngine(None).forget()  # as if a new process started
    loaded = TantivyCollection(index.name, directory)
    assert loaded.searcher().num_docs == len(CODE)
    assert loaded.refresh(index) == 1


def test_recreated_collection_is_rebuilt_not_patched(
    index: BranchIndex, embedder: object, settings: Settings, repo_key: str
) -> None:
    search(index, embedder, "restock")  # the process's lexical index holds the old collection
    store = Store.open(settings)
    store.drop_branch(repo_key, "main")
    manifest = Manifest(repo="shop", repo_key=repo_key, branch="main",
                        embedder=index.manifest.embedder,
                        collection=index.manifest.collection, created_at="2099-01-01T00:00:00Z")
    fresh = store.create_branch(manifest)
    Writer(fresh, embedder).run([make_record("src/a.py", "alpha", "def alpha(): pass\n")])
    assert symbols(search(fresh, embedder, "restock alpha")) == ["alpha"]


@pytest.mark.parametrize("query", ["", "   \n\t", "x" * (MAX_QUERY_BYTES + 1), "a" * 1_000_000,
                                   "bad\x00query"])
def test_bad_query_is_refused_with_a_clear_error(
    index: BranchIndex, embedder: object, query: str
) -> None:
    with pytest.raises(BadInput, match="query"):
        search(index, embedder, query)


@pytest.mark.parametrize("k", [0, -1, 101])
def test_k_out_of_range_is_refused(index: BranchIndex, embedder: object, k: int) -> None:
    with pytest.raises(BadInput, match="k must be"):
        search(index, embedder, "order", k=k)


def test_empty_collection_gives_no_results(settings: Settings, embedder: object) -> None:
    store = Store.open(settings)
    key = f"empty-{uuid.uuid4().hex}"
    empty = store.create_branch(Manifest(repo="e", repo_key=key, branch="main",
                                         embedder=getattr(embedder, "id", "hashing"),
                                         collection=collection_name(key, "main")))
    assert search(empty, embedder, "anything") == []


def test_unwritable_cache_dir_does_not_fail_search(
    index: BranchIndex, embedder: object, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    results, _ = hybrid_search(index, embedder, SearchRequest.build("restock", k=3),
                               lexical=TantivyEngine(blocked))
    assert results


def test_unwritable_cache_dir_does_not_fail_a_run_nor_count(
    index: BranchIndex, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    assert TantivyEngine(blocked).after_run(index, True) is None  # status counts from the store


@pytest.mark.slow
@pytest.mark.parametrize("store_env", ["embedded"], indirect=True)
def test_semantic_query_finds_code_without_shared_words(settings: Settings) -> None:
    embedder = get_embedder("minilm", settings.cache_dir)
    key = f"semantic-{uuid.uuid4().hex}"
    index = Store.open(settings).create_branch(Manifest(
        repo="s", repo_key=key, branch="main", embedder=embedder.id,
        collection=collection_name(key, "main"), created_at=utc_now_iso()))
    Writer(index, embedder).run([
        make_record("src/files.py", "remove_file", "def remove_file(path):\n    os.unlink(path)\n"),
        make_record("src/mail.py", "send_mail",
                    "def send_mail(to, body):\n    smtp.send(to, body)\n"),
        make_record("src/math.py", "mean", "def mean(xs):\n    return sum(xs) / len(xs)\n"),
    ])
    found = search(index, embedder, "delete a document from disk", k=3)
    assert found[0].record.symbol == "remove_file"
    assert found[0].bm25_rank is None  # no word in common: the vectors found it


@pytest.mark.slow
@pytest.mark.parametrize("store_env", ["embedded"], indirect=True)
def test_named_symbol_ranks_first_with_the_real_model(settings: Settings) -> None:
    embedder = get_embedder("minilm", settings.cache_dir)
    key = f"semantic-{uuid.uuid4().hex}"
    index = Store.open(settings).create_branch(Manifest(
        repo="s", repo_key=key, branch="main", embedder=embedder.id,
        collection=collection_name(key, "main"), created_at=utc_now_iso()))
    Writer(index, embedder).run([make_record(p, s, t) for (p, s), t in CODE.items()])
    assert symbols(search(index, embedder, "OrderService.create_order"))[0] == (
        "OrderService.create_order")

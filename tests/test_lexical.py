"""The BM25 index itself: ranking sanity, incremental updates, compaction, snapshots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from freshmark.adapters.lexical.bm25 import Bm25
from freshmark.adapters.lexical.index import LexicalIndex
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tokenize import query_terms, tokenize

CORPUS = {
    "cancel": "def cancel_order(order):\n    order.status = 'cancelled'\n    restock(order.items)",
    "create": "def create_order(cart):\n    return Order(items=cart.items)",
    "user": "def getUserById(userId):\n    return users[userId]",
    "log": "def log_message(msg):\n    print(msg)",
}


def _index(corpus: dict[str, str] = CORPUS) -> Bm25:
    bm25 = Bm25()
    for doc_id, text in corpus.items():
        bm25.add(doc_id, tokenize(text))
    return bm25


def _ids(hits: list[tuple[str, float]]) -> list[str]:
    return [doc_id for doc_id, _ in hits]


def _record(doc_id: str, text: str, *, status: str = "live", file_kind: str = "source",
            path: str = "src/app.py", symbol: str = "f") -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       start_line=1, end_line=3, indexed_at="2026-01-01T00:00:00Z",
                       blob_sha="b" * 40, content_sha256="d" * 64, id=doc_id, text=text,
                       status=status, file_kind=file_kind)


def test_document_with_the_rare_term_ranks_first() -> None:
    assert _ids(_index().search(query_terms("restock"), 5)) == ["cancel"]


def test_more_matching_terms_rank_higher() -> None:
    ranked = _ids(_index().search(query_terms("cancel order items"), 5))
    assert ranked[0] == "cancel"
    assert ranked.index("create") < len(ranked)


def test_snake_case_query_finds_camel_case_code() -> None:
    assert _ids(_index().search(query_terms("get_user_by_id"), 5))[0] == "user"


def test_unknown_terms_match_nothing() -> None:
    assert _index().search(query_terms("kubernetes"), 5) == []


def test_search_returns_at_most_n() -> None:
    assert len(_index().search(query_terms("order def return"), 2)) == 2


def test_removed_document_is_not_found_and_leaves_statistics() -> None:
    bm25 = _index()
    bm25.remove("cancel")
    assert bm25.search(query_terms("restock"), 5) == []
    assert len(bm25) == 3


def test_re_adding_an_id_replaces_its_text() -> None:
    bm25 = _index()
    bm25.add("cancel", tokenize("def refund_payment(payment): pass"))
    assert bm25.search(query_terms("restock"), 5) == []
    assert _ids(bm25.search(query_terms("refund"), 5)) == ["cancel"]


def test_scores_after_updates_equal_a_fresh_build() -> None:
    bm25 = _index()
    bm25.add("cancel", tokenize("def refund_payment(payment): pass"))
    bm25.remove("log")
    fresh = _index({"create": CORPUS["create"], "user": CORPUS["user"],
                    "cancel": "def refund_payment(payment): pass"})
    for query in ("refund payment", "order items", "user id"):
        assert dict(bm25.search(query_terms(query), 5)) == dict(fresh.search(query_terms(query), 5))


def test_updates_on_top_of_a_compacted_base_equal_a_fresh_build() -> None:
    bm25 = _index()
    bm25.compact()  # everything now sits in the base arrays
    bm25.add("cancel", tokenize("def refund_payment(payment): pass"))
    bm25.remove("log")
    bm25.add("ship", tokenize("def ship_order(order): carrier.send(order.items)"))
    fresh = _index({"create": CORPUS["create"], "user": CORPUS["user"],
                    "cancel": "def refund_payment(payment): pass",
                    "ship": "def ship_order(order): carrier.send(order.items)"})
    for query in ("refund payment", "order items", "user id", "restock", "msg"):
        assert dict(bm25.search(query_terms(query), 5)) == pytest.approx(
            dict(fresh.search(query_terms(query), 5)))


def test_compaction_keeps_results_and_drops_dead_postings() -> None:
    bm25 = _index()
    bm25.remove("log")
    before = bm25.search(query_terms("order user"), 5)
    bm25.compact()
    assert bm25.search(query_terms("order user"), 5) == before
    assert "msg" not in bm25._vocab


def test_excluded_documents_are_skipped_unless_asked_for() -> None:
    bm25 = _index()
    bm25.add("generated", tokenize("def restock_generated(): restock()"), kind="generated")
    assert "generated" not in _ids(bm25.search(query_terms("restock"), 5))
    assert "generated" in _ids(bm25.search(query_terms("restock"), 5, include_excluded=True))


def test_tombstoned_record_moves_to_history() -> None:
    lexical = LexicalIndex("c")
    lexical.apply([_record("a", "def restock(): pass")])
    lexical.apply([_record("a", "def restock(): pass", status="tombstoned")])
    live_hits, _ = lexical.search(["restock"], 5)
    all_hits, _ = lexical.search(["restock"], 5, include_history=True)
    assert live_hits == []
    assert [(h.id, h.tombstoned) for h in all_hits] == [("a", True)]


def test_score_ids_gives_scores_of_unranked_documents() -> None:
    lexical = LexicalIndex("c")
    lexical.apply([_record("a", "def restock(): pass"), _record("b", "def other(): pass")])
    _, scores = lexical.search(["restock"], 1, score_ids=["b", "a", "nope"])
    assert scores["b"] == 0.0 and scores["a"] > 0 and "nope" not in scores


def test_path_and_symbol_are_searchable() -> None:
    lexical = LexicalIndex("c")
    lexical.apply([_record("a", "pass", path="src/billing/invoice.py", symbol="Invoice.total")])
    hits, _ = lexical.search(query_terms("billing invoice total"), 5)
    assert [h.id for h in hits] == ["a"]


def test_snapshot_round_trip_gives_the_same_results(tmp_path: Path) -> None:
    lexical = LexicalIndex("c", identity="x")
    lexical.apply([_record(i, t) for i, t in CORPUS.items()])
    lexical.apply([_record("old", "def restock_legacy(): pass", status="tombstoned")])
    lexical.generation = 7
    lexical.save(tmp_path / "c.npz")
    loaded = LexicalIndex.load(tmp_path / "c.npz", "c", "x")
    assert loaded is not None and loaded.generation == 7
    for query in ("restock", "cancel order", "user id"):
        expected = lexical.search(query_terms(query), 5, include_history=True)
        assert loaded.search(query_terms(query), 5, include_history=True) == expected


def test_snapshot_of_another_collection_is_refused(tmp_path: Path) -> None:
    lexical = LexicalIndex("c", identity="x")
    lexical.save(tmp_path / "c.npz")
    assert LexicalIndex.load(tmp_path / "c.npz", "c", "recreated") is None
    assert LexicalIndex.load(tmp_path / "c.npz", "other", "x") is None


def test_corrupt_snapshot_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "c.npz").write_bytes(b"not a zip")
    assert LexicalIndex.load(tmp_path / "c.npz", "c", "x") is None


def test_many_updates_compact_and_keep_counts_right(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("freshmark.adapters.lexical.bm25.COMPACT_MIN_DEAD_POSTINGS", 1000)
    bm25 = Bm25()
    for round_ in range(3):
        for i in range(500):
            text = f"def handler_{i}_{round_}(request): return respond(request)"
            bm25.add(f"d{i}", tokenize(text))
    assert len(bm25) == 500
    assert len(bm25._ids) < 3 * 500  # dead slots were dropped at least once
    assert bm25.search(query_terms("handler_5_2"), 3)[0][0] == "d5"
    assert bm25.search(["handler_5_1"], 3) == []  # the replaced text is gone
    live = [bm25._slot_of[i] for i in bm25.ids()]
    assert np.isclose(bm25._total_len, bm25._doc_len[live].sum())


def test_history_and_live_are_scored_on_one_scale() -> None:
    lexical = LexicalIndex("c")
    lexical.apply([_record(f"f{i}", f"def filler_{i}(): pass") for i in range(5)])
    lexical.apply([_record("live", "def restock(): pass"),
                   _record("old", "def restock(): pass", status="tombstoned")])
    hits, _ = lexical.search(["restock"], 5, include_history=True)
    assert {h.id for h in hits} == {"live", "old"}
    assert hits[0].score == pytest.approx(hits[1].score)

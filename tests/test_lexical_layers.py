"""The lexical channel over layers (an overlay on its base): hidden paths, combined statistics,
one index per collection shared by every branch layered on it, refresh and purges."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from freshmark.adapters.lexical.bm25 import Bm25
from freshmark.adapters.lexical.index import LexicalIndex
from freshmark.adapters.lexical.layers import LayeredLexical
from freshmark.adapters.lexical.registry import (
    forget_lexical,
    lexical_for,
    snapshot_path,
    write_lexical_snapshot,
)
from freshmark.core.manifest import Manifest
from freshmark.core.request import SearchRequest
from freshmark.core.stamp import TOMBSTONED, ChunkRecord
from freshmark.core.tokenize import tokenize
from freshmark.services.retrieval.hybrid import hybrid_search

WORDS = ("order cancel refund user invoice total ship cart item payment log message retry "
         "timeout session token").split()
# (path, stored file kind): kinds matter to the filters and to the whole-file scores.
PATHS = [(f"src/mod{i}.py", "source") for i in range(7)] + [
    ("tests/test_orders.py", "test"), ("gen/orders_pb2.py", "generated"),
    ("docs/orders.md", "doc")]
KIND_OF = dict(PATHS)


def record(doc_id: str, path: str, text: str, *, status: str = "live",
           updated_gen: int = 0) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="b", commit="c" * 40, path=path, symbol=doc_id,
                       start_line=1, end_line=2, indexed_at="2026-01-01T00:00:00Z",
                       blob_sha="b" * 40, content_sha256="d" * 64, id=doc_id, text=text,
                       status=status, file_kind=KIND_OF.get(path, "source"),
                       updated_gen=updated_gen)


def lexical_of(name: str, records: Iterable[ChunkRecord]) -> LexicalIndex:
    lexical = LexicalIndex(name)
    lexical.apply(records)
    return lexical


# -- random layered corpora and the flat index of their visible chunks ---------------------------
@dataclass
class Corpus:
    layers: list[list[ChunkRecord]]  # top first
    hidden: list[frozenset[str]]  # per layer: paths held by a layer above

    def visible(self) -> list[ChunkRecord]:
        """Each layer's chunks whose path no layer above holds, top first."""
        return [r for records, hidden in zip(self.layers, self.hidden, strict=True)
                for r in records if r.path not in hidden]

    def layered(self) -> LayeredLexical:
        return LayeredLexical([(lexical_of(f"layer{depth}", records), hidden)
                               for depth, (records, hidden)
                               in enumerate(zip(self.layers, self.hidden, strict=True))])

    def flat(self) -> LexicalIndex:
        return lexical_of("flat", self.visible())


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))


def random_corpus(seed: int, depth: int) -> Corpus:
    """A base with some tombstoned chunks, and ``depth - 1`` overlays above it, each changing
    (rewriting with more or fewer chunks, or deleting) a few files of the view below it."""
    rng = random.Random(seed)
    base = [record(f"{path}#{k}", path, _text(rng), status=TOMBSTONED if rng.random() < 0.15
                   else "live")
            for path, _ in PATHS for k in range(rng.randint(1, 3))]
    bottom_up = [base]
    for _ in range(depth - 1):
        below = Corpus(bottom_up[::-1], _hidden_top_down(bottom_up[::-1])).visible()
        changed = rng.sample([p for p, _ in PATHS], rng.randint(1, 4))
        overlay: list[ChunkRecord] = []
        for path in changed:
            kept = rng.randint(0, 3)  # 0: the file was deleted
            overlay += [record(f"{path}#{k}", path, _text(rng)) for k in range(kept)]
            overlay += [replace(r, status=TOMBSTONED) for r in below
                        if r.path == path and int(r.id.rsplit("#", 1)[1]) >= kept]
        bottom_up.append(overlay)
    layers = bottom_up[::-1]
    return Corpus(layers, _hidden_top_down(layers))


def _hidden_top_down(layers: Sequence[Sequence[ChunkRecord]]) -> list[frozenset[str]]:
    hidden, held = [], set[str]()
    for records in layers:
        hidden.append(frozenset(held))
        held |= {r.path for r in records}
    return hidden


def random_queries(seed: int) -> Iterator[tuple[list[str], dict[str, float] | None]]:
    rng = random.Random(seed + 1000)
    for _ in range(6):
        terms = rng.sample(WORDS, rng.randint(1, 3)) + (["mod3"] if rng.random() < 0.3 else [])
        weights = {terms[0]: 2.5} if rng.random() < 0.5 else None
        yield terms, weights


FILTERS = [dict(include_history=h, include_excluded=e, kinds=k)
           for h in (False, True) for e in (False, True) for k in (None, ("source", "doc"))]


def _same_hits(layered: list, flat: list) -> None:
    assert [(h.id, h.rank, h.tombstoned) for h in layered] == \
        [(h.id, h.rank, h.tombstoned) for h in flat]
    assert [h.score for h in layered] == pytest.approx([h.score for h in flat], rel=1e-5)


# -- Bm25 with hidden paths ---------------------------------------------------------------------
def _two_files() -> Bm25:
    bm25 = Bm25()
    bm25.add("a1", tokenize("def restock(order): pass"), path="src/a.py")
    bm25.add("a2", tokenize("def restock_all(): pass"), path="src/a.py")
    bm25.add("b1", tokenize("def restock_one(item): pass"), path="src/b.py")
    return bm25


def test_hidden_paths_score_zero() -> None:
    bm25 = _two_files()
    scores = bm25.scores(["restock"], hidden=frozenset({"src/a.py"}))
    assert bm25.score_of(scores, "b1") > 0
    assert [doc_id for doc_id, _ in bm25.top(scores, 5, True)] == ["b1"]
    assert bm25.score_of(scores, "a1", frozenset({"src/a.py"})) is None


def test_hidden_paths_do_not_count() -> None:
    bm25 = _two_files()
    hidden = frozenset({"src/a.py"})
    assert bm25.count(True, None, hidden) == 1
    assert bm25.stats(["restock"], hidden).documents == 1
    assert bm25.stats(["restock"], hidden).df == {"restock": 1}
    assert set(bm25.file_scores(["restock"], hidden=hidden)) == {"src/b.py"}
    assert bm25.best_per_file(bm25.scores(["restock"]), ["src/a.py", "src/b.py"],
                              hidden)[0][0] == "b1"


def test_hidden_paths_unknown_to_an_index_hide_nothing() -> None:
    bm25 = _two_files()
    assert bm25.count(True, None, frozenset({"src/elsewhere.py"})) == 3


def test_hidden_paths_do_not_count_in_passing_share() -> None:
    base = lexical_of("base", [record("a", "src/mod0.py", "order"),
                               record("g", "gen/orders_pb2.py", "order")])
    overlay = lexical_of("overlay", [record("a", "src/mod0.py", "order refund")])
    assert base.passing_share(False, False) == 0.5
    # The generated file is the only visible base chunk; the overlay's chunk passes.
    layered = LayeredLexical([(overlay, frozenset()), (base, frozenset({"src/mod0.py"}))])
    assert layered.passing_share(False, False) == 0.5
    layered = LayeredLexical([(overlay, frozenset()), (base, frozenset({"gen/orders_pb2.py",
                                                                        "src/mod0.py"}))])
    assert layered.passing_share(False, False) == 1.0
    assert len(layered) == 1


def test_hidden_mask_follows_a_compaction() -> None:
    bm25 = _two_files()
    hidden = frozenset({"src/b.py"})
    assert bm25.count(True, None, hidden) == 2
    bm25.remove("a2")
    bm25.compact()  # slots and file ids renumbered: the kept mask must not be reused
    assert bm25.count(True, None, hidden) == 1
    assert [i for i, _ in bm25.top(bm25.scores(["restock"], hidden=hidden), 5, True)] == ["a1"]


def test_plain_search_equals_search_with_nothing_hidden() -> None:
    corpus = random_corpus(seed=3, depth=1)
    lexical = corpus.flat()
    single = LayeredLexical([(lexical, frozenset())])
    for terms, weights in random_queries(3):
        for options in FILTERS:
            expected = lexical.search_with_files(terms, 50, 5, weights=weights, **options)
            assert single.search_with_files(terms, 50, 5, weights=weights, **options) == expected


# -- a layered search is the flat search of the visible chunks ----------------------------------
SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_chunk_hits_equal_flat_hits_over_visible_chunks(seed: int) -> None:
    corpus = random_corpus(seed, depth=2 + seed % 2)
    layered, flat = corpus.layered(), corpus.flat()
    every_id = [r.id for records in corpus.layers for r in records] + ["nope"]
    for terms, weights in random_queries(seed):
        for options in FILTERS:
            hits, extra = layered.search(terms, 100, score_ids=every_id, weights=weights,
                                         **options)
            flat_hits, flat_extra = flat.search(terms, 100, score_ids=every_id,
                                                weights=weights, **options)
            _same_hits(hits, flat_hits)
            assert extra == pytest.approx(flat_extra, rel=1e-5)
            top, _ = layered.search(terms, 3, weights=weights, **options)
            flat_top, _ = flat.search(terms, 3, weights=weights, **options)
            assert [h.score for h in top] == pytest.approx([h.score for h in flat_top], rel=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_file_matches_equal_flat_file_matches(seed: int) -> None:
    corpus = random_corpus(seed, depth=2 + seed % 2)
    layered, flat = corpus.layered(), corpus.flat()
    for terms, weights in random_queries(seed):
        for options in FILTERS:
            _, _, files = layered.search_with_files(terms, 20, 4, weights=weights, **options)
            _, _, flat_files = flat.search_with_files(terms, 20, 4, weights=weights, **options)
            assert files.scores == pytest.approx(flat_files.scores, rel=1e-6)
            _same_hits(files.best_chunks, flat_files.best_chunks)
            assert files.best_chunk_scores == pytest.approx(flat_files.best_chunk_scores,
                                                            rel=1e-5)


def test_chain_of_three_layers_hides_paths_held_above() -> None:
    a, b, c = "src/mod0.py", "src/mod1.py", "src/mod2.py"
    base = lexical_of("base", [record("a#0", a, "refund base"), record("b#0", b, "refund base"),
                               record("c#0", c, "refund base")])
    middle = lexical_of("middle", [record("a#0", a, "refund middle"),
                                   record("b#0", b, "refund middle")])
    top = lexical_of("top", [record("a#0", a, "refund top"),
                             record("b#0", b, "refund", status=TOMBSTONED)])
    layered = LayeredLexical([(top, frozenset()), (middle, frozenset({a, b})),
                              (base, frozenset({a, b}))])
    hits, _ = layered.search(["refund"], 10, include_history=True)
    found = {h.id: h.tombstoned for h in hits}
    assert found == {"a#0": False, "b#0": True, "c#0": False}
    texts, _ = layered.search(["top", "middle", "base"], 10, include_history=True)
    assert {h.id for h in texts} == {"a#0", "c#0"}  # a from the top, c from the base only


# -- refresh, sharing, purges --------------------------------------------------------------------
class FakeCollection:
    """A branch collection as the lexical index reads it, written like index runs."""

    def __init__(self, name: str, records: Iterable[ChunkRecord] = ()) -> None:
        self.name = name
        self.records: dict[str, ChunkRecord] = {}
        self.manifest = Manifest(repo="r", repo_key="id:r", branch=name, embedder="e",
                                 collection=name, created_at="2026-01-01T00:00:00Z")
        self.run(records)

    def run(self, records: Iterable[ChunkRecord] = (), delete: Iterable[str] = ()) -> None:
        generation = self.manifest.generation + 1
        self.records |= {r.id: replace(r, updated_gen=generation) for r in records}
        purged = False
        for doc_id in delete:
            purged = self.records.pop(doc_id, None) is not None or purged
        self.manifest = replace(self.manifest, generation=generation,
                                purged_generation=generation if purged
                                else self.manifest.purged_generation)

    # what a branch of one layer offers the lexical engine (``ports.BranchView``)
    collection_id = ""
    below = None

    @property
    def own(self) -> FakeCollection:
        return self

    def layers(self) -> list[tuple[FakeCollection, frozenset[str]]]:
        return [(self, frozenset())]

    def reload_manifest(self) -> Manifest:
        return self.manifest

    def manifest_for_request(self) -> Manifest:
        return self.manifest

    def iter_records(self, where: dict[str, Any] | None = None,
                     include_text: bool = True) -> list[ChunkRecord]:
        floor = where["updated_gen"]["$gt"] if where else -1
        return [r for r in self.records.values() if r.updated_gen > floor]

    def get(self, ids: Sequence[str], include_text: bool = True) -> list[ChunkRecord]:
        return [self.records[i] for i in ids if i in self.records]


class FakeLayeredIndex:
    """The read side of a layered store: layers with hidden paths, shadowed records left out."""

    def __init__(self, *collections: FakeCollection) -> None:
        self.collections = list(collections)
        self.name = collections[0].name
        self.own = collections[0]
        self.manifest = collections[0].manifest

    def layers(self) -> list[tuple[FakeCollection, frozenset[str]]]:
        paths = [{r.path for r in c.records.values()} for c in self.collections]
        return [(c, frozenset().union(*paths[:depth]))
                for depth, c in enumerate(self.collections)]

    def get(self, ids: Sequence[str], include_text: bool = True) -> list[ChunkRecord]:
        found: dict[str, ChunkRecord] = {}
        for collection, hidden in self.layers():
            for r in collection.get(ids):
                if r.path not in hidden:
                    found.setdefault(r.id, r)
        return list(found.values())


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    forget_lexical()
    yield
    forget_lexical()


def _base() -> FakeCollection:
    return FakeCollection("base", [record("a#0", "src/mod0.py", "def refund(order): pass"),
                                   record("b#0", "src/mod1.py", "def refund_all(): pass")])


@pytest.mark.usefixtures("fresh_cache")
def test_base_lexical_index_is_shared_by_base_and_overlay_searches() -> None:
    base = _base()
    first = FakeCollection("first", [record("a#0", "src/mod0.py", "def refund(o): retry()")])
    second = FakeCollection("second", [record("b#0", "src/mod1.py", "def refund_all(): 1")])
    base_lexical = lexical_for(base, None)  # type: ignore[arg-type]
    for overlay in (first, second):
        layered = lexical_for(FakeLayeredIndex(overlay, base), None)  # type: ignore[arg-type]
        assert isinstance(layered, LayeredLexical)
        assert layered.indexes[1] is base_lexical
    assert lexical_for(base, None) is base_lexical  # type: ignore[arg-type]


@pytest.mark.usefixtures("fresh_cache")
def test_layered_lexical_for_saves_each_layers_snapshot(tmp_path: Path) -> None:
    base, overlay = _base(), FakeCollection("overlay", [record("c#0", "src/mod2.py", "x")])
    lexical_for(FakeLayeredIndex(overlay, base), tmp_path)  # type: ignore[arg-type]
    assert snapshot_path(tmp_path, "base").exists()
    assert snapshot_path(tmp_path, "overlay").exists()


def test_indexer_snapshot_of_a_layered_index_is_its_own_collections(tmp_path: Path) -> None:
    base, overlay = _base(), FakeCollection("overlay", [record("c#0", "src/mod2.py", "x")])
    assert write_lexical_snapshot(FakeLayeredIndex(overlay, base), tmp_path) == 1  # type: ignore
    assert snapshot_path(tmp_path, "overlay").exists()
    assert not snapshot_path(tmp_path, "base").exists()


def test_refresh_takes_new_hidden_sets() -> None:
    base, overlay = _base(), FakeCollection("overlay")
    source = FakeLayeredIndex(overlay, base)
    layered = LayeredLexical([(LexicalIndex("overlay"), frozenset()),
                              (LexicalIndex("base"), frozenset())])
    layered.refresh(source)
    assert {h.id for h in layered.search(["refund"], 5)[0]} == {"a#0", "b#0"}
    overlay.run([record("b#0", "src/mod1.py", "def settle(): pass")])
    layered.refresh(source)
    assert layered.hidden == [frozenset(), frozenset({"src/mod1.py"})]
    assert {h.id for h in layered.search(["refund"], 5)[0]} == {"a#0"}
    assert {h.id for h in layered.search(["settle"], 5)[0]} == {"b#0"}


def test_refresh_follows_a_re_layered_branch() -> None:
    old_base, new_base = _base(), FakeCollection("new-base", [record("n#0", "src/mod5.py",
                                                                     "def refund_new(): 1")])
    overlay = FakeCollection("overlay", [record("c#0", "src/mod2.py", "refund")])
    layered = LayeredLexical([(LexicalIndex("overlay"), frozenset()),
                              (LexicalIndex("base"), frozenset())])
    layered.refresh(FakeLayeredIndex(overlay, old_base))
    layered.refresh(FakeLayeredIndex(overlay, new_base))
    assert [x.collection for x in layered.indexes] == ["overlay", "new-base"]
    assert {h.id for h in layered.search(["refund"], 5)[0]} == {"c#0", "n#0"}


def test_purged_generation_forces_a_rebuild() -> None:
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "def refund(): pass"),
                                         record("b#0", "src/mod1.py", "def refund(): pass")])
    lexical = LexicalIndex("overlay")
    lexical.refresh(overlay)
    overlay.run(delete=["b#0"])  # re-layered onto a moved base: records deleted, not tombstoned
    assert overlay.manifest.purged_generation == overlay.manifest.generation
    lexical.refresh(overlay)
    assert "b#0" not in lexical.live and "a#0" in lexical.live
    assert lexical.generation == overlay.manifest.generation


def test_a_purge_already_seen_does_not_rebuild_again() -> None:
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "x")])
    overlay.run(delete=["a#0"])
    lexical = LexicalIndex("overlay")
    lexical.refresh(overlay)
    overlay.run([record("b#0", "src/mod1.py", "y")])
    assert lexical.refresh(overlay) == 1  # only the new record, not a rebuild


def test_forget_on_a_layered_index_leaves_lower_layers_alone() -> None:
    base = lexical_of("base", [record("a#0", "src/mod0.py", "refund")])
    overlay = lexical_of("overlay", [record("c#0", "src/mod2.py", "refund")])
    layered = LayeredLexical([(overlay, frozenset()), (base, frozenset())])
    layered.forget(["a#0", "c#0"])
    assert "a#0" in base.live and "c#0" not in overlay.live


@pytest.mark.usefixtures("fresh_cache")
def test_bm25_search_on_a_layered_index_returns_visible_chunks() -> None:
    base = _base()
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "def settle(): pass")])
    results, _ = hybrid_search(FakeLayeredIndex(overlay, base), None,
                               SearchRequest.build("refund", k=5, channels="bm25"))
    assert [c.record.id for c in results] == ["b#0"]


@pytest.mark.usefixtures("fresh_cache")
def test_base_records_of_a_newer_generation_are_not_applied_to_the_overlay() -> None:
    base = _base()
    overlay = FakeCollection("overlay", [record("c#0", "src/mod2.py", "def other(): pass")])
    layered_index = FakeLayeredIndex(overlay, base)
    lexical_for(layered_index, None)  # type: ignore[arg-type]
    # A base run in flight: its records carry the base's next generation, above the overlay's.
    base.records["b#0"] = replace(base.records["b#0"], text="def refund_all(): retry()",
                                  updated_gen=base.manifest.generation + 5)
    hybrid_search(layered_index, None, SearchRequest.build("refund", k=5, channels="bm25"))  # type: ignore[arg-type]
    overlay_lexical = lexical_for(overlay, None)  # type: ignore[arg-type]
    assert isinstance(overlay_lexical, LexicalIndex) and "b#0" not in overlay_lexical.live
    assert overlay_lexical.generation == overlay.manifest.generation

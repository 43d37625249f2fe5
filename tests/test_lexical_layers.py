"""The lexical channel over layers (an overlay on its base): each layer's own index, the paths
held above hidden, filters, refresh when a branch is re-layered, purges, and a base's index
shared by every branch layered on it. Random layered corpora are checked against the chunks
the branch sees, computed here."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from freshmark.adapters.lexical.tantivy_engine import (
    TantivyChannel,
    TantivyEngine,
    index_directory,
)
from freshmark.adapters.lexical.tantivy_store import (
    STATE_FILE,
    TantivyCollection,
)
from freshmark.core.classify import search_kind
from freshmark.core.kinds import EXCLUDED_FILE_KINDS
from freshmark.core.lexical_document import document_tokens
from freshmark.core.manifest import Manifest
from freshmark.core.request import SearchRequest
from freshmark.core.stamp import TOMBSTONED, ChunkRecord
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


# -- random layered corpora and the chunks their branch sees ------------------------------------
@dataclass
class Corpus:
    layers: list[list[ChunkRecord]]  # top first
    hidden: list[frozenset[str]]  # per layer: paths held by a layer above

    def visible(self) -> list[ChunkRecord]:
        """Each layer's chunks whose path no layer above holds, top first."""
        return [r for records, hidden in zip(self.layers, self.hidden, strict=True)
                for r in records if r.path not in hidden]

    def branch(self, seed: int) -> FakeLayeredIndex:
        return FakeLayeredIndex(*[FakeCollection(f"s{seed}-layer{depth}", records)
                                  for depth, records in enumerate(self.layers)])


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


FILTERS = [dict(include_history=h, include_excluded=e, kinds=k)
           for h in (False, True) for e in (False, True) for k in (None, ("source", "doc"))]


def _passes(r: ChunkRecord, include_history: bool, include_excluded: bool,
            kinds: Sequence[str] | None) -> bool:
    kind = search_kind(r.path, r.file_kind)
    if not include_history and r.status == TOMBSTONED:
        return False
    if kinds is not None:
        return kind in kinds
    return include_excluded or kind not in EXCLUDED_FILE_KINDS


def _matches(r: ChunkRecord, terms: Iterable[str]) -> bool:
    return bool(set(terms) & set(document_tokens(r)))


@pytest.fixture(autouse=True)
def fresh_engine() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


def channel(view: Any, cache_dir: Path | None = None) -> TantivyChannel:
    return TantivyEngine(cache_dir).channel(view)


def ids(hits: Iterable[Any]) -> set[str]:
    return {h.id for h in hits}


# -- a layered search finds exactly the visible chunks that match --------------------------------
SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_chunk_hits_are_the_visible_chunks_that_match(seed: int) -> None:
    corpus = random_corpus(seed, depth=2 + seed % 2)
    layered = channel(corpus.branch(seed))
    every_id = [r.id for records in corpus.layers for r in records] + ["nope"]
    for terms, weights in random_queries(seed):
        for options in FILTERS:
            hits, extra = layered.search(terms, 100, score_ids=every_id, weights=weights,
                                         **options)
            assert ids(hits) == {r.id for r in corpus.visible()
                                 if _passes(r, **options) and _matches(r, terms)}
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            assert all(h.tombstoned == (h.id in {r.id for r in corpus.visible()
                                                 if r.status == TOMBSTONED}) for h in hits)
            shown = {r.id for r in corpus.visible()
                     if options["include_history"] or r.status != TOMBSTONED}
            assert set(extra) == shown  # asked by id: kinds do not apply, hidden ones absent


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_file_matches_are_the_visible_live_files_that_match(seed: int) -> None:
    corpus = random_corpus(seed, depth=2 + seed % 2)
    layered = channel(corpus.branch(seed))
    for terms, weights in random_queries(seed):
        for options in FILTERS:
            _, _, files = layered.search_with_files(terms, 20, 4, weights=weights, **options)
            live = [r for r in corpus.visible() if r.status != TOMBSTONED
                    and _passes(r, False, True, options["kinds"])]
            assert set(files.scores) == {r.path for r in live if _matches(r, terms)}
            best = {h.id: h for h in files.best_chunks}
            assert set(best) <= {r.id for r in live if _matches(r, terms)}
            assert len({r.path for r in live if r.id in best}) == len(best)


def test_chain_of_three_layers_hides_paths_held_above() -> None:
    a, b, c = "src/mod0.py", "src/mod1.py", "src/mod2.py"
    base = FakeCollection("base", [record("a#0", a, "refund base"), record("b#0", b, "refund base"),
                                   record("c#0", c, "refund base")])
    middle = FakeCollection("middle", [record("a#0", a, "refund middle"),
                                       record("b#0", b, "refund middle")])
    top = FakeCollection("top", [record("a#0", a, "refund top"),
                                 record("b#0", b, "refund", status=TOMBSTONED)])
    layered = channel(FakeLayeredIndex(top, middle, base))
    hits, _ = layered.search(["refund"], 10, include_history=True)
    assert {h.id: h.tombstoned for h in hits} == {"a#0": False, "b#0": True, "c#0": False}
    texts, _ = layered.search(["top", "middle", "base"], 10, include_history=True)
    assert ids(texts) == {"a#0", "c#0"}  # a from the top, c from the base only


# -- refresh, sharing, purges --------------------------------------------------------------------
def _base() -> FakeCollection:
    return FakeCollection("base", [record("a#0", "src/mod0.py", "def refund(order): pass"),
                                   record("b#0", "src/mod1.py", "def refund_all(): pass")])


def test_a_base_index_on_disk_is_shared_by_base_and_overlay_searches(tmp_path: Path) -> None:
    base = _base()
    first = FakeCollection("first", [record("a#0", "src/mod0.py", "def refund(o): retry()")])
    second = FakeCollection("second", [record("b#0", "src/mod1.py", "def refund_all(): 1")])
    for overlay in (first, second):
        channel(FakeLayeredIndex(overlay, base), tmp_path)
    held = {name: TantivyCollection(name, index_directory(tmp_path, name)).searcher().num_docs
            for name in ("base", "first", "second")}
    assert held == {"base": 2, "first": 1, "second": 1}  # each layer's own chunks, once


def test_a_run_on_an_overlay_catches_up_its_own_collection_only(tmp_path: Path) -> None:
    base, overlay = _base(), FakeCollection("overlay", [record("c#0", "src/mod2.py", "x")])
    counts = TantivyEngine(tmp_path).after_run(FakeLayeredIndex(overlay, base), True)  # type: ignore
    assert (index_directory(tmp_path, "overlay") / STATE_FILE).exists()
    assert not index_directory(tmp_path, "base").exists()
    assert counts is None  # the base's chunks are not counted from a fetch of the base


def test_a_run_on_an_overlay_counts_the_chunks_its_branch_shows(tmp_path: Path) -> None:
    base, overlay = _base(), FakeCollection("overlay", [
        record("a#0", "src/mod0.py", "def refund(order): settle()"),
        record("c#0", "src/mod2.py", "x", status=TOMBSTONED)])
    engine = TantivyEngine(tmp_path)
    engine.after_run(base, True)  # type: ignore[arg-type]  # the base's own run
    counts = engine.after_run(FakeLayeredIndex(overlay, base), True)  # type: ignore[arg-type]
    # b#0 from the base, a#0 from the overlay (the base's a#0 is hidden), c#0 tombstoned.
    assert counts is not None and (counts.live, counts.tombstoned) == (2, 1)


def test_refresh_takes_new_hidden_sets() -> None:
    base, overlay = _base(), FakeCollection("overlay")
    source = FakeLayeredIndex(overlay, base)
    assert ids(channel(source).search(["refund"], 5)[0]) == {"a#0", "b#0"}
    overlay.run([record("b#0", "src/mod1.py", "def settle(): pass")])
    layered = channel(source)
    assert ids(layered.search(["refund"], 5)[0]) == {"a#0"}
    assert ids(layered.search(["settle"], 5)[0]) == {"b#0"}


def test_refresh_follows_a_re_layered_branch() -> None:
    old_base, new_base = _base(), FakeCollection("new-base", [record("n#0", "src/mod5.py",
                                                                     "def refund_new(): 1")])
    overlay = FakeCollection("overlay", [record("c#0", "src/mod2.py", "refund")])
    layered = channel(FakeLayeredIndex(overlay, old_base))
    layered.refresh(FakeLayeredIndex(overlay, new_base))  # type: ignore[arg-type]
    assert ids(layered.search(["refund"], 5)[0]) == {"c#0", "n#0"}


def test_purged_generation_forces_a_rebuild() -> None:
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "def refund(): pass"),
                                         record("b#0", "src/mod1.py", "def refund(): pass")])
    lexical = TantivyCollection("overlay", None)
    lexical.refresh(overlay)  # type: ignore[arg-type]
    overlay.run(delete=["b#0"])  # re-layered onto a moved base: records deleted, not tombstoned
    assert overlay.manifest.purged_generation == overlay.manifest.generation
    lexical.refresh(overlay)  # type: ignore[arg-type]
    hits, _ = TantivyChannel([(lexical, frozenset())], None).search(["refund"], 5,
                                                                    include_history=True)
    assert ids(hits) == {"a#0"}
    assert lexical.generation == overlay.manifest.generation


def test_a_purge_already_seen_does_not_rebuild_again() -> None:
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "x")])
    overlay.run(delete=["a#0"])
    lexical = TantivyCollection("overlay", None)
    lexical.refresh(overlay)  # type: ignore[arg-type]
    overlay.run([record("b#0", "src/mod1.py", "y")])
    assert lexical.refresh(overlay) == 1  # type: ignore[arg-type]  # the new record only


def test_forget_on_a_layered_channel_leaves_lower_layers_alone() -> None:
    base = FakeCollection("base", [record("a#0", "src/mod0.py", "refund")])
    overlay = FakeCollection("overlay", [record("c#0", "src/mod2.py", "refund")])
    channel(FakeLayeredIndex(overlay, base)).forget(["a#0", "c#0"])
    assert ids(channel(base).search(["refund"], 5)[0]) == {"a#0"}
    assert ids(channel(overlay).search(["refund"], 5)[0]) == set()


def test_lexical_search_on_a_layered_index_returns_visible_chunks() -> None:
    base = _base()
    overlay = FakeCollection("overlay", [record("a#0", "src/mod0.py", "def settle(): pass")])
    results, _ = hybrid_search(FakeLayeredIndex(overlay, base), None,  # type: ignore[arg-type]
                               SearchRequest.build("refund", k=5, channels="bm25"))
    assert [c.record.id for c in results] == ["b#0"]


def test_base_records_of_a_newer_generation_are_not_applied_to_the_overlay() -> None:
    base = _base()
    overlay = FakeCollection("overlay", [record("c#0", "src/mod2.py", "def other(): pass")])
    layered_index = FakeLayeredIndex(overlay, base)
    channel(layered_index)
    # A base run in flight: its records carry the base's next generation, above the overlay's.
    base.records["b#0"] = replace(base.records["b#0"], text="def refund_all(): retry()",
                                  updated_gen=base.manifest.generation + 5)
    hybrid_search(layered_index, None,  # type: ignore[arg-type]
                  SearchRequest.build("refund", k=5, channels="bm25"))
    own = channel(overlay)
    assert ids(own.search(["refund", "retry"], 5, include_history=True)[0]) == set()
    assert own.refresh(overlay) == 0  # type: ignore[arg-type]  # still at its generation


def test_a_run_removes_the_snapshots_of_the_numpy_engine(tmp_path: Path) -> None:
    old = tmp_path / "lexical"
    old.mkdir()
    (old / "fm-shop-main-0123.npz").write_bytes(b"PK")
    TantivyEngine(tmp_path).after_run(_base(), True)  # type: ignore[arg-type]
    assert not old.exists()

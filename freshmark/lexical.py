"""The lexical channel: BM25 over code-aware tokens, kept in step with a branch collection.

Chroma has no BM25, so each query process keeps this index in memory per collection and follows
the collection by generation: ``refresh`` reads the manifest generation, fetches only chunks
with a higher ``updated_gen``, and records the generation read before fetching. Tombstoned
chunks live in a separate ``history`` index. Design, guarantees and limits:
docs/lexical-index.md.
"""

from __future__ import annotations

import gc
import json
import math
import os
import threading
import zipfile
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from freshmark.classify import search_kind
from freshmark.stamp import EXCLUDED_FILE_KINDS, FILE_KINDS, TOMBSTONED, ChunkRecord
from freshmark.tokenize import iter_tokens

K1 = 1.2
B = 0.75
SNAPSHOT_FORMAT = 3
# File kinds as small integers, one per document slot (filters are a vectorised lookup).
KIND_CODES = {kind: code for code, kind in enumerate(FILE_KINDS)}
_EXCLUDED_CODES = np.array(sorted(KIND_CODES[k] for k in EXCLUDED_FILE_KINDS), dtype=np.uint8)
TermWeights = dict[str, float]
# Compact once dead postings outnumber live ones (and there are enough to matter).
COMPACT_MIN_DEAD_POSTINGS = 50_000


class ChunkSource(Protocol):
    """What the lexical index needs of a branch collection (``store.BranchIndex`` has it)."""

    @property
    def name(self) -> str: ...

    def reload_manifest(self) -> Any: ...

    def iter_records(
        self, where: dict[str, Any] | None = None, include_text: bool = True
    ) -> Iterable[ChunkRecord]: ...


def document_tokens(record: ChunkRecord) -> list[str]:
    """What BM25 indexes for a chunk: its path, its symbol name and its text."""
    return [*iter_tokens(record.path), *iter_tokens(record.symbol), *iter_tokens(record.text)]


@dataclass(frozen=True)
class CorpusStats:
    """What BM25's idf and length normalisation read: documents, total length, term df."""

    documents: int
    total_length: float
    df: dict[str, int]

    def __add__(self, other: CorpusStats) -> CorpusStats:
        terms = self.df.keys() | other.df.keys()
        return CorpusStats(self.documents + other.documents,
                           self.total_length + other.total_length,
                           {t: self.df.get(t, 0) + other.df.get(t, 0) for t in terms})


class Bm25:
    """An incrementally updatable BM25 index over documents keyed by string id.

    Postings live in two tiers: a *base* of flat numpy arrays (CSR, term-major and
    document-major) built in one go by a load or a compaction, and a *delta* of per-term
    append-only arrays for documents added since. Every ``add`` takes a fresh slot; ``remove``
    marks the slot dead and corrects document frequencies at once, its postings stay (masked)
    until dead ones outnumber live ones, when ``compact`` folds everything into a new base.
    Scores are Lucene's BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + .5)/(df + .5))) over
    live documents only.
    """

    def __init__(self) -> None:
        self.load_arrays(_empty_arrays())

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def vocabulary_size(self) -> int:
        return len(self._vocab)

    def ids(self) -> list[str]:
        return list(self._slot_of)

    def count(self, include_excluded: bool = True, kinds: Iterable[str] | None = None) -> int:
        """Live documents, optionally only those of ``kinds`` or without excluded kinds."""
        if include_excluded and kinds is None:
            return len(self._slot_of)
        used = len(self._ids)
        return int(np.count_nonzero(self._alive[:used] & self._kind_mask(used, kinds,
                                                                          include_excluded)))

    def _kind_mask(self, used: int, kinds: Iterable[str] | None,
                   include_excluded: bool = False) -> np.ndarray:
        """Slots whose kind is allowed: one of ``kinds``, or (None) any but the excluded ones
        unless ``include_excluded``."""
        codes = self._kind[:used]
        if kinds is None:
            return np.ones(used, bool) if include_excluded else ~np.isin(codes, _EXCLUDED_CODES)
        wanted = np.array([KIND_CODES[k] for k in kinds if k in KIND_CODES], dtype=np.uint8)
        return np.isin(codes, wanted)

    # -- updates ----------------------------------------------------------------------------
    def add(self, doc_id: str, tokens: Iterable[str], kind: str = "source",
            path: str = "") -> None:
        """Index (or re-index) one document of file kind ``kind`` from file ``path``; an id
        already present is replaced."""
        self.remove(doc_id)
        counts = Counter(tokens)
        term_ids = np.array([self._term_id(t) for t in counts], dtype=np.int32)
        tfs = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        slot = self._new_slot(doc_id, float(tfs.sum()), KIND_CODES.get(kind, 0),
                              self._file_id(path))
        self._delta_fwd[slot] = (term_ids, tfs)
        for term_id, tf in zip(term_ids.tolist(), tfs.tolist(), strict=True):
            if term_id not in self._delta_slots:
                self._delta_slots[term_id], self._delta_tfs[term_id] = array("i"), array("f")
            self._delta_slots[term_id].append(slot)
            self._delta_tfs[term_id].append(tf)
            self._df[term_id] += 1
        self._live_postings += len(term_ids)

    def remove(self, doc_id: str) -> bool:
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return False
        term_ids, _ = self._forward(slot)
        for term_id in term_ids.tolist():
            self._df[term_id] -= 1
        self._alive[slot] = False
        self._total_len -= float(self._doc_len[slot])
        self._live_postings -= len(term_ids)
        self._dead_postings += len(term_ids)
        self._delta_fwd.pop(slot, None)
        self._ids[slot] = None
        if self._dead_postings > max(COMPACT_MIN_DEAD_POSTINGS, self._live_postings):
            self.compact()
        return True

    def _forward(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        if slot < self._base_docs:
            start, stop = self._fwd_ptr[slot], self._fwd_ptr[slot + 1]
            return self._fwd_terms[start:stop], self._fwd_tfs[start:stop]
        return self._delta_fwd[slot]

    def _term_id(self, term: str) -> int:
        term_id = self._vocab.get(term)
        if term_id is None:
            term_id = self._vocab[term] = len(self._vocab)
            self._df.append(0)
        return term_id

    def _file_id(self, path: str) -> int:
        file_id = self._file_ids.get(path)
        if file_id is None:
            file_id = self._file_ids[path] = len(self._paths)
            self._paths.append(path)
        return file_id

    def _new_slot(self, doc_id: str, length: float, kind_code: int, file_id: int) -> int:
        slot = len(self._ids)
        if slot >= len(self._doc_len):
            grown = max(1024, 2 * len(self._doc_len))
            self._doc_len = np.resize(self._doc_len, grown)
            self._alive = np.resize(self._alive, grown)
            self._kind = np.resize(self._kind, grown)
            self._file = np.resize(self._file, grown)
        self._ids.append(doc_id)
        self._slot_of[doc_id] = slot
        self._doc_len[slot] = length
        self._alive[slot] = True
        self._kind[slot] = kind_code
        self._file[slot] = file_id
        self._total_len += length
        return slot

    # -- scoring ----------------------------------------------------------------------------
    def stats(self, terms: Sequence[str]) -> CorpusStats:
        """Live document count, total length and per-term document frequency for ``terms``."""
        df = {t: self._df[i] for t in terms if (i := self._vocab.get(t)) is not None}
        return CorpusStats(len(self._slot_of), self._total_len, df)

    def _postings(self, term_id: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        if term_id < self._base_terms:
            start, stop = self._inv_ptr[term_id], self._inv_ptr[term_id + 1]
            yield self._inv_slots[start:stop], self._inv_tfs[start:stop]
        if term_id in self._delta_slots:  # copied: the arrays may grow after we return
            yield (np.array(self._delta_slots[term_id], dtype=np.int32),
                   np.array(self._delta_tfs[term_id], dtype=np.float32))

    def scores(self, terms: Sequence[str], stats: CorpusStats | None = None,
               weights: TermWeights | None = None) -> np.ndarray:
        """BM25 score of every slot for the distinct query ``terms`` (dead slots score 0).

        ``stats`` replaces this index's own statistics, so that two indexes scored with the same
        (combined) statistics give comparable scores. ``weights`` multiplies each term's part
        (1.0 for a term it does not name): a long query weighs its identifiers above its prose.
        """
        scores = np.zeros(len(self._ids), dtype=np.float32)
        stats = stats or self.stats(terms)
        if not stats.documents:
            return scores
        avg_len = max(stats.total_length / stats.documents, 1.0)
        for term in dict.fromkeys(terms):
            term_id, df = self._vocab.get(term), stats.df.get(term, 0)
            if term_id is None or df <= 0:
                continue
            idf = math.log(1.0 + (stats.documents - df + 0.5) / (df + 0.5))
            idf *= weights.get(term, 1.0) if weights else 1.0
            for slots, tfs in self._postings(term_id):
                norm = K1 * (1.0 - B + B * self._doc_len[slots] / avg_len)
                scores[slots] += idf * tfs * (K1 + 1.0) / (tfs + norm)
        scores[~self._alive[: len(self._ids)]] = 0.0
        return scores

    def file_scores(self, terms: Sequence[str], weights: TermWeights | None = None,
                    kinds: Iterable[str] | None = None) -> dict[str, float]:
        """BM25 over whole files: each live file is one document made of its chunks (their
        term counts and lengths summed), with file-level document frequencies. A file's
        evidence spread over many chunks adds up, where chunk BM25 sees only one chunk."""
        used = len(self._ids)
        live = self._alive[:used] & self._kind_mask(used, kinds, include_excluded=True)
        if not live.any():
            return {}
        files = self._file[:used]
        n_files_total = len(self._paths)
        file_len = np.bincount(files[live], self._doc_len[:used][live], minlength=n_files_total)
        present = file_len > 0
        documents = int(np.count_nonzero(present))
        avg_len = max(float(file_len[present].sum()) / max(documents, 1), 1.0)
        scores = np.zeros(n_files_total, dtype=np.float64)
        for term in dict.fromkeys(terms):
            term_id = self._vocab.get(term)
            if term_id is None:
                continue
            tf = np.zeros(n_files_total, dtype=np.float64)
            for slots, tfs in self._postings(term_id):
                keep = live[slots]
                tf += np.bincount(files[slots[keep]], tfs[keep], minlength=n_files_total)
            df = int(np.count_nonzero(tf))
            if not df:
                continue
            idf = math.log(1.0 + (documents - df + 0.5) / (df + 0.5))
            idf *= weights.get(term, 1.0) if weights else 1.0
            hit = tf > 0
            norm = K1 * (1.0 - B + B * file_len[hit] / avg_len)
            scores[hit] += idf * tf[hit] * (K1 + 1.0) / (tf[hit] + norm)
        hits = np.flatnonzero(scores > 0)
        return {self._paths[i]: float(scores[i]) for i in hits.tolist()}

    def search(
        self, terms: Sequence[str], n: int, include_excluded: bool = False,
        kinds: Iterable[str] | None = None, weights: TermWeights | None = None,
    ) -> list[tuple[str, float]]:
        """The ``n`` best (id, score) pairs with a positive score, best first (ties by slot)."""
        return self.top(self.scores(terms, weights=weights), n, include_excluded, kinds)

    def top(self, scores: np.ndarray, n: int, include_excluded: bool,
            kinds: Iterable[str] | None = None) -> list[tuple[str, float]]:
        if n <= 0:
            return []
        if kinds is not None or not include_excluded:
            scores = np.where(self._kind_mask(len(scores), kinds, include_excluded), scores, 0.0)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > n:
            hits = hits[np.argpartition(-scores[hits], n - 1)[:n]]
        order = sorted(hits.tolist(), key=lambda slot: (-float(scores[slot]), slot))
        return [(self._ids[slot] or "", float(scores[slot])) for slot in order]

    def best_per_file(self, scores: np.ndarray, paths: Sequence[str]
                      ) -> list[tuple[str, float, str]]:
        """(id, score, path) of the best-scoring live document of each of ``paths`` (in that
        order; paths without a positive score are skipped)."""
        wanted = {self._file_ids[p]: p for p in paths if p in self._file_ids}
        if not wanted:
            return []
        hits = np.flatnonzero(scores > 0)
        hits = hits[np.isin(self._file[hits], np.fromiter(wanted, dtype=np.int32))]
        hits = hits[np.argsort(-scores[hits], kind="stable")]
        files, first = np.unique(self._file[hits], return_index=True)
        best = {int(f): int(hits[i]) for f, i in zip(files.tolist(), first.tolist(), strict=True)}
        return [(self._ids[best[f]] or "", float(scores[best[f]]), path)
                for f, path in wanted.items() if f in best]

    def score_of(self, scores: np.ndarray, doc_id: str) -> float | None:
        slot = self._slot_of.get(doc_id)
        return None if slot is None else float(scores[slot])

    # -- compaction and snapshots -------------------------------------------------------------
    def compact(self) -> None:
        """Fold delta and base into a new base of live documents only (drops unused terms)."""
        self.load_arrays(self.to_arrays())

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Live documents as flat arrays (the snapshot form): document-major postings, and the
        same postings term-major, so that loading needs no sort."""
        slots = list(self._slot_of.values())
        forward = [self._forward(s) for s in slots]
        terms = np.concatenate([f[0] for f in forward]) if forward else np.zeros(0, np.int32)
        tfs = np.concatenate([f[1] for f in forward]) if forward else np.zeros(0, np.float32)
        used = np.unique(terms)
        remap = np.full(len(self._vocab), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        terms = remap[terms]
        lengths = np.array([len(f[0]) for f in forward], dtype=np.int64)
        doc_of = np.repeat(np.arange(len(slots), dtype=np.int32), lengths)
        order = np.argsort(terms, kind="stable")
        vocab = list(self._vocab)
        used_files, file_of = np.unique(self._file[slots], return_inverse=True)
        return {
            "ids": _text_array(json.dumps(list(self._slot_of))),
            "vocab": _text_array("\n".join(vocab[t] for t in used.tolist())),
            "fwd_ptr": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            "fwd_terms": terms.astype(np.int32),
            "fwd_tfs": tfs.astype(np.float32),
            "inv_ptr": np.searchsorted(terms[order], np.arange(len(used) + 1)).astype(np.int64),
            "inv_slots": doc_of[order],
            "inv_tfs": tfs[order].astype(np.float32),
            "doc_len": self._doc_len[slots].astype(np.float32),
            "kind": self._kind[slots].astype(np.uint8),
            "file": file_of.astype(np.int32),
            "paths": _text_array(json.dumps([self._paths[f] for f in used_files.tolist()])),
        }

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Replace the whole index with the documents held in ``to_arrays`` form."""
        ids: list[str | None] = json.loads(_array_text(arrays["ids"]))
        vocab_text = _array_text(arrays["vocab"])
        self._vocab: dict[str, int] = {t: i for i, t in enumerate(vocab_text.split("\n"))} \
            if vocab_text else {}
        self._inv_ptr, self._inv_slots, self._inv_tfs = (
            arrays["inv_ptr"], arrays["inv_slots"], arrays["inv_tfs"])
        self._fwd_ptr, self._fwd_terms, self._fwd_tfs = (
            arrays["fwd_ptr"], arrays["fwd_terms"], arrays["fwd_tfs"])
        self._df: list[int] = np.diff(self._inv_ptr).tolist()
        self._base_terms, self._base_docs = len(self._vocab), len(ids)
        self._delta_slots: dict[int, array] = {}
        self._delta_tfs: dict[int, array] = {}
        self._delta_fwd: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._ids = ids
        self._slot_of: dict[str, int] = {
            doc_id: s for s, doc_id in enumerate(ids) if doc_id is not None}
        self._doc_len = arrays["doc_len"].astype(np.float32)
        self._alive = np.ones(len(ids), dtype=bool)
        self._kind = arrays["kind"].astype(np.uint8)
        self._file = arrays["file"].astype(np.int32)
        self._paths: list[str] = json.loads(_array_text(arrays["paths"]))
        self._file_ids: dict[str, int] = {p: i for i, p in enumerate(self._paths)}
        self._total_len = float(self._doc_len.sum())
        self._live_postings = len(self._fwd_terms)
        self._dead_postings = 0


def _empty_arrays() -> dict[str, np.ndarray]:
    none_i64, none_i32, none_f32 = (np.zeros(1, np.int64), np.zeros(0, np.int32),
                                    np.zeros(0, np.float32))
    return {"ids": _text_array("[]"), "vocab": _text_array(""), "fwd_ptr": none_i64,
            "fwd_terms": none_i32, "fwd_tfs": none_f32, "inv_ptr": none_i64,
            "inv_slots": none_i32, "inv_tfs": none_f32, "doc_len": none_f32,
            "kind": np.zeros(0, np.uint8), "file": none_i32, "paths": _text_array("[]")}


def _text_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _array_text(data: np.ndarray) -> str:
    return data.astype(np.uint8).tobytes().decode("utf-8")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Bulk indexing allocates millions of small objects, and Python's cycle collector would
    rescan them over and over (a third of a cold build's time); none of them form cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class LexicalHit:
    """One lexical match: chunk id, BM25 score, 1-based rank, and which index it came from."""

    id: str
    score: float
    rank: int
    tombstoned: bool


@dataclass(frozen=True)
class FileMatches:
    """Whole-file BM25 by path, the best chunk of each of the best files (as hits ranked and
    scored as their files), and those chunks' own BM25 scores by id."""

    scores: dict[str, float]
    best_chunks: list[LexicalHit]
    best_chunk_scores: dict[str, float]


class LexicalIndex:
    """BM25 over one branch collection at a known store generation (``-1``: nothing loaded).

    Thread-safe: refresh, apply and search hold one lock.
    """

    def __init__(self, collection: str, identity: str = "") -> None:
        self.collection = collection
        self.identity = identity
        self.generation = -1
        self.live = Bm25()
        self.history = Bm25()
        self.unsaved_changes = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self.live) + len(self.history)

    def refresh(self, source: ChunkSource) -> int:
        """Bring the index up to the collection's manifest generation; returns records applied.

        One manifest read when nothing changed. If the manifest generation went backwards the
        collection was recreated: start over from everything it holds.
        """
        with self._lock:
            generation = int(source.reload_manifest().generation)
            if generation == self.generation:
                return 0
            if generation < self.generation:
                self.clear()
            where = None if self.generation < 0 else {"updated_gen": {"$gt": self.generation}}
            applied = self.apply(source.iter_records(where=where, include_text=True))
            self.generation = generation  # read before fetching: in-flight writes come again
            return applied

    def apply(self, records: Iterable[ChunkRecord]) -> int:
        """Index chunks as they now are: tombstoned ones move to history, live ones to live."""
        applied = 0
        with self._lock, _gc_paused():
            for record in records:
                self.live.remove(record.id)
                self.history.remove(record.id)
                target = self.history if record.status == TOMBSTONED else self.live
                target.add(record.id, document_tokens(record),
                           kind=search_kind(record.path, record.file_kind), path=record.path)
                applied += 1
            self.unsaved_changes += applied
        return applied

    def passing_share(self, include_history: bool, include_excluded: bool,
                      kinds: Iterable[str] | None = None) -> float:
        """Share of the collection's chunks that the search filters let through (1.0 when
        empty): how much of an unfiltered nearest-neighbour list is expected to survive."""
        kinds = None if kinds is None else tuple(kinds)
        with self._lock:
            total = len(self.live) + len(self.history)
            passing = self.live.count(include_excluded, kinds)
            if include_history:
                passing += self.history.count(include_excluded, kinds)
        return passing / total if total else 1.0

    def forget(self, ids: Iterable[str]) -> None:
        """Drop ids the store no longer holds (a collection purge the generations cannot show)."""
        with self._lock:
            for doc_id in ids:
                self.live.remove(doc_id)
                self.history.remove(doc_id)

    def clear(self) -> None:
        with self._lock:
            self.live, self.history = Bm25(), Bm25()
            self.generation = -1
            self.unsaved_changes = 0

    def search(
        self,
        terms: Sequence[str],
        n: int,
        *,
        include_history: bool = False,
        include_excluded: bool = False,
        score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
        weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float]]:
        """The ``n`` best matches, and the BM25 score of each id in ``score_ids`` that the
        searched indexes hold (0.0 when no term matches).

        With ``include_history`` live and tombstoned chunks are scored with their combined
        statistics, so one ranking orders both; without it only live statistics count.
        ``kinds`` (search kinds, ``classify.search_kind``) limits the hits to those kinds.
        """
        hits, extra, _ = self._search(terms, n, include_history, include_excluded, score_ids,
                                      None if kinds is None else tuple(kinds), weights)
        return hits, extra

    def search_with_files(
        self,
        terms: Sequence[str],
        n: int,
        n_files: int,
        *,
        include_history: bool = False,
        include_excluded: bool = False,
        score_ids: Iterable[str] = (),
        kinds: Iterable[str] | None = None,
        weights: TermWeights | None = None,
    ) -> tuple[list[LexicalHit], dict[str, float], FileMatches]:
        """``search``, plus whole-file BM25 of the live files of ``kinds``, the best chunk of
        each of the ``n_files`` best files (ranked as their files) and those chunks' own BM25
        scores; the live chunks are scored once for both."""
        kinds = None if kinds is None else tuple(kinds)
        with self._lock:
            hits, extra, live_scores = self._search(terms, n, include_history, include_excluded,
                                                    score_ids, kinds, weights)
            if include_history:  # those scores used the combined statistics; files are live
                live_scores = self.live.scores(terms, None, weights)
            files = self._file_matches(terms, n_files, kinds, weights, live_scores)
        return hits, extra, files

    def _search(
        self, terms: Sequence[str], n: int, include_history: bool, include_excluded: bool,
        score_ids: Iterable[str], kinds: tuple[str, ...] | None, weights: TermWeights | None,
    ) -> tuple[list[LexicalHit], dict[str, float], np.ndarray]:
        with self._lock:
            parts = [(self.live, False)] + ([(self.history, True)] if include_history else [])
            stats = self.live.stats(terms)
            if include_history:
                stats = stats + self.history.stats(terms)
            scored: list[tuple[float, bool, str]] = []
            extra: dict[str, float] = {}
            wanted = list(score_ids)
            live_scores = np.zeros(0, dtype=np.float32)
            for bm25, tombstoned in parts:
                scores = bm25.scores(terms, stats, weights)
                if not tombstoned:
                    live_scores = scores
                scored.extend((s, tombstoned, i)
                              for i, s in bm25.top(scores, n, include_excluded, kinds))
                for doc_id in wanted:
                    value = bm25.score_of(scores, doc_id)
                    if value is not None:
                        extra[doc_id] = value
        scored.sort(key=lambda hit: -hit[0])
        hits = [LexicalHit(i, s, rank, t) for rank, (s, t, i) in enumerate(scored[:n], start=1)]
        return hits, extra, live_scores

    def _file_matches(self, terms: Sequence[str], n_files: int, kinds: tuple[str, ...] | None,
                      weights: TermWeights | None, live_scores: np.ndarray) -> FileMatches:
        file_scores = self.live.file_scores(terms, weights, kinds)
        top = sorted(file_scores, key=lambda p: (-file_scores[p], p))[:n_files]
        best = self.live.best_per_file(live_scores, top) if top else []
        hits = [LexicalHit(doc_id, file_scores[path], rank, False)
                for rank, (doc_id, _, path) in enumerate(best, start=1)]
        return FileMatches(file_scores, hits, {doc_id: score for doc_id, score, _ in best})

    # -- snapshots ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the index atomically (temp file + rename: concurrent writers are safe)."""
        with self._lock:
            arrays = {f"live_{k}": v for k, v in self.live.to_arrays().items()}
            arrays |= {f"history_{k}": v for k, v in self.history.to_arrays().items()}
            header = {"format": SNAPSHOT_FORMAT, "collection": self.collection,
                      "identity": self.identity, "generation": self.generation}
            arrays["header"] = _text_array(json.dumps(header))
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(temp, "wb") as handle:
                np.savez(handle, **arrays)  # type: ignore[arg-type]
            os.replace(temp, path)
            self.unsaved_changes = 0

    @classmethod
    def load(cls, path: Path, collection: str, identity: str) -> LexicalIndex | None:
        """A saved index for this collection and identity, or None (missing, other, corrupt)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            header = json.loads(_array_text(arrays["header"]))
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if header.get("format") != SNAPSHOT_FORMAT or header.get("collection") != collection:
            return None
        if header.get("identity") != identity:
            return None
        index = cls(collection, identity)
        index.live.load_arrays({k[5:]: v for k, v in arrays.items() if k.startswith("live_")})
        index.history.load_arrays(
            {k[8:]: v for k, v in arrays.items() if k.startswith("history_")}
        )
        index.generation = int(header["generation"])
        return index

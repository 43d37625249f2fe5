"""BM25 over code-aware tokens: an incrementally updatable index of numpy postings."""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from freshmark.core.kinds import EXCLUDED_FILE_KINDS, KIND_CODES
from freshmark.core.ports import TermWeights

K1 = 1.2
B = 0.75

# File kinds are stored as their KIND_CODES, one per document slot (filters are a vectorised
# lookup).
_EXCLUDED_CODES = np.array(sorted(KIND_CODES[k] for k in EXCLUDED_FILE_KINDS), dtype=np.uint8)
# Paths whose documents a search leaves out (an overlay holds them: see lexical_layers.py).
NOTHING_HIDDEN: frozenset[str] = frozenset()
# Hidden-path masks kept per Bm25: one per overlay searching it lately (a shared base serves many).
HIDDEN_MASKS_KEPT = 8
# Compact once dead postings outnumber live ones (and there are enough to matter).
COMPACT_MIN_DEAD_POSTINGS = 50_000


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


@dataclass(frozen=True)
class FileCounts:
    """Whole files as BM25 documents, per file id: the summed length of its counted chunks
    (0: none counted) and, per query term found, its summed term count."""

    lengths: np.ndarray
    tf: dict[str, np.ndarray]

    def stats(self) -> CorpusStats:
        """File count, total file length and per-term file frequency: statistics over files,
        which add up across layers of disjoint files as chunk statistics do."""
        present = self.lengths > 0
        return CorpusStats(int(np.count_nonzero(present)), float(self.lengths[present].sum()),
                           {term: int(np.count_nonzero(tf)) for term, tf in self.tf.items()})


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

    # Set by ``load_arrays`` (``__init__`` calls it). The base postings, CSR:
    _inv_ptr: np.ndarray  # int64 [terms + 1]
    _inv_slots: np.ndarray  # int32 [postings]
    _inv_tfs: np.ndarray  # float32 [postings]
    _fwd_ptr: np.ndarray  # int64 [base documents + 1]
    _fwd_terms: np.ndarray  # int32 [postings]
    _fwd_tfs: np.ndarray  # float32 [postings]
    # One entry per document slot (grown by ``_new_slot``):
    _doc_len: np.ndarray  # float32
    _alive: np.ndarray  # bool
    _kind: np.ndarray  # uint8, a KIND_CODES value
    _file: np.ndarray  # int32, an index into ``_paths``
    _total_len: float  # of live documents

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

    def count(self, include_excluded: bool = True, kinds: Iterable[str] | None = None,
              hidden: frozenset[str] = NOTHING_HIDDEN) -> int:
        """Live documents, optionally only those of ``kinds`` or without excluded kinds, and
        not of a ``hidden`` path."""
        if include_excluded and kinds is None and not hidden:
            return len(self._slot_of)
        used = len(self._ids)
        counted = self._alive[:used] & self._kind_mask(used, kinds, include_excluded)
        if hidden:
            counted &= ~self._hidden_mask(hidden)
        return int(np.count_nonzero(counted))

    def _hidden_mask(self, hidden: frozenset[str]) -> np.ndarray:
        """Slots whose file is one of ``hidden`` (over the slots in use).

        Kept per (hidden set, slots in use, layout): a slot's file changes only when slots are
        renumbered (a load or compaction), and a new path only arrives with a new slot."""
        used = len(self._ids)
        key = (hidden, used, self._layout)
        mask = self._hidden_masks.get(key)
        if mask is None:
            hidden_files = np.zeros(len(self._paths), dtype=bool)
            hidden_files[np.fromiter((self._file_ids[p] for p in hidden if p in self._file_ids),
                                     dtype=np.intp)] = True
            mask = hidden_files[self._file[:used]]
            if len(self._hidden_masks) >= HIDDEN_MASKS_KEPT:
                del self._hidden_masks[next(iter(self._hidden_masks))]
            self._hidden_masks[key] = mask
        return mask

    def _visible(self, used: int, hidden: frozenset[str]) -> np.ndarray:
        """Live slots not of a hidden path."""
        visible = self._alive[:used]
        return visible & ~self._hidden_mask(hidden) if hidden else visible

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
    def stats(self, terms: Sequence[str], hidden: frozenset[str] = NOTHING_HIDDEN
              ) -> CorpusStats:
        """Live document count, total length and per-term document frequency for ``terms``,
        counting only documents not of a ``hidden`` path."""
        if not hidden:
            df = {t: self._df[i] for t in terms if (i := self._vocab.get(t)) is not None}
            return CorpusStats(len(self._slot_of), self._total_len, df)
        visible = self._visible(len(self._ids), hidden)
        df = {}
        for term in dict.fromkeys(terms):
            term_id = self._vocab.get(term)
            if term_id is not None:
                df[term] = sum(int(np.count_nonzero(visible[slots]))
                               for slots, _ in self._postings(term_id))
        length = float(self._doc_len[: len(visible)][visible].sum(dtype=np.float64))
        return CorpusStats(int(np.count_nonzero(visible)), length, df)

    def _postings(self, term_id: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
        if term_id < self._base_terms:
            start, stop = self._inv_ptr[term_id], self._inv_ptr[term_id + 1]
            yield self._inv_slots[start:stop], self._inv_tfs[start:stop]
        if term_id in self._delta_slots:  # copied: the arrays may grow after we return
            yield (np.array(self._delta_slots[term_id], dtype=np.int32),
                   np.array(self._delta_tfs[term_id], dtype=np.float32))

    def scores(self, terms: Sequence[str], stats: CorpusStats | None = None,
               weights: TermWeights | None = None,
               hidden: frozenset[str] = NOTHING_HIDDEN) -> np.ndarray:
        """BM25 score of every slot for the distinct query ``terms`` (dead slots and slots of a
        ``hidden`` path score 0).

        ``stats`` replaces this index's own statistics, so that two indexes scored with the same
        (combined) statistics give comparable scores. ``weights`` multiplies each term's part
        (1.0 for a term it does not name): a long query weighs its identifiers above its prose.
        """
        scores = np.zeros(len(self._ids), dtype=np.float32)
        stats = stats or self.stats(terms, hidden)
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
        if hidden:
            scores[self._hidden_mask(hidden)] = 0.0
        return scores

    def file_scores(self, terms: Sequence[str], weights: TermWeights | None = None,
                    kinds: Iterable[str] | None = None,
                    hidden: frozenset[str] = NOTHING_HIDDEN,
                    stats: CorpusStats | None = None) -> dict[str, float]:
        """BM25 over whole files: each live file is one document made of its chunks (their
        term counts and lengths summed), with file-level document frequencies. A file's
        evidence spread over many chunks adds up, where chunk BM25 sees only one chunk.

        Files of a ``hidden`` path are left out; ``stats`` (file statistics, ``FileCounts.stats``)
        replaces this index's own, as for ``scores``."""
        counts = self.file_counts(terms, kinds, hidden)
        return self.score_files(counts, stats or counts.stats(), weights)

    def file_counts(self, terms: Sequence[str], kinds: Iterable[str] | None = None,
                    hidden: frozenset[str] = NOTHING_HIDDEN) -> FileCounts:
        """Per-file lengths and term counts of the live documents of ``kinds`` (None: all),
        leaving out ``hidden`` paths: what whole-file BM25 reads."""
        used = len(self._ids)
        counted = self._visible(used, hidden) & self._kind_mask(used, kinds,
                                                                 include_excluded=True)
        n_files = len(self._paths)
        files = self._file[:used]
        lengths = np.bincount(files[counted], self._doc_len[:used][counted], minlength=n_files)
        term_counts: dict[str, np.ndarray] = {}
        if counted.any():
            for term in dict.fromkeys(terms):
                term_id = self._vocab.get(term)
                if term_id is None:
                    continue
                tf = np.zeros(n_files, dtype=np.float64)
                for slots, tfs in self._postings(term_id):
                    keep = counted[slots]
                    tf += np.bincount(files[slots[keep]], tfs[keep], minlength=n_files)
                term_counts[term] = tf
        return FileCounts(lengths, term_counts)

    def score_files(self, counts: FileCounts, stats: CorpusStats,
                    weights: TermWeights | None = None) -> dict[str, float]:
        """Whole-file BM25 by path of the files in ``counts``, with file statistics ``stats``."""
        if not stats.documents:
            return {}
        avg_len = max(stats.total_length / stats.documents, 1.0)
        scores = np.zeros(len(counts.lengths), dtype=np.float64)
        for term, tf in counts.tf.items():
            df = stats.df.get(term, 0)
            hit = tf > 0
            if df <= 0 or not hit.any():
                continue
            idf = math.log(1.0 + (stats.documents - df + 0.5) / (df + 0.5))
            idf *= weights.get(term, 1.0) if weights else 1.0
            norm = K1 * (1.0 - B + B * counts.lengths[hit] / avg_len)
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
            kinds: Iterable[str] | None = None,
            hidden: frozenset[str] = NOTHING_HIDDEN) -> list[tuple[str, float]]:
        """The ``n`` best (id, score) pairs of ``scores`` that pass the kind filters and are not
        of a ``hidden`` path (scores from ``scores(..., hidden)`` already are not)."""
        if n <= 0:
            return []
        if kinds is not None or not include_excluded:
            scores = np.where(self._kind_mask(len(scores), kinds, include_excluded), scores, 0.0)
        if hidden:
            scores = np.where(self._hidden_mask(hidden), 0.0, scores)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > n:
            hits = hits[np.argpartition(-scores[hits], n - 1)[:n]]
        order = sorted(hits.tolist(), key=lambda slot: (-float(scores[slot]), slot))
        return [(self._ids[slot] or "", float(scores[slot])) for slot in order]

    def best_per_file(self, scores: np.ndarray, paths: Sequence[str],
                      hidden: frozenset[str] = NOTHING_HIDDEN) -> list[tuple[str, float, str]]:
        """(id, score, path) of the best-scoring live document of each of ``paths`` (in that
        order; paths without a positive score, or ``hidden``, are skipped)."""
        wanted = {self._file_ids[p]: p for p in paths if p in self._file_ids and p not in hidden}
        if not wanted:
            return []
        hits = np.flatnonzero(scores > 0)
        hits = hits[np.isin(self._file[hits], np.fromiter(wanted, dtype=np.int32))]
        hits = hits[np.argsort(-scores[hits], kind="stable")]
        files, first = np.unique(self._file[hits], return_index=True)
        best = {int(f): int(hits[i]) for f, i in zip(files.tolist(), first.tolist(), strict=True)}
        return [(self._ids[best[f]] or "", float(scores[best[f]]), path)
                for f, path in wanted.items() if f in best]

    def score_of(self, scores: np.ndarray, doc_id: str,
                 hidden: frozenset[str] = NOTHING_HIDDEN) -> float | None:
        """The score of ``doc_id``, or None when this index does not hold it (or it is of a
        ``hidden`` path: then a layer above holds its path)."""
        slot = self._slot_of.get(doc_id)
        if slot is None or (hidden and self._paths[self._file[slot]] in hidden):
            return None
        return float(scores[slot])

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
            "ids": text_array(json.dumps(list(self._slot_of))),
            "vocab": text_array("\n".join(vocab[t] for t in used.tolist())),
            "fwd_ptr": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            "fwd_terms": terms.astype(np.int32),
            "fwd_tfs": tfs.astype(np.float32),
            "inv_ptr": np.searchsorted(terms[order], np.arange(len(used) + 1)).astype(np.int64),
            "inv_slots": doc_of[order],
            "inv_tfs": tfs[order].astype(np.float32),
            "doc_len": self._doc_len[slots].astype(np.float32),
            "kind": self._kind[slots].astype(np.uint8),
            "file": file_of.astype(np.int32),
            "paths": text_array(json.dumps([self._paths[f] for f in used_files.tolist()])),
        }

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Replace the whole index with the documents held in ``to_arrays`` form."""
        ids: list[str | None] = json.loads(array_text(arrays["ids"]))
        vocab_text = array_text(arrays["vocab"])
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
        self._paths: list[str] = json.loads(array_text(arrays["paths"]))
        self._file_ids: dict[str, int] = {p: i for i, p in enumerate(self._paths)}
        self._total_len = float(self._doc_len.sum())
        self._live_postings = len(self._fwd_terms)
        self._dead_postings = 0
        # Slots were renumbered: hidden-path masks of the old layout no longer apply.
        self._layout = getattr(self, "_layout", 0) + 1
        self._hidden_masks: dict[tuple[frozenset[str], int, int], np.ndarray] = {}


def _empty_arrays() -> dict[str, np.ndarray]:
    none_i64, none_i32, none_f32 = (np.zeros(1, np.int64), np.zeros(0, np.int32),
                                    np.zeros(0, np.float32))
    return {"ids": text_array("[]"), "vocab": text_array(""), "fwd_ptr": none_i64,
            "fwd_terms": none_i32, "fwd_tfs": none_f32, "inv_ptr": none_i64,
            "inv_slots": none_i32, "inv_tfs": none_f32, "doc_len": none_f32,
            "kind": np.zeros(0, np.uint8), "file": none_i32, "paths": text_array("[]")}


def text_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def array_text(data: np.ndarray) -> str:
    return data.astype(np.uint8).tobytes().decode("utf-8")

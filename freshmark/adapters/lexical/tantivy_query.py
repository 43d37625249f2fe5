"""Lexical queries over tantivy searchers: BM25 top-k, filters, ids' scores, whole files.

A search is one boolean query per layer: the query terms as a disjunction of boosted term
queries (the ranking), and filters that do not score: tombstones left out unless history is
searched, kinds as a constant-score term set (or the excluded kinds left out), a layer's hidden
paths left out. Layers are merged by score; with several layers each term's boost also carries
the ratio of the idf over all layers to the layer's own, so a small overlay and a large base
rank on one scale (document lengths stay per layer).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.adapters.lexical.tantivy_schema import file_key, schema, tantivy
from freshmark.core.kinds import EXCLUDED_FILE_KINDS, KIND_CODES
from freshmark.core.ports import FileMatches, LexicalHit, TermWeights

_EXCLUDED_CODES = sorted(KIND_CODES[k] for k in EXCLUDED_FILE_KINDS)
# Whole-file scores kept per search (fusion reads the scores of its candidates' files).
FILE_SCORES_KEPT = 200
# The best chunk of each best file is found among this many best chunks of those files per file.
BEST_CHUNKS_PER_FILE = 20


@dataclass(frozen=True)
class Filters:
    """Which chunks a search may return: tombstones too, excluded kinds too, only ``kinds``."""

    include_history: bool = False
    include_excluded: bool = False
    kinds: tuple[str, ...] | None = None

    @classmethod
    def of(cls, include_history: bool, include_excluded: bool,
           kinds: Iterable[str] | None) -> Filters:
        return cls(include_history, include_excluded, None if kinds is None else tuple(kinds))

    @classmethod
    def everything(cls) -> Filters:
        return cls(True, True, None)

    def kind_codes(self) -> list[int] | None:
        if self.kinds is None:
            return None
        return sorted({KIND_CODES[k] for k in self.kinds if k in KIND_CODES})


@dataclass(frozen=True)
class LayerQuery:
    """One layer's searchers (committed states of its chunk and file indexes) and its hidden
    paths."""

    searcher: tantivy.Searcher
    files: tantivy.Searcher
    hidden: frozenset[str]


def _idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def _boosts(searchers: Sequence[tantivy.Searcher], terms: Sequence[str],
            weights: TermWeights | None) -> list[dict[str, float]]:
    """Per layer, each distinct term's boost: its weight, times (with several layers) the idf
    over all layers divided by the layer's own. Terms a layer does not hold are left out."""
    distinct = list(dict.fromkeys(terms))
    df = [{t: searcher.doc_freq("tokens", t) for t in distinct} for searcher in searchers]
    boosts = [{t: (weights or {}).get(t, 1.0) for t in distinct if layer_df[t] > 0}
              for layer_df in df]
    if len(searchers) > 1:
        documents = [searcher.num_docs for searcher in searchers]
        total = sum(documents)
        for layer, (layer_df, layer_docs) in enumerate(zip(df, documents, strict=True)):
            for term in boosts[layer]:
                combined = sum(d[term] for d in df)
                boosts[layer][term] *= _idf(total, combined) / _idf(layer_docs, layer_df[term])
    return boosts


def _match(boosts: dict[str, float], files: bool = False) -> tantivy.Query | None:
    if not boosts:
        return None
    return tantivy.Query.boolean_query([
        (tantivy.Occur.Should, tantivy.Query.boost_query(
            tantivy.Query.term_query(schema(files), "tokens", term), boost))
        for term, boost in boosts.items()])


def _filtered(scoring: tantivy.Query | None, filters: Filters, hidden: frozenset[str],
              must: Sequence[tantivy.Query] = (), files: bool = False) -> tantivy.Query | None:
    """``scoring`` (None: every document) under the filters; None when nothing can pass."""
    fields = schema(files)
    clauses = [(tantivy.Occur.Must, scoring or tantivy.Query.all_query())]
    clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)) for q in must]
    if not filters.include_history:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_query(fields, "tombstoned", 1)))
    codes = filters.kind_codes()
    if codes is not None:
        if not codes:
            return None
        clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(fields, "kind", codes), 0.0)))
    elif not filters.include_excluded:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_set_query(fields, "kind", _EXCLUDED_CODES)))
    if hidden:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_set_query(fields, "path", sorted(hidden))))
    return tantivy.Query.boolean_query(clauses)


@dataclass(frozen=True)
class _Found:
    score: float
    id: str
    path: str
    tombstoned: bool


def _top(searcher: tantivy.Searcher, hidden: frozenset[str], scoring: tantivy.Query | None,
         limit: int, filters: Filters, files: bool = False) -> list[_Found]:
    if scoring is None or limit <= 0:
        return []
    filtered = _filtered(scoring, filters, hidden, files=files)
    if filtered is None:
        return []
    hits = searcher.search(filtered, limit, count=False).hits
    if not hits:
        return []
    addresses = [address for _, address in hits]
    tombstoned = searcher.fast_field_values("tombstoned", addresses)
    found = []
    for (score, address), tomb in zip(hits, tombstoned, strict=True):
        document = searcher.doc(address)
        found.append(_Found(float(score), str(document.get_first("id")),
                            str(document.get_first("path")), bool(tomb)))
    return found


def rank(queries: Sequence[LayerQuery], terms: Sequence[str], n: int, filters: Filters,
         weights: TermWeights | None) -> list[LexicalHit]:
    """The ``n`` best chunks over all layers, ranked by BM25."""
    boosts = _boosts([q.searcher for q in queries], terms, weights)
    found = [hit for query, layer_boosts in zip(queries, boosts, strict=True)
             for hit in _top(query.searcher, query.hidden, _match(layer_boosts), n, filters)]
    # Each layer's top n, merged by partial selection: never a sort of more than is kept.
    best = heapq.nlargest(n, found, key=lambda hit: hit.score)
    return [LexicalHit(hit.id, hit.score, rank, hit.tombstoned)
            for rank, hit in enumerate(best, start=1)]


def score_ids_of(queries: Sequence[LayerQuery], terms: Sequence[str], ids: list[str],
                 filters: Filters, weights: TermWeights | None) -> dict[str, float]:
    """The BM25 score of each of ``ids`` the searched chunks hold (0.0 when no term matches).

    Kinds do not apply (as ``Bm25.score_of``): the caller asks for these ids by name."""
    if not ids:
        return {}
    wanted = tantivy.Query.term_set_query(schema(), "id", ids)
    unkinded = Filters(filters.include_history, True, None)
    scores: dict[str, float] = {}
    boosts = _boosts([q.searcher for q in queries], terms, weights)
    for query, layer_boosts in zip(queries, boosts, strict=True):
        scoring = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.const_score_query(wanted, 0.0))]
            + ([(tantivy.Occur.Should, match)] if (match := _match(layer_boosts)) else []))
        for hit in _top(query.searcher, query.hidden, scoring, len(ids), unkinded):
            scores[hit.id] = hit.score
    return scores


def file_matches(queries: Sequence[LayerQuery], terms: Sequence[str], n_files: int,
                 filters: Filters, weights: TermWeights | None) -> FileMatches:
    """Whole-file BM25 over the file documents (a file's live chunks as one document, with
    statistics over files), for the ``FILE_SCORES_KEPT`` best files; the best chunk of each of
    the ``n_files`` best stands for its file, ranked and scored as it."""
    live = Filters(False, True, filters.kinds)
    file_boosts = _boosts([q.files for q in queries], terms, weights)
    kept = max(n_files, FILE_SCORES_KEPT)
    found = [hit for query, boosts in zip(queries, file_boosts, strict=True)
             for hit in _top(query.files, query.hidden, _match(boosts, files=True), kept, live,
                             files=True)]
    # Best first, ties by path; each layer gave its top ``kept``, merged by partial selection.
    ranked = heapq.nsmallest(kept, found, key=lambda hit: (-hit.score, hit.path))
    scores = {hit.path: hit.score for hit in ranked}
    top = [hit.path for hit in ranked[:n_files]]
    if not top:
        return FileMatches(scores, [], {})
    best: dict[str, tuple[str, float]] = {}
    chunk_boosts = _boosts([q.searcher for q in queries], terms, weights)
    for query, boosts in zip(queries, chunk_boosts, strict=True):
        best.update(_best_chunks(query, _match(boosts), top, live, n_files))
    chosen = [path for path in top if path in best]
    hits = [LexicalHit(best[path][0], scores[path], rank, False)
            for rank, path in enumerate(chosen, start=1)]
    return FileMatches(scores, hits, {best[p][0]: best[p][1] for p in chosen})


def _best_chunks(query: LayerQuery, scoring: tantivy.Query | None, paths: Sequence[str],
                 filters: Filters, n_files: int) -> dict[str, tuple[str, float]]:
    """(id, score) of the best-scoring live chunk of each of ``paths`` this layer shows,
    among its ``BEST_CHUNKS_PER_FILE * n_files`` best chunks of those files. Hits are told
    apart by the ``file`` fast field; only the chosen ones are read from the store."""
    shown = [p for p in paths if p not in query.hidden]
    if scoring is None or not shown:
        return {}
    in_files = tantivy.Query.term_set_query(schema(), "path", shown)
    filtered = _filtered(scoring, filters, query.hidden, must=[in_files])
    if filtered is None:
        return {}
    searcher = query.searcher
    hits = searcher.search(filtered, BEST_CHUNKS_PER_FILE * n_files, count=False).hits
    keys = searcher.fast_field_values("file", [address for _, address in hits]) if hits else []
    wanted = {file_key(p): p for p in shown}
    chosen: dict[str, tuple[float, Any]] = {}
    for (score, address), key in zip(hits, keys, strict=True):
        path = wanted.get(int(key or 0))
        if path is not None and path not in chosen:
            chosen[path] = (float(score), address)
    return {path: (str(searcher.doc(address).get_first("id")), score)
            for path, (score, address) in chosen.items()}


def count(query: LayerQuery, filters: Filters) -> int:
    """Chunks of the layer that pass ``filters`` (its hidden paths left out)."""
    filtered = _filtered(None, filters, query.hidden)
    if filtered is None:
        return 0
    return int(query.searcher.search(filtered, 1, count=True).count)  # type: ignore[attr-defined]

"""Lexical queries over tantivy searchers: BM25 top-k, filters, ids' scores, whole files.

A search is one boolean query per layer: the query terms as a disjunction of boosted term
queries (the ranking), and filters that do not score: tombstones left out unless history is
searched, kinds as a constant-score term set (or the excluded kinds left out), a layer's hidden
paths left out. Layers are merged by score; with several layers each term's boost also carries
the ratio of the idf over all layers to the layer's own, so a small overlay and a large base
rank on one scale (document lengths stay per layer).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from freshmark.adapters.lexical.tantivy_store import schema, tantivy
from freshmark.core.kinds import EXCLUDED_FILE_KINDS, KIND_CODES
from freshmark.core.ports import FileMatches, LexicalHit, TermWeights

_EXCLUDED_CODES = sorted(KIND_CODES[k] for k in EXCLUDED_FILE_KINDS)
# Whole-file scores add up the chunks of the best chunks found: this many per file wanted
# (at least FILE_CANDIDATES_MIN), so a file's second and third matching chunks count too.
FILE_CANDIDATES_PER_FILE = 8
FILE_CANDIDATES_MIN = 200


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
    """One layer's searcher (a committed state of its index) and its hidden paths."""

    searcher: tantivy.Searcher
    hidden: frozenset[str]


def _idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def _boosts(queries: Sequence[LayerQuery], terms: Sequence[str],
            weights: TermWeights | None) -> list[dict[str, float]]:
    """Per layer, each distinct term's boost: its weight, times (with several layers) the idf
    over all layers divided by the layer's own. Terms a layer does not hold are left out."""
    distinct = list(dict.fromkeys(terms))
    df = [{t: q.searcher.doc_freq("tokens", t) for t in distinct} for q in queries]
    boosts = [{t: (weights or {}).get(t, 1.0) for t in distinct if layer_df[t] > 0}
              for layer_df in df]
    if len(queries) > 1:
        documents = [q.searcher.num_docs for q in queries]
        total = sum(documents)
        for layer, (layer_df, layer_docs) in enumerate(zip(df, documents, strict=True)):
            for term in boosts[layer]:
                combined = sum(d[term] for d in df)
                boosts[layer][term] *= _idf(total, combined) / _idf(layer_docs, layer_df[term])
    return boosts


def _match(boosts: dict[str, float]) -> tantivy.Query | None:
    if not boosts:
        return None
    return tantivy.Query.boolean_query([
        (tantivy.Occur.Should,
         tantivy.Query.boost_query(tantivy.Query.term_query(schema(), "tokens", term), boost))
        for term, boost in boosts.items()])


def _filtered(scoring: tantivy.Query | None, filters: Filters, hidden: frozenset[str],
              must: Sequence[tantivy.Query] = ()) -> tantivy.Query | None:
    """``scoring`` (None: every document) under the filters; None when nothing can pass."""
    clauses = [(tantivy.Occur.Must, scoring or tantivy.Query.all_query())]
    clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)) for q in must]
    if not filters.include_history:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_query(schema(), "tombstoned", 1)))
    codes = filters.kind_codes()
    if codes is not None:
        if not codes:
            return None
        clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(schema(), "kind", codes), 0.0)))
    elif not filters.include_excluded:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_set_query(schema(), "kind", _EXCLUDED_CODES)))
    if hidden:
        clauses.append((tantivy.Occur.MustNot,
                        tantivy.Query.term_set_query(schema(), "path", sorted(hidden))))
    return tantivy.Query.boolean_query(clauses)


@dataclass(frozen=True)
class _Found:
    score: float
    id: str
    path: str
    tombstoned: bool


def _top(query: LayerQuery, scoring: tantivy.Query | None, limit: int,
         filters: Filters) -> list[_Found]:
    if scoring is None or limit <= 0:
        return []
    filtered = _filtered(scoring, filters, query.hidden)
    if filtered is None:
        return []
    searcher = query.searcher
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
    found = [hit for query, boosts in zip(queries, _boosts(queries, terms, weights), strict=True)
             for hit in _top(query, _match(boosts), n, filters)]
    found.sort(key=lambda hit: -hit.score)
    return [LexicalHit(hit.id, hit.score, rank, hit.tombstoned)
            for rank, hit in enumerate(found[:n], start=1)]


def score_ids_of(queries: Sequence[LayerQuery], terms: Sequence[str], ids: list[str],
                 filters: Filters, weights: TermWeights | None) -> dict[str, float]:
    """The BM25 score of each of ``ids`` the searched chunks hold (0.0 when no term matches).

    Kinds do not apply (as ``Bm25.score_of``): the caller asks for these ids by name."""
    if not ids:
        return {}
    wanted = tantivy.Query.term_set_query(schema(), "id", ids)
    unkinded = Filters(filters.include_history, True, None)
    scores: dict[str, float] = {}
    for query, boosts in zip(queries, _boosts(queries, terms, weights), strict=True):
        scoring = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.const_score_query(wanted, 0.0))]
            + ([(tantivy.Occur.Should, match)] if (match := _match(boosts)) else []))
        for hit in _top(query, scoring, len(ids), unkinded):
            scores[hit.id] = hit.score
    return scores


def file_matches(queries: Sequence[LayerQuery], terms: Sequence[str], n_files: int,
                 filters: Filters, weights: TermWeights | None) -> FileMatches:
    """Whole-file scores from the best live chunks: a file scores the sum of its chunks among
    the best ``FILE_CANDIDATES_PER_FILE * n_files`` (each layer answers for its own paths), and
    its best chunk stands for it, ranked and scored as its file."""
    limit = max(FILE_CANDIDATES_PER_FILE * n_files, FILE_CANDIDATES_MIN)
    live = Filters(False, True, filters.kinds)
    file_scores: dict[str, float] = {}
    best: dict[str, _Found] = {}
    for query, boosts in zip(queries, _boosts(queries, terms, weights), strict=True):
        for hit in _top(query, _match(boosts), limit, live):
            file_scores[hit.path] = file_scores.get(hit.path, 0.0) + hit.score
            if hit.path not in best or hit.score > best[hit.path].score:
                best[hit.path] = hit
    top = sorted(file_scores, key=lambda p: (-file_scores[p], p))[:n_files]
    hits = [LexicalHit(best[path].id, file_scores[path], rank, False)
            for rank, path in enumerate(top, start=1)]
    return FileMatches(file_scores, hits, {best[p].id: best[p].score for p in top})


def count(query: LayerQuery, filters: Filters) -> int:
    """Chunks of the layer that pass ``filters`` (its hidden paths left out)."""
    filtered = _filtered(None, filters, query.hidden)
    if filtered is None:
        return 0
    return int(query.searcher.search(filtered, 1, count=True).count)  # type: ignore[attr-defined]

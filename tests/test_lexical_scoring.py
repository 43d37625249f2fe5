"""What the lexical channel scores, on a fixed corpus built here: BM25 (tantivy's: k1 = 1.2,
b = 0.75, Lucene's idf) over the code-aware tokens of a chunk's path, symbol and text, term
weights as multipliers of a term's share, whole files as documents of their live chunks, and
the filters that do not score (kinds, tombstones).

The expected scores come from the formula computed in the test over the same tokens; the
corpus is small and its documents short, so tantivy's one-byte document lengths are exact and
the scores agree to rounding."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from test_retrieval import Writer, make_record

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.lexical.tantivy_engine import TantivyChannel, TantivyEngine
from freshmark.adapters.store.chroma import BranchIndex, Store
from freshmark.core.manifest import Manifest, collection_name
from freshmark.core.ports import TermWeights
from freshmark.core.settings import Settings
from freshmark.core.stamp import chunk_id, utc_now_iso
from freshmark.core.tokenize import iter_tokens, query_terms

K1, B = 1.2, 0.75
# (path, symbol) -> text; every document stays under 24 tokens (exact one-byte norms).
CORPUS = {
    ("src/net/http.py", "parse_header"): "def parse_header(raw):\n    return raw.split(':')\n",
    ("src/net/http.py", "send_request"): "def send_request(url, header):\n    post(url)\n",
    ("src/net/retry.py", "backoff"): "def backoff(attempt):\n    return 2 ** attempt\n",
    ("src/store/cache.py", "Cache.get"): "def get(self, key):\n    return self.items[key]\n",
    ("src/store/cache.py", "Cache.evict"): "def evict(self, key):\n    del self.items[key]\n",
}
DOC = ("docs/http.md", "headers", "Each header is parsed once per request.\n")
QUERIES = ("parse header", "cache key", "send request url", "attempt", "items evict header")


@pytest.fixture(autouse=True)
def fresh_engine() -> Iterator[None]:
    TantivyEngine(None).forget()
    yield
    TantivyEngine(None).forget()


@pytest.fixture
def corpus(fm_home: Path) -> BranchIndex:
    settings = Settings.from_env()
    key = f"scoring-{os.urandom(6).hex()}"
    embedder = get_embedder("hashing", settings.cache_dir)
    manifest = Manifest(repo="scoring", repo_key=key, branch="main", embedder=embedder.id,
                        collection=collection_name(key, "main"), created_at=utc_now_iso())
    index = Store.open(settings).create_branch(manifest)
    records = [make_record(path, symbol, text) for (path, symbol), text in CORPUS.items()]
    records.append(make_record(*DOC, file_kind="doc"))
    Writer(index, embedder).run(records)
    return index


def tokens(path: str, symbol: str, text: str) -> list[str]:
    return [*iter_tokens(path), *iter_tokens(symbol), *iter_tokens(text)]


ALL = [(p, s, t) for (p, s), t in CORPUS.items()] + [DOC]
CHUNKS = {chunk_id(p, s, 0): tokens(p, s, t) for p, s, t in ALL}
PATH_OF = {chunk_id(p, s, 0): p for p, s, _ in ALL}


def files_of(chunks: Iterable[tuple[str, str, str]]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for path, symbol, text in chunks:
        files.setdefault(path, []).extend(tokens(path, symbol, text))
    return files


FILES = files_of(ALL)


def bm25(documents: dict[str, list[str]], terms: Iterable[str],
         weights: TermWeights | None = None) -> dict[str, float]:
    """Each document's BM25 score for ``terms`` (documents matching none left out)."""
    count = len(documents)
    average = sum(len(d) for d in documents.values()) / count
    scores: dict[str, float] = {}
    for key, held in documents.items():
        norm = K1 * (1 - B + B * len(held) / average)
        score = 0.0
        for term in dict.fromkeys(terms):
            frequency = held.count(term)
            if frequency:
                df = sum(term in d for d in documents.values())
                idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
                score += (weights or {}).get(term, 1.0) * idf * frequency * (K1 + 1) / (
                    frequency + norm)
        if score:
            scores[key] = score
    return scores


def channel(index: BranchIndex, tmp_path: Path) -> TantivyChannel:
    return TantivyEngine(tmp_path).channel(index)


@pytest.mark.parametrize("query", QUERIES)
def test_chunk_scores_are_bm25_of_path_symbol_and_text_tokens(
    corpus: BranchIndex, tmp_path: Path, query: str
) -> None:
    hits, _ = channel(corpus, tmp_path).search(query_terms(query), 10)
    expected = bm25(CHUNKS, query_terms(query))
    assert {h.id: h.score for h in hits} == pytest.approx(expected, rel=1e-4)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_a_term_weight_multiplies_that_terms_share_of_the_score(corpus: BranchIndex,
                                                               tmp_path: Path) -> None:
    terms, weights = query_terms("header attempt"), {"attempt": 0.2, "header": 3.0}
    weighted, _ = channel(corpus, tmp_path).search(terms, 10, weights=weights)
    plain, _ = channel(corpus, tmp_path).search(terms, 10)
    assert {h.id: h.score for h in weighted} == pytest.approx(bm25(CHUNKS, terms, weights),
                                                              rel=1e-4)
    assert plain[0].id == chunk_id("src/net/retry.py", "backoff", 0)
    assert weighted[0].id != plain[0].id


def test_scores_asked_by_id_are_those_ids_bm25_whatever_their_rank(
    corpus: BranchIndex, tmp_path: Path
) -> None:
    terms = query_terms("cache key")
    wanted = [chunk_id("src/net/retry.py", "backoff", 0), chunk_id("src/store/cache.py",
                                                                   "Cache.evict", 0)]
    hits, scores = channel(corpus, tmp_path).search(terms, 1, score_ids=wanted)
    assert wanted[1] not in {h.id for h in hits}  # Cache.get ranks first
    assert scores == pytest.approx({wanted[0]: 0.0, wanted[1]: bm25(CHUNKS, terms)[wanted[1]]},
                                   rel=1e-4)


@pytest.mark.parametrize("query", QUERIES)
def test_whole_file_score_is_bm25_of_the_files_chunks_as_one_document(
    corpus: BranchIndex, tmp_path: Path, query: str
) -> None:
    _, _, files = channel(corpus, tmp_path).search_with_files(query_terms(query), 5, 5)
    assert files.scores == pytest.approx(bm25(FILES, query_terms(query)), rel=1e-4)


def test_the_best_chunk_of_each_best_file_stands_for_it(corpus: BranchIndex,
                                                        tmp_path: Path) -> None:
    terms = query_terms("items evict header")
    _, _, files = channel(corpus, tmp_path).search_with_files(terms, 5, 2)
    by_file = sorted(files.scores, key=lambda path: -files.scores[path])[:2]
    chunk_scores = bm25(CHUNKS, terms)
    best = [max((i for i in chunk_scores if PATH_OF[i] == path), key=chunk_scores.__getitem__)
            for path in by_file]
    assert [h.id for h in files.best_chunks] == best
    assert [h.score for h in files.best_chunks] == [files.scores[p] for p in by_file]
    assert files.best_chunk_scores == pytest.approx({i: chunk_scores[i] for i in best}, rel=1e-4)


def test_kinds_filter_whole_files_as_they_filter_chunks(corpus: BranchIndex,
                                                        tmp_path: Path) -> None:
    terms = query_terms("header request")
    lexical = channel(corpus, tmp_path)
    _, _, sources = lexical.search_with_files(terms, 5, 5, kinds=["source"])
    _, _, docs = lexical.search_with_files(terms, 5, 5, kinds=["doc"])
    assert set(sources.scores) == {"src/net/http.py"}
    assert set(docs.scores) == {"docs/http.md"}
    hits, _ = lexical.search(terms, 10, kinds=["doc"])
    assert [h.id for h in hits] == [chunk_id(*DOC[:2], 0)]


def test_a_tombstoned_chunk_leaves_its_files_document(corpus: BranchIndex,
                                                      tmp_path: Path) -> None:
    evict = chunk_id("src/store/cache.py", "Cache.evict", 0)
    Writer(corpus, get_embedder("hashing", Settings.from_env().cache_dir)).run(
        tombstone=[evict])
    lexical = channel(corpus, tmp_path)
    _, _, files = lexical.search_with_files(query_terms("evict"), 5, 5)
    assert "src/store/cache.py" not in files.scores
    _, _, files = lexical.search_with_files(query_terms("cache key"), 5, 5)
    assert "src/store/cache.py" in files.scores  # Cache.get is live
    hits, _ = lexical.search(query_terms("evict"), 5, include_history=True)
    assert [(h.id, h.tombstoned) for h in hits] == [(evict, True)]


def test_a_snake_case_query_finds_camel_case_code(corpus: BranchIndex, tmp_path: Path) -> None:
    Writer(corpus, get_embedder("hashing", Settings.from_env().cache_dir)).run(
        [make_record("src/net/codec.py", "decodeBodyChunk", "def decodeBodyChunk(b): 1\n")])
    hits, _ = channel(corpus, tmp_path).search(query_terms("decode_body_chunk"), 3)
    assert [h.id for h in hits][:1] == [chunk_id("src/net/codec.py", "decodeBodyChunk", 0)]


def test_a_rewritten_chunk_is_found_by_its_new_text_only(corpus: BranchIndex,
                                                         tmp_path: Path) -> None:
    backoff = chunk_id("src/net/retry.py", "backoff", 0)
    lexical = channel(corpus, tmp_path)
    assert [h.id for h in lexical.search(query_terms("attempt"), 3)[0]] == [backoff]
    Writer(corpus, get_embedder("hashing", Settings.from_env().cache_dir)).run(
        [make_record("src/net/retry.py", "backoff", "def backoff(tries):\n    sleep(tries)\n")])
    lexical = channel(corpus, tmp_path)
    assert lexical.search(query_terms("attempt"), 3)[0] == []
    assert [h.id for h in lexical.search(query_terms("sleep tries"), 3)[0]] == [backoff]

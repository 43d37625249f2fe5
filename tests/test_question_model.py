"""The question model: which queries it ranks, and what it prefers among a question's candidates.

The rest keeps the hand-set formula: look-ups by name, issue reports, other embedders, file
answers and the one-channel systems.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshmark.core.fusion import DEFAULT_WEIGHTS, combined_score, fuse, rerank
from freshmark.core.query import plan_query
from freshmark.core.question_model import (
    FITTED_EMBEDDER,
    applies,
    question_features,
    question_score,
)
from freshmark.core.stamp import ChunkRecord
from freshmark.services.retrieval.hybrid import _channel_weights

QUESTION = "how does the session follow redirects"


def _record(doc_id: str, symbol: str, kind: str, path: str, lines: int = 20) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       kind=kind, start_line=1, end_line=lines,
                       indexed_at="2026-01-01T00:00:00Z", blob_sha="b" * 40,
                       content_sha256="d" * 64, id=doc_id, signature=f"{kind} {symbol}")


def _features(**changes: float) -> dict[str, float]:
    features = {"rrf_norm": 0.8, "bm25_norm": 0.7, "vector_norm": 0.9, "code_share": 0.0,
                "symbol_hit": 0.5, "path_hit": 0.2, "length_fit": 1.0, "substance": 0.5,
                "kind_prior": 1.0, "qualified_hit": 0.0, "outline": 0.0, "block": 0.0,
                "file_shared": 1.0}
    features.update(changes)
    return features


def test_a_description_of_four_or_more_words_is_ranked_by_the_model() -> None:
    assert applies(words=6, code_share=0.0, names_a_member=False)


def test_a_name_or_a_couple_of_words_keeps_the_formula() -> None:
    assert not applies(words=1, code_share=1.0, names_a_member=False)
    assert not applies(words=3, code_share=0.0, names_a_member=False)


def test_a_query_mostly_of_code_or_naming_a_member_keeps_the_formula() -> None:
    assert not applies(words=5, code_share=0.6, names_a_member=False)
    assert not applies(words=5, code_share=0.0, names_a_member=True)


def test_the_score_is_a_probability() -> None:
    for features in (_features(), _features(vector_norm=0.0, rrf_norm=0.0, bm25_norm=0.0),
                     _features(vector_norm=1.0, rrf_norm=1.0, bm25_norm=1.0)):
        assert 0.0 < question_score(features) < 1.0


def test_an_outline_or_a_module_block_scores_below_a_definition_with_the_same_evidence() -> None:
    definition = question_score(_features())
    assert question_score(_features(outline=1.0, substance=0.0)) < definition
    assert question_score(_features(block=1.0, substance=0.0)) < definition


def test_more_similar_code_scores_higher() -> None:
    assert question_score(_features(vector_norm=1.0)) > question_score(_features(vector_norm=0.5))


def test_a_test_scores_below_the_same_evidence_in_the_implementation() -> None:
    assert question_score(_features(kind_prior=0.5)) < question_score(_features())


def test_the_file_products_are_zero_for_a_candidate_alone_of_its_file() -> None:
    inputs = question_features(_features(file_shared=0.0))
    assert [v for k, v in inputs.items() if k.startswith("file_shared")] == [0.0] * 5


def test_a_pool_saved_before_the_model_reads_as_definitions_alone_of_their_files() -> None:
    features = _features()
    for name in ("outline", "block", "file_shared"):
        del features[name]
    inputs = question_features(features)
    assert (inputs["outline"], inputs["block"], inputs["file_shared"]) == (0.0, 0.0, 0.0)


def _ranked(query: str, weights=DEFAULT_WEIGHTS):  # type: ignore[no-untyped-def]
    records = [_record("send", "Session.send", "method", "src/sessions.py", lines=40),
               _record("redirects", "Session.resolve_redirects", "method", "src/sessions.py"),
               _record("outline", "Session", "class", "src/sessions.py"),
               _record("hook", "dispatch_hook", "function", "src/hooks.py", lines=8)]
    lexical = [(r.id, 10.0 - n) for n, r in enumerate(records)]
    candidates = fuse({r.id: r for r in records}, lexical, [])
    return rerank(candidates, plan_query(query), weights)


def test_a_question_is_scored_by_the_model() -> None:
    for candidate in _ranked(QUESTION):
        assert candidate.score == pytest.approx(question_score(candidate.features))


def test_a_look_up_by_name_is_scored_by_the_formula() -> None:
    for candidate in _ranked("resolve_redirects"):
        assert candidate.score == pytest.approx(combined_score(candidate.features,
                                                               DEFAULT_WEIGHTS))


def test_with_the_model_off_a_question_is_scored_by_the_formula() -> None:
    weights = replace(DEFAULT_WEIGHTS, question_model=False)
    for candidate in _ranked(QUESTION, weights):
        assert candidate.score == pytest.approx(combined_score(candidate.features, weights))


def test_rerank_marks_outlines_blocks_and_files_with_other_candidates() -> None:
    by_id = {c.record.id: c.features for c in _ranked(QUESTION)}
    assert by_id["outline"]["outline"] == 1.0 and by_id["send"]["outline"] == 0.0
    assert by_id["send"]["file_shared"] == 1.0 and by_id["hook"]["file_shared"] == 0.0


def test_the_model_is_off_for_another_embedder_and_for_one_channel_alone() -> None:
    assert _channel_weights(DEFAULT_WEIGHTS, "hybrid", FITTED_EMBEDDER).question_model
    assert not _channel_weights(DEFAULT_WEIGHTS, "hybrid", "hashing-v1/384").question_model
    assert not _channel_weights(DEFAULT_WEIGHTS, "bm25", FITTED_EMBEDDER).question_model
    assert not _channel_weights(DEFAULT_WEIGHTS, "vectors", FITTED_EMBEDDER).question_model


def test_the_model_was_fitted_on_the_default_embedder() -> None:
    from freshmark.adapters.embedding import embedder_id
    from freshmark.core.settings import DEFAULT_EMBEDDER

    assert embedder_id(DEFAULT_EMBEDDER) == FITTED_EMBEDDER

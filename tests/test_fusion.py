"""Reciprocal rank fusion (k = 60), de-duplication by (path, signature), the linear rerank."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from freshmark.core.dedup import dedup
from freshmark.core.diversify import agreed_prose, diversify, first_copies
from freshmark.core.fusion import (
    DEFAULT_WEIGHTS,
    RRF_K,
    STUB_PRIOR,
    Candidate,
    file_substance,
    fuse,
    kind_prior,
    length_fit,
    path_hit,
    rerank,
    rrf_scores,
    substance,
    symbol_hit,
)
from freshmark.core.query import plan_query
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tokenize import query_terms


def _record(doc_id: str, *, path: str = "src/a.py", symbol: str = "f", signature: str = "",
            lines: int = 10, kind: str = "block") -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       start_line=1, end_line=lines, indexed_at="2026-01-01T00:00:00Z",
                       blob_sha="b" * 40, content_sha256="d" * 64, id=doc_id,
                       signature=signature, kind=kind)


def test_rrf_worked_example() -> None:
    # BM25 ranks a, b, c; vectors rank c, a. With k = 60 and 1-based ranks:
    #   a = 1/61 + 1/62 = 0.0325225   c = 1/63 + 1/61 = 0.0322664   b = 1/62 = 0.0161290
    fused = rrf_scores([["a", "b", "c"], ["c", "a"]])
    assert RRF_K == 60
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert sorted(fused, key=lambda i: -fused[i]) == ["a", "c", "b"]


def test_rrf_uses_ranks_not_scores() -> None:
    records = {i: _record(i) for i in "xy"}
    big = fuse(records, [("x", 1000.0), ("y", 0.1)], [("y", 0.9), ("x", 0.1)])
    small = fuse(records, [("x", 2.0), ("y", 1.9)], [("y", 0.5), ("x", 0.49)])
    assert [c.rrf for c in big] == [c.rrf for c in small]


def test_fuse_keeps_channel_ranks_and_scores() -> None:
    records = {i: _record(i) for i in "ab"}
    by_id = {c.record.id: c for c in fuse(records, [("a", 3.5)], [("b", 0.8), ("a", 0.7)])}
    assert (by_id["a"].bm25, by_id["a"].bm25_rank) == (3.5, 1)
    assert (by_id["a"].vector_sim, by_id["a"].vector_rank) == (0.7, 2)
    assert (by_id["b"].bm25, by_id["b"].bm25_rank, by_id["b"].vector_rank) == (None, None, 1)


def test_fuse_skips_ids_the_store_no_longer_holds() -> None:
    assert [c.record.id for c in fuse({"a": _record("a")}, [("gone", 9.0)], [("a", 0.5)])] == ["a"]


def test_dedup_keeps_the_best_of_one_path_and_signature() -> None:
    part1 = _record("p1", signature="def long(x):")
    part2 = _record("p2", signature="def long(x):")
    other = _record("o", path="src/b.py", signature="def long(x):")
    kept = dedup([Candidate(part2), Candidate(other), Candidate(part1)])
    assert [c.record.id for c in kept] == ["p2", "o"]


def test_dedup_keeps_two_definitions_of_one_name_and_signature_at_different_lines() -> None:
    def member(doc_id: str, start: int, text: str) -> ChunkRecord:
        return replace(_record(doc_id, symbol="AlamofireExtension.publicKeys",
                               signature="public var publicKeys: [SecKey] {", kind="method"),
                       start_line=start, end_line=start + text.count("\n"), text=text)

    bundle = member("b", 484, "public var publicKeys: [SecKey] {\n    certificates.keys\n}")
    trust = member("t", 595, "public var publicKeys: [SecKey] {\n    trust.keys\n}")
    long_part = replace(member("l", 600, "public var publicKeys: [SecKey] {\n    more\n}"),
                        end_line=601)  # a later part: its first line is the carried head
    kept = dedup([Candidate(bundle), Candidate(trust), Candidate(long_part)])
    assert [c.record.id for c in kept] == ["b", "t"]


def test_dedup_keeps_methods_of_two_classes_with_one_signature_line() -> None:
    command = _record("c", symbol="Command.invoke", signature="def invoke(self, ctx):")
    group = _record("g", symbol="Group.invoke", signature="def invoke(self, ctx):")
    kept = dedup([Candidate(group), Candidate(command)])
    assert [c.record.id for c in kept] == ["g", "c"]


def test_dedup_keeps_the_part_of_an_outline_that_declares_a_name_looked_up() -> None:
    first = replace(_record("b1", symbol="Sinatra.Base", signature="class Base"),
                    text="class Base\n  def call(env)\n    ...\n  end\n")
    second = replace(_record("b2", symbol="Sinatra.Base", signature="class Base"),
                     text="class Base\n  CALLERS_TO_IGNORE = [\n    /rubygems/\n  ]\n")
    kept = dedup([Candidate(first), Candidate(second)], names=["CALLERS_TO_IGNORE"])
    assert [c.record.id for c in kept] == ["b2"]
    assert [c.record.id for c in dedup([Candidate(first), Candidate(second)])] == ["b1"]


def test_dedup_keeps_the_part_declaring_a_function_nested_in_a_long_one() -> None:
    head = "export function createFetch(globalOptions) {"
    first = replace(_record("f1", symbol="createFetch", signature=head, kind="function"),
                    text=f"{head}\n  async function onError(context) {{\n    retry()\n  }}\n")
    second = replace(_record("f2", symbol="createFetch", signature=head, kind="function"),
                     start_line=180, end_line=180, text=f"{head}\n  await onError(context)\n")
    kept = dedup([Candidate(second), Candidate(first)], names=["onError"])
    assert [c.record.id for c in kept] == ["f1"]


def test_dedup_keeps_the_first_part_of_a_long_function_looked_up_not_a_later_one() -> None:
    head = "export function usage(yargs) {"
    first = replace(_record("u1", symbol="usage", signature=head, kind="function"),
                    start_line=14, end_line=16, text=f"{head}\n  const fails = []\n  let x\n")
    tail = replace(_record("u2", symbol="usage", signature=head, kind="function"),
                   start_line=690, end_line=690, text=f"{head}\n  return self\n")
    assert [c.record.id for c in dedup([Candidate(tail), Candidate(first)],
                                       names=["usage"])] == ["u1"]


def test_dedup_keeps_the_declaring_part_though_the_query_names_the_class_too() -> None:
    first = replace(_record("r1", symbol="RequestOptions", signature="final class RequestOptions",
                            kind="class"), start_line=5,
                    text="final class RequestOptions\n{\n    public const ALLOW_REDIRECTS = 'a';\n")
    second = replace(_record("r2", symbol="RequestOptions", signature="final class RequestOptions",
                             kind="class"), start_line=154,
                     text="final class RequestOptions\n{\n    public const READ_TIMEOUT = 'r';\n")
    kept = dedup([Candidate(second), Candidate(first)],
                 names=["READ_TIMEOUT", "RequestOptions"])
    assert [c.record.id for c in kept] == ["r2"]


def test_dedup_leaves_chunks_without_signature_alone() -> None:
    kept = dedup([Candidate(_record("m1")), Candidate(_record("m2"))])
    assert len(kept) == 2


def test_symbol_hit_is_full_for_a_named_symbol_in_any_casing() -> None:
    assert symbol_hit(set(query_terms("where is cancelOrder")), "OrderService.cancel_order") == 1.0
    assert symbol_hit(set(query_terms("cancel_order")), "Shop.cancelOrder") == 1.0


def test_a_piece_of_a_compound_word_names_no_symbol_outright() -> None:
    plan = plan_query("retryFromError")
    assert symbol_hit(set(plan.terms), "Ky.retry", named=plan.whole_words) == 0.5
    assert symbol_hit(set(plan.terms), "Ky.#retryFromError", named=plan.whole_words) == 1.0
    words = plan_query("where are errors retried")
    assert symbol_hit(set(words.terms), "Ky.retry", named=words.whole_words) == 1.0


def test_an_overload_signature_ranks_like_a_type_stub() -> None:
    stub = '@overload\ndef get_completion_class(shell: Literal["bash"]) -> type[Bash]: ...'
    assert kind_prior("source", "click/shell_completion.py", stub) == \
        kind_prior("source", "click/shell_completion.py") * STUB_PRIOR
    body = "def get_completion_class(shell):\n    return _available_shells.get(shell)"
    assert kind_prior("source", "click/shell_completion.py", body) == kind_prior("source")


def test_symbol_hit_is_partial_for_name_pieces() -> None:
    assert symbol_hit(set(query_terms("cancel an order")), "cancel_order_now") == pytest.approx(
        0.5 * 2 / 3
    )
    assert symbol_hit(set(query_terms("payment")), "cancel_order") == 0.0


def test_path_hit_is_the_share_of_query_terms_in_the_path() -> None:
    assert path_hit(set(query_terms("billing invoice total")), "src/billing/invoice.py") == (
        pytest.approx(2 / 3)
    )


def test_length_fit_penalises_only_extremes() -> None:
    assert length_fit(1, 20) == 1.0
    assert length_fit(1, 1) == pytest.approx(1 / 3)
    assert length_fit(1, 300) == pytest.approx(0.5)


def test_rerank_prefers_an_exact_symbol_name_hit() -> None:
    # Both found by both channels at swapped ranks (equal RRF); only one is named by the query.
    named = _record("named", symbol="OrderService.cancel_order", path="src/orders/service.py")
    other = _record("other", symbol="OrderService.cancel_payment", path="src/orders/service.py")
    candidates = fuse({"named": named, "other": other},
                      [("other", 5.0), ("named", 4.9)], [("named", 0.61), ("other", 0.60)])
    ranked = rerank(candidates, query_terms("cancel_order"))
    assert [c.record.id for c in ranked] == ["named", "other"]
    assert ranked[0].features["symbol_hit"] == 1.0


def test_rerank_score_is_the_weighted_feature_sum() -> None:
    candidates = fuse({"a": _record("a", symbol="restock", lines=1)}, [("a", 2.0)], [("a", 0.5)])
    w = DEFAULT_WEIGHTS
    (ranked,) = rerank(candidates, query_terms("restock"), code_share=0.25)
    f = ranked.features
    assert f["rrf_norm"] == pytest.approx(1.0)  # rank 1 in both channels
    expected = (w.rrf * f["rrf_norm"] + w.bm25 * f["bm25_norm"]
                + w.vector * 0.75 * f["vector_norm"] + w.symbol * f["symbol_hit"]
                + w.path * f["path_hit"] - w.length * (1 - f["length_fit"]))
    assert math.isclose(ranked.score, expected)


def test_vector_similarity_fades_for_queries_written_as_code() -> None:
    # "near" is the vector channel's clear favourite; "named" wins on BM25 rank alone.
    near, named = _record("near", symbol="nearby"), _record("named", symbol="other")
    records = {"near": near, "named": named}
    candidates = fuse(records, [("named", 3.0), ("near", 2.9)], [("near", 0.9), ("named", 0.2)])
    prose = rerank(candidates, ["x"], code_share=0.0)
    code = rerank(fuse(records, [("named", 3.0), ("near", 2.9)],
                       [("near", 0.9), ("named", 0.2)]), ["x"], code_share=1.0)
    assert prose[0].record.id == "near"
    assert code[0].record.id == "named"


def test_explain_names_every_number() -> None:
    (ranked,) = rerank(fuse({"a": _record("a")}, [("a", 2.0)], []), ["x"])
    assert {"score", "rrf", "bm25", "bm25_rank", "vector_sim", "vector_rank", "symbol_hit",
            "path_hit", "length_fit"} <= set(ranked.explain())


def test_long_report_names_a_symbol_only_in_code_form():
    from freshmark.core.query import plan_query

    prose = ("We copy the data and then it fails. " * 10 + "Calling `Dataset.merge` breaks.")
    plan = plan_query(prose)
    copy_chunk = fuse({"copy": _record("copy", symbol="Dataset.copy")}, [("copy", 1.0)], [])
    merge_chunk = fuse({"merge": _record("merge", symbol="Dataset.merge")}, [("merge", 1.0)], [])
    (copy,) = rerank(copy_chunk, plan)
    (merge,) = rerank(merge_chunk, plan)
    assert copy.features["symbol_hit"] == 0.0
    assert merge.features["symbol_hit"] == 1.0


def test_long_report_ranks_the_function_its_traceback_ran_above_its_neighbours():
    from freshmark.core.query import plan_query

    report = ("Stacking nested models raises an error that I did not expect here. " * 6
              + '\n  File "/env/site-packages/pkg/separable.py", line 99, in _cstack\n')
    path = "pkg/separable.py"
    records = {"ran": _record("ran", symbol="_cstack", path=path),
               "near": _record("near", symbol="_cdot", path=path)}
    # "near" is the better text match in both channels; only "ran" is in the traceback.
    candidates = fuse(records, [("near", 3.0), ("ran", 2.9)], [("near", 0.7), ("ran", 0.69)])
    ranked = rerank(candidates, plan_query(report))
    assert [c.record.id for c in ranked] == ["ran", "near"]
    assert ranked[0].features["frame_hit"] == 1.0 and ranked[1].features["frame_hit"] == 0.0


def test_substance_grows_with_the_log_of_a_definitions_lines_up_to_forty():
    assert substance("method", 1, 1) == 0.0
    assert substance("method", 1, 10) == pytest.approx(math.log(10) / math.log(40))
    assert substance("function", 1, 40) == 1.0
    assert substance("function", 1, 400) == 1.0


@pytest.mark.parametrize("kind", ["class", "struct", "interface", "block", "window"])
def test_substance_is_zero_for_chunks_that_are_not_one_definition(kind):
    assert substance(kind, 1, 300) == 0.0


def test_file_substance_is_a_chunks_body_over_its_files_thinnest_candidate():
    accessor, work, outline = substance("method", 1, 3), 1.0, 0.0
    assert file_substance(["a.py", "a.py"], [accessor, work]) == \
        pytest.approx([0.0, 1.0 - accessor])
    assert file_substance(["a.py", "a.py"], [outline, work]) == pytest.approx([0.0, 1.0])


def test_file_substance_is_zero_for_a_chunk_alone_of_its_file():
    assert file_substance(["a.py", "b.py"], [substance("function", 1, 3), 1.0]) == [0.0, 0.0]


def _accessor_and_work(work_path: str) -> list:
    # The accessor is the better match in both channels, by a little; a third chunk of another
    # file is a poor match in both.
    records = {"accessor": _record("accessor", symbol="Session.redirects", lines=3,
                                   kind="method"),
               "work": _record("work", symbol="Session.resolve", lines=40, kind="method",
                               path=work_path),
               "far": _record("far", symbol="parse", path="src/c.py", kind="function")}
    return fuse(records, [("accessor", 3.0), ("work", 2.9), ("far", 1.0)],
                [("accessor", 0.52), ("work", 0.5), ("far", 0.1)])


def test_rerank_puts_the_definition_with_a_body_above_its_files_accessor():
    ranked = rerank(_accessor_and_work("src/a.py"), ["location"], code_share=0.0)
    assert [c.record.id for c in ranked] == ["work", "accessor", "far"]
    assert ranked[0].features["substance"] > 0.0


def test_rerank_judges_definitions_of_different_files_by_their_match_alone():
    ranked = rerank(_accessor_and_work("src/b.py"), ["location"], code_share=0.0)
    assert [c.record.id for c in ranked] == ["accessor", "work", "far"]


def test_substance_counts_for_nothing_when_the_query_is_only_a_symbols_name():
    ranked = rerank(_accessor_and_work("src/a.py"), ["redirects"], code_share=0.0)
    assert [c.record.id for c in ranked] == ["accessor", "work", "far"]
    assert {c.features["substance"] for c in ranked} == {0.0}


def test_substance_counts_for_nothing_in_a_long_report():
    from freshmark.core.query import plan_query

    report = "Following redirects fails when the server answers with a relative location. " * 8
    ranked = rerank(_accessor_and_work("src/a.py"), plan_query(report))
    work = next(c for c in ranked if c.record.id == "work")
    assert work.features["substance"] > 0.0
    assert ranked[0].features["long_query"] == 1.0
    assert [c.record.id for c in ranked][:2] == ["accessor", "work"]


# A ranking of (file, name) pairs: file a holds the first three, then b, c, d, e one each.
RANKING = [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1"), ("d", "d1"),
           ("e", "e1")]


def _names(items: list[tuple]) -> list[str]:
    return [item[1] for item in items]


def test_diversify_holds_a_files_chunk_past_the_cap_until_the_end() -> None:
    top = diversify(RANKING, 6, 2, lambda item: item[0])
    assert _names(top) == ["a1", "a2", "b1", "c1", "d1", "e1"]


def test_diversify_gives_a_held_chunk_back_after_one_chunk_of_another_file() -> None:
    top = diversify(RANKING, 6, 2, lambda item: item[0], give_way=1)
    assert _names(top) == ["a1", "a2", "b1", "a3", "c1", "d1"]


def test_diversify_past_the_cap_gives_a_file_at_most_every_other_place() -> None:
    ranking = [("a", f"a{n}") for n in range(1, 6)] + [("b", "b1"), ("c", "c1"), ("d", "d1")]
    top = diversify(ranking, 8, 2, lambda item: item[0], give_way=1)
    assert _names(top) == ["a1", "a2", "b1", "a3", "c1", "a4", "d1", "a5"]


def test_diversify_lets_the_first_file_hold_its_own_cap() -> None:
    top = diversify(RANKING, 6, 2, lambda item: item[0], lead_file_cap=3)
    assert _names(top) == ["a1", "a2", "a3", "b1", "c1", "d1"]


def test_the_lead_file_cap_is_only_the_first_files() -> None:
    ranking = [("b", "b1"), ("a", "a1"), ("a", "a2"), ("a", "a3"), ("c", "c1")]
    top = diversify(ranking, 5, 2, lambda item: item[0], lead_file_cap=3)
    assert _names(top) == ["b1", "a1", "a2", "c1", "a3"]


def test_diversify_with_a_lead_file_cap_is_a_prefix_of_one_order_for_any_k() -> None:
    whole = diversify(RANKING, len(RANKING), 2, lambda item: item[0], lead_file_cap=3)
    for k in range(1, len(RANKING) + 1):
        assert diversify(RANKING, k, 2, lambda item: item[0], lead_file_cap=3) == whole[:k]


def test_diversify_with_give_way_is_a_prefix_of_one_order_for_any_k() -> None:
    whole = diversify(RANKING, len(RANKING), 2, lambda item: item[0], give_way=1)
    assert sorted(whole) == sorted(RANKING)
    for k in range(1, len(RANKING) + 1):
        assert diversify(RANKING, k, 2, lambda item: item[0], give_way=1) == whole[:k]


SCORED = [("a", "a1", 0.95), ("a", "a2", 0.94), ("a", "a3", 0.92), ("b", "b1", 0.6),
          ("c", "c1", 0.33), ("d", "d1", 0.05)]


def test_a_held_chunk_comes_back_before_a_far_weaker_chunk_of_another_file() -> None:
    top = diversify(SCORED, 5, 2, lambda item: item[0], give_way=None, held_back_below=0.5,
                    score_of=lambda item: item[2])
    assert _names(top) == ["a1", "a2", "b1", "a3", "c1"]


def test_a_held_chunk_waits_for_a_comparable_chunk_of_another_file() -> None:
    ranking = [("a", "a1", 0.9), ("a", "a2", 0.9), ("a", "a3", 0.8), ("b", "b1", 0.5)]
    top = diversify(ranking, 4, 2, lambda item: item[0], held_back_below=0.5,
                    score_of=lambda item: item[2])
    assert _names(top) == ["a1", "a2", "b1", "a3"]


def test_diversify_with_held_back_below_is_a_prefix_of_one_order_for_any_k() -> None:
    whole = diversify(SCORED, len(SCORED), 2, lambda item: item[0], give_way=1,
                      held_back_below=0.5, score_of=lambda item: item[2])
    assert sorted(whole) == sorted(SCORED)
    for k in range(1, len(SCORED) + 1):
        assert diversify(SCORED, k, 2, lambda item: item[0], give_way=1, held_back_below=0.5,
                         score_of=lambda item: item[2]) == whole[:k]


def test_a_copy_in_another_file_gives_way_and_equal_texts_of_one_file_stay() -> None:
    def chunk(doc_id: str, path: str, text_sha: str) -> Candidate:
        record = _record(doc_id, path=path)
        record.text_sha256 = text_sha
        return Candidate(record)

    ranked = [chunk("a", "include/x.hpp", "1"), chunk("b", "single/x.hpp", "1"),
              chunk("c", "include/x.hpp", "1"), chunk("d", "single/x.hpp", "2"),
              chunk("e", "old/x.hpp", "")]
    assert [c.record.id for c in first_copies(ranked)] == ["a", "c", "d", "e"]


def test_equal_texts_of_differently_named_definitions_in_two_files_both_stay() -> None:
    def chunk(doc_id: str, path: str, symbol: str) -> Candidate:
        record = _record(doc_id, path=path, symbol=symbol)
        record.text_sha256 = "same three-line builder method"
        return Candidate(record)

    ranked = [chunk("field", "FieldSpec.java", "FieldSpec.Builder.addModifiers"),
              chunk("type", "TypeSpec.java", "TypeSpec.Builder.addModifiers"),
              chunk("copy", "vendor/FieldSpec.java", "FieldSpec.Builder.addModifiers")]
    assert [c.record.id for c in first_copies(ranked)] == ["field", "type"]


def test_a_tombstoned_copy_of_live_code_is_dropped_wherever_it_ranks() -> None:
    old, new = _record("old", path="src/filters.py"), _record("new", path="src/_filtering.py")
    old.status, old.text_sha256, new.text_sha256 = "tombstoned", "1", "1"
    kept = first_copies([Candidate(old), Candidate(new)])
    assert [c.record.id for c in kept] == ["new"]


def test_a_look_up_keeps_the_part_of_a_long_definition_that_declares_it() -> None:
    def part(doc_id: str, start: int) -> Candidate:
        record = _record(doc_id, symbol="lexer.scan_number", signature="int scan_number()")
        record.start_line = start
        return Candidate(record)

    ranked = [part("second", 1066), Candidate(_record("other")), part("first", 930)]
    assert [c.record.id for c in dedup(ranked)] == ["second", "other"]
    assert [c.record.id for c in dedup(ranked, names=["scan_number"])] == ["first", "other"]
    assert [c.record.id for c in dedup(ranked, names=["scan_string"])] == ["second", "other"]


def _ranked_with_prose_at(place: int, kind: str, bm25_rank: int = 1) -> list[Candidate]:
    """Five chunks of code and one of ``kind`` at 0-based ``place``, the latter ranked first
    by BM25 (``bm25_rank``) and by the vectors; scores falling down the ranking."""
    ranked = [Candidate(_record(f"code{i}", path=f"src/m{i}.py"), kind="source",
                        bm25_rank=i + 2, vector_rank=i + 2) for i in range(5)]
    ranked.insert(place, Candidate(_record("prose", path="RELEASING.md"), kind=kind,
                                   bm25_rank=bm25_rank, vector_rank=1))
    for index, candidate in enumerate(ranked):
        candidate.score = 1.0 - index / 10
    return ranked


def test_a_doc_both_channels_rank_first_stands_third_at_least() -> None:
    ranked = agreed_prose(_ranked_with_prose_at(5, "doc"))
    assert [c.record.id for c in ranked][:4] == ["code0", "code1", "prose", "code2"]
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_a_doc_one_channel_ranks_first_keeps_its_place() -> None:
    ranked = agreed_prose(_ranked_with_prose_at(5, "doc", bm25_rank=2))
    assert ranked[5].record.id == "prose"


def test_code_both_channels_rank_first_keeps_the_place_the_rerank_gave_it() -> None:
    ranked = agreed_prose(_ranked_with_prose_at(5, "source"))
    assert ranked[5].record.id == "prose"


def test_a_doc_both_channels_rank_first_above_third_is_not_moved_down() -> None:
    ranked = agreed_prose(_ranked_with_prose_at(0, "config"))
    assert ranked[0].record.id == "prose"

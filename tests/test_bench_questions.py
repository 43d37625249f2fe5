"""The everyday-questions set is well-formed, and its hit and wording rules say what they mean.

The fetched repositories are not here, so the answers' lines are checked for shape only; they
were read at their pinned commits when the set was written (bench/questions/README.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import question_set as qs  # noqa: E402


@pytest.fixture(scope="module")
def questions() -> list[qs.Question]:
    return qs.load_questions()


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "demo-01", "repo": "owner/name", "commit": "a" * 40, "language": "python",
        "question": "Where is the session's redirect loop?", "path": "src/x.py",
        "symbol": "Session.resolve_redirects", "start_line": 10, "end_line": 40,
        "wording": "code-like",
    }
    row.update(changes)
    return row


def test_the_set_loads_without_problems(questions: list[qs.Question]) -> None:
    assert qs.set_problems(qs.read_rows()) == []


def test_the_held_out_set_loads_without_problems_and_shares_no_repository() -> None:
    held_out = qs.QUESTIONS_DIR / "heldout"
    assert qs.set_problems(qs.read_rows(held_out)) == []
    questions = qs.load_questions(held_out)
    assert len(questions) >= 80
    assert len({q.language for q in questions}) >= 3
    assert not {q.repo for q in questions} & {q.repo for q in qs.load_questions()}


def test_the_set_has_at_least_80_questions_over_at_least_4_repositories(
    questions: list[qs.Question],
) -> None:
    assert len(questions) >= 80
    assert len({q.repo for q in questions}) >= 4


def test_the_set_holds_both_wordings_and_several_languages(questions: list[qs.Question]) -> None:
    wordings = [q.wording for q in questions]
    assert min(wordings.count(w) for w in qs.WORDINGS) >= len(questions) // 3
    assert len({q.language for q in questions}) >= 2


def test_ids_and_questions_are_unique(questions: list[qs.Question]) -> None:
    assert len({q.id for q in questions}) == len(questions)
    assert len({q.question for q in questions}) == len(questions)


def test_a_row_with_a_short_commit_or_inverted_lines_is_reported() -> None:
    problems = qs.row_problems(_row(commit="abc123", start_line=50, end_line=40))
    assert any("commit" in p for p in problems)
    assert any("start_line" in p for p in problems)


def test_a_row_missing_a_field_is_reported() -> None:
    row = _row()
    del row["symbol"]
    assert qs.row_problems(row) == ["demo-01: symbol must be str"]


def test_a_wording_tag_that_disagrees_with_the_rule_is_reported() -> None:
    assert qs.row_problems(_row(wording="paraphrase")) == [
        "demo-01: wording disagrees with the wording rule"]


def test_two_commits_for_one_repository_are_reported() -> None:
    rows = [_row(), _row(id="demo-02", question="Other?", commit="b" * 40)]
    assert "owner/name: several commits" in qs.set_problems(rows)


def test_a_file_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text(json.dumps(_row()) + "\n{oops\n")
    with pytest.raises(ValueError, match="x.jsonl:2"):
        qs.read_rows(tmp_path)


def test_a_question_reusing_the_name_is_code_like_and_one_avoiding_it_a_paraphrase() -> None:
    assert qs.wording_of("Response.raise_for_status", "Where is raise_for_status?") == "code-like"
    avoiding = "Where does a 4xx reply become an exception?"
    assert qs.wording_of("Response.raise_for_status", avoiding) == "paraphrase"
    assert qs.wording_of("Context.ClientIP", "How is the client IP found?") == "code-like"


def _question(*alternatives: qs.Answer) -> qs.Question:
    return qs.Question("demo-01", "owner/name", "a" * 40, "python", "q?", "code-like",
                       qs.Answer("src/x.py", "Session.send", 100, 160), alternatives)


def test_a_chunk_with_the_answer_symbol_hits() -> None:
    assert qs.symbol_hit(_question(), qs.Hit("src/x.py", "Session.send", 1, 5, "method"))


def test_a_part_of_the_answer_hits_and_a_neighbour_overlapping_it_by_a_line_does_not() -> None:
    question = _question()
    assert qs.symbol_hit(question, qs.Hit("src/x.py", "Session.send", 130, 160, "method"))
    assert qs.symbol_hit(question, qs.Hit("src/x.py", "<module>#3", 120, 150, "block"))
    assert not qs.symbol_hit(question, qs.Hit("src/x.py", "Session.close", 160, 170, "method"))


def test_the_answer_with_its_doc_comment_above_it_hits_and_a_block_ending_there_does_not():
    question = _question()
    assert qs.symbol_hit(question, qs.Hit("src/x.py", "exports.send", 20, 160, "function"))
    assert not qs.symbol_hit(question, qs.Hit("src/x.py", "<module>#2", 20, 160, "block"))
    assert not qs.symbol_hit(question, qs.Hit("src/x.py", "exports.send", 40, 170, "function"))


def test_a_class_outline_spanning_the_answer_does_not_hit() -> None:
    assert not qs.symbol_hit(_question(), qs.Hit("src/x.py", "Session", 99, 161, "class"))


def test_the_same_lines_in_another_file_do_not_hit() -> None:
    assert not qs.symbol_hit(_question(), qs.Hit("src/y.py", "Session.send", 100, 160, "method"))


def test_an_alternative_answer_hits_like_the_answer() -> None:
    question = _question(qs.Answer("src/a.py", "AsyncSession.send", 10, 20))
    assert qs.symbol_hit(question, qs.Hit("src/a.py", "AsyncSession.send", 10, 20, "method"))
    assert qs.file_hit(question, "src/a.py")


def test_first_rank_is_one_based_and_none_without_a_hit() -> None:
    assert qs.first_rank([False, True, True]) == 2
    assert qs.first_rank([False, False]) is None


def test_asked_by_name_a_question_is_its_answers_own_name(questions: list[qs.Question]) -> None:
    import bench_questions

    method = next(q for q in questions if q.answer.symbol == "Parameter.resolve_envvar_value")
    asked = bench_questions.by_name(method)
    assert (asked.question, asked.wording) == ("resolve_envvar_value", "by-name")
    assert asked.answer == method.answer

"""check-answer (SPEC §10, seed 004 §9): an answer's references checked against its slice and the
head, on the seed shop (a real git history, a real index)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from search_fixtures import PATHS, build_shop

from freshmark.core.answers import parse_answer
from freshmark.faces.cli.main import cli

SERVICE = PATHS["service"]


def _saved_context(shop, query: str, tmp_path: Path) -> tuple[Path, dict]:
    """An L1 slice for ``query`` saved as JSON (as an agent would get it), and its data."""
    result = CliRunner().invoke(cli, ["context", query, "--repo", str(shop.path), "--json"])
    assert result.exit_code == 0, result.output
    context = tmp_path / "ctx.json"
    context.write_text(result.output)
    return context, json.loads(result.output)


@pytest.fixture
def shop_context(fm_home, make_repo, tmp_path: Path):
    """The shop, and an L1 slice for cancel_order saved as JSON."""
    shop = build_shop(make_repo)
    return (shop, *_saved_context(shop, "OrderService cancel_order", tmp_path))


def check(tmp_path: Path, context: Path, answer: str, *extra: str):
    path = tmp_path / "answer.md"
    path.write_text(answer)
    result = CliRunner().invoke(cli, ["check-answer", str(path), "--context", str(context),
                                      "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)


def evidence(context: dict) -> dict:
    return next(s for s in context["sections"] if s["role"] == "evidence")


def test_a_reference_to_served_lines_keeps_the_contract(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    answer = (f"It loads, checks and saves the order "
              f"[{SERVICE}:L{main['start_line']}-L{main['end_line']} | "
              f"OrderService.cancel_order | high].")
    code, report = check(tmp_path, context_file, answer)
    assert (code, report["refs"], report["hallucinated_refs"], report["compliance"]) == \
        (0, 1, 0, 1.0)
    assert report["references"][0]["symbol_in_lines"] is True


def test_lines_past_the_end_of_the_file_are_hallucinated(shop_context, tmp_path):
    _shop, context_file, _context = shop_context
    code, report = check(tmp_path, context_file,
                         f"See [{SERVICE}:L203-L219 | OrderService.cancel_order | high].")
    (ref,) = report["references"]
    assert code == 1 and ref["hallucinated"] and not ref["at_head"]
    assert any("past the end of the file" in p for p in ref["problems"])


def test_lines_of_a_file_the_slice_did_not_serve_are_hallucinated(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    assert PATHS["repo_old"] not in {s["path"] for s in context["sections"]}
    code, report = check(tmp_path, context_file,
                         f"Saved by [{PATHS['repo_old']}:L2-L4 | OrderRepoOld.save | medium].")
    (ref,) = report["references"]
    assert code == 1 and ref["at_head"] and not ref["in_slice"] and ref["hallucinated"]


def test_a_reference_without_confidence_breaks_compliance(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    code, report = check(tmp_path, context_file,
                         f"[{SERVICE}:L{main['start_line']}-L{main['end_line']} | "
                         f"OrderService.cancel_order]")
    assert code == 1 and report["compliance"] == 0.0 and report["hallucinated_refs"] == 0
    assert "no confidence (high, medium or low)" in report["references"][0]["problems"]


def test_a_symbol_absent_from_the_cited_lines_is_reported(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    _code, report = check(tmp_path, context_file,
                          f"[{SERVICE}:L{main['start_line']}-L{main['end_line']} | "
                          f"refund_order | low]")
    (ref,) = report["references"]
    assert ref["symbol_in_lines"] is False
    assert "refund_order is not in those lines" in ref["problems"]


def test_lines_inside_a_definition_may_be_cited_by_its_name(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    inner = main["end_line"] - 1  # a body line that does not spell the method's name
    code, report = check(tmp_path, context_file,
                         f"[{SERVICE}:L{inner}-L{inner} | OrderService.cancel_order | high]")
    (ref,) = report["references"]
    assert code == 0 and ref["symbol_in_lines"] is True and not ref["problems"]


def test_an_l1_answer_may_cite_lines_without_the_file(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    code, report = check(tmp_path, context_file,
                         f"[L{main['start_line']}-L{main['end_line']} | cancel_order | high]")
    assert code == 0 and report["references"][0]["path"] == SERVICE


def test_missing_that_names_a_live_symbol_is_precise(shop_context, tmp_path):
    _shop, context_file, _context = shop_context
    _code, report = check(tmp_path, context_file,
                          "[MISSING] the body of `OrderRepo.save` is needed")
    (line,) = report["missing"]
    assert line["existing"] == ["OrderRepo.save"] and line["precise"]
    assert report["missing_precision"] == 1.0 and report["compliance"] == 1.0


def test_missing_that_names_deleted_code_is_not_precise(shop_context, tmp_path):
    _shop, context_file, _context = shop_context
    _code, report = check(tmp_path, context_file,
                          "[MISSING] `CancelOrderHandler.handle` in "
                          f"{PATHS['handler']} is needed")
    (line,) = report["missing"]
    assert line["paths"] == [PATHS["handler"]] and line["existing"] == []
    assert report["missing_precision"] == 0.0


def test_a_gold_location_measures_location_accuracy(shop_context, tmp_path):
    _shop, context_file, context = shop_context
    main = evidence(context)
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"path": SERVICE, "start_line": main["start_line"],
                                "end_line": main["end_line"]}))
    answer = f"[{SERVICE}:L{main['start_line']}-L{main['start_line']} | cancel_order | high]"
    _code, report = check(tmp_path, context_file, answer, "--gold", str(gold))
    assert report["location_accuracy"] == 1.0


def test_folder_mode_reports_the_four_figures_against_their_targets(shop_context, tmp_path):
    _shop, _context_file, context = shop_context
    main = evidence(context)
    folder = tmp_path / "answers"
    folder.mkdir()
    good = f"[{SERVICE}:L{main['start_line']}-L{main['end_line']} | cancel_order | high]"
    for name, answer in (("good", good), ("bad", f"[{SERVICE}:L300-L310 | x | high]")):
        (folder / f"{name}.answer.md").write_text(answer)
        (folder / f"{name}.context.json").write_text(json.dumps(context))
    result = CliRunner().invoke(cli, ["check-answer", str(folder), "--json"])
    summary = json.loads(result.output)
    assert result.exit_code == 1
    assert summary["figures"]["hallucinated_rate"] == 0.5
    assert summary["meets_targets"]["hallucinated_rate"] is False
    assert summary["failed_answers"] == ["bad"]


def test_a_context_that_is_not_a_slice_is_refused_in_one_line(fm_home, tmp_path):
    answer, context = tmp_path / "a.md", tmp_path / "c.json"
    answer.write_text("[x.py:L1-L2 | f | high]")
    context.write_text('{"results": []}')
    result = CliRunner().invoke(cli, ["check-answer", str(answer), "--context", str(context)])
    assert result.exit_code == 2
    assert "no 'sections' list" in result.output


# -- parsing (pure) -------------------------------------------------------------------------------
def test_links_and_notes_in_brackets_are_not_references():
    parsed = parse_answer("See [the docs](https://x) and [note] but [a.py:L3–L5 | f | low].")
    (ref,) = parsed.references
    assert (ref.path, ref.start_line, ref.end_line, ref.symbol, ref.confidence) == \
        ("a.py", 3, 5, "f", "low")


def test_missing_names_files_and_code_not_prose():
    (line,) = parse_answer("[MISSING] need the retry policy in src/jobs/retry.py and "
                           "RetryPolicy.backoff").missing
    assert line.paths == ("src/jobs/retry.py",)
    assert line.symbols == ("RetryPolicy.backoff",)


def test_a_caller_shown_by_its_signature_serves_that_line_not_its_body(fm_home, make_repo,
                                                                     tmp_path):
    context_file, context = _saved_context(build_shop(make_repo), "ensure_cancellable",
                                           tmp_path)
    (caller,) = [s for s in context["sections"] if s["role"] == "caller"]
    assert caller["symbol"] == "OrderService.cancel_order" and "signature only" in caller["note"]
    start, end = caller["start_line"], caller["end_line"]  # L12-L17: a docstring, 4 lines
    assert (caller["shown_start"], caller["shown_end"]) == (start, start)
    body, signature, whole = (f"[{SERVICE}:L{n}-L{m} | OrderService.cancel_order | high]"
                              for n, m in ((start + 2, end - 1), (start, start), (start, end)))
    _code, report = check(tmp_path, context_file, f"{body}\n{signature}\n{whole}")
    assert [(r["in_slice"], r["problems"]) for r in report["references"]] == [
        (False, ["lines not in the slice served"]), (True, []), (True, [])]

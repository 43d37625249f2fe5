"""The token budget of a context slice is respected, and what it leaves out is named."""

from __future__ import annotations

import pytest
from search_fixtures import PATHS, build_shop

from freshmark.core.request import MIN_BUDGET_TOKENS, ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import (
    ContextSlice,
    build_context,
    estimate_tokens,
    fit,
    left_out_reason,
)
from freshmark.services.context.section import Section

BUDGETS = (MIN_BUDGET_TOKENS, 350, 450, 600, 800, 1200, 2000, 4000)


@pytest.fixture
def shop(fm_home, make_repo):
    return build_shop(make_repo)


@pytest.mark.parametrize("level", ["L1", "L2", "L3"])
def test_rendered_slice_never_exceeds_the_budget(shop, level):
    settings = Settings.from_env()
    for budget in BUDGETS:
        request = ContextRequest.build("OrderService cancel_order", level=level,
                                       budget_tokens=budget)
        slice_ = build_context(request, str(shop.path), settings=settings)
        assert estimate_tokens(slice_.text()) <= budget, (level, budget)


def test_small_budget_names_what_it_left_out_on_left_out_lines_not_missing(shop):
    slice_ = build_context(ContextRequest.build("OrderService cancel_order", budget_tokens=600),
                           str(shop.path), settings=Settings.from_env())
    assert slice_.left_out and not slice_.missing
    assert all(line.startswith("[LEFT OUT] ") and "budget" in line for line in slice_.left_out)
    assert not any(line.startswith("[MISSING]") for line in slice_.text().splitlines())


def test_module_too_big_for_the_budget_falls_back_to_the_symbol(shop):
    # 620: the header explains both markers and says the index lags the head by a commit, and
    # the symbol's check line names the dependency that drifted under it; the module needs
    # ~320, the symbol fits, and the module's [LEFT OUT] line with its role and standing
    request = ContextRequest.build("OrderService cancel_order", level="L2", budget_tokens=620)
    slice_ = build_context(request, str(shop.path), settings=Settings.from_env())
    roles = [s.role for s in slice_.sections]
    assert "module" not in roles and "evidence" in roles
    assert any(line.startswith(f"[LEFT OUT] {PATHS['service']}:L1-L") and "shown only as" in line
               for line in slice_.left_out)


def test_the_cli_refuses_a_budget_the_server_would_refuse(shop):
    from click.testing import CliRunner

    from freshmark.faces.api.served import MAX_BUDGET_TOKENS
    from freshmark.faces.cli.main import cli

    done = CliRunner().invoke(cli, ["context", "cancel_order", "--repo", str(shop.path),
                                    "--budget", str(MAX_BUDGET_TOKENS + 1)])
    assert done.exit_code == 2 and "budget" in done.stderr


def test_a_left_out_pointer_says_what_its_code_would_take_not_the_pointer():
    prose = "".join(f"Refunds of kind {n} are settled each night.\n" for n in range(60))
    pointer = Section("candidate", "docs/refunds.md", "<module>", 1, 62, "medium", None,
                      note="other match (not included)", stands_for=prose)
    assert f"needs ~{estimate_tokens(prose)} of the 4000-token budget" in \
        left_out_reason(pointer, None, 4000)



def _numbered_section(symbol: str, role: str, lines: int) -> Section:
    body = "\n".join(f"value_{n} = compute_{n}(value_{n - 1})" for n in range(lines))
    return Section(role, f"src/{symbol}.py", symbol, 1, lines, "high", None, body=body,
                   body_start=1, language="python")


def test_the_reserve_for_left_out_lines_is_handed_back_to_a_section_that_fits():
    slice_ = ContextSlice("q", "L1", 300, "header", {}, {})
    # The best evidence alone is over the budget: one [LEFT OUT] line is all the reserve holds.
    fit(slice_, [_numbered_section("best", "evidence", 50),
                 _numbered_section("second", "match", 8),
                 _numbered_section("third", "match", 9)])
    assert [s.symbol for s in slice_.sections] == ["second", "third"]
    assert not any("third" in line for line in slice_.left_out)
    assert slice_.used_tokens <= 300


def test_a_section_shown_only_as_a_pointer_takes_the_reserve_it_fits_in():
    slice_ = ContextSlice("q", "L1", 300, "header", {}, {})
    second = _numbered_section("second", "match", 18)
    second.fallback = Section("match", "src/second.py", "second", 1, 18, "medium", None,
                              note="other match (not included)")
    # 18 lines do not fit beside the reserve kept for [LEFT OUT] lines; once the best
    # evidence is named, what is left of the reserve shows them whole.
    fit(slice_, [_numbered_section("best", "evidence", 50), second])
    assert [(s.symbol, bool(s.body)) for s in slice_.sections] == [("second", True)]
    assert not any("second" in line for line in slice_.left_out)
    assert slice_.used_tokens <= 300


def test_cuts_whose_lines_do_not_fit_are_counted_on_one_line():
    slice_ = ContextSlice("q", "L1", 300, "header", {}, {})
    fit(slice_, [_numbered_section("best", "evidence", 12),
                 *(_numbered_section(f"match_{n}", "match", 40) for n in range(12))])
    named = [line for line in slice_.left_out if "match_" in line]
    (counted,) = [line for line in slice_.left_out if "not named here" in line]
    assert f"[LEFT OUT] {12 - len(named)} more sections that did not fit" in counted
    assert [s.symbol for s in slice_.sections] == ["best"]
    assert slice_.used_tokens <= 300


def test_a_match_shown_only_as_its_pointer_is_not_said_to_be_shown():
    code = _numbered_section("match_a", "match", 30)
    code.confidence = "medium"
    pointer = Section("match", code.path, code.symbol, 1, 30, "medium", None,
                      note="other match (not included)")
    assert left_out_reason(code, pointer, 4000).startswith(
        f"pointed at only ({pointer.anchor}), none of its lines shown")


def test_a_left_out_line_says_the_role_and_standing_of_what_it_names():
    slice_ = ContextSlice("q", "L1", 400, "header", {}, {})
    guess = _numbered_section("build_uri", "caller", 60)
    guess.confidence, guess.note = "medium", "direct caller (name match only)"
    fit(slice_, [_numbered_section("best", "evidence", 8), guess])
    assert slice_.left_out == ["[LEFT OUT] src/build_uri.py:L1-L60 | build_uri | medium | "
                               "caller (name match only) — not shown; the whole needs ~"
                               f"{estimate_tokens(guess.render())} of the 400-token budget"]
    assert slice_.to_dict()["left_out"] == slice_.left_out


def test_one_definition_cut_twice_is_named_once_whatever_each_cut_would_have_needed():
    slice_ = ContextSlice("q", "L1", 400, "header", {}, {})
    whole = _numbered_section("traverse_field", "match", 60)
    longer = _numbered_section("traverse_field", "match", 60)
    longer.body += "\n# a carried head makes this part longer"
    fit(slice_, [_numbered_section("best", "evidence", 8), whole, longer])
    assert len([line for line in slice_.left_out if "traverse_field" in line]) == 1


def test_a_pointer_comes_after_every_smaller_form_of_a_match_not_in_its_place():
    whole = _numbered_section("create_setup_store", "match", 560)
    part = _numbered_section("create_setup_store", "match", 60)
    whole.fallback = part
    pointer = Section("candidate", whole.path, whole.symbol, 1, 560, "medium", None,
                      note="other match (not included)")
    whole.smallest().fallback = pointer
    assert whole.fallback is part and part.fallback is pointer
    slice_ = ContextSlice("q", "L1", 1500, "header", {}, {})
    fit(slice_, [_numbered_section("best", "evidence", 8), whole])
    assert part in slice_.sections and pointer not in slice_.sections

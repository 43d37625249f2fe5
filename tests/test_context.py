"""Context slices (SPEC §7): L1/L2/L3 from verified material, with the reference contract."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from search_fixtures import PATHS, build_shop, index

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from freshmark.services.context.build import build_context, estimate_tokens, packing_order
from freshmark.services.context.section import Section


def slice_for(shop, query: str, level: str = "L1", budget: int | None = None):
    return build_context(ContextRequest.build(query, level=level, budget_tokens=budget),
                         str(shop.path), settings=Settings.from_env())


def by_role(slice_, role: str) -> list:
    return [s for s in slice_.sections if s.role == role]


def test_l1_holds_the_symbol_its_imports_its_class_and_breathing_room(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "OrderService cancel_order")
    (main,) = by_role(slice_, "evidence")
    assert main.anchor == f"[{PATHS['service']}:L12-L17 | OrderService.cancel_order | high]"
    assert "def cancel_from_api" in main.body  # the next symbol: breathing room
    assert main.body.splitlines()[0].strip() == "def cancel_order(self, order_id: str) -> None:"
    (imports,) = by_role(slice_, "imports")
    assert (imports.start_line, imports.end_line) == (2, 3)
    assert "from orders.domain.order import ensure_cancellable" in imports.body
    types = by_role(slice_, "type")
    assert types and types[0].symbol == "OrderService"


def test_l1_lists_direct_callers_by_signature(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "ensure_cancellable")
    callers = by_role(slice_, "caller")
    assert [c.symbol for c in callers] == ["OrderService.cancel_order"]
    assert callers[0].body == "def cancel_order(self, order_id: str) -> None"
    assert callers[0].confidence == "high" and "graph-confirmed" in callers[0].note


def test_callers_past_the_five_shown_by_signature_are_pointed_at(fm_home, make_repo):
    repo = make_repo("paths")
    helper = "def normalize_path(path):\n    return path.strip('/')\n\n\n"
    callers = "".join(f"def op_{n}(fs, path):\n    \"\"\"Operation {n}.\"\"\"\n"
                      f"    return fs.run(normalize_path(path))\n\n\n" for n in range(8))
    repo.write("paths/core.py", callers + helper).commit("paths")  # no caller after it
    index(repo.path)
    slice_ = build_context(ContextRequest.build("normalize_path", budget_tokens=4000),
                           str(repo.path), settings=Settings.from_env())
    callers_shown = by_role(slice_, "caller")
    named = {c.symbol for c in callers_shown} | {
        line.split(" | ")[1].split(" — ")[0] for line in slice_.left_out if " | op_" in line}
    assert named == {f"op_{n}" for n in range(8)}
    assert sum(1 for c in callers_shown if c.body) == 5
    assert all("another caller (graph-confirmed" in c.note for c in callers_shown
               if not c.body)


def test_a_caller_pointed_at_says_whether_only_its_name_matched(fm_home, make_repo):
    repo = make_repo("paths")
    helper = "def normalize_path(path):\n    return path.strip('/')\n\n\n"
    callers = "".join(f"def op_{n}(fs, path):\n    \"\"\"Operation {n}.\"\"\"\n"
                      f"    return fs.run(normalize_path(path))\n\n\n" for n in range(6))
    repo.write("paths/core.py", callers + helper)
    repo.write("tools/cleanup.py", "def tidy(path):\n    return normalize_path(path)\n")
    repo.commit("paths")
    index(repo.path)
    slice_ = build_context(ContextRequest.build("normalize_path", budget_tokens=4000),
                           str(repo.path), settings=Settings.from_env())
    pointers = {c.symbol: c.note for c in by_role(slice_, "caller") if not c.body}
    assert pointers["tidy"] == "another caller (name match only, not included)"


def test_caller_already_shown_in_the_breathing_room_is_named_not_repeated(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "OrderService cancel_order")
    (main,) = by_role(slice_, "evidence")
    assert "def cancel_from_api" in main.body
    (caller,) = by_role(slice_, "caller")
    assert (caller.symbol, caller.body) == ("cancel_from_api", "")
    assert caller.note.endswith(f", its lines shown within {main.anchor}")


def test_text_carries_anchor_citation_and_numbered_code(fm_home, make_repo):
    shop = build_shop(make_repo)
    text = slice_for(shop, "OrderService cancel_order").text()
    assert "write [MISSING] and name the file or symbol" in text  # the contract's exit
    assert f"[{PATHS['service']}:L12-L17 | OrderService.cancel_order | high]" in text
    assert "source:  src/orders/services/order_service.py#L12-L17  (OrderService.cancel_order)" \
        in text
    assert "   14          order = self.repo.get(order_id)" in text


def test_changed_material_is_re_read_from_todays_file(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "ensure_cancellable")
    (main,) = by_role(slice_, "evidence")
    assert (main.start_line, main.end_line, main.verdict) == (13, 16, "changed")
    assert main.confidence == "medium" and "is_final(order)" in main.body
    assert "shipped orders cannot be cancelled" not in slice_.text()  # the indexed text


def test_historical_material_is_labelled_reference_only(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "CancelOrderHandler idempotency key seen")
    references = by_role(slice_, "reference")
    assert references and {r.path for r in references} == {PATHS["handler"]}
    assert {r.confidence for r in references} == {"low"}
    assert "reference for design ideas only" in references[0].render()
    assert all(s.path != PATHS["handler"] for s in slice_.sections if s.role != "reference")


def test_no_matching_evidence_is_a_missing_line(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "stripe webhook refund currency")
    assert slice_.missing and slice_.missing[0].startswith(
        f"[MISSING] no current code in main@{shop.head[:7]} matches the query")
    assert not by_role(slice_, "evidence")


def test_l2_holds_the_whole_module_and_its_direct_imports(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "OrderService cancel_order", level="L2")
    (module,) = by_role(slice_, "module")
    assert module.path == PATHS["service"] and module.start_line == 1
    assert module.body == (shop.path / PATHS["service"]).read_text()
    assert {d.path for d in by_role(slice_, "dependency")} == {PATHS["domain"], PATHS["repo"]}
    domain = next(d for d in by_role(slice_, "dependency") if d.path == PATHS["domain"])
    assert "def is_final" in domain.body  # today's file, not the indexed one


def test_l3_follows_the_call_graph_with_its_chain(fm_home, make_repo):
    shop = build_shop(make_repo)
    index(shop.path)
    slice_ = slice_for(shop, "OrderService cancel_order", level="L3")
    (chain,) = by_role(slice_, "call_chain")
    assert "cancel_from_api" in chain.body and "-> OrderService.cancel_order" in chain.body
    assert "OrderService.cancel_order (src/orders/services/order_service.py:L12) -> " \
           "ensure_cancellable (src/orders/domain/order.py:L13)  [graph-confirmed]" in chain.body
    related = {s.symbol for s in by_role(slice_, "related")}
    assert {"ensure_cancellable", "is_final", "OrderRepo.get"} <= related
    (main,) = by_role(slice_, "evidence")
    assert "cancel_from_api" not in related and "def cancel_from_api" in main.body  # shown once


@pytest.mark.parametrize("budget", ["0", "-5"])
def test_zero_or_negative_budget_is_refused(fm_home, make_repo, budget):
    shop = build_shop(make_repo)
    result = CliRunner().invoke(cli, ["context", "cancel", "--repo", str(shop.path),
                                      "--budget", budget])
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"freshmark: error: budget must be a positive number of "
                                     f"tokens, not {budget}")


def test_budget_below_the_header_is_refused_with_the_minimum(fm_home, make_repo):
    shop = build_shop(make_repo)
    result = CliRunner().invoke(cli, ["context", "cancel", "--repo", str(shop.path),
                                      "--budget", "50"])
    assert result.exit_code == 2 and "the header and contract need 300" in result.stderr


def test_json_output_has_sections_missing_and_the_text(fm_home, make_repo):
    shop = build_shop(make_repo)
    result = CliRunner().invoke(cli, ["context", "OrderService cancel_order", "--repo",
                                      str(shop.path), "--json"])
    data = json.loads(result.stdout)
    assert data["level"] == "L1" and data["budget_tokens"] == 4000
    assert data["used_tokens"] == estimate_tokens(data["text"]) <= 4000
    assert {s["role"] for s in data["sections"]} >= {"evidence", "imports", "type"}
    assert data["index"]["commit"] == shop.dropped


def test_token_estimate_counts_three_ascii_characters_per_token():
    assert (estimate_tokens(""), estimate_tokens("abc"), estimate_tokens("abcd")) == (0, 1, 2)
    assert estimate_tokens("取消订单") == 4


@pytest.mark.parametrize(("query", "level", "message"), [
    ("", "L1", "query is empty"),
    ("x" * 100_001, "L1", "over the 100000-byte limit"),
    ("cancel", "L4", "level must be one of L1, L2, L3"),
])
def test_bad_query_or_level_is_refused_before_anything_is_opened(fm_home, query, level,
                                                                 message):
    from freshmark.core.errors import BadInput

    with pytest.raises(BadInput, match=message):
        build_context(ContextRequest.build(query, level=level), "/no/such/repo",
                      settings=Settings.from_env())


def test_l3_rates_a_method_reached_by_name_alone_low(fm_home, make_repo):
    # cancel_order calls self.repo.get(...): `get` names no class, so the edge is inferred
    shop = build_shop(make_repo)
    slice_ = slice_for(shop, "OrderService cancel_order", level="L3")
    related = {s.symbol: s.confidence for s in by_role(slice_, "related")}
    assert related["OrderRepo.get"] == "low"
    assert related["ensure_cancellable"] == "high"  # a function of an imported module


def test_l2_packs_the_questions_other_matches_before_imported_modules():
    def section(role: str, path: str) -> Section:
        return Section(role, path, "x", 1, 2, "high", None)

    module, dependency = section("module", "app.py"), section("dependency", "logging.py")
    match = section("candidate", "blueprints.py")
    order = packing_order([module, dependency], [match], {})
    assert [s.path for s in order] == ["app.py", "blueprints.py", "logging.py"]


def test_a_historical_later_part_is_numbered_from_its_own_first_line(fm_home, make_repo):
    ledger = ("def settle_ledger(value):\n"
              + "".join(f"    total_{n} = value + {n}\n" for n in range(200))
              + "    return reconcile_overdue_marker(total_199)\n")
    repo = make_repo("ledger")
    repo.write("ledger/settle.py", ledger).commit("ledger")
    index(repo.path)
    repo.delete("ledger/settle.py")
    repo.commit("drop the ledger")
    slice_ = build_context(ContextRequest.build("reconcile_overdue_marker total_199"),
                           str(repo.path), settings=Settings.from_env())
    references = [s for s in by_role(slice_, "reference") if s.start_line > 1]
    assert references  # the later part of settle_ledger, deleted since
    for section in references:
        lines = ledger.splitlines()[section.start_line - 1 : section.end_line]
        assert section.body.splitlines() == lines
        assert f"{section.start_line:>5}  {lines[0]}" in section.render()



def settings_type(make_repo, doc_lines: int) -> Section:
    """The type section of ``Settings``, a class of 60 methods after a docstring of
    ``doc_lines`` lines, chunked in parts."""
    doc = "".join(f"    option {n} is read from the environment when unset\n"
                  for n in range(doc_lines))
    methods = "".join(f"    def option_{n}(self, value):\n        return value + {n}\n\n"
                      for n in range(60))
    repo = make_repo("conf")
    repo.write("conf/settings.py", f'class Settings:\n    """Settings of a run.\n\n{doc}    """\n\n'
               f"{methods}\n\ndef apply_settings(settings: Settings) -> int:\n"
               "    return settings.option_1(3)\n").commit("settings")
    index(repo.path)
    slice_ = build_context(ContextRequest.build("apply_settings", budget_tokens=20000),
                           str(repo.path), settings=Settings.from_env())
    (settings,) = [s for s in by_role(slice_, "type") if s.symbol == "Settings"]
    return settings


def test_a_long_class_whose_first_part_elides_nothing_is_shown_as_its_outline(fm_home,
                                                                              make_repo):
    settings = settings_type(make_repo, doc_lines=146)  # part 1: the header and docstring
    assert (settings.start_line, settings.end_line) == (1, 330)
    assert "member bodies elided" in settings.note
    assert "return value +" not in settings.body


def test_a_long_class_is_outlined_with_the_members_of_every_part(fm_home, make_repo):
    settings = settings_type(make_repo, doc_lines=40)  # part 1 holds members too
    assert "member bodies elided" in settings.note
    assert "option 39 is read" in settings.body
    assert "def option_0(self, value):" in settings.body
    assert "def option_59(self, value):" in settings.body
    assert settings.body.count("def option_") == 60


def test_a_caller_in_a_file_changed_elsewhere_is_said_to_be_as_indexed(fm_home, make_repo):
    repo = make_repo("deco")
    repo.write("deco/state.py", "def current_context():\n    return _stack[-1]\n")
    repo.write("deco/decorators.py", "from deco.state import current_context\n\n\n"
               "def pass_context(f):\n    return f(current_context())\n").commit("one")
    index(repo.path)
    repo.write("deco/decorators.py", (repo.path / "deco/decorators.py").read_text()
               + "\n\ndef pass_obj(f):\n    return f(None)\n").commit("another decorator")
    slice_ = build_context(ContextRequest.build("current_context"), str(repo.path),
                           settings=Settings.from_env())
    (caller,) = by_role(slice_, "caller")
    assert caller.symbol == "pass_context" and caller.verdict == "changed"
    assert caller.citation is not None
    assert "pass_context now at L4-L5: its code is as indexed" in caller.citation.text()

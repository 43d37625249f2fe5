"""When the best evidence does not fit the budget, a slice falls back to evidence that does
(the best match's member among the results, or the next result) and never serves a slice
without evidence without saying so."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

PATH = "src/main/java/poet/TypeName.java"
QUERY = "TypeName get reflect Type"


def _type_name_class() -> str:
    """A class whose outline is short and whose code is long: its members' bodies are."""
    body = "".join(f"    builder.append(prefix).append(width * {i});\n" for i in range(24))
    members = "".join(
        f"  public String keywordNumber{n}(String prefix, int width) {{\n"
        f"    StringBuilder builder = new StringBuilder();\n{body}"
        f"    return builder.toString();\n  }}\n\n" for n in range(12))
    return ("package poet;\n\nimport java.lang.reflect.Type;\n\n"
            "/** Any type: a TypeName, got from a reflect Type. */\n"
            "public class TypeName {\n" + members +
            "  /** The TypeName of a reflect Type. */\n"
            "  public static TypeName get(Type type) {\n"
            "    return new TypeName();\n  }\n}\n")


def slice_for(repo_path, budget: int, query: str = QUERY):
    return build_context(ContextRequest.build(query, budget_tokens=budget), str(repo_path),
                         settings=Settings.from_env())


def test_a_question_about_a_class_too_big_for_the_budget_gets_its_member_as_evidence(
        fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {PATH: _type_name_class()}, package="poet")
    slice_ = slice_for(repo.path, 1500)
    evidence = [s for s in slice_.sections if s.role in ("evidence", "module")]
    assert [s.symbol for s in evidence] == ["TypeName.get"]
    assert slice_.used_tokens <= 1500


def test_a_class_asked_for_by_name_that_does_not_fit_says_so_first(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {PATH: _type_name_class()}, package="poet")
    slice_ = slice_for(repo.path, 1500, "TypeName")
    assert not [s for s in slice_.sections if s.role in ("evidence", "module")]
    assert slice_.left_out[0].startswith("[LEFT OUT] no evidence in this slice")
    assert any(line.startswith(f"[LEFT OUT] {PATH}:L5-L359 | TypeName | high | evidence — "
                               "not shown")
               for line in slice_.left_out[1:])


def _long_function(name: str) -> str:
    body = "".join(f"    total += reflect_type_part(value, {i})\n" for i in range(70))
    return f"def {name}(value):\n    \"\"\"Convert a reflect type.\"\"\"\n    total = 0\n" \
           f"{body}    return total\n"


def test_a_slice_none_of_whose_evidence_fits_says_so_first(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {
        "poet/convert.py": _long_function("convert_reflect_type"),
        "poet/cast.py": _long_function("cast_reflect_type")}, package="poet")
    slice_ = slice_for(repo.path, 700, "convert reflect type")
    assert not [s for s in slice_.sections if s.role in ("evidence", "module")]
    assert slice_.left_out[0].startswith("[LEFT OUT] no evidence in this slice: the best "
                                         "matches, named below, do not fit the 700-token budget")
    assert any("_reflect_type | high | evidence — not shown; the whole needs ~" in line
               for line in slice_.left_out[1:])
    assert slice_.used_tokens <= 700


def _big_module() -> str:
    """A module far over the budget whose one function imports a helper and has a caller."""
    padding = "".join(f"def unrelated_{n}(value):\n" + "".join(
        f"    value = value * {i} + {n}\n" for i in range(30)) + "    return value\n\n\n"
        for n in range(12))
    return ("from poet.pricing import refund_total\n\n\n"
            "def cancel_order(order):\n    \"\"\"Cancel an order and refund it.\"\"\"\n"
            "    order.state = 'cancelled'\n    return refund_total(order)\n\n\n" + padding)


def _module_over_the_budget(repo, level: str) -> list:
    """The sections of a slice of the big module's question at ``level``, whose module does
    not fit the 1,200-token budget."""
    found = build_context(ContextRequest.build("cancel an order and refund it", level=level,
                                               budget_tokens=1200),
                          str(repo.path), settings=Settings.from_env())
    assert not [s for s in found.sections if s.role == "module"], "module fits"
    return found.sections


def test_a_module_over_the_l2_budget_still_serves_what_l1_does(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {
        "poet/orders.py": _big_module(),
        "poet/pricing.py": "def refund_total(order):\n    return order.total\n",
        "poet/api.py": "from poet.orders import cancel_order\n\n\n"
                       "def cancel_endpoint(request):\n    return cancel_order(request.order)\n"},
        package="poet")

    assert {"evidence", "imports", "caller"} <= {
        s.role for s in _module_over_the_budget(repo, "L1")}
    assert {"evidence", "imports", "caller"} <= {
        s.role for s in _module_over_the_budget(repo, "L2")}


def test_a_module_over_the_l2_budget_still_serves_the_other_matches_in_its_file(
        fm_home, make_repo):
    shipment = ("def cancel_shipment(order):\n    \"\"\"Cancel an order's shipment and refund "
                "it.\"\"\"\n    order.shipment = None\n    return refund_total(order)\n\n\n")
    repo = indexed_project(make_repo("poet"), {
        "poet/orders.py": _big_module() + shipment,
        "poet/pricing.py": "def refund_total(order):\n    return order.total\n"},
        package="poet")

    assert {"cancel_order", "cancel_shipment"} <= {
        s.symbol for s in _module_over_the_budget(repo, "L1")}
    assert {"cancel_order", "cancel_shipment"} <= {
        s.symbol for s in _module_over_the_budget(repo, "L2")}


def test_a_module_over_the_l2_budget_is_mapped_by_its_signatures(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {
        "poet/orders.py": _big_module(),
        "poet/pricing.py": "def refund_total(order):\n    return order.total\n"},
        package="poet")
    over = build_context(ContextRequest.build("cancel an order and refund it", level="L2",
                                              budget_tokens=3000),
                         str(repo.path), settings=Settings.from_env())
    digests = [s for s in over.sections if s.path == "poet/orders.py" and s.symbol == "module"]
    assert len(digests) == 1 and "L384-L415  def unrelated_11(value)" in digests[0].body
    shown_whole = build_context(ContextRequest.build("cancel an order and refund it",
                                                     level="L2", budget_tokens=20000),
                                str(repo.path), settings=Settings.from_env())
    assert [s.role for s in shown_whole.sections if s.path == "poet/orders.py"] == ["module"]


def _function_in_parts() -> str:
    """A 284-line function: chunked in two parts, the question's words in the first."""
    steps = "".join(f"    total = total + settle_step(ledger, {i})\n" for i in range(280))
    return ("def reconcile_ledger(ledger):\n    \"\"\"Reconcile the ledger's refunds.\"\"\"\n"
            "    total = refund_opening(ledger)\n" + steps + "    return total\n")


def test_a_definition_chunked_in_parts_is_served_whole_when_it_fits(fm_home, make_repo):
    repo = indexed_project(make_repo("ledger"), {"ledger/books.py": _function_in_parts()},
                           package="ledger")
    slice_ = slice_for(repo.path, 8000, "reconcile ledger refunds")
    evidence = [s for s in slice_.sections if s.role == "evidence"]
    assert [(s.symbol, s.start_line, s.end_line) for s in evidence] == \
        [("reconcile_ledger", 1, 284)]
    assert "return total" in evidence[0].body
    assert evidence[0].citation is not None
    assert evidence[0].citation.source.startswith("ledger/books.py#L1-L284")


def test_a_definition_in_parts_too_big_for_the_budget_shows_its_part_and_names_the_whole(
        fm_home, make_repo):
    repo = indexed_project(make_repo("ledger"), {"ledger/books.py": _function_in_parts()},
                           package="ledger")
    slice_ = slice_for(repo.path, 3500, "reconcile ledger refunds")
    evidence = [s for s in slice_.sections if s.role == "evidence"]
    assert [(s.symbol, s.start_line) for s in evidence] == [("reconcile_ledger", 1)]
    assert evidence[0].end_line < 284
    assert any(line.startswith("[LEFT OUT] ledger/books.py:L1-L284 | reconcile_ledger | high | "
                               "evidence — shown only as") for line in slice_.left_out)


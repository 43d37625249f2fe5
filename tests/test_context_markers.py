"""[MISSING] only for missing evidence: a budget cut is a [LEFT OUT] line, the header explains
both markers, and deleted code is never named as missing."""

from __future__ import annotations

import pytest
from search_fixtures import PATHS, build_shop, index

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

QUERY = "CancelOrderHandler idempotency key seen"  # the service today, the deleted handler


def slice_for(repo_path, query: str, budget: int | None = None, level: str = "L1"):
    return build_context(ContextRequest.build(query, level=level, budget_tokens=budget),
                         str(repo_path), settings=Settings.from_env())


def marked(text: str, marker: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(marker)]


def test_header_explains_both_markers(fm_home, make_repo):
    shop = build_shop(make_repo)
    header = slice_for(shop.path, QUERY).header
    assert "[MISSING] = evidence not found" in header
    assert "[LEFT OUT] = code that exists but did not fit the budget" in header


def test_a_budget_cut_is_a_left_out_line_never_a_missing_one(fm_home, make_repo):
    shop = build_shop(make_repo)
    slice_ = slice_for(shop.path, QUERY, budget=700)
    assert marked(slice_.text(), "[LEFT OUT] ") == slice_.left_out != []
    assert marked(slice_.text(), "[MISSING]") == [] == slice_.missing


def test_deleted_code_cut_for_the_budget_is_named_as_history_not_as_missing(fm_home, make_repo):
    shop = build_shop(make_repo)
    cut_history = []
    for budget in range(600, 2001, 100):
        text = slice_for(shop.path, QUERY, budget=budget).text()
        assert not [line for line in marked(text, "[MISSING]") if PATHS["handler"] in line]
        cut_history += [line for line in marked(text, "[LEFT OUT] ")
                        if line.startswith(f"[LEFT OUT] {PATHS['handler']}")]
    assert cut_history  # some budget fits the evidence but not the deleted handler
    assert all("history, reference only (not in today's code)" in line for line in cut_history)


def test_a_name_nothing_defines_is_missing_though_code_shares_its_words(fm_home, make_repo):
    repo = make_repo("orders")
    repo.write("orders/eq.py", "def determine_eq_order(a, b):\n    return a == b\n")
    repo.commit("orders")
    index(repo.path)
    slice_ = slice_for(repo.path, "OrderService.cancel_order")
    (missing,) = slice_.missing
    assert missing.startswith("[MISSING] no definition of OrderService.cancel_order in main@")
    assert missing.endswith("; needed: the file or symbol that defines it")
    assert not [s for s in slice_.sections if s.role == "evidence"]


def test_a_member_asked_for_with_its_owner_is_missing_when_only_another_owner_has_it(
        fm_home, make_repo):
    repo = make_repo("poet")
    repo.write("poet/specs.py", "class AnnotationSpec:\n    @staticmethod\n"
                                "    def builder(name):\n        return name\n\n\n"
                                "class ClassName:\n    def simple_name(self):\n"
                                "        return 'x'\n")
    repo.commit("specs")
    index(repo.path)
    slice_ = slice_for(repo.path, "ClassName.builder")
    (missing,) = slice_.missing
    assert missing.startswith("[MISSING] no definition of ClassName.builder in main@")
    assert slice_for(repo.path, "AnnotationSpec.builder").missing == []


def test_an_interface_method_asked_for_by_owner_and_name_is_answered_by_the_interface(
        fm_home, make_repo):
    repo = make_repo("router")
    repo.write("router.go", "package chi\n\n// Router routes requests.\ntype Router interface {\n"
               "\t// Use appends middlewares.\n\tUse(middlewares ...func(Handler) Handler)\n"
               "\tRoute(pattern string, fn func(r Router)) Router\n}\n")
    repo.commit("router")
    index(repo.path)
    slice_ = slice_for(repo.path, "Router.Use")
    assert slice_.missing == []
    assert [s.symbol for s in slice_.sections if s.role == "evidence"] == ["Router"]
    assert slice_for(repo.path, "Router.Mount").missing  # declared nowhere


def test_an_indexer_asked_for_as_written_is_answered_by_its_definition(fm_home, make_repo):
    repo = make_repo("basket")
    repo.write("Basket.cs", "public class Basket\n{\n    public Item this[int index]\n    {\n"
                            "        get { return items[index]; }\n    }\n}\n")
    repo.commit("basket")
    index(repo.path)
    slice_ = slice_for(repo.path, "Basket.this[]")
    assert slice_.missing == []
    assert "Basket.this[]" in [s.symbol for s in slice_.sections if s.role == "evidence"]


def test_a_function_asked_for_with_its_module_is_answered_by_it(fm_home, make_repo):
    repo = make_repo("fd")
    repo.write("src/walk.rs", "/// Walks the tree.\n"
                              "pub fn scan(paths: &[PathBuf]) -> Result<u8> {\n    Ok(0)\n}\n")
    repo.write("src/main.rs", "mod walk;\n\nfn run() -> Result<u8> {\n    walk::scan(&[])\n}\n")
    repo.commit("fd")
    index(repo.path)
    for query in ("walk::scan", "walk.scan"):
        slice_ = slice_for(repo.path, query)
        assert slice_.missing == [], query
        assert [s.symbol for s in slice_.sections if s.role == "evidence"][0] == "scan"


def test_a_method_asked_for_with_its_namespace_is_answered_by_it(fm_home, make_repo):
    repo = make_repo("guzzle")
    repo.write("src/Utils.php", "<?php\n\nnamespace GuzzleHttp;\n\nfinal class Utils\n{\n"
                                "    public static function jsonDecode(string $json)\n    {\n"
                                "        return \\json_decode($json);\n    }\n}\n")
    repo.commit("utils")
    index(repo.path)
    slice_ = slice_for(repo.path, "GuzzleHttp\\Utils::jsonDecode")
    assert slice_.missing == []
    assert [s.symbol for s in slice_.sections if s.role == "evidence"][0] == "Utils.jsonDecode"


def test_a_function_asked_for_with_its_namespace_is_answered_by_it_in_that_namespace(
        fm_home, make_repo):
    repo = make_repo("guzzle")
    repo.write("src/functions.php", "<?php\n\nnamespace GuzzleHttp;\n\n"
                                    "function describe_type($input): string\n{\n"
                                    "    return Utils::describeType($input);\n}\n")
    repo.commit("functions")
    index(repo.path)
    for query in ("GuzzleHttp\\describe_type()", "\\GuzzleHttp\\describe_type()"):
        slice_ = slice_for(repo.path, query)
        assert slice_.missing == [], query
        assert [s.symbol for s in slice_.sections if s.role == "evidence"] == ["describe_type"]
    assert slice_for(repo.path, "GuzzleHttp\\Cookie\\describe_type").missing


def test_no_current_evidence_is_missing_without_naming_the_deleted_file(fm_home, make_repo):
    repo = make_repo("payments")
    repo.write("payments/stripe_refunds.py",
               "def refund_stripe_webhook(event):\n    return event['refund']\n")
    repo.write("payments/ledger.py", "def post_entry(amount):\n    return amount\n")
    repo.commit("payments")
    index(repo.path)
    repo.delete("payments/stripe_refunds.py").commit("drop stripe")
    slice_ = slice_for(repo.path, "refund_stripe_webhook")
    assert slice_.missing and slice_.missing[0].startswith(
        "[MISSING] no definition of refund_stripe_webhook in main@")
    assert "only deleted code matches it" in slice_.missing[0]
    assert not [line for line in marked(slice_.text(), "[MISSING]") if "stripe_refunds" in line]


def test_deleted_code_the_query_does_not_name_is_neither_missing_nor_reference(
        fm_home, make_repo):
    repo = make_repo("payments")
    repo.write("payments/legacy.py", "def legacy_total():\n    return 42\n")
    repo.write("payments/ledger.py", "def post_entry(amount):\n    return amount\n")
    repo.commit("payments")
    index(repo.path)
    repo.delete("payments/legacy.py").commit("drop legacy")
    index(repo.path)
    for query in ("NoSuchThing", "post_entry"):
        slice_ = slice_for(repo.path, query)
        assert not any("only deleted code" in line for line in slice_.missing)
        assert [s.symbol for s in slice_.sections if s.role == "reference"] == []
    named = slice_for(repo.path, "legacy_total")
    assert [s.symbol for s in named.sections if s.role == "reference"] == ["legacy_total"]



def _candidate(similarity: float, probability: bool = True):
    from freshmark.core.fusion import Candidate
    from freshmark.core.stamp import ChunkRecord

    record = ChunkRecord(repo="r", branch="main", commit="c" * 40, path="a.py", symbol="f",
                         start_line=1, end_line=2, indexed_at="2026-01-01T00:00:00Z",
                         blob_sha="b" * 40, content_sha256="d" * 64)
    return Candidate(record, vector_sim=similarity, probability=probability)


def test_a_question_whose_recalled_code_is_all_far_from_it_is_told_so():
    from freshmark.services.context.build import far_from_the_question

    assert far_from_the_question([_candidate(0.21), _candidate(0.27)]) == 0.27
    assert far_from_the_question([_candidate(0.21), _candidate(0.41)]) is None
    # Names, code and reports are not ranked by the question model: their similarity says less.
    assert far_from_the_question([_candidate(0.1, probability=False)]) is None


def _as_a_far_question(monkeypatch) -> None:
    from freshmark.services.context import build

    searched = build.hybrid_search

    def as_a_question(*args, **kwargs):  # the hashing tier's scores are no model's
        candidates, timings = searched(*args, **kwargs)
        for candidate in candidates:
            candidate.probability = True
        return candidates, timings

    monkeypatch.setattr(build, "hybrid_search", as_a_question)
    monkeypatch.setattr(build, "CLEAR_SIMILARITY", 1.01)


@pytest.fixture
def far_slice(fm_home, make_repo, monkeypatch):
    """The shop's slice for a question its code is far from (every similarity under the
    threshold)."""
    shop = build_shop(make_repo)
    index(shop.path)
    _as_a_far_question(monkeypatch)
    return slice_for(shop.path, "how is an order cancelled")


def test_a_far_question_gets_a_missing_line_and_its_nearest_code_at_low_confidence(far_slice):
    slice_ = far_slice
    assert any("no current code clearly matches the query" in line for line in slice_.missing)
    evidence = [s for s in slice_.sections if s.role == "evidence"]
    assert evidence and all(s.confidence == "low" for s in evidence)


def test_a_far_question_s_missing_line_comes_before_the_code_it_introduces_all_of_it_low(
        far_slice):
    slice_ = far_slice
    text = slice_.text()
    (missing,) = marked(text, "[MISSING]")
    assert "the code below is that nearest" in missing
    first_section = min(text.index(s.anchor) for s in slice_.sections)
    assert text.index(missing) < first_section
    # Imports, types and callers only serve the low-confidence evidence: none claims more.
    roles = {s.role for s in slice_.sections}
    assert roles & {"imports", "type", "caller"}
    assert {s.confidence for s in slice_.sections} == {"low"}

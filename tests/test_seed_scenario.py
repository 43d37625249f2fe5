"""Seed 000 §4.1: five results for "make cancel idempotent", each verified, against both stores.

The index is one commit behind ``main``: the old handler was deleted (tombstoned), the service
is unchanged since it was indexed, the domain rule changed after indexing, and the generated
client and the backup repository are indexed but excluded.
"""

from __future__ import annotations

import hashlib
import re

from search_fixtures import PATHS, build_shop, file_sha256, index

from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.snippets import check_text, parse_snippets
from freshmark.services.retrieval.search import search
from freshmark.services.verify_snippets import verify_entries

QUERY = "cancel order idempotent repeated request"


def results_by_symbol(shop) -> dict[str, dict]:
    response = search(SearchRequest.build(QUERY, k=30, include_history=True, include_excluded=True),
                      str(shop.path), settings=Settings.from_env()).to_dict()
    return {r["symbol"]: r for r in response["results"]}


def test_five_results_get_five_verdicts(store_env, make_repo):
    shop = build_shop(make_repo)
    found = results_by_symbol(shop)

    handler = found["CancelOrderHandler"]
    assert handler["verdict"] == "historical" and handler["seed_word"] == "失效"
    assert handler["reason"] == f"module deleted in {shop.dropped[:7]}"

    service = found["OrderService.cancel_order"]
    assert service["verdict"] == "older_identical"
    assert service["commit"] == shop.initial and service["seed_word"] == "版本较旧但内容一致"

    rule = found["ensure_cancellable"]
    assert rule["verdict"] == "changed" and rule["seed_word"] == "较旧"
    assert (rule["current_start_line"], rule["current_end_line"]) == (13, 16)
    assert "is_final(order)" in rule["text"] and "delivered" in rule["text"]

    client = found["OrderApiClient.cancel"]
    assert client["verdict"] == "excluded" and client["file_kind"] == "generated"
    assert client["reason"].startswith("generated code")

    backup = found["OrderRepoOld.save"]
    assert backup["verdict"] == "excluded" and backup["file_kind"] == "backup"
    assert backup["reason"].startswith("backup file")


def test_each_result_carries_its_citation_header(store_env, make_repo):
    shop = build_shop(make_repo)
    found = results_by_symbol(shop)
    head = shop.head[:7]

    service = found["OrderService.cancel_order"]["citation"].splitlines()
    assert service[0] == ("source:  src/orders/services/order_service.py#L12-L17  "
                          "(OrderService.cancel_order)")
    assert re.fullmatch(rf"version: main@{shop.initial[:7]} \(\d{{4}}-\d\d-\d\d\)", service[1])
    assert service[2].startswith("check:   older but identical") and \
        "same content as indexed" in service[2]
    # seed 000 §4.8: the service did not change, the rule it calls did (dependency drift)
    assert service[2].endswith("; depends on code that changed since: ensure_cancellable "
                               f"({PATHS['domain']}) changed, its file last changed in {head}")

    handler = found["CancelOrderHandler"]["citation"].splitlines()
    assert handler[0].startswith(f"source:  {PATHS['handler']}#L")
    assert handler[2] == (f"use:     module deleted in {shop.dropped[:7]} — reference for "
                          "design ideas only, do not implement against it")

    rule = found["ensure_cancellable"]["citation"].splitlines()
    assert rule[0] == f"source:  {PATHS['domain']}#L13-L16  (ensure_cancellable)"
    assert rule[1].startswith(f"version: main@{head} (2026-09-28) — re-read; indexed at")

    assert found["OrderRepoOld.save"]["citation"].splitlines()[2].startswith(
        "use:     excluded, backup file")


def test_reindexed_at_head_the_rule_is_current_and_the_handler_stays_hidden(store_env,
                                                                            make_repo):
    shop = build_shop(make_repo)
    index(shop.path)
    response = search(SearchRequest.build(QUERY, k=30), str(shop.path),
                      settings=Settings.from_env()).to_dict()
    found = {r["symbol"]: r for r in response["results"]}
    assert found["ensure_cancellable"]["verdict"] == "current"
    assert "CancelOrderHandler" not in found  # tombstoned: only with --history
    assert "OrderApiClient.cancel" not in found  # excluded kind: only with --include-excluded
    assert response["index"]["commit"] == shop.head


def test_seed_snippet_checker_answers_its_four_words(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listing = "\n".join([
        f"{PATHS['service']}\t{file_sha256(shop, shop.head, PATHS['service'])[:12]}",
        f"{PATHS['domain']}\t{file_sha256(shop, shop.initial, PATHS['domain'])[:12]}",
        f"{PATHS['handler']}\t{file_sha256(shop, shop.initial, PATHS['handler'])[:12]}",
        "docs/design/error-codes.md\t",
    ])
    report = verify_entries(parse_snippets(check_text(listing)), str(shop.path),
                            settings=Settings.from_env())
    words = [(line.line, line.seed_word, line.verdict) for line in report.lines]
    assert words == [(1, "可用", "current"), (2, "较旧", "changed"),
                     (3, "失效", "historical"), (4, "待补", "unverifiable")]
    assert report.all_safe is False


def test_a_listed_file_under_a_build_directory_is_excluded_as_build_output_not_vendored(
        fm_home, make_repo):
    repo = make_repo("release")
    repo.write("build/sync-version.js", "const version = require('../package.json').version\n")
    repo.commit("release script")
    script = (repo.path / "build/sync-version.js").read_bytes()
    listing = f"build/sync-version.js\t{hashlib.sha256(script).hexdigest()[:12]}"
    report = verify_entries(parse_snippets(check_text(listing)), str(repo.path),
                            settings=Settings.from_env())
    (line,) = report.lines
    assert line.verdict == "excluded"
    assert line.reason.startswith("build output by its path")

"""``search``: verified, cited results that name their index (CLI and use-case layer)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from search_fixtures import PATHS, SERVICE, build_shop, index

from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import MANDATORY_FIELDS
from freshmark.faces.cli.main import cli
from freshmark.services.retrieval.search import search, search_files

STAMP_FIELDS = (*MANDATORY_FIELDS, "kind", "language", "signature", "file_kind", "layer",
                "status", "tombstoned_in", "tombstoned_at", "successor")


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_full_json_results_carry_every_stamp_field_and_the_verification(store_env, make_repo):
    shop = build_shop(make_repo)
    code, out = run_cli("search", "cancel order", "--repo", str(shop.path), "--json", "--full")
    assert code == 0
    response = json.loads(out)
    assert response["results"]
    for result in response["results"]:
        assert set(STAMP_FIELDS) <= set(result)
        assert result["verdict"] and result["reason"]
        assert len(result["citation"].splitlines()) == 3


def test_response_names_the_index_it_came_from(store_env, make_repo):
    shop = build_shop(make_repo)
    response = search(SearchRequest.build("cancel order"), str(shop.path),
                      settings=Settings.from_env()).to_dict()
    info = response["index"]
    assert info["collection"].startswith("fm-shop-main-")
    assert info["commit"] == shop.dropped and info["indexed_at"]
    assert info["layers"]["default"]["commit"] == shop.dropped
    assert info["layers"]["default"]["indexed_at"]
    assert response["target"] == {"branch": "main", "head": shop.head, "worktree": False}


def test_tombstoned_chunks_only_with_history(fm_home, make_repo):
    shop = build_shop(make_repo)
    plain = search(SearchRequest.build("CancelOrderHandler idempotency", k=20), str(shop.path),
                   settings=Settings.from_env()).to_dict()
    request = SearchRequest.build("CancelOrderHandler idempotency", k=20, include_history=True)
    history = search(request, str(shop.path), settings=Settings.from_env()).to_dict()
    assert all(r["path"] != PATHS["handler"] for r in plain["results"])
    handlers = [r for r in history["results"] if r["path"] == PATHS["handler"]]
    assert handlers and {r["verdict"] for r in handlers} == {"historical"}


def test_excluded_kinds_only_with_include_excluded(fm_home, make_repo):
    shop = build_shop(make_repo)
    settings = Settings.from_env()
    plain = search(SearchRequest.build("OrderApiClient cancel", k=20), str(shop.path),
                   settings=settings).to_dict()
    wide = search(SearchRequest.build("OrderApiClient cancel", k=20, include_excluded=True),
                  str(shop.path), settings=settings).to_dict()
    assert all(r["file_kind"] not in ("generated", "backup", "fixture")
               for r in plain["results"])
    client = [r for r in wide["results"] if r["symbol"] == "OrderApiClient.cancel"]
    assert client and client[0]["verdict"] == "excluded"


def test_text_output_shows_verdict_citation_and_code(fm_home, make_repo):
    shop = build_shop(make_repo)
    code, out = run_cli("search", "OrderService cancel_order", "--repo", str(shop.path), "-k", "3")
    assert code == 0
    assert "index:    fm-shop-main-" in out
    assert f"verified: against main@{shop.head[:7]}" in out
    assert "source:  src/orders/services/order_service.py#L12-L17  (OrderService.cancel_order)" \
        in out
    assert "older_identical (版本较旧但内容一致)" in out
    assert "        order = self.repo.get(order_id)" in out  # the code, indented


def test_every_search_counts_its_verdicts(fm_home, make_repo):
    shop = build_shop(make_repo)
    settings = Settings.from_env()
    first = search(SearchRequest.build("cancel order", k=4), str(shop.path),
                   settings=settings).verdict_counts()
    second = search(SearchRequest.build("order repo save", k=4), str(shop.path),
                    settings=settings).verdict_counts()
    expected: dict[str, int] = {}
    for counts in (first, second):
        for verdict, number in counts.items():
            expected[verdict] = expected.get(verdict, 0) + number
    assert VerdictStats.open(settings).counts("shop", "main") == expected
    assert sum(expected.values()) == 8


def test_status_shows_the_verdict_counts(fm_home, make_repo):
    shop = build_shop(make_repo)
    search(SearchRequest.build("cancel order", k=2), str(shop.path), settings=Settings.from_env())
    code, out = run_cli("status", str(shop.path), "--json")
    assert code == 0
    assert sum(json.loads(out)[0]["verdicts"].values()) == 2


def test_worktree_search_sees_uncommitted_edits(fm_home, make_repo):
    shop = build_shop(make_repo)
    index(shop.path)
    shop.repo.write(PATHS["service"], SERVICE.replace('"""Cancel an order."""',
                                                      '"""Cancel an order.\n\n    More."""'))
    settings = Settings.from_env()
    head = search(SearchRequest.build("OrderService cancel_order", k=3), str(shop.path),
                  settings=settings)
    tree = search(SearchRequest.build("OrderService cancel_order", k=3, worktree=True),
                  str(shop.path), settings=settings)
    by_head = {r.record.symbol: r for r in head.results}
    by_tree = {r.record.symbol: r for r in tree.results}
    assert str(by_head["OrderService.cancel_order"].verification.verdict) == "older_identical"
    edited = by_tree["OrderService.cancel_order"].verification
    assert str(edited.verdict) == "changed" and edited.current_end_line == 19


def test_repository_id_of_an_indexed_repo_is_accepted(fm_home, make_repo):
    shop = build_shop(make_repo)
    response = search(SearchRequest.build("cancel order", k=2), "shop",
                      settings=Settings.from_env()).to_dict()
    assert response["repo"] == "shop" and response["target"]["head"] == shop.head


def test_a_search_reads_the_collection_once_and_sees_a_finished_run(store_env, make_repo):
    from freshmark.services.open_branch import store_for

    shop = build_shop(make_repo)
    settings = Settings.from_env()
    search(SearchRequest.build("cancel order"), str(shop.path),
           settings=settings)  # the lexical index is warm
    client = store_for(settings).shards[0].client
    reads: list[str] = []
    get_collection = client.get_collection

    def counted(name, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(name)
        return get_collection(name, **kwargs)

    client.get_collection = counted
    try:
        search(SearchRequest.build("cancel order"), str(shop.path), settings=settings)
        assert len(reads) == 1
        shop.repo.write("src/orders/refunds.py", "def issue_refund_voucher(order):\n    pass\n")
        shop.repo.commit("refund voucher")
        index(shop.repo.path)
        found = search(SearchRequest.build("issue_refund_voucher", k=3), str(shop.path),
                       settings=settings)
        assert found.results[0].record.symbol == "issue_refund_voucher"
    finally:
        client.get_collection = get_collection


def _lagging_repo(make_repo):
    repo = make_repo("lag")
    repo.write("shop/orders.py", "def cancel_order(order):\n    return order\n").commit("orders")
    index(repo.path)
    repo.write("shop/logger.py", "def log_change(state):\n    print(state)\n").commit("logger")
    repo.write("shop/orders.py", "def cancel_order(order):\n    return None\n").commit("edit")
    return repo


def test_a_search_on_an_index_at_the_head_has_nothing_unindexed(fm_home, make_repo):
    repo = make_repo("lag")
    repo.write("shop/orders.py", "def cancel_order(order):\n    return order\n").commit("orders")
    index(repo.path)
    response = search(SearchRequest.build("cancel_order"), str(repo.path),
                      settings=Settings.from_env())
    assert response.unindexed is None


def test_a_search_names_the_commits_and_new_files_its_index_lacks(fm_home, make_repo):
    repo = _lagging_repo(make_repo)
    response = search(SearchRequest.build("log every state change"), str(repo.path),
                      settings=Settings.from_env())
    assert response.unindexed == {"commits": 2, "new_files": 1, "changed_files": 1,
                                  "new_paths": ["shop/logger.py"], "deleted_files": 0,
                                  "moved_files": 0}
    code, out = run_cli("search", "log every state change", "--repo", str(repo.path))
    assert code == 0 and ("not indexed yet: 2 commits; 1 new file not searched "
                          "(shop/logger.py); 1 changed file verified as it is now") in out


def test_a_file_answer_names_what_its_index_lacks(fm_home, make_repo):
    repo = _lagging_repo(make_repo)
    response = search_files(SearchRequest.build("log every state change"), str(repo.path),
                            settings=Settings.from_env())
    assert response.to_dict()["unindexed"]["new_paths"] == ["shop/logger.py"]
    code, out = run_cli("search", "log every state change", "--files", "--repo", str(repo.path))
    assert code == 0 and "not indexed yet: 2 commits; 1 new file not searched" in out


def test_a_context_slice_says_what_its_index_lacks(fm_home, make_repo):
    repo = _lagging_repo(make_repo)
    code, out = run_cli("context", "log every state change", "--repo", str(repo.path))
    assert code == 0
    assert "not indexed yet: 2 commits; 1 new file not searched (shop/logger.py)" in out


def test_a_file_moved_since_the_index_is_one_move_verified_at_its_new_path(fm_home, make_repo):
    repo = make_repo("moved")
    repo.write("shop/orders.py", "def cancel_order(order):\n    return order\n").commit("orders")
    index(repo.path)
    repo.rename("shop/orders.py", "shop/ordering.py").commit("move orders")
    code, out = run_cli("search", "cancel_order", "--repo", str(repo.path))
    assert code == 0 and "not indexed yet: 1 commit; 1 moved file verified at its new path\n" \
        in out


def test_a_file_moved_and_edited_since_the_index_is_counted_as_moved_as_the_search_serves_it(
        fm_home, make_repo):
    repo = make_repo("moved")
    body = "".join(f"    total += {n}\n" for n in range(12))
    repo.write("shop/orders.py", f"def cancel_order(order):\n{body}    return total\n")
    repo.commit("orders")
    index(repo.path)
    repo.rename("shop/orders.py", "shop/ordering.py")
    repo.write("shop/ordering.py", "# orders, renamed\n" + (repo.path / "shop/ordering.py")
               .read_text()).commit("move and edit orders")
    response = search(SearchRequest.build("cancel_order"), str(repo.path),
                      settings=Settings.from_env())
    assert response.results[0].code_today is not None
    assert response.results[0].code_today[0] == "shop/ordering.py"
    assert response.unindexed is not None
    assert (response.unindexed["moved_files"], response.unindexed["new_files"],
            response.unindexed["deleted_files"]) == (1, 0, 0)


def test_a_file_deleted_since_the_index_is_counted_as_deleted_not_changed(fm_home, make_repo):
    repo = _lagging_repo(make_repo)
    repo.delete("shop/orders.py").commit("drop orders")
    response = search(SearchRequest.build("log every state change"), str(repo.path),
                      settings=Settings.from_env())
    assert response.unindexed is not None
    assert (response.unindexed["changed_files"], response.unindexed["deleted_files"]) == (0, 1)

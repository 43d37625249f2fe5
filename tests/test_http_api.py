"""POST /v1/search, /v1/verify, /v1/context through a real FastAPI app (the router alone)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from search_fixtures import PATHS, build_shop, file_sha256, index

from freshmark.faces.http.search_routes import router


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    app.include_router(router)
    return TestClient(app)


def test_openapi_lists_the_three_endpoints_with_their_models(client):
    spec = client.get("/openapi.json").json()
    assert {"/v1/search", "/v1/verify", "/v1/context"} <= set(spec["paths"])
    search_ok = spec["paths"]["/v1/search"]["post"]["responses"]["200"]
    assert search_ok["content"]["application/json"]["schema"]["$ref"].endswith(
        "/SearchResponseModel")
    result = spec["components"]["schemas"]["VerifiedResultModel"]["properties"]
    assert {"blob_sha", "content_sha256", "verdict", "reason", "citation"} <= set(result)
    assert "404" in spec["paths"]["/v1/context"]["post"]["responses"]


def test_search_returns_verified_results_and_the_index(store_env, make_repo, client):
    shop = build_shop(make_repo)
    response = client.post("/v1/search", json={"query": "OrderService cancel_order",
                                                "repo": str(shop.path), "k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["index"]["commit"] == shop.dropped
    top = {r["symbol"]: r for r in body["results"]}["OrderService.cancel_order"]
    assert top["verdict"] == "older_identical" and top["citation"].startswith("source:  ")


def test_verify_checks_each_line(fm_home, make_repo, client):
    shop = build_shop(make_repo, index_before_change=False)
    index(shop.path)  # over the network only a known (indexed) repository can be named
    prefix = file_sha256(shop, shop.head, PATHS["service"])[:12]
    content = f"{PATHS['service']}\t{prefix}\n../../etc/passwd\tabcdef12"
    response = client.post("/v1/verify", json={"content": content, "repo": str(shop.path)})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(x["line"], x["verdict"]) for x in body["lines"]] == [(1, "current"), (2, "invalid")]
    assert body["safe"] is False


def test_context_returns_text_ready_for_a_prompt(fm_home, make_repo, client):
    shop = build_shop(make_repo)
    response = client.post("/v1/context", json={"query": "OrderService cancel_order",
                                                 "repo": str(shop.path), "budget": 2000})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["used_tokens"] <= 2000
    assert f"[{PATHS['service']}:L12-L17 | OrderService.cancel_order | high]" in body["text"]


@pytest.mark.parametrize(("path", "payload", "status", "error"), [
    ("/v1/search", {"query": "", "repo": "{repo}"}, 400, "BadInput"),
    ("/v1/search", {"query": "x" * 100_001, "repo": "{repo}"}, 400, "BadInput"),
    ("/v1/search", {"query": "cancel", "repo": "no-such-repo"}, 404, "NotIndexed"),
    ("/v1/search", {"query": "cancel", "repo": "{repo}", "branch": "nope"}, 404,
     "BranchNotFound"),
    ("/v1/context", {"query": "cancel", "repo": "{repo}", "budget": 0}, 400, "BadInput"),
    ("/v1/verify", {"content": "", "repo": "{repo}"}, 400, "BadInput"),
    ("/v1/verify", {"content": "a\x00b", "repo": "{repo}"}, 400, "BadInput"),
])
def test_bad_requests_get_a_clear_error(fm_home, make_repo, client, path, payload, status, error):
    shop = build_shop(make_repo)
    body = {k: (v.replace("{repo}", str(shop.path)) if isinstance(v, str) else v)
            for k, v in payload.items()}
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert detail["error"] == error and detail["message"]


def test_out_of_range_k_is_a_validation_error(client):
    response = client.post("/v1/search", json={"query": "x", "repo": "r", "k": 0})
    assert response.status_code == 422


def test_check_answer_judges_an_answer_against_the_slice_it_came_from(fm_home, make_repo,
                                                                      client):
    shop = build_shop(make_repo)
    context = client.post("/v1/context", json={"query": "OrderService cancel_order",
                                                "repo": str(shop.path)}).json()
    main = next(s for s in context["sections"] if s["role"] == "evidence")
    answer = (f"[{main['path']}:L{main['start_line']}-L{main['end_line']} | "
              f"{main['symbol']} | high] and [{main['path']}:L500-L510 | x | low]")
    response = client.post("/v1/check-answer", json={"answer": answer, "context": context})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["refs"], body["hallucinated_refs"], body["passed"]) == (2, 1, False)


def test_check_answer_refuses_a_context_that_is_not_a_slice(fm_home, client):
    response = client.post("/v1/check-answer", json={"answer": "[a.py:L1-L2 | f | high]",
                                                      "context": {"results": []}})
    assert response.status_code == 422
    assert "sections" in response.text

"""``/openapi.json`` describes what the server does: each route's real answers and bodies, and
input bounds equal to (or stricter than) the checks the server makes."""

from __future__ import annotations

import re

import pytest
from cluster_support import Recorder
from fastapi.testclient import TestClient

from freshmark.adapters.git import names
from freshmark.core import errors, request, snippets
from freshmark.core.config import Config
from freshmark.core.kinds import FILE_KINDS
from freshmark.faces.api import schema as api_schema
from freshmark.faces.api import served
from freshmark.faces.http.app import create_app

TOKEN = "schema-t0ken"
API_ROUTES = ["/v1/search", "/v1/search/files", "/v1/verify", "/v1/context"]
ERROR_REF = "#/components/schemas/ErrorBody"


@pytest.fixture
def app(redis_client):
    return create_app(config=Config(repos=()), client=redis_client, send=Recorder(),
                      env={"FRESHMARK_API_TOKEN": TOKEN}, bind_host="0.0.0.0")


@pytest.fixture
def spec(app) -> dict:
    http = TestClient(app, base_url="http://127.0.0.1:8080")
    answer = http.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    return answer.json()


def _request(spec: dict, name: str) -> dict:
    return spec["components"]["schemas"][name]["properties"]


def _error_schema(operation: dict, status: str) -> dict:
    return operation["responses"][status]["content"]["application/json"]["schema"]


@pytest.mark.parametrize("path", API_ROUTES)
def test_api_routes_list_every_error_status_with_freshmarks_error_body(spec, path):
    operation = spec["paths"][path]["post"]
    for status in ("400", "401", "403", "404", "408", "409", "413", "422", "503"):
        assert _error_schema(operation, status) == {"$ref": ERROR_REF}, status


def test_the_422_body_the_app_sends_is_the_documented_error_body(app, spec):
    http = TestClient(app, base_url="http://127.0.0.1:8080")
    answer = http.post("/v1/search", content=b"{not json",
                       headers={"Authorization": f"Bearer {TOKEN}",
                                "Content-Type": "application/json"})
    assert answer.status_code == 422
    assert set(answer.json()) == {"detail"} and set(answer.json()["detail"]) == {"error",
                                                                                "message"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_metrics_is_documented_as_plain_text(spec):
    responses = spec["paths"]["/metrics"]["get"]["responses"]
    assert list(responses["200"]["content"]) == ["text/plain"]
    assert _error_schema(spec["paths"]["/metrics"]["get"], "401") == {"$ref": ERROR_REF}


def test_healthz_is_documented_with_its_200_and_503(spec):
    responses = spec["paths"]["/healthz"]["get"]["responses"]
    assert responses["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/HealthOk")
    assert responses["503"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/HealthDown")
    assert "401" not in responses  # public


def test_webhook_and_branch_routes_list_no_422_they_never_give(spec):
    for path in ("/webhooks/{repo_id}", "/branches/{repo_id}"):
        assert "422" not in spec["paths"][path]["post"]["responses"]


def test_branch_request_body_is_documented(spec):
    body = spec["paths"]["/branches/{repo_id}"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["required"] == ["branch"] and "pattern" in schema["properties"]["branch"]


def test_schema_limits_are_the_servers_own(spec):
    assert api_schema.MAX_K == request.MAX_K
    assert api_schema.MAX_QUERY_BYTES == request.MAX_QUERY_BYTES
    assert api_schema.MIN_BUDGET_TOKENS == request.MIN_BUDGET_TOKENS
    assert api_schema.MAX_BRANCH_NAME_CHARS == names.MAX_BRANCH_NAME_CHARS


def test_k_is_bounded_1_to_100(spec):
    k = _request(spec, "SearchRequest")["k"]
    assert (k["minimum"], k["maximum"]) == (1, 100)


def test_budget_is_bounded_as_the_server_enforces(spec):
    budget = _request(spec, "ContextRequest")["budget"]["anyOf"][0]
    assert (budget["minimum"], budget["maximum"]) == (request.MIN_BUDGET_TOKENS,
                                                      served.MAX_BUDGET_TOKENS)


def test_query_length_in_characters_cannot_exceed_the_byte_limit(spec):
    query = _request(spec, "SearchRequest")["query"]
    assert query["minLength"] == 1
    assert query["maxLength"] * 4 <= request.MAX_QUERY_BYTES  # 4 bytes: the widest UTF-8
    widest = "a" + "\U0001f600" * (query["maxLength"] - 1)  # a word, then 4-byte characters
    assert re.search(query["pattern"], widest)
    assert request.validate_query(widest) == widest


@pytest.mark.parametrize("text", ["", " ", "\t\n", "a\x00b", "\x00"])
def test_query_pattern_refuses_what_the_server_refuses(spec, text):
    pattern = _request(spec, "SearchRequest")["query"]["pattern"]
    assert not re.search(pattern, text)


@pytest.mark.parametrize("text", ["\x1c", "\x1f", " \x1d\x1e ", "\x85"])
def test_query_pattern_refuses_what_the_server_strips_where_backslash_s_lacks_it(spec, text):
    # ECMA-262's \s, as a JSON-schema tool reads it, lacks these; the server strips them.
    pattern = _request(spec, "SearchRequest")["query"]["pattern"]
    assert not re.search(pattern, text, re.ASCII)
    with pytest.raises(errors.BadInput):
        request.validate_query(text)


def test_kind_items_are_the_file_kinds(spec):
    kind = _request(spec, "SearchRequest")["kind"]["anyOf"][0]
    assert kind["items"]["enum"] == list(FILE_KINDS)


def test_level_accepts_upper_and_lower_case(spec):
    assert _request(spec, "ContextRequest")["level"]["enum"] == ["L1", "L2", "L3",
                                                                  "l1", "l2", "l3"]


@pytest.mark.parametrize("name", ["", " ", "a" * 257, "shop\n", "a\x00", "x\x7f", "\tshop"])
def test_repo_pattern_and_length_refuse_what_served_refuses(spec, name):
    repo = _request(spec, "SearchRequest")["repo"]
    in_schema = len(name) <= repo["maxLength"] and bool(re.search(repo["pattern"], name))
    assert not in_schema
    with pytest.raises(errors.BadInput):
        served.check_repo_name(name)


@pytest.mark.parametrize("content", ["", "  \n", "# only a comment", "a\tb\x00",
                                     "a\tabcdef12\n" * 2000 + "x"])
def test_verify_content_schema_refuses_what_the_server_refuses(spec, content):
    schema = _request(spec, "VerifyRequest")["content"]
    assert not (len(content) <= schema["maxLength"] and re.search(schema["pattern"], content))


@pytest.mark.parametrize("content", ["[]", "[ ]\n", "[]\n[]", '{"results": []}',
                                     '{"results": [], "n": 0}'])
def test_verify_content_schema_refuses_json_without_a_result(spec, content):
    schema = _request(spec, "VerifyRequest")["content"]
    assert not re.search(schema["pattern"], content)
    with pytest.raises(errors.BadInput, match="nothing to verify"):
        snippets.parse_snippets(content)


def test_verify_content_schema_accepts_a_2000_line_list(spec):
    schema = _request(spec, "VerifyRequest")["content"]
    content = "src/a.py\tabcdef12\n" * 1999 + "src/a.py\tabcdef12"
    assert len(content) <= schema["maxLength"] and re.search(schema["pattern"], content)
    served.check_verify_lines(content)


@pytest.mark.parametrize("name", ["main", "feature/x-1", "release/1.2.3", "a.b", "x.locky"])
def test_branch_pattern_accepts_git_branch_names(spec, name):
    assert re.search(api_schema.BRANCH_NAME, name) and names.is_valid_branch_name(name)


@pytest.mark.parametrize("name", ["a..b", "x.lock", "x.lock/y", "-x", "a/.b", "a.", "a//b",
                                  "a/", "a b", "a:b", "a\x06", "@", "a@{b"])
def test_branch_pattern_refuses_what_git_refuses(spec, name):
    assert not re.search(api_schema.BRANCH_NAME, name)


def test_worktree_with_a_branch_is_outside_the_schema(spec):
    schema = spec["components"]["schemas"]["SearchRequest"]
    assert schema["if"]["properties"]["worktree"] == {"const": True}
    assert schema["then"]["properties"]["branch"] == {"type": "null"}


def test_an_undecodable_body_gets_freshmarks_error_body(app):
    http = TestClient(app, base_url="http://127.0.0.1:8080")
    answer = http.post("/v1/search", content=b"\xff\x16",
                       headers={"Authorization": f"Bearer {TOKEN}",
                                "Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["detail"]["error"] == "BadInput"


def test_a_wrong_method_keeps_its_allow_header_in_freshmarks_shape(app):
    http = TestClient(app, base_url="http://127.0.0.1:8080")
    answer = http.get("/v1/search", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    assert answer.json()["detail"]["error"] == "MethodNotAllowed"

"""What the MCP tools tell an agent, read through a real MCP client session: per-argument
descriptions and bounds, an output schema per tool that the answers conform to, and the
server's version."""

from __future__ import annotations

import anyio
import jsonschema
import pytest
from mcp import Client
from search_fixtures import PATHS, build_shop, file_sha256

from freshmark import __version__
from freshmark.core.kinds import FILE_KINDS
from freshmark.faces.api import served
from freshmark.faces.api.schema import MIN_BUDGET_TOKENS
from freshmark.faces.mcp.server import build_server

TOOLS = ["search", "search_files", "verify", "context", "check_answer"]


def _listed() -> tuple[object, dict[str, object]]:
    async def run():
        async with Client(build_server()) as client:
            tools = (await client.list_tools()).tools
            return client.server_info, {tool.name: tool for tool in tools}

    return anyio.run(run)


@pytest.fixture(scope="module")
def listed():
    return _listed()


def _inputs(listed, tool: str) -> dict:
    return listed[1][tool].input_schema["properties"]


def _call(name: str, arguments: dict):
    async def run():
        async with Client(build_server()) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(run)


def test_server_reports_the_package_version(listed):
    info = listed[0]
    assert info.name == "freshmark" and info.version == __version__


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_argument_has_a_description(listed, tool):
    missing = [name for name, field in _inputs(listed, tool).items()
               if not field.get("description")]
    assert not missing


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_declares_an_output_schema(listed, tool):
    schema = listed[1][tool].output_schema
    assert schema and schema["type"] == "object" and schema["required"]


@pytest.mark.parametrize("tool", ["search", "search_files"])
def test_k_is_bounded_1_to_100(listed, tool):
    k = _inputs(listed, tool)["k"]
    assert (k["minimum"], k["maximum"]) == (1, 100)


@pytest.mark.parametrize("tool", ["search", "search_files", "context"])
def test_query_is_bounded_not_blank_and_within_the_byte_limit(listed, tool):
    query = _inputs(listed, tool)["query"]
    assert query["minLength"] == 1 and query["maxLength"] * 4 <= 100_000
    assert "pattern" in query


def test_budget_bounds_are_the_servers(listed):
    budget = _inputs(listed, "context")["budget"]["anyOf"][0]
    assert (budget["minimum"], budget["maximum"]) == (MIN_BUDGET_TOKENS,
                                                      served.MAX_BUDGET_TOKENS)


def test_kind_items_are_the_file_kinds(listed):
    kind = _inputs(listed, "search")["kind"]["anyOf"][0]
    assert kind["items"]["enum"] == list(FILE_KINDS)


def test_level_lists_both_cases(listed):
    assert _inputs(listed, "context")["level"]["enum"] == ["L1", "L2", "L3", "l1", "l2", "l3"]


def test_repo_and_content_are_bounded(listed):
    repo = _inputs(listed, "verify")["repo"]
    content = _inputs(listed, "verify")["content"]
    assert repo["maxLength"] == served.MAX_REPO_CHARS and "pattern" in repo
    assert content["minLength"] == 1 and "pattern" in content


def test_a_lower_case_level_reaches_the_tool(fm_home):
    result = _call("context", {"query": "x", "repo": "nope", "level": "l2"})
    assert result.is_error and "NotIndexed" in result.content[0].text


def test_k_out_of_bounds_is_refused_before_the_tool_runs(fm_home):
    result = _call("search", {"query": "x", "repo": "nope", "k": 101})
    assert result.is_error and "NotIndexed" not in result.content[0].text


@pytest.mark.parametrize(("tool", "arguments"), [
    ("search", {"query": "ensure_cancellable", "k": 3}),
    ("search_files", {"query": "ensure_cancellable", "k": 2}),
    ("context", {"query": "OrderService cancel_order", "level": "l1"}),
])
def test_structured_answers_conform_to_the_output_schema(fm_home, make_repo, listed, tool,
                                                         arguments):
    build_shop(make_repo)
    result = _call(tool, {**arguments, "repo": "shop"})
    assert not result.is_error, result.content
    jsonschema.validate(result.structured_content, listed[1][tool].output_schema)


def test_verify_answer_conforms_to_the_output_schema(fm_home, make_repo, listed):
    shop = build_shop(make_repo)
    content = f"{PATHS['service']}\t{file_sha256(shop, shop.head, PATHS['service'])[:12]}\n"
    result = _call("verify", {"content": content, "repo": "shop"})
    assert not result.is_error, result.content
    jsonschema.validate(result.structured_content, listed[1]["verify"].output_schema)

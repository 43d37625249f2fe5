"""The MCP tools, called through a real MCP client session over in-memory streams."""

from __future__ import annotations

import contextlib
import os
import sys

import anyio
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import Client, StdioServerParameters
from search_fixtures import PATHS, build_shop, file_sha256, index

from freshmark.faces.mcp.server import build_server, create_asgi_app


def call(name: str, arguments: dict) -> tuple[bool, dict | None, str]:
    """(is_error, structured result, text) of one tool call on a fresh server."""

    async def run() -> tuple[bool, dict | None, str]:
        async with Client(build_server()) as client:
            result = await client.call_tool(name, arguments)
            text = "".join(getattr(block, "text", "") for block in result.content)
            return result.is_error, result.structured_content, text

    return anyio.run(run)


def test_server_offers_search_search_files_verify_context_and_check_answer():
    async def names() -> set[str]:
        async with Client(build_server()) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert anyio.run(names) == {"search", "search_files", "verify", "context", "check_answer"}


def test_search_tool_returns_verified_results(fm_home, make_repo):
    shop = build_shop(make_repo)
    is_error, result, _ = call("search", {"query": "ensure_cancellable", "repo": str(shop.path),
                                          "k": 3})
    assert not is_error and result is not None
    rule = next(r for r in result["results"] if r["symbol"] == "ensure_cancellable")
    assert rule["verdict"] == "changed" and "is_final(order)" in rule["text"]


def test_verify_tool_answers_per_line(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    index(shop.path)  # over the network only a known (indexed) repository can be named
    content = f"{PATHS['service']}\t{file_sha256(shop, shop.head, PATHS['service'])[:12]}\n"
    is_error, result, _ = call("verify", {"content": content, "repo": str(shop.path)})
    assert not is_error and result is not None
    assert result["lines"][0]["verdict"] == "current" and result["safe"] is True


def test_context_tool_returns_a_slice(fm_home, make_repo):
    shop = build_shop(make_repo)
    is_error, result, _ = call("context", {"query": "OrderService cancel_order",
                                           "repo": str(shop.path), "level": "L1"})
    assert not is_error and result is not None
    assert "[MISSING]" in result["text"] and result["used_tokens"] <= 4000


def test_tool_errors_carry_freshmarks_message(fm_home):
    is_error, _, text = call("search", {"query": "", "repo": "anything"})
    assert is_error and "BadInput: query is empty" in text


def test_asgi_app_serves_at_its_root_for_mounting():
    server = build_server()
    app = create_asgi_app(server)
    assert [route.path for route in app.routes] == ["/"]
    assert server.session_manager is not None


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}


def test_asgi_app_mounted_at_mcp_answers_over_http():
    server = build_server()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        async with server.session_manager.run():
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/mcp", create_asgi_app(server))
    headers = {"accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:  # a loopback Host
        response = client.post("/mcp/", json=INITIALIZE, headers=headers)
    assert response.status_code == 200
    assert '"name":"freshmark"' in response.text.replace(" ", "")


def test_freshmark_mcp_serves_the_tools_on_stdio(fm_home):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "freshmark.faces.cli.main", "mcp"],
                                   env=dict(os.environ))

    async def names() -> set[str]:
        async with Client(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert anyio.run(names) == {"search", "search_files", "verify", "context", "check_answer"}


def test_check_answer_tool_judges_an_answer_against_its_slice(fm_home, make_repo):
    shop = build_shop(make_repo)
    _, context, _ = call("context", {"query": "OrderService cancel_order",
                                     "repo": str(shop.path)})
    assert context is not None
    answer = f"[{PATHS['service']}:L900-L901 | OrderService.cancel_order | high]"
    is_error, result, _ = call("check_answer", {"answer": answer, "context": context})
    assert not is_error and result is not None
    assert result["hallucinated_refs"] == 1 and result["passed"] is False


def test_a_misspelt_tool_argument_is_an_error_naming_it(fm_home, make_repo):
    shop = build_shop(make_repo)
    is_error, _, text = call("search", {"query": "cancel order", "repo": str(shop.path),
                                        "top_k": 1})
    assert is_error and "unknown argument 'top_k'" in text and "k" in text

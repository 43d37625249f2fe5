"""Context levels are accepted in any case, on the CLI, over HTTP and as an MCP tool."""

from __future__ import annotations

import json

import anyio
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import Client
from search_fixtures import build_shop

from freshmark.faces.cli.main import cli
from freshmark.faces.http.search_routes import router
from freshmark.faces.mcp.server import build_server

QUERY = "OrderService cancel_order"


def test_cli_context_accepts_a_lowercase_level(fm_home, make_repo) -> None:
    shop = build_shop(make_repo)
    done = CliRunner().invoke(cli, ["context", QUERY, "--repo", str(shop.path), "--level", "l2",
                                    "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["level"] == "L2"


def test_http_context_accepts_a_lowercase_level(fm_home, make_repo) -> None:
    shop = build_shop(make_repo)
    app = FastAPI()
    app.include_router(router)
    answer = TestClient(app).post("/v1/context", json={"query": QUERY, "repo": str(shop.path),
                                                       "level": "l2"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["level"] == "L2"


def test_http_context_still_refuses_an_unknown_level() -> None:
    app = FastAPI()
    app.include_router(router)
    answer = TestClient(app).post("/v1/context", json={"query": QUERY, "repo": "x",
                                                       "level": "l4"})
    assert answer.status_code == 422


def test_mcp_context_tool_accepts_a_lowercase_level(fm_home, make_repo) -> None:
    shop = build_shop(make_repo)

    async def run() -> tuple[bool, dict | None]:
        async with Client(build_server()) as client:
            result = await client.call_tool("context", {"query": QUERY, "repo": str(shop.path),
                                                        "level": "l3"})
            return result.is_error, result.structured_content

    is_error, result = anyio.run(run)
    assert not is_error and result is not None and result["level"] == "L3"

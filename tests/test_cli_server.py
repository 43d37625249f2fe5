"""The CLI asks a running ``freshmark serve`` when one is configured (``FRESHMARK_SERVER_URL``).

A real server process over a real Chroma server; the CLI runs with its own store made
unreachable (a dead Chroma URL), so an answer can only have come from the server, and it must
print what a local search of the same index prints.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from cluster_support import (
    FRESHMARK,
    REDIS_HOST,
    REDIS_PORT,
    REPO_ROOT,
    UNIT_DB,
    _healthy,
    free_port,
    wait_until,
)
from repo_builder import RepoBuilder

from freshmark.faces.cli.main import cli

TOKEN = "cli-server-test-token"
ORDERS = '''"""Orders."""


class OrderService:
    """Application service for orders."""

    def cancel_order(self, order_id: str) -> None:
        """Cancel an order; a second cancel returns the first result."""
        order = self.repo.get(order_id)
        order.cancel()

    def place_order(self, items: list) -> str:
        return self.repo.add(items)
'''
PAYMENTS = '''def refund(payment, amount):
    """Give money back on a captured payment."""
    payment.amount -= amount
    return payment
'''


def run(*args: str, **env: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture
def shop(fm_home: Path, chroma_server, make_repo, monkeypatch, tmp_path: Path) -> RepoBuilder:
    """A repository indexed under a name of its own (the Chroma server outlives the test)."""
    monkeypatch.setenv("FRESHMARK_CHROMA_URL", chroma_server.url)
    monkeypatch.delenv("FRESHMARK_SERVER_URL", raising=False)
    monkeypatch.setenv("FRESHMARK_API_TOKEN", TOKEN)
    repo = make_repo(f"shop-{tmp_path.name}")
    repo.write("src/orders.py", ORDERS).write("src/payments.py", PAYMENTS).commit("shop")
    indexed = run("index", str(repo.path))
    assert indexed.exit_code == 0, indexed.output
    return repo


@pytest.fixture
def server(shop: RepoBuilder, tmp_path: Path) -> Iterator[str]:
    """``freshmark serve`` in its own process, over the store the shop was indexed into."""
    port = free_port()
    env = {**os.environ, "FRESHMARK_REDIS_URL": f"redis://{REDIS_HOST}:{REDIS_PORT}/{UNIT_DB}",
           "PYTHONPATH": str(REPO_ROOT)}
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen([*FRESHMARK, "serve", "--port", str(port), "--loglevel",
                                 "warning"], cwd=REPO_ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _healthy(base_url) or proc.poll() is not None, 60, "the server")
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        yield base_url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def without_timings(output: str) -> dict:
    """A JSON answer less the time each stage took (differs from run to run)."""
    answer = json.loads(output)
    answer.pop("timings", None)
    return answer


def through(server_url: str, *args: str, token: str = TOKEN) -> Result:
    """The CLI pointed at the server, with a store of its own it cannot reach."""
    dead_store = f"http://127.0.0.1:{free_port()}"
    return run(*args, FRESHMARK_SERVER_URL=server_url, FRESHMARK_API_TOKEN=token,
               FRESHMARK_CHROMA_URL=dead_store)


def test_search_through_the_server_prints_what_a_local_search_prints(shop, server):
    local = run("search", "cancel an order", "--repo", str(shop.path))
    remote = through(server, "search", "cancel an order", "--repo", str(shop.path))
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    assert "cancel_order" in remote.stdout
    assert remote.stdout == local.stdout


def test_search_json_through_the_server_equals_the_local_json(shop, server):
    args = ("search", "refund a payment", "--repo", str(shop.path), "--json", "-k", "3")
    local, remote = run(*args), through(server, *args)
    assert remote.exit_code == 0, remote.output
    assert without_timings(remote.stdout) == without_timings(local.stdout)


def test_file_search_through_the_server_equals_the_local_one(shop, server):
    args = ("search", "orders", "--repo", str(shop.path), "--files", "--json")
    local, remote = run(*args), through(server, *args)
    assert remote.exit_code == 0, remote.output
    assert without_timings(remote.stdout) == without_timings(local.stdout)


def test_context_through_the_server_prints_the_local_slice(shop, server):
    args = ("context", "OrderService.cancel_order", "--repo", str(shop.path))
    local, remote = run(*args), through(server, *args)
    assert remote.exit_code == 0, remote.output
    assert "cancel_order" in remote.stdout
    assert remote.stdout == local.stdout


def test_a_server_that_is_down_is_a_retryable_error(shop):
    down = f"http://127.0.0.1:{free_port()}"
    result = through(down, "search", "cancel an order", "--repo", str(shop.path))
    assert result.exit_code == 3
    assert f"the freshmark server at {down} did not answer" in result.stderr


@pytest.mark.parametrize("url", ["notaurl", "http//127.0.0.1:8091", "127.0.0.1:8091",
                                 "ftp://127.0.0.1/"])
def test_a_server_address_that_is_no_http_url_is_a_configuration_error(fm_home, make_repo,
                                                                      url):
    repo = make_repo("shop")
    result = run("search", "cancel order", "--repo", str(repo.path), FRESHMARK_SERVER_URL=url)
    assert result.exit_code == 2, result.output
    assert "is not an http(s) address" in result.output and "Traceback" not in result.output


def test_a_path_whose_name_the_server_gives_another_repository_is_refused(shop, server,
                                                                         tmp_path):
    twin = RepoBuilder.init(tmp_path / "twin" / shop.path.name)  # same name, never indexed
    twin.write("src/orders.py", ORDERS).commit("twin")
    result = through(server, "search", "cancel an order", "--repo", str(twin.path))
    assert result.exit_code == 2
    assert "is another one than" in result.stderr


def test_a_token_the_server_refuses_is_a_configuration_error(shop, server):
    result = through(server, "search", "cancel an order", "--repo", str(shop.path),
                     token="not-the-token")
    assert result.exit_code == 2
    assert "refused the request (401)" in result.stderr
    assert "not-the-token" not in result.stderr


def test_status_through_the_server_equals_the_local_status(shop, server):
    args = ("status", str(shop.path), "--json")
    local, remote = run(*args), through(server, *args)
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    rows = json.loads(remote.stdout)
    assert [row["branch"] for row in rows] == ["main"]
    assert rows[0]["live_chunks"] > 0
    assert rows == json.loads(local.stdout)


def test_status_of_one_branch_through_the_server_names_only_that_branch(shop, server):
    result = through(server, "status", str(shop.path), "--branch", "main")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{shop.path.name}@main")
    assert "chunks:" in result.stdout


def test_status_of_a_branch_never_indexed_through_the_server_is_not_indexed(shop, server):
    result = through(server, "status", str(shop.path), "--branch", "feature/x{1}")
    assert result.exit_code == 2, result.output
    assert "feature/x{1}" in result.stderr


def test_status_over_http_needs_a_token_and_names_no_host_path(shop, server):
    import urllib.error
    import urllib.request

    route = f"{server}/v1/repos/{shop.path.name}/status"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(route, timeout=30)
    assert refused.value.code == 401
    asked = urllib.request.Request(route, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(asked, timeout=30) as answer:
        body = answer.read().decode()
    assert json.loads(body)["branches"][0]["branch"] == "main"
    assert str(shop.path) not in body

"""Search answers are compact by default and full on request: the human output shows a
bounded number of lines per result and says what it cut; JSON, HTTP and MCP keep the contract's
fields and leave out the empty ones and the ranking diagnostics unless ``full`` is asked for."""

from __future__ import annotations

import json

import anyio
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import Client
from search_fixtures import build_shop, index

from freshmark.core.chunking import chunk_text
from freshmark.core.stamp import MANDATORY_FIELDS
from freshmark.faces.api.render import SHOWN_LINES
from freshmark.faces.api.render import code_lines as code_lines_of
from freshmark.faces.cli.main import cli
from freshmark.faces.http.search_routes import router
from freshmark.faces.mcp.server import build_server

DOC_LINES = 40
# A function whose docstring alone is longer than what the human output shows.
PARSER = ('def parse_invoice(text: str) -> dict:\n    """Parse an invoice.\n\n'
          + "".join(f"    Rule {n}: invoice field {n} is read from its own line.\n"
                    for n in range(DOC_LINES))
          + '    """\n    return {"lines": text.splitlines()}\n')
CONTRACT_FIELDS = {*MANDATORY_FIELDS, "verdict", "reason", "citation", "text", "rank"}


def run_cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def build_billing(make_repo):
    repo = make_repo("billing")
    repo.write("billing/invoices.py", PARSER).commit("invoices")
    index(repo.path)
    return repo


def code_lines(out: str) -> list[str]:
    """The indented lines under the citation header of the one result."""
    return [line for line in out.splitlines()[out.splitlines().index("") + 5:]
            if line.startswith("    ")]


def test_human_output_shows_a_bounded_number_of_lines_and_what_was_cut(fm_home, make_repo):
    repo = build_billing(make_repo)
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1")
    shown = code_lines(out)
    total = len(PARSER.splitlines())
    assert len(shown) == SHOWN_LINES + 1
    assert shown[0] == "    def parse_invoice(text: str) -> dict:"
    assert shown[-1] == f"    … {total - SHOWN_LINES} more lines (--full shows all)"


def test_a_constant_looked_up_in_a_module_block_is_shown_from_its_declaration(
        fm_home, make_repo):
    repo = make_repo("billing")
    table = "".join(f"RATE_{n} = {n} / 100\n" for n in range(30))
    repo.write("billing/rates.py", f'"""Rates."""\n\n{table}DEFAULT_RATE = RATE_7\n')
    repo.commit("rates")
    index(repo.path)
    answer = json.loads(run_cli("search", "DEFAULT_RATE", "--repo", str(repo.path), "-k", "1",
                                "--json"))
    assert answer["results"][0]["declared_at"] == 33
    shown = code_lines(run_cli("search", "DEFAULT_RATE", "--repo", str(repo.path), "-k", "1"))
    assert shown[0] == "    ⋮ (30 lines above; L33 declares it)"
    assert "    DEFAULT_RATE = RATE_7" in shown


def test_a_local_variable_named_like_the_method_looked_up_is_no_declaration_of_it(
        fm_home, make_repo):
    repo = make_repo("client")
    steps = "".join(f"    step_{n} = {n}\n" for n in range(12))
    repo.write("client/request.rb", "class Request\n  def handle_response\n"
               f"{steps}    raw_body = body\n    parse(raw_body)\n  end\nend\n")
    repo.commit("request")
    index(repo.path)
    answer = json.loads(run_cli("search", "Request.raw_body", "--repo", str(repo.path), "-k",
                                "3", "--json"))
    handler = [r for r in answer["results"] if r["symbol"] == "Request.handle_response"]
    assert handler and "declared_at" not in handler[0]


def test_an_interface_method_looked_up_is_shown_from_its_own_comment(fm_home, make_repo):
    repo = make_repo("calls")
    methods = "".join(f"  /**\n   * Step {n} of a call.\n   */\n  void step{n}();\n\n"
                      for n in range(6))
    repo.write("src/Call.java", "package calls;\n\n/** A call. */\npublic interface Call {\n"
               f"{methods}  /**\n   * Send it later.\n   */\n  void enqueue(Callback c);\n}}\n")
    repo.commit("call")
    index(repo.path)
    answer = json.loads(run_cli("search", "Call.enqueue", "--repo", str(repo.path), "-k", "1",
                                "--json"))
    assert (answer["results"][0]["symbol"], answer["results"][0]["declared_at"]) == ("Call", 38)
    shown = code_lines(run_cli("search", "Call.enqueue", "--repo", str(repo.path), "-k", "1"))
    assert shown[:5] == ["    ⋮ (32 lines above; L38 declares it)", "      /**",
                         "       * Send it later.", "       */", "      void enqueue(Callback c);"]


def test_an_enum_member_looked_up_is_shown_from_its_line_in_the_class_outline(
        fm_home, make_repo):
    repo = make_repo("http")
    members = "".join(f"    STATUS_{n} = {n}, \"Status {n}\"\n" for n in range(30))
    repo.write("http/codes.py", "from enum import IntEnum\n\n\nclass codes(IntEnum):\n"
               "    \"\"\"Status codes.\"\"\"\n\n    def phrase(self):\n"
               "        \"\"\"Its reason phrase.\"\"\"\n        text = self.name\n"
               "        return text.title()\n\n"
               f"{members}    NOT_FOUND = 404, \"Not Found\"\n")
    repo.commit("codes")
    index(repo.path)
    answer = json.loads(run_cli("search", "NOT_FOUND", "--repo", str(repo.path), "-k", "1",
                                "--json"))
    result = answer["results"][0]
    assert (result["symbol"], result["declared_at"]) == ("codes", 42)
    shown = code_lines(run_cli("search", "NOT_FOUND", "--repo", str(repo.path), "-k", "1"))
    assert shown[0].endswith("; L42 declares it)")
    assert '        NOT_FOUND = 404, "Not Found"' in shown


def test_full_human_output_shows_every_line(fm_home, make_repo):
    repo = build_billing(make_repo)
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1", "--full")
    assert [line[4:] for line in code_lines(out)] == PARSER.splitlines()
    assert "more lines" not in out


def test_signature_is_shown_when_the_lines_shown_do_not_hold_it(fm_home, make_repo):
    repo = make_repo("billing")
    decorators = "".join(f"@register('invoice-{n}')\n" for n in range(20))
    repo.write("billing/hooks.py", "def register(name):\n    return lambda f: f\n\n\n"
               + decorators + "def on_invoice(event):\n    return event\n").commit("hooks")
    index(repo.path)
    out = run_cli("search", "on_invoice", "--repo", str(repo.path), "-k", "1")
    assert "    signature: def on_invoice(event)\n" in out
    assert "    … 11 more lines (--full shows all)" in out  # 22 lines, 11 shown


def test_json_leaves_out_empty_fields_but_keeps_the_contract_fields(fm_home, make_repo):
    shop = build_shop(make_repo)
    response = json.loads(run_cli("search", "cancel order", "--repo", str(shop.path), "--json"))
    assert response["results"]
    for result in response["results"]:
        assert CONTRACT_FIELDS <= set(result)
        assert None not in result.values() and "explain" not in result
    live = [r for r in response["results"] if r["status"] == "live"]
    assert live and all("tombstoned_in" not in r and "successor" not in r for r in live)


def test_json_leaves_out_the_notes_that_say_nothing_and_the_full_form_keeps_them(
        fm_home, make_repo):
    shop = build_shop(make_repo)
    compact = json.loads(run_cli("search", "cancel order", "--repo", str(shop.path), "--json"))
    full = json.loads(run_cli("search", "cancel order", "--repo", str(shop.path), "--json",
                              "--full"))
    notes = {"uncommitted", "edited", "gone"}
    assert not notes & set(compact)
    assert notes <= set(full) and {full[name] for name in notes} == {None}


def test_full_json_keeps_every_field_nulls_and_diagnostics(fm_home, make_repo):
    shop = build_shop(make_repo)
    response = json.loads(run_cli("search", "cancel order", "--repo", str(shop.path), "--json",
                                  "--full"))
    for result in response["results"]:
        assert {"tombstoned_in", "successor", "current_start_line", "explain"} <= set(result)
        assert result["explain"]


def test_compact_json_is_verified_like_the_full_one(fm_home, make_repo):
    shop = build_shop(make_repo)
    compact = run_cli("search", "cancel order", "--repo", str(shop.path), "--json")
    full = run_cli("search", "cancel order", "--repo", str(shop.path), "--json", "--full")

    def verdicts(saved: str) -> list[str]:
        result = CliRunner().invoke(cli, ["verify", "-", "--repo", str(shop.path), "--json"],
                                    input=saved, catch_exceptions=False)
        return [line["verdict"] for line in json.loads(result.output)["lines"]]

    assert verdicts(compact) == verdicts(full)
    assert "unverifiable" not in verdicts(compact)


def test_http_search_is_compact_unless_full_is_asked(fm_home, make_repo):
    shop = build_shop(make_repo)
    app = FastAPI()
    app.include_router(router)
    client = TestClient(app)
    for path in ("/v1/search", "/v1/search/files"):
        body = {"query": "cancel order", "repo": str(shop.path), "k": 3}
        compact = client.post(path, json=body).json()
        full = client.post(path, json={**body, "full": True}).json()
        chunks = (compact.get("results") or [c for f in compact["files"] for c in f["chunks"]])
        full_chunks = (full.get("results") or [c for f in full["files"] for c in f["chunks"]])
        assert chunks and all(None not in c.values() and "explain" not in c for c in chunks)
        assert all(CONTRACT_FIELDS <= set(c) for c in chunks)
        assert all({"tombstoned_in", "explain"} <= set(c) for c in full_chunks)


def test_mcp_search_is_compact_unless_full_is_asked(fm_home, make_repo):
    shop = build_shop(make_repo)

    async def results(full: bool) -> list[dict]:
        async with Client(build_server()) as client:
            answer = await client.call_tool("search", {"query": "cancel order", "k": 3,
                                                       "repo": str(shop.path), "full": full})
            assert not answer.is_error and answer.structured_content is not None
            return answer.structured_content["results"]

    compact, full = anyio.run(results, False), anyio.run(results, True)
    assert compact and all(None not in r.values() and "explain" not in r for r in compact)
    assert all(CONTRACT_FIELDS <= set(r) for r in compact)
    assert all({"tombstoned_in", "explain"} <= set(r) for r in full)


def mcp_search(repo, **arguments) -> tuple[str, dict]:
    async def answer() -> tuple[str, dict]:
        async with Client(build_server()) as client:
            result = await client.call_tool("search", {"repo": str(repo.path), **arguments})
            assert not result.is_error and result.structured_content is not None
            return "".join(block.text for block in result.content), result.structured_content

    return anyio.run(answer)


def test_mcp_text_is_the_bounded_reading_not_the_json_again(fm_home, make_repo):
    repo = build_billing(make_repo)
    text, structured = mcp_search(repo, query="parse_invoice", k=1)
    (result,) = structured["results"]
    assert result["citation"] in text and "def parse_invoice(text: str) -> dict:" in text
    assert f"… {len(PARSER.splitlines()) - SHOWN_LINES} more lines" in text
    assert '"citation"' not in text and len(text) < len(json.dumps(structured)) / 2


def test_mcp_full_text_shows_every_line(fm_home, make_repo):
    repo = build_billing(make_repo)
    text, _ = mcp_search(repo, query="parse_invoice", k=1, full=True)
    assert all(f"    {line}" in text.splitlines() for line in PARSER.splitlines() if line)
    assert "more lines" not in text


def test_mcp_context_text_is_the_slice(fm_home, make_repo):
    repo = build_billing(make_repo)

    async def answer() -> tuple[str, dict]:
        async with Client(build_server()) as client:
            result = await client.call_tool("context", {"query": "parse_invoice",
                                                        "repo": str(repo.path)})
            return "".join(block.text for block in result.content), result.structured_content

    text, structured = anyio.run(answer)
    assert text == structured["text"] and "parse_invoice" in text


# A definition longer than a chunk: its later part carries the signature (SPEC §5).
LEDGER = ("def settle_ledger(value):\n"
          + "".join(f"    total_{n} = value + {n}\n" for n in range(200))
          + "    return reconcile_overdue_marker(total_199)\n")


def build_ledger(make_repo):
    repo = make_repo("ledger")
    repo.write("ledger/settle.py", LEDGER).commit("ledger")
    index(repo.path)
    return repo


def later_part(repo) -> dict:
    response = json.loads(run_cli("search", "reconcile_overdue_marker", "--repo",
                                  str(repo.path), "-k", "1", "--json"))
    (result,) = response["results"]
    assert result["start_line"] > 1  # the part the query names is not the first
    return result


def test_a_later_part_says_how_many_of_its_first_lines_are_the_carried_head(fm_home,
                                                                             make_repo):
    result = later_part(build_ledger(make_repo))
    head = result["head_lines"]
    text = result["text"].splitlines()
    assert text[:head] == ["def settle_ledger(value):"]
    file_lines = LEDGER.splitlines()[result["start_line"] - 1 : result["end_line"]]
    assert text[head:] == file_lines  # the rest is exactly start_line..end_line


def test_a_whole_definition_has_no_head_lines(fm_home, make_repo):
    repo = build_billing(make_repo)
    response = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path),
                                  "-k", "1", "--json", "--full"))
    assert response["results"][0]["head_lines"] is None


def test_human_output_marks_where_a_later_part_starts_below_its_head(fm_home, make_repo):
    repo = build_ledger(make_repo)
    start = later_part(repo)["start_line"]
    out = run_cli("search", "reconcile_overdue_marker", "--repo", str(repo.path), "-k", "1",
                  "--full")
    shown = code_lines(out)
    assert shown[:3] == ["    def settle_ledger(value):",
                         f"    ⋮ (the head above; L{start} on below)",
                         f"    {LEDGER.splitlines()[start - 1]}"]


def test_a_long_carried_head_keeps_its_first_line_and_the_parts_own_lines_show(fm_home,
                                                                                make_repo):
    repo = make_repo("ledger")
    options = "".join(f"    option_{n}=None,\n" for n in range(16))
    repo.write("ledger/settle.py", LEDGER.replace(
        "def settle_ledger(value):\n", f"def settle_ledger(\n    value,\n{options}):\n", 1)
    ).commit("ledger")
    index(repo.path)
    result = later_part(repo)
    assert result["head_lines"] > 10
    shown = code_lines(run_cli("search", "reconcile_overdue_marker", "--repo", str(repo.path),
                               "-k", "1"))
    assert shown[0].startswith("    signature: def settle_ledger( value, option_0=None,")
    assert shown[1] == (f"    ⋮ (its head, {result['head_lines']} lines, left out; "
                        f"L{result['start_line']} on below)")
    assert shown[2] == "    " + result["text"].splitlines()[result["head_lines"]]


# A class whose outline is longer than a chunk: chunked in parts, each named ``Shop``.
SHOP = ('class Shop:\n    """A shop."""\n\n'
        + "".join(f"    def step_{n}(self):\n        return {n}\n\n" for n in range(120)))


def test_a_part_of_a_class_chunked_in_parts_says_which_and_where_the_others_are(
        fm_home, make_repo):
    repo = make_repo("shop")
    repo.write("shop/shop.py", SHOP).commit("shop")
    index(repo.path)
    parts = [[c.start_line, c.end_line] for c in chunk_text("shop/shop.py", SHOP)
             if c.symbol == "Shop"]
    assert len(parts) == 3
    (result,) = json.loads(run_cli("search", "Shop", "--repo", str(repo.path), "-k", "1",
                                   "--json"))["results"]
    assert [result["start_line"], result["end_line"]] == parts[0]
    assert result["parts"] == parts
    out = run_cli("search", "Shop", "--repo", str(repo.path), "-k", "1")
    rest = ", ".join(f"L{start}-L{end}" for start, end in parts[1:])
    assert f"part:    1 of 3 of Shop (L1-L{parts[-1][1]}); the rest: {rest}\n" in out


def test_a_class_defined_twice_is_two_definitions_not_two_parts(fm_home, make_repo):
    repo = make_repo("shop")
    shop = 'class Shop:\n    """A shop."""\n\n    def open(self):\n        return 1\n'
    repo.write("shop/shop.py", f"import sys\n\nif sys.platform == 'win32':\n"
               f"{shop}\n\nelse:\n{shop}".replace("\n    ", "\n        ")
               .replace("\nclass", "\n    class")).commit("shop")
    index(repo.path)
    assert [c.symbol for c in chunk_text("shop/shop.py", (repo.path / "shop/shop.py")
                                         .read_text())].count("Shop") == 2
    (result,) = json.loads(run_cli("search", "Shop", "--repo", str(repo.path), "-k", "1",
                                   "--json"))["results"]
    assert result["symbol"] == "Shop" and "parts" not in result


def test_a_definition_in_one_piece_has_no_parts(fm_home, make_repo):
    repo = build_billing(make_repo)
    (result,) = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path),
                                   "-k", "1", "--json"))["results"]
    assert "parts" not in result


def test_a_signature_over_several_lines_shown_is_not_repeated(fm_home, make_repo):
    repo = make_repo("billing")
    body = "".join(f"    total += {n}\n" for n in range(20))
    repo.write("billing/printer.py", "def print_invoice(\n    invoice,\n    copies=1,\n"
               f"    duplex=False,\n):\n    total = 0\n{body}    return total\n").commit("printer")
    index(repo.path)
    shown = code_lines(run_cli("search", "print_invoice", "--repo", str(repo.path), "-k", "1"))
    assert shown[0] == "    def print_invoice("
    assert not any("signature:" in line for line in shown)


def test_a_signature_cut_at_its_length_limit_ends_at_a_word_and_says_so() -> None:
    params = ", ".join(f"parameter_{n}: Optional[int] = None" for n in range(12))
    chunks = chunk_text("billing/wide.py", f"def wide({params}):\n    return 0\n")
    signature = next(c.signature for c in chunks if c.symbol == "wide")
    assert signature.endswith("…") and len(signature) <= 300
    assert f"{signature[:-1]} " in f"def wide({params}"


def test_results_passed_over_as_historical_are_counted_and_named(fm_home, make_repo):
    repo = build_billing(make_repo)
    repo.delete("billing/invoices.py")
    repo.write("billing/notes.py", "def note():\n    return 'invoice notes'\n")
    repo.commit("drop the parser")  # not indexed again: the parser is gone at the head
    response = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path),
                                  "-k", "1", "--json"))
    assert response["hidden_historical"] == 1
    assert all(r["symbol"] != "parse_invoice" for r in response["results"])
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1")
    assert "1 historical passed over (code gone since indexing; --history shows them)" in out


def test_a_work_tree_search_names_what_the_index_cannot_hold_yet(fm_home, make_repo):
    repo = build_billing(make_repo)
    (repo.path / "billing" / "refunds.py").write_text("def refund():\n    return 1\n")
    (repo.path / "billing" / "invoices.py").write_text(PARSER + "\n\ndef extra():\n    pass\n")
    response = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path),
                                  "--worktree", "--json"))
    assert response["uncommitted"] == {"new_files": 1, "changed_files": 1, "deleted_files": 0,
                                       "moved_files": 0, "new_paths": ["billing/refunds.py"]}
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "--worktree")
    assert "uncommitted: 1 new (billing/refunds.py), not searched until committed" in out
    plain = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "--json"))
    assert "uncommitted" not in plain


def test_a_work_tree_search_counts_deleted_and_moved_files_apart_from_changed(fm_home,
                                                                            make_repo):
    repo = build_billing(make_repo)
    repo.write("billing/notes.py", "def note():\n    return 1\n").commit("notes")
    index(repo.path)
    (repo.path / "billing" / "notes.py").unlink()
    (repo.path / "billing" / "invoices.py").rename(repo.path / "billing" / "parsing.py")
    response = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path),
                                  "--worktree", "--json"))
    work = response["uncommitted"]
    assert (work["new_files"], work["changed_files"], work["deleted_files"],
            work["moved_files"]) == (0, 0, 1, 1)
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "--worktree")
    assert "0 changed, 1 deleted, 1 moved, verified as they are now" in out


def test_a_work_tree_citation_says_uncommitted_only_for_a_file_edited_there(fm_home, make_repo):
    repo = build_billing(make_repo)
    repo.write("billing/invoices.py", "\n" + PARSER).commit("a blank line on top")
    answer = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1",
                                "--json", "--worktree"))
    (result,) = answer["results"]
    assert result["verdict"] == "changed"
    assert "(uncommitted)" not in result["citation"]
    (repo.path / "billing" / "invoices.py").write_text("\n\n" + PARSER)
    answer = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1",
                                "--json", "--worktree"))
    assert "(uncommitted) — re-read" in answer["results"][0]["citation"]


def _hooks_changed_since_indexing(make_repo, old: str, new: str):
    """``on_invoice`` below 20 decorators (the lines shown do not hold its signature),
    indexed, then ``old`` replaced by ``new`` and committed: served with today's lines."""
    repo = make_repo("billing")
    decorators = "".join(f"@register('invoice-{n}')\n" for n in range(20))
    hooks = "def register(name):\n    return lambda f: f\n\n\n" + decorators + \
        "def on_invoice(event):\n    return event\n"
    repo.write("billing/hooks.py", hooks).commit("hooks")
    index(repo.path)
    repo.write("billing/hooks.py", hooks.replace(old, new)).commit("change")
    return repo


def test_a_renamed_result_shows_todays_signature_above_todays_lines(fm_home, make_repo):
    repo = _hooks_changed_since_indexing(make_repo, "def on_invoice(", "def handle_invoice(")
    out = run_cli("search", "on_invoice", "--repo", str(repo.path), "-k", "1")
    assert "renamed to handle_invoice" in out
    assert "    signature: def handle_invoice(event)\n" in out
    assert "def on_invoice(event)" not in out


def test_a_changed_result_shows_its_signature_as_it_is_today(fm_home, make_repo):
    repo = _hooks_changed_since_indexing(make_repo, "on_invoice(event)",
                                         "on_invoice(event, ledger)")
    out = run_cli("search", "on_invoice", "--repo", str(repo.path), "-k", "1")
    assert "    signature: def on_invoice(event, ledger)\n" in out
    assert "signature: def on_invoice(event)\n" not in out


def test_a_compact_changed_result_without_todays_signature_shows_no_stale_one():
    """A server's compact answer leaves an empty ``current_signature`` out: the stamped
    signature, not in today's lines, is not shown above them."""
    result = {"verdict": "changed", "current_start_line": 30, "signature": "def on_invoice(event)",
              "text": "".join(f"@register('invoice-{n}')\n" for n in range(20))
              + "def handle(event):\n    return event\n"}
    shown = code_lines_of(result, SHOWN_LINES)
    assert not any(line.startswith("signature:") for line in shown)


def test_a_file_moved_away_in_the_work_tree_is_named_gone_not_edited(fm_home, make_repo):
    repo = build_billing(make_repo)
    (repo.path / "billing" / "invoices.py").rename(repo.path / "billing" / "parsing.py")
    answer = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1",
                                "--json"))
    assert (answer.get("edited"), answer["gone"]) == (None, ["billing/invoices.py"])
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1")
    assert "gone:     billing/invoices.py deleted or moved in the work tree" in out
    assert "edited:" not in out


def test_a_file_edited_in_the_work_tree_is_named_beside_results_verified_at_the_head(
        fm_home, make_repo):
    repo = build_billing(make_repo)
    (repo.path / "billing/invoices.py").write_text(PARSER.replace("splitlines", "split"))
    answer = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1",
                                "--json"))
    assert answer["edited"] == ["billing/invoices.py"]
    assert answer["results"][0]["verdict"] == "current"
    out = run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k", "1")
    assert "edited:   billing/invoices.py changed in the work tree since the head" in out
    worktree = json.loads(run_cli("search", "parse_invoice", "--repo", str(repo.path), "-k",
                                  "1", "--json", "--worktree"))
    assert worktree.get("edited") is None and worktree["results"][0]["verdict"] == "changed"

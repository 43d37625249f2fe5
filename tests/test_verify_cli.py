"""``freshmark verify``: the seed's list and saved results, line numbers, exit codes, bad input."""

from __future__ import annotations

import json

from click.testing import CliRunner
from search_fixtures import PATHS, build_shop, file_sha256
from search_fixtures import index as index_repo_at

from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli


def run_cli(*args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin)


def good_line(shop, name: str = "service") -> str:
    return f"{PATHS[name]}\t{file_sha256(shop, shop.head, PATHS[name])[:12]}"


def test_all_safe_list_exits_zero(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo, index_before_change=False)
    listing = tmp_path / "snippets.tsv"
    listing.write_text(good_line(shop) + "\n" + good_line(shop, "repo") + "\n")
    result = run_cli("verify", str(listing), "--repo", str(shop.path))
    assert result.exit_code == 0, result.output
    assert _verdict_column(result.stdout) == ["current", "current"]


def test_anything_not_safe_exits_one(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    stale = f"{PATHS['domain']}\t{file_sha256(shop, shop.initial, PATHS['domain'])[:12]}"
    result = run_cli("verify", "-", "--repo", str(shop.path), stdin=good_line(shop) + "\n" + stale)
    assert result.exit_code == 1
    assert _verdict_column(result.stdout) == ["current", "changed"]
    assert "not safe to use as is: 1" in result.stdout


def _verdict_column(text: str) -> list[str]:
    return [line.split()[1] for line in text.splitlines() if line.startswith("L")]


def test_text_lines_keep_their_columns_and_leave_seed_words_to_json(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    stale = f"{PATHS['domain']}\t{file_sha256(shop, shop.initial, PATHS['domain'])[:12]}"
    listing = good_line(shop) + "\n" + stale
    text = run_cli("verify", "-", "--repo", str(shop.path), stdin=listing).stdout
    rows = [line for line in text.splitlines() if line.startswith("L")]
    assert len({row.index(PATHS["service"][:4]) for row in rows}) == 1  # paths in one column
    assert not any(ord(ch) > 0x2E80 for ch in text)
    as_json = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listing).stdout
    assert [x["seed_word"] for x in json.loads(as_json)["lines"]] == ["可用", "较旧"]


def test_a_hash_that_differs_is_called_the_listed_one_not_an_indexed_one(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listing = f"{PATHS['service']}\tdeadbeef"
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listing)
    [line] = json.loads(result.stdout)["lines"]
    assert line["reason"].startswith("hash differs: listed deadbeef -> now ")


def test_json_gives_one_object_per_input_line(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listing = f"{good_line(shop)}\n\n{PATHS['handler']}\tabcdef123456\nsrc/x.py zzz\n"
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listing)
    lines = json.loads(result.stdout)["lines"]
    assert [(x["line"], x["path"], x["verdict"]) for x in lines] == [
        (1, PATHS["service"], "current"), (3, PATHS["handler"], "historical"),
        (4, "src/x.py zzz", "invalid")]
    assert all(x["reason"] for x in lines)
    assert "no TAB" in lines[2]["reason"]


def test_paths_leaving_the_repository_are_refused_line_by_line(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo, index_before_change=False)
    secret = tmp_path / "secret.py"
    secret.write_text("password = 1\n")
    (shop.path / "src" / "escape.py").symlink_to(secret)
    listing = "\n".join(["../../etc/passwd\tabcdef12", "/etc/passwd\tabcdef12",
                         "src/escape.py\tabcdef12", good_line(shop)])
    result = run_cli("verify", "-", "--repo", str(shop.path), "--worktree", "--json",
                     stdin=listing)
    lines = json.loads(result.stdout)["lines"]
    assert [x["verdict"] for x in lines] == ["invalid", "invalid", "invalid", "current"]
    assert "leaves the repository" in lines[0]["reason"]
    assert "absolute path" in lines[1]["reason"]
    assert "resolves outside the repository" in lines[2]["reason"]
    assert result.exit_code == 1


def test_saved_search_results_are_verified_again(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo)
    saved = run_cli("search", "cancel order rule", "--repo", str(shop.path), "-k", "10",
                    "--history", "--json")
    results = json.loads(saved.stdout)["results"]
    path = tmp_path / "results.json"
    path.write_text(saved.stdout)
    result = run_cli("verify", str(path), "--repo", str(shop.path), "--json")
    checked = json.loads(result.stdout)["lines"]
    assert [(x["path"], x["symbol"], x["verdict"]) for x in checked] == [
        (r["path"], r["symbol"], r["verdict"]) for r in results]
    text_lines = path.read_text().splitlines()
    assert all(text_lines[x["line"] - 1].strip() == "{" for x in checked)


def test_result_without_version_metadata_is_unverifiable(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    pasted = json.dumps([{"path": PATHS["service"], "symbol": "OrderService.cancel_order",
                          "text": "def cancel_order(self, order_id): ..."}])
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=pasted)
    (line,) = json.loads(result.stdout)["lines"]
    assert line["verdict"] == "unverifiable" and line["seed_word"] == "待补"
    assert "missing repo, branch, commit" in line["reason"]


def test_binary_input_file_fails_with_one_line(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo, index_before_change=False)
    blob = tmp_path / "image.png"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = run_cli("verify", str(blob), "--repo", str(shop.path))
    assert result.exit_code == 2
    assert result.stderr.strip() == ("freshmark: error: input is binary (NUL bytes), not a "
                                     "snippet list or JSON results")


def test_malformed_json_is_reported_and_the_rest_checked(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    text = json.dumps([{"path": PATHS["service"], "symbol": "x"},
                       {"path": PATHS["repo"], "symbol": "y"}], indent=2)
    broken = text.replace('"symbol": "x"', '"symbol": "x" "oops"')
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=broken)
    lines = json.loads(result.stdout)["lines"]
    assert [x["verdict"] for x in lines][0] == "invalid" and "malformed JSON" in lines[0]["reason"]
    assert [x["path"] for x in lines[1:]] == [PATHS["repo"]]


def test_verify_counts_its_verdicts(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    run_cli("verify", "-", "--repo", str(shop.path), stdin=good_line(shop) + "\nbad line x\n")
    assert VerdictStats.open(Settings.from_env()).counts("shop", "main") == {"current": 1}


def test_help_documents_the_exit_codes():
    result = run_cli("verify", "--help")
    assert "Exit codes:" in result.output and "0  every line may be used as is" in result.output


def test_path_the_branch_never_had_is_unknown_not_historical(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listing = f"{PATHS['handler']}\tabcdef123456\nsrc/never/was_here.py\tabcdef123456\n"
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listing)
    deleted, never = json.loads(result.stdout)["lines"]
    assert deleted["verdict"] == "historical" and "no longer exists" in deleted["reason"]
    assert never["verdict"] == "unverifiable"
    assert "unknown path" in never["reason"] and "no longer exists" not in never["reason"]


def test_a_listed_file_moved_unchanged_is_older_but_identical_at_its_new_path(
        fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listed = good_line(shop)
    shop.repo.rename(PATHS["service"], "src/orders/services/ordering.py").commit("rename")
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listed)
    [line] = json.loads(result.stdout)["lines"]
    assert (line["verdict"], line["moved_to"]) == (
        "older_identical", "src/orders/services/ordering.py")
    assert line["reason"].startswith(f"moved from {PATHS['service']} to ")
    assert "src/orders/services/ordering.py" in line["citation"].splitlines()[0]
    assert result.exit_code == 0


def test_a_listed_file_moved_and_edited_is_changed_at_its_new_path(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    listed = good_line(shop)
    text = (shop.path / PATHS["service"]).read_text()
    shop.repo.delete(PATHS["service"])
    shop.repo.write("src/orders/ordering.py", text + "\n\ndef added():\n    return 1\n")
    shop.repo.commit("move and extend")
    result = run_cli("verify", "-", "--repo", str(shop.path), "--json", stdin=listed)
    [line] = json.loads(result.stdout)["lines"]
    assert (line["verdict"], line["moved_to"]) == ("changed", "src/orders/ordering.py")
    assert "hash differs" in line["reason"] and result.exit_code == 1


def test_a_source_file_of_the_repository_is_refused_in_one_line(fm_home, make_repo):
    shop = build_shop(make_repo, index_before_change=False)
    source = shop.path / PATHS["service"]
    result = run_cli("verify", str(source), "--repo", str(shop.path))
    assert result.exit_code == 2
    assert f"{source} is not a snippet list or search results" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout


def feature_results(make_repo, tmp_path):
    """A function added on feature/x, searched there and saved; main checked out again."""
    repo = make_repo("budget")
    repo.write("app.py", "def run():\n    return 1\n").commit("app")
    repo.branch("feature/x").checkout("feature/x")
    repo.write("retry.py", "def publish_with_retry_budget(budget):\n    return budget\n")
    repo.commit("retry budget")
    assert run_cli("index", str(repo.path)).exit_code == 0
    saved = run_cli("search", "publish_with_retry_budget", "--repo", str(repo.path), "-k", "1",
                    "--json")
    path = tmp_path / "feature.json"
    path.write_text(saved.stdout)
    repo.checkout("main")
    return repo, path


def test_saved_results_are_verified_against_their_own_branch(fm_home, make_repo, tmp_path):
    repo, saved = feature_results(make_repo, tmp_path)
    result = run_cli("verify", str(saved), "--repo", str(repo.path), "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["target"]["branch"] == "feature/x"
    assert [line["verdict"] for line in report["lines"]] == ["current"]


def test_code_another_branch_added_is_unverifiable_on_this_one_not_historical(
        fm_home, make_repo, tmp_path):
    repo, saved = feature_results(make_repo, tmp_path)
    result = run_cli("verify", str(saved), "--repo", str(repo.path), "--branch", "main",
                     "--json")
    (line,) = json.loads(result.stdout)["lines"]
    assert line["verdict"] == "unverifiable"
    assert line["reason"].startswith("indexed on feature/x at ")
    assert line["reason"].endswith("which main@" + repo.head()[:7] + " does not contain; "
                                   "verify it against feature/x")


def test_saved_results_of_shifted_code_are_verified_as_the_search_said(fm_home, make_repo,
                                                                       tmp_path):
    repo = make_repo("shifted")
    repo.write("shop/pricing.py", "def total(items):\n    return sum(i.price for i in items)\n")
    repo.commit("pricing")
    run_cli("index", str(repo.path))
    repo.write("shop/pricing.py", "import math\n\n\ndef total(items):\n"
                                  "    return sum(i.price for i in items)\n")
    repo.commit("an import above")
    saved = run_cli("search", "total", "--repo", str(repo.path), "-k", "1", "--json")
    (searched,) = json.loads(saved.stdout)["results"]
    path = tmp_path / "results.json"
    path.write_text(saved.stdout)
    (checked,) = json.loads(run_cli("verify", str(path), "--repo", str(repo.path),
                                    "--json").stdout)["lines"]
    assert searched["verdict"] == checked["verdict"] == "changed"
    assert "its code is as indexed" in searched["reason"]
    assert checked["reason"] == searched["reason"]


def test_a_saved_changed_result_is_not_called_as_indexed_when_its_code_changed(
        fm_home, make_repo, tmp_path):
    repo = make_repo("retry")
    helper = "def apply_jitter(delay):\n    \"\"\"Spread retries.\"\"\"\n    return delay / 2\n"
    repo.write("retry/helper.py", "import random\n\n\n" + helper).commit("helper")
    index_repo_at(repo.path)
    repo.write("retry/helper.py", "import random\n\n\n\n" + helper.replace("/ 2", "/ 3"))
    repo.commit("jitter by a third")
    saved = run_cli("search", "apply_jitter", "--repo", str(repo.path), "-k", "1", "--json")
    (result,) = json.loads(saved.stdout)["results"]
    assert result["verdict"] == "changed" and "re-read before use" in result["reason"]
    path = tmp_path / "saved.json"
    path.write_text(saved.stdout)
    checked = json.loads(run_cli("verify", str(path), "--repo", str(repo.path), "--json").stdout)
    (line,) = checked["lines"]
    assert line["verdict"] == "changed"
    assert "re-read before use" in line["reason"] and "as indexed" not in line["reason"]

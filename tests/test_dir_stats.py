"""Failure statistics by directory (seed 000 §6 step 7): verdicts at use time per directory
prefix, bounded, in ``audit --by-dir``, the status JSON and ``/metrics``, with layer advice."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from search_fixtures import PATHS, build_shop

from freshmark.adapters.telemetry.exposition import render_latest
from freshmark.adapters.telemetry.verdict_stats import VerdictStats
from freshmark.core.config import Layer
from freshmark.core.dirstats import (
    MAX_DIRS_PER_BRANCH,
    OTHER_DIR,
    DirStaleness,
    advise,
    dir_prefix,
)
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli

HOT = Layer("hot", ("src/orders/**",), interval_seconds=600)
INFRA = Layer("infra", ("**",), interval_seconds=86400)


def test_a_path_is_counted_under_its_first_two_directories():
    assert dir_prefix("src/orders/services/order_service.py") == "src/orders/"
    assert dir_prefix("lib/x.py") == "lib/"
    assert dir_prefix("setup.py") == "."


def test_a_branch_keeps_a_bounded_number_of_directories(tmp_path):
    stats = VerdictStats.open(Settings(home=tmp_path))
    stats.add_later("shop", "main", {"changed": MAX_DIRS_PER_BRANCH + 5},
                    {(f"d{i}/", "changed"): 1 for i in range(MAX_DIRS_PER_BRANCH + 5)})
    rows = {row.directory: row for row in stats.dir_counts("shop", "main")}
    assert len(rows) == MAX_DIRS_PER_BRANCH + 1
    assert rows[OTHER_DIR].counts == {"changed": 5}


def test_advice_names_the_layer_of_a_directory_that_meets_stale_code_often():
    stale = DirStaleness("shop", "main", "src/orders/", {"current": 18, "changed": 12})
    (advice,) = advise([stale], [HOT, INFRA])
    assert (advice.layer, advice.interval_seconds) == ("hot", 600)
    assert advice.advised_interval_seconds == 300  # a 40 % share, twice the 20 % bound


def test_no_advice_on_few_verdicts_or_a_low_stale_share():
    few = DirStaleness("shop", "main", "src/orders/", {"changed": 5})
    fresh = DirStaleness("shop", "main", "infra/", {"current": 95, "historical": 5})
    assert advise([few, fresh], [HOT, INFRA]) == []


def _search_often(shop, times: int) -> None:
    """Searches for the domain rule, which changed after indexing (its file is stale)."""
    for _ in range(times):
        result = CliRunner().invoke(cli, ["search", "ensure_cancellable shipped", "--repo",
                                          str(shop.path), "-k", "2", "--json"])
        assert result.exit_code == 0, result.output


def test_audit_by_dir_reports_where_searches_met_stale_code(fm_home, make_repo, tmp_path):
    shop = build_shop(make_repo)
    _search_often(shop, 12)  # 24 verdicts: enough (core.dirstats.MIN_VERDICTS) for advice
    config = tmp_path / "freshmark.toml"
    config.write_text('[[layers]]\nname = "hot"\nglobs = ["src/orders/**"]\n'
                      'interval_seconds = 600\n')
    result = CliRunner().invoke(cli, ["audit", "--by-dir", "--json", "--config", str(config)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    orders = next(d for d in report["dirs"] if d["dir"] == "src/orders/")
    assert orders["verdicts"]["changed"] >= 6 and orders["stale_share"] > 0.2
    assert orders["stale"] == orders["verdicts"].get("changed", 0) + \
        orders["verdicts"].get("historical", 0)
    assert [a["layer"] for a in report["advice"]] == ["hot"], report


def test_status_json_lists_the_stalest_directories(fm_home, make_repo):
    shop = build_shop(make_repo)
    _search_often(shop, 1)
    result = CliRunner().invoke(cli, ["status", str(shop.path), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["stale_dirs"][0]["dir"] == dir_prefix(PATHS["domain"])


def test_metrics_export_verdicts_by_directory(tmp_path: Path):
    stats = VerdictStats.open(Settings(home=tmp_path))
    stats.add_later("shop", "main", {"changed": 3}, {("src/orders/", "changed"): 3})
    body, _ = render_latest(dir_counts=stats.dir_counts)
    samples = [s for family in text_string_to_metric_families(body.decode())
               if family.name == "freshmark_verdicts_by_dir" for s in family.samples]
    assert [(s.labels, s.value) for s in samples] == [
        ({"repo": "shop", "branch": "main", "dir": "src/orders/", "verdict": "changed"}, 3.0)]


def test_forgetting_a_branch_drops_its_directory_counts(tmp_path: Path):
    stats = VerdictStats.open(Settings(home=tmp_path))
    stats.add_later("shop", "main", {"changed": 1}, {("src/", "changed"): 1})
    stats.add_later("shop", "dev", {"changed": 1}, {("src/", "changed"): 1})
    stats.forget("shop", "main")
    assert [(r.branch, r.directory) for r in stats.dir_counts("shop")] == [("dev", "src/")]

"""The Grafana dashboard: provisioning-ready structure, parsable expressions, exported names."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from test_metrics import redis_db  # noqa: F401 (fixture)
from test_rules import (
    exported_metric_names,
    promql_metric_names,
    recorded_names,
    require_promtool,
)

ROOT = Path(__file__).resolve().parents[1]
CHART_DASHBOARD = ROOT / "helm" / "freshmark" / "files" / "freshmark-dashboard.json"
DEPLOY_DASHBOARD = ROOT / "deploy" / "grafana" / "freshmark-dashboard.json"
# What Grafana substitutes before a query reaches Prometheus.
_GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$repo": ".*", "$branch": ".*", "$layer": ".*",
                      "$queue": ".*"}


def dashboard() -> dict[str, Any]:
    return json.loads(CHART_DASHBOARD.read_text(encoding="utf-8"))


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


def as_prometheus_sees_it(expr: str) -> str:
    for variable, value in _GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def test_deploy_dashboard_is_the_chart_file() -> None:
    assert DEPLOY_DASHBOARD.resolve() == CHART_DASHBOARD.resolve()


def test_dashboard_has_a_fixed_uid_and_a_pinned_schema_version() -> None:
    data = dashboard()
    assert data["uid"] == "freshmark-freshness"
    assert isinstance(data["schemaVersion"], int) and data["schemaVersion"] >= 36
    assert data.get("id") is None  # provisioning assigns ids


def test_datasource_and_repo_branch_layer_are_template_variables() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("repo", "branch", "layer"):
        assert variables[name]["type"] == "query"
        assert variables[name]["datasource"]["uid"] == "${datasource}"


@pytest.mark.parametrize("panel", panels(), ids=lambda p: p["title"])
def test_panel_has_title_description_unit_and_datasource(panel: dict[str, Any]) -> None:
    assert panel["title"] and panel["description"]
    assert panel["fieldConfig"]["defaults"]["unit"]
    assert panel["datasource"]["uid"] == "${datasource}"
    assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
    assert panel["targets"], "a panel without a query"


def test_panel_ids_are_unique() -> None:
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids))


def test_rates_use_the_rate_interval_variable() -> None:
    ranged = [e for e in expressions() if re.search(r"\b(rate|increase|irate)\(", e)]
    assert ranged
    for expr in ranged:
        assert re.findall(r"\[([^\]]+)\]", expr) and all(
            window == "$__rate_interval" for window in re.findall(r"\[([^\]]+)\]", expr)
        ), expr


def test_dashboard_covers_the_freshness_and_job_views() -> None:
    used = set().union(*(promql_metric_names(e) for e in expressions()))
    for name in ("freshmark:stale_chunks:ratio", "freshmark:stale_chunks_per_branch:ratio",
                 "freshmark_index_lag_seconds", "freshmark_commits_behind",
                 "freshmark_queue_length", "freshmark_jobs_total",
                 "freshmark_job_duration_seconds_bucket", "freshmark_verification_verdicts_total"):
        assert name in used, name


def test_every_panel_expression_parses_in_promtool(tmp_path: Path) -> None:
    promtool = require_promtool()
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr_{i}:check", "expr": as_prometheus_sees_it(e)}
        for i, e in enumerate(expressions())
    ]}]}
    path = tmp_path / "dashboard-exprs.yaml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")

    done = subprocess.run([promtool, "check", "rules", str(path)],
                          capture_output=True, text=True)

    assert done.returncode == 0, done.stdout + done.stderr


def test_variable_queries_name_exported_metrics(tmp_path: Path,
                                                redis_db: redis.Redis) -> None:  # noqa: F811
    known = exported_metric_names(tmp_path, redis_db)
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            metric = re.search(r"label_values\(([a-z_:]+)", variable["query"]["query"])
            assert metric and metric.group(1) in known, variable["name"]


def test_every_expression_names_only_exported_metrics(tmp_path: Path,
                                                      redis_db: redis.Redis) -> None:  # noqa: F811
    known = exported_metric_names(tmp_path, redis_db) | recorded_names()
    used = set().union(*(promql_metric_names(as_prometheus_sees_it(e)) for e in expressions()))
    assert used <= known, f"unknown metrics: {sorted(used - known)}"

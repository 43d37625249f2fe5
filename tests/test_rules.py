"""Prometheus rules: promtool checks and unit tests, alert conventions, names the code exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_metrics import redis_db  # noqa: F401 (fixture)

from freshmark.adapters.queue import jobs
from freshmark.adapters.telemetry import exposition as metrics
from freshmark.adapters.telemetry.freshness import FileFreshnessStore, FreshnessRow

ROOT = Path(__file__).resolve().parents[1]
CHART_RULES = ROOT / "helm" / "freshmark" / "files" / "freshmark-rules.yaml"
DEPLOY_RULES = ROOT / "deploy" / "prometheus" / "freshmark-rules.yaml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "tests" / "freshmark-rules.test.yaml"
RUNBOOKS = ROOT / "deploy" / "runbooks"

_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on",
             "ignoring", "group_left", "group_right"}


def promql_metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (label matchers, ranges, grouping and calls removed)."""
    text = re.sub(r"\{[^{}]*\}", " ", expr)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r'"[^"]*"', " ", text)
    names: set[str] = set()
    for match in _IDENTIFIER.finditer(text):
        following = text[match.end():].lstrip()
        before = text[match.start() - 1] if match.start() else " "
        if following.startswith("(") or match.group() in _KEYWORDS or before.isdigit():
            continue
        names.add(match.group())
    return names


def exported_metric_names(tmp_path: Path, redis_client: redis.Redis) -> set[str]:
    """Every sample name /metrics can carry, read from a real exposition of freshmark.metrics."""
    store = FileFreshnessStore(tmp_path)
    store.publish([FreshnessRow("r", "b", "l", 1, 2, 0, 0, 0.0, 0.0, 60.0, 0.0)])
    body = metrics.render_latest(
        store=store, queue_lengths=lambda: jobs.queue_lengths(redis_client)
    )[0].decode()
    names: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    for family in text_string_to_metric_families(body):
        for suffix in suffixes.get(family.type, ("",)):
            names.add(family.name + suffix)
    return {n for n in names if n.startswith("freshmark")}


def load_rules() -> dict[str, Any]:
    return yaml.safe_load(CHART_RULES.read_text(encoding="utf-8"))


def alerts() -> list[dict[str, Any]]:
    return [r for g in load_rules()["groups"] for r in g["rules"] if "alert" in r]


def recorded_names() -> set[str]:
    return {r["record"] for g in load_rules()["groups"] for r in g["rules"] if "record" in r}


def require_promtool() -> str:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: apt-get install -y --no-install-recommends prometheus")
    return promtool


def test_metric_name_extraction_sees_selectors_not_functions_or_labels() -> None:
    expr = ('sum by (layer) (rate(freshmark_jobs_total{queue=~"$q"}[5m])) / on (layer) '
            'group_left max(freshmark:stale_chunks:ratio) > 0.5 and absent(up)')
    assert promql_metric_names(expr) == {
        "freshmark_jobs_total", "freshmark:stale_chunks:ratio", "up",
    }


def test_deploy_rules_are_the_chart_rules_file() -> None:
    assert DEPLOY_RULES.resolve() == CHART_RULES.resolve()


def test_rules_file_passes_promtool_check() -> None:
    promtool = require_promtool()
    done = subprocess.run([promtool, "check", "rules", str(CHART_RULES)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_rule_unit_tests_pass_in_promtool() -> None:
    promtool = require_promtool()
    done = subprocess.run([promtool, "test", "rules", str(RULE_TESTS)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("alert", alerts(), ids=lambda a: a["alert"])
def test_alert_has_duration_severity_summary_description_and_runbook(alert: dict[str, Any]) -> None:
    assert re.fullmatch(r"\d+[smh]", alert.get("for", ""))
    assert alert["labels"]["severity"] in {"critical", "warning", "info"}
    annotations = alert["annotations"]
    assert annotations["summary"] and annotations["description"]
    assert annotations["runbook_url"] == f"deploy/runbooks/{alert['alert']}.md"
    assert (ROOT / annotations["runbook_url"]).is_file()


def test_every_alert_is_shown_firing_and_not_firing_in_unit_tests() -> None:
    cases = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]
    firing: set[str] = set()
    silent: set[str] = set()
    for case in cases:
        for check in case.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else silent).add(check["alertname"])
    names = {a["alert"] for a in alerts()}
    assert firing == names
    assert silent == names


def test_stale_ratio_is_recorded_overall_and_per_layer() -> None:
    records = [r for g in load_rules()["groups"] for r in g["rules"]
               if r.get("record") == "freshmark:stale_chunks:ratio"]
    grouped = {r["labels"]["aggregation"]: r["expr"] for r in records}
    assert set(grouped) == {"total", "layer"}
    assert "sum by (layer)" in grouped["layer"]


def test_rules_name_only_metrics_the_code_exports(tmp_path: Path,
                                                 redis_db: redis.Redis) -> None:  # noqa: F811
    known = exported_metric_names(tmp_path, redis_db) | recorded_names()
    used = {n for r in (r for g in load_rules()["groups"] for r in g["rules"])
            for n in promql_metric_names(r["expr"])}
    assert used, "no metric names found in the rules"
    assert used <= known, f"unknown metrics: {sorted(used - known)}"


def test_every_runbook_belongs_to_an_alert() -> None:
    pages = {p.stem for p in RUNBOOKS.glob("*.md")} - {"README"}
    assert pages == {a["alert"] for a in alerts()}


def test_one_machine_scrape_config_passes_promtool_and_loads_the_rules() -> None:
    promtool = require_promtool()
    config = ROOT / "deploy" / "prometheus" / "prometheus.yml"
    done = subprocess.run([promtool, "check", "config", str(config)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert yaml.safe_load(config.read_text())["rule_files"] == ["freshmark-rules.yaml"]


def test_compose_prometheus_loads_the_rules_and_scrapes_every_worker() -> None:
    compose_dir = ROOT / "deploy"
    compose = yaml.safe_load((compose_dir / "docker-compose.yml").read_text())
    services = compose["services"]
    mounts = [m.split(":")[:2] for m in services["prometheus"]["volumes"]]
    rules = next(src for src, dst in mounts if dst.endswith("freshmark-rules.yaml"))
    assert (compose_dir / rules).resolve() == CHART_RULES.resolve()
    scrape = yaml.safe_load((compose_dir / "prometheus" / "prometheus-compose.yml").read_text())
    targets = {t for job in scrape["scrape_configs"] for c in job["static_configs"]
               for t in c["targets"]}
    workers = {name for name in services if name.startswith("worker-")}
    assert workers and {f"{w}:9808" for w in workers} | {"serve:8080"} == targets
    for name in workers:
        assert services[name]["command"][:3] == ["worker", "--queues", name.removeprefix("worker-")]

"""The Helm chart, rendered offline (helm-python-sdk embeds Helm) and checked object by object."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from freshmark.adapters import keys

helm = pytest.importorskip("helm_python", reason="helm-python-sdk is a dev dependency")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "helm" / "freshmark"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
KUBE_VERSION = "1.30.0"
QUEUES = ("hot", "infra", "maintenance", "ondemand")
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject"}

# The parts of the CRDs' own schemas this chart relies on (they are not in Kubernetes' schemas).
_CRD_SCHEMAS: dict[str, dict[str, Any]] = {
    "ServiceMonitor": {
        "type": "object", "required": ["selector", "endpoints"],
        "properties": {
            "selector": {"type": "object"},
            "endpoints": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["port"], "additionalProperties": False,
                "properties": {"port": {"type": "string"}, "path": {"type": "string"},
                               "interval": {"type": "string"}, "scrapeTimeout": {"type": "string"}},
            }},
        },
    },
    "PrometheusRule": {
        "type": "object", "required": ["groups"], "additionalProperties": False,
        "properties": {"groups": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "rules"],
            "properties": {"name": {"type": "string"}, "interval": {"type": "string"},
                           "rules": {"type": "array", "items": {"type": "object",
                                                                "required": ["expr"]}}},
        }}},
    },
    "ScaledObject": {
        "type": "object", "required": ["scaleTargetRef", "triggers"],
        "properties": {
            "scaleTargetRef": {"type": "object", "required": ["name"]},
            "minReplicaCount": {"type": "integer"}, "maxReplicaCount": {"type": "integer"},
            "pollingInterval": {"type": "integer"}, "cooldownPeriod": {"type": "integer"},
            "triggers": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["type", "metadata"],
                "properties": {"type": {"const": "redis"}, "metadata": {
                    "type": "object", "required": ["address", "listName", "listLength"],
                    "additionalProperties": {"type": "string"},
                }},
            }},
        },
    },
}


@cache
def chart() -> Any:
    return helm.Chart.load(str(CHART))


def values_file(name: str) -> dict[str, Any]:
    return yaml.safe_load((CHART / "ci" / name).read_text(encoding="utf-8"))


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rendered = chart().render(values or {}, name="fm", namespace="code")
    docs: list[dict[str, Any]] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs
            if d["kind"] in ("Deployment", "StatefulSet")}


def container(docs: list[dict[str, Any]], workload: str) -> dict[str, Any]:
    return pod_specs(docs)[workload]["containers"][0]


def env_names(spec: dict[str, Any]) -> set[str]:
    return {e["name"] for e in spec.get("env", [])}


def scenario_ids() -> list[str]:
    return ["defaults", *(p.stem for p in CI_VALUES)]


def scenario_values(name: str) -> dict[str, Any]:
    return {} if name == "defaults" else values_file(f"{name}.yaml")


# -- lint and schemas -------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", scenario_ids())
def test_chart_lints_strictly(scenario: str) -> None:
    report = helm.lint(str(CHART), scenario_values(scenario), strict=True)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not problems, report


@pytest.mark.parametrize("scenario", scenario_ids())
def test_rendered_objects_pass_strict_kubernetes_schemas(scenario: str) -> None:
    for doc in render(scenario_values(scenario)):
        if doc["kind"] in CRD_KINDS:
            jsonschema.validate(doc["spec"], _CRD_SCHEMAS[doc["kind"]])
            continue
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("bad", [
    {"workers": {"hot": {"replicas": 1, "concurrency": 0}}},
    {"unknownKey": True},
    {"podSecurityContext": {"runAsNonRoot": False}},
    {"redis": {"externalUrl": "http://not-redis"}},
])
def test_values_schema_rejects_bad_values(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmError):
        chart().validate_schema(chart().merge_values(bad))


def test_external_services_without_urls_fail_to_render() -> None:
    with pytest.raises(helm.HelmError, match="redis.externalUrl is required"):
        render({"redis": {"enabled": False}})
    with pytest.raises(helm.HelmError, match="chroma.externalUrl is required"):
        render({"chroma": {"enabled": False}})


# -- workloads --------------------------------------------------------------------------------
def test_one_worker_deployment_per_queue_runs_that_queue() -> None:
    docs = render()
    workers = {n: d for n, d in by_kind(docs, "Deployment").items() if "-worker-" in n}
    assert set(workers) == {f"fm-freshmark-worker-{q}" for q in QUEUES}
    for queue in QUEUES:
        spec = container(docs, f"fm-freshmark-worker-{queue}")
        assert spec["command"] == ["freshmark"]
        assert spec["args"][:3] == ["worker", "--queues", queue]
        assert "--metrics-port" in spec["args"]
        labels = workers[f"fm-freshmark-worker-{queue}"]["spec"]["template"]["metadata"]["labels"]
        assert labels["freshmark.io/queue"] == queue


def test_scheduler_is_one_replica_with_recreate() -> None:
    scheduler = by_kind(render(), "Deployment")["fm-freshmark-scheduler"]
    assert scheduler["spec"]["replicas"] == 1
    assert scheduler["spec"]["strategy"] == {"type": "Recreate"}
    assert scheduler["spec"]["template"]["spec"]["containers"][0]["args"][0] == "scheduler"


def test_http_service_serves_on_all_interfaces_behind_a_service() -> None:
    docs = render()
    spec = container(docs, "fm-freshmark-serve")
    assert spec["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080"]
    service = by_kind(docs, "Service")["fm-freshmark"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "serve"


@pytest.mark.parametrize("scenario", scenario_ids())
def test_every_pod_runs_as_non_root_with_a_locked_down_container(scenario: str) -> None:
    for name, spec in pod_specs(render(scenario_values(scenario))).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["automountServiceAccountToken"] is False, name
        for item in spec["containers"]:
            ctx = item["securityContext"]
            assert ctx["allowPrivilegeEscalation"] is False, name
            assert ctx["readOnlyRootFilesystem"] is True, name
            assert ctx["capabilities"]["drop"] == ["ALL"], name


@pytest.mark.parametrize("scenario", scenario_ids())
def test_every_container_has_probes_and_resources(scenario: str) -> None:
    for name, spec in pod_specs(render(scenario_values(scenario))).items():
        for item in spec["containers"]:
            assert item["readinessProbe"] and item["livenessProbe"], name
            assert item["resources"]["requests"]["memory"], name
            assert item["resources"]["limits"]["memory"], name


@pytest.mark.parametrize("scenario", scenario_ids())
def test_every_object_carries_the_recommended_labels(scenario: str) -> None:
    for doc in render(scenario_values(scenario)):
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "freshmark", doc["metadata"]["name"]
        assert labels["app.kubernetes.io/instance"] == "fm"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert "helm.sh/chart" in labels


def test_freshmark_containers_get_config_store_and_secret_environment() -> None:
    docs = render()
    secret = by_kind(docs, "Secret")["fm-freshmark-env"]
    password = secret["stringData"]["REDIS_PASSWORD"]
    assert secret["stringData"]["FRESHMARK_REDIS_URL"] == \
        f"redis://:{password}@fm-freshmark-redis:6379/0"
    assert "FRESHMARK_API_TOKEN" in secret["stringData"]
    for name in ("fm-freshmark-serve", "fm-freshmark-scheduler", "fm-freshmark-worker-hot"):
        spec = container(docs, name)
        assert {"FRESHMARK_CONFIG", "FRESHMARK_HOME", "FRESHMARK_CHROMA_URL"} <= env_names(spec)
        assert spec["envFrom"] == [{"secretRef": {"name": "fm-freshmark-env"}}]
        mounts = {m["mountPath"] for m in spec["volumeMounts"]}
        assert {"/etc/freshmark", "/var/lib/freshmark", "/tmp"} <= mounts


def test_every_freshmark_container_gets_the_job_timings() -> None:
    values = {"timings": {"visibilityTimeoutSeconds": 7200, "lockLeaseSeconds": 45}}
    for name in ("fm-freshmark-serve", "fm-freshmark-scheduler", "fm-freshmark-worker-hot"):
        env = {e["name"]: e.get("value") for e in container(render(values), name)["env"]}
        assert (env["FRESHMARK_VISIBILITY_TIMEOUT_SECONDS"], env["FRESHMARK_LOCK_LEASE_SECONDS"]) \
            == ("7200", "45")


def test_a_lock_lease_not_below_the_visibility_timeout_fails_to_render() -> None:
    with pytest.raises(helm.HelmError, match="lockLeaseSeconds must be below"):
        render({"timings": {"visibilityTimeoutSeconds": 60, "lockLeaseSeconds": 60}})


def test_workers_write_multiprocess_metrics_to_a_writable_dir() -> None:
    spec = container(render(), "fm-freshmark-worker-hot")
    env = {e["name"]: e.get("value") for e in spec["env"]}
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/")


def test_config_change_rolls_the_pods() -> None:
    def checksum(values: dict[str, Any]) -> str:
        deployment = by_kind(render(values), "Deployment")["fm-freshmark-worker-hot"]
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    changed = {"config": {"toml": '[[layers]]\nname = "all"\n'}}
    assert checksum({}) != checksum(changed)


def test_webhook_secrets_and_token_go_into_the_secret() -> None:
    secret = by_kind(render(values_file("ingress-values.yaml")), "Secret")["fm-freshmark-env"]
    assert secret["stringData"]["SHOP_WEBHOOK_SECRET"] == "webhook-secret-for-tests"
    assert secret["stringData"]["FRESHMARK_API_TOKEN"] == "token-for-tests"


# -- stateful services ------------------------------------------------------------------------
def test_in_chart_chroma_and_redis_keep_data_on_claimed_volumes() -> None:
    sets = by_kind(render(), "StatefulSet")
    assert set(sets) == {"fm-freshmark-chroma", "fm-freshmark-redis"}
    for stateful in sets.values():
        claim = stateful["spec"]["volumeClaimTemplates"][0]
        assert claim["metadata"]["name"] == "data"
        mounts = stateful["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        assert {"name": "data", "mountPath": "/data"} in mounts


def test_external_chroma_and_redis_replace_the_stateful_sets() -> None:
    docs = render(values_file("external-values.yaml"))
    assert by_kind(docs, "StatefulSet") == {}
    env = {e["name"]: e.get("value") for e in container(docs, "fm-freshmark-serve")["env"]}
    assert env["FRESHMARK_CHROMA_URL"] == "https://chroma.internal.example:8443"
    secret = by_kind(docs, "Secret")["fm-freshmark-env"]["stringData"]
    assert secret["FRESHMARK_REDIS_URL"] == "redis://:s3cret@redis.internal.example:6380/2"
    assert "FRESHMARK_API_TOKEN" not in secret  # comes from the existing Secret
    env_from = container(docs, "fm-freshmark-worker-hot")["envFrom"]
    assert {"secretRef": {"name": "freshmark-credentials"}} in env_from


def test_mirror_cache_is_an_empty_dir_or_a_shared_claim() -> None:
    def home_volume(values: dict[str, Any]) -> dict[str, Any]:
        volumes = pod_specs(render(values))["fm-freshmark-worker-hot"]["volumes"]
        return next(v for v in volumes if v["name"] == "home")

    assert "emptyDir" in home_volume({})
    shared = home_volume(values_file("monitoring-values.yaml"))
    assert shared["persistentVolumeClaim"]["claimName"] == "fm-freshmark-mirror-cache"
    claim = by_kind(render(values_file("monitoring-values.yaml")), "PersistentVolumeClaim")
    assert claim["fm-freshmark-mirror-cache"]["spec"]["accessModes"] == ["ReadWriteMany"]
    existing = home_volume(values_file("external-values.yaml"))
    assert existing["persistentVolumeClaim"]["claimName"] == "freshmark-mirrors"


# -- autoscaling, ingress, monitoring ---------------------------------------------------------
def test_keda_scales_each_worker_deployment_on_its_queue_list() -> None:
    docs = render(values_file("keda-values.yaml"))
    scaled = by_kind(docs, "ScaledObject")
    assert set(scaled) == {f"fm-freshmark-worker-{q}" for q in QUEUES}
    for queue in QUEUES:
        spec = scaled[f"fm-freshmark-worker-{queue}"]["spec"]
        assert spec["scaleTargetRef"]["name"] == f"fm-freshmark-worker-{queue}"
        # The queue's list, and the lowest-priority one the batches of a split index wait in.
        lists = [t["metadata"]["listName"] for t in spec["triggers"]]
        assert lists == [queue, keys.kombu_queue_lists(queue)[-1]]
        for trigger in (t["metadata"] for t in spec["triggers"]):
            assert trigger["address"] == "fm-freshmark-redis.code.svc:6379"
            assert trigger["listLength"] == "10"
    for name, deployment in by_kind(docs, "Deployment").items():
        if "-worker-" in name:
            assert "replicas" not in deployment["spec"]  # KEDA owns the replica count


def test_keda_reads_an_external_redis_from_its_url() -> None:
    scaled = by_kind(render(values_file("external-values.yaml")), "ScaledObject")
    trigger = scaled["fm-freshmark-worker-hot"]["spec"]["triggers"][0]
    assert trigger["metadata"]["address"] == "redis.internal.example:6380"
    assert trigger["metadata"]["databaseIndex"] == "2"
    assert trigger["authenticationRef"] == {"name": "freshmark-redis-auth"}


def test_ingress_carries_the_body_size_limit() -> None:
    ingress = by_kind(render(values_file("ingress-values.yaml")), "Ingress")["fm-freshmark"]
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-body-size"] == "30m"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "fm-freshmark", "port": {"name": "http"}}
    assert by_kind(render(), "Ingress") == {}


def _ingress_paths(values: dict[str, Any]) -> list[str]:
    ingress = by_kind(render(values), "Ingress")["fm-freshmark"]
    return [p["path"] for p in ingress["spec"]["rules"][0]["http"]["paths"]]


def test_ingress_exposes_only_the_webhooks_by_default() -> None:
    assert _ingress_paths({"ingress": {"enabled": True}}) == ["/webhooks/"]


def test_ingress_exposes_the_api_only_when_asked() -> None:
    assert _ingress_paths({"ingress": {"enabled": True, "exposeApi": True}}) == ["/"]


def _mcp_hosts(values: dict[str, Any]) -> list[str]:
    serve = container(render(values), "fm-freshmark-serve")
    env = {e["name"]: e.get("value") for e in serve["env"]}
    return env["FRESHMARK_MCP_ALLOWED_HOSTS"].split(",")


def test_mcp_answers_the_service_names_and_the_ingress_host_only_if_the_api_is_exposed() -> None:
    assert {"fm-freshmark", "fm-freshmark.code.svc:*"} <= set(_mcp_hosts({}))
    hidden = {"ingress": {"enabled": True, "host": "fm.example.org"}}
    assert "fm.example.org" not in _mcp_hosts(hidden)
    exposed = {"ingress": {"enabled": True, "exposeApi": True, "host": "fm.example.org"},
               "serve": {"mcpAllowedHosts": ["mcp.example.org"]}}
    assert {"fm.example.org", "mcp.example.org"} <= set(_mcp_hosts(exposed))


# -- secrets and network ----------------------------------------------------------------------
def test_in_chart_redis_requires_the_password_freshmark_is_given() -> None:
    docs = render()
    secret = by_kind(docs, "Secret")["fm-freshmark-env"]["stringData"]
    assert len(secret["REDIS_PASSWORD"]) == 32
    redis_container = container(docs, "fm-freshmark-redis")
    assert redis_container["args"][-2:] == ["--requirepass", "$(REDIS_PASSWORD)"]
    ref = redis_container["env"][0]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "fm-freshmark-env", "key": "REDIS_PASSWORD"}
    assert "REDISCLI_AUTH" in " ".join(redis_container["readinessProbe"]["exec"]["command"])


def test_a_given_redis_password_is_quoted_into_the_url() -> None:
    secret = by_kind(render({"redis": {"auth": {"password": "p@ss:w/rd"}}}),
                     "Secret")["fm-freshmark-env"]["stringData"]
    assert secret["REDIS_PASSWORD"] == "p@ss:w/rd"
    assert secret["FRESHMARK_REDIS_URL"] == "redis://:p%40ss%3Aw%2Frd@fm-freshmark-redis:6379/0"


def test_the_read_token_goes_into_the_secret_when_given() -> None:
    secret = by_kind(render({"secrets": {"apiToken": "a", "apiReadToken": "r"}}),
                     "Secret")["fm-freshmark-env"]["stringData"]
    assert (secret["FRESHMARK_API_TOKEN"], secret["FRESHMARK_API_READ_TOKEN"]) == ("a", "r")
    assert "FRESHMARK_API_READ_TOKEN" not in by_kind(render(), "Secret")["fm-freshmark-env"][
        "stringData"]


def _admits(rule: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = rule["podSelector"]
    if any(labels.get(k) != v for k, v in selector["matchLabels"].items()):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))


def test_only_serve_workers_and_scheduler_reach_redis_and_chroma() -> None:
    docs = render()
    policies = by_kind(docs, "NetworkPolicy")
    assert set(policies) == {"fm-freshmark-redis", "fm-freshmark-chroma"}
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in docs
            if d["kind"] in ("Deployment", "StatefulSet")}
    for name, port in (("fm-freshmark-redis", 6379), ("fm-freshmark-chroma", 8000)):
        spec = policies[name]["spec"]
        assert spec["policyTypes"] == ["Ingress"]
        assert all(pods[name][k] == v for k, v in spec["podSelector"]["matchLabels"].items())
        (rule,) = spec["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": port}]
        admitted = {pod for pod, labels in pods.items()
                    if any(_admits(peer, labels) for peer in rule["from"])}
        assert admitted == {pod for pod in pods if pod.rsplit("-", 1)[-1] not in
                            ("redis", "chroma")}, name


def test_extra_redis_clients_are_admitted_to_redis_only() -> None:
    keda = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}}
    policies = by_kind(render({"networkPolicy": {"extraRedisClients": [keda]}}), "NetworkPolicy")
    assert keda in policies["fm-freshmark-redis"]["spec"]["ingress"][0]["from"]
    assert keda not in policies["fm-freshmark-chroma"]["spec"]["ingress"][0]["from"]


def test_network_policies_follow_the_in_chart_services() -> None:
    assert by_kind(render(values_file("external-values.yaml")), "NetworkPolicy") == {}
    assert by_kind(render({"networkPolicy": {"enabled": False}}), "NetworkPolicy") == {}


def test_prometheus_rule_is_built_from_the_deploy_rules_file() -> None:
    docs = render({"prometheusRule": {"enabled": True}})
    rule = by_kind(docs, "PrometheusRule")["fm-freshmark"]
    source = yaml.safe_load((ROOT / "deploy" / "prometheus" / "freshmark-rules.yaml").read_text())
    assert rule["spec"] == source


def test_runbook_base_url_rewrites_every_runbook_link() -> None:
    rule = by_kind(render(values_file("monitoring-values.yaml")), "PrometheusRule")["fm-freshmark"]
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]
            if "alert" in r]
    base = "https://git.example.com/platform/freshmark/blob/main/deploy/runbooks/"
    assert urls and all(u.startswith(base) and u.endswith(".md") for u in urls)
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_dashboard_config_map_is_the_deploy_dashboard_for_the_sidecar() -> None:
    docs = render({"grafanaDashboard": {"enabled": True}})
    config_map = by_kind(docs, "ConfigMap")["fm-freshmark-dashboard"]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    source = json.loads((ROOT / "deploy" / "grafana" / "freshmark-dashboard.json").read_text())
    assert json.loads(config_map["data"]["freshmark-dashboard.json"]) == source


def test_service_monitor_scrapes_the_http_service_and_every_worker() -> None:
    docs = render({"serviceMonitor": {"enabled": True}})
    monitor = by_kind(docs, "ServiceMonitor")["fm-freshmark"]["spec"]
    assert {e["port"] for e in monitor["endpoints"]} == {"http", "metrics"}
    selected = monitor["selector"]["matchExpressions"][0]["values"]
    services = by_kind(docs, "Service")
    for name, port in (("fm-freshmark", "http"), ("fm-freshmark-worker-metrics", "metrics")):
        labels = services[name]["metadata"]["labels"]
        assert labels["app.kubernetes.io/component"] in selected
        assert all(labels[k] == v for k, v in monitor["selector"]["matchLabels"].items())
        assert port in {p["name"] for p in services[name]["spec"]["ports"]}
    assert services["fm-freshmark-worker-metrics"]["spec"]["clusterIP"] == "None"


def test_monitoring_objects_are_off_by_default() -> None:
    kinds = {d["kind"] for d in render()}
    assert not kinds & CRD_KINDS
    assert "fm-freshmark-dashboard" not in by_kind(render(), "ConfigMap")


def test_notes_name_the_components() -> None:
    notes = chart().render({}, name="fm", namespace="code")["freshmark/templates/NOTES.txt"]
    assert "fm-freshmark-worker-hot" in notes and "Recreate" in notes

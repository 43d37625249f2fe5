"""The chart's Chroma shards: ``chroma.shards`` servers, each its own StatefulSet, Service and
NetworkPolicy, all of them named to freshmark in ``FRESHMARK_CHROMA_URLS``."""

from __future__ import annotations

from typing import Any

import pytest
from test_helm import by_kind, chart, container, helm, pod_specs, render, values_file

SHARDS = ("fm-freshmark-chroma", "fm-freshmark-chroma-1", "fm-freshmark-chroma-2")
URLS = ",".join(f"http://{name}:8000" for name in SHARDS)


def sharded() -> list[dict[str, Any]]:
    return render(values_file("shards-values.yaml"))


def chroma_env(docs: list[dict[str, Any]], workload: str) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container(docs, workload)["env"]
            if e["name"].startswith("FRESHMARK_CHROMA")}


def test_the_shard_count_makes_that_many_chroma_stateful_sets() -> None:
    sets = by_kind(sharded(), "StatefulSet")

    assert sorted(name for name in sets if "chroma" in name) == list(SHARDS)


def test_each_chroma_service_selects_only_the_pods_of_its_stateful_set() -> None:
    docs = sharded()
    services, pods = by_kind(docs, "Service"), pod_specs(docs)
    labels = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
              for d in docs if d["kind"] == "StatefulSet"}

    for name in SHARDS:
        selector = services[name]["spec"]["selector"]
        selected = {pod for pod in pods
                    if pod in labels and all(labels[pod].get(k) == v for k, v in selector.items())}
        assert selected == {name}


@pytest.mark.parametrize("workload", ["fm-freshmark-serve", "fm-freshmark-worker-hot",
                                      "fm-freshmark-scheduler"])
def test_every_freshmark_pod_is_given_every_shard(workload: str) -> None:
    assert chroma_env(sharded(), workload) == {"FRESHMARK_CHROMA_URLS": URLS}


def test_one_shard_keeps_the_single_server_setting() -> None:
    assert chroma_env(render(), "fm-freshmark-serve") == {
        "FRESHMARK_CHROMA_URL": "http://fm-freshmark-chroma:8000"}


def test_external_servers_become_the_url_list() -> None:
    urls = ["https://c0.example:8443", "https://c1.example:8443"]

    docs = render({"chroma": {"enabled": False, "externalUrls": urls}})

    assert by_kind(docs, "StatefulSet").keys() == {"fm-freshmark-redis"}
    assert chroma_env(docs, "fm-freshmark-serve") == {"FRESHMARK_CHROMA_URLS": ",".join(urls)}


def test_every_shard_admits_freshmark_pods_on_the_chroma_port() -> None:
    policies = by_kind(sharded(), "NetworkPolicy")

    for name in SHARDS:
        (rule,) = policies[name]["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]
        assert policies[name]["spec"]["podSelector"]["matchLabels"][
            "app.kubernetes.io/component"] == name.removeprefix("fm-freshmark-")


@pytest.mark.parametrize("bad", [{"chroma": {"shards": 0}},
                                 {"chroma": {"externalUrls": ["http://a:1,http://b:2"]}}])
def test_values_schema_rejects_bad_shard_values(bad: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmError):
        chart().validate_schema(chart().merge_values(bad))

"""End to end with real processes: commit to a remote -> signed webhook -> ``freshmark serve``
-> Redis -> ``freshmark worker`` (Celery prefork) -> mirror fetch -> index -> Chroma server.

One cluster (worker + server) serves the whole module; every test has a repository of its own.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator

import httpx
import pytest
from cluster_support import (
    FRESHMARK,
    PROCESS_DB,
    REDIS_HOST,
    REDIS_PORT,
    REPO_ROOT,
    SECRET_ENV,
    Cluster,
    client_for,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from repo_builder import RepoBuilder

from freshmark.adapters.queue import jobs
from freshmark.adapters.store.chroma import Store
from freshmark.core import jobspec

pytestmark = [pytest.mark.slow, pytest.mark.server]

REPO_NAMES = ("push", "order", "dup", "ondemand", "overlaypush", "deleted", "namedbase")
LAYERS = """
[[layers]]
name = "hot"
globs = ["src/**"]
interval_seconds = 3600
queue = "hot"

[[layers]]
name = "infra"
globs = ["**"]
interval_seconds = 86400
queue = "infra"
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, chroma_server) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    suffix = uuid.uuid4().hex[:6]  # the Chroma server is shared by the session
    repos: list[dict[str, object]] = []
    works: dict[str, tuple[str, RepoBuilder]] = {}
    for name in REPO_NAMES:
        remote, work = make_remote(root / "remotes", name)
        repo_id = f"{name}-{suffix}"
        repos.append({"id": repo_id, "url": f"file://{remote}", "branches": ["main"],
                      "provider": "github", "webhook_secret_env": SECRET_ENV})
        works[name] = (repo_id, work)
    config = write_config(root / "freshmark.toml", repos, layers=LAYERS,
                          service='api_token_env = "FM_TEST_API_TOKEN"')
    redis_url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{PROCESS_DB}"
    client_for(PROCESS_DB).flushdb()
    env = cluster_env(root, redis_url, chroma_server.url, config)
    env["FM_TEST_API_TOKEN"] = "api-token"
    cluster = Cluster(root, env, repos=works)
    try:
        cluster.start_worker()
        cluster.start_server()
        yield cluster
    finally:
        cluster.stop_all()
        client_for(PROCESS_DB).flushdb()


def _repo(cluster: Cluster, name: str) -> tuple[str, RepoBuilder]:
    return cluster.repos[name]


def _commit_and_push(work: RepoBuilder, files: dict[str, str], branch: str = "main") -> str:
    for path, text in files.items():
        work.write(path, text)
    sha = work.commit(f"change {uuid.uuid4().hex[:6]}")
    work.push("origin", branch)
    return sha


def test_pushed_commit_becomes_the_stamp_after_its_webhook(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "push")
    first = work.head()
    assert cluster.push_webhook(repo_id, first).status_code == 202
    cluster.wait_for_stamp(repo_id, first)
    second = _commit_and_push(work, {f"src/mod{i}.py": f"def f{i}():\n    return {i}\n"
                                     for i in range(10)})
    cluster.push_webhook(repo_id, second, before=first)
    manifest = cluster.wait_for_stamp(repo_id, second)
    assert {layer: stamp["commit"] for layer, stamp in manifest.layers.items()} == {
        "hot": second, "infra": second}


def test_new_stamp_is_visible_to_status_and_search(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "push")
    head = work.head()
    cluster.push_webhook(repo_id, head)
    cluster.wait_for_stamp(repo_id, head)
    status = _cli(cluster, "status", repo_id, "--json")
    assert any(row.get("commit") == head for row in status), status
    found = _cli(cluster, "search", "def hello", "--repo", repo_id, "--json")
    assert head in json.dumps(found)


def _cli(cluster: Cluster, *args: str) -> list[dict]:
    done = subprocess.run([*FRESHMARK, *args], cwd=REPO_ROOT,
                          env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return data if isinstance(data, list) else [data]


def test_deliveries_out_of_order_end_at_the_newest_commit(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "order")
    older = _commit_and_push(work, {"src/a.py": "A = 1\n"})
    newer = _commit_and_push(work, {"src/a.py": "A = 2\n", "infra/x.sh": "echo 2\n"})
    cluster.push_webhook(repo_id, newer, before=older)
    cluster.wait_for_stamp(repo_id, newer)
    cluster.push_webhook(repo_id, older)  # the late, older delivery
    wait_until(lambda: not cluster.client().keys("freshmark:job:*"), 60, "the queue to drain")
    assert cluster.manifest(repo_id).commit == newer


def test_same_delivery_twice_queues_one_job(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "dup")
    head = work.head()
    first = cluster.push_webhook(repo_id, head, delivery="dup-delivery-1")
    again = cluster.push_webhook(repo_id, head, delivery="dup-delivery-1")
    assert (first.status_code, again.json()["result"]) == (202, "duplicate")
    cluster.wait_for_stamp(repo_id, head)


def test_on_demand_branch_is_an_overlay_on_its_base(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "ondemand")
    base = work.head()
    cluster.push_webhook(repo_id, base)
    cluster.wait_for_stamp(repo_id, base)
    work.branch("feature/login").checkout("feature/login")
    head = _commit_and_push(work, {"src/login.py": "def login():\n    return True\n"},
                            branch="feature/login")
    answer = httpx.post(f"{cluster.base_url}/branches/{repo_id}", json={"branch": "feature/login"},
                        headers={"Authorization": "Bearer api-token"}, timeout=10)
    assert answer.status_code == 202
    manifest = cluster.wait_for_stamp(repo_id, head, branch="feature/login")
    assert manifest.base_branch == "main" and manifest.overlay["layered_on"]["hot"] == base
    own = Store.open(cluster.settings()).own_branch(f"id:{repo_id}", "feature/login")
    assert own is not None and own.paths() == {"src/login.py"}
    work.checkout("main")


def test_an_on_demand_branch_on_a_named_base_never_indexed_is_refused_not_indexed_whole(
        cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "namedbase")
    work.branch("release").checkout("release")
    _commit_and_push(work, {"src/release.py": "def ship():\n    return 1\n"}, branch="release")
    work.branch("feature/x").checkout("feature/x")
    _commit_and_push(work, {"src/x.py": "def x():\n    return 2\n"}, branch="feature/x")
    answer = httpx.post(f"{cluster.base_url}/branches/{repo_id}",
                        json={"branch": "feature/x", "base": "release"},
                        headers={"Authorization": "Bearer api-token"}, timeout=10)
    assert answer.status_code == 202
    job_key = jobspec.job_key(jobspec.KIND_INDEX, repo_id, "feature/x", jobspec.ALL)
    client = cluster.client()
    wait_until(lambda: jobs.parked_job(client, job_key) is not None, 60, "the job to park")
    error = (jobs.parked_job(client, job_key) or {}).get("last_error", "")
    assert "'release'" in error and "is not indexed" in error
    assert Store.open(cluster.settings()).own_branch(f"id:{repo_id}", "feature/x") is None
    work.checkout("main")


def test_a_push_to_a_branch_updates_its_overlay(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "overlaypush")
    base = work.head()
    cluster.push_webhook(repo_id, base)
    cluster.wait_for_stamp(repo_id, base)
    work.branch("feature/pay").checkout("feature/pay")
    first = _commit_and_push(work, {"src/pay.py": "def pay():\n    return 1\n"},
                             branch="feature/pay")
    httpx.post(f"{cluster.base_url}/branches/{repo_id}", json={"branch": "feature/pay"},
               headers={"Authorization": "Bearer api-token"}, timeout=10)
    cluster.wait_for_stamp(repo_id, first, branch="feature/pay")
    second = _commit_and_push(work, {"src/refund.py": "def refund():\n    return 2\n"},
                              branch="feature/pay")
    cluster.push_webhook(repo_id, second, before=first, branch="feature/pay")
    cluster.wait_for_stamp(repo_id, second, branch="feature/pay")
    own = Store.open(cluster.settings()).own_branch(f"id:{repo_id}", "feature/pay")
    assert own is not None and own.paths() == {"src/pay.py", "src/refund.py"}
    work.checkout("main")


def test_deleted_branch_collection_is_dropped(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "deleted")
    work.branch("short-lived").checkout("short-lived")
    head = _commit_and_push(work, {"src/tmp.py": "T = 1\n"}, branch="short-lived")
    work.checkout("main")
    subprocess.run([*FRESHMARK, "branch", "index", repo_id,
                    "short-lived"], cwd=REPO_ROOT, env=cluster.env, check=True, timeout=60)
    cluster.wait_for_stamp(repo_id, head, branch="short-lived")
    work.push("origin", ":short-lived")
    deleted = cluster.push_webhook(repo_id, "0" * 40, before=head, branch="short-lived")
    assert deleted.status_code == 202
    wait_until(lambda: cluster.manifest(repo_id, "short-lived") is None, 60,
               "the deleted branch's collection to be dropped")



def test_metrics_count_deliveries_and_job_outcomes(cluster: Cluster) -> None:
    repo_id, work = _repo(cluster, "dup")
    cluster.push_webhook(repo_id, work.head())
    cluster.wait_for_stamp(repo_id, work.head())
    text = httpx.get(f"{cluster.base_url}/metrics", timeout=10).text
    assert 'freshmark_webhook_deliveries_total{provider="github",result="accepted"}' in text
    # One machine, one multiprocess directory: the service's /metrics includes the workers'.
    assert 'freshmark_jobs_total{outcome="success",queue="hot"}' in text

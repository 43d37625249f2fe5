"""Dropping a branch and whole-branch jobs under real workers: the branch's lock keeps them apart
from index runs, and a waiting whole-branch job goes before new layer runs.

A run is held at one chosen point, as in ``test_cluster_layers``: its worker's mirror fetch,
which the remote (``PausingRemote``) stops half-way through the second pack (the first is the
initial clone), while the run holds its layer's lock.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cluster_support import (
    EVENT_DEADLINE_SECONDS,
    FRESHMARK,
    HELD_RUN_LIMIT_SECONDS,
    HOT_AND_INFRA_LAYERS,
    REPO_ROOT,
    SECRET_ENV,
    Cluster,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from pausing_remote import PausingRemote
from repo_builder import RepoBuilder

from freshmark.adapters import keys
from freshmark.adapters.lexical.tantivy_engine import index_directory
from freshmark.adapters.store.chroma import Store
from freshmark.core.manifest import collection_name

pytestmark = [pytest.mark.slow, pytest.mark.server]

TOKEN = "drop-lock-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Held:
    """A cluster whose ``main`` is indexed at ``first`` and whose hot run towards ``second`` is
    held half-way through its fetch (``remote.release()`` lets it finish)."""

    cluster: Cluster
    remote: PausingRemote
    repo_id: str
    work: RepoBuilder
    first: str
    second: str

    def on_home(self, name: str) -> Cluster:
        """The same cluster seen by processes with a home (mirror) of their own, so that the
        held fetch's mirror lock is not in their way. Its processes join the cluster's list,
        so the fixture's ``stop_all`` stops them too."""
        home = self.cluster.root / f"home-{name}"
        return Cluster(self.cluster.root, {**self.cluster.env, "FRESHMARK_HOME": str(home)},
                       procs=self.cluster.procs, base_url=self.cluster.base_url)

    def layer_commit(self, layer: str) -> str | None:
        return self.cluster.layer_commit(self.repo_id, layer)

    def drop(self) -> httpx.Response:
        return httpx.delete(f"{self.cluster.base_url}/v1/repos/{self.repo_id}/branches/main",
                            headers=AUTH, timeout=60)


@pytest.fixture
def held(tmp_path: Path, process_db: str, chroma_server) -> Iterator[Held]:
    remote = PausingRemote(tmp_path / "remotes", pause_on_pack=2).start()
    _, work = make_remote(tmp_path / "remotes", "shop")
    repo_id = f"shop-{uuid.uuid4().hex[:6]}"
    config = write_config(tmp_path / "freshmark.toml", [
        {"id": repo_id, "url": f"{remote.url}/shop.git", "branches": ["main"],
         "provider": "github", "webhook_secret_env": SECRET_ENV}],
        service=f'reconcile_interval_seconds = 0\napi_token_env = "{SECRET_ENV}_API"',
        layers=HOT_AND_INFRA_LAYERS)
    env = cluster_env(tmp_path, process_db, chroma_server.url, config,
                      visibility_timeout_seconds=HELD_RUN_LIMIT_SECONDS)
    env[f"{SECRET_ENV}_API"] = TOKEN
    cluster = Cluster(tmp_path, env)
    state = Held(cluster, remote, repo_id, work, work.head(), "")
    try:
        cluster.start_server()
        cluster.start_worker(queues="hot,infra", concurrency=1, name="first")
        assert cluster.push_webhook(repo_id, state.first).status_code == 202
        wait_until(lambda: state.layer_commit("infra") == state.first
                   and state.layer_commit("hot") == state.first,
                   EVENT_DEADLINE_SECONDS, "both layers stamped at the first commit")
        cluster.stop_all()  # the hot worker is started again alone; infra jobs wait unserved
        cluster.start_server()
        cluster.start_worker(queues="hot", concurrency=1, name="hot")
        work.write("src/app.py", "def hello():\n    return 'hello again'\n")
        work.write("infra/deploy.sh", "#!/bin/sh\necho deploy again\n")
        state.second = work.commit("second")
        work.push("origin", "main")
        assert cluster.push_webhook(repo_id, state.second).status_code == 202
        assert remote.paused.wait(EVENT_DEADLINE_SECONDS), "the hot run never fetched"
        hot_job = keys.job(f"index:{repo_id}:main:hot")
        assert cluster.client().hget(hot_job, "state") == "running"
        yield state
    finally:
        cluster.stop_all()
        remote.stop()


def test_a_drop_while_an_index_run_holds_the_branch_is_busy_and_drops_nothing(
        held: Held) -> None:
    answer = held.drop()

    assert answer.status_code == 503, answer.text
    detail = answer.json()["detail"]
    assert detail["error"] == "BranchBusy"
    assert f"busy: an index run holds branch {held.repo_id}@main; retry" in detail["message"]
    assert held.layer_commit("hot") == held.first
    held.remote.release()
    wait_until(lambda: held.layer_commit("hot") == held.second, EVENT_DEADLINE_SECONDS,
               "the held run stamped its head after the refused drop")


def test_the_cli_drop_while_an_index_run_holds_the_branch_exits_3_busy(held: Held) -> None:
    done = subprocess.run([*FRESHMARK, "drop", held.repo_id, "--branch", "main"], cwd=REPO_ROOT,
                          env=held.cluster.env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 3, done.stderr
    assert f"busy: an index run holds branch {held.repo_id}@main; retry" in done.stderr
    assert held.layer_commit("hot") == held.first


def test_a_drop_after_the_run_leaves_no_collection_lexical_index_or_manifest(
        held: Held) -> None:
    held.remote.release()
    wait_until(lambda: held.layer_commit("hot") == held.second, EVENT_DEADLINE_SECONDS,
               "the held run stamped its head")
    collection = collection_name(f"id:{held.repo_id}", "main")
    lexical = index_directory(held.cluster.settings().cache_dir, collection)
    assert lexical.is_dir()

    answer = held.drop()

    assert answer.status_code == 200, answer.text
    assert answer.json() == {"repo": held.repo_id, "dropped": ["main"]}
    store = Store.open(held.cluster.settings())
    assert store.own_branch(f"id:{held.repo_id}", "main") is None
    assert [m for m in store.list_manifests() if m.repo == held.repo_id] == []
    assert not lexical.exists()


def test_a_waiting_whole_branch_job_runs_before_a_layer_run_queued_after_it(
        held: Held) -> None:
    whole = held.on_home("whole")
    whole.start_worker(queues="ondemand", concurrency=1, name="whole")
    asked = httpx.post(f"{held.cluster.base_url}/branches/{held.repo_id}",
                       json={"branch": "main"}, headers=AUTH, timeout=30)
    assert asked.status_code == 202, asked.text
    client = held.cluster.client()
    wait_until(lambda: client.exists(keys.branch_wants(held.repo_id, "main")),
               EVENT_DEADLINE_SECONDS, "the whole-branch job to mark the branch as wanted")
    infra = held.on_home("infra")
    infra.start_worker(queues="infra", concurrency=1, name="infra")
    infra_log = held.cluster.root / "worker-infra.log"
    wait_until(lambda: b"retry: Retry in" in infra_log.read_bytes(), EVENT_DEADLINE_SECONDS,
               "the infra run to be turned away while the whole-branch job waits")

    held.remote.release()

    whole_log = held.cluster.root / "worker-whole.log"
    wait_until(lambda: f"job index:{held.repo_id}:main:infra noop".encode()
               in infra_log.read_bytes(), EVENT_DEADLINE_SECONDS,
               "the infra run, after the whole-branch job, found nothing left to do")
    assert f"job index:{held.repo_id}:main:* success".encode() in whole_log.read_bytes()
    assert held.layer_commit("infra") == held.second

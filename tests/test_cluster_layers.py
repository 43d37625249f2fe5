"""Layers of one branch under real workers: a hot run is not held up by an infrastructure run
in progress on the same branch, and both layers' stamps land in the branch's manifest.

The infrastructure run is held at one chosen point: its worker's mirror fetch, which the remote
(``PausingRemote``) stops half-way through the pack, while the run holds its layer's lock. The
hot layer's worker has a home (mirror) of its own, so the only thing the two runs could share is
the lock under test.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from cluster_support import (
    EVENT_DEADLINE_SECONDS,
    HELD_RUN_LIMIT_SECONDS,
    HOT_AND_INFRA_LAYERS,
    SECRET_ENV,
    Cluster,
    cluster_env,
    make_remote,
    wait_until,
    write_config,
)
from pausing_remote import PausingRemote

from freshmark.adapters import keys
from freshmark.core.manifest import Manifest

pytestmark = [pytest.mark.slow, pytest.mark.server]



def test_hot_run_stamps_while_an_infra_run_on_the_branch_is_held(
    tmp_path: Path, process_db: str, chroma_server
) -> None:
    remote = PausingRemote(tmp_path / "remotes", pause_on_pack=1).start()
    _, work = make_remote(tmp_path / "remotes", "shop")
    repo_id = f"shop-{uuid.uuid4().hex[:6]}"
    config = write_config(tmp_path / "freshmark.toml", [
        {"id": repo_id, "url": f"{remote.url}/shop.git", "branches": ["main"],
         "provider": "github", "webhook_secret_env": SECRET_ENV}],
        service="reconcile_interval_seconds = 0", layers=HOT_AND_INFRA_LAYERS)
    env = cluster_env(tmp_path, process_db, chroma_server.url, config,
                      visibility_timeout_seconds=HELD_RUN_LIMIT_SECONDS)
    infra_side = Cluster(tmp_path, env)
    hot_side = Cluster(tmp_path, {**env, "FRESHMARK_HOME": str(tmp_path / "hot-home")})
    head = work.head()
    try:
        infra_side.start_worker(queues="infra", concurrency=1, name="infra")
        infra_side.start_server()
        assert infra_side.push_webhook(repo_id, head).status_code == 202
        assert remote.paused.wait(EVENT_DEADLINE_SECONDS), "the infra run never fetched"
        infra_job = keys.job(f"index:{repo_id}:main:infra")
        assert infra_side.client().hget(infra_job, "state") == "running"

        hot_side.start_worker(queues="hot", concurrency=1, name="hot")
        wait_until(lambda: hot_side.layer_commit(repo_id, "hot") == head, EVENT_DEADLINE_SECONDS,
                   "the hot layer stamped while the infra run is held")
        assert infra_side.client().hget(infra_job, "state") == "running"
        assert hot_side.layer_commit(repo_id, "infra") is None

        remote.release()
        manifest: Manifest = infra_side.wait_for_stamp(repo_id, head,
                                                       timeout_seconds=EVENT_DEADLINE_SECONDS)
    finally:
        hot_side.stop_all()
        infra_side.stop_all()
        remote.stop()
    assert (manifest.layer_commit("hot"), manifest.layer_commit("infra")) == (head, head)

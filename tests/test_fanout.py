"""Splitting a large index run: batching (pure), the settings, and the run's record in Redis."""

from __future__ import annotations

import os
import time

import pytest
import redis

from freshmark.adapters import keys
from freshmark.adapters.queue import fanout
from freshmark.core.config import ScaleOut, parse_config
from freshmark.core.plan import batch_changes
from freshmark.core.tree import FileChange
from workers import scaleout

JOB_KEY = "index:shop:main:*"


def _added(path: str) -> FileChange:
    return FileChange("added", None, path, None, "b" * 40)


def _start(client: redis.Redis, total: int = 3, fanout_id: str = "f1") -> None:
    client.hset(keys.job(JOB_KEY), mapping={"state": "running", "id": "j1"})
    fanout.start(client, "shop", "main", fanout_id=fanout_id, job_key=JOB_KEY, head="c" * 40,
                 total=total, ttl_seconds=60)


def _claim(client: redis.Redis, batch: int, holder: str, lease_seconds: float = 30,
           fanout_id: str = "f1") -> str:
    return fanout.claim(client, "shop", "main", fanout_id, batch, holder, lease_seconds)[0]


def _complete(client: redis.Redis, batch: int, counts: dict | None = None) -> str:
    return fanout.complete(client, "shop", "main", "f1", batch, JOB_KEY,
                           counts or {"chunks_added": 1})


def _record(client: redis.Redis) -> fanout.Record:
    record = fanout.read(client, "shop", "main")
    assert record is not None
    return record


# -- pure -------------------------------------------------------------------------------------


def test_batches_keep_diff_order_and_their_size() -> None:
    changes = [_added(f"src/m{i}.py") for i in range(7)]
    batches = batch_changes(changes, 3)
    assert [len(b) for b in batches] == [3, 3, 1]
    assert [c for b in batches for c in b] == changes


def test_changes_sharing_a_path_stay_in_one_batch() -> None:
    renamed = FileChange("renamed", "src/a.py", "src/b.py", "1" * 40, "1" * 40, similarity=100)
    readded = _added("src/a.py")  # a new file where the renamed one was
    x, y = _added("src/x.py"), _added("src/y.py")
    assert batch_changes([renamed, x, y, readded], 2) == [[renamed, readded], [x, y]]
    assert batch_changes([x, renamed, y, readded], 2) == [[x, renamed, readded], [y]]


def test_scale_out_settings_are_read_from_the_config() -> None:
    config = parse_config({"scale_out": {"min_files": 50, "files_per_batch": 10,
                                         "lease_seconds": 30}})
    assert config.scale_out == ScaleOut(min_files=50, files_per_batch=10, lease_seconds=30)
    assert config.scale_out.splits(50) and not config.scale_out.splits(49)
    assert not ScaleOut(min_files=0).splits(10**6)  # 0 turns splitting off


def test_claimable_offers_free_lapsed_and_dead_held_batches_highest_first() -> None:
    record = fanout.Record(
        id="f1", job=JOB_KEY, head="c" * 40, total=5, state=fanout.RUNNING,
        claims={1: fanout.BatchClaim(1, "h:1:dead", 200.0),
                2: fanout.BatchClaim(2, "h:2:live", 200.0),
                3: fanout.BatchClaim(3, "h:3:live", 50.0)},
        results={4: {}}, errors={}, now=100.0,
    )
    offered = fanout.claimable(record, is_dead=lambda holder: holder.endswith("dead"))
    assert offered == [3, 1, 0]
    assert [c.batch for c in fanout.live_claims(record, lambda h: h.endswith("dead"))] == [2]


# -- the record in Redis ------------------------------------------------------------------------


def test_a_batch_completed_twice_counts_once(redis_client: redis.Redis) -> None:
    _start(redis_client)
    assert _claim(redis_client, 0, "h:1:a") == "claimed"
    assert _complete(redis_client, 0) == "completed"
    assert _complete(redis_client, 0, {"chunks_added": 99}) == "duplicate"
    record = _record(redis_client)
    assert record.results == {0: {"chunks_added": 1}} and not record.all_in
    assert _claim(redis_client, 0, "h:2:b") == "done"


def test_a_batch_completed_twice_keeps_the_lexical_documents_of_the_first(
        redis_client: redis.Redis) -> None:
    _start(redis_client)
    for documents, outcome in (('{"documents": [1]}', "completed"),
                               ('{"documents": [2]}', "duplicate")):
        assert fanout.complete(redis_client, "shop", "main", "f1", 0, JOB_KEY,
                               {"chunks_added": 1}, documents) == outcome
    assert _record(redis_client).lexical == {0: '{"documents": [1]}'}


def test_lexical_documents_taken_leave_the_record_and_the_counts_stay(
        redis_client: redis.Redis) -> None:
    _start(redis_client)
    for batch in (0, 1):
        fanout.complete(redis_client, "shop", "main", "f1", batch, JOB_KEY,
                        {"chunks_added": batch}, f'{{"documents": [{batch}]}}')
    assert fanout.taken(redis_client, "shop", "main", "f1", [0])
    record = _record(redis_client)
    assert record.lexical == {1: '{"documents": [1]}'}
    assert record.results == {0: {"chunks_added": 0}, 1: {"chunks_added": 1}}


def test_a_live_claim_is_busy_for_others_until_its_lease_lapses(redis_client: redis.Redis) -> None:
    _start(redis_client)
    assert _claim(redis_client, 1, "h:1:a", lease_seconds=0.2) == "claimed"
    assert fanout.claim(redis_client, "shop", "main", "f1", 1, "h:2:b", 30) == ("busy", "h:1:a")
    time.sleep(0.3)
    assert _claim(redis_client, 1, "h:2:b") == "claimed"
    assert not fanout.renew(redis_client, "shop", "main", "f1", 1, "h:1:a", 30)


def test_a_claim_of_a_dead_holder_is_taken_over(redis_client: redis.Redis) -> None:
    _start(redis_client)
    _claim(redis_client, 2, "h:1:dead")
    outcome, _ = fanout.claim(redis_client, "shop", "main", "f1", 2, "h:2:b", 30,
                              take_over_from="h:1:dead")
    assert outcome == "claimed" and _record(redis_client).claims[2].holder == "h:2:b"


def test_a_cancelled_run_stops_its_holders_and_takes_no_results(redis_client: redis.Redis) -> None:
    _start(redis_client)
    _claim(redis_client, 0, "h:1:a")
    assert fanout.cancel(redis_client, "shop", "main", JOB_KEY)
    assert not fanout.renew(redis_client, "shop", "main", "f1", 0, "h:1:a", 30)
    assert _complete(redis_client, 0) == "gone"
    assert _claim(redis_client, 1, "h:1:a") == "gone"
    assert [c.holder for c in fanout.live_claims(_record(redis_client), lambda h: False)] == [
        "h:1:a"]  # a coordinator drains until it lets go
    assert fanout.release(redis_client, "shop", "main", "f1", 0, "h:1:a")
    assert fanout.live_claims(_record(redis_client), lambda h: False) == []


def test_messages_of_an_earlier_run_claim_nothing(redis_client: redis.Redis) -> None:
    _start(redis_client, fanout_id="old")
    _start(redis_client, fanout_id="new")
    assert _claim(redis_client, 0, "h:1:a", fanout_id="old") == "gone"


def test_the_job_shows_batches_done_of_total(redis_client: redis.Redis) -> None:
    _start(redis_client, total=3)
    job = keys.job(JOB_KEY)
    assert redis_client.hmget(job, keys.JOB_BATCHES_DONE, keys.JOB_BATCHES_TOTAL) == ["0", "3"]
    for batch in (0, 2):
        _claim(redis_client, batch, f"h:{os.getpid()}:x")
        _complete(redis_client, batch)
    assert redis_client.hmget(job, keys.JOB_BATCHES_DONE, keys.JOB_BATCHES_TOTAL) == ["2", "3"]
    assert fanout.remove(redis_client, "shop", "main", JOB_KEY, "f1")
    assert redis_client.hget(job, keys.JOB_BATCHES_TOTAL) is None
    assert fanout.read(redis_client, "shop", "main") is None


# -- a holder of a cancelled run ----------------------------------------------------------------


def _slot(client: redis.Redis, batch: int, lease_seconds: float = 30) -> scaleout.BatchSlot:
    return scaleout.BatchSlot(client, "shop", "main", "f1", batch, f"h:{os.getpid()}:x",
                              lease_seconds)


def test_a_batch_whose_run_is_cancelled_mid_work_gives_its_claim_back(
    redis_client: redis.Redis,
) -> None:
    _start(redis_client)
    slot = _slot(redis_client, 0, lease_seconds=0.2)  # renewed every 0.05 s at most
    assert slot.claim() == "claimed"

    def work(keep: scaleout.KeepClaim) -> dict[str, int]:
        fanout.cancel(redis_client, "shop", "main", JOB_KEY)  # a new coordinator took over
        time.sleep(0.06)
        keep()  # what the indexer calls before each write
        return {"chunks_added": 1}

    with pytest.raises(fanout.BatchLost):
        scaleout._run_claimed(slot, JOB_KEY, "hot", scaleout.RUNNER_HELPER, work)
    assert 0 not in _record(redis_client).claims


def test_a_batch_whose_run_is_cancelled_before_its_result_gives_its_claim_back(
    redis_client: redis.Redis,
) -> None:
    _start(redis_client)
    slot = _slot(redis_client, 1)
    assert slot.claim() == "claimed"

    def work(keep: scaleout.KeepClaim) -> dict[str, int]:
        fanout.cancel(redis_client, "shop", "main", JOB_KEY)
        return {"chunks_added": 1}

    assert scaleout._run_claimed(slot, JOB_KEY, "hot", scaleout.RUNNER_HELPER, work) == "gone"
    assert _record(redis_client).claims == {}

"""The watchdog producer on real working copies, with inotify and with the polling observer."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_support import Recorder, wait_until
from repo_builder import RepoBuilder
from watchdog.events import FileCreatedEvent, FileModifiedEvent, FileMovedEvent

from freshmark.adapters import keys
from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.errors import NotARepository
from scheduler.watch import (
    FILE,
    REF,
    EventTally,
    Tally,
    TreeEventHandler,
    WatchOptions,
    WorkingCopyWatcher,
    classify_path,
)

ROOT = Path("/w/shop")
GIT = ROOT / ".git"


@pytest.mark.parametrize(("path", "kind"), [
    (GIT / "HEAD", REF),
    (GIT / "packed-refs", REF),
    (GIT / "refs/heads/feature/x", REF),
    (GIT / "refs/heads/main.lock", None),
    (GIT / "objects/ab/cdef0123", None),
    (GIT / "index", None),
    (GIT / "logs/HEAD", None),
    (ROOT / "src/app.py", FILE),
    (ROOT, None),
    (Path("/elsewhere/file.py"), None),
])
def test_paths_are_classified(path: Path, kind: str | None) -> None:
    assert classify_path(ROOT, GIT, str(path)) == kind


def test_atomic_save_counts_through_its_moved_event_alone() -> None:
    tally = EventTally()
    handler = TreeEventHandler(ROOT, GIT, tally)
    handler.dispatch(FileMovedEvent(str(ROOT / "src/.app.py.tmp"), str(ROOT / "src/app.py")))
    assert tally.take().files >= 1


def test_object_writes_are_not_counted() -> None:
    tally = EventTally()
    handler = TreeEventHandler(ROOT, GIT, tally)
    handler.dispatch(FileCreatedEvent(str(GIT / "objects/ab/cdef")))
    handler.dispatch(FileModifiedEvent(str(GIT / "objects/pack/pack-1.pack")))
    assert tally.take() == Tally()


def test_branch_switch_counts_as_a_ref_change() -> None:
    tally = EventTally()
    TreeEventHandler(ROOT, GIT, tally).dispatch(FileModifiedEvent(str(GIT / "HEAD")))
    assert tally.take().refs == 1


# --- real observers ----------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    builder = RepoBuilder.init(tmp_path / "shop")
    builder.write("src/app.py", "def a():\n    return 1\n").commit("one")
    return builder


@pytest.fixture(params=["inotify", "polling"])
def watcher(request: pytest.FixtureRequest, repo: RepoBuilder,
            redis_client: redis.Redis) -> Iterator[tuple[WorkingCopyWatcher, Recorder]]:
    send = Recorder()
    options = WatchOptions(debounce_seconds=30.0, polling=request.param == "polling",
                           poll_interval_seconds=0.2)
    w = WorkingCopyWatcher(repo.path, redis_client, send, options)
    w.start()
    yield w, send
    w.stop()


def _flush_until_queued(w: WorkingCopyWatcher) -> list[jobspec.EnqueueResult]:
    found: list[jobspec.EnqueueResult] = []

    def flushed() -> bool:
        found.extend(w.flush())
        return bool(found)

    wait_until(flushed, 15, "the watcher to see the change")
    return found


def test_atomic_save_queues_one_debounced_job(watcher, repo: RepoBuilder,
                                              redis_client: redis.Redis) -> None:
    w, send = watcher
    tmp = repo.path / "src" / ".app.py.swp"
    tmp.write_text("def a():\n    return 2\n")
    os.replace(tmp, repo.path / "src" / "app.py")
    results = _flush_until_queued(w)
    assert {(r.outcome, r.job_key) for r in results} == {("waiting", f"index:{w.label}:main:*")}
    assert redis_client.zscore(keys.DUE, f"index:{w.label}:main:*") is not None
    assert send.sent == []  # debounced: nothing reaches the broker before the due time


def test_debounced_job_is_sent_once_it_is_due(watcher, repo: RepoBuilder) -> None:
    w, send = watcher
    repo.write("src/b.py", "B = 1\n")
    _flush_until_queued(w)
    w.flush(now=10.0**10)  # far in the future: everything is due
    assert send.keys() == [f"index:{w.label}:main:*"]


def test_commit_and_branch_switch_queue_the_new_branch_seeded_from_the_old(
    watcher, repo: RepoBuilder, redis_client: redis.Redis
) -> None:
    w, _ = watcher
    repo.branch("feature").checkout("feature")
    results = _flush_until_queued(w)
    state = jobs.job_state(redis_client, f"index:{w.label}:feature:*")
    assert any(r.job_key.endswith(":feature:*") for r in results)
    assert state["base_branch"] == "main" and state["path"] == str(repo.path)


def test_git_objects_are_not_watched(watcher) -> None:
    w, _ = watcher
    watched = [Path(emitter.watch.path) for emitter in w.observer.emitters]
    assert watched and not any(p.is_relative_to(w.git_dir / "objects") for p in watched)


def test_new_top_level_directory_is_watched_too(watcher, repo: RepoBuilder) -> None:
    w, _ = watcher
    (repo.path / "newpkg").mkdir()
    _flush_until_queued(w)
    w.flush(now=10.0**10)
    (repo.path / "newpkg" / "mod.py").write_text("X = 1\n")
    assert _flush_until_queued(w)


# --- bursts and overflow ------------------------------------------------------------------------


def test_overflow_reported_by_watchdog_marks_a_reconcile(repo: RepoBuilder,
                                                         redis_client: redis.Redis) -> None:
    w = WorkingCopyWatcher(repo.path, redis_client, Recorder())
    w.start()
    try:
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost")
        assert w.tally.take().overflow
    finally:
        w.stop()


def test_after_a_burst_every_indexed_branch_that_moved_is_reconciled(
    repo: RepoBuilder, redis_client: redis.Redis
) -> None:
    w = WorkingCopyWatcher(repo.path, redis_client, Recorder(), WatchOptions(burst_events=100))
    w.indexed = {"main", "release"}
    repo.branch("release")
    w.heads = {"main": repo.head(), "release": "0" * 40}  # release moved since the last look
    specs = w.plan(Tally(files=150))
    assert [(s.branch, s.reason) for s in specs] == [
        ("main", "watch: reconcile"), ("release", "watch: reconcile")]


def test_a_quiet_flush_queues_only_the_checked_out_branch(repo: RepoBuilder,
                                                          redis_client: redis.Redis) -> None:
    w = WorkingCopyWatcher(repo.path, redis_client, Recorder(), WatchOptions(burst_events=100))
    w.indexed = {"main", "release"}
    w.heads = {"main": repo.head(), "release": "0" * 40}
    assert [s.branch for s in w.plan(Tally(files=3))] == ["main"]


def test_watching_something_that_is_not_a_working_copy_says_so(tmp_path: Path,
                                                               redis_client: redis.Redis) -> None:
    with pytest.raises(NotARepository):
        WorkingCopyWatcher(tmp_path, redis_client, Recorder())


# --- symbolic links ------------------------------------------------------------------------------


class _SeenPaths(TreeEventHandler):
    """The watcher's own handler, also keeping every path it was handed."""

    def __init__(self, w: WorkingCopyWatcher):
        super().__init__(w.root, w.git_dir, w.tally, w._watch_dir)
        self.paths: list[str] = []

    def on_any_event(self, event) -> None:
        self.paths += [str(event.src_path), str(getattr(event, "dest_path", "") or "")]
        super().on_any_event(event)


@pytest.mark.parametrize("polling", [False, True], ids=["inotify", "polling"])
def test_a_nested_link_out_of_the_working_copy_is_never_followed(
    polling: bool, repo: RepoBuilder, tmp_path: Path, redis_client: redis.Redis
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("X = 0\n")
    (repo.path / "sub").mkdir()
    (repo.path / "sub" / "outside").symlink_to(outside)
    w = WorkingCopyWatcher(repo.path, redis_client, Recorder(),
                           WatchOptions(polling=polling, poll_interval_seconds=0.2))
    w.handler = seen = _SeenPaths(w)
    w.start()
    try:
        edits = iter(range(10**6))

        def inside_change_seen() -> bool:
            n = next(edits)
            (outside / "x.py").write_text(f"X = {n}\n")
            (repo.path / "sub" / "mod.py").write_text(f"Y = {n}\n")
            return any(p.endswith("sub/mod.py") for p in seen.paths)

        wait_until(inside_change_seen, 15, "the watcher to see a change beside the link")
    finally:
        w.stop()
    assert not [p for p in seen.paths if "/sub/outside/" in p]


def test_a_top_level_link_loop_is_skipped_with_one_warning(
    repo: RepoBuilder, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    (repo.path / "loop").symlink_to(repo.path / "loop")
    w = WorkingCopyWatcher(repo.path, redis_client, Recorder(), WatchOptions(polling=True))
    with caplog.at_level(logging.WARNING, logger="freshmark.watch"):
        w.start()
        w.stop()
    warnings = [r.getMessage() for r in caplog.records if r.name == "freshmark.watch"]
    assert len(warnings) == 1 and "loop" in warnings[0] and "\n" not in warnings[0]

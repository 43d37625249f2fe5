"""The watchdog producer for a local working copy (``freshmark watch PATH``).

Events only say *when* to look; every job diffs the branch's stamp against its head, so a lost
or duplicated event costs nothing but latency. What is watched:

- the work tree, recursively, but never ``.git`` below its top (``.git/objects`` alone would
  eat thousands of inotify watches and fire on every fetch);
- ``.git`` itself (``HEAD``, ``packed-refs``) and ``.git/refs`` recursively: a commit or a
  branch switch is a ref change. Ref ``*.lock`` files are ignored; the rename that commits a ref
  update is what counts.

Editors that save atomically write a temp file and rename it over the target, so the target
sees only a ``moved`` event: its destination counts as the change. Events are tallied in
memory and turned into one debounced job per branch in Redis's due set (each new event pushes
the due time out, up to a maximum wait), which this process and the scheduler drain. After a
burst (more than ``burst_events`` in one flush window) or an inotify queue overflow (events were
dropped), every branch this watcher indexed and whose head moved is reconciled too. NFS and
bind mounts deliver no inotify events: ``polling=True`` uses watchdog's polling observer.

No watch ever follows a symbolic link: a link may lead out of the working copy (``ln -s /``
walks the whole filesystem) or into a loop. inotify watches are added with watchdog's
``follow_symlink=False`` (``IN_DONT_FOLLOW``, ``os.walk`` without ``followlinks``); the polling
observer takes its snapshots with ``os.lstat`` (watchdog's ``PollingObserverVFS``), so a link
is a leaf entry and never a directory to descend. Memory then grows with the working copy, not
with what its links point at. A linked top-level directory is skipped with one log line (a
warning when it loops or leads nowhere).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pygit2
import redis
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserverVFS

from freshmark.adapters.queue import jobs
from freshmark.core import jobspec
from freshmark.core.errors import NotARepository
from scheduler.outage import Outage

log = logging.getLogger("freshmark.watch")

FILE, REF = "file", "ref"
_QUIET_EVENT_TYPES = frozenset({"opened", "closed", "closed_no_write"})
_OVERFLOW_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")


def classify_path(root: Path, git_dir: Path, path: str) -> str | None:
    """``ref`` for HEAD/packed-refs/refs/**, ``file`` for the work tree, None to ignore."""
    candidate = Path(path)
    if candidate.is_relative_to(git_dir):
        parts = candidate.relative_to(git_dir).parts
        if not parts or parts[-1].endswith(".lock"):
            return None
        if parts in (("HEAD",), ("packed-refs",)) or parts[0] == "refs":
            return REF
        return None
    if candidate.is_relative_to(root) and candidate != root:
        return FILE
    return None


@dataclass(frozen=True)
class Tally:
    files: int = 0
    refs: int = 0
    overflow: bool = False

    @property
    def events(self) -> int:
        return self.files + self.refs


class EventTally:
    """Thread-safe counts of relevant events since the last ``take``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tally = Tally()

    def note(self, kind: str) -> None:
        with self._lock:
            t = self._tally
            self._tally = Tally(t.files + (kind == FILE), t.refs + (kind == REF), t.overflow)

    def note_overflow(self) -> None:
        with self._lock:
            self._tally = Tally(self._tally.files, self._tally.refs, True)

    def take(self) -> Tally:
        with self._lock:
            taken, self._tally = self._tally, Tally()
            return taken


class TreeEventHandler(FileSystemEventHandler):
    def __init__(self, root: Path, git_dir: Path, tally: EventTally,
                 on_new_top_dir: Callable[[Path], None] | None = None):
        self.root, self.git_dir, self.tally = root, git_dir, tally
        self.on_new_top_dir = on_new_top_dir

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _QUIET_EVENT_TYPES:
            return
        if event.is_directory and event.event_type == "modified":
            return  # a directory's mtime changes with every file event inside it
        paths = [event.src_path] + ([event.dest_path] if event.event_type == "moved" else [])
        for raw in paths:
            kind = classify_path(self.root, self.git_dir, str(raw))
            if kind is not None:
                self.tally.note(kind)
        if event.is_directory and event.event_type in ("created", "moved") and self.on_new_top_dir:
            target = Path(str(event.dest_path if event.event_type == "moved" else event.src_path))
            if target.parent == self.root and target != self.git_dir:
                self.on_new_top_dir(target)


class _OverflowLog(logging.Handler):
    """watchdog reports a kernel queue overflow only in its log; turn that into a signal."""

    def __init__(self, tally: EventTally):
        super().__init__(logging.WARNING)
        self.tally = tally

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.tally.note_overflow()


def _git_state(root: Path) -> tuple[str | None, dict[str, str]]:
    """(checked-out branch or None when detached/unborn, every local branch head)."""
    repo = pygit2.Repository(str(root))
    try:
        heads = {}
        for name in repo.branches.local:
            branch = repo.branches.local[name]
            heads[name] = str(branch.target)
        current = None if repo.head_is_detached or repo.head_is_unborn else repo.head.shorthand
        return current, heads
    finally:
        repo.free()


_OUTCOME_WORDS = {"new": "queued", "resend": "queued again", "waiting": "queued",
                  "coalesced": "merged into the pending job"}


def describe_enqueue(spec: jobspec.JobSpec, result: jobspec.EnqueueResult, tally: Tally,
                     delay_seconds: float) -> str:
    """The log line for one job the watcher asked for (what, why, when it will be sent)."""
    when = "now" if delay_seconds <= 0 else f"due in {delay_seconds:g} s"
    seeded = f", layered on {spec.base_branch}" if spec.base_branch else ""
    return (f"{spec.reason}: {_OUTCOME_WORDS.get(result.outcome, result.outcome)} index of "
            f"{spec.branch} ({when}{seeded}; {tally.files} file, {tally.refs} ref events"
            f"{', overflow' if tally.overflow else ''}) as {result.job_key}")


@dataclass(frozen=True)
class WatchOptions:
    """How a watcher batches events: the queue its jobs go to, the debounce after the last
    event (never past ``max_wait_seconds`` after the first), the event count at which a burst
    becomes a full reconcile, and the polling observer for mounts without inotify."""

    queue: str = jobspec.QUEUE_HOT
    debounce_seconds: float = 2.0
    max_wait_seconds: float = 30.0
    burst_events: int = 500
    polling: bool = False
    poll_interval_seconds: float = 1.0


def _observer(options: WatchOptions) -> BaseObserver:
    """inotify, or polling whose snapshots ``lstat`` every entry: a symlink to a directory is
    then a leaf, never descended (plain ``PollingObserver`` stats through links)."""
    if options.polling:
        return PollingObserverVFS(os.lstat, os.scandir,
                                  polling_interval=options.poll_interval_seconds)
    return Observer()


def _warn_link_skipped(path: Path) -> None:
    """One line per top-level link: a warning for a loop or a dangling link, else info."""
    try:
        path.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
        log.warning("watch: skipping %s: a symbolic link that loops or leads nowhere", path)
        return
    log.info("watch: not following symbolic link %s", path)


class WorkingCopyWatcher:
    def __init__(self, root: Path, client: redis.Redis, send: jobspec.Sender,
                 options: WatchOptions = WatchOptions()):
        self.root = root.resolve()
        try:
            repo = pygit2.Repository(str(self.root))
        except pygit2.GitError as exc:
            raise NotARepository(f"not a git working copy: {self.root}") from exc
        if repo.is_bare:
            raise NotARepository(f"{self.root} is a bare repository; watch a working copy")
        self.git_dir = Path(repo.path).resolve()
        repo.free()
        self.client, self.send, self.queue = client, send, options.queue
        self.debounce_seconds = options.debounce_seconds
        self.max_wait_seconds = options.max_wait_seconds
        self.burst_events = options.burst_events
        self.label = jobspec.working_copy_label(self.root)
        self.tally = EventTally()
        self.polling = options.polling
        self.observer = _observer(options)
        self.handler = TreeEventHandler(self.root, self.git_dir, self.tally, self._watch_dir)
        self.branch, self.heads = _git_state(self.root)
        self.indexed: set[str] = set()
        self._overflow_log = _OverflowLog(self.tally)

    def _watch_dir(self, path: Path) -> None:
        if path.is_symlink():
            _warn_link_skipped(path)
        elif path.is_dir():
            self.observer.schedule(self.handler, str(path), recursive=True)

    def start(self) -> None:
        self.observer.schedule(self.handler, str(self.root), recursive=False)
        for child in sorted(self.root.iterdir()):
            if child.name != ".git" and child != self.git_dir:
                self._watch_dir(child)
        self.observer.schedule(self.handler, str(self.git_dir), recursive=False)
        self._watch_dir(self.git_dir / "refs")
        for name in _OVERFLOW_LOGGERS:
            logging.getLogger(name).addHandler(self._overflow_log)
        self.observer.start()

    def stop(self) -> None:
        for name in _OVERFLOW_LOGGERS:
            logging.getLogger(name).removeHandler(self._overflow_log)
        self.observer.stop()
        self.observer.join(timeout=10)

    def _spec(self, branch: str, base: str, reason: str) -> jobspec.JobSpec:
        return jobspec.JobSpec(
            kind=jobspec.KIND_INDEX, repo=self.label, branch=branch, layer=jobspec.ALL,
            queue=self.queue, base_branch=base, path=str(self.root), reason=reason,
        )

    def plan(self, tally: Tally) -> list[jobspec.JobSpec]:
        """The jobs one flush asks for: the checked-out branch (layered on the previous one
        after a switch) and, after a burst or overflow, every indexed branch that moved."""
        previous_branch, previous_heads = self.branch, self.heads
        self.branch, self.heads = _git_state(self.root)
        if self.branch is None:
            return []  # detached HEAD: nothing to stamp a branch with
        switched = previous_branch not in (None, self.branch)
        base = previous_branch if switched and previous_branch else ""
        reconcile = tally.overflow or tally.events >= self.burst_events
        specs = [self._spec(self.branch, base, "watch: reconcile" if reconcile else "watch")]
        if reconcile:
            moved = {b for b in self.indexed if self.heads.get(b) != previous_heads.get(b)}
            specs += [self._spec(b, "", "watch: reconcile") for b in sorted(moved - {self.branch})
                      if b in self.heads]
        return specs

    def flush(self, now: float | None = None,
              immediate: bool = False) -> list[jobspec.EnqueueResult]:
        """Turn the events since the last flush into debounced jobs; drain what is due."""
        tally = self.tally.take()
        results: list[jobspec.EnqueueResult] = []
        if tally.events or tally.overflow or immediate:
            delay = 0.0 if immediate else self.debounce_seconds
            for spec in self.plan(tally):
                result = jobs.enqueue(self.client, spec, now=now, delay_seconds=delay,
                                      max_wait_seconds=self.max_wait_seconds)
                log.info("%s", describe_enqueue(spec, result, tally, delay))
                results.append(result)
                self.indexed.add(spec.branch)
            for result in results:
                if result.must_send:
                    self.send(result.kind, result.job_key, result.job_id, result.queue)
        sent = jobs.drain_due(self.client, self.send, now=now)
        if sent:
            log.info("watch: sent %d debounced job(s) to the workers", sent)
        return results

    def run(self, stop: threading.Event, flush_seconds: float = 0.25) -> None:
        """Watch until ``stop`` is set; the first flush indexes the checked-out branch now."""
        self.start()
        try:
            self.flush(immediate=True)
            outage = Outage(log, "watch: queueing")
            while not stop.wait(flush_seconds):
                try:
                    self.flush()
                except (redis.RedisError, OSError) as exc:
                    self.tally.note_overflow()  # events were taken but not queued: reconcile
                    stop.wait(outage.failed(exc, 1.0))
                    continue
                outage.ended()
        finally:
            self.stop()

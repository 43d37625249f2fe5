"""Job specs: what producers ask workers to do, and the rules of retries and time limits."""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from freshmark.core.errors import ConfigError

# Celery queues. Layers name their queue in the config; these are the built-in ones.
QUEUE_HOT = "hot"
QUEUE_INFRA = "infra"
QUEUE_ONDEMAND = "ondemand"
QUEUE_MAINTENANCE = "maintenance"
BUILTIN_QUEUES: tuple[str, ...] = (QUEUE_HOT, QUEUE_INFRA, QUEUE_ONDEMAND, QUEUE_MAINTENANCE)


def job_key(kind: str, repo: str, branch: str, layer: str) -> str:
    """The identity of a job: one pending job per (kind, repo, branch, layer)."""
    return f"{kind}:{repo}:{branch}:{layer}"


def working_copy_label(root: Path) -> str:
    """The job-key-safe repository name of a watched working copy (its jobs and locks): its
    directory name plus a digest of its resolved path."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", root.name).strip("-.")[:40] or "repo"
    return f"wc-{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


def parse_job_key(key: str) -> tuple[str, str, str, str]:
    """(kind, repo, branch, layer) of a job key; ValueError if it is not one."""
    parts = key.split(":")
    if len(parts) != 4 or not all(parts):
        raise ValueError(f"not a job key: {key!r}")
    return parts[0], parts[1], parts[2], parts[3]


KIND_INDEX = "index"
KIND_RETIRE = "retire"
KIND_RECONCILE = "reconcile"
KIND_RETIRE_IDLE = "retire_idle"
ALL = "*"  # all layers (or all repos/branches for repo-wide maintenance jobs)

WAITING, QUEUED, RUNNING = "waiting", "queued", "running"

Sender = Callable[[str, str, str, str], None]  # (kind, job_key, job_id, queue)


@dataclass(frozen=True)
class Timings:
    """Time limits in seconds, ordered so a dead worker's job comes back once, and soon.

    soft limit < hard limit < visibility timeout: a task is stopped before kombu hands its
    message to another worker. A running job holds a lock leased for ``lock_lease_seconds`` that
    its worker renews every ``heartbeat_seconds`` (a third of the lease, so renewals may stall
    for two thirds of it before it lapses): heartbeat < lease < visibility timeout. The lock of
    a live job never lapses, however long the job runs, so the time limits do not depend on it.
    When the holder dies the lease lapses and the scheduler's orphan sweep re-sends the job
    within about one lease, long before kombu would restore the dead run's message (then
    stale). A message a worker took but has not run yet is held on the same lease
    (``adapters.queue.holds``). A queued or running job older than ``stale_seconds`` is
    presumed lost and re-sent on the next request for it: the backstop for a job that holds no
    lock.
    """

    visibility_timeout_seconds: int = 3600
    restore_interval_seconds: int = 5
    lock_lease_seconds: int = 30

    def __post_init__(self) -> None:
        if not 0 < self.heartbeat_seconds < self.lock_lease_seconds \
                < self.visibility_timeout_seconds:
            raise ConfigError(
                f"the lock lease ({self.lock_lease_seconds} s, FRESHMARK_LOCK_LEASE_SECONDS) must "
                "be at least 1 s and shorter than the visibility timeout "
                f"({self.visibility_timeout_seconds} s, FRESHMARK_VISIBILITY_TIMEOUT_SECONDS)"
            )

    @property
    def soft_time_limit_seconds(self) -> float:
        return self.visibility_timeout_seconds * 0.80

    @property
    def time_limit_seconds(self) -> float:
        return self.visibility_timeout_seconds * 0.85

    @property
    def heartbeat_seconds(self) -> float:
        return self.lock_lease_seconds / 3

    @property
    def stale_seconds(self) -> int:
        return self.visibility_timeout_seconds + 2 * self.restore_interval_seconds

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Timings:
        env = dict(os.environ if env is None else env)
        return cls(
            visibility_timeout_seconds=int(env.get("FRESHMARK_VISIBILITY_TIMEOUT_SECONDS", 3600)),
            restore_interval_seconds=int(env.get("FRESHMARK_RESTORE_INTERVAL_SECONDS", 5)),
            lock_lease_seconds=int(env.get("FRESHMARK_LOCK_LEASE_SECONDS", 30)),
        )


@dataclass(frozen=True)
class JobSpec:
    """What a producer asks for. ``target`` is a hint only: jobs index the mirror's head."""

    kind: str
    repo: str
    branch: str = ALL
    layer: str = ALL
    queue: str = QUEUE_HOT
    target: str = ""
    base_branch: str = ""
    # "yes" when the requester named the base: it must then be indexed (no silent whole index).
    base_named: str = ""
    path: str = ""  # a local working copy (watch); empty means the repo's mirror
    reason: str = ""

    @property
    def key(self) -> str:
        return job_key(self.kind, self.repo, self.branch, self.layer)


@dataclass(frozen=True)
class Job:
    """A claimed job as read back from its hash."""

    key: str
    id: str
    spec: JobSpec
    attempts: int
    created_at: float
    fields: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_hash(cls, job_key: str, data: dict[str, str]) -> Job:
        spec = JobSpec(**{name: data.get(name, "") for name in JobSpec.__dataclass_fields__})
        return cls(
            key=job_key,
            id=data.get("id", ""),
            spec=spec,
            attempts=int(data.get("attempts", 0)),
            created_at=float(data.get("created_at", 0) or 0),
            fields=dict(data),
        )


@dataclass(frozen=True)
class EnqueueResult:
    outcome: str  # new | resend | waiting | coalesced
    job_key: str
    job_id: str
    kind: str
    queue: str

    @property
    def must_send(self) -> bool:
        return self.outcome in ("new", "resend")


@dataclass(frozen=True)
class Claim:
    outcome: str  # claimed | gone | stale | parked
    job: Job | None = None


@dataclass(frozen=True)
class Finish:
    outcome: str  # done | requeue | retry | parked (a permanent failure) | stale
    job_id: str = ""
    kind: str = ""
    queue: str = ""


# Why an attempt failed, kept on the job's hash (``failed_on``): an outage (a ``RetryableError``:
# the store, the broker or the git host was down) or the run's own error (anything else).
FAILED_ON_OUTAGE, FAILED_ON_ERROR = "outage", "error"
# The run's own error, the same this many attempts in a row, is permanent: retrying the same
# commit only repeats it (a file that breaks the run, a bug).
RECURRING_ERROR_ATTEMPTS = 3


def error_repeats(job: Job, error: str) -> int:
    """Attempts in a row, this one included, that ended in the run's own ``error``."""
    fields = job.fields
    same = fields.get("failed_on") == FAILED_ON_ERROR and fields.get("last_error") == error
    return int(fields.get("error_repeats") or 0) + 1 if same else 1


def parked_at(parked: dict[str, str], head: str | None) -> bool:
    """True when a parked job (its last hash) stopped on its own error, at ``head`` if given:
    sending it again at that commit would fail again. A job parked on an outage may go again;
    one that never got to note its head is judged by its request's target."""
    if parked.get("failed_on") == FAILED_ON_OUTAGE:
        return False
    return head is None or (parked.get("head") or parked.get("target")) == head


RETRY_WINDOW_SECONDS = 60.0
RETRY_JITTER = 0.25


def retry_delay_seconds(
    attempt: int,
    max_attempts: int,
    *,
    window_seconds: float = RETRY_WINDOW_SECONDS,
    cap_seconds: float = 300.0,
    jitter: float | None = None,
) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based) of ``max_attempts``.

    Doubling from a base chosen so that the waits before the last attempt add up to at least
    ``window_seconds`` (a Chroma, Redis or git host restart fits inside; the base is 1 s at
    least), each wait capped at ``cap_seconds``. Jitter only lengthens a wait (up to
    ``RETRY_JITTER``), so the window is a floor; ``jitter`` in [0, 1) is drawn unless given.
    """
    gaps = max(max_attempts - 1, 1)
    base = max(1.0, window_seconds / (2**gaps - 1))
    ceiling = min(cap_seconds, base * 2 ** max(attempt - 1, 0))
    draw = random.random() if jitter is None else jitter
    return ceiling * (1 + RETRY_JITTER * draw)

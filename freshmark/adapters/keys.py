"""Every Redis key freshmark uses, in one place (the queue, the fan-out, locks, freshness rows).

Repo ids and layer names match ``[A-Za-z0-9][A-Za-z0-9_.-]*`` and git forbids ``:`` in branch
names, so ``:`` separates the parts of a key unambiguously. Celery's own queue lists live in the
same database under the bare queue names below.
"""

from __future__ import annotations

from collections.abc import Iterable

PREFIX = "freshmark:"

# kombu's Redis transport keeps one list per queue and priority step; step 0 is the bare name.
KOMBU_PRIORITY_SEP = "\x06\x16"
KOMBU_PRIORITY_STEPS: tuple[int, ...] = (0, 3, 6, 9)

# Jobs: a hash per pending/running job, a sorted set of debounce due times (score: unix seconds),
# a sorted set of running job keys (score: start time) and one of queued job keys whose message a
# worker holds (score: when it took it), both walked by the orphan sweep, a hash of parked
# (poison) jobs and a capped list of recent permanent failures.
JOB_PREFIX = PREFIX + "job:"
DUE = PREFIX + "due"
RUNNING = PREFIX + "running"
HELD = PREFIX + "held"
PARKED = PREFIX + "parked"
FAILED = PREFIX + "failed"
FAILED_KEEP = 200

# Execution locks (short leases a running job renews): one per (repo, branch) for whole-branch
# jobs (every layer, retirement), one per (repo, branch, layer) for a layer's runs (free only
# while the branch's own is), one per job key for repo-wide maintenance jobs. The stamp lock is
# held for moments: while a run merges its layers' stamps into the branch's manifest. A
# whole-branch job (or a drop) waiting for the branch's lock sets the branch's "wants" mark, a
# short lease no new layer run starts under (writer preference); it lapses by itself.
BRANCH_LOCK_PREFIX = PREFIX + "lock:branch:"
BRANCH_WANTS_PREFIX = PREFIX + "lock:wants:"
LAYER_LOCK_PREFIX = PREFIX + "lock:layer:"
STAMP_LOCK_PREFIX = PREFIX + "lock:stamp:"
JOB_LOCK_PREFIX = PREFIX + "lock:job:"
# The lease of the worker holding a queued job's message (``adapters.queue.holds``), per job key.
HOLD_PREFIX = PREFIX + "lease:hold:"

# A split index run in flight (``adapters.queue.fanout``): one hash per (repo, branch) for a
# whole-branch run, per (repo, branch, layer) for a layer's run (``fanout_scope``), holding the
# run's batch claims and results. Job hash fields showing its progress while it runs.
FANOUT_PREFIX = PREFIX + "fanout:"
JOB_BATCHES_TOTAL = "batches_total"
JOB_BATCHES_DONE = "batches_done"

# Webhook delivery ids already seen, per provider and repo (SET NX with a TTL): ids are only
# unique per hook, so two repos (or two hosts of one provider) may send the same one.
DELIVERY_PREFIX = PREFIX + "delivery:"
DELIVERY_TTL_SECONDS = 3 * 86400

# The one running scheduler holds this lock; last run times of schedule entries (hash).
SCHEDULER_LOCK = PREFIX + "scheduler:lock"
SCHEDULE_LAST_RUN = PREFIX + "schedule:last_run"
# layer name -> the interval (seconds) ``audit --by-dir`` advised; the hash expires
LAYER_ADVICE = PREFIX + "schedule:layer_advice"

# Last time a branch was requested or indexed (hash ``repo:branch`` -> unix seconds).
BRANCH_ACTIVITY = PREFIX + "branch:activity"


def job(job_key: str) -> str:
    return JOB_PREFIX + job_key


def branch_lock(repo: str, branch: str) -> str:
    return f"{BRANCH_LOCK_PREFIX}{repo}:{branch}"


def layer_lock(repo: str, branch: str, layer: str) -> str:
    return f"{LAYER_LOCK_PREFIX}{repo}:{branch}:{layer}"


def branch_wants(repo: str, branch: str) -> str:
    return f"{BRANCH_WANTS_PREFIX}{repo}:{branch}"


def layer_locks(repo: str, branch: str, layers: Iterable[str]) -> list[str]:
    """Every layer's lock of a branch: what a whole-branch job (or a drop) waits to be free."""
    return [layer_lock(repo, branch, layer) for layer in layers]


def stamp_lock(repo: str, branch: str) -> str:
    return f"{STAMP_LOCK_PREFIX}{repo}:{branch}"


def job_lock(job_key: str) -> str:
    return JOB_LOCK_PREFIX + job_key


def hold(job_key: str) -> str:
    return HOLD_PREFIX + job_key


def fanout_scope(branch: str, layer: str) -> str:
    """What one split run's record is kept under: its branch, and its layer unless it is
    ``*`` (every layer: a whole-branch run)."""
    return branch if layer == "*" else f"{branch}:{layer}"


def fanout(repo: str, branch: str) -> str:
    return f"{FANOUT_PREFIX}{repo}:{branch}"


def delivery(provider: str, repo: str, delivery_id: str) -> str:
    return f"{DELIVERY_PREFIX}{provider}:{repo}:{delivery_id}"


def branch_activity_field(repo: str, branch: str) -> str:
    return f"{repo}:{branch}"


def kombu_queue_lists(queue: str) -> tuple[str, ...]:
    """The Redis lists kombu uses for one queue (one per priority step)."""
    return tuple(
        queue if step == 0 else f"{queue}{KOMBU_PRIORITY_SEP}{step}"
        for step in KOMBU_PRIORITY_STEPS
    )


# ---- freshness telemetry (adapters.telemetry, services.upkeep.audit) ---------------------
# The auditor's latest rows: a hash, field ``repo:branch`` -> JSON list of that branch's
# per-layer rows. A full audit replaces the whole hash, so retired branches drop out.
FRESHNESS_LATEST = PREFIX + "freshness:latest"


def freshness_field(repo: str, branch: str) -> str:
    return f"{repo}:{branch}"

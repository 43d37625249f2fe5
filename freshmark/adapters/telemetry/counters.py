"""Prometheus event counters: written by any process, a leaf every floor may import."""

from __future__ import annotations

from prometheus_client import (
    Counter,
    Histogram,
)

# Job durations run from a no-op (well under a second) to a full re-index of a large repo.
_JOB_DURATION_BUCKETS_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

JOBS_TOTAL = Counter(
    "freshmark_jobs_total",
    "Index jobs finished, by queue and outcome (success, noop, retry, failed, parked).",
    ["queue", "outcome"],
)
JOB_DURATION_SECONDS = Histogram(
    "freshmark_job_duration_seconds",
    "Wall time of one index job, from start of execution to its end, in seconds.",
    ["queue"],
    buckets=_JOB_DURATION_BUCKETS_SECONDS,
)
JOBS_COALESCED_TOTAL = Counter(
    "freshmark_jobs_coalesced_total",
    "Enqueue requests folded into an already pending job for the same repo, branch and layer.",
)
JOBS_PARKED_TOTAL = Counter(
    "freshmark_jobs_parked_total",
    "Jobs parked (attempts exhausted, or a permanent or recurring error); each needs an "
    "operator.",
)
WEBHOOK_DELIVERIES_TOTAL = Counter(
    "freshmark_webhook_deliveries_total",
    "Webhook deliveries received, by provider and result (accepted, duplicate, rejected, ...).",
    ["provider", "result"],
)
VERIFICATION_VERDICTS_TOTAL = Counter(
    "freshmark_verification_verdicts_total",
    "Verdicts given when verifying retrieved chunks at use time (current, changed, ...).",
    ["verdict"],
)

# A batch of a split index run: seconds to minutes (256 files of MiniLM embedding).
_BATCH_DURATION_BUCKETS_SECONDS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

INDEX_BATCHES_TOTAL = Counter(
    "freshmark_index_batches_total",
    "Batches of split (scaled-out) index runs written, by queue and runner (the coordinating "
    "job's process, or a helper that took the batch's message).",
    ["queue", "runner"],
)
INDEX_BATCH_DURATION_SECONDS = Histogram(
    "freshmark_index_batch_duration_seconds",
    "Wall time of one batch of a split index run (read, chunk, embed, write), in seconds.",
    ["queue"],
    buckets=_BATCH_DURATION_BUCKETS_SECONDS,
)

GIT_STALE_LOCKS_REMOVED_TOTAL = Counter(
    "freshmark_git_stale_locks_removed_total",
    "Git lock files (HEAD.lock, packed-refs.lock, refs/...lock) a killed process left in a "
    "mirror, removed by the next process holding the mirror's lock.",
)
FILES_SKIPPED_TOTAL = Counter(
    "freshmark_files_skipped_total",
    "Files an index run skipped on their own account (decode, hash, pattern, parse), by reason.",
    ["reason"],
)
CHUNKS_CAPPED_TOTAL = Counter(
    "freshmark_files_chunk_capped_total",
    "Files whose chunks exceeded the per-file cap and were indexed as fixed line windows.",
)
EMBEDDING_CACHE_WRITE_FAILURES_TOTAL = Counter(
    "freshmark_embedding_cache_write_failures_total",
    "Writes to the embedding cache that failed (a full disk); the run went on without them.",
)
LEXICAL_FIRST_RUNS_TOTAL = Counter(
    "freshmark_lexical_first_runs_total",
    "First index runs of a collection by how the host's lexical index got their chunks: "
    "written as the run wrote them (written), or read back from the store after it (caught_up).",
    ["outcome"],
)

EVENT_METRICS: tuple[Counter | Histogram, ...] = (
    JOBS_TOTAL,
    JOB_DURATION_SECONDS,
    INDEX_BATCHES_TOTAL,
    INDEX_BATCH_DURATION_SECONDS,
    JOBS_COALESCED_TOTAL,
    JOBS_PARKED_TOTAL,
    WEBHOOK_DELIVERIES_TOTAL,
    VERIFICATION_VERDICTS_TOTAL,
    GIT_STALE_LOCKS_REMOVED_TOTAL,
    FILES_SKIPPED_TOTAL,
    CHUNKS_CAPPED_TOTAL,
    EMBEDDING_CACHE_WRITE_FAILURES_TOTAL,
    LEXICAL_FIRST_RUNS_TOTAL,
)

"""Progress of an index run: what the indexer reports, and the words a person reads.

The indexer reports ``IndexProgress`` events (pure data); ``describe`` turns one into a line
with a rate and an estimate, given the seconds since the layer started. Where the line goes
(rewritten in place on a terminal, one line per phase otherwise) is decided at the CLI edge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

START, WORKING, DONE = "start", "working", "done"


@dataclass(frozen=True)
class IndexProgress:
    """One layer's progress. ``files_done`` is estimated inside a batch of files from the
    share of its chunks embedded so far; ``files_written`` counts only the files of batches
    written to the store; ``chunks_embedded`` counts this run's new vectors (cache hits and
    copied vectors are not embedded, so they do not count)."""

    layer: str
    phase: str  # START | WORKING | DONE
    files_done: int
    files_total: int
    chunks_embedded: int
    files_written: int = 0  # files whose batch is written to the store: the estimate's basis


Progress = Callable[[IndexProgress], None]


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def describe(event: IndexProgress, elapsed_seconds: float, embedded_at_start: int = 0,
             written_at_seconds: float | None = None) -> str:
    """One line: files, chunks embedded with their rate, and (while working) time left.

    ``embedded_at_start`` is ``chunks_embedded`` when the layer started, so the rate is this
    layer's. The estimate assumes the remaining files go at the pace of the files written so
    far: a batch's store write can take longer than its embedding, so files only embedded
    would promise a fraction of the time really left. Until a first batch is written there is
    no estimate. ``written_at_seconds``: when the files written so far were (the pace is
    theirs, less the time spent since on the batch under way, so the estimate keeps falling
    through a batch of 256 files rather than growing with the time).
    """
    files = f"{event.files_done}/{event.files_total} files"
    embedded = event.chunks_embedded - embedded_at_start
    rate = embedded / elapsed_seconds if elapsed_seconds > 0 else 0.0
    chunks = f"{embedded} chunks embedded ({rate:.1f}/s)"
    if event.phase == START:
        return f"layer {event.layer}: {event.files_total} changed files to index"
    if event.phase == DONE:
        return f"layer {event.layer}: done, {files}, {chunks} in {duration(elapsed_seconds)}"
    left = ""
    written = event.files_written
    if 0 < written < event.files_total and elapsed_seconds > 0:
        paced = elapsed_seconds if written_at_seconds is None else written_at_seconds
        per_file = paced / written
        since = elapsed_seconds - paced
        remaining = max(per_file * (event.files_total - written) - since,
                        per_file * (event.files_total - max(event.files_done, written)))
        left = f", about {duration(remaining)} left"
    return f"layer {event.layer}: {files}, {chunks}{left}"

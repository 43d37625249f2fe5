"""How many onnxruntime threads an embedder gets: the cores this process really has.

``os.cpu_count()`` reports the host's cores, not a container's quota or this process's affinity,
and prefork worker children share what there is. Oversubscribed intra-op threads only add
context switches, so the count is the smallest of: the cgroup v2 quota (``cpu.max``), the
affinity mask, and that divided by the worker concurrency. ``FRESHMARK_EMBED_THREADS`` (in
``Settings.embed_threads``) overrides it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def parse_cpu_max(text: str) -> float | None:
    """Cores allowed by a cgroup v2 ``cpu.max`` line (``"<quota_us> <period_us>"``); None for
    ``max`` (no quota) or an unreadable line."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota_us, period_us = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def choose_threads(affinity_cores: int, quota_cores: float | None, processes: int) -> int:
    """Threads for one of ``processes`` embedding processes sharing the given cores (>= 1)."""
    cores = affinity_cores if quota_cores is None else min(affinity_cores, quota_cores)
    # A fractional quota (1.5 cores) still lets one thread run; rounding up would oversubscribe.
    return max(1, math.floor(cores / max(1, processes)))


def _affinity_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _quota_cores(cpu_max: Path = CGROUP_CPU_MAX) -> float | None:
    try:
        return parse_cpu_max(cpu_max.read_text(encoding="ascii"))
    except OSError:
        return None


def available_threads(processes: int = 1) -> int:
    """Threads for this process when ``processes`` embedding processes share its cores."""
    return choose_threads(_affinity_cores(), _quota_cores(), processes)

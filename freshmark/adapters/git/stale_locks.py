"""Git lock files a killed process left in a mirror, removed by the next one that owns it.

git and libgit2 take a ref, ``HEAD``, ``config`` or ``packed-refs`` for writing by creating
``<file>.lock`` with ``O_EXCL`` and renaming it over the file when done; a process killed in
between leaves the ``.lock`` behind and every later write fails with "failed to lock file".
Age says nothing about who holds such a file, so this is only ever called by a process that
holds the mirror's own ``flock`` (``mirrors._locked``), which every freshmark write to a mirror
takes: while it is held no live process writes there, so any git lock file found is a dead
process's. The kernel drops a ``flock`` with its holder, so that lock cannot itself go stale.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from freshmark.adapters.telemetry import counters

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
# Directories below a git directory where git keeps lockable files (refs and their reflogs).
_LOCKABLE_TREES = ("refs", "logs")


def _git_lock_files(git_dir: Path) -> list[Path]:
    found = [p for p in git_dir.glob("*" + LOCK_SUFFIX) if p.is_file()]
    for tree in _LOCKABLE_TREES:
        found.extend(p for p in (git_dir / tree).rglob("*" + LOCK_SUFFIX) if p.is_file())
    return sorted(found)


def remove_stale_git_locks(git_dir: Path) -> list[Path]:
    """Remove every git lock file of ``git_dir``; the caller holds its writers' ``flock``.

    Returns what was removed; each removal is logged and counted."""
    if not git_dir.is_dir():
        return []
    removed: list[Path] = []
    for lock_file in _git_lock_files(git_dir):
        try:
            lock_file.unlink()
        except FileNotFoundError:
            continue
        removed.append(lock_file)
        counters.GIT_STALE_LOCKS_REMOVED_TOTAL.inc()
        log.warning("removed stale git lock %s (left by a killed process)", lock_file)
    return removed


def remove_abandoned_clones(mirror: Path) -> list[Path]:
    """Staging directories of clones whose process died before the rename into place
    (``.<name>.<random>`` beside the mirror); the caller holds the mirror's ``flock``."""
    removed = []
    for staging in mirror.parent.glob(f".{mirror.name}.*"):
        if staging.is_dir():
            shutil.rmtree(staging, ignore_errors=True)
            removed.append(staging)
            log.warning("removed abandoned clone directory %s", staging)
    return removed

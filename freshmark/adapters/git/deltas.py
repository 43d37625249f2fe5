"""libgit2 diff deltas as freshmark's ``FileChange`` (the planner's input), and exact renames
paired by blob id when libgit2's similarity search did not run."""

from __future__ import annotations

import logging

import pygit2
from pygit2.enums import DeltaStatus

from freshmark.core.tree import EMPTY_BLOB_SHA, MODE_SUBMODULE, MODE_TREE, FileChange

log = logging.getLogger(__name__)
# Diffs whose rename detection was skipped, said once per process: a search on a damaged
# clone works out the same diff for every query.
_SKIPPED: set[tuple[str, str, str]] = set()


def similarity_skipped(where: str, old: str, new: str, exc: Exception) -> None:
    """Warn, once per diff, that an object rename detection reads is missing (libgit2 names
    only the object, ``'4a48cb…'``: say what that means)."""
    if (where, old, new) not in _SKIPPED:
        _SKIPPED.add((where, old, new))
        log.warning("rename detection skipped for %s..%s: an object it reads is missing or "
                    "unreadable in the clone (%s); only unedited moves are renames there, "
                    "others a delete and an add", old[:12], new[:12], exc)


def is_file_mode(mode: int) -> bool:
    return mode not in (0, MODE_TREE, MODE_SUBMODULE)  # 0: the side does not exist


def change_from_delta(delta: pygit2.DiffDelta) -> list[FileChange]:
    """Map one libgit2 delta to FileChanges; submodule (gitlink) sides count as absent."""
    old, new = delta.old_file, delta.new_file
    has_old, has_new = is_file_mode(old.mode), is_file_mode(new.mode)
    added = FileChange("added", None, new.path, None, str(new.id), new_mode=new.mode)
    deleted = FileChange("deleted", old.path, None, str(old.id), None)
    if delta.status == DeltaStatus.RENAMED:
        if str(old.id) == EMPTY_BLOB_SHA:
            # Empty files carry no content to follow; pairing two unrelated ones is noise.
            return [deleted, added]
        return [FileChange("renamed", old.path, new.path, str(old.id), str(new.id),
                           similarity=delta.similarity, new_mode=new.mode)]
    if has_old and has_new:
        return [FileChange("modified", old.path, new.path, str(old.id), str(new.id),
                           new_mode=new.mode)]
    return ([deleted] if has_old else []) + ([added] if has_new else [])


def changes_of(raw: pygit2.Diff) -> list[FileChange]:
    return [change for delta in raw.deltas for change in change_from_delta(delta)]


def pair_exact_renames(changes: list[FileChange]) -> list[FileChange]:
    """Turn a deleted + added pair with identical non-empty content into a 100% rename."""
    deleted = {
        c.old_blob: c for c in changes if c.status == "deleted" and c.old_blob != EMPTY_BLOB_SHA
    }
    paired: list[FileChange] = []
    used: set[str] = set()
    for change in changes:
        source = deleted.get(change.new_blob) if change.status == "added" else None
        if source is not None and source.old_path not in used and source.old_path is not None:
            used.add(source.old_path)
            paired.append(FileChange("renamed", source.old_path, change.new_path,
                                     source.old_blob, change.new_blob, similarity=100,
                                     new_mode=change.new_mode))
        else:
            paired.append(change)
    return [c for c in paired if not (c.status == "deleted" and c.old_path in used)]

"""A listed file (seed 000 §4.8: a path and the sha256 prefix of the whole file) checked at
the verifier's target: ``current`` or ``changed`` by the prefix, judged at its new path when
it moved, ``historical`` when the branch had it, ``unverifiable`` when it never did."""

from __future__ import annotations

from freshmark.core.tree import safe_relpath
from freshmark.core.verdicts import Verdict, Verification, hash_verdict, short
from freshmark.services.verifier import Verifier

# How far back ``verify`` looks for a path that is absent today before calling it unknown.
HISTORY_SEARCH_COMMITS = 20_000


def verify_file_hash(verifier: Verifier, path: str, hash_prefix: str | None) -> Verification:
    """No prefix -> ``unverifiable``; prefix matches -> ``current``; otherwise ``changed``. A
    file absent at the target that moved is judged at its new path (``older_identical`` or
    ``changed``, with ``moved_to``), else it is ``historical``. Raises UnsafePath for paths
    leaving the repository."""
    safe_relpath(path)
    if not hash_prefix:
        return Verification(Verdict.UNVERIFIABLE, "no version metadata: no hash recorded")
    data = verifier.current_bytes(path)
    if data is None:
        return _absent_path(verifier, path, hash_prefix)
    return hash_verdict(data, hash_prefix)


def _absent_path(verifier: Verifier, path: str, hash_prefix: str) -> Verification:
    """A listed file absent at the target: moved when the diff from the newest commit that
    had it shows where it went, historical if the branch ever had it."""
    target = verifier.target
    if target.worktree:  # an uncommitted ``git mv``, as a search over the work tree follows
        moved_to = verifier.worktree_move(path)
        data = verifier.current_bytes(moved_to) if moved_to else None
        if moved_to and data is not None:
            return hash_verdict(data, hash_prefix, f"moved from {path} to {moved_to} in the "
                                "work tree (uncommitted)", moved_to)
    verifier.git_reads += 1
    last = verifier.repo.newest_commit_with(target.head, path, HISTORY_SEARCH_COMMITS)
    if last:
        moved = _listed_file_moved(verifier, path, hash_prefix, last)
        return moved or Verification(Verdict.HISTORICAL,
                                     f"file no longer exists at {target.label}")
    searched = "its history" if last is False else f"the last {HISTORY_SEARCH_COMMITS} commits"
    return Verification(Verdict.UNVERIFIABLE,
                        f"unknown path: not in {target.label} nor in {searched} of "
                        f"{target.branch}; check the path")


def _listed_file_moved(verifier: Verifier, path: str, hash_prefix: str,
                       commit: str) -> Verification | None:
    """Where ``path``, last seen at ``commit``, is now, judged by the listed hash against the
    file at its new path."""
    blob_sha = verifier.repo.blob_at(commit, path)
    move = verifier.file_move(commit, path, blob_sha) if blob_sha else None
    data = verifier.current_bytes(move.new_path) if move is not None else None
    if move is None or data is None:
        return None
    moved = f"moved from {path} to {move.new_path} since {short(commit)}"
    return hash_verdict(data, hash_prefix, moved, move.new_path)

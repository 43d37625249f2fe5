"""Dependency drift for verified results (``core.drift``): the git reads it needs.

For each ``older_identical`` result: the paths changed between its stamp's commit and the head
(one tree diff per stamp commit, shared by the request's results), those its imports name,
and in each the definitions it uses, compared at the two commits (``definition_texts``: the
chunker's own symbol names, a class by its own lines). A file absent at the head is followed
where it moved (``services.moves``, the verifier's ``file_move`` with its bounds) and compared
there: a class moved by ``git mv`` is no drift of the code using it, an edit after the move
is. Files over ``MAX_DEPENDENCY_BYTES`` are not read. Worktree targets are checked against
their head commit: uncommitted edits are the worktree verdicts' business, not drift's.

A file's definitions are parsed once per blob in a process (``BLOB_DEFINITIONS``, a bounded LRU
keyed by blob id and path): a blob's text never changes, and a server answering searches
between index runs meets the same few files' blobs in request after request. Parsing them
again was most of a search's CPU. The paths changed between a stamp commit and the head are
kept the same way (``CHANGED_PATHS``, keyed by the two commit ids): every search between two
runs asks for the same pair, and the tree diff grows with the tree (34 ms on a 40k-file tree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.chunking import file_symbols
from freshmark.core.classify import decode_text
from freshmark.core.drift import (
    DriftNote,
    check_line_suffix,
    definition_texts,
    imported_paths,
    notes_for_file,
)
from freshmark.core.errors import PermanentError
from freshmark.core.lru import LruCache
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tree import package_key
from freshmark.core.verdicts import Verdict
from freshmark.services.moves import Move
from freshmark.services.retrieval.results import VerifiedResult

MAX_DEPENDENCY_BYTES = 512 * 1024
MAX_COMMITS_SEARCHED = 200
DEFINITIONS_CACHED = 256  # files' definitions kept per process (about a file's text each)
CHANGED_PATHS_CACHED = 8  # (stamp commit, head) pairs: a branch's runs, heads of a few branches

Definitions = dict[str, str]
# Where a path (its blob at a commit) went by the head: (commit, path, blob) -> its move or None.
FollowMove = Callable[[str, str, str], Move | None]


# Symbol -> its lines, per (blob id, path), shared by a process's request threads.
BLOB_DEFINITIONS: LruCache[tuple[str, str], Definitions] = LruCache(DEFINITIONS_CACHED)
# Paths changed between two commits (commit ids name their trees, whatever the repository).
CHANGED_PATHS: LruCache[tuple[str, str], frozenset[str]] = LruCache(CHANGED_PATHS_CACHED)


class DriftReader:
    """Reads what drift needs from one repository against one head, caching per request."""

    def __init__(self, repo: GitRepo, head: str, file_move: FollowMove):
        self.repo, self.head, self.file_move = repo, head, file_move
        self._changed: dict[str, frozenset[str]] = {}
        self._definitions: dict[tuple[str, str], dict[str, str] | None] = {}
        self._last_commit: dict[tuple[str, str], str | None] = {}

    def notes(self, record: ChunkRecord) -> list[DriftNote]:
        if record.commit == self.head or not record.references or \
                not record.imports and package_key(record.path) is None:  # Go: its package
            return []
        try:
            changed = self._changed_since(record.commit)
            notes: list[DriftNote] = []
            for path in imported_paths(record, sorted(changed)):
                old = self._defined(record.commit, path)
                now_at = self._path_at_head(record.commit, path) if old else path
                new = self._defined(self.head, now_at)
                found = notes_for_file(record, now_at, old, new, None)
                if found:
                    commit = self._touched(now_at, record.commit)
                    notes.extend(replace(note, commit=commit) for note in found)
            return notes
        except PermanentError:  # a stamp commit gone from the clone: nothing to compare
            return []

    def _changed_since(self, commit: str) -> frozenset[str]:
        if commit not in self._changed:
            pair = (commit, self.head)
            changed = CHANGED_PATHS.get(pair)
            if changed is None:
                changed = CHANGED_PATHS.put(
                    pair, frozenset(self.repo.paths_changed_between(commit, self.head)))
            self._changed[commit] = changed
        return self._changed[commit]

    def _path_at_head(self, commit: str, path: str) -> str:
        """Where ``path`` is at the head: itself, or where it moved since ``commit`` (javapoet's
        ArrayTypeName.java into types/ read as every definition of it vanished)."""
        if self._defined(self.head, path) is not None:
            return path
        blob = self.repo.blob_at(commit, path)
        move = self.file_move(commit, path, blob) if blob is not None else None
        return move.new_path if move is not None else path

    def _defined(self, commit: str, path: str) -> dict[str, str] | None:
        """Symbol -> its lines in ``path`` at ``commit``; None when the file is not there."""
        key = (commit, path)
        if key not in self._definitions:
            self._definitions[key] = self._read_definitions(commit, path)
        return self._definitions[key]

    def _read_definitions(self, commit: str, path: str) -> dict[str, str] | None:
        blob = self.repo.blob_at(commit, path)
        if blob is None:
            return None
        cached = BLOB_DEFINITIONS.get((blob, path))
        if cached is None:
            cached = self._parse_definitions(blob, path)
            BLOB_DEFINITIONS.put((blob, path), cached)
        return cached

    def _parse_definitions(self, blob: str, path: str) -> Definitions:
        if self.repo.blob_size(blob) > MAX_DEPENDENCY_BYTES:
            return {}
        text = decode_text(self.repo.read_blob(blob))
        if text is None:  # binary: defines nothing a chunk could reference
            return {}
        return definition_texts(file_symbols(path, text))

    def _touched(self, path: str, since: str) -> str | None:
        key = (path, since)
        if key not in self._last_commit:
            self._last_commit[key] = next(self.repo.commits_touching(
                path, since, self.head, MAX_COMMITS_SEARCHED), None)
        return self._last_commit[key]


def attach_drift(repo: GitRepo, head: str, results: list[VerifiedResult],
                 file_move: FollowMove) -> None:
    """Give every ``older_identical`` result the drift of its dependencies (list and check
    line); other verdicts already say their file changed, or that it is the head's.
    ``file_move`` follows a dependency's absent path (``Verifier.file_move``)."""
    reader = DriftReader(repo, head, file_move)
    for result in results:
        if result.verification.verdict is not Verdict.OLDER_IDENTICAL:
            continue
        notes = reader.notes(result.record)
        if notes:
            result.drift = notes
            result.citation = replace(result.citation,
                                      third=result.citation.third + check_line_suffix(notes))

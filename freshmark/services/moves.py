"""Where a file absent at the head went (SPEC §10: location is verified too).

A result whose path is gone at the head may be true code in a new place: ``git mv`` keeps the
blob, a move with edits keeps most lines, a split moves a symbol into another file. Only the
diff from the stamp's commit to the head is looked at, and only when a path is absent:

1. the diff's trees are compared without reading any blob; the path must be deleted there;
2. an added file with the indexed blob is a pure move (no blob read);
3. otherwise the added files of the same extension, at most ``max_file_bytes`` each and at
   most ``MOVE_CANDIDATES`` of them (same file name first, then the longest shared directory
   prefix), are read: the most similar one keeping ``RENAME_SHARE`` of the lines is the move;
4. the symbol is then looked for in that file and, when it is not there, in the added and
   modified files of the same extension that name it (same bounds); the verifier takes such
   a definition only when it keeps at least half of the indexed lines.

Rename detection is written here rather than taken from libgit2's ``find_similar``: through
pygit2 that cannot be limited to one deleted path or to small files, so on a large diff it
would read every added and deleted blob to answer for one result. Diffs and reads are cached
for the life of the finder (one request).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.classify import decode_text
from freshmark.core.locate import line_similarity
from freshmark.core.tree import FileChange

# How many files of a diff are read, at most, to follow one absent path.
MOVE_CANDIDATES = 50
# A file keeping at least this share of the indexed file's lines is its new place (git's 50 %).
RENAME_SHARE = 0.5


@dataclass(frozen=True)
class Move:
    """The new place of an absent path: ``similarity`` is the share of lines in common."""

    new_path: str
    new_blob: str
    similarity: float

    @property
    def pure(self) -> bool:
        return self.similarity >= 1.0


@dataclass
class _Diff:
    deleted: dict[str, str]  # old path -> blob
    added: list[FileChange]
    modified: list[FileChange]


def _extension(path: str) -> str:
    return posixpath.splitext(path)[1].lower()


def _closeness(path: str, candidate: str) -> tuple[bool, int]:
    """Same file name first, then the longest common directory prefix."""
    shared = posixpath.commonpath([posixpath.dirname(path) or ".",
                                   posixpath.dirname(candidate) or "."])
    return (posixpath.basename(path) == posixpath.basename(candidate), len(shared))


class MoveFinder:
    """Follows absent paths from a stamp's commit to ``head``; ``reads`` counts git reads."""

    def __init__(self, repo: GitRepo, head: str, max_file_bytes: int):
        self.repo = repo
        self.head = head
        self.max_file_bytes = max_file_bytes
        self.reads = 0
        self._diffs: dict[str, _Diff] = {}
        self._texts: dict[str, str | None] = {}

    def text(self, blob_sha: str) -> str | None:
        """A blob as text (None for binary), read once."""
        if blob_sha not in self._texts:
            self.reads += 1
            self._texts[blob_sha] = decode_text(self.repo.read_blob(blob_sha))
        return self._texts[blob_sha]

    def _diff(self, commit: str) -> _Diff:
        if commit not in self._diffs:
            self.reads += 1
            changes = self.repo.diff(commit, self.head, find_renames=False)
            self._diffs[commit] = _Diff(
                {c.old_path: c.old_blob for c in changes
                 if c.status == "deleted" and c.old_path and c.old_blob},
                [c for c in changes if c.status == "added" and c.new_path and c.new_blob],
                [c for c in changes if c.status == "modified" and c.new_path and c.new_blob])
        return self._diffs[commit]

    def _candidates(self, path: str, changes: list[FileChange],
                    sized: bool = True) -> list[FileChange]:
        """The closest ``changes`` of ``path``'s extension, their blobs within the size bound
        when ``sized`` (a work-tree file's blob is not in the object store: its reader
        bounds it)."""
        same_kind = [c for c in changes if _extension(c.new_path or "") == _extension(path)]
        same_kind.sort(key=lambda c: _closeness(path, c.new_path or ""), reverse=True)
        small: list[FileChange] = []
        for change in same_kind:
            if len(small) == MOVE_CANDIDATES:
                break
            if not sized or self._within_bound(change.new_blob or ""):
                small.append(change)
        return small

    def _within_bound(self, blob_sha: str) -> bool:
        """``blob_sha`` is no larger than ``max_file_bytes`` (its size read, not its text)."""
        self.reads += 1
        return not self.max_file_bytes or self.repo.blob_size(blob_sha) <= self.max_file_bytes

    def file_move(self, commit: str, path: str, blob_sha: str) -> Move | None:
        """Where ``path`` (``blob_sha`` at ``commit``) is at the head, when it was moved."""
        diff = self._diff(commit)
        if path not in diff.deleted:
            return None
        exact = [c for c in diff.added if c.new_blob == blob_sha]
        if exact:
            best = max(exact, key=lambda c: _closeness(path, c.new_path or ""))
            return Move(best.new_path or "", blob_sha, 1.0)
        return self._most_similar(path, blob_sha, self._candidates(path, diff.added),
                                  lambda change: self.text(change.new_blob or ""), diff.deleted)

    def worktree_move(self, path: str, blob_sha: str, changes: list[FileChange],
                      read_text: Callable[[str], str | None]) -> Move | None:
        """Where an uncommitted move with edits took ``path`` (``blob_sha`` when indexed): the
        file the work tree adds (``changes``) keeping most of its lines, ``read_text`` reading
        it from disk (a move without edits is a rename of the work tree's own)."""
        added = [c for c in changes if c.status == "added" and c.new_path]
        deleted = {c.old_path: c.old_blob for c in changes
                   if c.status == "deleted" and c.old_path and c.old_blob}
        return self._most_similar(path, blob_sha, self._candidates(path, added, sized=False),
                                  lambda change: read_text(change.new_path or ""), deleted)

    def _most_similar(self, path: str, blob_sha: str, candidates: list[FileChange],
                      read: Callable[[FileChange], str | None],
                      deleted: dict[str, str]) -> Move | None:
        """The candidate keeping ``RENAME_SHARE`` of ``blob_sha``'s lines or more, the most,
        that is no other ``deleted`` file's move: git pairs an added file with one source
        (monolog's deleted LoadAverageProcessor.php shares its licence header and braces with
        UniqueIdProcessor.php, UidProcessor.php's new name)."""
        old_text = self.text(blob_sha)
        if old_text is None:
            return None
        moves: list[tuple[float, FileChange, str]] = []
        for change in candidates:
            new_text = read(change)
            share = line_similarity(old_text, new_text) if new_text is not None else 0.0
            if new_text is not None and share >= RENAME_SHARE:
                moves.append((share, change, new_text))
        for share, change, new_text in sorted(moves, key=lambda move: -move[0]):
            if not self._claimed(path, change, new_text, share, deleted):
                return Move(change.new_path or "", change.new_blob or "", share)
        return None

    def _claimed(self, path: str, change: FileChange, new_text: str, share: float,
                 deleted: dict[str, str]) -> bool:
        """Another file ``deleted`` beside ``path`` is ``change``'s source: its blob, or more of
        its lines than ``path``'s (the ``MOVE_CANDIDATES`` closest read, within the bound)."""
        others = [(other, blob) for other, blob in deleted.items()
                  if other != path and _extension(other) == _extension(path)]
        if any(blob == change.new_blob for _other, blob in others):
            return True
        others.sort(key=lambda other: _closeness(change.new_path or "", other[0]), reverse=True)
        for _other, blob in others[:MOVE_CANDIDATES]:
            if not self._within_bound(blob):
                continue
            other_text = self.text(blob)
            if other_text is not None and line_similarity(other_text, new_text) > share:
                return True
        return False

    def symbol_moves(self, commit: str, path: str,
                     names_it: Callable[[str], bool]) -> list[Move]:
        """Files added or modified since ``commit`` whose text ``names_it`` accepts (a cheap
        test before the symbol is looked for), closest to ``path`` first."""
        diff = self._diff(commit)
        found: list[Move] = []
        for change in self._candidates(path, diff.added + diff.modified):
            new_text = self.text(change.new_blob or "")
            if new_text is not None and names_it(new_text):
                found.append(Move(change.new_path or "", change.new_blob or "", 0.0))
        return found

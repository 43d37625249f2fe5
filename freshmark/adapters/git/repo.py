"""Read-only access to a git repository through pygit2: branches, trees, blobs, diffs, work tree.

Nothing here writes to the repository (no index refresh, no ref updates). A ``GitRepo`` wraps one
``pygit2.Repository`` and, like it, is not thread-safe: open one per thread or task.

Paths are repo-relative POSIX strings throughout. Commits are given as hex shas (full, or a
unique prefix); branch arguments are branch names only (``main`` or ``refs/heads/main``).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pygit2
from pygit2.enums import DeltaStatus, DiffFind, DiffOption, RepositoryOpenFlag, SortMode

from freshmark.adapters.git.deltas import (
    changes_of,
    is_file_mode,
    pair_exact_renames,
    similarity_skipped,
)
from freshmark.core.config import DEFAULT_MAX_FILE_BYTES
from freshmark.core.errors import (
    BranchNotFound,
    EmptyRepository,
    NotARepository,
    PermanentError,
    RepositoryGone,
    UnsafePath,
)
from freshmark.core.gitattributes import AttributeRules, attributes_for, parse_gitattributes
from freshmark.core.tree import (
    MODE_SUBMODULE,
    MODE_SYMLINK,
    MODE_TREE,
    FileChange,
    TreeFile,
    safe_relpath,
)

log = logging.getLogger(__name__)

RENAME_THRESHOLD_PERCENT = 50
# Inexact rename detection is skipped by libgit2 when sources x targets exceeds the square of
# this; 1000 is git's own diff.renameLimit default (libgit2's is 200, too low for big pushes).
RENAME_LIMIT_FILES = 1000
_ATTR_CACHE_MAX_ENTRIES = 20_000
_BRANCH_PREVIEW_COUNT = 5


class ObjectNotFound(PermanentError):
    """A commit or blob sha the object database does not hold (e.g. gc'd after a force push)."""


class FileGone(PermanentError):
    """A work-tree file that does not exist (or is not a regular file) any more."""


def _entry_name(entry: pygit2.Object) -> str:
    """A tree entry's name: pygit2 types ``name`` optional (an object looked up by id has none),
    but every entry a tree yields has one."""
    name = entry.name
    if name is None:
        raise TypeError(f"pygit2 yielded a tree entry without a name ({entry.id})")
    return name


def _subtree(entry: pygit2.Object) -> pygit2.Tree:
    """A tree entry of mode ``MODE_TREE``, which pygit2 yields as a ``Tree``."""
    if not isinstance(entry, pygit2.Tree):
        raise TypeError(f"pygit2 yielded tree entry {entry.name} as a {type(entry).__name__}")
    return entry


class GitRepo:
    """A git repository opened read-only; bare repositories and mirrors work for all reads."""

    def __init__(self, repo: pygit2.Repository):
        self._repo = repo
        self.is_bare: bool = repo.is_bare
        root = repo.path if repo.is_bare else repo.workdir
        self.path: Path = Path(root).resolve()
        self.last_walk_submodules: list[str] = []
        # Set for network callers: work-tree reads stop at files git tracks (no stray secrets).
        self.tracked_only = False
        self._attr_rules: dict[tuple[str, str], AttributeRules] = {}
        # Rename similarity reads whole blobs into libgit2's memory: none bigger than this
        # (0: any size), which indexing sets to its own max_file_bytes.
        self.similarity_max_bytes = DEFAULT_MAX_FILE_BYTES

    @classmethod
    def open(cls, path: str | Path, search_parents: bool = False) -> GitRepo:
        """Open the repository at ``path`` (its work-tree root or git directory).

        With ``search_parents`` a subdirectory of a work tree is accepted too.
        """
        location = Path(path).expanduser()
        if not location.exists():
            raise RepositoryGone(f"repository path does not exist: {location}")
        flags = RepositoryOpenFlag(0) if search_parents else RepositoryOpenFlag.NO_SEARCH
        try:
            return cls(pygit2.Repository(str(location), flags))
        except pygit2.GitError as exc:
            raise NotARepository(f"not a git repository: {location} ({exc})") from exc

    @classmethod
    def discover(cls, path: str | Path) -> GitRepo:
        """The repository enclosing ``path``, found as git finds it (``path`` may be any
        directory inside a work tree); its ``path`` and ``key`` are the top level's."""
        location = Path(path).expanduser()
        if not location.exists():
            raise RepositoryGone(f"repository path does not exist: {location}")
        git_dir = pygit2.discover_repository(str(location.resolve()))
        if git_dir is None:
            raise NotARepository(f"not a git repository (nor any parent directory): {location}")
        return cls.open(git_dir)

    def close(self) -> None:
        self._repo.free()

    # ---- identity -----------------------------------------------------------------------

    def key(self) -> str:
        """Stable identity for collection names: ``path:`` + resolved work tree (or git dir)."""
        return f"path:{self.path}"

    def default_name(self) -> str:
        """Human id: the work-tree directory name; for a bare repo its name without ``.git``."""
        if not self.is_bare:
            return self.path.name
        name = self.path.name if self.path.name != ".git" else self.path.parent.name
        return name.removesuffix(".git") or name

    # ---- refs and commits -----------------------------------------------------------------

    def current_branch(self) -> str:
        """Short name of the checked-out branch (for a bare repo: the branch HEAD names)."""
        repo = self._repo
        if repo.head_is_detached:
            short = str(repo.head.target)[:10]
            raise PermanentError(f"HEAD is detached at {short} in {self.path}; pass --branch")
        if repo.head_is_unborn:
            if self.branches():
                target = repo.references["HEAD"].target
                raise PermanentError(f"HEAD names {target}, which has no commits; pass --branch")
            raise EmptyRepository(f"repository has no commits yet: {self.path}")
        return repo.head.shorthand

    def branches(self) -> dict[str, str]:
        """Local branch name -> head commit sha (in a mirror, every mirrored branch)."""
        heads: dict[str, str] = {}
        for name in self._repo.raw_listall_references():
            ref_name = name.decode("utf-8", "replace")
            if not ref_name.startswith("refs/heads/"):
                continue
            ref = self._repo.references.get(ref_name)
            if ref is not None:
                heads[ref_name.removeprefix("refs/heads/")] = str(ref.peel(pygit2.Commit).id)
        return heads

    def branch_head(self, branch: str) -> str:
        """Head commit sha of a branch (``main`` or ``refs/heads/main``)."""
        name = branch.removeprefix("refs/heads/")
        try:
            ref = self._repo.references.get(f"refs/heads/{name}") if name else None
        except (ValueError, pygit2.GitError):
            ref = None  # an invalid ref name is simply not a branch
        if ref is not None:
            return str(ref.peel(pygit2.Commit).id)
        known = sorted(self.branches())
        if not known:
            raise EmptyRepository(f"repository has no commits yet: {self.path} (wanted {name!r})")
        preview = ", ".join(known[:_BRANCH_PREVIEW_COUNT])
        hidden = len(known) - _BRANCH_PREVIEW_COUNT
        more = f" (+{hidden} more)" if hidden > 0 else ""
        raise BranchNotFound(f"branch {name!r} not found in {self.path}; known: {preview}{more}")

    def _commit(self, sha: str) -> pygit2.Commit:
        try:
            obj = self._repo.get(sha)
            commit = obj.peel(pygit2.Commit) if obj is not None else None
        except (ValueError, KeyError, pygit2.GitError):
            commit = None
        if commit is None:
            raise ObjectNotFound(f"commit {sha} not found in {self.path}")
        return commit

    def commit_time(self, sha: str) -> datetime:
        """Committer time of a commit, UTC-aware."""
        return datetime.fromtimestamp(self._commit(sha).commit_time, tz=UTC)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True if ``ancestor`` is reachable from ``descendant`` (a commit is its own ancestor)."""
        old, new = self._commit(ancestor).id, self._commit(descendant).id
        return old == new or self._repo.descendant_of(new, old)

    def merge_base(self, a: str, b: str) -> str | None:
        base = self._repo.merge_base(self._commit(a).id, self._commit(b).id)
        return str(base) if base is not None else None

    def _walk_new_commits(self, old: str | None, new: str) -> Iterator[pygit2.Commit]:
        """Commits reachable from ``new`` but not from ``old`` (all of history if old is None)."""
        walker = self._repo.walk(self._commit(new).id, SortMode.NONE)
        if old is not None:
            walker.hide(self._commit(old).id)
        yield from walker

    def newest_commit_with(self, head: str, path: str,
                           max_commits: int) -> str | Literal[False] | None:
        """The newest commit (by time) reachable from ``head`` whose tree has ``path``: False
        when none has it, None when the first ``max_commits`` do not and there are more."""
        clean = safe_relpath(path)
        walker = self._repo.walk(self._commit(head).id, SortMode.TIME)
        for seen, commit in enumerate(walker, start=1):
            if seen > max_commits:
                return None
            try:
                commit.tree[clean]
                return str(commit.id)
            except KeyError:
                continue
            except pygit2.GitError:  # a damaged tree on one commit says nothing about others
                continue
        return False

    def commits_between(self, old: str | None, new: str) -> int:
        """How many commits ``new`` has that ``old`` lacks (``git rev-list --count old..new``)."""
        return sum(1 for _ in self._walk_new_commits(old, new))

    def paths_changed_between(self, old: str, new: str) -> set[str]:
        """Paths whose content differs between two commits: a tree diff without rename
        detection, so no blob is read (its cost grows with the changed directories)."""
        raw = self._commit(old).tree.diff_to_tree(self._commit(new).tree)
        return {p for d in raw.deltas for p in (d.old_file.path, d.new_file.path) if p}

    def commits_touching(self, path: str, old: str, new: str,
                         max_commits: int) -> Iterator[str]:
        """The commits in ``old..new`` that changed ``path`` (first parent), newest first,
        among no more than ``max_commits`` commits."""
        clean = safe_relpath(path)
        walker = self._repo.walk(self._commit(new).id, SortMode.TOPOLOGICAL)
        walker.hide(self._commit(old).id)
        for seen, commit in enumerate(walker, start=1):
            if seen > max_commits:
                return
            parent = commit.parents[0] if commit.parents else None
            if _entry_id(commit.tree, clean) != (_entry_id(parent.tree, clean) if parent
                                                  else None):
                yield str(commit.id)

    def oldest_unindexed_commit_time(self, old: str | None, new: str) -> datetime | None:
        """Committer time of the oldest commit in ``old..new``; None when there is none."""
        times = [c.commit_time for c in self._walk_new_commits(old, new)]
        return datetime.fromtimestamp(min(times), tz=UTC) if times else None

    # ---- trees and blobs ------------------------------------------------------------------

    def tree_files(self, commit: str) -> Iterator[TreeFile]:
        """Every regular file and symlink of the commit's tree, recursively, in tree order.

        Submodules are not yielded; once the walk is exhausted their paths are in
        ``last_walk_submodules``. Sizes come from object headers (no blob is inflated).
        """
        odb = self._repo.odb
        submodules: list[str] = []
        stack: list[tuple[str, pygit2.Tree]] = [("", self._commit(commit).tree)]
        while stack:
            prefix, tree = stack.pop()
            subtrees: list[tuple[str, pygit2.Tree]] = []
            for entry in tree:
                path = prefix + _entry_name(entry)
                mode = entry.filemode
                if mode == MODE_TREE:
                    subtrees.append((path + "/", _subtree(entry)))
                elif mode == MODE_SUBMODULE:
                    submodules.append(path)
                else:
                    size_bytes = odb.read_header(entry.id)[1]
                    yield TreeFile(path, str(entry.id), int(mode), size_bytes)
            stack.extend(reversed(subtrees))
        self.last_walk_submodules = submodules

    def submodules(self, commit: str) -> list[str]:
        """Paths of submodule (gitlink) entries in the commit's tree."""
        found: list[str] = []
        stack: list[tuple[str, pygit2.Tree]] = [("", self._commit(commit).tree)]
        while stack:
            prefix, tree = stack.pop()
            for entry in tree:
                if entry.filemode == MODE_TREE:
                    stack.append((prefix + _entry_name(entry) + "/", _subtree(entry)))
                elif entry.filemode == MODE_SUBMODULE:
                    found.append(prefix + _entry_name(entry))
        return sorted(found)

    def blob_at(self, commit: str, path: str) -> str | None:
        """Blob sha of ``path`` at ``commit``; None if absent or not a file. One tree lookup."""
        tree = self._commit(commit).tree
        try:
            entry = tree[safe_relpath(path)]
        except KeyError:
            return None
        except pygit2.GitError as exc:  # a tree object on the way is missing: a damaged repo
            raise ObjectNotFound(f"cannot read {path} at {commit[:12]}: {exc}") from exc
        return str(entry.id) if entry.filemode not in (MODE_TREE, MODE_SUBMODULE) else None

    def blob_size(self, blob_sha: str) -> int:
        """Bytes of a blob from its object header: the blob itself is not inflated."""
        try:
            return int(self._repo.odb.read_header(blob_sha)[1])
        except (ValueError, KeyError, pygit2.GitError) as exc:
            raise ObjectNotFound(f"blob {blob_sha} not found in {self.path}") from exc

    def read_blob(self, blob_sha: str) -> bytes:
        try:
            obj = self._repo.get(blob_sha)
        except (ValueError, pygit2.GitError):
            obj = None
        if not isinstance(obj, pygit2.Blob):
            raise ObjectNotFound(f"blob {blob_sha} not found in {self.path}")
        return obj.data

    # ---- diffs ----------------------------------------------------------------------------

    def diff(self, old: str | None, new: str, find_renames: bool = True) -> list[FileChange]:
        """Changes from commit ``old`` to commit ``new``, renames detected (>= 50% similar):
        a tree-to-tree diff, so ``new`` need not descend from ``old`` (force pushes). ``old``
        None: all of ``new`` is added. Without ``find_renames`` no blob is read (a rename is a
        delete and an add)."""
        new_tree = self._commit(new).tree
        if old is None:
            return changes_of(new_tree.diff_to_tree(swap=True))  # empty tree -> new
        raw = self._commit(old).tree.diff_to_tree(new_tree, DiffOption.INCLUDE_TYPECHANGE)
        if not find_renames:
            return changes_of(raw)
        try:
            raw.find_similar(self._rename_flags(raw), rename_threshold=RENAME_THRESHOLD_PERCENT,
                             rename_limit=RENAME_LIMIT_FILES)
        except pygit2.GitError as exc:
            # Rename detection reads blobs; one missing from a partial or damaged clone must
            # not stop the run: moves are then paired by blob id, which reads none.
            similarity_skipped(str(self.path), old, new, exc)
            raw = self._commit(old).tree.diff_to_tree(new_tree, DiffOption.INCLUDE_TYPECHANGE)
            return pair_exact_renames(changes_of(raw))
        return changes_of(raw)

    def _rename_flags(self, raw: pygit2.Diff) -> DiffFind:
        """Inexact renames unless an added or deleted blob is over ``similarity_max_bytes``
        (libgit2 would read it whole to score it, 1.4 GB for a 1 GB file indexing skips): then
        renames are paired by blob id only, and an edited big file is a delete and an add."""
        limit = self.similarity_max_bytes
        if not limit:
            return DiffFind.FIND_RENAMES
        odb = self._repo.odb
        for delta in raw.deltas:
            side = delta.new_file if delta.status == DeltaStatus.ADDED else delta.old_file
            if delta.status in (DeltaStatus.ADDED, DeltaStatus.DELETED) \
                    and is_file_mode(side.mode) and int(odb.read_header(side.id)[1]) > limit:
                log.info("rename similarity by blob id only: %s is over %d bytes",
                         side.path, limit)
                return DiffFind.FIND_RENAMES | DiffFind.FIND_EXACT_MATCH_ONLY
        return DiffFind.FIND_RENAMES

    # ---- work tree ------------------------------------------------------------------------

    def worktree_changes(self) -> list[FileChange]:
        """Uncommitted changes relative to HEAD: staged, unstaged and untracked (not ignored).

        ``new_blob`` is the blob sha of the bytes on disk now. A file moved without edits is
        reported as a rename; other work-tree renames show as deleted + added.
        """
        self._require_worktree()
        repo = self._repo
        head_tree = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
        changes: list[FileChange] = []
        for path in sorted(repo.status(untracked_files="all", ignored=False)):
            change = self._worktree_change(head_tree, path)
            if change is not None:
                changes.append(change)
        return pair_exact_renames(changes)

    def _worktree_change(self, head_tree: pygit2.Tree | None, path: str) -> FileChange | None:
        old_blob = None
        if head_tree is not None and path in head_tree:
            entry = head_tree[path]
            if entry.filemode in (MODE_TREE, MODE_SUBMODULE):
                return None
            old_blob = str(entry.id)
        new_blob, new_mode = _worktree_blob(self.path / path)
        if old_blob == new_blob:
            return None  # e.g. staged then reverted, or a mode-only change
        if old_blob is None:
            return FileChange("added", None, path, None, new_blob, new_mode=new_mode)
        if new_blob is None:
            return FileChange("deleted", path, None, old_blob, None)
        return FileChange("modified", path, path, old_blob, new_blob, new_mode=new_mode)

    def read_worktree_file(self, rel_path: str) -> bytes:
        """Bytes of a work-tree file, refusing anything that leaves the repository.

        Raises UnsafePath for absolute paths, ``..``, ``.git/`` and symlinks (anywhere along
        the path) resolving outside the work tree; FileGone if it is missing or not a file,
        or (with ``tracked_only``) not tracked by git.
        """
        self._require_worktree()
        clean = safe_relpath(rel_path)
        if clean.split("/", 1)[0] == ".git":
            raise UnsafePath(f"path inside the git directory: {rel_path!r}")
        if self.tracked_only and clean not in self._repo.index:
            raise FileGone(f"file not tracked by git: {clean}")
        try:
            resolved = (self.path / clean).resolve(strict=True)
        except FileNotFoundError as exc:
            raise FileGone(f"file not in the work tree: {clean}") from exc
        except (RuntimeError, OSError) as exc:  # symlink loops (RuntimeError on 3.11)
            raise UnsafePath(f"path cannot be resolved safely: {clean} ({exc})") from exc
        inside = resolved.is_relative_to(self.path)
        if not inside or resolved.relative_to(self.path).parts[:1] == (".git",):
            raise UnsafePath(f"path resolves outside the repository work tree: {clean}")
        if not stat.S_ISREG(resolved.stat().st_mode):
            raise FileGone(f"not a regular file in the work tree: {clean}")
        return resolved.read_bytes()

    def worktree_blob(self, rel_path: str) -> str | None:
        """The blob sha of the work tree's ``rel_path``, None when no file is there: one file
        hashed, never followed out of the tree, no status walk."""
        return _worktree_blob(self.path / safe_relpath(rel_path))[0]

    def _require_worktree(self) -> None:
        if self.is_bare:
            raise PermanentError(f"bare repository has no work tree: {self.path}")

    # ---- attributes -----------------------------------------------------------------------

    def attributes(self, commit: str, path: str) -> dict[str, str | bool]:
        """The ``.gitattributes`` values for ``path`` as committed at ``commit``.

        Reads only the ``.gitattributes`` files in that commit's tree (root first, deeper files
        override), never the work tree, index or system files, so bare repos and other branches
        answer the same way. Keys are among ``REPORTED_ATTRIBUTES``; values are True (set),
        False (``-attr``) or the string after ``=``.
        """
        tree = self._commit(commit).tree
        clean = safe_relpath(path)
        parts = clean.split("/")[:-1]
        dirs = [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return attributes_for(clean, [(d, self._rules_in(tree, d)) for d in dirs])

    def _rules_in(self, tree: pygit2.Tree, directory: str) -> AttributeRules:
        cache_key = (str(tree.id), directory)
        rules = self._attr_rules.get(cache_key)
        if rules is None:
            path = f"{directory}/.gitattributes" if directory else ".gitattributes"
            try:
                entry = tree[path]
                blob = self._repo[entry.id] if entry.filemode != MODE_TREE else None
            except KeyError:
                blob = None
            text = blob.data.decode("utf-8", "replace") if isinstance(blob, pygit2.Blob) else ""
            rules = parse_gitattributes(text)
            for problem in rules.invalid:
                log.warning("%s/.gitattributes at tree %s: pattern ignored (%s)",
                            directory or ".", str(tree.id)[:12], problem)
            if len(self._attr_rules) >= _ATTR_CACHE_MAX_ENTRIES:
                self._attr_rules.clear()
            self._attr_rules[cache_key] = rules
        return rules


def _worktree_blob(path: Path) -> tuple[str | None, int | None]:
    """Git blob sha and file mode of a work-tree file (a symlink hashes its target text).

    (None, None) when there is no file or symlink at ``path``.
    """
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return str(pygit2.hash(os.fsencode(os.readlink(path)))), MODE_SYMLINK
        if not stat.S_ISREG(info.st_mode):
            return None, None
        executable = bool(info.st_mode & stat.S_IXUSR)
        return str(pygit2.hashfile(str(path))), 0o100755 if executable else 0o100644
    except OSError:
        return None, None


def _entry_id(tree: pygit2.Tree, path: str) -> str | None:
    """The object id at ``path`` in ``tree``, None when absent (or unreadable)."""
    try:
        return str(tree[path].id)
    except (KeyError, pygit2.GitError):
        return None

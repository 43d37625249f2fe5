"""What git gives the indexer, as plain values: tree files, diff changes, safe paths."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from freshmark.core.errors import (
    UnsafePath,
)

MODE_TREE = 0o040000
MODE_SYMLINK = 0o120000
MODE_SUBMODULE = 0o160000  # a "gitlink": the commit of another repository
EMPTY_BLOB_SHA = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


@dataclass(frozen=True)
class TreeFile:
    """A regular file or symlink in a commit's tree; ``size_bytes`` is the blob size."""

    path: str
    blob_sha: str
    mode: int
    size_bytes: int

    @property
    def is_symlink(self) -> bool:
        return self.mode == MODE_SYMLINK


@dataclass(frozen=True)
class FileChange:
    """One changed path. ``added`` has no old side, ``deleted`` no new side."""

    status: str  # "added" | "modified" | "deleted" | "renamed"
    old_path: str | None
    new_path: str | None
    old_blob: str | None
    new_blob: str | None
    similarity: int | None = None  # percent, renames only
    new_mode: int | None = None  # git file mode of the new side (MODE_SYMLINK for a symlink)


def with_moves(full: Iterable[FileChange], since_stamp: Iterable[FileChange]) -> list[FileChange]:
    """A full pass (every file at the head, as added) that also retires what went since the
    stamp: the stamp's diff's deletions, and its renames in place of the additions of their new
    paths, so the vanished paths are tombstoned, the renamed ones with their successors."""
    moves = [c for c in since_stamp if c.status in ("deleted", "renamed")]
    renamed_to = {c.new_path for c in moves if c.status == "renamed"}
    return [c for c in full if c.new_path not in renamed_to] + moves


def changed_paths(changes: Iterable[FileChange]) -> set[str]:
    """Every path a diff touches, old and new sides."""
    return {p for c in changes for p in (c.old_path, c.new_path) if p}


def safe_relpath(rel: str) -> str:
    """Normalise a repo-relative path to POSIX form (``a\\b/./c`` -> ``a/b/c``).

    Raises UnsafePath for empty paths, NUL bytes, absolute or drive-letter paths and ``..``.
    """
    if not rel or "\0" in rel:
        raise UnsafePath(f"not a usable repository path: {rel!r}")
    posix = rel.replace("\\", "/")
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":" and posix[0].isalpha()):
        raise UnsafePath(f"absolute path not allowed, give it relative to the repository: {rel!r}")
    parts = [part for part in posix.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePath(f"path leaves the repository ('..'): {rel!r}")
    if not parts:
        raise UnsafePath(f"path names no file: {rel!r}")
    return "/".join(parts)


# Languages whose files see their directory's definitions without an import: Go's package,
# Java's and Kotlin's, C#'s and PHP's namespace by convention, Swift's module (a target's
# whole directory tree: its own directory is the part read here).
PACKAGE_EXTENSIONS = (".go", ".java", ".kt", ".scala", ".groovy", ".cs", ".php", ".swift")
# A JVM package is the path below its source root, whichever source set holds it (Maven's and
# Gradle's src/main/java and src/test/java, Kotlin's src/commonMain/kotlin and src/jvmMain/kotlin;
# a bare java/ or kotlin/ root), the module above the root kept.
_JVM_EXTENSIONS = frozenset({".java", ".kt", ".scala", ".groovy"})
_JVM_SOURCE_ROOT = re.compile(r"(?:^|/)(?:src/[^/]+/)?(?:java|kotlin|scala|groovy)(?:/|$)")


def package_key(path: str) -> tuple[str, str] | None:
    """The package ``path``'s file is of (its directory and extension, a JVM file's directory
    its module and package: ``_JVM_SOURCE_ROOT``), None for a language whose files import
    what they use; a Go test file is its package's reader, not part of it."""
    directory, extension = posixpath.dirname(path), posixpath.splitext(path)[1]
    if extension not in PACKAGE_EXTENSIONS or path.endswith("_test.go"):
        return None
    root = _JVM_SOURCE_ROOT.search(directory) if extension in _JVM_EXTENSIONS else None
    if root is not None:  # "//" parts module and package: no directory is so named
        directory = f"{directory[:root.start()]}//{directory[root.end():]}"
    return directory, extension


def package_seen(path: str) -> tuple[str, str] | None:
    """The package whose files ``path``'s file sees without an import: its own, a Go test
    file's the package it tests."""
    return package_key(path.removesuffix("_test.go") + ".go" if path.endswith("_test.go")
                       else path)


def module_name(path: str) -> str:
    """The module a file is named as, lowercased (``walk`` for ``src/walk.rs`` and
    ``src/walk/mod.rs``, ``nodes`` for ``jinja2/nodes.py``): Rust's ``walk::scan`` and
    Python's ``nodes.Template`` qualify a name by it."""
    stem = posixpath.splitext(posixpath.basename(path))[0].lower()
    return posixpath.basename(posixpath.dirname(path)).lower() \
        if stem in ("mod", "__init__", "index", "lib") else stem

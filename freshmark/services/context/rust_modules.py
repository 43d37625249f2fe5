"""The files of a crate a Rust ``use`` names (SPEC §7: imports resolved to indexed files).

An import is stored as its ``use`` tree is written (``crate::{logger, kv::{self, Source}}``):
it is spelled out into paths, and each path is walked from the module it starts at (the crate
root for ``crate::``, the importing file for ``self::``, its parent for ``super::``, the
importing file or the crate root for a module declared there) down the files holding its
modules (``kv.rs`` or ``kv/mod.rs``). Where no file holds the next element, it is an item (or an
inline ``mod``) of the module reached: ``crate::Record`` is lib.rs's.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection

_ALIAS = re.compile(r"\s+as\s+\w+\s*$")
_ROOT_FILES = ("lib.rs", "main.rs")
_MODULE_HOLDERS = ("lib", "main", "mod")  # files whose modules are in their own directory


def use_paths(spec: str) -> list[str]:
    """The paths a ``use`` tree names: ``crate::{logger, kv::{self, Source as S}}`` gives
    ``crate::logger``, ``crate::kv`` and ``crate::kv::Source``; a glob names its module. A
    ``super::*`` is left out: it is the idiom of an inline test module, whose parent is its
    own file (the stored imports do not say which module wrote them)."""
    paths = _expanded("", " ".join(spec.split()).rstrip(";"))
    return [path for path in dict.fromkeys(paths) if path]


def _expanded(prefix: str, tree: str) -> list[str]:
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        path = _ALIAS.sub("", tree).strip()
        if path == "*" or path.endswith("::*"):
            path = path[:-1].rstrip(":")
            if path and set(path.split("::")) == {"super"} and not prefix:
                return []
        return [prefix if path == "self" else _joined(prefix, path)]
    base = _joined(prefix, tree[:brace].strip().rstrip(":").strip())
    found: list[str] = []
    for item in _top_level_items(tree[brace + 1 : _closing(tree, brace)]):
        found.extend(_expanded(base, item))
    return found


def _joined(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix and path else prefix or path


def _closing(text: str, opening: int) -> int:
    """The index of the brace closing the one at ``opening`` (the text's end if none)."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return len(text)


def _top_level_items(group: str) -> list[str]:
    """A braced group's items split at its own commas, not a nested group's."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(group):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(group[start:index])
            start = index + 1
    items.append(group[start:])
    return [item for item in items if item.strip()]


def module_file(from_path: str, path: str, files: Collection[str]) -> str | None:
    """The file holding the module a Rust ``path`` reaches from ``from_path`` (its item's or
    the module's own), None for another crate's (``std::fmt``, ``serde::de``)."""
    segments = [s for s in path.split("::") if s]
    if not segments:
        return None
    module = _start(from_path, segments, files)
    if module is None:
        return None
    for segment in segments:
        child = _child(module, segment, files)
        if child is None:
            break
        module = child
    return module


def _start(from_path: str, segments: list[str], files: Collection[str]) -> str | None:
    """The module a path starts at, its leading ``crate``, ``self`` and ``super``s taken off
    ``segments``; a module declared by the importing file or the crate root (``mod config;``
    then ``use config::X``; Rust 2015's crate-relative paths) is theirs."""
    first = segments[0]
    if first == "crate":
        del segments[0]
        return crate_root(from_path, files)
    if first == "self":
        del segments[0]
        return from_path
    if first == "super":
        module: str | None = from_path
        while segments and segments[0] == "super" and module is not None:
            del segments[0]
            module = _parent(module, files)
        return module
    root = crate_root(from_path, files)
    return next((home for home in (from_path, root)
                 if home is not None and _child(home, first, files) is not None), None)


def crate_root(from_path: str, files: Collection[str]) -> str | None:
    """The crate's ``lib.rs`` (else ``main.rs``) in the nearest directory above the file."""
    directory = posixpath.dirname(from_path)
    while True:
        for name in _ROOT_FILES:
            if (root := posixpath.join(directory, name)) in files:
                return root
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def _children_directory(module: str) -> str:
    """Where a module's file keeps its submodules: ``src/kv.rs`` and ``src/kv/mod.rs`` in
    ``src/kv``, ``src/lib.rs`` in ``src``."""
    here, stem = posixpath.split(module[: -len(".rs")])
    return here if stem in _MODULE_HOLDERS else posixpath.join(here, stem)


def _child(module: str, name: str, files: Collection[str]) -> str | None:
    directory = _children_directory(module)
    return next((path for path in (posixpath.join(directory, f"{name}.rs"),
                                   posixpath.join(directory, name, "mod.rs")) if path in files),
                None)


def _parent(module: str, files: Collection[str]) -> str | None:
    """The file of a module's parent: the one keeping its submodules where this one is; a
    crate root has none."""
    here, stem = posixpath.split(module[: -len(".rs")])
    if stem in ("lib", "main"):
        return None
    directory = posixpath.dirname(here) if stem == "mod" else here
    candidates = [f"{directory}.rs"] + [posixpath.join(directory, name)
                                        for name in ("mod.rs", *_ROOT_FILES)]
    return next((path for path in candidates if path in files), None)

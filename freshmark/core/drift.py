"""Dependency drift (seed 000 §4.8): unchanged code whose dependencies changed under it.

"A matching hash only says the file did not change; it does not say the code is still valid in
the architecture": ``order_repo.py`` untouched for a month while the service it calls changed
its transaction boundaries still reads as current. A result whose own file is unchanged since
its stamp (``older_identical``) therefore also has the definitions it depends on checked: the
names it references (recorded at index time, ``ChunkRecord.references``) defined in the
modules it imports (``ChunkRecord.imports``). A definition whose lines differ between the
stamp's commit and the head is *changed*; one no longer there is *vanished*. Either becomes a
``DriftNote``; the verdict keeps its meaning (the result's own code is as indexed).

The rules here are pure; ``services.drift`` reads git. Cost is bounded by the diff: only paths
the diff from the stamp's commit to the head touched are looked at, only those the result's
imports name, at most ``MAX_FILES_PER_RESULT`` of them.

A method counts as a dependency only when the result names its class too (a reference is a
name without its receiver: ``x.save()`` names ``save``, not whose). A class is compared by its
own lines, its members' left out (``definition_texts``): an edit inside a method is that
method's change, noted only for the code naming it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.core.chunking import FileSymbols
from freshmark.core.chunking.assemble import block_symbol
from freshmark.core.stamp import ChunkRecord
from freshmark.core.tree import package_key, package_seen

MAX_FILES_PER_RESULT = 8
CHANGED = "changed"
VANISHED = "vanished"
_SEPARATORS = re.compile(r"::|[./\\]")
_PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib"})
_HEADER_EXTENSIONS = (".h", ".hh", ".hpp", ".hxx", ".h++")
_SCRIPT_EXTENSIONS = frozenset({".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"})


@dataclass(frozen=True)
class DriftNote:
    """A dependency of the result that changed (or vanished) after the result was stamped."""

    symbol: str
    path: str
    change: str  # CHANGED | VANISHED
    commit: str | None  # the newest commit that touched the path, when it was found

    def to_dict(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "path": self.path, "change": self.change,
                "commit": self.commit}

    def text(self) -> str:
        # The commit is the file's newest, which may not be the one that changed the symbol.
        where = f", its file last changed in {self.commit[:7]}" if self.commit else ""
        return f"{self.symbol} ({self.path}) {self.change}{where}"


def _module_parts(from_path: str, spec: str) -> list[str]:
    """``orders.domain.order`` -> [orders, domain, order]; ``./util`` resolved from the file,
    its ``.js`` left out (TypeScript names the compiled file); a C header ``jv.h`` -> [jv]
    (its stem's, which its ``jv.c`` shares)."""
    if spec.endswith(_HEADER_EXTENSIONS):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
        return [p for p in posixpath.splitext(joined)[0].split("/") if p and p != ".."][-2:] \
            if spec.startswith(".") else posixpath.splitext(spec)[0].split("/")
    if spec.startswith(("./", "../")):  # a path, its extension a compiler's (yargs' ``.js``)
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
        stem, extension = posixpath.splitext(joined)
        joined = stem if extension in _SCRIPT_EXTENSIONS else joined
        return [p for p in joined.split("/") if p and p not in (".", "..")]
    if spec.startswith("."):
        base = posixpath.dirname(from_path)
        stripped = spec.lstrip(".")
        ups = len(spec) - len(stripped) - 1
        for _ in range(max(ups, 0)):
            base = posixpath.dirname(base)
        joined = posixpath.normpath(posixpath.join(base, stripped.replace(".", "/")))
        return [p for p in joined.split("/") if p and p != "."]
    return [p for p in _SEPARATORS.split(spec) if p and p not in ("crate", "self", "super")]


def _stem_parts(path: str) -> list[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    parts = stem.split("/")
    return parts[:-1] if parts[-1] in _PACKAGE_FILES else parts


def imported_paths(record: ChunkRecord, changed: Iterable[str]) -> list[str]:
    """The changed paths that the record's imports name (module path suffix), bounded. A Go
    import names a directory (``github.com/me/app/middleware``), and a Go, Java, Kotlin, C#
    or PHP file sees its own package's files without one (``tree.package_key``: a Java test's
    package is its main code's), those named for a class it names first (a package of many
    files may change more than the bound holds)."""
    candidates = [p for p in changed if p != record.path]
    go = record.path.endswith(".go")
    package = package_seen(record.path)
    found = sorted((p for p in candidates if package is not None and package_key(p) == package),
                   key=lambda p: _stem_parts(p)[-1] not in record.references)
    for spec in record.imports:
        parts = _module_parts(record.path, spec)
        if not parts:
            continue
        found += [path for path in candidates if path not in found and _names(parts, path, go)]
    return found[:MAX_FILES_PER_RESULT]


def _names(parts: list[str], path: str, go: bool) -> bool:
    """An import's ``parts`` name ``path``: a Go import its directory (the import ends with
    the directory), any other its module (the path's stem ends with the import)."""
    if go:
        directory = posixpath.dirname(path).split("/")
        return directory != [""] and parts[-len(directory):] == directory
    return _stem_parts(path)[-len(parts):] == parts


def is_dependency(record: ChunkRecord, symbol: str) -> bool:
    """Does the record use the definition ``symbol`` (by the rule in the module docstring)?"""
    owner, dot, name = symbol.rpartition(".")
    if not dot:
        return symbol in record.references
    return name in record.references and owner.rsplit(".", 1)[-1] in record.references


def notes_for_file(record: ChunkRecord, path: str, old: Mapping[str, str] | None,
                   new: Mapping[str, str] | None, commit: str | None) -> list[DriftNote]:
    """Drift of ``record``'s dependencies in ``path``: ``old`` and ``new`` map each symbol
    defined in the file to its text at the stamp's commit and at the head (None: no file)."""
    notes = []
    for symbol, text in sorted((old or {}).items()):
        if not is_dependency(record, symbol):
            continue
        now = (new or {}).get(symbol)
        if now is None:
            notes.append(DriftNote(symbol, path, VANISHED, commit))
        elif now != text:
            notes.append(DriftNote(symbol, path, CHANGED, commit))
    return notes


def definition_texts(symbols: FileSymbols) -> dict[str, str]:
    """Each symbol of a file -> the text its dependents rely on: the lines of all its spans
    (every overload's) but those of its members (``Name.member``, at any depth), blank lines
    left out. A class's own lines are its header, fields and outline: commons-cli's GnuParser,
    calling only DefaultParser.indexOfEqual, drifted when DefaultParser.isNegativeNumber
    changed, as its class's whole span had."""
    spans = {name: list(found) for name, found in symbols.units.items()}
    for ordinal, block in enumerate(symbols.blocks, 1):
        spans.setdefault(block_symbol(ordinal), [block])
    members: dict[str, set[int]] = {}
    for name, found in spans.items():
        owner = name
        while "." in owner:
            owner = owner.rpartition(".")[0]
            if owner in spans:
                members.setdefault(owner, set()).update(
                    line for start, end in found for line in range(start, end + 1))
    texts = {}
    for name, found in spans.items():
        left_out = members.get(name, set())
        texts[name] = "\n".join(
            symbols.lines[line - 1] for start, end in found for line in range(start, end + 1)
            if line not in left_out and symbols.lines[line - 1].strip())
    return texts


def check_line_suffix(notes: Sequence[DriftNote]) -> str:
    """What the citation's check line adds: the drifted dependencies, at most three named."""
    if not notes:
        return ""
    named = ", ".join(n.text() for n in notes[:3])
    more = f" and {len(notes) - 3} more" if len(notes) > 3 else ""
    return f"; depends on code that changed since: {named}{more}"

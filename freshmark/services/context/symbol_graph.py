"""A small symbol graph of one branch, built from chunk metadata recorded at index time (SPEC §7).

Nodes are the branch's live chunks of product code (excluded file kinds, tests, docs and
config are left out). Two kinds of relation, both read from the stamps, never from the text:

* **imports**: a file's ``imports`` as written (``orders.domain.order``, ``./util``,
  ``github.com/shop/payment``, ``crate::a::b``) resolved to indexed files by path suffix;
* **references**: a chunk's ``references`` (names it calls or uses) resolved to definitions.

Name resolution is restricted so that a common name does not wire everything together: a
definition in the same file or in a file the referencing file imports (in Go, any file of its
package) is a *confirmed* edge; otherwise a name defined exactly once in the branch is a
*name-only* edge; anything else is ambiguous and left out. A method is confirmed only from its
own class, from code that names its class (an annotation, a constructor call) or from a Java or
Kotlin file importing it from its class (``import static pkg.Util.checkNotNull``): references
are names without their receiver, so ``_cv_app.get(None)`` naming ``get`` says nothing of which
class's ``get`` runs (a ContextVar's, a dict's), and such a call is name-only however near its
file is; the caller's code says more (``call_standing``: a Python method name classes of
several lineages define, called through a value bound to none of them, is no call at all).
A graph is built once per (collection, generation) and process.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from freshmark.core.chunking.ruby import singleton_head
from freshmark.core.classify import is_stub
from freshmark.core.stamp import ChunkRecord, own_name
from freshmark.core.tree import module_name, package_key, package_seen
from freshmark.services.context.rust_modules import module_file, use_paths

# Kinds that define a type: their chunks are the type definitions carried at a slice boundary.
TYPE_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type"})
_NOT_DEFINITIONS = frozenset({"block", "window", "module"})
_LEFT_OUT_KINDS = frozenset({"generated", "vendored", "backup", "fixture", "test", "doc", "config"})
_PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib", "main"})
_MAX_IMPORT_MATCHES = 3
_MAX_PACKAGE_FILES = 5
_SEPARATORS = re.compile(r"::|[./\\]")
_DOTS_ONLY = re.compile(r"\.+")
# Languages whose files import a class's members by name (Java's ``import static``).
_MEMBER_IMPORT_LANGUAGES = frozenset({"java", "kotlin"})
# Languages whose calls are judged one definition at a time by the receiver written
# (``call_standing``): a method of the caller's own class shadows no namesake.
_CALLS_NAME_THEIR_RECEIVER = frozenset({"python", "ruby"})


# A file named with its extension (ESM's ``./util.js`` for ``util.ts``, C's ``"util.h"``): the
# graph knows files by their path without it (``_stem``).
_SOURCE_EXTENSION = re.compile(
    r"\.(?:m?[jt]sx?|c[jt]s|py|go|rs|java|rb|php|cs|c|cc|cpp|cxx|h|hh|hpp|hxx)$")
_HEADER = re.compile(r"\.(?:h|hh|hpp|hxx)$")
_C_FAMILY = re.compile(r"\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|h\+\+|ipp|tpp|inl)$")


def _is_constructor(symbol: str) -> bool:
    """``OpenBehavior.OpenBehavior``: a constructor named as its class (C#, Java, C++). A
    reference to the name is to the class (a parameter's type as often as a ``new``), so the
    name resolves to the class alone: a method that takes an ``OpenBehavior`` is no caller of
    its constructor."""
    parts = symbol.split(".")
    return len(parts) >= 2 and parts[-1] == parts[-2]


def _class_and_instance_method(first: ChunkRecord, record: ChunkRecord) -> bool:
    """A Ruby class method (``def self.parse``) and an instance method (``def parse``) of one
    class: two methods of one symbol, not one's overloads (rack's ``Multipart::Parser``)."""
    return first.language == record.language == "ruby" and \
        singleton_head(first.signature) != singleton_head(record.signature)


def _without_extension(spec: str) -> str:
    """``spec`` without a source file's extension, where it names a file (a path, a header)
    rather than a dotted module (``pkg.py`` could be a module ``py`` of ``pkg``)."""
    if "/" in spec or _HEADER.search(spec):
        return _SOURCE_EXTENSION.sub("", spec)
    return spec


def _stem(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path


@dataclass(frozen=True)
class Edge:
    """``caller`` refers to ``callee`` (chunk ids); ``confirmed`` by an import or the same file."""

    caller: str
    callee: str
    confirmed: bool


class SymbolGraph:
    """Definitions, references and file imports of one branch's live product code."""

    def __init__(self, records: Iterable[ChunkRecord]):
        self.nodes: dict[str, ChunkRecord] = {}
        self._by_short: dict[str, list[str]] = {}
        self._by_symbol: dict[tuple[str, str], str] = {}
        self._refs_by_name: dict[str, list[str]] = {}
        self._imports_of: dict[str, list[str]] = {}
        self._suffixes: dict[str, set[str]] = {}
        self._dirs: dict[str, set[str]] = {}
        self._names: set[str] = set()  # every directory and file stem a path is made of
        self._modules: dict[str, set[str]] = {}  # a module's own name: the files defining it
        # A directory and an extension: the files of one package (Go's, Java's, Kotlin's; C#'s
        # and PHP's namespace by convention), which see each other's definitions unimported.
        self._packages: dict[tuple[str, str], set[str]] = {}
        self._resolved: dict[str, list[str]] = {}
        self._defining: set[str] = set()  # files that define something (not only re-export)
        self._scopes: set[str] = set()  # namespaces and classes that hold definitions
        self._impls: dict[str, list[ChunkRecord]] = {}  # per Rust file: its impl blocks
        self._ruby_bodies: dict[tuple[str, str], str] = {}  # a Ruby class's or module's chunk
        for record in sorted(records, key=lambda r: (r.path, r.start_line, r.id)):
            if record.is_live and record.file_kind not in _LEFT_OUT_KINDS:
                self._add(record)

    def _add(self, record: ChunkRecord) -> None:
        self.nodes[record.id] = record
        self._imports_of.setdefault(record.path, list(record.imports))
        self._scopes.update(record.symbol.split(".")[:-1])
        if record.kind == "module":
            self._scopes.add(own_name(record.symbol))
        elif record.kind == "impl":
            self._impls.setdefault(record.path, []).append(record)
        key = (record.path, record.symbol)
        if record.language == "ruby" and record.kind in ("class", "module"):
            self._ruby_bodies[key] = record.id  # a class reopened in its file: the last
        if record.kind not in _NOT_DEFINITIONS:
            self._defining.add(record.path)
        elif record.kind == "module":
            self._modules.setdefault(own_name(record.symbol), set()).add(record.path)
        if record.kind not in _NOT_DEFINITIONS and (key not in self._by_symbol or all(
                _class_and_instance_method(self.nodes[d], record)
                for d in self.namesakes(*key))):
            self._by_symbol.setdefault(key, record.id)
            if not _is_constructor(record.symbol):
                self._by_short.setdefault(own_name(record.symbol), []).append(record.id)
        for name in set(record.references):
            self._refs_by_name.setdefault(name, []).append(record.id)
        if record.path not in self._suffixes.get(_stem(record.path), set()):
            self._register_file(record.path)

    def _register_file(self, path: str) -> None:
        stem_parts = _stem(path).split("/")
        self._names.update(stem_parts)
        for i in range(len(stem_parts)):
            self._suffixes.setdefault("/".join(stem_parts[i:]), set()).add(path)
        directory = stem_parts[:-1]
        if stem_parts[-1] in _PACKAGE_FILES and directory:
            for i in range(len(directory)):
                self._suffixes.setdefault("/".join(directory[i:]), set()).add(path)
        for i in range(len(directory)):
            self._dirs.setdefault("/".join(directory[i:]), set()).add(path)
        if (package := package_key(path)) is not None:
            self._packages.setdefault(package, set()).add(path)

    # -- files and imports -------------------------------------------------------------------------
    @property
    def files(self) -> set[str]:
        return set(self._imports_of)

    def imported_files(self, path: str) -> list[str]:
        """Indexed files that ``path`` imports (unresolvable ones, e.g. libraries, dropped).
        A file that defines nothing and imports (a barrel: ``export * from './a'``, an
        ``__init__`` of imports) stands for the files it imports, one level down."""
        cached = self._resolved.get(path)
        if cached is not None:
            return cached
        found: list[str] = []
        for target in self._direct_imports(path):
            through = self._direct_imports(target) if target not in self._defining else []
            for real in through or [target]:
                if real != path and real not in found:
                    found.append(real)
        self._resolved[path] = found
        return found

    def _direct_imports(self, path: str) -> list[str]:
        found: list[str] = []
        specs = self._imports_of.get(path, [])
        for spec in specs:
            if _DOTS_ONLY.fullmatch(spec) and self._modules_only(path, spec, specs):
                continue  # ``from . import nodes``: jinja's package ``__init__`` is not used
            targets = self.resolve_import(path, spec)
            if _DOTS_ONLY.fullmatch(spec):
                # ``from . import typing`` names the module ``.typing`` (its own spec), not
                # everything the package's ``__init__`` of imports re-exports (flask's).
                targets = [t for t in targets if t in self._defining or not self._imports_of[t]]
            for target in targets:
                if target != path and target not in found:
                    found.append(target)
        return found

    def _modules_only(self, path: str, package: str, specs: list[str]) -> bool:
        """Every name imported from ``package`` (``.`` or ``..``) is a module of it: its
        ``__init__`` holds none of them."""
        names = [s for s in specs if s.startswith(package) and s[len(package):].isidentifier()]
        return bool(names) and all(self.resolve_import(path, name) for name in names)

    def resolve_import(self, from_path: str, spec: str) -> list[str]:
        """Indexed files an import names; [] when it names none unambiguously. A Rust ``use``
        names items in modules (``crate::error::Error``): their modules' files; a C
        header (``"util.h"``) is looked for beside the including file first."""
        spec = spec.strip()
        if from_path.endswith(".go"):
            return self._go_package(spec)
        if from_path.endswith(".rs"):
            return self._rust_files(from_path, spec)
        if _C_FAMILY.search(from_path) and "::" in spec and not self._cpp_local(spec):
            return []
        if from_path.endswith((".py", ".pyi")) and not spec.startswith(".") and "." in spec \
                and spec.split(".")[0] not in self._names:
            return []  # ``importlib.metadata``: a package the repository does not hold
        parts = self._import_parts(from_path, _without_extension(spec))
        found = []
        if _HEADER.search(spec) and not spec.startswith("."):  # "util.h": beside the file first
            found = self._files_named(self._import_parts(from_path, "./" + "/".join(parts)))
        found = found or self._files_named(parts)
        if not found and "::" in spec and len(parts) > 1:
            found = self._files_named(parts[:-1])
        if _C_FAMILY.search(from_path):  # ``builtin.h``: not jq's builtin.jq beside it
            found = [f for f in found if _C_FAMILY.search(f)]
        # A type stub beside its module (``recipes.pyi``) is not what the import runs.
        return [f for f in found if not (is_stub(f) and _stem(f) in {_stem(g) for g in found
                                                                    if not is_stub(g)})]

    def _rust_files(self, from_path: str, spec: str) -> list[str]:
        """The files of this crate a Rust ``use`` tree names, each path's module's
        (``crate::{logger, Record}``: lib.rs; ``crate::kv::Source``: kv.rs or kv/mod.rs);
        another crate's (``core::num``, ``serde::de``) none, whatever file ends like it."""
        found = (module_file(from_path, path, self._imports_of) for path in use_paths(spec))
        return [path for path in dict.fromkeys(found) if path is not None]

    def _cpp_local(self, spec: str) -> bool:
        """A C++ ``using`` names this project's code when its first namespace is one the
        project defines, and never ``std`` (``using std::locale;`` is no include of fmt's
        ``std.h``): the standard library's, where a project adds only specialisations."""
        first = spec.lstrip(":").split("::", 1)[0]
        return first != "std" and self.defines_scope(first)

    def _go_package(self, spec: str) -> list[str]:
        """A Go import names a package, a directory: the standard library's (no dot in its
        first element, ``net/http``) is none of this repository's; a module path resolves to
        the directory its longest tail names (``github.com/go-chi/chi/v5/middleware`` ->
        ``middleware/``), its non-test files, when they are few."""
        parts = [p for p in spec.split("/") if p]
        if not parts or "." not in parts[0]:
            return []
        for start in range(1, len(parts)):
            files = sorted(f for f in self._dirs.get("/".join(parts[start:]), set())
                           if f.endswith(".go") and not f.endswith("_test.go")
                           and posixpath.dirname(f).endswith("/".join(parts[start:])))
            if files:
                return files if len(files) <= _MAX_PACKAGE_FILES else []
        return []

    def go_may_import(self, path: str, directory: str) -> bool:
        """Whether the Go file ``path`` may import the package in ``directory``: an import
        whose tail is a directory here names that one (``…/chi/v5/middleware``); one whose
        tail is none may name the module's root (``github.com/go-chi/chi/v5``: the module's
        path is in no file of the graph) or another module's package; the standard
        library's (``net/http``) names none of ours."""
        for spec in self._imports_of.get(path, []):
            parts = [p for p in spec.split("/") if p]
            if parts and "." in parts[0]:
                named = self._go_directories(parts)
                if not named or directory in named:
                    return True
        return False

    def _go_directories(self, parts: list[str]) -> set[str]:
        """The directories of Go files the longest tail of an import path names."""
        for start in range(1, len(parts)):
            files = self._dirs.get("/".join(parts[start:]), set())
            named = {posixpath.dirname(f) for f in files if f.endswith(".go")}
            if named:
                return named
        return set()

    def _files_named(self, parts: list[str]) -> list[str]:
        for start in range(len(parts)):
            key = "/".join(parts[start:])
            matches = self._suffixes.get(key) or set()
            tail_only = start == len(parts) - 1
            if matches and (len(matches) == 1 or (not tail_only and
                                                  len(matches) <= _MAX_IMPORT_MATCHES)):
                return sorted(matches)
            in_dir = self._dirs.get(key) or set()
            if in_dir and not tail_only and len(in_dir) <= _MAX_PACKAGE_FILES:
                return sorted(in_dir)
        return []

    @staticmethod
    def _import_parts(from_path: str, spec: str) -> list[str]:
        here = posixpath.dirname(from_path)
        if spec.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(here, spec))
            return [p for p in joined.split("/") if p not in ("", ".", "..")]
        if spec.startswith("."):  # Python relative: ".models", "..pkg.mod"
            dots = len(spec) - len(spec.lstrip("."))
            base = here
            for _ in range(dots - 1):
                base = posixpath.dirname(base)
            rest = [p for p in spec[dots:].split(".") if p]
            return [p for p in base.split("/") if p] + rest
        return [p for p in _SEPARATORS.split(spec) if p and p not in ("crate", "self", "super")]

    # -- symbols and references --------------------------------------------------------------------
    def defines_scope(self, name: str) -> bool:
        """The project defines a namespace or class ``name`` that holds definitions."""
        return name in self._scopes

    def defines_type(self, name: str) -> bool:
        """The project defines a class, interface, trait or other type ``name``, anywhere."""
        return any(self.nodes[d].kind in TYPE_KINDS for d in self._by_short.get(name, []))

    def impl_holding(self, record: ChunkRecord) -> ChunkRecord | None:
        """The Rust impl block whose lines hold ``record`` (a method of it), if one."""
        return next((impl for impl in self._impls.get(record.path, [])
                     if impl.start_line <= record.start_line <= impl.end_line), None)

    def ruby_body(self, path: str, symbol: str) -> str | None:
        """The chunk of the Ruby class or module ``symbol`` that ``path`` defines."""
        return self._ruby_bodies.get((path, symbol))

    def find(self, path: str, symbol: str) -> str | None:
        return self._by_symbol.get((path, symbol))

    def namesakes(self, path: str, symbol: str) -> list[str]:
        """The definitions of ``symbol`` in ``path``: one, or a Ruby class method and the
        instance method of its name."""
        return [d for d in self._by_short.get(own_name(symbol), [])
                if self.nodes[d].path == path and self.nodes[d].symbol == symbol]

    def node_of(self, record: ChunkRecord) -> str | None:
        """A result's node: its own chunk (one overload of several keeps its own references),
        else its name's definition in its file."""
        return record.id if record.id in self.nodes else self.find(record.path, record.symbol)

    def resolve_name(self, from_id: str, name: str) -> list[tuple[str, bool]]:
        """Definitions ``name`` refers to from chunk ``from_id``, each with whether confirmed."""
        definitions = self._by_short.get(name, [])
        if not definitions:
            return []
        source = self.nodes[from_id].path
        near_files = {source, *self.imported_files(source), *self._package_of(source)}
        near = [d for d in definitions if self.nodes[d].path in near_files and d != from_id]
        # A module-level definition of its own file shadows the namesakes of the files it
        # imports (yargs-factory's own ``Options``, not yargs-parser-types').
        if any(self.nodes[d].path == source and "." not in self.nodes[d].symbol for d in near):
            near = [d for d in near if self.nodes[d].path == source or "." in self.nodes[d].symbol]
        # A method of the caller's own class is the one it means (jinja's CodeGenerator and
        # Environment each call their own ``_filter_test_common``).
        own = [d for d in near if self._of_own_class(from_id, d)]
        # In Python a method is called through its own object or another value and a function
        # bare (rich's ``Text.truncate`` calls cells.py's ``cell_len``, not ``Text.cell_len``;
        # loguru's ``Logger.remove`` calls ``handler.stop()``, Handler's): its own methods
        # shadow nothing, and each is confirmed on its own, a function by its file, a method by
        # its class (``call_standing`` reads which form a call takes).
        # So in Ruby, where a call on a constant is that class's or module's (rack's
        # ``MediaType.params`` in ``Request::Helpers``, which has a ``params`` of its own).
        each_own = self.nodes[from_id].language in _CALLS_NAME_THEIR_RECEIVER
        if own and each_own:
            near = own + [d for d in near if d not in own]
        elif own:
            return [(d, True) for d in own]
        # A member a Java or Kotlin file imports from its class is what a bare call of its name
        # runs (javapoet's CodeWriter.emit calling ``stringLiteralWithDoubleQuotes``, imported
        # static from Util); a namesake near is then called only through a value or its class.
        imported = self._imported_members(from_id, definitions)
        if imported:
            return [(d, True) for d in imported] + \
                [(d, self._reached_surely(from_id, d)) for d in near if d not in imported]
        if near:
            surely = {d: self._reached_surely(from_id, d) for d in near}
            if not each_own:  # a bare call may be any of them: each is as sure as the least
                surely = dict.fromkeys(near, all(surely.values()))
            return list(surely.items())
        # One definition, or a Ruby class method and the instance method of its name.
        if len({(self.nodes[d].path, self.nodes[d].symbol) for d in definitions}) == 1:
            return [(d, False) for d in definitions if d != from_id]
        return []

    def _imported_members(self, from_id: str, definitions: list[str]) -> list[str]:
        """The members among ``definitions`` (methods, nested classes) that the Java or Kotlin
        file of ``from_id`` imports from their class, by name or all of them (``import static
        com.squareup.javapoet.Util.checkNotNull;``, ``….Util.*``; Kotlin's ``import
        pkg.Util.checkNotNull``; gson's ``import ….ReflectionAccessFilter.FilterResult``)."""
        caller = self.nodes[from_id]
        if caller.language not in _MEMBER_IMPORT_LANGUAGES:
            return []
        specs = [spec.split(".") for spec in self._imports_of.get(caller.path, [])]
        found = []
        for definition in definitions:
            *owner, name = self.nodes[definition].symbol.split(".")
            path = self.nodes[definition].path
            if definition != from_id and owner and \
                    any(self._names_member(parts, owner, name, path) for parts in specs):
                found.append(definition)
        return found

    def _names_member(self, parts: list[str], owner: list[str], name: str, path: str) -> bool:
        """An import (``parts``: its names) names the member ``name`` of the class ``owner``
        (``["Outer", "Inner"]`` for a nested one) defined in ``path``, or all its members
        (``*``): a package, the class's names, the member's; package and top-level class the
        file's path (``com/squareup/javapoet/Util``), so a namesake class elsewhere is not it."""
        package_end = len(parts) - 1 - len(owner)
        return package_end > 0 and parts[-1] in (name, "*") and \
            parts[package_end:-1] == owner and \
            path in self._suffixes.get("/".join(parts[:package_end + 1]), set())

    def _package_of(self, path: str) -> set[str]:
        """The files a Go, Java, Kotlin, C# or PHP file sees without an import: its
        directory's of its language (jsoup's HtmlTreeBuilderState calls HtmlTreeBuilder's
        methods, league/csv's Reader ``ResultSet::from``); a JVM package's over its source
        sets (okio's commonMain and jvmMain, a Java test's main code: ``tree.package_key``)."""
        package = package_seen(path)
        return self._packages.get(package, set()) if package is not None else set()

    def _reached_surely(self, from_id: str, definition: str) -> bool:
        """A module-level definition is sure by file; a method only from its own class or
        from code that names the class."""
        owner, dot, _name = self.nodes[definition].symbol.rpartition(".")
        if not dot:
            return True
        return self._of_own_class(from_id, definition) or \
            own_name(owner) in self.nodes[from_id].references or \
            self.extends_owner(from_id, definition)

    def extends_owner(self, from_id: str, definition: str) -> bool:
        """The class ``from_id`` is a member of extends ``definition``'s class, by its
        signature (itsdangerous' ``super().unsign`` in ``class TimestampSigner(Signer)``)."""
        owner = self.nodes[definition].symbol.rpartition(".")[0]
        caller = self.nodes[from_id]
        its_class = self._by_symbol.get((caller.path, caller.symbol.rpartition(".")[0]))
        if not owner or its_class is None:
            return False
        its = self.nodes[its_class]
        bases = its.signature.split(own_name(its.symbol), 1)[-1]
        return re.search(rf"\b{re.escape(own_name(owner))}\b", bases) is not None

    def _of_own_class(self, from_id: str, definition: str) -> bool:
        """``definition`` is a member of the class ``from_id`` is a member of."""
        owner, dot, _name = self.nodes[definition].symbol.rpartition(".")
        caller = self.nodes[from_id]
        return bool(dot) and caller.path == self.nodes[definition].path and \
            caller.symbol.startswith(owner + ".")

    def callees(self, node_id: str) -> list[Edge]:
        edges: list[Edge] = []
        for name in self.nodes[node_id].references:
            edges.extend(Edge(node_id, target, confirmed)
                         for target, confirmed in self.resolve_name(node_id, name))
        return edges

    def callers(self, node_id: str) -> list[Edge]:
        """Chunks that refer to the node's name and resolve it to the node; a name resolves
        to its first definition in a file, so an overload's callers are its name's (a Ruby
        class method's and the instance method's of its name are each their own)."""
        node = self.nodes[node_id]
        name = own_name(node.symbol)
        named = node_id if node_id in self._by_short.get(name, ()) else \
            self._by_symbol.get((node.path, node.symbol), node_id)
        edges: list[Edge] = []
        for caller in self._refs_by_name.get(name, []):
            if caller in (node_id, named):
                continue
            targets = dict(self.resolve_name(caller, name))
            if named in targets:
                edges.append(Edge(caller, node_id, targets[named]))
        return edges

    def type_definitions(self, names: Iterable[str], near_path: str,
                         qualified: Mapping[str, str] | None = None) -> list[str]:
        """Chunks defining types named in ``names`` (resolved as references from ``near_path``);
        a name ``qualified`` by its module (``nodes.Template``: ``{"Template": "nodes"}``) is
        that module's, not every near file's (jinja's ``environment.Template``)."""
        near_files = {near_path, *self.imported_files(near_path)}
        found: list[str] = []
        for name in dict.fromkeys(names):
            definitions = [d for d in self._by_short.get(name, [])
                           if self.nodes[d].kind in TYPE_KINDS]
            near = [d for d in definitions if self.nodes[d].path in near_files]
            # A module of that name near (Ruby's ``Queues.delete_for``) is what it names, not
            # the one class of that name far away.
            module_near = bool(self._modules.get(name, set()) & near_files)
            chosen = near or (definitions if len(definitions) == 1 and not module_near else [])
            module = (qualified or {}).get(name)
            if module is not None:
                chosen = [d for d in definitions
                          if module_name(self.nodes[d].path) == module.lower()] or chosen
            found.extend(d for d in chosen if d not in found)
        return found

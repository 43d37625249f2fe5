"""Whether an edge of the symbol graph is a call the caller's code makes (SPEC §7).

The graph knows names only, confirmed by file and class; where that is not enough the caller's
code today is read for the form of the call (``core/call_forms.py``): through its own receiver,
through a value, bare.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from freshmark.core.call_forms import (
    any_call,
    bound_from_own_object,
    calls_only_through_own_receiver,
    calls_through_own_receiver,
    go_call_reaches,
    go_called_through_a_value,
    go_package_names,
    js_calls_only_through_globals,
    named_after,
    own_methods_binding,
    python_base_names,
    python_receivers,
    qualifiers_of,
    receivers_of,
    rust_aliases,
    rust_call_paths,
    types_binding,
    used_on_own_object,
    used_only_as_object,
    used_through_a_value_of,
)
from freshmark.core.lineage import lineage
from freshmark.core.stamp import ChunkRecord, own_name
from freshmark.core.tree import module_name
from freshmark.services.context.php_calls import PhpCalls
from freshmark.services.context.ruby_calls import RubyCalls
from freshmark.services.context.symbol_graph import TYPE_KINDS, Edge, SymbolGraph

# Languages whose methods call a method of their own class through a receiver (``self.parse``,
# ``this.parse``, ``Self::parse``, ``$this->parse``): a bare ``parse(...)`` there is a function
# or a parameter of that name, not the method.
_RECEIVER_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "rust", "php"})
# Languages whose methods call their own class's bare (``help(for: key)``): through another
# value (``$0.help``), a member of that value's is read.
_IMPLICIT_SELF_LANGUAGES = frozenset({"swift", "kotlin", "java", "csharp"})
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
# Languages where a module's function is called bare or through its module (``cells.cell_len``,
# ``tools.stringify``): through another value, only a method of its name matched.
_MODULE_LANGUAGES = _JS_LANGUAGES | {"python"}


class CallStanding:
    """``standing(edge)``: the edge's standing judged by the caller's code today, which
    ``code_today`` reads (None when the caller is not there today), and by the files a PHP
    call names a function or class from, which ``file_today`` reads by path."""

    def __init__(self, graph: SymbolGraph,
                 code_today: Callable[[ChunkRecord], str | None],
                 file_today: Callable[[str], str | None] = lambda _path: None) -> None:
        self.graph = graph
        self._code_today = code_today
        self._codes: dict[str, str | None] = {}  # per caller: its code, read once
        self._lineages: dict[str, list[str]] = {}  # per class: it and its bases, in order
        self._defining: dict[tuple[str, str], int] = {}  # per caller and name: lineages
        self._ruby = RubyCalls(graph, self._code)
        self._php = PhpCalls(graph, self._code, file_today)

    def _code(self, caller: ChunkRecord) -> str | None:
        if caller.id not in self._codes:
            self._codes[caller.id] = self._code_today(caller)
        return self._codes[caller.id]

    def __call__(self, edge: Edge) -> bool | None:
        """Whether a call is graph-confirmed (True) or its name alone matched (False), unless
        the caller's code today says more: None when it surely makes no such call (Go's form
        of the call, ``call_reaches``); the name alone matched a method of the caller's own
        class it does not call through its receiver (tomlkit's ``parse``, not ``self.parse``)."""
        reaches = self.call_reaches(edge)
        if reaches is False or not edge.confirmed and \
                re.fullmatch(r"__\w+__", own_name(self.graph.nodes[edge.callee].symbol)):
            return None  # ``super().__init__()``: every class has one, the name tells nothing
        return self._confirmed(edge, reaches)

    def _confirmed(self, edge: Edge, reaches: bool | None) -> bool:
        """The standing with the edge's ``call_reaches`` already judged, not False."""
        if reaches is not None:
            return reaches
        caller, callee = self.graph.nodes[edge.caller], self.graph.nodes[edge.callee]
        owner, dot, name = callee.symbol.rpartition(".")
        own_class = bool(dot) and caller.symbol.startswith(owner + ".")
        if not edge.confirmed or caller.language == "go" and (
                own_class or not go_called_through_a_value(self._code(caller) or "", name)):
            # Its own type's method called through a value not its receiver (bubbletea's
            # ``wg.Wait()`` in a Program method): which type's, the name alone cannot tell;
            # nor whose a selector only read is (``r.URL.Path``, a field as often).
            return False
        if dot and not own_class and caller.language in _MODULE_LANGUAGES and \
                not self.graph.extends_owner(edge.caller, edge.callee):
            # Confirmed by naming the class: ``Request(scope, receive=self.receive)`` hands on
            # its own object's ``receive``, ``sys.stdout.write`` is no ``tqdm.write``.
            code = self._code(caller)
            return code is None or used_through_a_value_of(code, name, own_name(owner))
        if own_class and caller.language in _IMPLICIT_SELF_LANGUAGES:
            code = self._code(caller)
            return code is None or used_on_own_object(code, name, own_name(owner))
        if dot and caller.language == "ruby" and callee.kind == "method":
            # Through another value (``dup.transform_keys!``, ``env.each``) any class's
            # method of that name: its class's only where that value was bound on a line
            # naming the class (``auth = Request.new(env)``).
            code = self._code(caller)
            return code is None or self._ruby.confirmed(code, caller, callee)
        if own_class and caller.path == callee.path and caller.language in _RECEIVER_LANGUAGES:
            code = self._code(caller)
            return code is not None and \
                calls_through_own_receiver(code, name, self._receivers(caller))
        if not dot and caller.language in _MODULE_LANGUAGES:
            code = self._code(caller)
            return code is None or _calls_a_function(receivers_of(code, name), callee.path)
        return True

    def call_reaches(self, edge: Edge) -> bool | None:
        """Whether the caller's code today calls the callee, surely (True), not at all (False)
        or maybe (None: the name alone, or no code today). In Go, by its form: a function of
        the caller's package bare, a method through a value, through the caller's own
        receiver its own type's (logrus's ``entry.WithField`` in an ``Entry`` method). Where
        methods are called through a receiver, a module-level function is never called as
        ``self.name`` (flask's ``self.make_response`` is ``Flask``'s, not helpers'). Go's
        unexported names are never another package's to call, nor are any from a file that
        does not import that package; its methods are called there through a value too.
        A Python method is never called bare: ``cell_len(…)`` in rich's ``Lines.justify`` is
        the function cells.py defines, not ``Text.cell_len``. A C++ name always written with
        a scope (``std::system_error``, ``detail::write``) is none of another scope's. A PHP
        method by what each call is written through (``php_calls.PhpCalls``), and so a Rust
        definition (``_rust_use_reaches``) and a Ruby method (``ruby_calls``)."""
        caller, callee = self.graph.nodes[edge.caller], self.graph.nodes[edge.callee]
        owner, _, name = callee.symbol.rpartition(".")
        same_package = posixpath.dirname(caller.path) == posixpath.dirname(callee.path)
        if caller.language == "go" and not same_package and not (
                name[:1].isupper() and self.graph.go_may_import(
                    caller.path, posixpath.dirname(callee.path))):
            # Go exports only capitalised names, and a file reaches another package's only
            # where it imports it (middleware's ``h.Get`` is ``http.Header``'s, not a Mux's).
            return False
        go = caller.language == "go" and (same_package or bool(owner))
        receiver = caller.language in _RECEIVER_LANGUAGES and not owner
        python_method = caller.language == "python" and callee.kind == "method"
        cpp, rust = caller.language == "cpp", caller.language == "rust"
        php_method = caller.language == "php" and bool(owner) and callee.kind == "method"
        ruby_method = caller.language == "ruby" and bool(owner) and callee.kind == "method"
        code = self._code(caller) if go or receiver or python_method or cpp or php_method \
            or rust or ruby_method else None
        if code is None:
            return None
        if caller.language == callee.language == "php" and callee.kind == "function":
            return self._php.function_reaches(code, name, callee)
        if ruby_method:
            return self._ruby.reaches(code, caller, callee)
        if rust:
            return self._rust_reaches(code, name, caller, callee)
        if go:  # another package's type is never the caller's own receiver's
            return go_call_reaches(code, name, callee_owner=owner,
                                   caller_owner=caller.symbol.rpartition(".")[0]
                                   if same_package else "",
                                   packages=go_package_names(caller.imports))
        if python_method:
            return self._python_method_reaches(code, name, caller, callee)
        if php_method:
            return self._php.method_reaches(code, name, caller, callee)
        if cpp:
            scopes = qualifiers_of(code, name, declared=own_name(caller.symbol) == name)
            return False if scopes and "" not in scopes and \
                not any(self._in_scope(scope, callee) for scope in scopes) else None
        return self._module_name_reaches(code, name, caller, callee)

    def _rust_reaches(self, code: str, name: str, caller: ChunkRecord,
                      callee: ChunkRecord) -> bool | None:
        """Whether Rust ``code`` calls ``callee``: surely where one of its uses reaches it,
        not at all where none can (``_rust_use_reaches``)."""
        # A file's imports are its every module's (log's ``use value_bag::ValueBag as Inner``
        # in one ``mod inner``, ``enum Inner`` in another): a name or the item it aliases.
        aliases = rust_aliases(caller.imports)
        reached = {self._rust_use_reaches(written, caller, callee)
                   for form in rust_call_paths(code, name)
                   for written in {form, aliases.get(form, form)}}
        return any_call(reached)

    def _rust_use_reaches(self, form: str, caller: ChunkRecord,
                          callee: ChunkRecord) -> bool | None:
        """Whether a Rust use written ``form`` (``rust_call_paths``) reaches ``callee``. A
        function (a type, a constant) of a module never through a value (``x.name()`` calls
        a method) nor on a type (``Vec::new``, ``Level::Error``: a type's own). A method:
        ``Type::name`` only ``Type``'s (RecordBuilder's ``Metadata::builder()`` is no
        ``Record.builder``), where ``Type`` is no trait it implements; ``Self::name`` and
        ``self.name`` the caller's own type's; bare, never; through another value, maybe.
        Where the method is a trait's own (a default) or of a type the project does not
        define (a blanket ``impl<T> … for T``), or the caller is a trait's, any type's
        may run it: maybe."""
        if callee.kind != "method":
            return False if form in (".", "self.") or form[:1].isupper() else None
        if form in ("", "."):
            return False if form == "" else None
        type_name = callee.symbol.split(".")[-2]
        if form in ("Self", "self."):
            its_type = caller.symbol.split(".")[-2] if caller.kind == "method" else ""
            if its_type == type_name:
                return True
            if not its_type or self._rust_open(its_type, caller.path):
                return None
        elif form == type_name:
            return True
        elif form == self._rust_trait_of(callee) or self._rust_kinds(form, caller.path) & \
                {"trait", "type"}:
            return None  # a trait's call runs the implementor's; an alias names any type
        return None if self._rust_open(type_name, callee.path) else False

    def _rust_kinds(self, name: str, near_path: str) -> set[str]:
        return {self.graph.nodes[d].kind for d in self.graph.type_definitions([name], near_path)}

    def _rust_open(self, type_name: str, near_path: str) -> bool:
        """``type_name`` is a trait, an alias or no type the project defines (a generic
        ``T``, ``Box``): a call on another type may reach its methods."""
        kinds = self._rust_kinds(type_name, near_path)
        return not kinds or bool(kinds & {"trait", "type"})

    def _rust_trait_of(self, method: ChunkRecord) -> str | None:
        """The trait the impl holding a Rust ``method`` implements (``Display`` of ``impl
        fmt.Display for Level``), None in an inherent impl."""
        impl = self.graph.impl_holding(method)
        trait = re.search(r"\bimpl\s+([\w.]+)\S*\s+for\s", impl.symbol) if impl else None
        return own_name(trait.group(1)) if trait else None

    def _receivers(self, caller: ChunkRecord) -> frozenset[str]:
        """What a Python method calls its own object by (``self``, loguru's ``__self``)."""
        if caller.language != "python" or caller.kind != "method":
            return frozenset()
        return python_receivers(self._code(caller) or "")

    def _python_method_reaches(self, code: str, name: str, caller: ChunkRecord,
                               callee: ChunkRecord) -> bool | None:
        """Whether Python ``code`` calls the method ``callee``: never bare; its own class's
        only through its own object (its first parameter, loguru's ``__self``), the class, a
        value bound to it or one a method of its own object returns (``new = self.copy()``),
        so loguru's ``handler.stop()`` in ``Logger.remove`` is no ``Logger.stop``; another
        class's never through its own object where its own class defines the name
        (``self.stop()`` is its own, whatever class beside it has a ``stop``). Through other
        values, ``_through_values``."""
        used = receivers_of(code, name)
        if used == {""}:
            return False
        values, own = used - {""}, self._receivers(caller)
        if not values:
            return None
        owner = callee.symbol.rpartition(".")[0]
        if own and caller.path == callee.path and caller.symbol.startswith(owner + "."):
            through_others = all(v.isidentifier() and v not in own and
                                 not bound_from_own_object(code, v, own) for v in values)
            return False if through_others and \
                not used_through_a_value_of(code, name, own_name(owner)) else None
        its_class = caller.symbol.rpartition(".")[0]
        defines = self.graph.find(caller.path, f"{its_class}.{name}") is not None
        if own and defines and values <= own:
            return False
        return self._through_values(code, name, values, caller, callee) \
            if values.isdisjoint(own) else None

    def _through_values(self, code: str, name: str, values: set[str], caller: ChunkRecord,
                        callee: ChunkRecord) -> bool | None:
        """Whether Python ``code`` calling the method ``callee`` through ``values`` only, none
        its own object, calls it: surely where one is bound to its class, a class it extends
        or one extending it (``decoder: ContentDecoder`` runs GZipDecoder's ``decode`` as
        well), by what the code binds it to or, of what a method of its own object returns,
        that method's return annotation (httpx's ``decoder = self._get_content_decoder()``);
        not where each is bound to another class (``decoder = TextDecoder(…)``). A value
        bound to none may be any class's where it is named as the callee's class is
        (``headers.get``: Headers'), and so where the caller names the class; otherwise
        it is no call where classes of several lineages near the caller define the name
        (``url.netloc.decode("ascii")`` calls bytes', none of eleven ``decode`` methods)."""
        lineage = self._lineage(self.graph.find(callee.path, callee.symbol.rpartition(".")[0]))
        owner = own_name(callee.symbol.rpartition(".")[0])
        if used_through_a_value_of(code, name, owner):
            return True
        own, unbound = self._receivers(caller), False
        for value in values:
            # A protocol's value is of any class with its methods, none it names.
            bound = {found for word in types_binding(code, value) | {
                returned for method in own_methods_binding(code, value, own)
                for returned in self._returned_names(caller, method)}
                for found in self.graph.type_definitions([word], caller.path)
                if "Protocol" not in python_base_names(self.graph.nodes[found].signature, word)}
            if any(owner in self._lineage(cls) or own_name(self.graph.nodes[cls].symbol)
                   in lineage for cls in bound):
                return True
            unbound = unbound or not bound
        if not unbound:
            return False
        if any(named_after(value, cls) for value in values for cls in lineage) or \
                set(lineage) & set(caller.references) or \
                self.graph.extends_owner(caller.id, callee.id):
            return None
        return False if self._lineages_defining(caller, name) > 1 else None

    def _returned_names(self, caller: ChunkRecord, method: str) -> set[str]:
        """The names the return annotation of the caller's own class's ``method`` holds."""
        found = self.graph.find(caller.path, f"{caller.symbol.rpartition('.')[0]}.{method}")
        signature = self.graph.nodes[found].signature if found is not None else ""
        return set(re.findall(r"\w+", signature.partition("->")[2]))

    def _lineage(self, class_id: str | None) -> list[str]:
        """The names of a Python class and of the project's classes it extends, by their
        signatures (``class GZipDecoder(ContentDecoder)``), nearest first."""
        if class_id is None:
            return []
        if class_id not in self._lineages:
            self._lineages[class_id] = lineage(class_id, self._bases_of)
        return [own_name(self.graph.nodes[cls].symbol) for cls in self._lineages[class_id]]

    def _bases_of(self, class_id: str) -> list[str]:
        """The project's classes a Python class's signature names as its bases."""
        cls = self.graph.nodes[class_id]
        return [found for base in python_base_names(cls.signature, own_name(cls.symbol))
                for found in self.graph.type_definitions([base], cls.path)]

    def _lineages_defining(self, caller: ChunkRecord, name: str) -> int:
        """How many unrelated lineages of classes (none extending another's class) define a
        method ``name`` the caller's name resolves to."""
        if (caller.id, name) not in self._defining:
            lineages: list[set[str]] = []
            for definition, _ in self.graph.resolve_name(caller.id, name):
                node = self.graph.nodes[definition]
                if node.kind == "method":
                    owner = node.symbol.rpartition(".")[0]
                    lineage = set(self._lineage(self.graph.find(node.path, owner))) or {owner}
                    joined = [known for known in lineages if known & lineage]
                    lineages = [known for known in lineages if not known & lineage] + \
                        [lineage.union(*joined)]
            self._defining[(caller.id, name)] = len(lineages)
        return self._defining[(caller.id, name)]

    def _module_name_reaches(self, code: str, name: str, caller: ChunkRecord,
                             callee: ChunkRecord) -> bool | None:
        """Whether ``code`` calls the module-level ``callee``: not where it uses the name only
        through its own receiver (``this.name``), and in JavaScript not where only through the
        runtime's objects (``JSON.stringify``) nor as an object (``pino.destination(…)`` calls
        no function ``pino``). A class's static member is a use of the class, and so is one
        of a capitalised function, a constructor by convention (``AxiosError.from(…)``)."""
        if caller.language in _JS_LANGUAGES and (
                js_calls_only_through_globals(code, name) or
                callee.kind not in TYPE_KINDS and not name[:1].isupper() and
                used_only_as_object(code, name)):
            return False
        return False if calls_only_through_own_receiver(code, name, self._receivers(caller)) \
            else None

    def _in_scope(self, scope: str, callee: ChunkRecord) -> bool:
        """A C++ name written ``scope::name`` may be ``callee``: a member of that namespace
        or class, or a definition of no scope we know (fmt's ``FMT_BEGIN_NAMESPACE`` hides
        its namespace) when the project defines that scope. ``std::`` names the standard
        library, where a project adds only specialisations: only its own ``std`` members."""
        owners = callee.symbol.split(".")[:-1]
        return scope in owners or \
            not owners and scope != "std" and self.graph.defines_scope(scope)


def _calls_a_function(receivers: set[str], path: str) -> bool:
    """Python or JavaScript code using a name through ``receivers`` (``receivers_of``) calls
    the function of that name ``path`` defines: bare, or through its module (``cells.cell_len``,
    ``tools.stringify``); through a value only (``repo.save()``), the name matched a method's
    call, not the function's."""
    return not receivers or "" in receivers or \
        module_name(path) in {receiver.lower() for receiver in receivers}

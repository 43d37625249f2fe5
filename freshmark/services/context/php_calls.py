"""Whether a PHP call reaches a definition of the symbol graph, by what it is written
through (``call_standing``'s PHP part, SPEC §7).

PHP writes a method's call after ``$this->``, ``parent::``, a class (``Utils::``) or another
value, and a function's bare or after a namespace (``\\json_decode``: the global one). The
graph resolves names only; the caller's code today tells which form each call takes
(``php_calls.php_call_receivers``), and the files today which namespace a function is in and
which classes a file renames by ``use … as``.
"""

from __future__ import annotations

from collections.abc import Callable

from freshmark.core.call_forms import any_call
from freshmark.core.lineage import lineage
from freshmark.core.php_calls import (
    php_base_name,
    php_call_receivers,
    php_member_types,
    php_namespace_at,
    php_use_aliases,
)
from freshmark.core.stamp import ChunkRecord
from freshmark.services.context.symbol_graph import SymbolGraph

# Kinds of a PHP type whose methods are its own or inherited, never mixed in (a trait's are).
_CLASS_KINDS = frozenset({"class", "enum"})


class PhpCalls:
    """PHP calls judged against one branch's graph; ``code_of`` reads a definition's code
    today, ``file_today`` a file's text today (None when either is gone)."""

    def __init__(self, graph: SymbolGraph, code_of: Callable[[ChunkRecord], str | None],
                 file_today: Callable[[str], str | None]) -> None:
        self.graph = graph
        self._code_of = code_of
        self._file_today = file_today
        self._namespaces: dict[str, str | None] = {}  # per function: its namespace today
        self._aliases: dict[str, dict[str, str]] = {}  # per file: the classes it renames
        self._lineages: dict[str, list[str]] = {}  # per class: it and its bases, in order

    def method_reaches(self, code: str, name: str, caller: ChunkRecord,
                            callee: ChunkRecord) -> bool | None:
        """Whether PHP ``code`` calls the method ``callee``: surely where one of its calls
        reaches it, not at all where none can (``_call_reaches``)."""
        reached = {self._call_reaches(form, name, caller, callee)
                   for form in php_call_receivers(code, name)}
        return any_call(reached)

    def _call_reaches(self, form: str, name: str, caller: ChunkRecord,
                          callee: ChunkRecord) -> bool | None:
        """Whether a PHP call of ``name`` written ``form`` (``php_call_receivers``) reaches
        the method ``callee``. Bare or after a namespace (``\\count($args)``: a function's
        call), never: a method has a receiver. ``parent::name`` reaches
        the first of the caller's class's bases to define it (monolog's FleepHookHandler,
        a SocketHandler, calls no StreamHandler.write); ``$this->``, ``self::`` and
        ``static::`` its own class's or a base's; ``Utils::name`` that class's or a base's,
        and never where the project defines no type so named (nor renames one so: guzzle's
        ``Psr7\\UriResolver::resolve`` is no HandlerStack.resolve); ``$this->socket->name``
        its member's declared class's (SyslogUdpHandler's UdpSocket), else never the own
        class's. Through another value, maybe; and a subclass's override of what a call
        reaches, which runs for the subclass's objects."""
        if form == "" or form.endswith("\\"):
            return False
        if form in ("?", "->"):
            return None
        if form not in ("parent", "$this") and not form.startswith("$this->"):
            form = self._aliases_of(caller.path).get(form, form)
            if not self.graph.defines_type(form):
                return False
        its_class = self.graph.find(caller.path, caller.symbol.rpartition(".")[0])
        callee_class = self.graph.find(callee.path, callee.symbol.rpartition(".")[0])
        if its_class is None or callee_class is None or \
                self.graph.nodes[callee_class].kind not in _CLASS_KINDS:
            return None
        lineage = self._called_on(form, its_class, caller.path)
        if not lineage and form.startswith("$this->"):
            # A member of no class it can tell holds another object, of any class: a base's
            # subclass's too (BufferHandler's wrapped handler), but not its own.
            return False if callee_class == its_class else None
        target = next((found for cls in lineage if (found := self.graph.find(
            self.graph.nodes[cls].path, f"{self.graph.nodes[cls].symbol}.{name}"))), None)
        if target is None:  # a trait's, or a class's outside the project: the name alone
            return None
        if target == self.graph.find(callee.path, callee.symbol):
            return True
        # An override in a subclass of the class called on runs for the subclass's objects;
        # ``parent::`` binds to the base's, whatever the object.
        overridden = form != "parent" and lineage[0] in self._lineage(callee_class)
        return None if overridden else False

    def _aliases_of(self, path: str) -> dict[str, str]:
        """The classes the PHP file ``path`` renames by ``use … as``, read once."""
        if path not in self._aliases:
            self._aliases[path] = php_use_aliases(self._file_today(path) or "")
        return self._aliases[path]

    def function_reaches(self, code: str, name: str, callee: ChunkRecord) -> bool | None:
        """Whether PHP ``code`` calls the function ``callee``: never through a value or a
        class (a method's call); written ``\\name(…)`` only a function of the global
        namespace, ``\\Ns\\name(…)`` only one of ``Ns`` (guzzle's ``\\json_decode`` in
        Utils.jsonDecode is PHP's, not functions.php's ``GuzzleHttp\\json_decode``); bare or
        relative to its file's namespace (``Psr7\\name``), maybe."""
        if callee.id not in self._namespaces:
            text = self._file_today(callee.path)
            self._namespaces[callee.id] = None if text is None \
                else php_namespace_at(text, callee.start_line)
        namespace = self._namespaces[callee.id]
        return any_call({_namespace_reaches(form, namespace)
                          for form in php_call_receivers(code, name)})

    def _called_on(self, form: str, its_class: str, path: str) -> list[str]:
        """The lineage of the class whose method (its first to define it) a PHP call written
        ``form`` runs, from the caller's class ``its_class`` in ``path``; [] where it cannot
        tell."""
        if form == "parent":
            return self._lineage(its_class)[1:]
        if form == "$this":
            return self._lineage(its_class)
        if form.startswith("$this->"):
            named = self._member_class(its_class, form[len("$this->"):])
        else:
            named = self._class_named(form, path)
        return self._lineage(named) if named is not None else []

    def _lineage(self, class_id: str) -> list[str]:
        """A PHP class and the project's classes it extends, nearest first, as far as its
        bases are found by name (one class of that name, ``type_definitions``)."""
        if class_id not in self._lineages:
            self._lineages[class_id] = lineage(class_id, self._base_of)
        return self._lineages[class_id]

    def _base_of(self, class_id: str) -> list[str]:
        """The class a PHP class ``extends``, where the project defines one of that name."""
        cls = self.graph.nodes[class_id]
        base = php_base_name(cls.signature)
        found = self._class_named(base, cls.path) if base else None
        return [found] if found is not None else []

    def _member_class(self, class_id: str, member: str) -> str | None:
        """The project's class a PHP class gives its property ``member`` (``protected
        UdpSocket $socket``), where it gives one: not for an interface nor a class from
        elsewhere, whose objects may be of any of the project's classes."""
        code = self._code_of(self.graph.nodes[class_id])
        types = php_member_types(code or "", member)
        path = self.graph.nodes[class_id].path
        return self._class_named(types.pop(), path) if len(types) == 1 else None

    def _class_named(self, name: str, near_path: str) -> str | None:
        """The one PHP class or enum ``name`` names from ``near_path``, if one."""
        found = [d for d in self.graph.type_definitions([name], near_path)
                 if self.graph.nodes[d].kind in _CLASS_KINDS]
        return found[0] if len(found) == 1 else None


def _namespace_reaches(form: str, namespace: str | None) -> bool | None:
    """Whether a PHP call written ``form`` (``php_call_receivers``) may reach a function of
    ``namespace`` ("" the global one, None not known)."""
    if form in ("", "?") or form.endswith("\\") and not form.startswith("\\"):
        return None  # the file's namespace's function, or else the global one
    if not form.endswith("\\"):
        return False  # a method's call, through a value or a class
    return None if namespace is None or form.strip("\\").lower() == namespace.lower() \
        else False

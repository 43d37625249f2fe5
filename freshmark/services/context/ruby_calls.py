"""Whether a Ruby call reaches a method of the symbol graph, by what it is written through
(``call_standing``'s Ruby part, SPEC §7).

Ruby calls its own object's methods bare or on ``self``, a class's or a module's on the
constant naming it (``MediaType.params``, ``Rack::Utils.escape``), and anything else on a
value, whose class the code rarely says. The graph resolves names only; the caller's code
today tells which of these forms each call takes (``call_forms.ruby_call_receivers``).
"""

from __future__ import annotations

import re

from freshmark.core.call_forms import ruby_bound_to, ruby_call_receivers
from freshmark.core.stamp import ChunkRecord, own_name
from freshmark.services.context.symbol_graph import SymbolGraph


class RubyCalls:
    """Ruby calls judged against one branch's graph."""

    def __init__(self, graph: SymbolGraph) -> None:
        self.graph = graph

    def reaches(self, code: str, caller: ChunkRecord, callee: ChunkRecord) -> bool | None:
        """Whether Ruby ``code`` calls the method ``callee``: surely where one of its calls
        reaches it (True), not at all where none can (False), else maybe (None)."""
        name = own_name(callee.symbol)
        reached = {self._call_reaches(form, name, caller, callee)
                   for form in _forms(code, name, caller)}
        return True if True in reached else False if reached == {False} else None

    def confirmed(self, code: str, caller: ChunkRecord, callee: ChunkRecord) -> bool:
        """Whether a call ``reaches`` left open is the graph's to confirm: one bare or on
        ``self`` (a base's or a mixin's method), on the callee's class or on a value bound
        on a line naming that class (``auth = Request.new(env)``). Through another value
        only (``dup.transform_keys!``, ``env.each``) the name matched any class's method:
        its own class's, a base's or another's."""
        owner = callee.symbol.rpartition(".")[0]
        forms = _forms(code, own_name(callee.symbol), caller)
        own = _self_class(caller) == owner
        return bool(forms & {"", "self"}) or any(
            self._names_class(form.removesuffix(".new"), owner, caller.path)
            if form[:1].isupper() else
            _variable(form) and ruby_bound_to(code, form, own_name(owner), own=own)
            for form in forms)

    def _call_reaches(self, form: str, name: str, caller: ChunkRecord,
                      callee: ChunkRecord) -> bool | None:
        """Whether a Ruby call of ``name`` written ``form`` (``_forms``) reaches the method
        ``callee``. Bare or on ``self``: its own class's method (rack's
        ``Request::Helpers#POST`` for ``self.POST`` in ``#params``), and where its own class
        defines the name, no other class's. On a constant: that class's or module's, or a
        base's of that class (``MediaType.params`` in ``Helpers#media_type_params`` is
        ``MediaType``'s, not its own class's ``params``), and so on an object it just made
        (``Generator.new(params).dump``), never another class's; which class of that name,
        the graph tells by the files (rack-protection's ``Request`` is not Sinatra's). A
        constant in capitals that the project defines nothing in may hold any value
        (``DEFAULT.parse``). Through another value, maybe."""
        owner = callee.symbol.rpartition(".")[0]
        its_class = _self_class(caller)
        if form in ("", "self"):
            if its_class == owner:
                return True
            defines = its_class and self.graph.find(caller.path, f"{its_class}.{name}")
            return False if defines else None
        constant = form.removesuffix(".new")
        if not form[:1].isupper() or \
                constant.isupper() and not self.graph.defines_scope(constant):
            return None
        return None if self._names_class(constant, owner, caller.path) else False

    def _names_class(self, constant: str, owner: str, near_path: str) -> bool:
        """A Ruby constant names the class ``owner`` by its own name, or a class of the
        project's that extends it (sinatra's ``class Application < Base``:
        ``Application.run!`` runs ``Base``'s)."""
        name = own_name(owner)
        base = re.compile(rf"<\s*(?:\w+::)*{re.escape(name)}\b")
        return constant == name or any(
            base.search(self.graph.nodes[d].signature)
            for d in self.graph.type_definitions([constant], near_path))


def _forms(code: str, name: str, caller: ChunkRecord) -> set[str]:
    """How Ruby ``code`` calls ``name`` (``ruby_call_receivers``), its own class named by its
    name (``self.class.parse``: ``Parser``; ``new(io).parse``: ``Parser.new``)."""
    its_name = own_name(_self_class(caller) or "")
    own = {"self.class": its_name or ".", ".new": f"{its_name}.new" if its_name else "."}
    return {own.get(form, form) for form in ruby_call_receivers(code, name)}


def _self_class(caller: ChunkRecord) -> str | None:
    """The class or module whose object ``self`` is in a Ruby caller: a method's owner; a
    class's or a module's body, its own; None at a file's top level."""
    if caller.kind == "method":
        return caller.symbol.rpartition(".")[0] or None
    return caller.symbol if caller.kind in ("class", "module") else None


def _variable(form: str) -> bool:
    """A Ruby call's receiver (``ruby_call_receivers``) is a variable: ``auth``, ``@parser``."""
    return form != "self" and (form[:1] == "@" or form[:1].islower())

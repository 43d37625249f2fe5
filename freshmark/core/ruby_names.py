"""How a query writes a Ruby method, as Ruby's documentation does: with its class
(``Parser.parse`` or ``Parser::parse`` for the class method, ``Parser#parse`` for the instance
method), and by a name a word does not hold, a setter's (``content_type=``) or an operator's
(``[]=``, ``<=>``), which a query's words and identifiers lose (pure)."""

from __future__ import annotations

import re

# A Ruby method written with its class (``Rack::Multipart::Parser.parse``, ``Parser#parse``).
_RUBY_OWNED = re.compile(r"(?:[A-Z]\w*::)*[A-Z]\w*(::|\.|#)([^\s.:#]+)")
# The methods Ruby names by an operator (``def []=(key, value)``, ``def <=>(other)``).
_OPERATOR = r"\[\]=?|<=>|===?|=~|!~|!=|\*\*|[+\-]@|<<|>>|<=|>=|[-+*/%<>!~^&|]"
_MARKED = re.compile(rf"(?:((?:[A-Z]\w*::)*[A-Z]\w*)(?:#|::|\.))?({_OPERATOR}|[A-Za-z_]\w*=)")


def ruby_class_method_asked(text: str) -> bool | None:
    """Whether a look-up writes a method as its class's (``Parser.parse``, ``Parser::parse``:
    True) or as its objects' (``Parser#parse``: False); None for one that writes no class,
    or a constant (``Multipart::Parser``)."""
    found = _RUBY_OWNED.fullmatch(text.strip())
    if found is None or found.group(1) == "::" and found.group(2)[:1].isupper():
        return None
    return found.group(1) != "#"


def ruby_marked_method(text: str) -> list[str]:
    """The symbols a look-up of a Ruby setter or operator method names (``[]=`` and
    ``Rack.Headers.[]=`` for ``Rack::Headers#[]=``, ``content_type=`` alone): the name as
    written, with its class where it is written with one; [] for any other query."""
    found = _MARKED.fullmatch(text.strip())
    if found is None:
        return []
    owner, name = found.groups()
    return [name, f"{owner.replace('::', '.')}.{name}"] if owner else [name]

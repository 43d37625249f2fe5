"""A declaration's identity as the naming rules give it (``naming.describe``), and the dotted
form of a qualified name."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node


@dataclass
class Decl:
    """A declaration's identity. ``name`` may hold dots (``Payment.Refund``) when the code
    itself names the owner; ``member_scope`` is the scope of a container's members."""

    name: str
    kind: str
    decl: Node
    body: Node | None
    member_scope: list[str] | None = None
    forced_kind: bool = False  # kind is final (a Go method is a method wherever it sits)
    signature_prefix: str = ""  # keyword the declaration node leaves out (Go grouped types)
    signature: str = ""  # set when the source text makes a poor one-line signature


_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def dotted(name: str) -> str:
    """``ns::Foo<T>::bar`` -> ``ns.Foo.bar``; ``App\\Models`` -> ``App.Models``."""
    previous = None
    while previous != name:
        previous = name
        name = _TEMPLATE_ARGS.sub("", name)
    name = name.replace("::", ".").replace("\\", ".")
    return "".join(name.split()).strip(".")

"""C# members the default naming rule cannot name: finalizers, properties with code,
indexers and operators (``naming.describe`` hands them here)."""

from __future__ import annotations

from tree_sitter import Node

from freshmark.core.chunking.decl import Decl
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.languages import Rules


def csharp_member(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """C#: a finalizer is ``~Name``, not its class's constructor; a property with code (an
    accessor's body, ``=> ...``) is a unit like a method, an auto-property stays in the outline."""
    name_node = node.child_by_field_name("name")
    if name_node is None or node.type not in rules.functions:
        return None
    name = node_text(src, name_node)
    if node.type == "destructor_declaration":
        return Decl("~" + name, "function", node, node.child_by_field_name("body"))
    code = _accessor_code(node)
    return Decl(name, "function", node, code) if code is not None else None


def csharp_indexer(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``public T this[int i] { get { … } }`` is named ``this[]`` as it is written: it has no
    name field, and its accessors were only lines of the class outline. An interface's
    ``T this[int i] { get; }`` holds no code and stays in the outline."""
    code = _accessor_code(node) if node.type in rules.functions else None
    return Decl("this[]", "function", node, code) if code is not None else None


def _accessor_code(node: Node) -> Node | None:
    """The code of a property or an indexer: its ``=> …``, or its accessors when one of them
    has a body; None for ``{ get; set; }``, which holds none."""
    value = node.child_by_field_name("value")
    if value is not None and value.type == "arrow_expression_clause":
        return value
    accessors = node.child_by_field_name("accessors")
    coded = accessors is not None and any(a.child_by_field_name("body") is not None
                                          for a in accessors.named_children)
    return accessors if coded else None


def csharp_operator(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``operator ==`` is named ``operator==`` (as C++ names it), a conversion ``implicit
    operator int`` is ``operator int``: they have no name field, and were only outline
    lines."""
    body = node.child_by_field_name("body")
    if body is None or node.type not in rules.functions:
        return None
    if node.type == "operator_declaration":
        symbol = node.child_by_field_name("operator")
        return Decl(f"operator{node_text(src, symbol)}", "function", node, body) \
            if symbol is not None else None
    target = node.child_by_field_name("type")
    return Decl(f"operator {node_text(src, target)}", "function", node, body) \
        if target is not None else None

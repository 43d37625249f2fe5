"""Swift members the default naming rule cannot name: computed properties, subscripts and
``deinit`` (``naming.describe`` hands them here)."""

from __future__ import annotations

from tree_sitter import Node

from freshmark.core.chunking.csharp import csharp_member
from freshmark.core.chunking.decl import Decl
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.languages import Rules

# Accessor blocks a property or subscript holds its code in.
_ACCESSORS = frozenset({"computed_getter", "computed_setter", "computed_modify",
                        "willset_clause", "didset_clause"})


def property_declaration(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """Swift's and C#'s properties share the node type; Swift's binds its name with ``var``
    or ``let`` (a ``value_binding_pattern``)."""
    if not any(child.type == "value_binding_pattern" for child in node.children):
        return csharp_member(node, src, rules)
    return swift_property(node, src, rules)


def swift_property(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``var name: T { … }`` (a getter, accessors, or ``willSet``/``didSet`` observers), or one
    whose value a closure run once computes, is a unit like a method; a stored property
    (``var x = 0``, ``let y: String``) stays in its container's outline."""
    if node.type not in rules.functions:
        return None
    names = [child for i, child in enumerate(node.children)
             if node.field_name_for_child(i) == "name"]
    body = node.child_by_field_name("computed_value") or next(
        (c for c in node.named_children if c.type == "willset_didset_block"), None) or \
        _closure_run(node)
    if len(names) != 1 or not _holds_code(body):
        return None
    name = node_text(src, names[0]).strip()
    return Decl(name, "function", node, body) if name.isidentifier() else None


def _closure_run(node: Node) -> Node | None:
    """The closure a stored property runs once for its value (``let agent: T = { … }()``,
    Alamofire's ``defaultUserAgent``): its code is a unit's, not an outline line's."""
    value = next((c for c in node.named_children if c.type == "call_expression"), None)
    closure = value.named_children[0] if value is not None and value.named_children else None
    return closure if closure is not None and closure.type == "lambda_literal" else None


def swift_subscript(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``subscript(i: Int) -> T { … }`` is named ``subscript`` (its ``name`` field holds the
    result type); a protocol's requirement (``{ get set }``) is no unit."""
    body = next((c for c in node.named_children if c.type == "computed_property"), None)
    if node.type not in rules.functions or not _holds_code(body):
        return None
    return Decl("subscript", "function", node, body)


def swift_deinit(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``deinit { … }`` is named ``deinit``, as an initializer is named ``init``."""
    body = node.child_by_field_name("body")
    if node.type not in rules.functions or body is None:
        return None
    return Decl("deinit", "function", node, body)


def _holds_code(body: Node | None) -> bool:
    """A block with statements, or with an accessor that has a body of its own: not a
    protocol's ``{ get set }``."""
    if body is None:
        return False
    return any(child.type == "statements" or (
        child.type in _ACCESSORS and any(c.type == "{" for c in child.children))
        for child in body.children)

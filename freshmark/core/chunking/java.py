"""Java members the default naming rule cannot name: a field whose value is code
(``naming.describe`` hands them here)."""

from __future__ import annotations

from tree_sitter import Node

from freshmark.core.chunking.decl import Decl
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.languages import Rules


def java_field(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """A field or an interface constant holding a lambda or an anonymous class over several
    lines (commons-cli's ``Converter<Date, ParseException> DATE = s -> { … }``) is a unit
    like a method, named by the field, as a JavaScript ``const f = () => {…}`` is; a field of
    data, a one-line lambda, or a declaration of several fields stays in the outline."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if node.type not in rules.functions or len(declarators) != 1:
        return None
    name_node = declarators[0].child_by_field_name("name")
    value = declarators[0].child_by_field_name("value")
    if name_node is None or value is None or value.start_point.row == value.end_point.row:
        return None
    code = _code_of(value)
    return Decl(node_text(src, name_node), "function", node, code) if code is not None \
        else None


def _code_of(value: Node) -> Node | None:
    """The code a field's value is: a lambda's body, an anonymous class's body; None for any
    other value (a call, a literal, ``new Foo()`` without a body)."""
    if value.type == "lambda_expression":
        return value.child_by_field_name("body")
    if value.type == "object_creation_expression":
        return next((c for c in value.named_children if c.type == "class_body"), None)
    return None

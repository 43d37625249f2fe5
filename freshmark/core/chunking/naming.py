"""What a declaration node is called and what kind of unit it makes, per grammar.

``describe`` answers for the unwrapped declaration node; the defaults (a ``name`` field and a
``body`` field) cover most grammars, the handlers below cover the rest: Go receivers, Rust
impl blocks, C/C++ declarators, JS functions assigned to variables, JS object literals of
functions (``module.exports = { get host () {…} }``, a container like a class), typedef'd C
structs.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from freshmark.core.chunking.csharp import csharp_indexer, csharp_member, csharp_operator
from freshmark.core.chunking.decl import Decl, dotted
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.languages import Rules
from freshmark.core.chunking.swift import property_declaration, swift_deinit, swift_subscript

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_CLASS_VALUES = frozenset({"class", "class_expression"})
_UNNAMED_BODIES = frozenset({"function_body", "class_body", "enum_class_body"})


def describe(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """The unit ``node`` declares, or None when it declares no unit."""
    handler = _HANDLERS.get(node.type)
    if handler is not None:
        return handler(node, src, rules)
    return _default(node, src, rules)


def _default(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    body = node.child_by_field_name("body") or next(  # Kotlin's body has no field name
        (c for c in node.named_children if c.type in _UNNAMED_BODIES), None)
    name = dotted(node_text(src, name_node)).strip("\"'")
    if not name:
        return None
    if node.type in rules.functions:
        if body is None and node.type not in rules.bodyless_functions:
            return None
        return Decl(name, "function", node, body)
    kind = rules.containers.get(node.type)
    if kind is None:
        return None
    if body is None and (kind == "module" or node.type == "enum_constant"):
        return None  # `namespace X;` names no block, a Java enum constant without a body none
    return Decl(name, kind, node, body)


def _js_variable(node: Node, src: bytes, rules: Rules) -> Decl | None:
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) != 1:
        return None
    name_node = declarators[0].child_by_field_name("name")
    value = declarators[0].child_by_field_name("value")
    if name_node is None or value is None or name_node.type != "identifier":
        return None
    name = node_text(src, name_node)
    function = _guarded_function(value)  # `const send = supported && function () {}`
    if function is not None:
        return Decl(name, "function", node, function.child_by_field_name("body"))
    if value.type in _CLASS_VALUES:
        return Decl(name, "class", node, value.child_by_field_name("body"))
    value = _assigned_value(value)  # `const proto = module.exports = {...}`
    return _js_object(name, node, value, src) if value.type == "object" else None


def _assigned_value(value: Node) -> Node:
    """The value at the end of a chain of assignments (``a = b = value``)."""
    while value.type == "assignment_expression":
        right = value.child_by_field_name("right")
        if right is None:
            break
        value = right
    return value


def _guarded_function(value: Node, depth: int = 0) -> Node | None:
    """The one function a value is or holds behind a guard, parentheses or a type:
    ``supported && function (config) {…}``, ``(async (config) => {…})``,
    ``ok ? function () {…} : null`` (axios exports its adapters so),
    ``((init) => {…}) as CreateStore``; None when it holds none or several."""
    if value.type in _FUNCTION_VALUES:
        return value
    if value.type not in _GUARDS or depth > 3:
        return None
    found = [function for child in value.named_children
             if (function := _guarded_function(child, depth + 1)) is not None]
    return found[0] if len(found) == 1 else None


_GUARDS = frozenset({
    "parenthesized_expression", "binary_expression", "ternary_expression",
    # TypeScript's typed wrappers: `const createStore = ((init) => …) as CreateStore` gives
    # a function its declared type (zustand's API is written so); the type is no function.
    "as_expression", "satisfies_expression", "non_null_expression", "type_assertion",
})  # fmt: skip


def _property_function(value: Node) -> Node | None:
    """The function a property's value gives: itself, one behind a guard, or the one function
    of an array (``transformRequest: [function transformRequest (data) {…}]``, a list of
    handlers with one in it)."""
    if value.type == "array":
        found = [f for f in value.named_children if f.type in _FUNCTION_VALUES]
        return found[0] if len(found) == 1 else None
    return _guarded_function(value)


def _js_object(name: str, node: Node, value: Node, src: bytes) -> Decl | None:
    """An object literal that holds functions (``module.exports = { get host () {…}, … }``,
    ``const utils = { parse: function () {…} }``) is a container, as a class is: its
    methods, getters, setters and function-valued properties are units of their own, and
    the rest of it (data properties) stays in its outline. An object of data alone is
    module code, and so is one whose functions all sit under keys that name nothing."""
    if not any(_is_function_member(member, src) for member in value.named_children):
        return None
    return Decl(name, "class", node, value)


def _is_function_member(member: Node, src: bytes) -> bool:
    """A method, or a property that is a unit of its own (``_pair_decl``)."""
    if member.type == "method_definition":
        return True
    return member.type == "pair" and _pair_decl(member, src) is not None


def _pair_name(pair: Node, src: bytes) -> str:
    """What a property's key names: the key without its quotes; "" for a computed key or a
    string that is not an identifier (``'Content-Type'``)."""
    key = pair.child_by_field_name("key")
    if key is None or key.type == "computed_property_name":
        return ""
    name = node_text(src, key).strip("\"'`")
    return name if _JS_NAME.fullmatch(name) else ""


_EXPORT_PREFIXES = ("module.exports.", "exports.", "this.")


def _js_expression(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``Cart.prototype.add = function () {}`` is ``Cart.add``; ``exports.f = () => {}`` is
    ``f``; ``res.set = res.header = function () {}`` is ``res.set``; a named function passed
    to a call is a unit too (``_js_call_argument``); a TypeScript ``namespace`` parses as an
    expression statement."""
    child = node.named_children[0] if node.named_child_count else None
    if child is not None and child.type == "internal_module":
        decl = _default(child, src, rules)
        if decl is not None:
            decl.kind = "module"
        return decl
    if child is not None and child.type == "call_expression":
        return _js_call_argument(node, child, src)
    if child is None or child.type != "assignment_expression":
        return None
    left = child.child_by_field_name("left")
    right = child.child_by_field_name("right")
    if left is None or right is None or left.type not in _JS_TARGETS:
        return None
    right = _assigned_value(right)  # `a = b = function`
    target = "".join(node_text(src, left).split())
    if right.type == "object":
        return _js_object(_js_target_name(target), node, right, src)
    if right.type not in _FUNCTION_VALUES | _CLASS_VALUES:
        return None
    method = ".prototype." in target
    name = _js_target_name(target)
    kind = "class" if right.type in _CLASS_VALUES else ("method" if method else "function")
    return Decl(name, kind, node, right.child_by_field_name("body"), forced_kind=method)


_JS_TARGETS = frozenset({"identifier", "member_expression"})
_JS_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def _js_target_name(target: str) -> str:
    for prefix in _EXPORT_PREFIXES:
        target = target.removeprefix(prefix)
    return target.replace(".prototype.", ".")


def _js_call_argument(node: Node, call: Node, src: bytes) -> Decl | None:
    """A function passed to a call at statement level, when the code names it:
    ``defineGetter(req, 'protocol', function () {})`` is ``req.protocol`` (an object and a
    property name right before the function), ``app.use(function logger() {})`` is
    ``logger``. An anonymous function after a plain string (``describe('app', ...)``, a route
    path) names nothing, and neither does a call given several functions."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return None
    args = arguments.named_children
    functions = [(i, f) for i, f in enumerate(map(_js_function_value, args)) if f is not None]
    if len(functions) != 1:
        return None
    index, function = functions[0]
    name = _js_property_name(args[max(index - 2, 0) : index], src)
    if not name:
        own = function.child_by_field_name("name")
        name = node_text(src, own) if own is not None else ""
    if not name:
        return None
    return Decl(name, "function", node, function.child_by_field_name("body"))


def _js_function_value(arg: Node) -> Node | None:
    """The function an argument passes: itself, or the one function a wrapping call is given
    (``deprecate.function(function host () {})``)."""
    if arg.type in _FUNCTION_VALUES:
        return arg
    arguments = arg.child_by_field_name("arguments") if arg.type == "call_expression" else None
    inner = [a for a in arguments.named_children if a.type in _FUNCTION_VALUES] \
        if arguments is not None else []
    return inner[0] if len(inner) == 1 else None


def _js_property_name(before: list[Node], src: bytes) -> str:
    """``owner.name`` from the two arguments ``owner, 'name'``; "" when they are not that."""
    if len(before) != 2 or before[1].type != "string":
        return ""
    owner, literal = before
    if owner.type not in _JS_TARGETS | {"this"}:
        return ""
    name = node_text(src, literal)[1:-1]
    if not _JS_NAME.fullmatch(name):
        return ""
    return _js_target_name("".join(node_text(src, owner).split()) + "." + name)


def _js_pair(node: Node, src: bytes, rules: Rules) -> Decl | None:
    return _pair_decl(node, src)


def _pair_decl(node: Node, src: bytes) -> Decl | None:
    """``parse: function (str) {…}``, ``parse: (str) => …`` or ``transformRequest:
    [function (data) {…}]`` inside an object literal, or ``methods: { save () {…} }``, an
    object of functions inside it (a container of its own); the key names it
    (``_pair_name``)."""
    name = _pair_name(node, src)
    value = node.child_by_field_name("value")
    if not name or value is None:
        return None
    if value.type == "object":
        return _js_object(name, node, value, src)
    function = _property_function(value)
    if function is None:
        return None
    return Decl(name, "function", node, function.child_by_field_name("body"))


def _js_field(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("property") or node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name_node is None or value is None or value.type not in _FUNCTION_VALUES:
        return None
    return Decl(node_text(src, name_node), "function", node, value.child_by_field_name("body"))


def _anonymous_default(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default function () {}`` / ``export default class {}``: named ``default``.
    Ruby's ``class`` node shares the type name and has its name field."""
    name_node = node.child_by_field_name("name")
    name = dotted(node_text(src, name_node)) if name_node is not None else "default"
    kind = "class" if node.type in _CLASS_VALUES else "function"
    return Decl(name, kind, node, node.child_by_field_name("body"))


def _js_default_object(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default { getAdapter: (a) => {…} }``: an object literal of functions exported
    as the module's default is the container ``default``; an object anywhere else is not a
    declaration."""
    if node.parent is None or node.parent.type != "export_statement":
        return None
    return _js_object("default", node, node, src)


def _js_guarded_default(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default supported && function (config) {…}``: the function a guarded default
    export holds is the function ``default``; such an expression anywhere else is not a
    declaration."""
    if node.parent is None or node.parent.type != "export_statement":
        return None
    function = _guarded_function(node)
    if function is None:
        return None
    return Decl("default", "function", node, function.child_by_field_name("body"))


def _ts_type_alias(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    value = node.child_by_field_name("value")
    body = value if value is not None and value.type == "object_type" else None
    return Decl(node_text(src, name_node), "interface", node, body)


def _go_method(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None:
        return None
    receiver = _go_receiver_type(node.child_by_field_name("receiver"), src)
    name = node_text(src, name_node)
    full = f"{receiver}.{name}" if receiver else name
    return Decl(full, "method", node, body, forced_kind=True)


def _go_receiver_type(receiver: Node | None, src: bytes) -> str:
    if receiver is None:
        return ""
    stack = list(receiver.named_children)
    while stack:
        current = stack.pop(0)
        if current.type == "type_identifier":
            return node_text(src, current)
        kids = [c for c in current.named_children if c.type != "identifier"]
        stack[0:0] = kids
    return ""


def _go_type_declaration(node: Node, src: bytes, rules: Rules) -> Decl | None:
    specs = [c for c in node.named_children if c.type in {"type_spec", "type_alias"}]
    if len(specs) != 1 or node.child_by_field_name("name") is not None:
        return None
    spec = _go_type_spec(specs[0], src, rules)
    if spec is not None:
        spec.decl = node
        spec.signature_prefix = ""
    return spec


def _go_type_spec(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("name")
    type_node = node.child_by_field_name("type")
    if name_node is None or type_node is None:
        return None
    name = node_text(src, name_node)
    if type_node.type == "struct_type":
        fields = (c for c in type_node.named_children if c.type == "field_declaration_list")
        return Decl(name, "struct", node, next(fields, None), signature_prefix="type ")
    if type_node.type == "interface_type":
        return Decl(name, "interface", node, type_node, signature=f"type {name} interface")
    return Decl(name, "class", node, None, signature_prefix="type ")


def _rust_impl(node: Node, src: bytes, rules: Rules) -> Decl | None:
    type_node = node.child_by_field_name("type")
    if type_node is None:
        return None
    # ``&'a mut Deserializer<R>`` implements for ``Deserializer``: members are named by it.
    bare = re.sub(r"^(?:&\s*(?:'\w+\s*)?(?:mut\s+)?|dyn\s+)+", "", node_text(src, type_node))
    # ``[core::mem::MaybeUninit<u8>]``, ``[u8; N]``: a slice of the element type.
    slice_of = re.fullmatch(r"\[\s*(.*?)\s*(?:;[^\]]*)?\]", bare.strip(), re.S)
    type_name = dotted(slice_of.group(1) if slice_of else bare).split(".")[-1]
    type_name = f"[{type_name}]" if slice_of else type_name
    trait_node = node.child_by_field_name("trait")
    if trait_node is not None:
        # The trait's arguments tell its impls apart (``From<Vec<u8>>``, ``From<String>``).
        trait = node_text(src, trait_node)
        args = trait[trait.index("<"):] if "<" in trait else ""
        args = "" if re.fullmatch(r"<\s*'\w+(?:\s*,\s*'\w+)*\s*>", args) else args
        label = f"impl {dotted(trait)}{' '.join(args.split())} for {type_name}"
    else:
        label = f"impl {type_name}"
    body = node.child_by_field_name("body")
    return Decl(label, "impl", node, body, member_scope=[type_name])


def _c_function(node: Node, src: bytes, rules: Rules) -> Decl | None:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.named_child_count:
            inner = declarator.named_children[-1]
        declarator = inner
    if declarator is None:
        return None
    name_node = declarator.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return None
    raw = node_text(src, name_node)
    qualified = "::" in raw
    return Decl(
        dotted(raw), "method" if qualified else "function", node, body, forced_kind=qualified
    )


def _c_record(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``struct point {...}``, ``class Foo {...}``: only definitions with a body and a name."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return None
    return Decl(dotted(node_text(src, name_node)), rules.containers[node.type], node, body)


def _c_typedef(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``typedef struct {...} Vec;`` is the struct ``Vec``."""
    type_node = node.child_by_field_name("type")
    declarator = node.child_by_field_name("declarator")
    if type_node is None or declarator is None or declarator.type != "type_identifier":
        return None
    kind = rules.containers.get(type_node.type)
    body = type_node.child_by_field_name("body")
    if kind is None or body is None:
        return None
    name = node_text(src, declarator)
    keyword = type_node.type.removesuffix("_specifier")
    return Decl(name, kind, node, body, signature=f"typedef {keyword} {name}")


def _ruby_singleton(node: Node, src: bytes, rules: Rules) -> Decl | None:
    decl = _default(node, src, rules)
    if decl is not None:
        decl.kind = "method"
        decl.forced_kind = True
    return decl


def _method_declaration(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """Go's method has a receiver; Java, C# and PHP methods have a plain name."""
    if node.child_by_field_name("receiver") is not None:
        return _go_method(node, src, rules)
    return _default(node, src, rules)


def _class_declaration(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """Swift names the kind (``struct``, ``enum``, ``extension``...) in ``declaration_kind``;
    an extension adds members to the type it names. Kotlin's interface is a class
    declaration with the ``interface`` keyword."""
    kind_node = node.child_by_field_name("declaration_kind")
    decl = _default(node, src, rules)
    if decl is None or kind_node is None:
        if decl is not None and any(c.type == "interface" for c in node.children):
            decl.kind = "interface"
        return decl
    keyword = node_text(src, kind_node)
    if keyword == "extension":
        return Decl(f"extension {decl.name}", "impl", node, decl.body, member_scope=[decl.name])
    decl.kind = keyword if keyword in ("struct", "enum") else decl.kind
    return decl


def _function_definition(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """C/C++ name a function through declarators; Python and PHP through a name field."""
    if node.child_by_field_name("declarator") is not None:
        return _c_function(node, src, rules)
    return _default(node, src, rules)


_Handler = Callable[[Node, bytes, Rules], "Decl | None"]
_HANDLERS: dict[str, _Handler] = {
    "destructor_declaration": csharp_member,
    "property_declaration": property_declaration,  # C# or Swift
    "subscript_declaration": swift_subscript,
    "indexer_declaration": csharp_indexer,
    "deinit_declaration": swift_deinit,
    "operator_declaration": csharp_operator,
    "conversion_operator_declaration": csharp_operator,
    "lexical_declaration": _js_variable,
    "variable_declaration": _js_variable,
    "expression_statement": _js_expression,
    "field_definition": _js_field,
    "pair": _js_pair,
    "public_field_definition": _js_field,
    "function_expression": _anonymous_default,
    "arrow_function": _anonymous_default,
    "generator_function": _anonymous_default,
    "class": _anonymous_default,
    "object": _js_default_object,
    "binary_expression": _js_guarded_default,
    "parenthesized_expression": _js_guarded_default,
    "ternary_expression": _js_guarded_default,
    "type_alias_declaration": _ts_type_alias,
    "method_declaration": _method_declaration,
    "type_declaration": _go_type_declaration,
    "type_spec": _go_type_spec,
    "impl_item": _rust_impl,
    "function_definition": _function_definition,
    "struct_specifier": _c_record,
    "class_specifier": _c_record,
    "union_specifier": _c_record,
    "enum_specifier": _c_record,
    "type_definition": _c_typedef,
    "singleton_method": _ruby_singleton,
    "class_declaration": _class_declaration,
}

"""JavaScript and TypeScript declarations the default naming rule cannot name: functions and
classes held by variables, assignments, object literals, calls and default exports
(``naming.describe`` hands them here)."""

from __future__ import annotations

import re

from tree_sitter import Node

from freshmark.core.chunking.decl import Decl, dotted
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.languages import Rules

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_CLASS_VALUES = frozenset({"class", "class_expression"})


def js_variable(node: Node, src: bytes, rules: Rules) -> Decl | None:
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
    function = _passed_function(value)  # `const $ZodString = $constructor("…", (inst) => {…})`
    if function is not None:
        return Decl(name, "function", node, function.child_by_field_name("body"))
    options = _passed_object(value)  # `const useUserStore = defineStore('user', { … })`
    if options is not None:
        return _js_object(name, node, options, src)
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


def js_expression(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``Cart.prototype.add = function () {}`` is ``Cart.add``; ``exports.f = () => {}`` is
    ``f``; ``res.set = res.header = function () {}`` is ``res.set``; a named function passed
    to a call is a unit too (``_js_call_argument``)."""
    child = node.named_children[0] if node.named_child_count else None
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


def _passed_function(value: Node) -> Node | None:
    """The one function a call that makes a variable's value is given: a factory's
    implementation (zod's ``$constructor("$ZodString", (inst, def) => {…})``, a ``debounce``
    of a handler). A call given several functions, or none, makes no unit."""
    return _one_argument(value, _FUNCTION_VALUES)


def _passed_object(value: Node) -> Node | None:
    """The one object literal a call that makes a variable's value is given: Pinia's option
    store (``defineStore('user', { actions: { login () {…} } })``), a Vue component's or a
    Nuxt plugin's options; a container when it holds functions (``_js_object``)."""
    return _one_argument(value, frozenset({"object"}))


def _one_argument(call: Node, types: frozenset[str]) -> Node | None:
    """The one argument of ``call`` of one of ``types``; None for none, several, or no call."""
    arguments = call.child_by_field_name("arguments") if call.type == "call_expression" \
        else None
    found = [a for a in arguments.named_children if a.type in types] \
        if arguments is not None else []
    return found[0] if len(found) == 1 else None


def _js_function_value(arg: Node) -> Node | None:
    """The function an argument passes: itself, or the one function a wrapping call is given
    (``deprecate.function(function host () {})``)."""
    return arg if arg.type in _FUNCTION_VALUES else _passed_function(arg)


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


def js_pair(node: Node, src: bytes, rules: Rules) -> Decl | None:
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


def js_field(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("property") or node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name_node is None or value is None or value.type not in _FUNCTION_VALUES:
        return None
    return Decl(node_text(src, name_node), "function", node, value.child_by_field_name("body"))


def js_anonymous_default(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default function () {}`` / ``export default class {}``: named ``default``.
    Ruby's ``class`` node shares the type name and has its name field."""
    name_node = node.child_by_field_name("name")
    name = dotted(node_text(src, name_node)) if name_node is not None else "default"
    kind = "class" if node.type in _CLASS_VALUES else "function"
    return Decl(name, kind, node, node.child_by_field_name("body"))


def js_default_object(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default { getAdapter: (a) => {…} }``: an object literal of functions exported
    as the module's default is the container ``default``; an object anywhere else is not a
    declaration."""
    if node.parent is None or node.parent.type != "export_statement":
        return None
    return _js_object("default", node, node, src)


def js_guarded_default(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``export default supported && function (config) {…}``: the function a guarded default
    export holds is the function ``default``; such an expression anywhere else is not a
    declaration."""
    if node.parent is None or node.parent.type != "export_statement":
        return None
    function = _guarded_function(node)
    if function is None:
        return None
    return Decl("default", "function", node, function.child_by_field_name("body"))


def ts_type_alias(node: Node, src: bytes, rules: Rules) -> Decl | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    value = node.child_by_field_name("value")
    body = value if value is not None and value.type == "object_type" else None
    return Decl(node_text(src, name_node), "interface", node, body)

"""What a declaration node is called and what kind of unit it makes, per grammar.

``describe`` answers for the unwrapped declaration node; the defaults (a ``name`` field and a
``body`` field) cover most grammars, the handlers below cover the rest: Go receivers, Rust
impl blocks, C/C++ declarators, typedef'd C structs; JavaScript's and TypeScript's are in
``javascript``, C#'s in ``csharp``, Swift's in ``swift``, Java's in ``java``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from freshmark.core.chunking.csharp import csharp_indexer, csharp_member, csharp_operator
from freshmark.core.chunking.decl import Decl, dotted
from freshmark.core.chunking.facts import node_text
from freshmark.core.chunking.java import java_field
from freshmark.core.chunking.javascript import (
    js_anonymous_default,
    js_default_object,
    js_expression,
    js_field,
    js_guarded_default,
    js_pair,
    js_variable,
    ts_type_alias,
)
from freshmark.core.chunking.languages import Rules
from freshmark.core.chunking.swift import property_declaration, swift_deinit, swift_subscript

_UNNAMED_BODIES = frozenset({"function_body", "class_body", "enum_class_body"})
_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# What a test macro naming its test by a string takes: names (a fixture), then the string.
_TEST_NAME = re.compile(r'\(\s*((?:[A-Za-z_]\w*\s*,\s*)*)"((?:[^"\\\n]|\\.)*)"')
_WORD_THEN_NAME = re.compile(
    r"(?!operator\b)[A-Za-z_]\w*\s+((?:[A-Za-z_]\w*(?:<[^()]*>)?::)*~?[A-Za-z_]\w*)")


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
    # An operator's name is written as it is (Ruby's ``<=>`` holds no template's ``<…>``).
    name = node_text(src, name_node) if name_node.type == "operator" else \
        dotted(node_text(src, name_node)).strip("\"'")
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


def _expression_statement(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """A TypeScript ``namespace`` parses as an expression statement; any other is
    JavaScript's (``javascript.js_expression``)."""
    child = node.named_children[0] if node.named_child_count else None
    if child is not None and child.type == "internal_module":
        decl = _default(child, src, rules)
        if decl is not None:
            decl.kind = "module"
        return decl
    return js_expression(node, src, rules)


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


def _rust_type(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """Rust's ``pub type Result<T> = …`` of a module is a definition; an impl's associated
    ``type Item = u8;`` is a line of the impl."""
    parent = node.parent
    return None if parent is not None and parent.type == "declaration_list" else \
        _default(node, src, rules)


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
    body = node.child_by_field_name("body")
    raw = _conversion_operator(declarator, src)
    while raw is None and declarator is not None and declarator.type != "function_declarator":
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.named_child_count:
            inner = declarator.named_children[-1]
        declarator = inner
    if raw is None and declarator is not None:
        name_node = declarator.child_by_field_name("declarator")
        raw = node_text(src, name_node) if name_node is not None else None
    if raw is None or body is None:
        return None
    test = _test_macro_name(node, declarator, raw, src)
    if test is not None:
        return Decl(test, "function", node, body)
    # A parse that read a return type or a macro into the name (``ffc_adjusted_mantissa
    # ffc_digit_comp`` after a macro line, ``void SPDLOG_INLINE thread_pool::post_log``): the
    # function is the (qualified) name after the word, not the two glued.
    words = _WORD_THEN_NAME.fullmatch(raw.strip())
    raw = words.group(1) if words else raw
    qualified = "::" in raw
    return Decl(
        dotted(raw), "method" if qualified else "function", node, body, forced_kind=qualified
    )


def _test_macro_name(node: Node, declarator: Node | None, raw: str, src: bytes) -> str | None:
    """``chrono_test.format_default`` for ``TEST(chrono_test, format_default) {…}``: a test
    macro (GoogleTest's ``TEST``, ``TEST_F``, ``TEST_P``, ``TYPED_TEST``) parses as a function
    of no return type, named by the macro and taking bare names; the names are the test's, the
    macro's name is every test's; Catch2 and doctest name a test by a string
    (``_string_test_name``). One name alone is rather an annotation after a declaration
    (``void f() GTEST_LOCK_EXCLUDED_(mutex_) {``) and is left as it was."""
    if declarator is None or node.child_by_field_name("type") is not None or \
            not _MACRO_NAME.fullmatch(raw) or (
            node.parent is not None and node.parent.type == "field_declaration_list"):
        return None  # a constructor's class may be all capitals too
    parameters = declarator.child_by_field_name("parameters")
    arguments = node_text(src, parameters) if parameters is not None else ""
    if '"' in arguments:
        return _string_test_name(arguments)
    names = [node_text(src, p).strip() for p in parameters.named_children] \
        if parameters is not None else []
    if len(names) < 2 or not all(_IDENTIFIER.fullmatch(name) for name in names):
        return None
    return ".".join(names)


def _string_test_name(arguments: str) -> str | None:
    """``Fixture.name`` for ``TEST_CASE_METHOD(Fixture, "name", "[tag]")``, ``name`` for
    ``TEST_CASE("name", "[tag]")``: the test's string, its tags left out (``macros`` blanks
    the strings so that the head parses as a function's)."""
    named = _TEST_NAME.match(arguments)
    if named is None:
        return None
    fixture = [name.strip() for name in named.group(1).split(",")[:-1]]
    name = " ".join(named.group(2).split())
    return ".".join([*fixture, name]) if name else None


def _conversion_operator(declarator: Node | None, src: bytes) -> str | None:
    """``operator const Char*`` of ``operator const Char*() const {``, qualified when defined
    out of its class: a conversion operator has no function declarator to name it."""
    cast = declarator
    while cast is not None and cast.type == "qualified_identifier":
        cast = cast.child_by_field_name("name")
    if declarator is None or cast is None or cast.type != "operator_cast":
        return None
    params = cast.child_by_field_name("declarator")
    while params is not None and params.type != "abstract_function_declarator":
        params = params.named_children[-1] if params.named_child_count else None
    end = params.start_byte if params is not None else cast.end_byte
    return src[declarator.start_byte:end].decode("utf-8", errors="replace")


def _c_record(node: Node, src: bytes, rules: Rules) -> Decl | None:
    """``struct point {...}``, ``class Foo {...}``: only definitions with a body and a name."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is None or body is None:
        return None
    name = dotted(node_text(src, name_node))
    # ``enum : ullong {…}`` has no name: the parse takes its base type for one (or leaves
    # the name empty before ``unsigned``)
    before = name_node.prev_sibling
    if not name or (before is not None and node_text(src, before).strip() == ":"):
        return None
    return Decl(name, rules.containers[node.type], node, body)


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
    "lexical_declaration": js_variable,
    "variable_declaration": js_variable,
    "expression_statement": _expression_statement,
    "field_definition": js_field,
    "pair": js_pair,
    "public_field_definition": js_field,
    "function_expression": js_anonymous_default,
    "arrow_function": js_anonymous_default,
    "generator_function": js_anonymous_default,
    "class": js_anonymous_default,
    "object": js_default_object,
    "binary_expression": js_guarded_default,
    "parenthesized_expression": js_guarded_default,
    "ternary_expression": js_guarded_default,
    "type_alias_declaration": ts_type_alias,
    "method_declaration": _method_declaration,
    "type_declaration": _go_type_declaration,
    "type_spec": _go_type_spec,
    "impl_item": _rust_impl,
    "type_item": _rust_type,
    "function_definition": _function_definition,
    "struct_specifier": _c_record,
    "class_specifier": _c_record,
    "union_specifier": _c_record,
    "enum_specifier": _c_record,
    "type_definition": _c_typedef,
    "singleton_method": _ruby_singleton,
    "class_declaration": _class_declaration,
    "field_declaration": java_field,  # C++'s is a wrapper, unwrapped before it is described
    "constant_declaration": java_field,
}

"""One tree-sitter query per language that finds comments, imports and referenced names.

A name is captured ``@ref`` where it is written alone and ``@member`` where it follows a
receiver (``console.print``): a language's builtin is a reference only so (``Rules.builtins``).
A method used as a value, handed on to be called (Go's ``http.HandlerFunc(mx.routeHTTP)``,
``this.onData.bind(this)``, ``Thread(target=self.run)``), is a reference as a call is.

Each language's patterns are compiled one by one the first time and the ones the installed
grammar accepts are combined into a single query, so a grammar update that renames a node
drops a pattern (logged) instead of breaking chunking. One query pass per file collects every
fact chunking needs.
"""

from __future__ import annotations

import logging
from functools import cache

from tree_sitter import Query, QueryError

from freshmark.core.chunking.languages import grammar

log = logging.getLogger(__name__)

_CALLS_C = """
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(type_identifier) @ref
"""
_JS_COMMON = r"""
(comment) @comment
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @_fn (#eq? @_fn "require")
  arguments: (arguments (string (string_fragment) @import)))
(call_expression function: (import) arguments: (arguments (string (string_fragment) @import)))
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression object: (identifier) @ref))
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
(new_expression constructor: (member_expression property: (property_identifier) @ref))
(call_expression function: (member_expression property: (private_property_identifier) @ref))
(new_expression constructor: (member_expression property: (private_property_identifier) @ref))
(member_expression object: (identifier) @ref (#match? @ref "^[A-Z]"))
(arguments (member_expression object: (this) property: (property_identifier) @ref))
(call_expression function: (member_expression
  object: (member_expression object: (this) property: (property_identifier) @ref)
  property: (property_identifier) @_how (#match? @_how "^(bind|call|apply)$")))
"""
_JS_ONLY = "(class_heritage (identifier) @ref)\n"
# An overload signature belongs to the definition of its name right below it (as a doc comment
# does), so the definition's unit starts at the first signature and takes the comment above it;
# unlike a comment, across blank lines (``facts.collect_facts``) and a comment of its own.
_TS_OVERLOADS = r"""
((function_signature name: (identifier) @_a) @overload .
 (comment)* .
 [(function_signature name: (identifier) @_b) (function_declaration name: (identifier) @_b)]
 (#eq? @_a @_b))
((export_statement declaration: (function_signature name: (identifier) @_a)) @overload .
 (comment)* .
 (export_statement declaration: [(function_signature name: (identifier) @_b)
                                 (function_declaration name: (identifier) @_b)])
 (#eq? @_a @_b))
((method_signature name: (_) @_a) @overload .
 (comment)* .
 [(method_signature name: (_) @_b) (method_definition name: (_) @_b)]
 (#eq? @_a @_b))
"""
_TS_ONLY = "(extends_clause value: (identifier) @ref)\n(type_identifier) @ref\n" + _TS_OVERLOADS
_JSX = r"""
(jsx_opening_element name: (identifier) @ref (#match? @ref "^[A-Z]"))
(jsx_self_closing_element name: (identifier) @ref (#match? @ref "^[A-Z]"))
"""

# A Go method used as a value, not called (``http.HandlerFunc(mx.routeHTTP)``, ``h :=
# mx.routeHTTP``): a selector passed, assigned, returned or set in a literal. A field so
# used (``r.URL``) is taken too: its name is a method's only by name, as a call's would be.
_GO_VALUES = """
(argument_list (selector_expression field: (field_identifier) @member))
(literal_element (selector_expression field: (field_identifier) @member))
(assignment_statement right: (expression_list
  (selector_expression field: (field_identifier) @member)))
(short_var_declaration right: (expression_list
  (selector_expression field: (field_identifier) @member)))
(var_spec value: (expression_list (selector_expression field: (field_identifier) @member)))
(return_statement (expression_list (selector_expression field: (field_identifier) @member)))
"""

_PATTERNS: dict[str, str] = {
    "python": """
(comment) @comment
(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (_) @import)
(import_from_statement module_name: (relative_import) name: (dotted_name) @import_relative)
(import_from_statement module_name: (relative_import)
  name: (aliased_import name: (dotted_name) @import_relative))
(call function: (identifier) @ref)
(call function: (attribute object: (identifier) @ref))
(call function: (attribute attribute: (identifier) @member))
(type (identifier) @ref)
(type (attribute attribute: (identifier) @member))
(generic_type (identifier) @ref)
(class_definition superclasses: (argument_list (identifier) @ref))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @member)))
(decorator (identifier) @ref)
(argument_list (attribute object: (identifier) @_own (#match? @_own "^(self|cls)$")
  attribute: (identifier) @member))
(keyword_argument value: (attribute object: (identifier) @_own (#match? @_own "^(self|cls)$")
  attribute: (identifier) @member))
(decorator (attribute attribute: (identifier) @member))
(except_clause (identifier) @ref)
(attribute object: (identifier) @ref (#match? @ref "^[A-Z]"))
(argument_list (identifier) @ref (#match? @ref "^_?[A-Z][A-Za-z0-9]*[a-z]"))
(assignment right: (identifier) @ref (#match? @ref "^_?[A-Z][A-Za-z0-9]*[a-z]"))
(conditional_expression (identifier) @ref (#match? @ref "^_?[A-Z][A-Za-z0-9]*[a-z]"))
(return_statement (identifier) @ref (#match? @ref "^_?[A-Z][A-Za-z0-9]*[a-z]"))
(pair value: (identifier) @ref (#match? @ref "^_?[A-Z][A-Za-z0-9]*[a-z]"))
""",
    "javascript": _JS_COMMON + _JS_ONLY + _JSX,
    "typescript": _JS_COMMON + _TS_ONLY,
    "tsx": _JS_COMMON + _TS_ONLY + _JSX,
    "java": """
(line_comment) @comment
(block_comment) @comment
(import_declaration) @import
(method_invocation name: (identifier) @ref)
(method_invocation object: (identifier) @ref (#match? @ref "^[A-Z]"))
(field_access object: (identifier) @ref (#match? @ref "^[A-Z]"))
(object_creation_expression type: (type_identifier) @ref)
(type_identifier) @ref
(marker_annotation name: (identifier) @ref)
(annotation name: (identifier) @ref)
""",
    "go": """
(comment) @comment
(import_spec path: (_) @import)
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression operand: (identifier) @ref))
(call_expression function: (selector_expression field: (field_identifier) @member))
(type_identifier) @ref
""" + _GO_VALUES,
    "rust": """
(line_comment) @comment
(block_comment) @comment
(attribute_item) @prefix
(use_declaration argument: (_) @import)
(extern_crate_declaration name: (identifier) @import)
(mod_item !body name: (identifier) @import)
(call_expression function: (identifier) @ref)
(call_expression function: (scoped_identifier path: (identifier) @ref (#match? @ref "^[A-Z]")))
(call_expression function: (scoped_identifier name: (identifier) @ref))
(call_expression function: (field_expression field: (field_identifier) @ref))
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
(macro_rule right: (token_tree) @macro_body)
""",
    "c": "(comment) @comment\n(preproc_include path: (_) @import)\n" + _CALLS_C,
    "cpp": "(comment) @comment\n(preproc_include path: (_) @import)\n"
    + _CALLS_C
    + """
(using_declaration (identifier) @import)
(using_declaration (qualified_identifier) @import)
(call_expression function: (qualified_identifier name: (identifier) @ref))
(base_class_clause (type_identifier) @ref)
""",
    "csharp": """
(comment) @comment
(using_directive) @import
(invocation_expression function: (identifier) @ref)
(invocation_expression function: (member_access_expression name: (identifier) @ref))
(invocation_expression function: (member_access_expression expression: (identifier) @ref))
(object_creation_expression type: (identifier) @ref)
(base_list (identifier) @ref)
(parameter type: (identifier) @ref)
(method_declaration returns: (identifier) @ref)
(property_declaration type: (identifier) @ref)
(variable_declaration type: (identifier) @ref)
(generic_name (identifier) @ref)
(type_argument_list (identifier) @ref)
(attribute name: (identifier) @ref)
""",
    # A bare name (``validate``) is a call unless it is a local: ``ruby.bare_calls`` decides.
    # A method named in capitals is a call through a receiver (rack's ``self.POST``,
    # ``req.GET``): the grammar parses its name as a constant.
    "ruby": r"""
(comment) @comment
(call method: (identifier) @_m (#match? @_m "^(require|require_relative|load)$")
  arguments: (argument_list (string (string_content) @import)))
(call method: (identifier) @ref)
(call receiver: (_) method: (constant) @ref)
(identifier) @call_unless_local
(call receiver: (constant) @ref)
(superclass (constant) @ref)
(scope_resolution name: (constant) @ref)
""",
    "php": """
(comment) @comment
(namespace_use_clause) @import
(require_expression (_) @import)
(require_once_expression (_) @import)
(include_expression (_) @import)
(include_once_expression (_) @import)
(function_call_expression function: (name) @ref)
(function_call_expression function: (qualified_name (name) @ref))
(member_call_expression name: (name) @ref)
(nullsafe_member_call_expression name: (name) @ref)
(scoped_call_expression scope: (name) @ref)
(scoped_call_expression name: (name) @ref)
(object_creation_expression (name) @ref)
(object_creation_expression (qualified_name (name) @ref))
(named_type (name) @ref)
(base_clause (name) @ref)
(class_interface_clause (name) @ref)
""",
    "kotlin": """
(line_comment) @comment
(block_comment) @comment
(import (qualified_identifier) @import)
(call_expression (identifier) @ref)
(call_expression (navigation_expression . (identifier) @ref))
(call_expression (navigation_expression (_) (identifier) @member .))
(user_type (identifier) @ref)
""",
    # An implicit member call (``shell ?? .autodetected()``) and a negated one (``!isOk()``)
    # parse as a call of a prefix expression.
    "swift": """
(comment) @comment
(multiline_comment) @comment
(import_declaration (identifier) @import)
(call_expression (simple_identifier) @ref)
(call_expression (prefix_expression target: (simple_identifier) @ref))
(navigation_suffix suffix: (simple_identifier) @ref)
(user_type (type_identifier) @ref)
""",
}


def split_patterns(source: str) -> list[str]:
    """The patterns of a query source: each starts at a line beginning with ``(``; indented
    lines continue the pattern above."""
    patterns: list[str] = []
    for line in source.splitlines():
        if line.startswith("("):
            patterns.append(line)
        elif line.strip() and patterns:
            patterns[-1] += "\n" + line
    return patterns


def accepted_patterns(language: str) -> tuple[list[str], list[str]]:
    """(patterns the installed grammar compiles, patterns it rejects) for ``language``."""
    lang = grammar(language)
    source = _PATTERNS.get(language, "")
    if lang is None:
        return [], split_patterns(source)
    good: list[str] = []
    bad: list[str] = []
    for pattern in split_patterns(source):
        try:
            Query(lang, pattern)
            good.append(pattern)
        except QueryError:
            bad.append(pattern)
    return good, bad


@cache
def facts_query(language: str) -> Query | None:
    """The combined query for ``language`` (compiled once per process), None if unsupported."""
    lang = grammar(language)
    if lang is None or language not in _PATTERNS:
        return None
    try:
        return Query(lang, _PATTERNS[language])
    except QueryError:
        pass  # some pattern names a node this grammar version lacks: keep the others
    good, bad = accepted_patterns(language)
    for pattern in bad:
        log.warning("query pattern not supported by the %s grammar: %s", language, pattern)
    return Query(lang, "\n".join(good)) if good else None

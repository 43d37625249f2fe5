"""Ruby calls written bare: ``validate`` alone is a call of the method ``validate`` unless a
parameter or an assignment in the same scope made it a local variable (the grammar parses
both as an ``identifier``). And a Ruby method's head: a class method (``def self.parse``) and
an instance method (``def parse``) of one class share their symbol."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tree_sitter import Node

# A method's body sees none of the locals around it; a block's (``each { |x| … }``) sees them.
_HARD_SCOPES = frozenset({"method", "singleton_method", "class", "module", "singleton_class",
                          "program"})
# Where an identifier names a local: parameters and assignment targets (tree-sitter-ruby's
# locals.scm), a ``for`` variable and a ``rescue … => e``.
_DEFINING_PARENTS = frozenset({
    "method_parameters", "block_parameters", "lambda_parameters", "block_parameter",
    "splat_parameter", "hash_splat_parameter", "destructured_parameter",
    "left_assignment_list", "rest_assignment", "destructured_left_assignment",
    "exception_variable",
})
_DEFINING_FIELDS = {"keyword_parameter": "name", "optional_parameter": "name",
                    "assignment": "left", "operator_assignment": "left", "for": "pattern"}
# Identifiers that name the method itself, not a call of it (a call's method is a ``@ref``).
_NAMING_FIELDS = {"method": "name", "singleton_method": "name", "call": "method",
                  "alias": "name", "setter": "name"}
_DEF = re.compile(r"^[ \t]*def\b", re.MULTILINE)
_ON_AN_OBJECT = re.compile(r"[ \t]*def[ \t]+(?:self|[A-Z]\w*)[ \t]*\.")


def singleton_head(text: str) -> bool:
    """A Ruby method's text (or signature) defines it on an object, its class
    (``def self.parse``, ``def Parser.parse``): a class method, not the instance method of
    the same name that its symbol also names (rack's ``Multipart::Parser.parse``, twice)."""
    head = _DEF.search(text)
    return head is not None and _ON_AN_OBJECT.match(text, head.start()) is not None


_OWN_SINGLETON = re.compile(r"[ \t]*class[ \t]*<<[ \t]*self\b")
_DEF_NAME = re.compile(r"[ \t]*def[ \t]+(?:(?:self|[A-Z]\w*)[ \t]*\.[ \t]*)?([^\s(;]+)")


# How a Ruby class defines a method (``class_members``).
ON_ITSELF, IN_ITS_SINGLETON, ON_ITS_OBJECTS = "def self.", "class << self", "def"


def class_members(code: str) -> dict[str, set[str]]:
    """How a Ruby class's or module's ``code`` defines each method at its own level: on
    itself (``def self.name``, ``ON_ITSELF``), inside its ``class << self``
    (``IN_ITS_SINGLETON``: sinatra's ``Base.run!``), or for its objects (``def name``,
    ``ON_ITS_OBJECTS``); a nested class's are its own. Read by indentation, as Ruby is
    written."""
    lines = [line for line in code.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    head = next((i for i, line in enumerate(lines)
                 if re.match(r"[ \t]*(?:class|module)\b", line)), None)
    if head is None:
        return {}
    depths = [len(line) - len(line.lstrip()) for line in lines]
    level = min((d for d in depths[head + 1:] if d > depths[head]), default=0)
    ways: dict[str, set[str]] = {}
    block: int | None = None  # the indentation of the ``class << self`` being read
    for line, depth in zip(lines[head + 1:], depths[head + 1:], strict=True):
        if block is not None and depth <= block:
            block = None  # its ``end``, or code after a one-line block
        named = _DEF_NAME.match(line)
        if block is not None:
            way = IN_ITS_SINGLETON
        elif depth == level and _OWN_SINGLETON.match(line):
            block = depth
            continue
        else:
            way = ON_ITSELF if singleton_head(line) else ON_ITS_OBJECTS
        if named is not None and (block is not None or depth == level):
            ways.setdefault(named.group(1), set()).add(way)
    return ways


def bare_calls(identifiers: Iterable[Node]) -> list[Node]:
    """The identifiers among ``identifiers`` that call a method: not a local of their scope,
    not a definition's own name."""
    locals_by_scope: dict[int, set[str]] = {}
    calls = []
    for node in identifiers:
        if _field_is(node, _NAMING_FIELDS) or _defines_local(node):
            continue
        scope = _scope_of(node)
        if scope.id not in locals_by_scope:
            locals_by_scope[scope.id] = _locals(scope)
        if _text(node) not in locals_by_scope[scope.id]:
            calls.append(node)
    return calls


def _scope_of(node: Node) -> Node:
    scope = node
    while scope.parent is not None:
        scope = scope.parent
        if scope.type in _HARD_SCOPES:
            break
    return scope


def _locals(scope: Node) -> set[str]:
    """Names the scope's parameters and assignments define, its blocks' included."""
    names: set[str] = set()
    pending = list(scope.children)
    while pending:
        node = pending.pop()
        if node.type in _HARD_SCOPES:
            continue
        if node.type == "identifier" and _defines_local(node):
            names.add(_text(node))
        pending.extend(node.children)
    return names


def _defines_local(node: Node) -> bool:
    parent = node.parent
    return parent is not None and (parent.type in _DEFINING_PARENTS
                                   or _field_is(node, _DEFINING_FIELDS))


def _field_is(node: Node, fields_by_parent: dict[str, str]) -> bool:
    parent = node.parent
    field = fields_by_parent.get(parent.type) if parent is not None else None
    return field is not None and parent is not None and \
        parent.child_by_field_name(field) == node


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")

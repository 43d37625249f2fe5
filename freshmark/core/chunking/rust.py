"""Rust names a ``macro_rules!`` body uses. The grammar reads the body as token trees of
identifiers and punctuation, no expressions, so the reference query finds nothing there: a
name followed by ``(`` (``$crate::max_level()``, ``x.get()``) or by ``!`` (a macro invoked,
``$crate::__log!(…)``) is a call, and the item a ``$crate::`` path reaches (``$crate::
STATIC_MAX_LEVEL``, ``$crate::Level::Error``'s ``Level``) is used. Metavariables (``$x``)
are their own nodes, never names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tree_sitter import Node

# What a token tree holds that looks like a call and is none: ``if (a)``, ``match (x, y)``.
RUST_KEYWORDS = frozenset({
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else",
    "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod",
    "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
    "trait", "true", "type", "union", "unsafe", "use", "where", "while", "yield",
})  # fmt: skip


def macro_calls(bodies: Iterable[Node]) -> tuple[list[Node], list[Node]]:
    """(names called bare or through a path, names called after a ``.``) in the token trees
    ``bodies``, the right-hand sides of macro rules."""
    bare: list[Node] = []
    members: list[Node] = []
    for body in bodies:
        for name in _called_names(body):
            before = name.prev_sibling
            (members if before is not None and before.type == "." else bare).append(name)
    return bare, members


def _called_names(tree: Node) -> Iterator[Node]:
    pending = [tree]
    while pending:
        node = pending.pop()
        for child in node.children:
            if child.type == "token_tree":
                pending.append(child)
            elif child.type == "identifier" and _is_called(child):
                yield child
            elif child.type == "metavariable" and child.text == b"$crate":
                item = _crate_item(child)
                if item is not None and not _is_called(item):
                    yield item


def _crate_item(crate: Node) -> Node | None:
    """The item the path from ``$crate`` names: its first segment that is a type, a constant
    or a static (capitalised), else its last; the modules before it are only the way."""
    segment = crate
    while (separator := segment.next_sibling) is not None and separator.type == "::" and \
            (after := separator.next_sibling) is not None and after.type == "identifier":
        segment = after
        if after.text is not None and after.text[:1].isupper():
            return segment
    return segment if segment is not crate else None


def _is_called(name: Node) -> bool:
    after = name.next_sibling
    if after is None or name.text is None or name.text.decode() in RUST_KEYWORDS:
        return False
    if after.type == "!":
        return True
    opener = after.child(0) if after.type == "token_tree" else None
    return opener is not None and opener.type == "("

"""What the Kotlin parser is shown again when it fails a file: the constructs tree-sitter-kotlin
misreads, rewritten byte for byte so every node keeps its offsets and rows (names and chunk
text are read from the source as written).

- Modifiers opening the line of a primary constructor (okio's ``actual open class ByteString``
  then ``internal actual constructor(`` on the next line): with ``actual``/``expect`` or an
  annotation among them the grammar reads no constructor, and the class with all its methods
  becomes one error. Blanked, the line reads ``constructor(``, which it parses.
- A modifier keyword used as a variable's name opening a statement (okio's ``final = true``,
  ``by.writeUtf8("by")``): read as a modifier of a declaration that never comes, or as the
  ``by`` of a delegation, it fails the rest of the function. It is shown as ``_`` of its
  length, a name; so is ``get`` called with arguments (``get(copy)``), which is no getter.
- An annotation alone on the line above a property's getter or setter (``@JvmName("size")``
  then ``get() = getSize()``) under a property of no written type: it is blanked.
"""

from __future__ import annotations

import re

from freshmark.core.chunking.macros import blank_first_group

_ANNOTATION = rb"@[\w.]+(?:\([^()\n]*\))?"
_MODIFIER = rb"(?:public|private|protected|internal|actual|expect|" + _ANNOTATION + rb")"
_CONSTRUCTOR_MODIFIERS = re.compile(
    rb"^[ \t]*((?:" + _MODIFIER + rb"[ \t]+)+)(?=constructor[ \t]*\()", re.MULTILINE
)
# the words that fail a statement they open (``data``, ``value``, ``field``... do not)
_KEYWORD_NAME = re.compile(
    rb"^[ \t]*(by|final|open|abstract|override|private|public|internal|protected|lateinit"
    rb"|sealed|suspend|inline|external|tailrec|infix|vararg|crossinline|noinline|dynamic)"
    rb"(?=[ \t]*(?:\??\.|!!|\[|[-+*/%]?=(?!=)))"
    rb"|^[ \t]*(get)(?=[ \t]*\((?![ \t]*\)))",
    re.MULTILINE,
)
_ACCESSOR_ANNOTATIONS = re.compile(
    rb"^[ \t]*((?:" + _ANNOTATION + rb"[ \t]*)+)(?=\r?\n[ \t]*(?:get|set)[ \t]*\()", re.MULTILINE
)


def kotlin_shown(src: bytes) -> bytes:
    """``src`` with the constructs of the module doc rewritten, as long as they were."""
    src = _CONSTRUCTOR_MODIFIERS.sub(blank_first_group, src)
    src = _ACCESSOR_ANNOTATIONS.sub(blank_first_group, src)
    return _KEYWORD_NAME.sub(_as_name, src)


def _as_name(found: re.Match[bytes]) -> bytes:
    group = 1 if found.group(1) is not None else 2
    return found.group(0)[: found.start(group) - found.start(0)] + b"_" * len(found.group(group))

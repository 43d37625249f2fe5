"""Lines the C and C++ parsers are shown blank: a macro alone on its line.

tree-sitter does not expand macros, and a namespace opened by one (``FMT_BEGIN_NAMESPACE``,
``NLOHMANN_JSON_NAMESPACE_BEGIN namespace detail {``) makes the parser read the macro as a
return type and the rest of the namespace as one function's body: every definition inside
becomes one unnamed block. ctags solves this with a list of macros to ignore; a list cannot
know a project's macros, so the rule is the shape: an ALL_CAPS name with an underscore
(``G_BEGIN_DECLS``, ``__BEGIN_DECLS``) alone on its line, with no argument or with arguments
but no ``;`` (``Q_DECLARE_METATYPE(Foo)``), is blanked before parsing. A call ending in ``;``
is a statement the parser reads well and is kept, and so is a macro that wraps a type before a
name (``CJSON_PUBLIC(void) cJSON_Minify(char *json)``: its arguments end before the line does,
and blanked, the definition would lose its signature). The bytes are replaced by spaces, so every
node keeps its offsets and chunk text is read from the original source.
"""

from __future__ import annotations

import re

_BARE_MACRO = re.compile(
    rb"^[ \t]*_*[A-Z][A-Z0-9]*_[A-Z0-9_]*[ \t]*"
    rb"(?:\(\s*\)[ \t]*;?|\((?:[^;\n()]|\([^;\n()]*\))*\)|;)?[ \t]*$",
    re.MULTILINE,
)


def blank_bare_macros(src: bytes) -> bytes:
    """``src`` with every macro alone on its line replaced by spaces of the same length."""
    return _BARE_MACRO.sub(lambda found: b" " * len(found.group(0)), src)

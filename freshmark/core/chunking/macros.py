"""What the C and C++ parsers are shown blank: a macro alone on its line, and one that stands
before a declaration (``FMT_CONSTEXPR auto f()``, ``class FMT_API file``).

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

A comment after a macro alone on its line (``DOCTEST_..._COMPARISON(==, ...) // NOLINT``)
leaves it alone on its line.

The same names opening a declaration's line are specifiers the parser takes for its type: a
constructor after one (``FMT_CONSTEXPR size_padding(int n) : size(n) {``) reads as a field
whose initializer runs on, and fmt's ``struct size_padding`` swallowed 1,800 lines of
definitions. A run of them (with arguments or not, after ``static``, ``constexpr``... or a
``template <...>`` on the same line) is blanked when what follows declares something by
itself: a keyword (``template``, ``auto``, ``void``, ``operator``...), a destructor, a type
then a name, a constructor of a class the file defines, or one defined out of its class
wherever the class is declared (``SPDLOG_INLINE logger::logger(`` in a ``-inl.h`` beside the
class's header). Followed by a name and ``(`` alone the macro is the return type
(``LARGE_INTEGER now(void)``, ``CJSON_PUBLIC(void) f(...)``) and is kept; one followed by a
block (``FMT_TRY {``) is a statement wrapper and is blanked. A single capital word (``T``,
``FILE``, ``DWORD``) is no such macro: those are types.
Between ``class``/``struct``/``union`` and the name (``class FMT_API file``,
``class FMT_SO_VISIBILITY("default") format_error : ...``) they are visibility attributes,
blanked so the class keeps its name; between ``if`` and its condition (``if FMT_CONSTEXPR20
(...)``) one stands for ``constexpr``.

A test macro naming its test by a string (Catch2's and doctest's ``TEST_CASE("name", "[tag]")
{``, ``TEST_CASE_METHOD(Fixture, "name")``) reads as a call missing its ``;`` and a block of
no function: shown with its strings blanked it parses as a function, as GoogleTest's
``TEST(suite, name) {`` does, and ``naming`` reads the test's name from the source.
"""

from __future__ import annotations

import re

_NAME = rb"_*[A-Z][A-Z0-9]*_[A-Z0-9_]*"
_ARGS = rb"\((?:[^;\n()]|\([^;\n()]*\))*\)"
_STRING = rb'"(?:[^"\\\n]|\\.)*"'
# ``TEST_CASE("rotating_file_logger3", "[rotating_logger]") {`` (Catch2, doctest), before a
# block on its line or the next: a macro named for a test (``SCENARIO``, ``TEST_CASE_METHOD``;
# not gmock's ``MATCHER(IsEmpty, "is empty") {``) taking a string
_TEST_MACRO = rb"[A-Z0-9_]*(?:TEST|SCENARIO)[A-Z0-9_]*"
_TEST_ARG = rb"(?:[^;()\"]|" + _STRING + rb"|\((?:[^;()\"]|" + _STRING + rb")*\))"
_TEST_HEAD = (rb"[ \t]*" + _TEST_MACRO + rb"[ \t]*\([^;()\"]*" + _STRING + _TEST_ARG
              + rb"*\)(?=\s*\{)")  # doctest's ``TEST_CASE("name" * doctest::skip())`` too
_TEST_HEADS = re.compile(rb"^" + _TEST_HEAD, re.MULTILINE)
_BARE_MACRO = re.compile(
    rb"^(?!" + _TEST_HEAD + rb")"  # kept whole, its block on the next line
    rb"[ \t]*" + _NAME + rb"[ \t]*(?:\(\s*\)[ \t]*;?|" + _ARGS + rb"|;)?[ \t]*"
    rb"(?=(?://[^\n]*)?$)",  # a comment after it stays
    re.MULTILINE,
)
_MACRO_RUN = rb"(?:" + _NAME + rb"[ \t]*(?:" + _ARGS + rb")?[ \t]+)+"
_LEADING_MACROS = re.compile(
    rb"^([ \t]*(?:template[ \t]*<[^\n]*>[ \t]*)?"  # what may come first on the line
    rb"(?:(?:static|inline|constexpr|consteval|explicit|virtual|friend|extern)[ \t]+)*)"
    rb"(" + _MACRO_RUN + rb")([^\n]*)",
    re.MULTILINE,
)
_OPENS_DECLARATION = re.compile(
    rb"(?:template|class|struct|union|enum|typename|auto|void|bool|char|wchar_t|char8_t"
    rb"|char16_t|char32_t|int|short|long|unsigned|signed|float|double|static|inline"
    rb"|constexpr|consteval|constinit|extern|virtual|explicit|friend|typedef|using"
    rb"|namespace|operator|mutable|thread_local|register|decltype)\b"
    rb"|(?:const|volatile)\s+[A-Za-z_]"  # ``const char* f()``, not ``const& x``
    rb"|~\s*[A-Za-z_]"  # a destructor
    rb"|[A-Za-z_][\w:]*\s*<"  # a template type (``basic_string_view<Char> name()``)
    rb"|[A-Za-z_][\w:]*[\s*&]+[A-Za-z_]"  # a type, then a name
)
# ``if FMT_CONSTEXPR20 (c)``, not a preprocessor ``#if NAME(...)``
_IF_MACRO = re.compile(rb"^[^#\n]*?\bif[ \t]+(" + _NAME + rb")(?=[ \t]*\()", re.MULTILINE)
_CONSTRUCTOR = re.compile(rb"(?:([A-Za-z_]\w*)::)?([A-Za-z_]\w*)\s*\(")
# ``logger::logger(``, ``spdlog::sinks::base_sink<Mutex>::~base_sink(``: a qualified name whose
# last two parts are one name is a constructor or a destructor wherever its class is declared
_TEMPLATE_ARGS = rb"(?:\s*<[^;{}()\n]*>)?"
_OUT_OF_CLASS_STRUCTOR = re.compile(
    rb"(?:[A-Za-z_]\w*" + _TEMPLATE_ARGS + rb"\s*::\s*)*"
    rb"([A-Za-z_]\w*)" + _TEMPLATE_ARGS + rb"\s*::\s*~?\s*\1\s*\("
)
_RECORD_HEAD = re.compile(
    rb"\b(?:class|struct|union)\s+(" + _MACRO_RUN.replace(rb"[ \t]", rb"\s") + rb")"
    rb"(?=(?!final\b)[A-Za-z_]\w*\s*(?:\{|:(?!:)|final\b|<))"
)
_RECORD_NAME = re.compile(
    rb"\b(?:class|struct|union)\s+(?:" + _MACRO_RUN.replace(rb"[ \t]", rb"\s") + rb")?"
    rb"([A-Za-z_]\w*)"
)


def blank_bare_macros(src: bytes) -> bytes:
    """``src`` with every macro alone on its line replaced by spaces of the same length."""
    return _BARE_MACRO.sub(_spaces, src)


def blank_macros(src: bytes) -> bytes:
    """``src`` with the macros the parser misreads (see the module doc) replaced by spaces:
    those alone on their line, before a declaration on its line, and between ``class`` and
    the class's name."""
    src = _TEST_HEADS.sub(_test_name_blanked, blank_bare_macros(src))
    records = {found.group(1) for found in _RECORD_NAME.finditer(src)}

    def leading(found: re.Match[bytes]) -> bytes:
        opens_block = found.group(3).startswith(b"{") and b"(" not in found.group(2)
        if not opens_block and not _opens_declaration(found.group(3), records):
            return found.group(0)
        return found.group(1) + _spaces(found, 2) + found.group(3)

    src = _LEADING_MACROS.sub(leading, src)
    src = _IF_MACRO.sub(blank_first_group, src)
    return _RECORD_HEAD.sub(blank_first_group, src)


def _opens_declaration(rest: bytes, records: set[bytes]) -> bool:
    if _OPENS_DECLARATION.match(rest) or _OUT_OF_CLASS_STRUCTOR.match(rest):
        return True
    constructor = _CONSTRUCTOR.match(rest)
    return constructor is not None and constructor.group(2) in records and (
        constructor.group(1) in (None, constructor.group(2)))


def _test_name_blanked(found: re.Match[bytes]) -> bytes:
    """A test macro's head (``_TEST_HEAD``) blanked from the comma before its first string to
    its ``)``: ``TEST_CASE_METHOD(Fixture          ) {`` parses as a function."""
    head = found.group(0)
    first = head.index(b'"')
    comma = head.rfind(b",", 0, first)
    cut = comma if comma >= 0 else head.index(b"(") + 1
    close = head.rindex(b")")
    return head[:cut] + blanked(head[cut:close]) + head[close:]


def blank_first_group(found: re.Match[bytes]) -> bytes:
    """The match with its first group blanked (the group ends the match)."""
    return found.group(0)[:found.start(1) - found.start(0)] + _spaces(found, 1)


def _spaces(found: re.Match[bytes], group: int = 0) -> bytes:
    return blanked(found.group(group))


def blanked(data: bytes) -> bytes:
    """``data`` as spaces, line breaks kept, so rows and columns stay where they were."""
    return re.sub(rb"[^\r\n]", b" ", data)

"""Which languages freshmark parses, how it recognises them, and each grammar's unit rules.

Grammars come from the installed ``tree-sitter-*`` wheels; nothing is downloaded. A grammar
that fails to import makes its language unsupported (line-window fallback), never an error.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property

from tree_sitter import Language, Parser

log = logging.getLogger(__name__)

_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".tpp": "cpp", ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".ru": "ruby", ".thor": "ruby",
    ".php": "php", ".phtml": "php",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
}  # fmt: skip
# C++ in a ``.h`` header (fmt's ``include/fmt/*.h``): what C has none of. Parsed as C, its
# classes, templates and namespaces would be module blocks without a name.
_CPP_IN_HEADER = re.compile(
    r"^[ \t]*(?:namespace[ \t]+[\w:]*[ \t]*\{|template[ \t]*<|using[ \t]+namespace[ \t]|"
    r"class[ \t]+\w+|(?:public|private|protected)[ \t]*:)|\bstd::", re.MULTILINE)
_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_FILE_NAMES: dict[str, str] = {
    "Rakefile": "ruby", "Gemfile": "ruby", "Guardfile": "ruby", "Vagrantfile": "ruby",
    "Podfile": "ruby", "SConstruct": "python", "SConscript": "python", "Thorfile": "ruby",
    "Brewfile": "ruby", "Fastfile": "ruby", "Dangerfile": "ruby",
}  # fmt: skip
# An extension-less script's interpreter, named on its ``#!`` line (``bin/thor``).
_SHEBANG = re.compile(r"#![ \t]*\S*?(?:/env(?:[ \t]+-\S+)*)?[ \t]*/?(?:\S*/)?"
                      r"(python|ruby|node|nodejs|deno|bun|ts-node|php)[\d.]*\b")
_INTERPRETERS = {"python": "python", "ruby": "ruby", "node": "javascript",
                 "nodejs": "javascript", "deno": "typescript", "bun": "javascript",
                 "ts-node": "typescript", "php": "php"}

# language -> (module, factory function) of the grammar wheel
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "java": ("tree_sitter_java", "language"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
}
SUPPORTED_LANGUAGES: tuple[str, ...] = tuple(_GRAMMARS)


def detect_language(path: str, text: str | None = None) -> str | None:
    """The language of ``path`` by file name or extension, a ``.h`` header's by its ``text``
    too (C++ when it holds what C has not), an extension-less script's by its ``#!`` line;
    None when it cannot be parsed."""
    name = os.path.basename(path.replace("\\", "/"))
    if name in _FILE_NAMES:
        return _FILE_NAMES[name]
    _, ext = os.path.splitext(name)
    if not ext and text is not None and (shebang := _SHEBANG.match(text[:200])):
        return _INTERPRETERS[shebang.group(1)]
    language = _EXTENSIONS.get(ext.lower())
    if language == "c" and ext.lower() == ".h" and text is not None and \
            _CPP_IN_HEADER.search(_C_COMMENT.sub(" ", text)) is not None:
        return "cpp"  # by its code: a comment naming ``std::strtod`` makes no C++ (hiredis)
    return language


@cache
def grammar(language: str) -> Language | None:
    """The compiled grammar of ``language``, or None when its wheel is missing or unknown."""
    spec = _GRAMMARS.get(language)
    if spec is None:
        return None
    module_name, factory = spec
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, factory)())
    except (ImportError, AttributeError, ValueError) as exc:
        log.warning("tree-sitter grammar for %s unavailable: %s", language, exc)
        return None


_local = threading.local()


def parser_for(language: str) -> Parser | None:
    """A parser for ``language``, one per thread (parsers are not thread-safe)."""
    parsers: dict[str, Parser] = _local.__dict__.setdefault("parsers", {})
    if language not in parsers:
        lang = grammar(language)
        if lang is None:
            return None
        parsers[language] = Parser(lang)
    return parsers[language]


@dataclass(frozen=True)
class Rules:
    """Node types that make units in one grammar.

    ``functions``: function-like units (a chunk each); ``containers``: node type -> kind of
    class-like units (summary chunk, members chunked separately); ``wrappers``: nodes wrapping
    one declaration (export, decorators, templates) that then belongs to the unit;
    ``transparent``: nodes whose children belong to the enclosing scope (error recovery,
    preprocessor conditionals, grouped declarations); ``bodyless_functions``: function types
    that are units even without a body; ``prefix_types``: sibling nodes directly above a unit
    that belong to it besides comments (Rust attributes); ``bare_macros``: a macro alone on
    its line or before a declaration is read as blank (``macros.py``).
    """

    functions: frozenset[str]
    containers: Mapping[str, str]
    wrappers: frozenset[str] = frozenset()
    transparent: frozenset[str] = frozenset()
    bodyless_functions: frozenset[str] = frozenset()
    prefix_types: frozenset[str] = frozenset()
    # Functions directly inside these container kinds are still "function", not "method".
    namespace_kinds: frozenset[str] = frozenset({"module"})
    # Expression nodes that are units only as ``export default`` values (named ``default``).
    anonymous: frozenset[str] = frozenset()
    docstrings: bool = False  # the first string of a body is the doc (Python)
    closing_lines: bool = True  # bodies end on a `}` / `end` line a summary keeps (not Python)
    keywords: frozenset[str] = field(default_factory=frozenset)
    # The language's own functions and types: no reference written alone (``print(x)``), a
    # method's name after a receiver (``console.print(x)``).
    builtins: frozenset[str] = field(default_factory=frozenset)
    bare_macros: bool = False

    @cached_property
    def unit_types(self) -> frozenset[str]:
        return self.functions | frozenset(self.containers) | self.anonymous


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_FUNCTIONS = _f(
    "expression_statement",  # `Cart.prototype.add = function`, `exports.f = () =>`, TS namespaces
    "function_declaration", "generator_function_declaration", "method_definition",
    "lexical_declaration", "variable_declaration", "field_definition",
    "public_field_definition",
    "pair",  # `parse: function () {}` inside an object literal that is a unit
)  # fmt: skip
_JS_ANONYMOUS = _f(
    "function_expression", "arrow_function", "generator_function", "class",
    "object",  # `export default { parse () {…} }` (``javascript.js_default_object``)
    # `export default supported && function () {…}` (``javascript.js_guarded_default``)
    "binary_expression", "parenthesized_expression", "ternary_expression",
)  # fmt: skip
_JS_KEYWORDS = _f("this", "super", "require", "undefined", "arguments", "constructor")
_C_TRANSPARENT = _f(
    "ERROR", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
    "linkage_specification", "declaration_list",
)  # fmt: skip
_GO_BUILTINS = _f(
    "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8",
    "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
    "uintptr", "any", "comparable", "append", "cap", "clear", "close", "complex", "copy",
    "delete", "imag", "len", "make", "max", "min", "new", "panic", "print", "println", "real",
    "recover",
)  # fmt: skip


def _python_keywords() -> frozenset[str]:
    import keyword

    return frozenset(keyword.kwlist) | _f("self", "cls")


def _python_builtins() -> frozenset[str]:
    import builtins

    return frozenset(dir(builtins))


RULES: dict[str, Rules] = {
    "python": Rules(
        functions=_f("function_definition"),
        containers={"class_definition": "class"},
        wrappers=_f("decorated_definition"),
        # Definitions under a module's or a class's ``if``/``try`` (a platform's branch, an
        # import's fallback) are its own: requests' ``proxy_bypass_registry`` on win32.
        transparent=_f("ERROR", "if_statement", "elif_clause", "else_clause", "try_statement",
                       "except_clause", "finally_clause", "block"),
        docstrings=True,
        closing_lines=False,
        keywords=_python_keywords(),
        builtins=_python_builtins(),
    ),
    "javascript": Rules(
        functions=_JS_FUNCTIONS,
        containers={"class_declaration": "class"},
        wrappers=_f("export_statement"),
        transparent=_f("ERROR"),
        anonymous=_JS_ANONYMOUS,
        keywords=_JS_KEYWORDS,
    ),
    "typescript": Rules(
        functions=_JS_FUNCTIONS,
        containers={
            "class_declaration": "class",
            "abstract_class_declaration": "class",
            "interface_declaration": "interface",
            "type_alias_declaration": "interface",
            "enum_declaration": "enum",
            "internal_module": "module",
            "module": "module",
        },  # fmt: skip
        wrappers=_f("export_statement", "ambient_declaration"),
        transparent=_f("ERROR"),
        anonymous=_JS_ANONYMOUS,
        keywords=_JS_KEYWORDS,
    ),
    "java": Rules(
        functions=_f(
            "method_declaration", "constructor_declaration", "compact_constructor_declaration",
            # a field holding a lambda or an anonymous class (``java.java_field``)
            "field_declaration", "constant_declaration",
        ),  # fmt: skip
        containers={
            "class_declaration": "class",
            "record_declaration": "class",
            "interface_declaration": "interface",
            "annotation_type_declaration": "interface",
            "enum_declaration": "enum",
            # a constant with a body of its own (jsoup's tokeniser states): its methods
            "enum_constant": "class",
        },  # fmt: skip
        transparent=_f("ERROR", "enum_body_declarations"),
        keywords=_f("this", "super"),
    ),
    "go": Rules(
        functions=_f("function_declaration", "method_declaration"),
        containers={"type_declaration": "struct", "type_spec": "struct"},
        transparent=_f("ERROR", "type_declaration"),
        builtins=_GO_BUILTINS,
    ),
    "rust": Rules(
        functions=_f("function_item", "macro_definition"),
        containers={
            "struct_item": "struct",
            "union_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "module",
            "type_item": "interface",  # ``pub type Result<T> = …``, as TypeScript's aliases
        },  # fmt: skip
        transparent=_f("ERROR"),
        bodyless_functions=_f("macro_definition"),
        prefix_types=_f("attribute_item"),
        keywords=_f("self", "Self", "super", "crate"),
    ),
    "c": Rules(
        functions=_f("function_definition"),
        containers={
            "struct_specifier": "struct",
            "union_specifier": "struct",
            "enum_specifier": "enum",
            "type_definition": "struct",
        },  # fmt: skip
        transparent=_C_TRANSPARENT,
        bare_macros=True,
    ),
    "cpp": Rules(
        functions=_f("function_definition"),
        containers={
            "class_specifier": "class",
            "struct_specifier": "struct",
            "union_specifier": "struct",
            "enum_specifier": "enum",
            "type_definition": "struct",
            "namespace_definition": "module",
        },  # fmt: skip
        # a class member declaring a type (``struct position_t {…};``) wraps that type
        wrappers=_f("template_declaration", "friend_declaration", "field_declaration"),
        transparent=_C_TRANSPARENT | _f("namespace_definition"),
        keywords=_f("this", "std"),
        bare_macros=True,
    ),
    "csharp": Rules(
        functions=_f(
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "operator_declaration",
            "conversion_operator_declaration",
            "property_declaration",  # with code in it (csharp.csharp_member)
            "indexer_declaration",  # likewise (csharp.csharp_indexer)
            "delegate_declaration",  # a named method type (Polly's ExceptionPredicate)
        ),  # fmt: skip
        containers={
            "class_declaration": "class",
            "record_declaration": "class",
            "struct_declaration": "struct",
            "record_struct_declaration": "struct",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "namespace_declaration": "module",
        },  # fmt: skip
        # members under ``#if``/``#else`` are the class's (Polly's EnsureNotDisposed)
        transparent=_f("ERROR", "preproc_if", "preproc_else", "preproc_elif"),
        bodyless_functions=_f("delegate_declaration"),
        keywords=_f("this", "base", "nameof", "var"),
    ),
    "ruby": Rules(
        functions=_f("method", "singleton_method"),
        containers={"class": "class", "module": "module"},
        # ``private def x`` and ``memoize def x`` hand the method to a call.
        wrappers=_f("call", "argument_list"),
        # Definitions made under a condition (``if defined?(…)`` … ``else`` …) are the
        # scope's own.
        transparent=_f("ERROR", "singleton_class", "body_statement", "if", "unless", "then",
                       "else", "elsif", "if_modifier", "unless_modifier"),
        bodyless_functions=_f("method", "singleton_method"),
        namespace_kinds=frozenset(),
        keywords=_f(
            "self",
            "super",
            "new",
            "require",
            "require_relative",
            "attr_reader",
            "attr_writer",
            "attr_accessor",
            "include",
            "extend",
            "prepend",
            "raise",
            "puts",
            "private",
            "protected",
            "public",
            "module_function",
        ),  # fmt: skip
    ),
    "php": Rules(
        functions=_f("function_definition", "method_declaration"),
        containers={
            "class_declaration": "class",
            "interface_declaration": "interface",
            "trait_declaration": "trait",
            "enum_declaration": "enum",
            "namespace_definition": "module",
        },  # fmt: skip
        transparent=_f("ERROR", "namespace_definition"),
        keywords=_f("self", "parent", "static", "this"),
    ),
    "kotlin": Rules(
        functions=_f("function_declaration"),
        containers={"class_declaration": "class", "object_declaration": "class"},
        # A companion object's members are its class's (``Order.of``).
        transparent=_f("ERROR", "companion_object", "class_body"),
        keywords=_f("this", "super", "it"),
        # the standard library's scope functions: ``run { … }`` calls no project's ``run``
        builtins=_f("run", "let", "apply", "also", "with"),
    ),
    "swift": Rules(
        functions=_f(
            "function_declaration", "init_declaration", "deinit_declaration",
            "subscript_declaration",
            "property_declaration",  # with code in it (swift.swift_property)
        ),  # fmt: skip
        containers={"class_declaration": "class", "protocol_declaration": "interface"},
        transparent=_f("ERROR"),
        keywords=_f("self", "super", "init"),
    ),
}
RULES["tsx"] = RULES["typescript"]

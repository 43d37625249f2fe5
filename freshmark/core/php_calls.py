"""How PHP code calls a name: through ``$this->``, a class (``parent::``, ``Utils::``), a
namespace (``\\json_decode``, ``\\GuzzleHttp\\count``) or another value; the namespace a
file declares at a line and the classes its ``use`` statements rename (``call_forms`` for the
other languages; the same reading of the token before the name).
"""

from __future__ import annotations

import re

from freshmark.core.call_forms import uses_before

# What PHP writes before a method's name: ``parent::``, its own object or class (``$this->``,
# ``self::``, ``static::``), a member of it (``$this->socket->``), a class (``Utils::``), or
# another value (``$handler->``, ``foo()->``); nullsafe ``?->`` too.
_PHP_ARROW = r"\s*\??->\s*"
_PHP_BEFORE = (
    ("parent", re.compile(r"\bparent\s*::\s*$")),
    ("$this", re.compile(rf"(?:\$this{_PHP_ARROW}|\b(?:self|static)\s*::\s*)$")),
    ("$this->", re.compile(rf"\$this{_PHP_ARROW}(\w+){_PHP_ARROW}$")),
    ("->", re.compile(rf"{_PHP_ARROW}$")),
    # A class a value holds: ``$class::create()``, ``$this->factory::create()``.
    ("->", re.compile(rf"(?:\$\w+|{_PHP_ARROW}\w+|[)\]])\s*::\s*$")),
)
_PHP_CLASS_BEFORE = re.compile(r"(\w+)\s*::\s*$")
# A function's namespace written before its name: ``\`` (the global one: ``\count(…)``),
# ``\GuzzleHttp\`` (fully qualified), ``Psr7\`` (relative to the file's).
_PHP_NAMESPACE_BEFORE = re.compile(r"[\w\\]*\\$")
_PHP_DECLARED = re.compile(r"\bfunction\s+&?\s*$")
# Comments and strings, where a name is no call (``#[Attribute]`` is code).
_PHP_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|#(?!\[)[^\n]*|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"",
                        re.DOTALL)
_PHP_CALLABLE_TEXT = re.compile(r"(['\"])\\*(?:\w+\\+)*\w+(?:::\w+)?\1")
_PHP_NAMESPACE = re.compile(r"^[ \t]*namespace\b[ \t]*([\w\\]*)\s*[;{]", re.MULTILINE)
_PHP_USE = re.compile(r"^[ \t]*use\s[^;]*;", re.MULTILINE)
_PHP_ALIAS = re.compile(r"(\w+)\s+as\s+(\w+)")
_PHP_EXTENDS = re.compile(r"\bextends\s+\\?(?:\w+\\)*(\w+)")


def php_call_receivers(code: str, name: str) -> set[str]:
    """What PHP ``code`` calls ``name`` through, at each call: ``parent``, ``$this`` (also
    ``self::`` and ``static::``), ``$this->socket`` (a member's value, another object),
    ``->`` (any other value), a class's name (``Utils::``), "" bare and a namespace ending
    in ``\\`` (``\\`` of ``\\count(…)``, ``\\GuzzleHttp\\``: a function, never a method);
    ``?`` for a use not followed by ``(`` (a property, a constant, a callable array's
    ``'name'``): no call it can tell. Its own ``function name`` is no use."""
    found: set[str] = set()
    code = _PHP_NOISE.sub(_php_callable_text_only, code)
    for before, end in uses_before(code, name, _PHP_DECLARED, 120):
        if not re.match(r"\s*\(", code[end:]):
            found.add("?")
            continue
        found.add(_php_receiver(before))
    return found


def _php_callable_text_only(noise: re.Match[str]) -> str:
    """A PHP comment or string as ``php_call_receivers`` reads it: a string that names a
    callable (``'json_decode'``, ``'Foo::write'``) as written, any other text as none (the
    ``'json_decode error: '`` of a message names no call)."""
    return noise.group(0) if _PHP_CALLABLE_TEXT.fullmatch(noise.group(0)) else "''"


def php_namespace_at(file_text: str, line: int) -> str:
    """The namespace a PHP file's ``file_text`` declares for its line ``line`` (``namespace
    GuzzleHttp;`` or ``namespace GuzzleHttp { … }`` before it), "" for the global one."""
    namespace = ""
    for declared in _PHP_NAMESPACE.finditer(file_text):
        if file_text.count("\n", 0, declared.start()) >= line:
            break
        namespace = (declared.group(1) or "").lstrip("\\")
    return namespace


def _php_receiver(before: str) -> str:
    """The receiver ``php_call_receivers`` names for a call written after ``before``."""
    for form, pattern in _PHP_BEFORE:
        if found := pattern.search(before):
            return form + (found.group(1) if found.groups() else "")
    if namespace := _PHP_NAMESPACE_BEFORE.search(before):
        return namespace.group(0)
    scope = _PHP_CLASS_BEFORE.search(before)
    return scope.group(1) if scope else ""


def php_use_aliases(file_text: str) -> dict[str, str]:
    """The names a PHP file's ``use`` statements give classes (``use Foo\\Bar as Baz;``,
    ``use Foo\\{Bar as Baz}``), each with the class's own name: ``{"Baz": "Bar"}``."""
    return {alias: name for statement in _PHP_USE.findall(file_text)
            for name, alias in _PHP_ALIAS.findall(statement)}


def php_member_types(class_code: str, member: str) -> set[str]:
    """The classes, by their own names, a PHP class's ``class_code`` gives its property
    ``member``: declared with one type (``protected UdpSocket $socket;``, a promoted
    constructor parameter too) or assigned a new object (``$this->socket = new
    UdpSocket(…)``). A union or untyped property gives none."""
    word = re.escape(member)
    declared = re.findall(rf"\b(?:public|protected|private|readonly|var)\s+(?:(?:readonly|"
                          rf"static)\s+)*\??\\?(?:\w+\\)*(\w+)\s+\${word}\b", class_code)
    made = re.findall(rf"\$this{_PHP_ARROW}{word}\s*=\s*new\s+\\?(?:\w+\\)*(\w+)", class_code)
    return set(declared) | set(made)


def php_base_name(signature: str) -> str | None:
    """The class a PHP class's ``signature`` extends, by its own name (``\\Foo\\Bar``: ``Bar``),
    None where it extends none."""
    base = _PHP_EXTENDS.search(signature)
    return base.group(1) if base else None

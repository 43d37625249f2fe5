"""How a caller's code calls a name: through its own receiver (``self.parse()``), only so, or
bare (``WithField(...)``, not ``entry.WithField(...)``).

A chunk's references are names without their receiver (the stamp keeps names only), so the
symbol graph confirms a call by file and class alone. Where that is not enough, the slice
builder reads the caller's code today and asks it how the name is called; regular expressions
suffice because only the token before the name decides.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator

# A receiver of the caller's own class or object: ``self.``, ``this.``, ``Self::``, ``$this->``.
_OWN_RECEIVER = r"(?:\$this|\b(?:self|cls|this|Self|static|super\(\)))\s*(?:\.|::|->)\s*"
# A Go definition's head (``func (e *Entry) WithField``, ``func WithField``): it names, not calls.
_GO_FUNC_HEAD = re.compile(r"^\s*func\s*(?:\([^)]*\)\s*)?\w+", re.MULTILINE)
_GO_TYPE_BRACE = re.compile(r"\b(?:interface|struct)\s*$")  # ``interface{}``: a type's braces
_GO_VERSION = re.compile(r"v\d+")
_GO_LINE_COMMENT = re.compile(r"//[^\n]*")
_GO_RECEIVER = re.compile(r"^\s*func\s*\(\s*(\w+)\s", re.MULTILINE)


# A Python method's head: its first parameter is its receiver, whatever its name.
_PY_DEF = re.compile(r"^[ \t]*(?:async\s+)?def\s+\w+\s*\(\s*(\w*)", re.MULTILINE)
_PY_STATIC = re.compile(r"^[ \t]*@staticmethod\b", re.MULTILINE)


def python_receivers(code: str) -> frozenset[str]:
    """The names a Python method's ``code`` calls its own object by: its first parameter
    (``self``, ``cls``, loguru's ``__self``) and the names it binds to it (``logger =
    self``); none for a static method's, nor for code whose outermost line is no ``def``
    (a long method's later part, whose first ``def`` is a nested class's)."""
    head = _PY_DEF.search(code)  # after its decorators, if any
    if head is None or not head.group(1) or _PY_STATIC.search(code, 0, head.start()):
        return frozenset()
    indent = len(head.group(0)) - len(head.group(0).lstrip())
    if any(line.strip() and len(line) - len(line.lstrip()) < indent
           for line in code.splitlines()):
        return frozenset()
    first = head.group(1)
    aliases = re.findall(rf"^[ \t]*(\w+)\s*=\s*{re.escape(first)}[ \t]*$", code, re.MULTILINE)
    return frozenset({first, *aliases})


def bound_from_own_object(code: str, value: str, receivers: Collection[str]) -> bool:
    """Python ``code`` assigns ``value`` what a method of its own object, one of
    ``receivers``, returns (starlette's ``new = self.mutablecopy()``): it may be of the
    caller's own class; ``self.handlers.pop()`` returns a member's item."""
    return bool(own_methods_binding(code, value, receivers))


def python_base_names(signature: str, class_name: str) -> list[str]:
    """The classes a Python class's ``signature`` names as its bases (``class
    GZipDecoder(ContentDecoder)``), without their modules, type parameters or keywords
    (``metaclass=ABCMeta``)."""
    head = re.match(r"\s*(?:\[[^\]]*\])?\s*\((.*)\)", signature.split(class_name, 1)[-1])
    if head is None:
        return []
    bases = head.group(1)
    while (plain := re.sub(r"\[[^\[\]]*\]", "", bases)) != bases:
        bases = plain
    return [found.group(1) for part in bases.split(",") if "=" not in part
            and (found := re.search(r"(\w+)\s*$", part)) is not None]


def own_methods_binding(code: str, value: str, receivers: Collection[str]) -> set[str]:
    """The methods of its own object (through one of ``receivers``) whose result Python
    ``code`` assigns to ``value`` (httpx's ``decoder = self._get_content_decoder()``)."""
    words = _alternation(receivers)
    return set(re.findall(rf"^[ \t]*{re.escape(value)}\s*(?::[^=\n]*)?=\s*"
                          rf"(?:{words})\s*\.\s*(\w+)\s*\(", code,
                          re.MULTILINE)) if words else set()


def _own_receiver(receivers: Collection[str]) -> str:
    """The pattern of a receiver of the caller's own object: ``receivers`` (a Python method's,
    ``python_receivers``) or ``super()``; without them, every language's usual words."""
    if not receivers:
        return _OWN_RECEIVER
    return rf"(?:(?<![\w$.])(?:{_alternation(receivers)})\b|\bsuper\(\))\s*\.\s*"


def _alternation(words: Collection[str]) -> str:
    """``words`` as one regular expression's alternatives, each matched as written."""
    return "|".join(re.escape(word) for word in sorted(words))


def calls_through_own_receiver(code: str, name: str, receivers: Collection[str] = ()) -> bool:
    """``code`` calls ``name`` on its own receiver (``self.name``, ``this.name``, …, or one of
    ``receivers``); PHP's ``$this->name`` without a ``(`` reads a property (league/csv's
    ``$this->select``)."""
    own = _own_receiver(receivers)
    return any(not (found.group(0).startswith("$") and found.group(1) != "(")
               for found in re.finditer(rf"{own}{re.escape(name)}\b\s*(\(?)", code))


def calls_only_through_own_receiver(code: str, name: str,
                                    receivers: Collection[str] = ()) -> bool:
    """``code`` uses ``name`` and every use is on its own receiver (``self.name``,
    ``this.name``, or one of ``receivers``): then a module-level ``name`` is not what it
    calls."""
    uses = list(re.finditer(rf"(?<![\w$]){re.escape(name)}\b", code))
    own = list(re.finditer(rf"{_own_receiver(receivers)}{re.escape(name)}\b", code))
    return bool(own) and len(own) == len(uses)


_DECLARED = re.compile(r"\b(?:def|class|function|func|fun)\s+$")
_AFTER_RECEIVER = re.compile(r"(\w+|[)\]])\s*[?!]?\.\s*$")
# Objects every JavaScript runtime defines: ``JSON.stringify`` is the runtime's, never a
# module function of that name.
JS_GLOBAL_OBJECTS = frozenset({
    "JSON", "Math", "Object", "Array", "Promise", "Reflect", "Number", "String", "Symbol",
    "Date", "Intl", "Atomics", "BigInt", "Boolean", "Error", "RegExp", "Map", "Set",
    "WeakMap", "WeakSet", "Proxy", "console", "process", "Buffer", "globalThis", "window",
    "document",
})
# A name used as an object, its member read or called (``pino.destination(…)``), not the
# name called through ``call``, ``apply`` or ``bind``.
_AS_OBJECT = re.compile(r"\s*\??\.\s*(?!(?:call|apply|bind)\b)[\w$#]")


def receivers_of(code: str, name: str) -> set[str]:
    """What Python ``code`` writes before each use of ``name``: the word before its dot
    (``self``, ``cells``, ``console``; ``)`` for a call's result), "" where the name stands
    alone (``cell_len(…)``). Its own ``def name`` is no use."""
    found: set[str] = set()
    for before, _end in uses_before(code, name, _DECLARED):
        receiver = _AFTER_RECEIVER.search(before)
        found.add(receiver.group(1) if receiver else "")
    return found


def uses_before(code: str, name: str, declared: re.Pattern[str], reach: int = 80
          ) -> Iterator[tuple[str, int]]:
    """Each use of ``name`` in ``code`` (not part of a longer word, nor a ``$variable``) but
    its own declaration (``declared`` ends the text before it): the ``reach`` characters
    written before it, and where it ends."""
    for use in re.finditer(rf"(?<![\w$]){re.escape(name)}\b", code):
        before = code[max(0, use.start() - reach) : use.start()]
        if not declared.search(before):
            yield before, use.end()


def used_through_a_value_of(code: str, name: str, class_name: str) -> bool:
    """Python or JavaScript ``code`` uses ``name`` on ``class_name`` itself (``tqdm.write``),
    on an instance it makes there (its constructor, by making it), or on a value it binds on a
    line naming the class (``ws = WebSocket(…)``, ``request: Request``, ``with Lock() as
    lock``): naming the class elsewhere says nothing of ``sys.stdout.write``."""
    cls = re.escape(class_name)
    if name in _CONSTRUCTORS and re.search(rf"\b{cls}\s*\(", code) or \
            re.search(rf"\b{cls}\s*\([^()\n]*\)\s*\.\s*{re.escape(name)}\b", code):
        return True  # ``Request(scope).receive()``, not ``getattr(fp, 'buffer').write``
    named = [line for line in code.splitlines() if re.search(rf"\b{cls}\b", line)]
    return any(receiver == class_name or receiver and _binds(named, receiver)
               for receiver in receivers_of(code, name))


_CONSTRUCTORS = frozenset({"__init__", "__new__", "constructor"})  # run by ``Cls(…)``


def _binds(lines: list[str], receiver: str) -> bool:
    """One of ``lines`` binds ``receiver``: assigns it, annotates it, names it after ``as``
    or ``for``, or checks its class (``assert isinstance(websocket, WebSocket)``)."""
    word = re.escape(receiver)
    binding = re.compile(rf"(?<!\w){word}\s*[:=](?!=)|\b(?:as|for)\s+{word}\b|"
                         rf"\bisinstance\(\s*{word}\s*,")
    return any(binding.search(line) for line in lines)


def types_binding(code: str, value: str) -> set[str]:
    """The capitalised names (classes, by convention) Python ``code`` binds ``value`` to: in
    its annotation (``field: DataField``), what it assigns it (``decoder =
    TextDecoder(…)``), what it names ``as`` it (``with Lock() as lock``) or checks it against
    (``isinstance(request, Request)``); another value's annotation on the line is not its."""
    word = re.escape(value)
    found: list[str] = []
    for binding in (rf"(?<![\w.]){word}\s*:\s*([^=,)\n]+)",
                    rf"(?<![\w.]){word}\s*(?::[^=\n]*)?=(?!=)([^\n]+)",
                    rf"([^\n]+)\bas\s+{word}\b", rf"\bisinstance\(\s*{word}\s*,([^)\n]+)\)"):
        found += re.findall(binding, code)
    return {name for part in found for name in re.findall(r"\b[A-Z]\w*", part)} - _CONSTANTS


_CONSTANTS = frozenset({"None", "True", "False"})  # capitalised, and no classes


def named_after(value: str, class_name: str) -> bool:
    """``value`` is named as its class by convention: the class's name in lower case
    (``headers``: Headers) or its last word (``field``: DataField, ``_transport``:
    HTTPTransport), whole or as the value's last word (``content_decoder``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", class_name)
    last = value.strip("_").lower().rsplit("_", 1)[-1]
    return value.strip("_").lower().replace("_", "") == class_name.lower() or \
        bool(words) and last == words[-1].lower()


def used_on_own_object(code: str, name: str, class_name: str) -> bool:
    """Swift, Kotlin, Java or C# ``code`` uses ``name`` bare (its own object's, implicitly),
    on its own receiver or on its class ``class_name`` (a static member); ``$0.help`` or
    ``other.help`` reads another value's member."""
    receivers = receivers_of(code, name)
    return bool(receivers & {"", "self", "this", "Self", class_name})


def js_calls_only_through_globals(code: str, name: str) -> bool:
    """JavaScript ``code`` uses ``name`` only as a member of the runtime's objects
    (``JSON.stringify``, ``Math.max``)."""
    receivers = receivers_of(code, name)
    return bool(receivers) and receivers <= JS_GLOBAL_OBJECTS


def used_only_as_object(code: str, name: str) -> bool:
    """Every use of ``name`` in ``code`` reads a member of it (``pino.destination(…)``,
    ``Foo.prototype``): the name is an object there, not called."""
    uses = list(re.finditer(rf"(?<![\w$.]){re.escape(name)}\b", code))
    return bool(uses) and all(_AS_OBJECT.match(code, use.end()) for use in uses)


# A C++ scope before ``::``: ``detail``, ``formatter<T>`` (template arguments one level deep;
# Rust's turbofish ``Vec::<u8>::`` too).
_SCOPE_BEFORE = re.compile(r"(\w+)\s*(?:(?:::)?\s*<(?:[^<>;{}]|<[^<>;{}]*>)*>)?\s*::\s*$")


def qualifiers_of(code: str, name: str, declared: bool = False) -> set[str]:
    """What C++ ``code`` writes before each use of ``name``: the scope before its ``::``
    (``std``, ``detail``; ``formatter`` of ``formatter<T>::``), "" for a use without one
    (bare, ``x.name``, ``p->name``, ``::name``). ``declared``: the first use is the code's
    own name in its head, no use."""
    found: set[str] = set()
    uses = list(re.finditer(rf"(?<![\w$~]){re.escape(name)}\b", code))
    for use in uses[1 if declared else 0 :]:
        scope = _SCOPE_BEFORE.search(code[max(0, use.start() - 120) : use.start()])
        found.add(scope.group(1) if scope else "")
    return found


_RUST_LINE_COMMENT = re.compile(r"//[^\n]*")  # doc comments too: ``[`Metadata::builder()`]``
_RUST_DECLARED = re.compile(r"\bfn\s+$")
_RUST_OWN_VALUE = re.compile(r"(?<![\w.])self\s*\.\s*$")
_RUST_VALUE = re.compile(r"(?:\w|[)\]?])\s*\.\s*$")
# ``<T as Trait>::name`` and ``<T as fmt::Display>::name``: the trait's.
_RUST_AS_TRAIT = re.compile(r"\bas\s+(?:\w+\s*::\s*)*(\w+)\s*(?:<[^<>]*>)?\s*>\s*::\s*$")
_RUST_ALIAS = re.compile(r"(\w+)\s+as\s+(\w+)")


def rust_call_paths(code: str, name: str) -> set[str]:
    """What Rust ``code`` writes before each use of ``name``: the type, trait or module
    before its ``::`` (``Record``, ``Self``, ``Display`` of ``<T as fmt::Display>::``,
    ``kv``), ``self.`` for its own value's, ``.`` another value's (``builder.args``), ""
    for a use bare. Its own ``fn name`` and its comments are no use."""
    found: set[str] = set()
    for before, _end in uses_before(_RUST_LINE_COMMENT.sub("", code), name, _RUST_DECLARED, 120):
        if _RUST_OWN_VALUE.search(before) or _RUST_VALUE.search(before):
            found.add("self." if _RUST_OWN_VALUE.search(before) else ".")
            continue
        scope = _RUST_AS_TRAIT.search(before) or _SCOPE_BEFORE.search(before)
        found.add(scope.group(1) if scope else "")
    return found


def rust_aliases(imports: Iterable[str]) -> dict[str, str]:
    """The names Rust imports give items (``use crate::Record as R``): ``{"R": "Record"}``."""
    return {alias: name for spec in imports for name, alias in _RUST_ALIAS.findall(spec)}


# A Ruby comment opens a line or follows a space; ``#{`` interpolates, ``Request#params`` in a
# string names a method.
_RUBY_COMMENT = re.compile(r"(?:^|(?<=\s))#(?!\{)[^\n]*", re.MULTILINE)
_RUBY_DECLARED = re.compile(r"\bdef\s+(?:\w+\s*\.\s*)?$")
_RUBY_SCOPE = re.compile(r"(\w+)\s*::\s*$")
_RUBY_AFTER = r"\s*&?\.\s*$"
# An object just made: ``Generator.new(params).dump``; its own class's, ``new(app).to_app``.
_RUBY_NEW = re.compile(r"(?:(?<![\w@.])(?:self\s*\.\s*(?:class\s*\.\s*)?)?|(\w+)\s*(?:::|\.)\s*)"
                       rf"new\b\s*(?:\([^()\n]*\))?{_RUBY_AFTER}")
_RUBY_OWN_CLASS = re.compile(rf"(?<![\w@.])self\s*\.\s*class{_RUBY_AFTER}")
_RUBY_RECEIVER = re.compile(rf"(@{{0,2}}\w+|[)\]}}]){_RUBY_AFTER}")


def ruby_call_receivers(code: str, name: str) -> set[str]:
    """What Ruby ``code`` calls ``name`` through, at each call: "" bare (its own object's,
    implicitly), ``self``, ``self.class``, a constant by its own name (``Multipart`` of
    ``Rack::Multipart.parse_multipart``, ``Parser`` of ``Parser::parse``: a class's or a
    module's method), an object a class just made (``Generator.new`` of
    ``Generator.new(params).dump``; ``.new`` its own class's), a variable (``auth``,
    ``@parser``) or ``.`` any other value (``foo(x).name``). Its own ``def name`` (``def
    self.name``), a symbol (``:name``), a hash's key (``name:``), a method named in a string
    (``Request#name``) and comments are no call."""
    found: set[str] = set()
    text = _RUBY_COMMENT.sub("", code)
    # ``valid?`` ends in its mark: a name's end is no word boundary there.
    for use in re.finditer(rf"(?<![\w@$]){re.escape(name)}(?![\w?!]|:(?!:))", text):
        before = text[max(0, use.start() - 120) : use.start()]
        if _RUBY_DECLARED.search(before) or before.endswith((":", "#")) and \
                not before.endswith("::"):
            continue
        found.add(_ruby_receiver(before))
    return found


def _ruby_receiver(before: str) -> str:
    """The receiver ``ruby_call_receivers`` names for a call written after ``before``."""
    if scope := _RUBY_SCOPE.search(before):
        return scope.group(1) if scope.group(1)[:1].isupper() else "."
    if made := _RUBY_NEW.search(before):
        maker = made.group(1) or ""
        return f"{maker}.new" if not maker or maker[:1].isupper() else "."
    if _RUBY_OWN_CLASS.search(before):
        return "self.class"
    receiver = _RUBY_RECEIVER.search(before)
    if receiver is None:
        return "" if not re.search(r"\.\s*$", before) else "."
    return receiver.group(1) if receiver.group(1)[:1] not in ")]}" else "."


def ruby_bound_to(code: str, variable: str, class_name: str, own: bool = False) -> bool:
    """Ruby ``code`` assigns ``variable`` on a line naming ``class_name`` (``auth =
    Basic::Request.new(env)``, ``@parser ||= Parser.new``), or, in that class's ``own`` code,
    an object it makes (``builder = self.new(**options)``): a value of that class, as often
    as not."""
    made = r"|(?<![\w@.])(?:self\s*\.\s*)?new\b" if own else ""
    return re.search(rf"(?<![\w@]){re.escape(variable)}\s*(?:\|\||&&)?=(?![=~>])[^\n]*"
                     rf"(?:(?<![\w@]){re.escape(class_name)}\b{made})", code) is not None


def go_package_names(imports: Iterable[str]) -> set[str]:
    """The names Go code calls imported packages by: an import path's last element, past a
    major version (``github.com/go-chi/chi/v5``: ``chi``; ``gopkg.in/yaml.v3``: ``yaml``)."""
    names: set[str] = set()
    for spec in imports:
        parts = [p for p in spec.split("/") if p]
        if len(parts) > 1 and _GO_VERSION.fullmatch(parts[-1]):
            parts.pop()
        if parts:
            names.add(re.sub(r"\.v\d+$", "", parts[-1]))
    return names


def _go_without_heads(code: str) -> str:
    """Go ``code`` without its definitions' heads: the name, and the parameters and results
    up to the body's ``{`` (or the line's end at depth 0, where Go ends a body-less
    declaration). ``func Chain(m ...func(http.Handler) http.Handler)`` names the type
    ``http.Handler``; no call of a method ``Handler`` is in it."""
    out: list[str] = []
    done = 0
    for head in _GO_FUNC_HEAD.finditer(code):
        if head.start() < done:
            continue
        out.append(code[done : head.start()])
        depth, end = 0, head.end()
        while end < len(code):
            char = code[end]
            if char in "([" or char == "{" and _GO_TYPE_BRACE.search(code, head.end(), end):
                depth += 1
            elif char in ")]}" and depth:
                depth -= 1
            elif char in "{\n" and not depth:
                break
            end += 1
        done = end
    return "".join(out) + code[done:]


def _go_used_bare(body: str, name: str) -> bool:
    """``name`` stands alone in Go ``body``, but as a literal's key or a label (``&Mux{
    notFound: mx.notFound}`` sets a field; ``case *Mux:`` does use the type)."""
    for use in re.finditer(rf"(?<![\w.]){re.escape(name)}\b(\s*:(?!=))?", body):
        line = body[body.rfind("\n", 0, use.start()) + 1 : use.start()]
        if not use.group(1) or line.lstrip().startswith("case"):
            return True
    return False


def go_called_through_a_value(code: str, name: str) -> bool:
    """Go ``code`` calls ``name`` through a value (``x.name(…)``); a selector not called
    (``r.URL.Path``, ``compressor.Handler``) is a field's read as often as a method's value."""
    return re.search(rf"(?:\w|\))\s*\.\s*{re.escape(name)}\s*\(", code) is not None


def go_call_reaches(code: str, name: str, *, callee_owner: str, caller_owner: str,
                    packages: Collection[str] = ()) -> bool | None:
    """Whether Go ``code`` (a definition of ``caller_owner``'s, "" for a function) calls
    ``name``, a function of its own package (``callee_owner`` "") or a method of
    ``callee_owner``: True surely, False not at all, None maybe (the name alone says so).

    A function of the package is used bare (``WithField(…)``, or as a value) and only it is;
    a method is called through a value (``x.WithField``), and through the caller's own
    receiver (``entry.WithField`` in ``func (entry *Entry)``) it is the receiver type's.
    A name after an imported package's (``packages``: ``http.Handler``) is that package's
    function or type, never a method; a signature's parameters and results name types, so
    they are read for a function or a type (a use of it), never for a method."""
    if not callee_owner:
        return _go_used_bare(_GO_LINE_COMMENT.sub("", _GO_FUNC_HEAD.sub("", code)), name)
    body = _GO_LINE_COMMENT.sub("", _go_without_heads(code))
    operands = set(re.findall(rf"(\w+|\))\s*\.\s*{re.escape(name)}\b", body)) - set(packages)
    if not operands:
        return False
    receiver = _GO_RECEIVER.search(code)
    if caller_owner and receiver is not None and operands == {receiver.group(1)}:
        return caller_owner == callee_owner
    return None


def any_call(reached: set[bool | None]) -> bool | None:
    """What the uses of a name say together: a call where one surely reaches the callee,
    none where every one surely does not, else maybe."""
    return True if True in reached else False if reached == {False} else None

"""Lines that declare a name, read from a chunk's text: a constant, a field, a module
variable, a function declared inside another, an interface's method signature. A look-up of a
name no chunk is named by is answered by the chunk holding such a line (``structure``), and a
compact answer is shown from it (``declared_at``). Regular expressions over lines rather than
a parse: the chunk's text is all a ranking step holds, in any of the languages chunked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from freshmark.core.stamp import own_name

# Words that may open a declaration before the name it declares (any of the languages chunked).
_DECLARING = ("export|public|private|protected|internal|static|final|readonly|const|let|var|"
              "val|pub|def|function|fn|func|type|enum|struct|class|interface|abstract|"
              "override|volatile|transient|using|typedef|constexpr|constinit|extern|inline")


@lru_cache(maxsize=64)
def _definition_line(name: str) -> re.Pattern[str]:
    """A line that declares ``name`` (``BIT_SET = ...``, ``const methodsWithoutBody = [``,
    ``public static final Type BIT_SET = ...``, ``@JvmField public val STAR: T = …``,
    ``LIMIT: int = 3``, Go's ``ErrWriter
    io.Writer = os.Stderr`` and ``var RemoteConfig remoteConfigFactory``, C's ``#define
    SDS_MAX 1024``, Python's ``import X as NAME``, CommonJS's ``exports.NAME = …``), not one
    that uses it."""
    # Annotations may open the line (Kotlin's ``@JvmField public val STAR: …``), and so may
    # a Rust visibility with its parentheses (``pub(crate) static NAME: …``). Without a
    # declaring word, ``NAME: value,`` is a dict's or an object's entry that uses the name
    # (rich's ``SIMPLE_HEAVY: SIMPLE,``), not ``LIMIT: int = 3``.
    opening = r"^[ \t]*(?:@[\w.]+(?:\([^\n)]*\))?[ \t]+)*(?:pub[ \t]*\([\w: \t]*\)[ \t]+)?"
    named = rf"(?<![.\w]){re.escape(name)}\b"
    # Go's ``Name Type = value``; a C statement (``redisFD fd = c->fd;``) names the type first.
    typed = r"(?![^\n]*;[ \t]*$)[ \t]+[\w.*\[\]]+[ \t]*(?:=(?!=)|(?://[^\n]*)?$)"
    declared = (rf"{opening}(?:{_DECLARING})\b[^\n=(]*?{named}"
                rf"(?:[ \t]*(?::(?!:)|=(?!=)|;)|{typed})"
                rf"|{opening}{named}(?:[ \t]*(?::(?!:)(?![^\n]*,[ \t]*$)|=(?!=)|;)|{typed})")
    # A function declared inside another (ofetch's ``async function onError(`` in
    # createFetch) has no chunk of its own: its line declares it.
    function = (rf"{opening}(?:(?:export|default|async|static|pub|unsafe|inline)[ \t]+)*"
                rf"(?:def|function\*?|fn|func)[ \t]+{named}[ \t]*[(<]")
    # Go's ``MouseModeCellMotion`` alone on its line inside a ``const (`` block (after an
    # ``iota``), not a Ruby method's body returning a constant (sinatra's
    # ``CALLERS_TO_IGNORE``); C's function pointer type ``typedef void (*jq_msg_cb)(void *, jv);``.
    alone = (rf"^[ \t]*const[ \t]*\((?:(?!\n[ \t]*\))[\s\S])*?\n[ \t]*{named}[ \t]*"
             rf"(?://[^\n]*)?$")
    pointer = rf"^[ \t]*typedef\b[^\n;]*\([ \t]*\*[ \t]*{named}[ \t]*\)"
    # An enum's case (PHP's ``case Utf8 = "…";``, Swift's ``case north, south``), never a
    # switch's label (``case Utf8:``).
    enum_case = rf"^[ \t]*case[ \t]+(?:[\w \t]+,[ \t]*)?{named}[ \t]*(?:=(?!=)|;|,|$)"
    # Ruby's ``alias_method :all_tasks, :all_commands`` and ``alias all_tasks all_commands``.
    ruby_alias = rf"^[ \t]*(?:alias_method[ \t(]+:|alias[ \t]+:?){re.escape(name)}\b"
    # Python's ``from .filters import FILTERS as DEFAULT_FILTERS`` names it too.
    aliased = rf"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t][^\n#]*\bas[ \t]+{named}"
    # A CommonJS module's export is its declaration (express's ``exports.wetag = …``), as
    # the chunker names ``exports.f = function`` ``f``; another receiver's member is not.
    exported = rf"^[ \t]*(?:module\.)?exports\.{re.escape(name)}[ \t]*=(?!=)"
    return re.compile(rf"{declared}|{function}|{alone}|{pointer}|{enum_case}|{ruby_alias}|"
                      rf"{aliased}|{exported}|"
                      rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}\b", re.M)


def defined_in_text(text: str, names: Iterable[str], in_function: bool = False) -> bool:
    """``text`` has a line declaring one of ``names`` (spelt as the query writes them).
    ``in_function``: as ``declaring_row``'s, a function's ``name = value`` is no declaration
    (viper's ``Reset`` assigning the package's ``SupportedExts``)."""
    if in_function:
        return declaring_row(text, list(names), in_function=True) is not None
    return any(_definition_line(name).search(text) for name in names)


def declaring_row(text: str, names: Iterable[str], members: bool = False,
                  in_function: bool = False) -> int | None:
    """The first row (0-based) of ``text`` declaring one of ``names``; None when none does.
    ``members``: a method's signature line counts too (an interface's ``void enqueue(…);``
    for ``Call.enqueue``). ``in_function``: ``text`` is a function's, whose ``name = value``
    lines are local variables, not the name's declaration; a function declared there is."""
    lines = [_definition_line(name) for name in names] + \
        [_member_line(name.rsplit(".", 1)[-1]) for name in names if members]
    found = [m.start() for line in lines for m in line.finditer(text)
             if not in_function or not _local_value(text, m.start())]
    return text.count("\n", 0, min(found)) if found else None


# ``name = value`` whose value is no function (``raw_body = body`` in a Ruby method).
_ASSIGNED_VALUE = re.compile(r"[ \t]*(?:(?:const|let|var|my|local)[ \t]+)?[\w.$]+[ \t]*"
                             r"(?::[^=\n]*)?=(?![=>~])(?![ \t]*(?:async\b|function\b|"
                             r"lambda\b|\([^)\n]{0,200}\)[ \t]*(?::[^=\n]{0,100})?=>|\w+[ \t]*=>|"
                             r"->|proc\b))")


def _local_value(text: str, offset: int) -> bool:
    return _ASSIGNED_VALUE.match(text, offset) is not None


@lru_cache(maxsize=64)
def _member_line(member: str) -> re.Pattern[str]:
    """A line that declares a method ``member`` by its signature alone, as an interface does:
    Go's ``Use(middlewares ...)``, Java's ``void use(Middleware m);``, TypeScript's
    ``use?(m: Middleware): void;``; or Ruby's ``attr_accessor :redis_pool``."""
    name = re.escape(member)
    return re.compile(rf"^[ \t]*(?:[\w<>\[\],.?*&]+[ \t]+)*{name}\??[ \t]*"
                      r"(?:<[^>\n]*>)?[ \t]*\("
                      rf"|^[ \t]*attr_(?:accessor|reader|writer)\b[^\n]*:{name}\b", re.M)


def declares_member(symbol: str, text: str, dotted_names: Iterable[str]) -> bool:
    """The chunk ``symbol`` (its text ``text``) is the owner of a member the query names
    (``Router.Use`` as the slash path ``Router/Use``) and declares it by a signature line:
    an interface's methods are not chunks of their own, so the interface answers for them."""
    owner = own_name(symbol)
    return any(name.split("/")[-2:-1] == [owner] and
               _member_line(name.rsplit("/", 1)[-1]).search(text) is not None
               for name in dotted_names if "/" in name)


def kept_row_line(text: str, row: int, lines: Sequence[str], first: int, head_rows: int = 0
                  ) -> int | None:
    """The file line of row ``row`` of ``text``, a chunk's text that keeps the file's lines
    from ``first`` on word for word but leaves some out (an outline's elided member bodies
    and docs): the same line, counted among the rows equal to it. ``lines``: the file's
    lines from ``first`` on. ``head_rows``: the text's first rows are its definition's head,
    carried from above ``first``, never marked. None when the file does not hold the row."""
    rows = text.split("\n")
    if not head_rows <= row < len(rows):
        return None
    wanted = rows[row]
    equal_before = rows[head_rows:row].count(wanted)
    found = [first + offset for offset, line in enumerate(lines) if line == wanted]
    return found[equal_before] if equal_before < len(found) else None

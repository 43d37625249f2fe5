"""The import block of a file, and the part of it a symbol uses (SPEC §7: L1 carries the
symbol's imports). Pure functions over a file's text."""

from __future__ import annotations

import re

from freshmark.core.chunking import file_symbols, normalize_language, split_lines

IMPORT_BLOCK_MAX_LINES = 60
IMPORT_TRIM_OVER_LINES = 12  # a longer import block is trimmed to what the symbol uses
IMPORT_KEPT_MAX_LINES = 30  # and capped, should the symbol use most of it (Java: a line a class)
# How an import line starts, per language (chunking's names): only a source language's own
# keywords, so prose (a Markdown line "using an embedded target…") is never an import.
# A destructured require may list its names one a line (``const {`` … ``} = require('m')``), so
# its pattern spans lines: _starts_import reads such a statement whole.
_JS_IMPORT = r"import\b|require\b|(?:const|let|var)\s+[^;]+?=\s*require\("
_IMPORT_KEYWORDS = {
    "python": r"import\b|from\s+\S+\s+import\b",
    "javascript": _JS_IMPORT,
    "typescript": _JS_IMPORT,
    "tsx": _JS_IMPORT,
    "go": r"import\b|package\b",
    "java": r"import\b|package\b",
    "kotlin": r"import\b|package\b",
    "rust": r"(?:pub(?:\([^)]*\))?\s+)?use\b",
    "c": r"#\s*include\b",
    "cpp": r"#\s*include\b|using\b|import\b",
    "csharp": r"using\b",
    "ruby": r"require(?:_relative)?\b",
    "php": r"use\b|(?:require|include)(?:_once)?\b",
    "swift": r"import\b",
}
_IMPORT_LINES = {language: re.compile(rf"^\s*(?:{keywords})")
                 for language, keywords in _IMPORT_KEYWORDS.items()}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A name and the member mark written before it, if any: a dot (``.``, ``?.``, ``.#``; not a
# spread's ``...`` nor a range's ``..``, whose names are values) or JavaScript's private ``#``.
_NAME_AFTER = re.compile(r"(?P<member>(?<!\.)\.#?|#)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)")
# Languages whose imports bind members too: Kotlin imports an extension function by its name
# (``import okio.buffer`` for ``source.buffer()``).
_MEMBERS_IMPORTED = frozenset({"kotlin"})


def _import_line(path: str, language: str | None) -> re.Pattern[str] | None:
    """The pattern of an import line in ``language`` (else the language ``path`` tells);
    None for a file without imports (prose, config, a language freshmark does not parse)."""
    language = normalize_language(path, language or None)
    return _IMPORT_LINES.get(language) if language else None


def _import_statements(lines: list[str], first: int, language: str
                       ) -> list[list[tuple[int, str]]]:
    """The block's import statements as their numbered lines (a parenthesised or braced import
    runs on to its close); other lines between them (a comment, a constant) are in none."""
    statements: list[list[tuple[int, str]]] = []
    import_line = _import_line("", language)
    index = 0
    while import_line is not None and index < len(lines):
        if not _starts_import(import_line, lines, index):
            index += 1
            continue
        end = _statement_end(lines, index + 1)
        statements.append([(first + offset, lines[offset]) for offset in range(index, end)])
        index = end
    return statements


def _starts_import(import_line: re.Pattern[str], lines: list[str], index: int) -> bool:
    """Whether the statement on ``lines[index]`` is an import: its line says so, or, where the
    line opens a bracket, its whole statement does (``const {`` of a destructured require)."""
    line = lines[index]
    if import_line.match(line):
        return True
    if _opened(line) <= 0:
        return False
    statement = lines[index : _statement_end(lines, index + 1)]
    return import_line.match("\n".join(statement)) is not None


def _opened(line: str) -> int:
    """Brackets a line opens minus those it closes (a group of imports spans lines)."""
    return line.count("(") + line.count("{") - line.count(")") - line.count("}")


# Names an import binds, per language, or None where the line cannot tell them (a wildcard, a
# C# namespace, a C header, a Ruby file, a side-effect import): such a line is always kept.
def _python_names(statement: str) -> set[str] | None:
    """``a`` for ``import a.b``, ``c`` for ``x as c``, the names after ``from m import``."""
    match = re.search(r"\bimport\b(.*)", statement, re.S)
    if match is None or "*" in match.group(1):
        return None
    names: set[str] = set()
    for item in match.group(1).replace("(", " ").replace(")", " ").split(","):
        words = item.split("#")[0].split()
        if words:
            names.add(words[-1] if len(words) == 3 and words[1] == "as"
                      else words[0].split(".")[0])
    return names


def _braced_names(group: str) -> set[str]:
    """``a, b as c, type d`` (JS, TS, PHP) or ``a, b: c`` (destructuring): a, c and d."""
    names: set[str] = set()
    for item in group.split(","):
        words = re.split(r"\s+as\s+|:", item.strip())[-1].split()
        if words:
            names.add(words[-1])
    return names


def _js_names(statement: str) -> set[str] | None:
    """``import d, {a, b as c} from 'm'``, ``import * as ns from 'm'``, ``const {a} =
    require('m')``."""
    required = re.match(r"\s*(?:const|let|var)\s+(.+?)\s*=\s*require\(", statement, re.S)
    if required:
        target = required.group(1)
        return _braced_names(target.strip("{} ")) if "{" in target else {target.strip()}
    clause = re.match(r"\s*import\s+(?:type\s+)?(.*?)\s+from\b", statement, re.S)
    if clause is None:
        return None  # import 'm' for its side effects
    braced = re.search(r"\{(.*)\}", clause.group(1), re.S)
    names = _braced_names(braced.group(1)) if braced else set()
    outside = re.sub(r"\{.*\}", "", clause.group(1), flags=re.S)
    names.update(_IDENTIFIER.findall(re.sub(r"\*\s+as\b", "", outside)))
    return names


def _go_names(spec: str) -> set[str] | None:
    """``alias "path"`` binds alias; ``"path/name"`` the package, whose name is not always its
    path's last element (``yaml.v3``, ``go-sqlite3``, ``v2``), so every likely spelling."""
    match = re.match(r'\s*(?:import\s+)?([\w.]+\s+)?"([^"]+)"', spec)
    if match is None:
        return None
    alias = (match.group(1) or "").strip()
    if alias in ("_", "."):
        return None  # imported for its effects, or into the file's own namespace
    if alias:
        return {alias}
    elements = match.group(2).split("/")
    last = elements[-2] if re.fullmatch(r"v\d+", elements[-1]) and len(elements) > 1 \
        else elements[-1]
    return {last, *re.split(r"[.-]", last)}


def _dotted_names(statement: str) -> set[str] | None:
    """Java and Kotlin: ``import a.b.C;`` binds C, ``import static a.b.C.m;`` m, Kotlin's
    ``import a.b.C as D`` D; a wildcard, anything."""
    match = re.match(r"\s*import\s+(?:static\s+)?([\w.]+)(\s+as\s+(\w+))?", statement)
    if match is None or statement.rstrip().rstrip(";").endswith("*"):
        return None
    return {match.group(3) or match.group(1).rsplit(".", 1)[-1]}


def _path_names(statement: str, separator: str) -> set[str] | None:
    """Rust ``use a::b::{C, D as E};`` and PHP ``use A\\B\\{C, D}``: the last elements."""
    body = re.sub(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+(?:function\s+|const\s+)?", "",
                  statement).strip().rstrip(";")
    braced = re.search(r"\{(.*)\}", body, re.S)
    if "*" in body:
        return None
    if braced:
        names = {name.split(separator)[-1] for name in _braced_names(braced.group(1))}
        if "self" in names:  # binds the module itself (``fmt`` of ``fmt::{self, Debug}``)
            names.discard("self")
            names.add(body[: braced.start()].rstrip(separator).split(separator)[-1])
        return names
    aliased = re.search(r"\s+as\s+(\w+)$", body)
    return {aliased.group(1) if aliased else body.split(separator)[-1]}


def _csharp_names(statement: str) -> set[str] | None:
    """``using X = A.B;`` binds X; a namespace brought in whole can be used by any name."""
    match = re.match(r"\s*using\s+(\w+)\s*=", statement)
    return {match.group(1)} if match else None


_NAMES_BY_LANGUAGE = {
    "python": _python_names,
    "javascript": _js_names,
    "typescript": _js_names,
    "tsx": _js_names,
    "go": _go_names,
    "java": _dotted_names,
    "kotlin": _dotted_names,
    "rust": lambda statement: _path_names(statement, "::"),
    "php": lambda statement: _path_names(statement, "\\"),
    "csharp": _csharp_names,
}


def _bound_names(statement: str, language: str) -> set[str] | None:
    """The names an import statement binds; None when they cannot be told (keep it)."""
    names_of = _NAMES_BY_LANGUAGE.get(language)
    if names_of is None or re.match(r"\s*package\b", statement):
        return None
    return names_of(statement)


def _kept(statement: list[tuple[int, str]], used: set[str], language: str
          ) -> list[tuple[int, str]]:
    """The statement's lines the symbol needs: all of it, none, or, for a group written one
    name a line (Go's ``import (…)``, ``import {…} from``, ``from m import (…)``,
    ``use m::{…};``), the opening and closing lines around the names it uses."""
    whole_used = _uses(_bound_names(" ".join(line for _, line in statement), language), used)
    if len(statement) <= 2 or _opened(statement[0][1]) <= 0:
        return statement if whole_used else []
    listed = _go_names if language == "go" else _listed_names
    inner = [(number, line) for number, line in statement[1:-1]
             if line.strip() and not line.strip().startswith(("//", "#"))
             and _uses(listed(line), used)]
    if inner:
        return [statement[0], *inner, statement[-1]]
    # A name on the opening or closing line itself (``import { a,`` … ``b } from``).
    return [statement[0], statement[-1]] if language != "go" and whole_used else []


def _listed_names(line: str) -> set[str] | None:
    """The names one line of a group binds: the alias of ``a as b``, else the last part of
    each comma-separated entry (``Y`` of ``x::Y``, ``type Foo``); None for a wildcard or a
    nested group, which may bind anything."""
    if "*" in line or "{" in line or "(" in line:
        return None
    names = set()
    for entry in line.split(","):
        words = _IDENTIFIER.findall(entry)
        if words:
            names.add(words[-1])
    return names


def _uses(names: set[str] | None, used: set[str]) -> bool:
    return names is None or bool(names & used)


def used_import_lines(lines: list[str], first: int, user_text: str, language: str,
                      name: str = "") -> list[tuple[int, str]]:
    """(line number, line) of the import statements whose names ``user_text`` uses, in
    ``language`` (chunking's names: python, go, javascript...); an import whose names cannot be
    told from its line is kept. Its comments and plain strings use no name (express's
    ``'http://example.com'`` in a doc comment), and where it declares the function ``name``,
    a parameter shadows an import of its name (``res.sendFile(path, …)``)."""
    code = _NOT_CODE[_syntax(language)].sub(_blanked, user_text)
    used = _code_uses(code, language, name)
    return [numbered for statement in _import_statements(lines, first, language)
            for numbered in _kept(statement, used, language)]


# What is no code in a symbol's text: its comments, and its strings but those that may hold
# code (an f-string, a template literal, Ruby's ``#{}``, Swift's ``\(``, Kotlin's ``$name``).
# A single quote opens a string only where the language says so: elsewhere it holds one
# character (Rust's ``'a`` is a lifetime). PHP's ``#[`` opens an attribute, not a comment.
_STRINGS = r'"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"'
_QUOTED = r"'(?:[^'\\\n]|\\.)*'"
_SLASHED = r"//[^\n]*|/\*[\s\S]*?\*/"
_NOT_CODE = {
    "hash": re.compile(rf"{_STRINGS}|'''[\s\S]*?'''|{_QUOTED}|#[^\n]*"),
    "php": re.compile(rf"{_STRINGS}|{_QUOTED}|#(?!\[)[^\n]*|{_SLASHED}"),
    "js": re.compile(rf"{_STRINGS}|{_QUOTED}|`(?:[^`\\]|\\.)*`|{_SLASHED}"),
    "slash": re.compile(rf"{_STRINGS}|'(?:[^'\\\n]|\\[^'\n]{{1,8}})'|`[^`]*`|{_SLASHED}"),
}
_MAY_HOLD_CODE = re.compile(r"\{|\\\(|\$[A-Za-z_]")


def _syntax(language: str) -> str:
    """Which comments and strings ``language`` writes (``_NOT_CODE``)."""
    if language in ("python", "ruby"):
        return "hash"
    if language in ("javascript", "typescript", "tsx"):
        return "js"
    return "php" if language == "php" else "slash"


def _blanked(found: re.Match[str]) -> str:
    text = found.group(0)
    return text if text[0] in "\"'`" and _MAY_HOLD_CODE.search(text) else " "


def _code_uses(code: str, language: str, name: str) -> set[str]:
    """The names ``code`` (its comments and strings blanked) uses: where it declares the
    function ``name``, those its parameter list reads (types, defaults) and those the rest
    reads but for the parameters."""
    listed = _parameter_list(code, name) if name else None
    if listed is None:
        return _used_names(code, language)
    start, end = listed
    parameters: set[str] = set()
    read = _used_names(code[:start], language)
    for entry in _entries(code[start:end]):
        declared, rest = _declared_parameter(entry, language)
        parameters |= declared
        read |= _used_names(rest, language)
    return read | (_used_names(code[end:], language) - parameters)


def _parameter_list(code: str, name: str) -> tuple[int, int] | None:
    """Where the parameters of the function ``name`` are written, inside its parentheses
    (``def name(``, a C-family ``name(``, ``name = function name(``, ``name: function(``);
    None where ``code`` declares no such function, and for a class (``class Name(Base)``
    lists its bases)."""
    declared = re.search(rf"(?<![\w$])(class\s+|struct\s+)?{re.escape(name)}\s*"
                         r"(?:<[^>\n]*>|\[[^\]\n]*\])?\s*(?:[:=]\s*(?:async\s+)?"
                         r"(?:function\b\s*\*?\s*(?:[\w$]+\s*)?)?)?\(", code)
    if declared is None or declared.group(1):
        return None
    end, depth = declared.end(), 1
    while end < len(code) and depth:
        depth += 1 if code[end] in "([{" else -1 if code[end] in ")]}" else 0
        end += 1
    return declared.end(), end - 1


def _entries(parameters: str) -> list[str]:
    """The comma-separated entries of a parameter list, commas inside brackets kept."""
    entries, depth, begun = [], 0, 0
    for index, char in enumerate(parameters):
        arrow = char == ">" and parameters[index - 1 : index] in ("=", "-")  # ``=>``, ``->``
        depth += 1 if char in "([{<" else -1 if char in ")]}>" and not arrow else 0
        if char == "," and depth == 0:
            entries.append(parameters[begun:index])
            begun = index + 1
    return [*entries, parameters[begun:]]


def _declared_parameter(entry: str, language: str) -> tuple[set[str], str]:
    """The names one parameter entry declares, and the rest of it (its type, its default):
    Go's ``path string`` declares its first word; ``path: str`` (Python, TypeScript, Rust,
    Kotlin, Swift) the last before its colon; ``String path`` and ``path = 1`` the last
    before its default; a destructuring (``{a, b}``) every name in it."""
    head, equals, default = entry.partition("=")
    head, colon, annotation = (head, "", "") if language == "go" else head.partition(":")
    words = list(_IDENTIFIER.finditer(head))
    if not words:
        return set(), entry
    if head.lstrip().startswith(("{", "[")):
        return {word.group(0) for word in words}, annotation + equals + default
    word = words[0] if language == "go" else words[-1]
    rest = head[: word.start()] + " " + head[word.end():]
    return {word.group(0)}, rest + colon + annotation + equals + default


def _used_names(text: str, language: str) -> set[str]:
    """The names ``text`` uses: a name written after a member dot is a member of some value
    (ky's ``this.#options.retry.delay(…)`` uses no imported ``delay``), while the name before
    the dot is used (Python's ``os.path``, Go's ``fmt.Println``)."""
    found = _NAME_AFTER.finditer(text)
    if language in _MEMBERS_IMPORTED:
        return {match.group("name") for match in found}
    return {match.group("name") for match in found if match.group("member") is None}


def import_block(path: str, text: str, language: str | None = None) -> tuple[int, int] | None:
    """1-based lines from the first to the last import statement before the file's first
    definition (a multi-line import runs to its closing bracket); None without imports, and
    for a file of no source language (``language``, else told by its path). A line that reads
    like an import of its language counts only where the parser found one in its statement,
    so an example in a doc comment (Rust's ``//!``, ``/*! */``) is not taken for the
    imports."""
    import_line = _import_line(path, language)
    if import_line is None:
        return None
    lines = split_lines(text)
    symbols = file_symbols(path, text)
    unit_starts = [spans[0][0] for spans in symbols.units.values()]
    first_unit = min(unit_starts, default=len(lines) + 1)
    parsed_rows = None if symbols.parsed is None else \
        {row + 1 for row, _ in symbols.parsed.facts.imports}
    found = [number for number in range(1, first_unit)
             if _starts_import(import_line, lines, number - 1)
             and (parsed_rows is None or any(row in parsed_rows for row in
                                             range(number, _statement_end(lines, number) + 1)))]
    if not found:
        return None
    # At most IMPORT_BLOCK_MAX_LINES, cut after a whole statement, never inside one (sqlmodel's
    # ``from ._compat import (`` ran past the cap, and its cut line read as its close).
    last = [number for number in found if number < found[0] + IMPORT_BLOCK_MAX_LINES][-1]
    return found[0], _statement_end(lines, last, last=first_unit - 1)


def _statement_end(lines: list[str], number: int, last: int | None = None) -> int:
    """The 1-based line where the statement starting on line ``number`` closes its brackets
    (not past ``last``)."""
    limit = len(lines) if last is None else min(last, len(lines))
    end, depth = number, _opened(lines[number - 1])
    while depth > 0 and end < limit:
        end += 1
        depth += _opened(lines[end - 1])
    return end

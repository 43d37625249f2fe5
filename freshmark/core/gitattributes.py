"""``.gitattributes``: the rules and the attributes they give a path (pure).

A line whose pattern can match nothing (``[z-a]*``, an unclosed ``[``) is dropped, as git's
wildmatch never matches it, and reported in ``AttributeRules.invalid``; the other lines apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshmark.core.globs import Glob, InvalidGlob, compile_glob

AttrValue = bool | str
REPORTED_ATTRIBUTES = frozenset(
    {"linguist-generated", "linguist-vendored", "linguist-documentation", "binary", "diff", "text"}
)
_MACROS: dict[str, tuple[tuple[str, AttrValue | None], ...]] = {
    "binary": (("binary", True), ("diff", False), ("merge", False), ("text", False)),
}


@dataclass(frozen=True)
class AttributeRule:
    glob: Glob
    basename_only: bool  # a pattern without "/" matches the file name at any depth
    assignments: tuple[tuple[str, AttrValue | None], ...]  # None: "!name", back to unspecified


@dataclass(frozen=True)
class AttributeRules:
    """The rules of one ``.gitattributes`` file in file order, and the lines dropped."""

    rules: tuple[AttributeRule, ...] = ()
    invalid: tuple[str, ...] = ()  # "pattern: why" for each dropped line


def _split_pattern(line: str) -> tuple[str, str]:
    """Split an attributes line into its pattern and the assignment text (quoted patterns too)."""
    if line.startswith('"'):
        end = 1
        while end < len(line) and (line[end] != '"' or line[end - 1] == "\\"):
            end += 1
        return line[1:end].replace('\\"', '"').replace("\\\\", "\\"), line[end + 1 :]
    pattern, *rest = line.split(None, 1)
    return pattern, rest[0] if rest else ""


def _assignments(token: str) -> tuple[tuple[str, AttrValue | None], ...]:
    value: AttrValue | None
    if token.startswith("-"):
        name, value = token[1:], False
    elif token.startswith("!"):
        name, value = token[1:], None
    elif "=" in token:
        name, value = token.split("=", 1)
    else:
        name, value = token, True
    if value is True and name in _MACROS:
        return _MACROS[name]
    return ((name, value),)


def parse_gitattributes(text: str) -> AttributeRules:
    """Rules of one ``.gitattributes`` file, in file order (later lines win)."""
    rules: list[AttributeRule] = []
    invalid: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, rest = _split_pattern(line)
        # Git ignores negative patterns, and "dir/" patterns never match files in attributes.
        if not pattern or pattern.startswith(("[attr]", "!")) or pattern.endswith("/"):
            continue
        assignments = tuple(a for token in rest.split() for a in _assignments(token))
        try:
            glob = compile_glob(pattern.lstrip("/"), wildmatch=True)
        except InvalidGlob as exc:
            invalid.append(f"{pattern}: {exc}")
            continue
        rules.append(AttributeRule(glob, "/" not in pattern, assignments))
    return AttributeRules(tuple(rules), tuple(invalid))


def attributes_for(path: str, layers: list[tuple[str, AttributeRules]]) -> dict[str, AttrValue]:
    """Resolve attributes of ``path`` from (directory, rules) pairs ordered root first."""
    values: dict[str, AttrValue] = {}
    basename = path.rsplit("/", 1)[-1]
    for directory, rules in layers:
        relative = path[len(directory) + 1 :] if directory else path
        for rule in rules.rules:
            if rule.glob.matches(basename if rule.basename_only else relative):
                for name, value in rule.assignments:
                    if value is None:
                        values.pop(name, None)
                    else:
                        values[name] = value
    return {name: value for name, value in values.items() if name in REPORTED_ATTRIBUTES}

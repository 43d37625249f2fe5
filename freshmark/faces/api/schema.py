"""What the HTTP and MCP schemas promise about inputs: the bounds the server really enforces.

The server checks its inputs itself (``request.validate_query``, ``served.check_repo_name``,
``served.check_budget``, ``snippets.check_text``...) and answers with freshmark's one-line
``BadInput``; these annotations only *describe* those checks in the JSON Schema (pydantic's
``WithJsonSchema``), so the errors keep their wording while a schema-driven client or fuzzer
finds no input that the schema accepts and the server refuses. Where a check cannot be said
exactly in JSON Schema the schema is stricter than the server, never looser:

* the query limit is 100,000 UTF-8 *bytes*; a character takes at most 4, so the schema says
  25,000 characters (anything longer may still be accepted, up to the byte limit);
* "not blank" is a pattern (one character that is neither whitespace nor NUL); a query must
  also hold a word character, said as the letters and digits of the Latin, Greek, Cyrillic,
  kana, CJK and Hangul blocks (the server takes any Unicode one);
* ``kind`` names are listed in lower case (the server also accepts other cases).

Patterns use only syntax that ECMA-262 and Python's ``re`` read alike.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import WithJsonSchema

from freshmark.adapters.git.names import MAX_BRANCH_NAME_CHARS
from freshmark.core.answers import MAX_ANSWER_CHARS
from freshmark.core.kinds import FILE_KINDS
from freshmark.core.request import MAX_K, MAX_QUERY_BYTES, MIN_BUDGET_TOKENS
from freshmark.faces.api.served import MAX_BUDGET_TOKENS, MAX_REPO_CHARS, MAX_VERIFY_LINES

MAX_QUERY_CHARS = MAX_QUERY_BYTES // 4  # a UTF-8 character is at most 4 bytes
# A verify body must fit the API body cap (1 MiB) once JSON-escaped (up to 6 bytes a
# character); the snippet reader's own cap (10 MiB) is never the binding one over HTTP.
MAX_CONTENT_CHARS = 100_000
LEVELS = ("L1", "L2", "L3", "l1", "l2", "l3")

# The end of the text. Not ``$``: in Python's ``re`` (which jsonschema and Hypothesis use)
# ``$`` also matches before a final newline, so ``"shop\n"`` would pass.
END = r"(?![\s\S])"
# Whitespace as the server strips it (``str.strip``), for a character class: ECMA-262's
# ``\s`` lacks U+001C..U+001F and U+0085.
_STRIPPED = r"\s\u001c-\u001f\u0085"
# Some character that is neither whitespace nor NUL, and no NUL anywhere.
NOT_BLANK_NO_NUL = rf"^[^\u0000]*[^{_STRIPPED}\u0000][^\u0000]*{END}"


def _word_class(blocks: tuple[tuple[int, int], ...]) -> str:
    """A character class of the characters of ``blocks`` that Python's ``\\w`` matches,
    as ``\\uXXXX`` ranges (read alike by ECMA-262 and Python): computed, so that every
    character it holds is one ``request.validate_query`` counts as a word."""
    ranges: list[tuple[int, int]] = []
    for first, last in blocks:
        for code in range(first, last + 1):
            if not re.fullmatch(r"\w", chr(code)):
                continue
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


_WORD = _word_class(((0x0, 0x2FF), (0x370, 0x52F), (0x3040, 0x30FF), (0x4E00, 0x9FFF),
                     (0xAC00, 0xD7A3)))
# A word character somewhere (``request.validate_query`` refuses punctuation alone), no NUL.
QUERY = rf"^[^\u0000]*[{_WORD}][^\u0000]*{END}"
# Not blank, no control characters (C0 and DEL): what ``served.check_repo_name`` refuses.
_CTRL = r"\u0000-\u001f\u007f"
REPO_NAME = rf"^[^{_CTRL}]*[^\s{_CTRL}][^{_CTRL}]*{END}"
# A branch name that git takes (``git check-ref-format``) and ``names.is_valid_branch_name``
# accepts, said conservatively: ASCII letters, digits and ``_+,=-`` in ``/``-separated parts,
# dots only inside a part and never twice in a row, no part ending in ``.lock``, no leading
# ``-``. Git accepts more (non-ASCII, ``@``, ``#``...), and so does the server.
_REF_CHARS = r"[A-Za-z0-9_+,=-]+"
_REF_PART = rf"{_REF_CHARS}(?:\.(?!lock(?:/|{END})){_REF_CHARS})*"
BRANCH_NAME = rf"^(?!-){_REF_PART}(?:/{_REF_PART})*{END}"
# What ``str.splitlines`` breaks lines at.
_EOL = r"\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029"
# A snippet list: starts (after spaces or tabs) with something that is not a comment, so
# there is at least one line to check; at most MAX_VERIFY_LINES lines (at most that many
# minus one line breaks; "\r\n" counts twice here, once for the server); no NUL.
# Not a JSON document or JSON lines without a result ("[]", "[]\n[]", '{"results": []}'): the
# server has nothing to verify there (400). Said more broadly than the server's rule: only
# brackets and whitespace, or an empty "results" list anywhere.
_SOME_RESULT = (rf"(?![{_STRIPPED}\[\]]*{END})"
                r'(?![\s\S]*"results"\s*:\s*\[\s*\])')
VERIFY_CONTENT = (rf"^{_SOME_RESULT}[ \t]*[^\s#\u0000][^{_EOL}\u0000]*"
                  rf"(?:[{_EOL}][^{_EOL}\u0000]*){{0,{MAX_VERIFY_LINES - 1}}}{END}")


# Work-tree mode verifies against the branch checked out there; naming another one is refused
# (400). Which one is checked out is the server's state, so the schema says: no branch with
# ``worktree: true`` (the server also takes the checked-out branch's own name).
WORKTREE_WITHOUT_BRANCH: dict[str, Any] = {
    "if": {"properties": {"worktree": {"const": True}}, "required": ["worktree"]},
    "then": {"properties": {"branch": {"type": "null"}}},
}


def _described(schema: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(schema)


QueryText = Annotated[str, _described({
    "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": QUERY})]
RepoName = Annotated[str, _described({
    "type": "string", "minLength": 1, "maxLength": MAX_REPO_CHARS, "pattern": REPO_NAME})]
VerifyContent = Annotated[str, _described({
    "type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS,
    "pattern": VERIFY_CONTENT})]
BranchName = Annotated[str, _described({
    "type": "string", "minLength": 1, "maxLength": MAX_BRANCH_NAME_CHARS,
    "pattern": BRANCH_NAME})]
# A branch a request names: not blank (the server refuses an empty name rather than take it
# for the checked-out branch); whether git has it is the server's state (404).
BranchGiven = Annotated[str, _described({
    "type": "string", "minLength": 1, "pattern": NOT_BLANK_NO_NUL})]
FileKind = Annotated[str, _described({"type": "string", "enum": list(FILE_KINDS)})]
BudgetTokens = Annotated[int, _described({
    "type": "integer", "minimum": MIN_BUDGET_TOKENS, "maximum": MAX_BUDGET_TOKENS})]
LevelName = Annotated[str, _described({"type": "string", "enum": list(LEVELS)})]
AnswerText = Annotated[str, _described({
    "type": "string", "minLength": 1, "maxLength": MAX_ANSWER_CHARS,
    "pattern": NOT_BLANK_NO_NUL})]

__all__ = ["MAX_K", "MAX_VERIFY_LINES", "QueryText", "RepoName", "VerifyContent", "FileKind",
           "BudgetTokens", "LevelName", "AnswerText", "MAX_QUERY_CHARS", "MAX_CONTENT_CHARS"]


def not_a_boolean(value: object) -> object:
    """JSON ``true`` is not the number 1 (pydantic's lax ints would take it); ``7.0`` still
    is 7, as JSON Schema's ``integer`` says."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value

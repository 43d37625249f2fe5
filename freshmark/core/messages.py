"""A pasted error message: the code that raises it holds its words verbatim.

An agent pastes what a program printed (``Error: Got unexpected extra argument (bar)``). The
message's fixed words are in a string literal of the code that raises it
(``_("Got unexpected extra argument ({args})")``), while the words the run filled in (``bar``,
a quoted option) are not; both channels rank it among look-alikes (a ``ProgressBar`` for
``bar``). A query shaped as such a message (``SomeError:``, ``error:`` at its start, after a
program's name or not, Ruby's ``(SomeError)`` at its end, the whole of it in quotes, a quoted
value and a colon in what is not a question, or a format string's unfilled ``'%s'``; of a
pasted traceback, the lines that are not the interpreter's nor its frames') puts
the chunks holding four of its consecutive words (three, when no run between its values is
longer: Swift's ``Missing value for '\\(name)'``) first, in their order; a sentence of six
words or more that does not open with a question word (a comment, a help text, a message
that asks the user something) puts those holding all of it first, a few words or a placeholder
standing for each value it holds (a task in words gives examples: ``raise an exception for 4xx
and 5xx responses`` is no message, and the prose holding ``raise an exception for`` does not
hold it); the line a chunk holds it on is pointed at (``message_row``), as a bounded answer
may not show it. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from freshmark.core.tracebacks import without_traceback

WINDOW_WORDS = 4
# A message whose fixed words never run to four between its values (Swift's ``Missing value
# for '\(name)'``) is read by its runs of three.
SHORT_WINDOW_WORDS = 3
SENTENCE_WORDS = 6
# In a window, what stands for a value filled in: a placeholder of the literal or a few words
# of the code that makes it (``f"The file {self.root / path} does not …"``), or none at all.
VALUE = "*"
VALUE_WORDS = 6
# A program's name may come first, as argparse prints it (``http: error: …``).
# An exception's qualified name is one too, whatever it ends in (Ruby's
# ``HTTParty::RedirectionTooDeep``, ``requests.exceptions.ConnectTimeout``).
_OPENING = re.compile(
    r"^\s*(?:[\w.-]+:\s*)?"
    r"(?:[\w.]*(?:Error|Exception|Warning|Failure)|(?:\w+(?:\.|::))+(?-i:[A-Z])\w*"
    r"|error|fatal|panic|warning)\b(?P<more>[^:\n]{0,40}):",
    re.IGNORECASE)
_CLOSING = re.compile(r"\s\((?:[\w:]*(?:Error|Exception)|[A-Z]\w*(?:::[A-Z]\w*)+)\)\s*$")
_WHOLE_QUOTED = re.compile(r"\s*([\"'])([^\"'\n]+)\1\s*")
_QUOTED = re.compile(r"'[^'\n]+'|\"[^\"\n]+\"")
_ASKING = frozenset("how where what when why which who whose does do did is are can could "
                    "should would will".split())
_PLACEHOLDER = re.compile(r"%[-+ #0-9.]*[sdvqfx]\b")
_QUOTED_PLACEHOLDER = re.compile(r"(['\"])(%[-+ #0-9.]*[sdvqfx])\1")
# A string literal's prefix (``f"Perhaps …"`` continuing a message over two lines) is no word.
_STRING_PREFIX = re.compile(r"\b[fFrRbBuU]{1,2}(?=[\"'])")
# A placeholder in a literal, filled in when the message is made.
_SLOT = re.compile(r"%[-+ #0-9.]*[sdvqfxw]\b|#\{[^}\n]*\}|\$\{[^}\n]*\}|\{[\w.]*\}"
                   r"|\\\([^)\n]{0,200}\)")  # Swift's ``\(name)``
# What a run fills in: quoted values, bracketed ones (of 200 characters at most), numbers,
# paths; in parentheses, a value of two words at most (``(bar)``, ``(at <stdin>:1)``): more
# are the message's own (``(to read code point prefixed 0xf0)``). A word holding a digit or a
# slash is matched from its start only, and a value is bounded: tried at every character, a
# run of 9,000 ``*`` took 0.8 s and 30,000 ``(`` 6 s (each start scanned to the run's end).
_FILLED = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"
                     r"|\([^)\s]{0,100}(?: [^)\s]{0,100})?\)"
                     r"|\[[^\]\n]{0,200}\]|(?<!\S)\S*[\d/\\]\S*")


def message_windows(query: str) -> list[str]:
    """The runs of ``WINDOW_WORDS`` consecutive fixed words of a pasted message (of
    ``SHORT_WINDOW_WORDS`` when it has none), lowercased and joined by single spaces (a
    sentence pasted from the code: all of its words, ``VALUE`` for each value filled in); [] for
    a query not shaped as an error message. A traceback's own lines are none of its words
    (``tracebacks.without_traceback``)."""
    message = without_traceback(query)
    return _message_windows(message, WINDOW_WORDS) or \
        _message_windows(message, SHORT_WINDOW_WORDS)


def _message_windows(query: str, size: int) -> list[str]:
    opening = _OPENING.match(query)
    if opening is not None:
        # Python's KeyError quotes its whole message. A bare ``Error:`` is the printer's
        # label; an opening of more words is the message's own too: Go's ``bubbletea: error
        # opening TTY: %w`` leaves only the operating system's words after it.
        rest = query[opening.end():]
        quoted = _WHOLE_QUOTED.fullmatch(rest)
        windows = _windows(quoted.group(2) if quoted else rest, size)
        return list(dict.fromkeys(windows + _windows(query, size))) \
            if _words(opening.group("more")) else windows
    # Ruby prints the class last (``retry_for must be … (ArgumentError)``); a message may be
    # pasted inside quotes, which would read as a value filled in.
    closing = _CLOSING.search(query)
    if closing is not None:
        return _windows(query[:closing.start()], size)
    quoted = _WHOLE_QUOTED.fullmatch(query)
    if quoted is not None and quoted.group(2).split(maxsplit=1)[0].lower() not in _ASKING:
        return _windows(quoted.group(2), size)
    # A message pasted without its class (``Invalid URL 'x': No scheme supplied.``): a value
    # filled in and a colon, and not a question (``How is '/a/<int:id>' broken up?``).
    sentence = _words(query)
    first = sentence[0] if sentence else ""
    if _QUOTED.search(query) and ":" in query and first not in _ASKING:
        return _windows(query, size)
    # A message pasted from the code itself, its placeholders unfilled (validator's
    # ``Undefined validation function '%s' on field '%s'``): they are words of the literal.
    if _PLACEHOLDER.search(query) and first not in _ASKING:
        return _windows(_QUOTED_PLACEHOLDER.sub(r" \2 ", query), size)
    # A sentence pasted from the code (a comment, a help text): all of its words, in order;
    # with a value standing for each a run filled in (thor's ``The file config/routes.rb does
    # not appear to exist``) when it has any and asks nothing (hono's "With the dot option,
    # how do form fields like obj.key1 become nested objects …?" is a question). Nothing else
    # tells it from a task in words with examples (``raise an exception for 4xx and 5xx
    # responses``): a run of four of its words is in any prose about the code.
    if len(sentence) >= SENTENCE_WORDS and first not in _ASKING:
        asks = query.rstrip().endswith("?")
        return [_with_values(query)] if _FILLED.search(query) and not asks \
            else [" ".join(sentence)]
    return []


def _with_values(message: str) -> str:
    """The words of ``message`` in order, ``VALUE`` for each run of values filled in between
    them (those before its first word or after its last stand for nothing held)."""
    runs = [" ".join(_words(run)) for run in _FILLED.split(message)]
    return f" {VALUE} ".join(run for run in runs if run)


def _windows(message: str, size: int) -> list[str]:
    runs = [_words(run) for run in _FILLED.split(message)]
    return list(dict.fromkeys(" ".join(run[i:i + size])
                              for run in runs for i in range(len(run) - size + 1)))


def messages_first(texts: Sequence[str], windows: Sequence[str]) -> list[int]:
    """Indexes of ``texts`` (ranked best first): those holding one of ``windows`` first, the
    rest after, each group in its order."""
    holds = holding_message(texts, windows)
    return [i for i, hit in enumerate(holds) if hit] + [i for i, hit in enumerate(holds)
                                                        if not hit]


def holding_message(texts: Sequence[str], windows: Sequence[str]) -> list[bool]:
    """Whether each text holds one of ``windows``. A placeholder of the code's literal
    (``%s``, ``{name}``, ``#{destination}``, ``${value}``) stands for any one word of a
    window: jq's ``Cannot index %s with %s`` printed ``Cannot index number with number``."""
    if not windows:
        return [False] * len(texts)
    padded = [f" {' '.join(_words(_SLOT.sub(' zslotz ', _STRING_PREFIX.sub(' ', text))))} "
              for text in texts]
    patterns = [_window_pattern(window) for window in windows]
    # A few words filled in, never most: a text of adjacent placeholders matches anything.
    return [any(found.groups().count("zslotz") <= slots
                for pattern, slots in patterns for found in pattern.finditer(words))
            for words in padded]


def _window_pattern(window: str) -> tuple[re.Pattern[str], int]:
    """A window's words, each or a placeholder (a group), ``VALUE`` any few words; and how
    many of its words placeholders may stand for."""
    words = window.split()
    pattern = re.compile(" " + "".join(rf"(?:[a-z]+ ){{0,{VALUE_WORDS}}}" if word == VALUE
                                       else f"({word}|zslotz) " for word in words))
    return pattern, max(1, (len(words) - words.count(VALUE)) // 4)


def message_row(text: str, windows: Sequence[str]) -> int | None:
    """The 0-based row of ``text`` where the first of ``windows`` it holds starts (one spread
    over lines, a literal continued on the next, starts on its first); None when it holds
    none. A text holding it in its first rows holds it in every longer run of
    them, so each end is found by halving: a block of a thousand lines is read a few times."""
    lines = text.split("\n")

    def holds(first: int, last: int) -> bool:
        return holding_message(["\n".join(lines[first:last + 1])], windows)[0]

    if not windows or not holds(0, len(lines) - 1):
        return None
    low, high = 0, len(lines) - 1  # the first row that ends a run holding it
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if holds(0, middle) else (middle + 1, high)
    end, low = high, 0  # the last row a run ending there may start on
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if holds(middle, end) else (low, middle - 1)
    return low


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())

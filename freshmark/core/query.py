"""What a query asks for: weighted lexical terms, path hints and the texts to embed (pure).

A query is anything from two words to an issue report of hundreds of lines with tracebacks and
reproduction code. Short queries pass through as they are (every term weight 1.0, one
embedding). For long ones (``LONG_QUERY_WORDS`` words or more), the words that name code carry
the signal and the prose around them mostly noise, so:

- **identifiers** (``snake_case``, ``camelCase``, ``Dotted.names``, calls, anything in backticks
  or a code block) weigh ``IDENTIFIER_WEIGHT`` in the lexical channel, prose words 1.0, and
  English glue words are dropped once the query is long;
- a term said several times counts more, but sub-linearly (``1 + ln(count) / 2``);
- **paths** — ``pkg/mod/file.py``, traceback frames and dotted module names (``pkg.mod.func``)
  — become path hints that the rerank matches against result paths; the deepest frame in the
  project's own files names the function that failed (``..., line 3, in _cstack``), which the
  rerank looks for among that file's chunks. Frames are read in the forms reports paste:
  Python's (``File ".../pkg/mod.py", line 3, in f``), IPython's and Jupyter's (``File
  ~/pkg/mod.py:3, in f(x)``; before IPython 8 ``~/pkg/mod.py in f(x)``) and pytest's
  (``pkg/mod.py:3: in f``), Go's, Ruby's and PHP's (``#0 /app/src/A.php(44): Ns\\B->write()``:
  where the call is, then the method called, by its class); an error line's site, a file and
  a line (``in FILE on line 180``, ``at FILE line 3``, ``FILE:12``, ``FILE(12)``), is a frame
  of the definition holding that line;
- **boilerplate** of issue templates is dropped first: environment dumps (runs of
  ``name: version`` lines, ``pip freeze`` and ``conda list`` output), checklist lines, HTML
  wrappers and the interpreter's banner of a pasted session — every report has some, and they
  name installed packages and the interpreter, not the project's code;
- the **vector channel** embeds the query in windows of about ``WINDOW_CHARS`` characters (the
  model reads 256 tokens) and pools them, the first window (title and opening) counting double,
  so the whole report is read, not its first paragraph.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from freshmark.core.tokenize import (
    code_share,
    kept_tokens,
    name_forms,
    singular,
    verb_bases,
    words,
)

IDENTIFIER_WEIGHT = 2.0
PATH_WEIGHT = 2.0
# A query of at least this many words is treated as a long query (issue report).
LONG_QUERY_WORDS = 40
WINDOW_CHARS = 900
MAX_WINDOWS = 4
FIRST_WINDOW_WEIGHT = 2.0
# A verb's base form a question does not write (``parse`` for ``parsed``) is a guess: it weighs
# half (level with full weight at top 5 on the held-out questions, two more first answers).
VERB_BASE_WEIGHT = 0.5

# Common English words that carry no code meaning in a long report; words that are also
# keywords or frequent identifiers (``return``, ``type``, ``index``, ``file``) are not here.
ENGLISH_STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each either else etc even ever every few following further get gets getting got had hadn
has hasn have haven having he her here hers herself him himself his how however i if im ive in
instead into is isn it its itself just let like ll may me might mine more most much must my
myself need needs no nor not now of off often on once one only or other others otherwise our
ours ourselves out over own perhaps please probably quite rather re really same seem seems
seemed shall she should shouldn since so some something somewhat still such than thank thanks
that thats the their theirs them themselves then there therefore these they thing things think
this those though through thus to too toward under until up upon us use used using ve very via
was wasn way we well were weren what whatever when whenever where whether which while who whom
whose why will with within without won would wouldn yes yet you your yours yourself
yourselves also anyway already always maybe sure seems actually currently expected
""".split())

# A line of an environment dump: ``numpy: 1.23.4``, ``python-bits: 64``, ``pandas==1.5``,
# ``pytest  7.1.2  pyhd8ed1ab_0``, ``OS: Darwin``.
_ENV_LINE = re.compile(
    r"^\s*[-*]?\s*[\w.+-]{1,40}\s*(?::\s*\S.{0,80}|==\s*\S+|\s{2,}[\w.+-]+(?:\s+\S+){0,2})\s*$")
_MIN_ENV_RUN = 4
_TEMPLATE_LINE = re.compile(
    r"^\s*(?:[-*]\s*\[[ xX]\].*|</?(?:details|summary)>.*|_No response_)\s*$")
# An interpreter's banner, pasted with a session: ``Python 3.9.7 (default, Sep 16 2021,
# 08:50:36)``, the compiler line (``[GCC 7.5.0] on linux``), ``Type "help", "copyright",
# "credits" or "license" for more information.`` and IPython's. They name the interpreter, not the
# project ("license" matches every file's header, "interactive" a package of that name).
_BANNER_LINE = re.compile(
    r"^\s*(?:Python \d+\.\d+(?:\.\d+)?\+?\s*(?:\|[^|\n]*\|\s*)?\([^)\n]*\d\d:\d\d(?::\d\d)?\).*"
    r"|\[(?:GCC|Clang|MSC|PyPy)\b[^\]\n]*\](?: on \w+)?"
    r"|Type [\"'](?:help|copyright)[\"'].* for more information\.?"
    r"|IPython \d[\w.]* -- An enhanced Interactive Python\..*)\s*$")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
# A traceback frame: the file it ran and, where it says, the function (a ``<module>`` frame
# names none). Python's own form, IPython's since 8 (a method as ``Class.method``), IPython's
# before 8 (a line of its own, the file and the call), and pytest's: the deepest call last.
_PYTHON_FRAMES = (
    re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<function>\w+))?'),
    re.compile(r'File (?P<path>[^\s",]+\.py):(?P<line>\d+), in (?P<function>[\w.]+)\('),
    re.compile(r'^(?P<path>[^\s",]+\.py) in (?P<function>[\w.]+)\(', re.M),
    re.compile(r'^\s*(?P<path>[^\s",:]+\.py):(?P<line>\d+): in (?P<function>\w+)$', re.M),
)
# The forms that print the deepest call first.
_DEEPEST_FIRST = (
    # Go's panic: ``github.com/gin-gonic/gin.(*node).addRoute(...)`` over ``\t…/tree.go:243``.
    re.compile(r'^(?P<function>[\w./-]+?\.(?:\(\*?\w+\)\.)?\w+)(?:\[[^\]\n]*\])?\([^\n]*\)\n'
               r'\t(?P<path>[^\s:]+\.go):(?P<line>\d+)', re.M),
    # Ruby's: ``lib/sidekiq/job_retry.rb:300:in 'Sidekiq::JobRetry#retry_attempts_from'``
    # (a backtick opening it before Ruby 3.4, ``block in`` before the method of a block).
    # The path is read from its start only: tried at every character, a run of 9,000 ``*``
    # took 0.3 s (each start scanned to the run's end).
    re.compile(r"(?<![^\s:'\"`])(?P<path>[^\s:'\"`]+\.rb):(?P<line>\d+):in [`']"
               r"(?:block (?:\(\d+ levels\) )?in )?"
               r"(?:[\w:]+[#.])?(?P<function>[\w?!=]+)'"),
    # PHP's: ``#1 /app/src/Handler.php(44): Monolog\Handler\StreamHandler->write(Object(…))``,
    # where the call is (``[internal function]``: PHP's own), then the method it called.
    re.compile(r"^[ \t]*#\d+ (?:(?P<path>[^\s()]+)\((?P<line>\d+)\)|\[internal function\]): "
               r"(?:(?P<owner>[\w\\]+)(?:->|::))?(?P<function>\{[^}\n]*\}|[\w\\]+)\(", re.M),
)
_FRAMES = (*_PYTHON_FRAMES, *_DEEPEST_FIRST)
# A site an error line names, a file of code and a line: PHP's ``in FILE on line 180``, Perl's
# ``at FILE line 3``, ``FILE:12`` and ``FILE(12)`` (MSVC's, C#'s). Read from a word's start
# only, its path bounded: tried at every character, a run would be scanned to its end each time.
_CODE_FILE = (r"[^\s:'\"`()\[\]<>]{1,400}?\.(?:php|phtml|inc|pyi?|pyx|[cm]?js|jsx|tsx?|go|rs"
              r"|java|kts?|scala|rb|erb|pl|pm|cs|c|h|cc|cpp|hpp|cxx|swift|m|mm|exs?|lua)")
_SITES = (
    re.compile(rf"\b(?:in|at) (?P<path>{_CODE_FILE}),? (?:on )?line (?P<line>\d+)\b"),
    re.compile(rf"(?<![^\s(\['\"`])(?P<path>{_CODE_FILE})(?::(?P<line>\d+)\b|\((?P<paren>\d+)\))"),
)
# From a path's start only (``-`` too can open none): a run of 30,000 ``-`` took 1.6 s. An
# absolute path opens with its ``/`` (``/home/me/proj/pkg/mod.py``: its tail names the file).
_PATH = re.compile(r"(?<![\w/.-])(/?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5})\b")
# A file's name read as a dotted name would be a dead hint (``StreamHandler.php``:
# ``StreamHandler/php``).
_FILE_NAME = re.compile(r"\.(?:pyi?|pyx|txt|rst|md|html|json|ya?ml|toml|xml|php|phtml|[cm]?js"
                        r"|jsx|tsx?|go|rs|java|kts?|scala|rb|erb|pl|pm|cs|c|h|cc|cpp|hpp|cxx"
                        r"|swift|exs|lua)$")
# A dotted name; its members may be JavaScript's private ones (``Ky.#retry``).
_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.#?[A-Za-z_]\w*){1,6})\b")
# ``::`` and ``\`` qualify (Rust, C++, PHP); Ruby writes an instance method ``Files#serving``.
_QUALIFIED = re.compile(
    r"(?<![\w.:\\#])([A-Za-z_]\w*(?:(?:::|\\)[A-Za-z_]\w*){0,5}(?:(?:::|\\)|#(?=[a-z_]))[A-Za-z_]\w*)\b")
_DOLLAR_NAME = re.compile(r"(?<![\w$])\$([A-Za-z_]\w*)")
# Go's method expression, as godoc and panics write a method: ``(*Validate).Struct``.
_GO_METHOD = re.compile(r"\(\*?([A-Za-z_]\w*)\)\.([A-Za-z_]\w*)\b")
# snake_case, camelCase, PascalCase with a second capital, a leading ``_`` or a trailing one
# (Python's ``in_``, ``class_``: a name that would be a keyword).
_CODE_WORD = re.compile(r"\w_\w|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|^_|\w_$")
_SITE_PREFIX = re.compile(r"^.*(?:site-packages|dist-packages)/|^.*/lib/python[\d.]*/|"
                          r"^.*?/pkg/mod/[^@\s]+@[^/\s]+/")  # Go's module cache
# Words of code blocks that name no code of the project (keywords, literals, common builtins).
_CODE_NOISE = frozenset("""
and as assert async await break class continue def del elif else except false finally for from
global if import in is lambda none nonlocal not or pass print raise return self true try while
with yield len str int float list dict set tuple type object range true false null undefined
var let const function new this python bin usr lib line file traceback most recent call last
""".split())
_SOURCE_SUFFIX = re.compile(r"(?:/__init__)?\.(?:py|pyi|pyx|js|ts|go|rs|java|rb|php|c|h|cc|cpp)$")


@dataclass(frozen=True)
class QueryPlan:
    """A query read for both channels. ``terms`` in first-seen order; ``weights`` has an entry
    for every term; ``path_hints`` are slash paths without a source suffix."""

    text: str
    terms: list[str]
    weights: dict[str, float]
    windows: list[str]
    window_weights: list[float]
    path_hints: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    # (path hint, function) of each traceback frame that names its function.
    frames: list[tuple[str, str]] = field(default_factory=list)
    code_share: float = 0.0
    long: bool = False
    # A question's words as wholes (``retryfromerror``, ``retry_from_error``), and their verbs'
    # base forms: what names a symbol outright. A compound word's pieces only share its name.
    whole_words: frozenset[str] = frozenset()


def _code_spans(text: str) -> list[str]:
    spans = [m.group(0) for m in _FENCE.finditer(text)]
    spans += [m.group(1) for m in _BACKTICK.finditer(_FENCE.sub(" ", text))]
    return spans


def _is_identifier(word: str) -> bool:
    return bool(_CODE_WORD.search(word))


def normalise_path(raw: str) -> str | None:
    """``/usr/lib/python3.9/site-packages/pkg/mod.py`` -> ``pkg/mod``; None for a non-path."""
    path = _SITE_PREFIX.sub("", raw.replace("\\", "/")).lstrip("./")
    path = _SOURCE_SUFFIX.sub("", path)
    return path if "/" in path or path else None


def written_path(raw: str) -> str:
    """A file as a traceback writes it, with its suffix, without an installation's prefix:
    ``/venv/lib/python3.11/site-packages/pkg/mod.py`` -> ``pkg/mod.py``."""
    return _SITE_PREFIX.sub("", raw.replace("\\", "/")).lstrip("./")


def path_hints(text: str) -> list[str]:
    """Paths the query names: files, traceback frames and dotted module names (``pkg.mod``,
    read as ``pkg/mod``; one-dot names such as ``obj.attr`` are kept too — they only count
    where a result path ends with them)."""
    hints = [found.path for found in _frame_matches(text) if found.path]
    hints += [m.group(1) for m in _PATH.finditer(text)]
    for match in _DOTTED.finditer(text):
        dotted = match.group(1)
        if dotted.count(".") >= 1 and not _FILE_NAME.search(dotted):
            hints.append(dotted.replace(".", "/"))
    out = [h for h in (normalise_path(raw) for raw in hints) if h and "/" in h]
    return list(dict.fromkeys(out))


def qualified_names(text: str) -> list[str]:
    """Names qualified the way Ruby, Rust, C++, PHP and Go write them (``Sinatra::Base``,
    ``Files#serving``, ``League\\Container\\Container::get``, ``(*Validate).Struct``), as
    slash paths like ``path_hints``' dotted names. Only for a question or a name: a report's
    pytest node ids (``test_a.py::test_b``) would read as such names."""
    found = [re.sub(r"::|\\|#", "/", match.group(1)) for match in _QUALIFIED.finditer(text)]
    found += [f"{owner}/{name}" for owner, name in _GO_METHOD.findall(text)]
    return list(dict.fromkeys(found))


def traceback_frames(text: str) -> list[tuple[str, str]]:
    """(path hint, function) of every traceback frame in ``text`` that names a function
    (``<module>`` frames name none), once each, in the order of their last appearance."""
    frames: dict[tuple[str, str], None] = {}
    for found in _frame_matches(text):
        hint = normalise_path(found.path)
        if hint and found.function:
            frames.pop((hint, found.function), None)
            frames[(hint, found.function)] = None
    return list(frames)


class Site(NamedTuple):
    """What a traceback's frame says ran: the file as written (its class's namespace, for a
    PHP method called), the function, the line, and the class it names the function by."""

    path: str
    function: str | None
    line: int | None
    owner: str = ""


def traceback_sites(text: str) -> list[Site]:
    """The ``Site`` of every traceback frame in ``text`` that names a function or, with a file,
    a line (PHP's frame says where its call is), the deepest last (a recursion's frames each
    time they appear)."""
    return [found for found in _frame_matches(text)
            if found.function or (found.path and found.line is not None)]


def _frame_matches(text: str) -> list[Site]:
    """Every traceback frame in ``text``, the deepest last as Python writes them (Go's,
    Ruby's and PHP's turned around), whatever form each is in (a ``Class.method`` function
    as ``method``)."""
    found = sorted((match for form in _FRAMES for match in form.finditer(text)),
                   key=lambda match: match.start())
    sites = _error_sites(text, found)
    frames = [site for match in sorted(found + sites, key=lambda match: match.start())
              for site in _sites(match)]
    # An error line's sites alone are printed the first first, as the deepest calls are.
    return frames[::-1] if all(match.re in _DEEPEST_FIRST for match in found) else frames


def _error_sites(text: str, frames: list[re.Match[str]]) -> list[re.Match[str]]:
    """The sites error lines name (``_SITES``) outside ``frames``: a frame's own file and line
    (pytest's ``a.py:3: in f``) are the frame's."""
    starts = [match.start() for match in frames]
    sites = []
    for form in _SITES:
        for match in form.finditer(text):
            before = bisect.bisect_right(starts, match.start()) - 1
            if before < 0 or frames[before].end() <= match.start():
                sites.append(match)
    return sites


def _sites(match: re.Match[str]) -> list[Site]:
    """A frame's sites, the deepest first for a PHP frame: the method it called (by its
    class, named with its namespace: ``Monolog\\Handler\\StreamHandler``), then where."""
    groups = match.groupdict()
    line = int(number) if (number := groups.get("line") or groups.get("paren")) else None
    written = groups.get("function") or ""
    function = re.split(r"[.\\]", written)[-1]
    if "owner" not in match.groupdict():
        return [Site(match.group("path"), function or None, line)]
    owner = match.group("owner") or ""
    called = [Site(owner, function, None, owner.rpartition("\\")[2])] \
        if not written.startswith("{") else []  # a closure has no name to look up
    return called + ([Site(match.group("path"), None, line)] if match.group("path") else [])


def deepest_frame(frames: list[tuple[str, str]], paths: Iterable[str]
                  ) -> tuple[str, str] | None:
    """The last frame (the deepest: tracebacks list the most recent call last) whose file is
    one of ``paths``, the project's files at hand; frames of other libraries name none."""
    known = set(paths)
    for hint, function in reversed(frames):
        if any(path_hint_match(path, [hint]) for path in known):
            return hint, function
    return None


def frame_match(path: str, symbol: str, frame: tuple[str, str] | None) -> float:
    """1.0 when ``frame`` ran this chunk: its file is this file and its function is the
    symbol's last part (``Class.method`` frames say ``method``), else 0.0."""
    if frame is None:
        return 0.0
    hint, function = frame
    return 1.0 if symbol.rpartition(".")[2] == function and path_hint_match(path, [hint]) \
        else 0.0


def path_hint_match(path: str, hints: list[str], inside: bool = True) -> float:
    """1.0 when a hint names this file (its path ends with the hint, the hint ends with its
    path, as a traceback from a checkout does (``home/me/proj/pkg/mod``), or, with ``inside``,
    the hint ends with the file's module path plus a name inside it), else 0.0."""
    if not hints:
        return 0.0
    module = _SOURCE_SUFFIX.sub("", path)
    for hint in hints:
        if module.endswith(hint) and (len(module) == len(hint) or
                                      module[-len(hint) - 1] == "/"):
            return 1.0
        # Only paths of two parts or more: a top-level utils.py is no other package's utils.
        if "/" in module and hint.endswith("/" + module):
            return 1.0
        if inside and hint.startswith(module + "/") and \
                hint.count("/") - module.count("/") <= 2:
            return 1.0  # pkg/mod/Class/method names something inside pkg/mod.py
    return 0.0


def _looks_like_versions(lines: list[str]) -> bool:
    """Most values carry a digit or say None: versions, not ``name: type`` lines of code."""
    versioned = sum(bool(re.search(r"[:=\s]\s*\S*(?:\d|None)", line)) for line in lines)
    return versioned * 2 >= len(lines)


def strip_boilerplate(text: str) -> str:
    """``text`` without issue-template boilerplate: runs of ``_MIN_ENV_RUN`` or more
    environment-dump lines, checklist lines, ``<details>`` wrappers and interpreter banners."""
    lines = text.splitlines()
    banner = [bool(_BANNER_LINE.match(line)) for line in lines]
    keep = [not (dropped or _TEMPLATE_LINE.match(line))
            for line, dropped in zip(lines, banner, strict=True)]
    for run in _env_runs(lines, banner):
        if len(run) >= _MIN_ENV_RUN and _looks_like_versions([lines[i] for i in run]):
            for number in run:
                keep[number] = False
    return "\n".join(line for line, kept in zip(lines, keep, strict=True) if kept)


def _env_runs(lines: list[str], banner: list[bool]) -> Iterator[list[int]]:
    """Numbers of the environment-dump lines of each run. Blank lines and a compiler line
    (``[GCC 7.3.0]`` after ``python: 3.7.3 (...)`` in ``show_versions()``) do not end a run."""
    run: list[int] = []
    for number, line in enumerate(lines):
        if line.strip() and _ENV_LINE.match(line):
            run.append(number)
        elif run and (banner[number] or not line.strip()):
            continue
        elif run:
            yield run
            run = []
    if run:
        yield run


def _windows(text: str) -> list[str]:
    """Consecutive pieces of about WINDOW_CHARS characters, cut at line ends where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > WINDOW_CHARS:
            head, line = line[:WINDOW_CHARS], line[WINDOW_CHARS:]
            if current:
                pieces.append(current)
                current = ""
            pieces.append(head)
        if len(current) + len(line) > WINDOW_CHARS and current:
            pieces.append(current)
            current = ""
        current += line
    if current.strip():
        pieces.append(current)
    return [p for p in pieces if p.strip()][:MAX_WINDOWS] or [text]


# A web-style question names the language it is asked in ("python parse a date"); code rarely
# says it (a comment, a version check), so as a search term the name finds the wrong chunks:
# in CoSQA 305 of 313 questions say "python" and 37 of 552 functions do. A question (not an
# issue report) leaves these words to the vector channel unless they are all it says.
LANGUAGE_NAMES = frozenset({"python", "python2", "python3", "javascript", "typescript",
                            "golang"})


def _verb_bases(tokens: tuple[str, ...]) -> list[str]:
    """A question's prose word's verb base forms (``parsed``: ``parse``)."""
    return [base for token in tokens[:1] for base in verb_bases(token) if base not in tokens]


def _whole_words(text_words: list[str], bases: set[str]) -> frozenset[str]:
    """A question's words as wholes, in any casing style, their singulars and their verbs'
    base forms (``bases``, worked out with the terms) (``QueryPlan.whole_words``)."""
    return frozenset({form for word in text_words for name in name_forms(word)
                      for form in (name, singular(name))} | bases)


def plan_query(text: str) -> QueryPlan:
    """Read ``text`` for the lexical channel (weighted terms) and the vector channel (windows)."""
    long = len(text.split()) >= LONG_QUERY_WORDS
    if long:
        text = strip_boilerplate(text) or text
    code_text = " ".join(_code_spans(text))
    text_words = words(text)
    identifiers = {w for w in text_words if _is_identifier(w)}
    identifiers |= {w for w in words(code_text)
                    if len(w) >= 4 and not w.isdigit() and w.lower() not in _CODE_NOISE}
    identifiers -= {w for w in identifiers if w.lower() in _CODE_NOISE}
    # A name written with its ``$`` is code (zod's ``$constructor``, PHP's ``$app``).
    identifiers |= set(_DOLLAR_NAME.findall(text))
    counts: Counter[str] = Counter()
    bases: set[str] = set()
    written: set[str] = set()
    weight_of: dict[str, float] = {}
    # "python" alone (or "python3 python") is still searched for.
    naming_only = all(t in LANGUAGE_NAMES for w in text_words for t in kept_tokens(w))
    for word in text_words:
        is_code = word in identifiers
        tokens = kept_tokens(word)
        written.update(tokens)
        if not long and not is_code:
            word_bases = _verb_bases(tokens)
            bases.update(word_bases)
            tokens = (*tokens, *word_bases)
        for position, token in enumerate(tokens):
            if long and not is_code and (token in ENGLISH_STOPWORDS or token.isdigit()):
                continue
            if not long and not is_code and token in LANGUAGE_NAMES and not naming_only:
                continue
            counts[token] += 1
            # The whole identifier is the strong signal; its pieces are ordinary words.
            boost = IDENTIFIER_WEIGHT if is_code and position == 0 else 1.0
            weight_of[token] = max(weight_of.get(token, 1.0), boost)
    hints = path_hints(text) if long else path_hints(text) + qualified_names(text)
    for hint in hints:
        for token in re.split(r"[/]", hint):
            for piece in kept_tokens(token)[:1]:
                if piece in weight_of:
                    weight_of[piece] = max(weight_of[piece], PATH_WEIGHT)
    terms = [t for t in counts if len(t) <= 64]
    guessed = bases - written
    # A question or a few names: every word counts the same (weighting them measured worse on
    # CoSQA); a report: identifiers and repetition tell what it is about.
    weights = {t: weight_of[t] * (1.0 + 0.5 * math.log(counts[t])) if long else
               (VERB_BASE_WEIGHT if t in guessed else 1.0) for t in terms}
    if not long:
        windows, window_weights = [text], [1.0]
    else:
        windows = _windows(text)
        window_weights = [FIRST_WINDOW_WEIGHT] + [1.0] * (len(windows) - 1)
    return QueryPlan(
        text=text, terms=terms, weights=weights, windows=windows,
        window_weights=window_weights, path_hints=hints,
        identifiers=sorted(identifiers), frames=traceback_frames(text),
        code_share=code_share(text), long=long,
        whole_words=frozenset() if long else _whole_words(text_words, bases),
    )

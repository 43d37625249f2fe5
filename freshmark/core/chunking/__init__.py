"""Syntax-aware chunking (SPEC §5): one chunk per function or method, a summary chunk per
class-like unit, ``<module>`` blocks for file-level code, line windows for everything else.

Public API: ``Chunk``, ``detect_language``, ``chunk_text``, ``symbol_spans``, ``file_imports``.
None of them raises on odd input: a file that cannot be parsed falls back to line windows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node, Parser

from freshmark.core.chunking.assemble import ChunkBuilder, block_symbol, module_runs
from freshmark.core.chunking.conditionals import one_branch
from freshmark.core.chunking.facts import FileFacts, collect_facts
from freshmark.core.chunking.fallback import WINDOW_LINES, window_bounds, window_chunks
from freshmark.core.chunking.kotlin import kotlin_shown
from freshmark.core.chunking.languages import (
    RULES,
    SUPPORTED_LANGUAGES,
    detect_language,
    parser_for,
)
from freshmark.core.chunking.macros import blank_macros
from freshmark.core.chunking.model import MODULE_SYMBOL, Chunk
from freshmark.core.chunking.units import (
    Unit,
    UnitBudgetExceeded,
    UnitFinder,
    attach_comment_runs,
    nested_definitions,
    walk,
)

__all__ = [
    "CHUNKING_VERSION",
    "Chunk",
    "MODULE_SYMBOL",
    "SUPPORTED_LANGUAGES",
    "chunk_text",
    "chunk_text_capped",
    "FileSymbols",
    "detect_language",
    "file_imports",
    "file_symbols",
    "normalize_language",
    "symbol_spans",
]

log = logging.getLogger(__name__)

# What a language's parser is shown again when it fails a file: the source with the
# constructs its grammar misreads rewritten, every byte where it was.
_REWRITES: dict[str, Callable[[bytes], bytes]] = {"kotlin": kotlin_shown}

DEFAULT_MAX_LINES = 150
# What these rules make of a file. A layer indexed under another version is chunked again,
# every file once, at its next run (vectors of unchanged chunks are reused): bump it when a
# change to the rules changes the chunks of files that did not change, their kinds
# (``core/classify.py``: a full pass classifies every file again) or a field of their stamp
# (a full pass rewrites it, as ``own_name`` in 10). 11: TypeScript functions typed by
# ``as``/``satisfies``, overload signatures set apart by blank lines. 12: C definitions
# whose return type a macro wraps (``CJSON_PUBLIC(void) name(...)``); ``docs_src/`` is doc;
# a Rust impl of a trait is named with the trait's arguments (``impl From<String> for X``).
# 13: text a parse error swallows (rows of an ``ERROR`` node or the root in none of its
# children, a keyword an error left alone) is module code, no longer left out of every chunk.
# 14: Swift computed properties, subscripts and ``deinit`` are units; a node that runs on over
# whitespace into the next row ends the row before (Swift ``case``s are cut between);
# implicit member calls (``.autodetected()``) are references; JavaScript's calls of private
# methods (``this.#calculateDelay()``) are references, named with their ``#``; the code
# between the units of a namespace (C++, C#, PHP, Rust ``mod``, TypeScript) is module blocks.
# 15: a function whose body calls its own name (a wrapper delegating to a namesake, Go's
# ``func WithField(…) { return std.WithField(…) }``, or a recursion) references it; a block
# doc comment (``/** … */``) set apart from its definition by one blank line is its doc; a
# ``.h`` header holding C++ (a namespace, a template, a class) is parsed as C++; a changelog
# named in mixed case (``ChangeLog.md``, ``History.md``) is a changelog; a Java enum constant
# with a body is a class of its methods (jsoup's ``TokeniserState.Data.read``); Python
# definitions under a module's or a class's ``if``/``try`` are units, and so are C# members
# under ``#if``/``#else``.
# 16: C# indexers with code (``this[int i] { get { … } }``) are units named ``this[]``; a
# JavaScript/TypeScript variable a call makes from one function is that function (zod's
# ``const $ZodString = $constructor("$ZodString", (inst, def) => {…})``), and one a call makes
# from one object of functions is that container (Pinia's option stores); Rust's
# ``#[cfg(test)]`` modules and ``#[test]`` functions in a source file are tests
# (``chunking/inline_tests.py``); Rust's ``mod walk;`` imports its module; a run of
# comments longer than a chunk (Go's package doc) is cut like loose text; a Swift stored
# property a closure computes once (``let agent: T = { … }()``) is a unit; a ``.h`` header is
# C++ by its code, not by a comment naming ``std::``; a C++ friend function defined in a class
# is a unit; a return type a parse read into a C function's name is not glued to it; a Python
# class used as a value (assigned, passed, returned, in a dict) is a reference.
# 17: a C/C++ macro opening a declaration's line or standing between ``class`` and its name
# reads as blank (fmt's ``FMT_CONSTEXPR``, ``class FMT_API file``); C++ conversion operators
# and types defined inside a class are units; an anonymous ``enum : ullong`` is module code;
# GoogleTest tests are named ``suite.name``; a C# ``delegate`` is a unit; a Rust module's
# ``type`` alias is a unit; a last part of only closing braces ends the part before; a method
# named as a builtin (``console.print``) is a reference when called through a receiver; a
# signature cut at its limit ends at a word with ``…``; an extension-less script is read in
# the language of its ``#!`` line, ``Thorfile`` and ``.thor`` are Ruby; and files are
# classified anew: ``Auto generated by`` headers, Maven's ``test/resources`` fixtures,
# GoogleTest copies beside tests (vendored), PDFs (binary), Go ``package main`` programs under
# ``examples/`` (doc); a C file that fails to parse beside a preprocessor conditional is
# parsed again with one branch of each kept.
# 18: a macro before an out-of-line constructor, or between a return type and a qualified
# name, reads as blank (spdlog's ``SPDLOG_INLINE``); Catch2/doctest ``TEST_CASE``s are tests
# named by their strings; a one-line function references a namesake it calls; a Ruby method
# called by its bare name is a reference, and so is a Go method handed on as a value; files
# are classified anew: ``_vendor/``, ``vendored/`` and ``bundled/`` copies (vendored),
# ``bench/``, ``benches/``, .NET test projects, Gradle and Kotlin Multiplatform test source
# sets, Cucumber's ``features/`` (tests), snapshots under a test directory (fixtures), Gradle
# build scripts (config).
# 19: a Kotlin file the grammar fails is parsed again from its text with what the grammar
# misreads rewritten in place (``chunking/kotlin.py``), kept when that finds more units or
# fewer rows in errors: okio's ``ByteString`` (``internal actual constructor(`` opening a
# line) is a class of its methods, no longer one module block, and so are classes with a
# variable named ``final`` or ``by``, or an annotated getter; Kotlin's scope functions
# (``run``, ``let``, ``apply``, ``also``, ``with``) are references only through a receiver;
# files are classified anew: what a test rule matches that is not code is a fixture
# (loguru's expected tracebacks, ``tests/exceptions/output/**/*.txt``), but for the suite's
# prose, its settings by name and pytest-mypy-plugins' ``test_*.yml``; pictures stored as
# text (``.svg``, ``.eps``, ``.ps``, ``.xpm``…) are not indexed (``image``: loguru's logo.svg
# was 194 KB of doc windows); a stretch of a definition or block no cut opens that fits no
# part (a docstring, a long string or comment) is cut into windows at its blank lines, parts
# of their own (loguru's 546-line docstring of ``Logger.add`` was one part); an outline
# elides a member body whose last line closes nothing (``fun area(): Int =`` then its
# expression), where it kept that line; a Maven site's pages (``src/site/**``) are docs and
# its ``src/changes/changes.xml`` a changelog (commons-cli's xdoc pages were config); a Rust
# ``macro_rules!`` body references the names its rules call (``$crate::max_level()``,
# ``$crate::__log!(…)``) and the items its ``$crate::`` paths reach
# (``$crate::STATIC_MAX_LEVEL``), where its token trees gave none; a Java field or interface
# constant holding a lambda or an anonymous class over several lines is a method of its name
# (commons-cli's ``Converter.DATE = s -> { … }`` was only lines of the interface's outline).
# 20: a run of nothing but comments between definitions starts the next one (httpx's section
# titles were blocks of their own); Ruby methods named in capitals called through a receiver
# (``self.POST``) are references and a method named ``<=>`` is a unit; ignore files of npm,
# ESLint and Prettier, PHP-CS-Fixer's ``.php-cs-fixer.dist.php``, Gemfile, Rakefile and
# ``*.gemspec`` are config, psalm/phpstan baselines generated, ``*.rdoc`` prose.
CHUNKING_VERSION = "20"
_ALIASES = {
    "py": "python", "js": "javascript", "jsx": "javascript", "ts": "typescript",
    "c++": "cpp", "cc": "cpp", "c#": "csharp", "cs": "csharp", "c_sharp": "csharp",
    "rb": "ruby", "golang": "go", "rs": "rust",
}  # fmt: skip


def normalize_language(path: str, language: str | None, text: str | None = None
                       ) -> str | None:
    """The supported language to parse ``path`` (holding ``text``) as, or None for the
    line-window fallback."""
    if language is None:
        return detect_language(path, text)
    name = language.strip().lower()
    name = _ALIASES.get(name, name)
    return name if name in SUPPORTED_LANGUAGES else None


def split_lines(text: str) -> list[str]:
    """Lines as tree-sitter counts rows (``\n`` only), without a CRLF file's ``\r``."""
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    return lines


def line_slice(text: str, start_line: int, end_line: int) -> str:
    """Lines ``start_line``..``end_line`` as the chunker numbers and stores them: split at
    ``\n`` only (a form feed or a lone ``\r`` is no line end to tree-sitter), a CRLF file's
    ``\r`` dropped; with their newline unless they end the text."""
    lines = split_lines(text)
    piece = "\n".join(lines[start_line - 1 : end_line])
    return piece + "\n" if end_line < len(lines) else piece


def line_count(text: str) -> int:
    """Lines of ``text`` as tree-sitter numbers them (a final newline ends the last one)."""
    return len(split_lines(text)) - text.endswith("\n")


@dataclass
class _Parsed:
    language: str
    facts: FileFacts
    items: list[Unit | Node]
    root: Node
    loose: list[tuple[int, int]]  # rows of text in no node (``UnitFinder.loose``)


def _parse(path: str, text: str, language: str | None, max_units: int = 0) -> _Parsed | None:
    """Units and facts of ``text``; None when it is not parsed (unsupported or parser failure).
    More than ``max_units`` units (0: any number) raise ``UnitBudgetExceeded``."""
    name = normalize_language(path, language, text)
    parser = parser_for(name) if name is not None else None
    if name is None or parser is None:
        return None
    src = text.encode("utf-8", errors="replace")
    lines = split_lines(text)
    rules = RULES[name]
    try:
        shown = blank_macros(src) if rules.bare_macros else src
        parsed = _parse_shown(name, parser, src, shown, lines, max_units)
        if rules.bare_macros and parsed.root.has_error:
            parsed = _one_branch_parse(parsed, parser, src, shown, lines, max_units)
        rewrite = _REWRITES.get(name)
        if rewrite is not None and parsed.root.has_error:
            parsed = _rewritten_parse(parsed, parser, src, rewrite(src), lines, max_units)
    except (RecursionError, ValueError) as exc:
        log.warning("tree-sitter chunking of %s failed, using line windows: %s", path, exc)
        return None
    return parsed


def _parse_shown(name: str, parser: Parser, src: bytes, shown: bytes, lines: list[str],
                 max_units: int, hidden_rows: frozenset[int] = frozenset()) -> _Parsed:
    """Units of ``src`` as parsed from ``shown`` (``src`` with some bytes blanked)."""
    tree = parser.parse(shown)
    facts = collect_facts(name, src, lines, tree.root_node)
    finder = UnitFinder(facts, RULES[name], max_units, hidden_rows)
    items = finder.find(tree.root_node)
    attach_comment_runs(items, finder.loose, src, RULES[name].namespace_kinds, DEFAULT_MAX_LINES)
    return _Parsed(name, facts, items, tree.root_node, finder.loose)


def _one_branch_parse(parsed: _Parsed, parser: Parser, src: bytes, shown: bytes,
                      lines: list[str], max_units: int) -> _Parsed:
    """The parse of a C/C++ file with one branch of each conditional kept (the last, else the
    first) when it finds more units, or as many with fewer rows in parse errors: a
    conditional splitting a construct fails the parse of the whole file as written."""
    best, best_score = parsed, _score(parsed)
    troubled = _troubled_rows(parsed.root, RULES[parsed.language].transparent)
    tried = {shown}
    for keep_last in (True, False):
        variant = one_branch(shown, keep_last, troubled)
        if variant.src in tried:
            continue  # nothing blanked, or the same as keeping the last branch
        tried.add(variant.src)
        candidate = _parse_shown(parsed.language, parser, src, variant.src, lines, max_units,
                                 variant.hidden_rows)
        score = _score(candidate)
        if score > best_score:
            best, best_score = candidate, score
    if best is not parsed:
        # the imports of the branches left out still are the file's
        imports = dict.fromkeys([*best.facts.imports, *parsed.facts.imports])
        best.facts.imports = sorted(imports)
    return best


def _rewritten_parse(parsed: _Parsed, parser: Parser, src: bytes, rewritten: bytes,
                     lines: list[str], max_units: int) -> _Parsed:
    """The parse of ``rewritten`` (``src`` as ``_REWRITES`` shows it) when it scores better
    than ``parsed``: a rewrite meant for a construct the grammar misreads is kept only
    where it helps."""
    if rewritten == src:
        return parsed
    candidate = _parse_shown(parsed.language, parser, src, rewritten, lines, max_units)
    return candidate if _score(candidate) > _score(parsed) else parsed


def _score(parsed: _Parsed) -> tuple[int, int]:
    """Units found, then rows in no parse error (more is better)."""
    return sum(1 for _ in walk(parsed.items)), -len(_error_rows(parsed.root))


def _troubled_rows(root: Node, transparent: frozenset[str]) -> set[int]:
    """Rows of the outermost nodes holding a parse error but for those that only group
    others (a preprocessor conditional, a namespace): their parts are looked into."""
    rows: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        for child in node.children:
            if not child.has_error:
                continue
            if child.type in transparent and child.type != "ERROR":
                pending.append(child)
            else:
                rows.update(range(child.start_point.row, child.end_point.row + 1))
    return rows


def _error_rows(root: Node) -> set[int]:
    rows: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            rows.update(range(node.start_point.row, node.end_point.row + 1))
        else:
            pending.extend(child for child in node.children if child.has_error)
    return rows


def chunk_text(
    path: str, text: str, language: str | None = None, max_lines: int = DEFAULT_MAX_LINES
) -> list[Chunk]:
    """Chunks of ``text`` (the content of ``path``) in source order; ``[]`` for empty text.

    ``language`` None detects it from ``path``; an unsupported language gets line windows.
    Units longer than ``max_lines`` lines (at least 20) are split on statement boundaries into
    parts; a part runs longer only where no statement boundary comes earlier.
    """
    return _chunks(path, text, language, max_lines, 0)


def chunk_text_capped(path: str, text: str, language: str | None,
                      max_chunks: int) -> tuple[list[Chunk], bool]:
    """``chunk_text`` with at most ``max_chunks`` chunks (0: no cap), and whether the cap cut
    in. A file over it (tens of thousands of one-line functions in a generated file) becomes
    line windows long enough to stay under it, decided as soon as the parse finds more units
    than the cap, so the work per file is bounded too, not only the chunks."""
    try:
        chunks = _chunks(path, text, language, DEFAULT_MAX_LINES, max_chunks)
    except UnitBudgetExceeded:
        return _capped_windows(text, max_chunks), True
    if max_chunks and len(chunks) > max_chunks:  # units split into parts
        return _capped_windows(text, max_chunks), True
    return chunks, False


def _capped_windows(text: str, max_chunks: int) -> list[Chunk]:
    lines = split_lines(text)
    # A window closes no earlier than 3/4 of its target, so twice the even share keeps the
    # count well under the cap.
    return window_chunks(lines, max(WINDOW_LINES, -(-2 * len(lines) // max_chunks)))


def _chunks(path: str, text: str, language: str | None, max_lines: int,
            max_chunks: int) -> list[Chunk]:
    if not text.strip():
        return []
    parsed = _parse(path, text, language, max_chunks)
    if parsed is None:
        return window_chunks(split_lines(text))
    try:
        builder = ChunkBuilder(parsed.facts, RULES[parsed.language], max_lines)
        chunks = builder.build(parsed.items, parsed.loose)
    except (RecursionError, ValueError) as exc:
        log.warning("chunking of %s failed, using line windows: %s", path, exc)
        return window_chunks(parsed.facts.lines)
    return chunks or window_chunks(parsed.facts.lines)


def symbol_spans(path: str, text: str, language: str | None = None) -> dict[str, tuple[int, int]]:
    """Every full symbol name of the file -> ``(start_line, end_line)`` (1-based, inclusive).

    Names repeated in one file (overloads, redefinitions) keep their first span. File-level
    code appears as ``<module>``, ``<module>#2``…; an unparsed file is one ``<module>``.
    """
    return file_symbols(path, text, language).first_spans()


Span = tuple[int, int]


@dataclass
class FileSymbols:
    """Where the symbols of one file are (1-based inclusive lines), for verification.

    ``units`` keeps every span of a name in source order (overloads, a property's getter and
    setter, redefinitions); ``blocks`` are the module-level blocks in order, whose positional
    names shift when code is added above them. ``nested()`` adds definitions at any depth.
    """

    lines: list[str]
    units: dict[str, list[Span]]
    blocks: list[Span]
    parsed: _Parsed | None = None
    _nested: dict[str, list[Span]] | None = None
    signatures: dict[Span, str] = field(default_factory=dict)  # of the units' spans
    kinds: dict[Span, str] = field(default_factory=dict)  # of the units' spans

    def first_spans(self) -> dict[str, Span]:
        """Each name's first span, and each module block's by its positional name."""
        spans = {name: found[0] for name, found in self.units.items()}
        for ordinal, block in enumerate(self.blocks, 1):
            spans.setdefault(block_symbol(ordinal), block)
        return spans

    def every_span(self) -> list[Span]:
        """Every definition's span (all of a repeated name's) and every module block's."""
        return [span for found in self.units.values() for span in found] + self.blocks

    def text_of(self, span: Span) -> str:
        return "\n".join(self.lines[span[0] - 1 : span[1]])

    def outline(self, span: Span) -> str | None:
        """The whole outline of the container (class, struct...) whose lines are ``span``,
        its members' bodies elided as the chunker elides them, in one piece however many
        parts its chunks are; None when no container spans those lines."""
        if self.parsed is None:
            return None
        unit = next((u for u in walk(self.parsed.items) if u.container
                     and (u.start_row + 1, u.end_row + 1) == span), None)
        if unit is None:
            return None
        builder = ChunkBuilder(self.parsed.facts, RULES[self.parsed.language], DEFAULT_MAX_LINES)
        return builder.outline(unit)

    def nested(self) -> dict[str, list[Span]]:
        """Definitions at any depth (inside ``if``/``try`` blocks and bodies), by full name;
        walked once, on first use."""
        if self._nested is None:
            self._nested = {}
            if self.parsed is not None:
                rules = RULES[self.parsed.language]
                for name, node in nested_definitions(self.parsed.root, self.parsed.facts.src,
                                                     rules):
                    span = (node.start_point.row + 1, node.end_point.row + 1)
                    self._nested.setdefault(name, []).append(span)
        return self._nested


def file_symbols(path: str, text: str, language: str | None = None) -> FileSymbols:
    """Every unit span of ``text`` by name and its module-level blocks (see ``FileSymbols``);
    an unparsed file is one block of windows."""
    lines = split_lines(text)
    parsed = _parse(path, text, language) if text.strip() else None
    if parsed is None:
        bounds = window_bounds(lines) if text.strip() else []
        blocks = [(bounds[0][0] + 1, bounds[-1][1] + 1)] if bounds else []
        return FileSymbols(lines, {}, blocks)
    units: dict[str, list[Span]] = {}
    signatures: dict[Span, str] = {}
    kinds: dict[Span, str] = {}
    for unit in walk(parsed.items):
        span = (unit.start_row + 1, unit.end_row + 1)
        units.setdefault(unit.symbol, []).append(span)
        signatures[span] = unit.signature
        kinds[span] = unit.kind
    runs = module_runs(parsed.items, lines, parsed.facts.src, parsed.loose,
                       RULES[parsed.language].namespace_kinds)
    blocks = [(start + 1, end + 1) for start, end, _ in runs]
    return FileSymbols(lines, units, blocks, parsed, signatures=signatures, kinds=kinds)


def file_imports(path: str, text: str, language: str | None = None) -> list[str]:
    """The modules/paths ``text`` imports, as written, de-duplicated, in source order."""
    parsed = _parse(path, text, language) if text.strip() else None
    if parsed is None:
        return []
    return list(dict.fromkeys(name for _, name in parsed.facts.imports))

"""Structure in the ranking (seed 004: code relevance is structural): a class outline or a
module block does not outrank the member that answers the question, and a name written with its
owner (``Context.invoke``) picks that owner's member out of every other ``invoke``.

A class outline lists every member's signature, so it shares words with any question about the
class; a module block holds a file's imports and constants, so it shares words with any question
about the file. Both rank high for the wrong reason: the question asks for the code that does
the work, which is one member. So when a container (a class-like outline, ``CONTAINER_KINDS``,
or a module block) would rank above all of its members found in the pool, it swaps places with
its best member: the member answers in the container's slot, and the container stays in the
ranking, where the member was, as context — unless the query is only the container's name
(``HTTPAdapter``: then the outline is the answer). A swap rather than placing the container
right after the member: the container then spent a slot of its file (``diversify`` allows two
per file) that the file's next member needed.

Pure functions over ``Unit`` rows, so the search (``fusion.rerank``) and the benches that
re-rank saved pools apply the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from freshmark.core.chunking.model import (
    CONTAINER_KINDS,
    FUNCTION_KINDS,
    MODULE_CODE_KINDS,
    MODULE_SYMBOL,
)
from freshmark.core.chunking.ruby import singleton_head
from freshmark.core.declarations import declares_member, defined_in_text
from freshmark.core.ruby_names import ruby_marked_method
from freshmark.core.stamp import own_name
from freshmark.core.tokenize import name_forms, name_parts

# A member answers for its container only if it scores at least this share of the container's
# score: the question matches it too, not just the outline's list of signatures.
MEMBER_SHARE = 0.5
# A thin function among a question's first WORKER_TOP gives way to the worker it calls
# (``workers_first``).
THIN_LINES = 12
WORKER_TOP = 3
WORKER_AHEAD = 5
WORKER_SHARE = 0.8


@dataclass(frozen=True)
class Unit:
    """What the structural rule reads of one ranked chunk."""

    path: str
    symbol: str
    chunk_kind: str
    score: float
    # Names the chunk calls or uses (its stamp's ``references``).
    references: tuple[str, ...] = ()
    lines: int = 0  # the chunk's lines (0: not known)


def is_container(unit: Unit) -> bool:
    """A class-like outline or a module block: a chunk that summarises other chunks."""
    return unit.chunk_kind in CONTAINER_KINDS or (
        unit.chunk_kind == "block" and unit.symbol.startswith(MODULE_SYMBOL))


def is_member(unit: Unit, container: Unit) -> bool:
    """``unit`` is defined inside ``container``: a member of a class (``Class.name``), or any
    definition of the file for a module block."""
    if unit.path != container.path or unit is container:
        return False
    if container.chunk_kind == "block":
        return unit.chunk_kind not in MODULE_CODE_KINDS
    return unit.symbol.startswith(container.symbol + ".")


def names_only(terms: Iterable[str], symbol: str) -> bool:
    """The query is nothing but the symbol's name (``HTTPAdapter``, ``http adapter``)."""
    wanted = set(terms)
    return bool(wanted) and wanted <= name_forms(symbol) | name_parts(symbol)


@dataclass(frozen=True)
class Placement:
    """One place of the new order: which unit, its score, and whether it moved up to answer
    for a container (``answers``) or follows the member that does (``context``)."""

    index: int
    score: float
    role: str = ""


def members_first(units: Sequence[Unit], terms: Iterable[str],
                  member_share: float = MEMBER_SHARE,
                  declaring: Sequence[bool] | None = None) -> list[Placement]:
    """The new order of ``units`` (ranked best first).

    A container ranked above its members swaps places with its best-ranked member if that
    member scores at least ``member_share`` of the container (it matches the question too):
    the member takes the container's place and score, the container the member's. The file
    keeps its best score (file answers do not move) and no chunk gains a slot it did not
    have. Everything else keeps its order and score. A container that declares the name
    looked up (``declaring``, by unit index: a module block's ``var SupportedExts``) is the
    answer, as one the query only names is: it keeps its place.
    """
    wanted = list(terms)
    slots = [Placement(i, unit.score) for i, unit in enumerate(units)]
    moved: set[int] = set()
    for i, unit in enumerate(units):
        if i in moved or not is_container(unit) or unit.score <= 0 or \
                names_only(wanted, unit.symbol) or declaring and declaring[i]:
            continue
        member = next((j for j in range(i + 1, len(units))
                       if j not in moved and is_member(units[j], unit)), None)
        if member is None or units[member].score < member_share * unit.score:
            continue
        slots[i] = Placement(member, unit.score, "answers")
        slots[member] = Placement(i, units[member].score, "context")
        moved |= {i, member}
    return slots


def workers_first(units: Sequence[Unit], order: Sequence[Placement]) -> list[Placement]:
    """``order`` with the function that does the work just above a thin one of its file that
    calls it (at most ``THIN_LINES`` lines: a public wrapper, an accessor), when the thin one
    is among the first ``WORKER_TOP`` and the worker follows within ``WORKER_AHEAD`` places
    scoring at least ``WORKER_SHARE`` of it: a question asks how something is done, and the
    wrapper's words (its docstring) rank it above the code that does it (rack's
    ``byte_ranges`` above ``get_byte_ranges``). For questions in words only; the worker takes
    the wrapper's score, the chunks it passes move down one place and keep theirs."""
    out = list(order)
    settled: set[int] = set()  # a worker moved up, or a thin one it passed: each moves once
    for place in range(min(WORKER_TOP, len(out))):
        thin = units[out[place].index]
        if out[place].index in settled or thin.chunk_kind not in FUNCTION_KINDS or \
                not 0 < thin.lines <= THIN_LINES:
            continue
        worker = next((later for later in range(place + 1, min(len(out), place + 1 +
                                                                 WORKER_AHEAD))
                       if _does_the_work(units[out[later].index], thin)
                       and out[later].score >= WORKER_SHARE * out[place].score), None)
        if worker is not None:
            moved = out.pop(worker)
            out.insert(place, Placement(moved.index, out[place].score, moved.role))
            settled |= {moved.index, out[place + 1].index}
    return out


def _does_the_work(unit: Unit, thin: Unit) -> bool:
    return unit.chunk_kind in FUNCTION_KINDS and unit.path == thin.path and \
        unit.symbol != thin.symbol and unit.lines > thin.lines and \
        own_name(unit.symbol) in thin.references


def definitions_first(units: Sequence[Unit], order: Sequence[Placement],
                      code_names: Iterable[str]) -> list[Placement]:
    """``order`` with every definition the query names as code (``make_response``,
    ``Flask.make_response``, a name in backticks) moved up to just before the first chunk
    ranked above it that only uses that name (it references it, and is not named itself):
    the definition a query names beats its callers. A class's own members are not its
    callers: a question that names ``TypeName`` keeps the member that answers it above the
    outline (``members_first``). The definition takes that caller's score; the chunks it
    passes move down one place and keep theirs."""
    named = {unmarked(name).lower() for name in code_names}
    if not named:
        return list(order)
    out = list(order)
    # Ascending: moving one definition up shifts only positions before it, already handled.
    for position in _named_definitions(units, out, named):
        target = units[out[position].index]
        short = target.symbol.rsplit(".", 1)[-1]
        first_caller = next(
            (i for i in range(position)
             if short in units[out[i].index].references
             and not name_forms(units[out[i].index].symbol) & named
             and not is_member(units[out[i].index], target)), None)
        if first_caller is None:
            continue
        moved = out.pop(position)
        out.insert(first_caller, Placement(moved.index, out[first_caller].score,
                                           moved.role or "named"))
    return out


def _named_definitions(units: Sequence[Unit], order: Sequence[Placement],
                       named: set[str]) -> list[int]:
    """Positions in ``order`` of definitions whose name the query writes as code, best first."""
    return [i for i, placement in enumerate(order)
            if units[placement.index].chunk_kind not in MODULE_CODE_KINDS
            and name_forms(units[placement.index].symbol) & named]


def declaring_lines(symbols: Sequence[str], texts: Sequence[str], named: Sequence[str],
                    dotted: Sequence[str] = (), chunk_kinds: Sequence[str] = ()
                    ) -> list[bool] | None:
    """For a query that is nothing but names written as code (``BIT_SET``,
    ``methodsWithoutBody``): which of the ranked chunks (their ``symbols`` and ``texts``)
    declare, by a line of their text, a name that none is named by (a constant, a field, a
    module variable, an interface's method); None when every name has its own chunk. Not for
    a question: there a name is as often a parameter that many functions declare. A
    function's (``chunk_kinds``) ``name = value`` assigns the name, it does not declare it
    (viper's ``Reset`` setting the package's ``SupportedExts``)."""
    own = {own_name(symbol) for symbol in symbols}
    held = {form for name in own for form in name_forms(name)}
    # An all-caps name is a constant: ``DEFAULT_OPTIONS`` is not the method default_options;
    # a camelCase one is a value: ``subscribeWithSelector`` is not the type
    # SubscribeWithSelector (zustand exports the one typed as the other).
    unheld = [name for name in named if name not in own and
              (name.isupper() or name.lower() not in held or _camel_case(name))]
    # ``RequestRetrier.retry``: its conformers define ``retry``, the protocol only declares it.
    unowned = [name for name in dotted if "/" in name and not any(
        symbol == name.replace("/", ".") or symbol.endswith("." + name.replace("/", "."))
        for symbol in symbols)]
    if not unheld and not unowned:
        return None
    # ``Router.Use`` of an interface, ``Shape.area`` of an abstract class: the owner declares
    # the member by its signature alone and is its only chunk.
    members = [name for name in dotted if name.rsplit("/", 1)[-1] in unheld or name in unowned]
    in_function = [kind in FUNCTION_KINDS for kind in chunk_kinds] or [False] * len(symbols)
    return [defined_in_text(text, unheld, in_function=body) or
            declares_member(symbol, text, members)
            for symbol, text, body in zip(symbols, texts, in_function, strict=True)]


def _camel_case(name: str) -> bool:
    return name[:1].islower() and name != name.lower() and "_" not in name


_IMPL_PATH = re.compile(r"^impl (?:\w+\.)+")  # ``impl fmt.Display for X`` as ``impl Display``


def named_by(symbol: str, names: Collection[str]) -> bool:
    """``symbol`` is one of ``names``, whole or by its last part (``Mux.With`` for ``With``),
    spelt as given: a case-blind caller lowercases both. A Ruby predicate or bang method
    (``valid_path?``) is named by its name without the mark too; ``transform_keys!`` only
    by that spelling. A JavaScript private member (``Ky.#retry``) by its name with or without
    its ``#``; a Rust impl block by its label with or without its trait's path."""
    last = own_name(symbol)
    return symbol in names or last in names or unmarked(last) in names or \
        (last[-1:] in ("?", "!") and last[:-1] in names) or \
        (symbol.startswith("impl ") and _IMPL_PATH.sub("impl ", symbol) in names)


def named_exactly(units: Sequence[Unit], names: Iterable[str],
                  declaring: Sequence[bool] | None = None) -> list[bool] | None:
    """For a look-up by name (``With``, ``from_str``): which units are named so themselves
    (``Mux.With``), or declare a name by a line of their text (``declaring``); None when
    none is. Those lead a look-up: a definition named otherwise that shares its words
    (``WithValue``) or ranks high on its own is not what was asked for."""
    # Spelt as written: ``DEFAULT_OPTIONS`` is a constant, not the method ``default_options``.
    wanted = set(names)
    # A name written with its owner (``SequentialPublisher.Publish``) is that owner's member
    # alone, wherever it is (a test's helper class too), when there is one.
    dotted = [name for name in wanted if "." in name]
    # ``Rack::Utils.valid_path?`` reads as ``Rack.Utils`` and ``Utils.valid_path``: the first
    # only says whose member the second is.
    owned = [name for name in dotted
             if not any(other.split(".")[0] == own_name(name) for other in dotted)]
    # The query may write the namespace too (``GuzzleHttp\\Utils::jsonDecode``).
    by_owner = [any(bare == name or bare.endswith("." + name) or
                    "." in bare and name.endswith("." + bare)
                    for name in owned for bare in (unit.symbol, unit.symbol.rstrip("?!")))
                for unit in units]
    # ``ClassName.OBJECT``, a field with no chunk of its own: ``ClassName`` only says whose
    # it is, and names neither the class's constructors nor the class (its declaring line
    # does, by ``declaring``).
    owners = {part for name in dotted for part in name.split(".")[:-1]}
    alone = wanted - owners if dotted else wanted
    if dotted and not any(by_owner) and declaring and any(declaring):
        # No unit is the owner's member, but one declares it (a protocol's requirement).
        return list(declaring)
    flags = [(by_owner[i] if any(by_owner) else named_by(unit.symbol, alone))
             or bool(declaring and declaring[i]) for i, unit in enumerate(units)]
    if not any(flags) and len(wanted) == 1 and (word := next(iter(wanted))).islower():
        # A word typed in lower case names a definition spelt with capitals when none is spelt
        # as typed: zustand's ``persist`` is the type ``Persist``, not ``PersistListener``.
        flags = [own_name(unit.symbol).lower() == word for unit in units]
    return flags if any(flags) else None


def text_definitions_first(order: Sequence[Placement], defines: Sequence[bool],
                           later: Sequence[int] = ()) -> list[Placement]:
    """``order`` with the chunks that declare a name the query writes as code by a line of
    their text (``defines``, by unit index) moved to the top, in their order, with the top's
    score: a constant, a field or a module-level variable has no chunk of its own name, so
    its declaration sits in an outline or a module block that the ranking holds below the
    chunks that merely share its words, ordered by ``later`` (by unit index: overload stubs
    and code outside the source, such as a test that sets the variable, go after the
    others)."""
    moved = [p for p in order if defines[p.index]]
    if later:
        moved.sort(key=lambda p: later[p.index])
    if not moved or not order:
        return list(order)
    top = order[0].score
    return [Placement(p.index, max(p.score, top), p.role or "named") for p in moved] + \
        [p for p in order if not defines[p.index]]


def look_up_order(symbols: Sequence[str], texts: Sequence[str], file_kinds: Sequence[str],
                  looked: Iterable[str], chunk_kinds: Sequence[str] = (),
                  on_class: bool | None = None) -> list[int]:
    """Of the definitions a look-up names (side by side: each chunk's symbol, text and file
    kind), how far back each goes: overload stubs and code outside the source last (2), and,
    when a bare name has a definition of its own (the module's ``get_command``), the members
    that only end in that name (``Group.get_command``) after that definition (1); the
    members of another name looked up beside it (``OrderService cancel_order``) do not. A
    namespace's outline (``chunk_kinds``: ``module``) not named so goes after the chunks of
    its code too (1): it repeats the lines of its module blocks (``using ParsedHashMap``).
    Of a Ruby class method and the instance method of its name, which share a symbol, the
    one the look-up's form does not name (``on_class``, ``ruby_class_method_asked``) goes
    after the other (1)."""
    wanted = set(looked)
    bare = {name for name in wanted if "." not in name}
    own_definitions = bare & set(symbols)
    outlines = [kind == "module" and not named_by(symbol, wanted)
                for symbol, kind in zip(symbols, chunk_kinds, strict=True)] \
        if chunk_kinds else [False] * len(symbols)
    heads = [singleton_head(text) for text in texts]
    paired = {symbol for symbol, head in zip(symbols, heads, strict=True) if head} & \
        {symbol for symbol, head in zip(symbols, heads, strict=True) if not head}
    return [2 * (is_overload_stub(text) or kind != "source")
            + (symbol not in bare and unmarked(own_name(symbol)) in own_definitions or outline
               or on_class is not None and symbol in paired and head != on_class)
            for symbol, text, kind, outline, head in zip(symbols, texts, file_kinds, outlines,
                                                         heads, strict=True)]


# Python's ``@overload`` (``@typing.overload``, ``@t.overload``): a signature for the type
# checker, its body ``...``; the implementation is the definition without it.
_OVERLOAD_DECORATOR = re.compile(r"^\s*@(?:\w+\.)*overload\b", re.MULTILINE)


def is_overload_stub(text: str) -> bool:
    """A definition's text is an overload's typed stub, not the implementation."""
    return bool(_OVERLOAD_DECORATOR.search(text))


def code_names(identifiers: Iterable[str], dotted_names: Iterable[str]) -> list[str]:
    """Names a query writes as code: its identifiers (``make_response``, ``cancelOrder``) and
    the last part of each dotted name (``Context.invoke`` -> ``invoke``; ``QueryPlan``'s path
    hints are dotted names as slash paths)."""
    return [*identifiers, *(name.rsplit("/", 1)[-1] for name in dotted_names)]


def looked_up(text: str, identifiers: Iterable[str], dotted_names: Iterable[str]) -> list[str]:
    """The names (``code_names``) of a query that is nothing but names written as code
    (``run_patch_tests``, ``Immer.createDraft``); [] when it has other words."""
    dotted = list(dotted_names)
    named = code_names(identifiers, dotted)
    words = {word for name in [*named, *dotted] for word in re.findall(r"\w+", name)}
    return spelt(named, text) if set(re.findall(r"\w+", text)) <= words else []


def constant_alone(text: str) -> list[str]:
    """A one-word query in capitals (``VERSION``) as the constant it names for a look-up in
    search (``context`` keeps reading it as a word: ``TODO`` asks for no definition)."""
    word = text.strip()
    return [word] if re.fullmatch(r"[A-Z][A-Z0-9_]+", word) else []


def spelt(names: Iterable[str], text: str) -> list[str]:
    """``names`` with the ``?`` or ``!`` the text writes right after them (Ruby's
    ``valid_path?``, ``transform_keys!``) and the ``#`` or ``$`` right before them (a
    JavaScript private member, ``#getCurrentTime``; zod's ``$constructor``): the tokens of a
    query drop them."""
    out = []
    for name in names:
        mark = re.search(rf"(?<!\w){re.escape(name)}([?!])(?![\w=])", text)
        prefix = "" if name[:1] in ("#", "$") else \
            next((sign for sign in ("#", "$")
                  if re.search(rf"(?<![\w#$]){re.escape(sign + name)}(?!\w)", text)), "")
        out.append(prefix + (name + mark.group(1) if mark else name))
    return out


def unmarked(name: str) -> str:
    """A name without the ``#`` of a JavaScript private member (``#retry`` -> ``retry``):
    the bare name looks the member up as it does a public one."""
    return name[1:] if name.startswith("#") else name


# A declaration's keyword typed beside a name (``class TyperArgument``, ``def get_command``,
# ``Router interface``) asks for that definition as the name alone does. Keywords no English
# phrase starts with mark any word as a name (``def dumps``); the others only a word written
# as code (``class Typer``, not ``class instance`` or ``type conversion``).
_CODE_KEYWORDS = frozenset({"def", "fn", "func"})
_DECLARATION_WORDS = _CODE_KEYWORDS | frozenset({"class", "function", "method", "struct",
                                                 "interface", "enum", "trait", "type",
                                                 "module", "const"})


def without_declaration_word(text: str) -> str:
    """``text`` without a declaration's keyword before or after the one name it is written
    beside (``class Typer`` -> ``Typer``; ``class`` alone, ``class instance`` stay), and a
    name in backticks without them: written as code whatever its case (``class `tqdm```)."""
    words = text.split()
    if len(words) == 1 and _backticked(words[0]):
        return words[0][1:-1]
    if len(words) != 2:
        return text
    for keyword, name in (words, words[::-1]):
        bare = name[1:-1] if _backticked(name) else name
        if keyword.lower() in _CODE_KEYWORDS and keyword == words[0] or \
                keyword.lower() in _DECLARATION_WORDS and (bare != name or _written_as_code(name)):
            return bare
    return text


def _backticked(word: str) -> bool:
    return len(word) > 2 and word[0] == word[-1] == "`" and _written_as_code(word[1:-1], True)


def _written_as_code(word: str, any_case: bool = False) -> bool:
    return (any_case or bool(re.search(r"[A-Z_0-9.]", word))) and \
        bool(re.fullmatch(r"[\w.$#]+[?!]?", word))


_RUST_IMPL = re.compile(r"impl [A-Za-z_][\w:]*(?:<[^<>]*>)?(?: for [A-Za-z_][\w:]*)?")


def lookup_symbols(text: str, identifiers: Iterable[str], dotted_names: Iterable[str]
                   ) -> list[str]:
    """The symbols a short query may name exactly, to be looked up by name: those of a query
    that is only names written as code (``looked_up``; a dotted name also whole,
    ``Context.invoke``, ``Ky.#retry``), or the one word of a one-word query (``has``,
    ``evolve``, a private member's ``#retry``, a macro invoked, ``json!``), either with a
    declaration's keyword beside it (``class Typer``), a Rust impl block's label, or a Ruby
    setter or operator method (``ruby_marked_method``: ``Rack::Headers#[]=``)."""
    impl = _RUST_IMPL.fullmatch(" ".join(text.split()))
    if impl is not None:  # the label an impl block is named by (``impl fmt.Display for X``)
        label, angle, rest = impl.group(0).partition("<")
        return list(dict.fromkeys([impl.group(0), label.replace("::", ".") + angle + rest]))
    text = without_declaration_word(text)
    marked = ruby_marked_method(text)
    if marked:
        return marked
    dotted = list(dotted_names)
    names = looked_up(text, identifiers, dotted)
    if names:
        return list(dict.fromkeys([*names, *(name.replace("/", ".") for name in dotted)]))
    words = text.split()
    if len(words) != 1 or not re.fullmatch(r"(?:#(?=[A-Za-z_]))?\w+[?!]?", words[0]):
        return []
    # ``json!`` is Rust's macro ``json`` as it is invoked (or Ruby's method ``save!``).
    return list(dict.fromkeys([words[0], words[0].rstrip("!")]))


def qualified_hit(symbol: str, dotted_names: Iterable[str]) -> float:
    """1.0 when the query writes the symbol with its owner (``Context.invoke``,
    ``click.core.Context.invoke``): ``dotted_names`` are the query's dotted names as slash
    paths (``QueryPlan.path_hints``); else 0.0. A bare ``invoke`` names every ``invoke``."""
    parts = symbol.split(".")
    if len(parts) < 2:
        return 0.0
    owned = "/".join(parts[-2:]).lower()
    # A query's dotted names lose a Ruby method's ``?`` or ``!`` (``Utils.valid_path?``).
    forms = {owned, owned.rstrip("?!")}
    for name in dotted_names:
        lowered = name.lower()
        if any(lowered == form or lowered.endswith("/" + form) for form in forms):
            return 1.0
    return 0.0

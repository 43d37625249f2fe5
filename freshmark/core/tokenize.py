"""Code-aware tokens for the lexical index and the rerank (SPEC §6, seed 001 §3.1).

One function serves documents and queries alike, so both sides always agree:

- words are runs of letters, digits and underscores; everything else (``.``, ``/``, ``-``,
  operators, whitespace) separates, which also tokenises paths and dotted names;
- every word is kept whole, lowercased (``getUserById`` -> ``getuserbyid``, ``get_user_by_id``
  -> ``get_user_by_id``);
- compound words are also split: on underscores and on camelCase / digit boundaries
  (``HTTPServerError2`` -> ``http``, ``server``, ``error``, ``2``), and snake_case words also
  give their parts joined (``user_id`` -> ``userid``), so ``userId`` and ``user_id`` meet on
  both the whole word and its parts;
- a plural-looking token also gives its singular (``users`` -> ``users``, ``user``);
- numbers are kept; only a tiny stoplist of English glue words is dropped (words that are
  keywords in common languages, such as ``for``, ``in``, ``is``, stay);
- words longer than ``MAX_TOKEN_CHARS`` (base64 blobs, minified code) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

MAX_TOKEN_CHARS = 64

# English glue words that are not keywords or common identifiers in mainstream languages.
STOPWORDS = frozenset({"a", "an", "the", "of", "to", "how", "what", "which", "why", "does"})

_WORD = re.compile(r"[^\W_]\w*|_+[^\W_]\w*", re.UNICODE)
# camelCase / PascalCase / acronym / digit-run pieces of one underscore-free segment.
_PIECE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)


def _segments(word: str) -> list[str]:
    return [s for s in word.split("_") if s]


def _pieces(segment: str) -> list[str]:
    return _PIECE.findall(segment) or [segment]


def word_tokens(word: str) -> list[str]:
    """Distinct tokens of one identifier-like word: whole, segments, joined form, camel pieces.

    ``get_userId`` -> ``get_userid``, ``get``, ``userid``, ``getuserid``, ``user``, ``id``.
    Each appears once per word, so a compound word does not inflate the frequency of its parts.
    """
    segments = _segments(word)
    tokens = [word.lower(), *(s.lower() for s in segments)]
    if len(segments) > 1:
        tokens.append("".join(tokens[1:]))
    tokens.extend(p.lower() for s in segments for p in _pieces(s))
    tokens.extend(singular(t) for t in tokens[:])
    return list(dict.fromkeys(tokens))


def singular(token: str) -> str:
    """A plural-looking token's singular (``users`` -> ``user``, ``classes`` -> ``class``,
    ``entries`` -> ``entry``); other tokens unchanged. Crude on purpose: it only adds a token,
    the word itself is kept, so a wrong guess costs a little noise, never a lost match."""
    if len(token) <= 4 or not token.endswith("s") or token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith(("sses", "xes", "ches", "shes")):
        return token[:-2]
    return token[:-1]


_VOWELS = frozenset("aeiouy")


def verb_bases(token: str) -> list[str]:
    """The base forms an English ``-ed`` / ``-ing`` word may come from (``parsed`` -> ``pars``,
    ``parse``; ``loading`` -> ``load``, ``loade``; ``stopped`` -> ``stop``; ``copied`` ->
    ``copy``), for a question's prose only: code names its work in base forms
    (``_parse_inline_table``), a question in inflected ones ("where are tables parsed").
    Crude on purpose, as ``singular``: a guess no chunk holds is no term of the lexical search."""
    if not token.isalpha() or len(token) < 5:
        return []
    if token.endswith("ied"):
        return [token[:-3] + "y"]
    if token.endswith("ing") and len(token) >= 6:
        stem = token[:-3]
    elif token.endswith("ed"):
        stem = token[:-2]
    else:
        return []
    if len(stem) < 3 or not set(stem) & _VOWELS:
        return []
    bases = [stem, stem + "e"]
    if stem[-1] == stem[-2] and stem[-1] not in _VOWELS | {"l", "s", "z"}:
        bases.append(stem[:-1])  # stopped -> stop, running -> run (not called, passed)
    return bases


@lru_cache(maxsize=1 << 16)
def _kept_tokens(word: str) -> tuple[str, ...]:
    # Code repeats its words endlessly; caching per word saves most of the tokenizing time and
    # lets every occurrence share one string object.
    return tuple(t for t in word_tokens(word) if len(t) <= MAX_TOKEN_CHARS and t not in STOPWORDS)


def words(text: str) -> list[str]:
    """The identifier-like words of ``text`` that tokens are made from, in order."""
    return _WORD.findall(text)


def kept_tokens(word: str) -> tuple[str, ...]:
    """The tokens one word gives (the whole word first), as documents and queries index it."""
    return _kept_tokens(word)


def iter_tokens(text: str) -> Iterator[str]:
    """Tokens of a chunk text, a path or a query, in order (see the module rules)."""
    for match in _WORD.finditer(text):
        yield from _kept_tokens(match.group())


def tokenize(text: str) -> list[str]:
    """All tokens of ``text`` (repeats kept: BM25 counts term frequency)."""
    return list(iter_tokens(text))


def query_terms(text: str) -> list[str]:
    """The distinct tokens of a query, in first-seen order."""
    return list(dict.fromkeys(iter_tokens(text)))


# A word written as code: snake_case, camelCase, a dotted or ``::`` name (a private member's
# too, ``Ky.#retry``), a call.
_CODE_WORD = re.compile(r"\w_\w|[a-z][A-Z]|[A-Za-z_]\.#?[A-Za-z_]|::|\w\(")


def code_share(text: str) -> float:
    """Share of the whitespace-separated words of ``text`` written as code (``cancel_order``,
    ``userId``, ``Router.Walk``, ``Foo::bar``, ``run()``), 0.0 for plain prose.

    The rerank leans on lexical evidence as this grows: names match names exactly, while
    descriptive prose is where embeddings help (seed 001 §3.2).
    """
    words = text.split()
    return sum(bool(_CODE_WORD.search(w)) for w in words) / len(words) if words else 0.0


def _last_component(symbol: str) -> str:
    parts = re.split(r"[.:#/\\]", symbol.strip())
    return parts[-1] if parts else ""


def name_parts(symbol: str) -> set[str]:
    """Lowercase pieces of a symbol's last component (``OrderService.cancel_order`` ->
    ``{cancel, order}``); the rerank's partial symbol-name hit counts them."""
    last = _last_component(symbol)
    return {p.lower() for s in _segments(last) for p in _pieces(s)}


def name_forms(symbol: str) -> set[str]:
    """Whole-word forms of a symbol's last component: as written and with underscores dropped
    (``cancel_order`` -> ``{cancel_order, cancelorder}``), all lowercase. A query naming the
    symbol in any casing style (``cancelOrder``, ``cancel_order``) yields one of these tokens.
    A query's tokens drop a name's ``$`` or ``~`` (zod's ``$ZodType``, ``~validate``), so its
    forms do too."""
    last = _last_component(symbol).lstrip("$~")
    segments = _segments(last)
    if not segments:
        return set()
    return {last.lower(), "".join(segments).lower()}

"""What a search or a context slice may ask for: one validated request object each.

A face (CLI, HTTP, MCP) builds the request once with ``SearchRequest.build`` or
``ContextRequest.build``, which refuse bad input with ``BadInput`` before anything is opened,
and hands it down unchanged: the services read its fields and never validate again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from freshmark.core.errors import BadInput
from freshmark.core.kinds import EXCLUDED_FILE_KINDS, FILE_KINDS, ON_REQUEST_FILE_KINDS

# An issue report with its tracebacks and reproduction code is a fair query (tens of KB); a
# pasted file beyond this is refused with a message rather than tokenised and embedded.
MAX_QUERY_BYTES = 100_000
MAX_K = 100

# ``hybrid`` is what users get; ``bm25`` and ``vectors`` measure one channel alone.
CHANNELS = ("bm25", "vectors", "hybrid")
# What a search covers unless the caller names kinds: everything but the excluded kinds and
# the kinds searched only on request (changelogs, translation catalogues).
DEFAULT_KINDS = frozenset(FILE_KINDS) - EXCLUDED_FILE_KINDS - ON_REQUEST_FILE_KINDS


def validate_query(query: object) -> str:
    """The query stripped of outer whitespace, or ``BadInput`` saying what is wrong with it."""
    if not isinstance(query, str):
        raise BadInput(f"query must be text, not {type(query).__name__}")
    if "\x00" in query:
        raise BadInput("query contains NUL bytes (binary content); send plain text")
    size_bytes = len(query.encode("utf-8", "surrogatepass"))
    if size_bytes > MAX_QUERY_BYTES:
        raise BadInput(
            f"query is {size_bytes} bytes, over the {MAX_QUERY_BYTES}-byte limit; "
            "ask with a sentence or a few symbol names instead of pasting code"
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: a byte that was not UTF-8 (\xff)
        raise BadInput(f"query is not valid UTF-8 text (at character {exc.start}); "
                       "send plain text") from None
    text = query.strip()
    if not text:
        raise BadInput("query is empty; give words or a symbol name to search for")
    if not re.search(r"\w", text):
        # Punctuation alone gives BM25 no token and the model no meaning: any answer is noise.
        raise BadInput("query has no word or name, only punctuation; give words or a symbol "
                       "name to search for")
    return text


def validate_branch(branch: str | None) -> str | None:
    """``branch`` as given (None: the checked-out one), or ``BadInput`` for an empty name,
    which would otherwise quietly mean the checked-out branch."""
    if branch is not None and not branch.strip():
        raise BadInput("branch is empty; name a branch, or leave it out for the checked-out one")
    return branch


def validate_k(k: object) -> int:
    """``k`` itself, or ``BadInput`` unless it is a whole number from 1 to MAX_K."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadInput(f"k must be a whole number from 1 to {MAX_K}, not {k!r}")
    return k


def resolve_kinds(kinds: Iterable[str] | str | None, include_excluded: bool = False
                  ) -> frozenset[str]:
    """The file kinds a search covers: ``kinds`` as named (a list or a comma-separated string),
    else ``DEFAULT_KINDS``; ``include_excluded`` adds the excluded kinds either way."""
    if kinds is None or kinds == []:
        chosen = set(DEFAULT_KINDS)
    else:
        names = kinds.split(",") if isinstance(kinds, str) else list(kinds)
        if not all(isinstance(name, str) for name in names):
            raise BadInput("kind must be a list of file kind names")
        chosen = {name.strip().lower() for name in names if name.strip()}
        if not chosen:  # `--kind ""` searched nothing, or everything, without a word
            raise BadInput(f"kind names no file kind; choose from {', '.join(FILE_KINDS)} "
                           "(leave it out for the default)")
        unknown = sorted(chosen - set(FILE_KINDS))
        if unknown:
            raise BadInput(f"unknown file kind {', '.join(map(repr, unknown))}; "
                           f"choose from {', '.join(FILE_KINDS)}")
    if include_excluded:
        chosen |= EXCLUDED_FILE_KINDS
    return frozenset(chosen)


def validate_channels(channels: object) -> str:
    if channels not in CHANNELS:
        raise BadInput(f"channels must be one of {', '.join(CHANNELS)}, not {channels!r}")
    return str(channels)


@dataclass(frozen=True)
class SearchRequest:
    """One search: the query, how many results, which file kinds, against which head.

    Build it with ``build`` (validated); the fields then hold normalised values: ``query``
    stripped, ``kinds`` the resolved set (with the excluded kinds when ``include_excluded``).
    ``branch`` None is the checked-out branch; ``worktree`` verifies against the work tree.
    """

    query: str
    k: int = 5
    kinds: frozenset[str] = DEFAULT_KINDS
    include_history: bool = False
    include_excluded: bool = False
    branch: str | None = None
    worktree: bool = False
    channels: str = "hybrid"

    @classmethod
    def build(cls, query: object, *, k: object = 5, kinds: Iterable[str] | str | None = None,
              include_history: bool = False, include_excluded: bool = False,
              branch: str | None = None, worktree: bool = False,
              channels: str = "hybrid") -> SearchRequest:
        """A validated request; ``BadInput`` for a bad ``k``, kind, channel or query."""
        k = validate_k(k)
        resolved = resolve_kinds(kinds, include_excluded)
        text = validate_query(query)
        return cls(text, k, resolved, include_history, include_excluded,
                   validate_branch(branch), worktree, validate_channels(channels))


# Context slices (SPEC §7): the levels and their default budgets, in prompt tokens.
LEVELS = {"L1": "symbol", "L2": "module", "L3": "cross-module"}
DEFAULT_BUDGET_TOKENS = {"L1": 4_000, "L2": 20_000, "L3": 60_000}
MIN_BUDGET_TOKENS = 300  # the header and contract alone take about 200
# The L3 default is 60,000 tokens; twice that is more than any model's window needs. One bound
# for every face: the CLI takes no budget the server would refuse.
MAX_BUDGET_TOKENS = 120_000


def check_level_and_budget(level: str, budget_tokens: int | None) -> tuple[str, int]:
    """The level (``L1``..``L3``) and budget to use; ``BadInput`` for anything else."""
    level = (level or "").strip().upper()
    if level not in LEVELS:
        raise BadInput(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    if budget_tokens is None:
        return level, DEFAULT_BUDGET_TOKENS[level]
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens <= 0:
        raise BadInput(f"budget must be a positive number of tokens, not {budget_tokens!r}")
    if not MIN_BUDGET_TOKENS <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise BadInput(f"budget {budget_tokens} is outside {MIN_BUDGET_TOKENS}.."
                       f"{MAX_BUDGET_TOKENS} tokens (the header and contract need "
                       f"{MIN_BUDGET_TOKENS})")
    return level, budget_tokens


@dataclass(frozen=True)
class ContextRequest:
    """One context slice: the query, the level (``L1``..``L3``) and the budget in tokens."""

    query: str
    level: str = "L1"
    budget_tokens: int = DEFAULT_BUDGET_TOKENS["L1"]
    branch: str | None = None
    worktree: bool = False

    @classmethod
    def build(cls, query: object, *, level: str = "L1", budget_tokens: int | None = None,
              branch: str | None = None, worktree: bool = False) -> ContextRequest:
        """A validated request; ``BadInput`` for a bad query, level or budget."""
        text = validate_query(query)
        level, budget = check_level_and_budget(level, budget_tokens)
        return cls(text, level, budget, validate_branch(branch), worktree)

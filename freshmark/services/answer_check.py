"""``check-answer``: an agent's answer checked against the slice it was given and the head.

The rules are ``core.answers``; this use case reads what they need: today's files of the
branch the slice was built on (head blob, or the work tree for a work-tree slice), and, for a
``[MISSING]`` line that names a symbol, whether a live definition of it exists. That lookup is
bounded by the query, never a scan: the lexical channel's best matches for the name, read from
the store, each confirmed in its file at the head.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.answers import (
    AnswerReport,
    GoldLocation,
    MissingLine,
    ServedSlice,
    check_missing,
    check_reference,
    parse_answer,
    short_name,
)
from freshmark.core.config import Config
from freshmark.core.errors import BadInput, PermanentError
from freshmark.core.ports import BranchView, LexicalChannel
from freshmark.core.settings import Settings
from freshmark.core.tokenize import query_terms
from freshmark.services.open_branch import open_branch
from freshmark.services.repos import RepoHandle
from freshmark.services.verifier import Verifier

# Lexical matches read per name a [MISSING] line gives: its definition ranks among the first.
SYMBOL_CANDIDATES = 20
MAX_GOLD_LOCATIONS = 50


@dataclass(frozen=True)
class AnswerCheckRequest:
    """An answer, the context slice it was written from (its JSON), and optional gold."""

    answer: str
    served: ServedSlice
    gold: tuple[GoldLocation, ...] = ()

    @classmethod
    def build(cls, answer: str, context: Mapping[str, Any],
              gold: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
              ) -> AnswerCheckRequest:
        if not isinstance(answer, str) or not answer.strip():
            raise BadInput("the answer is empty")
        golds: Sequence[Mapping[str, Any]] = [gold] if isinstance(gold, Mapping) else gold or []
        if len(golds) > MAX_GOLD_LOCATIONS:
            raise BadInput(f"at most {MAX_GOLD_LOCATIONS} gold locations")
        return cls(answer, ServedSlice.from_context(context),
                   tuple(GoldLocation.from_dict(g) for g in golds))


class _HeadText:
    """``core.answers.HeadFiles`` over a verifier: a path that may not be read is absent."""

    def __init__(self, verifier: Verifier):
        self.verifier = verifier

    def text(self, path: str) -> str | None:
        try:
            return self.verifier.current_text(path)
        except PermanentError:  # a path that leaves the repository names nothing in it
            return None


def check_answer(request: AnswerCheckRequest, repo_arg: str | RepoHandle | None, *,
                 settings: Settings, config: Config, store: Store | None = None,
                 ) -> AnswerReport:
    """Judge the answer's references and [MISSING] lines (``core.answers``) on the branch
    the slice was built on. ``repo_arg`` defaults to the repository the slice names."""
    served = request.served
    repo = repo_arg if repo_arg is not None else served.repo
    if not repo:
        raise BadInput("the context names no repository; give one (--repo)")
    parsed = parse_answer(request.answer)
    need_index = any(line.symbols for line in parsed.missing)
    opened = open_branch(repo, settings=settings, config=config, branch=served.branch or None,
                         worktree=served.worktree, store=store, need_index=need_index)
    head = _HeadText(opened.verifier)
    references = tuple(check_reference(r, served, head, request.gold)
                       for r in parsed.references)
    # Opened once for every name the [MISSING] lines give (only when one gives a symbol).
    channel = lexical_engine(settings).channel(opened.index) \
        if opened.index is not None else None
    missing = tuple(check_missing(line, _existing(line, opened.index, channel, head),
                                  request.gold)
                    for line in parsed.missing)
    return AnswerReport(references, missing, request.gold)


def _existing(line: MissingLine, index: BranchView | None, channel: LexicalChannel | None,
              head: _HeadText) -> Iterator[str]:
    """The names of ``line`` that exist at the head: files by path, symbols by definition."""
    for path in line.paths:
        if head.text(path) is not None:
            yield path
    for symbol in line.symbols:
        if index is not None and channel is not None and \
                _defined(symbol, index, channel, head):
            yield symbol


def _defined(symbol: str, index: BranchView, channel: LexicalChannel, head: _HeadText) -> bool:
    """A live chunk defines ``symbol`` (by its name, or its dotted tail) and today's file of
    that chunk still holds the name."""
    name = short_name(symbol)
    terms = query_terms(symbol.replace("::", "."))
    if not name or not terms:
        return False
    hits, _ = channel.search(terms, SYMBOL_CANDIDATES)
    records = index.get(ids=[hit.id for hit in hits], include_text=False)
    wanted = symbol.replace("::", ".").removesuffix("()")
    for record in records:
        qualified = record.symbol.replace("::", ".")
        if short_name(qualified) != name:
            continue
        if "." in wanted and not (qualified == wanted or qualified.endswith("." + wanted)):
            continue
        text = head.text(record.path)
        if text is not None and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            return True
    return False

"""Context slices ready to paste into a prompt (SPEC §7, seed 004), built from verified material.

Recall wide, slice narrow: the search recalls ``RECALL_K`` chunks (history included, so it can
be labelled), every one is verified, and only ``current`` and ``older_identical`` material, or
``changed`` material re-read from today's file, becomes evidence. Code always comes from
today's file (head blob or work tree), never from the index's cached text; historical chunks
appear only under "Reference only" with their ``use:`` line.

Levels: **L1** the best symbol with its import block, the type definitions at its boundary,
``BREATHING_LINES`` lines after it and the signatures of its direct callers; **L2** its whole
file and the files it imports directly; **L3** the files the symbol graph reaches from it
(callers and callees, ``L3_DEPTH`` hops) with the call chain.

Reference contract: every section carries an anchor ``[file:Lx-Ly | symbol | confidence]``
and the three-line citation header. Confidence: **high** for verified evidence and for what it
directly needs (its imports, its file, graph-confirmed relations); **medium** for ``changed``
evidence and name-only callers; **low** for historical reference and for L3 relations resolved
by name alone (inferred, seed 004 template C).

Two markers, which the header explains to the model: ``[MISSING]`` only for evidence that was
looked for and is not there (no current code matches the query, or a question in words whose
recalled code is all far from it: the line comes first and its nearest code follows, at low
confidence with everything that serves it); ``[LEFT OUT]``
for verified material that exists but did not fit the budget (or was shown only in a smaller
form), so a model never reads a budget cut as absent code. Deleted code is never named as missing: a
historical reference that does not fit is a ``[LEFT OUT]`` line that says it is history.

Budget: ``estimate_tokens`` counts one token per 3 ASCII characters (code runs 3-4 characters
per token under BPE tokenizers; erring low keeps a slice inside the budget) plus one per
non-ASCII character. The rendered text never exceeds the budget by that estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config, load_config
from freshmark.core.fusion import Candidate
from freshmark.core.lag import lag_phrase
from freshmark.core.ports import Embedder
from freshmark.core.query import plan_query
from freshmark.core.request import DEFAULT_KINDS, LEVELS, ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.structure import declares_member, defined_in_text, looked_up, named_by
from freshmark.core.verdicts import Verdict, short
from freshmark.services.context.slices import (
    EVIDENCE_VERDICTS,
    LEVEL_BUILDERS,
    Section,
    SliceBuilder,
    is_secondary,
)
from freshmark.services.context.symbol_graph import graph_for
from freshmark.services.open_branch import (
    OpenedBranch,
    count_verdicts,
    embedder_for,
    index_info,
    open_branch,
)
from freshmark.services.repos import RepoHandle
from freshmark.services.retrieval.drift import attach_drift
from freshmark.services.retrieval.hybrid import hybrid_search
from freshmark.services.retrieval.results import VerifiedResult, verify_results
from freshmark.services.retrieval.search import unindexed_summary

RECALL_K = 8
# A question in words (one the question model ranks) whose recalled code is all below this
# similarity is most likely not answered by the repository: of 120 held-out questions asked
# of their own repository and the same 120 asked of a repository of another domain
# (bench/RESULTS.md), no recalled chunk reached it for 2 of the first and 78 of the second.
CLEAR_SIMILARITY = 0.30
# A result is evidence only if the query matched it: lexically (BM25 above 0) or by a cosine
# similarity of at least this. Below both it is merely the nearest neighbour of an
# unrelated query, and the honest answer is [MISSING].
MIN_VECTOR_SIMILARITY = 0.35
_SKIPPABLE_ROLES = frozenset({"type", "related", "caller", "candidate", "match"})
# Graph neighbours: worth less than the search's own strong matches, so packed after them.
_NEIGHBOUR_ROLES = frozenset({"related", "caller"})
# The modules the best file imports (L2): the question's other matches come first, so a
# budget is not spent on imported utilities while a file the question is about is left out.
_AFTER_MATCHES_ROLES = frozenset({"dependency"})
_GROUP_ORDER = {"missing": 0, "imports": 1, "type": 2, "evidence": 3, "module": 3,
                "match": 4, "dependency": 4, "call_chain": 5, "related": 5, "caller": 6,
                "candidate": 7, "reference": 8}


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes in a prompt, by the estimate documented above (never negative)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 3) + (len(text) - ascii_chars)


@dataclass
class ContextSlice:
    query: str
    level: str
    budget_tokens: int
    header: str
    target: dict[str, Any]
    index: dict[str, Any]
    sections: list[Section] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # [MISSING]: evidence not there
    left_out: list[str] = field(default_factory=list)  # [LEFT OUT]: cut for the budget

    def text(self) -> str:
        """The header, the [MISSING] lines (each says what the sections after it are: the
        nearest code of a far question, or the history that alone matches), the sections,
        then the [LEFT OUT] lines."""
        ordered = sorted(self.sections, key=lambda s: _GROUP_ORDER.get(s.role, 9))
        parts = [self.header, *(["\n".join(self.missing)] if self.missing else []),
                 *(s.render() for s in ordered)]
        if self.left_out:
            parts.append("\n".join(self.left_out))
        return "\n\n".join(parts) + "\n"

    @property
    def used_tokens(self) -> int:
        return estimate_tokens(self.text())

    def to_dict(self) -> dict[str, Any]:
        text = self.text()
        return {
            "query": self.query, "level": self.level, "budget_tokens": self.budget_tokens,
            "used_tokens": estimate_tokens(text), "target": self.target, "index": self.index,
            "sections": [s.to_dict() for s in self.sections], "missing": self.missing,
            "left_out": self.left_out, "text": text,
        }


# -- fitting sections into the budget --------------------------------------------------------------
MISSING = "[MISSING]"
LEFT_OUT = "[LEFT OUT]"


def _left_out_line(section: Section, why: str) -> str:
    return f"{LEFT_OUT} {section.path}:L{section.start_line}-L{section.end_line} | " \
           f"{section.symbol} — {why}"


def fit(slice_: ContextSlice, candidates: list[Section]) -> None:
    """Add ``candidates`` in priority order while the rendered slice stays within the budget.

    A section whose lines another section already shows is skipped. A section that does
    not fit is tried as its fallbacks (a smaller form of the same
    material); whatever is cut is named on a ``[LEFT OUT]`` line. Sections may use the
    budget less a reserve for those lines (at most a fifth of it), so the cuts are named too;
    only the first section (the best evidence) may take the reserve when nothing else fits.
    What the reserve was not needed for is handed back at the end.
    """
    budget = slice_.budget_tokens
    reserve = min(budget // 5, sum(
        estimate_tokens(_left_out_line(c, left_out_reason(c, None, budget)))
        for c in candidates[1:]))
    cut: list[tuple[int, Section, str]] = []  # where a section would stand, it, its line
    for position, section in enumerate(candidates):
        if _already_shown(slice_, section):
            continue
        chosen = _first_fitting(slice_, section, budget - reserve)
        if chosen is None and position == 0:  # the best evidence may use the reserve too
            chosen = _first_fitting(slice_, section, budget)
        if chosen is section:
            continue
        line = _left_out_line(section, left_out_reason(section, chosen, budget))
        slice_.left_out.append(line)
        if slice_.used_tokens > budget:
            slice_.left_out.pop()
        elif chosen is None:
            cut.append((len(slice_.sections), section, line))
    while slice_.used_tokens > budget and slice_.left_out:
        slice_.left_out.pop()
    _hand_back_the_reserve(slice_, cut)


def _hand_back_the_reserve(slice_: ContextSlice, cut: list[tuple[int, Section, str]]) -> None:
    """The reserve kept for ``[LEFT OUT]`` lines that fewer lines needed: a section cut that
    fits in what is left of the budget now takes its place (or a fallback of it), in priority
    order, and its line goes or says what is shown."""
    budget, added = slice_.budget_tokens, 0
    for where, section, line in cut:
        if line not in slice_.left_out or _already_shown(slice_, section):
            continue
        at = slice_.left_out.index(line)
        slice_.left_out.pop(at)
        option: Section | None = section
        while option is not None:
            slice_.sections.insert(where + added, option)
            if slice_.used_tokens <= budget:
                break
            slice_.sections.pop(where + added)
            option = option.fallback
        if option is None:
            slice_.left_out.insert(at, line)
            continue
        added += 1
        if option is not section:
            slice_.left_out.insert(at, _left_out_line(
                section, left_out_reason(section, option, budget)))
            if slice_.used_tokens > budget:
                slice_.left_out.pop(at)


def _already_shown(slice_: ContextSlice, section: Section) -> bool:
    """A related symbol already in the slice: the same symbol, or lines another section shows
    (e.g. in its breathing room)."""
    if section.role not in _SKIPPABLE_ROLES:
        return False
    return any((s.path, s.symbol) == (section.path, section.symbol)
               or s.covers(section.path, section.start_line, section.end_line)
               for s in slice_.sections)


def left_out_reason(section: Section, chosen: Section | None, budget: int) -> str:
    """Why a section is cut, in words that say it exists: verified code (ask for it), or
    history (deleted code: reference only, never something to ask for as evidence)."""
    size = estimate_tokens(section.stands_for or section.render())
    needs = f"needs ~{size} of the {budget}-token budget"
    if section.role == "reference":
        return f"history, reference only (not in today's code); {needs}"
    shown = "not shown" if chosen is None else "shown without the lines around it" \
        if chosen.anchor == section.anchor else f"shown only as {chosen.anchor}"
    return f"{shown}; the whole {needs}"


def _first_fitting(slice_: ContextSlice, section: Section, limit: int) -> Section | None:
    option: Section | None = section
    while option is not None:
        slice_.sections.append(option)
        if slice_.used_tokens <= limit:
            return option
        slice_.sections.pop()
        option = option.fallback
    return None


def packing_order(level_sections: list[Section], matches: list[Section],
                  file_kinds: dict[str, str]) -> list[Section]:
    """The order ``fit`` packs in: the level's own material, then the search's other matches,
    then the modules the best file imports, then graph neighbours; within each, tests,
    examples and docs after the implementation."""
    def later(section: Section) -> bool:
        return is_secondary(section.path, file_kinds.get(section.path, "source"))

    deferred = _NEIGHBOUR_ROLES | _AFTER_MATCHES_ROLES
    own = [s for s in level_sections if s.role not in deferred]
    extra = matches + [s for s in level_sections if s.role in _AFTER_MATCHES_ROLES] + \
        [s for s in level_sections if s.role in _NEIGHBOUR_ROLES]
    return own + [s for s in extra if not later(s)] + [s for s in extra if later(s)]


@dataclass(frozen=True)
class AskedNames:
    """What a query that is only names asks for: the names (``run_patch_tests``,
    ``OrderService.cancel_order`` -> ``cancel_order``...; [] for a question) and its dotted
    names as slash paths (``OrderService/cancel_order``)."""

    names: list[str]
    dotted: list[str]

    @classmethod
    def of(cls, query: str) -> AskedNames:
        plan = plan_query(query)
        names = looked_up(plan.text, plan.identifiers, plan.path_hints)
        return cls(names, plan.path_hints if names else [])

    def answered_by(self, result: VerifiedResult) -> bool:
        """The result is a definition of one of the names (by its name or its last part),
        declares one by a line of its text (a constant, a field), or is the owner that
        declares a named member by its signature (an interface's method)."""
        record = result.record
        return named_by(record.symbol.lower(), {name.lower() for name in self.names}) or \
            defined_in_text(record.text, self.names) or \
            declares_member(record.symbol, record.text, self.dotted)


def implementation_first(evidence: list[VerifiedResult], asked: AskedNames
                         ) -> list[VerifiedResult]:
    """Evidence with tests, examples and docs after the implementation (stable otherwise),
    except the definitions of the names the query is only made of (``runPatchTests``): asked
    for by name, they lead wherever they are defined; the implementation's first."""
    return sorted(evidence, key=lambda r: (not (asked.names and asked.answered_by(r)),
                                           is_secondary(r.record.path, r.record.file_kind)))


def far_from_the_question(candidates: Sequence[Candidate]) -> float | None:
    """The best similarity of a question in words whose recalled code is all far from it
    (below ``CLEAR_SIMILARITY``); None when a chunk is near it, or for a query the question
    model does not rank (names, code, an issue report, another embedder)."""
    if not candidates or not candidates[0].probability:
        return None
    best = max((c.vector_sim or 0.0) for c in candidates)
    return best if best < CLEAR_SIMILARITY else None


def _lowered(sections: Sequence[Section]) -> None:
    """The sections (and their smaller forms) at low confidence: the evidence, and what only
    serves it (its imports, types, callers, module), which claims no more than it."""
    for section in sections:
        form: Section | None = section
        while form is not None:
            form.confidence = "low"
            form = form.fallback


def matched(result: VerifiedResult) -> bool:
    """True when the query matched the result rather than merely ranked it (see above)."""
    bm25 = result.explain.get("bm25") or 0.0
    similarity = result.explain.get("vector_sim") or 0.0
    return bm25 > 0 or similarity >= MIN_VECTOR_SIMILARITY


def _header(query: str, level: str, budget: int, opened: OpenedBranch,
            info: dict[str, Any]) -> str:
    one_line = " ".join(query.split())
    one_line = one_line if len(one_line) <= 200 else one_line[:199] + "…"
    layers = ", ".join(f"{name}@{short(stamp.get('commit'))} ({stamp.get('indexed_at') or '?'})"
                       for name, stamp in info["layers"].items())
    behind = unindexed_summary(opened.repo, info["commit"], opened.target.head)
    lag = [lag_phrase(behind)] if behind is not None else []
    return "\n".join([
        f"# Context {level} ({LEVELS[level]} slice) for: {one_line}",
        f"index: {info['collection']} at {short(info['commit'])}, built "
        f"{info['indexed_at'] or '?'}; layers: {layers or '-'}",
        *lag,
        f"verified against: {opened.target.label}; budget: {budget} tokens "
        "(estimate: 1 token per 3 characters)",
        "",
        "Answer only from the material below. Cite each claim as "
        "[file:Lx-Ly | symbol | high/medium/low].",
        "If the material does not hold the answer, write [MISSING] and name the file or "
        "symbol that is needed.",
        f"Below, {MISSING} = evidence not found; {LEFT_OUT} = code that exists but did not "
        "fit the budget (ask for it).",
        "Sections marked 'reference only' are history: take design ideas from them, never "
        "implement against them.",
    ])


def _no_evidence_line(opened: OpenedBranch, results: list[VerifiedResult],
                      names: str = "") -> str:
    """The one [MISSING] line: it names what is needed (``names``: the query, when it is only
    names), never deleted code (historical matches, if any, follow as reference-only
    sections, or [LEFT OUT] lines)."""
    historical = any(r.verification.verdict is Verdict.HISTORICAL for r in results)
    found = "; only deleted code matches it" if historical else ""
    if names:
        shown = " ".join(names.split())
        shown = shown if len(shown) <= 120 else shown[:119] + "…"
        return (f"{MISSING} no definition of {shown} in {opened.target.label}"
                f"{found}; needed: the file or symbol that defines it")
    return (f"{MISSING} no current code in {opened.target.label} matches the query{found}; "
            "needed: the file or symbol that implements it")


def build_context(
    request: ContextRequest, repo_arg: str | RepoHandle, *, settings: Settings,
    config: Config | None = None, store: Store | None = None, embedder: Embedder | None = None,
    count: bool = True,
) -> ContextSlice:
    """A verified, anchored context slice for the request: its query at its level within its
    budget. Repository and branch errors as ``search``."""
    text, level, budget = request.query, request.level, request.budget_tokens
    config = config if config is not None else load_config(settings.config_path)
    opened = open_branch(repo_arg, settings=settings, config=config, branch=request.branch,
                         worktree=request.worktree, store=store, need_index=True)
    assert opened.index is not None
    embedder = embedder if embedder is not None else embedder_for(settings, opened.index)
    recall = SearchRequest(text, RECALL_K, DEFAULT_KINDS, include_history=True)
    candidates, _ = hybrid_search(opened.index, embedder, recall,
                                  lexical=lexical_engine(settings))
    results = verify_results(opened, [(c.record, c.score, c.explain()) for c in candidates])
    attach_drift(opened.repo, opened.target.head, results)
    info = index_info(opened.index)
    if count:
        count_verdicts(settings, opened.repo_label, opened.target.branch,
                       [(str(r.verification.verdict), r.record.path) for r in results])
    slice_ = ContextSlice(text, level, budget, _header(text, level, budget, opened, info),
                          opened.target.to_dict(), info)
    builder = SliceBuilder(opened, results, graph_for(opened.index))
    # A query of names only is answered by their definitions: code that merely shares a word
    # with them (``order`` of ``cancel_order``) is no evidence of them.
    asked = AskedNames.of(text)
    evidence = implementation_first([r for r in results if r.verification.verdict in
                                     EVIDENCE_VERDICTS and matched(r)
                                     and (not asked.names or asked.answered_by(r))], asked)
    if not evidence:
        slice_.missing.append(_no_evidence_line(opened, results, text if asked.names else ""))
        fit(slice_, builder.reference_sections())
        return slice_
    own = LEVEL_BUILDERS[level](builder, evidence[0])
    matches = builder.candidate_sections(own, evidence[1:])
    nearest = far_from_the_question(candidates)
    if nearest is not None:
        slice_.missing.append(
            f"{MISSING} no current code clearly matches the query (the nearest is "
            f"{nearest:.2f} similar); the code below is that nearest, low confidence: cite it "
            "only if it holds the answer")
        _lowered(own + matches)
    file_kinds = {r.record.path: r.record.file_kind for r in results}
    file_kinds.update({n.path: n.file_kind for n in builder.graph.nodes.values()})
    fit(slice_, packing_order(own, matches, file_kinds) + builder.reference_sections())
    return slice_

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

When the best evidence does not fit the budget in any form, the slice is built around the
next that does: the results inside its lines first (a too-long class gives way to its method
that matched), then the next results; the cut ones are ``[LEFT OUT]`` lines. A slice none of
whose evidence fits says so on its first ``[LEFT OUT]`` line.

Budget: ``estimate_tokens`` counts one token per 3 ASCII characters (code runs 3-4 characters
per token under BPE tokenizers; erring low keeps a slice inside the budget) plus one per
non-ASCII character. The rendered text never exceeds the budget by that estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from freshmark.adapters.lexical.registry import lexical_engine
from freshmark.adapters.store.chroma import Store
from freshmark.core.config import Config, load_config
from freshmark.core.fusion import Candidate
from freshmark.core.kinds import is_secondary
from freshmark.core.lag import lag_phrase
from freshmark.core.ports import Embedder
from freshmark.core.request import DEFAULT_KINDS, LEVELS, ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.verdicts import CODE_TODAY_VERDICTS, Verdict, short
from freshmark.services.context.asked import AskedNames, implementation_first
from freshmark.services.context.graphs import graph_for
from freshmark.services.context.levels import LEVEL_BUILDERS
from freshmark.services.context.section import (
    Section,
    estimate_tokens,
    shown_caller_pointer,
    shows,
)
from freshmark.services.context.slices import SliceBuilder
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
# Results tried as the slice's evidence, in turn, when the ones before do not fit the budget.
MAX_PRIMARIES = 4
# A question in words (one the question model ranks) whose recalled code is all below this
# similarity is most likely not answered by the repository: of 120 held-out questions asked
# of their own repository and the same 120 asked of a repository of another domain
# (bench/RESULTS.md), no recalled chunk reached it for 2 of the first and 78 of the second.
CLEAR_SIMILARITY = 0.30
# A result is evidence only if the query matched it: lexically (BM25 above 0) or by a cosine
# similarity of at least this. Below both it is merely the nearest neighbour of an
# unrelated query, and the honest answer is [MISSING].
MIN_VECTOR_SIMILARITY = 0.35
_EVIDENCE_ROLES = frozenset({"evidence", "module"})
_SKIPPABLE_ROLES = frozenset({"imports", "type", "related", "caller", "candidate", "match"})
# Graph neighbours: worth less than the search's own strong matches, so packed after them.
_NEIGHBOUR_ROLES = frozenset({"related", "caller"})
# The modules the best file imports (L2): the question's other matches come first, so a
# budget is not spent on imported utilities while a file the question is about is left out.
_AFTER_MATCHES_ROLES = frozenset({"dependency"})
_WHOLE_FILE_ROLES = frozenset({"module", "dependency"})
_GROUP_ORDER = {"missing": 0, "imports": 1, "type": 2, "evidence": 3, "module": 3,
                "match": 4, "dependency": 4, "call_chain": 5, "related": 5, "caller": 6,
                "candidate": 7, "reference": 8}


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
           f"{section.symbol} | {section.standing} — {why}"


def fit(slice_: ContextSlice, candidates: list[Section]) -> None:
    """Add ``candidates`` in priority order while the rendered slice stays within the budget.

    A section whose lines another section already shows is skipped. A section that does
    not fit is tried as its fallbacks (a smaller form of the same
    material); whatever is cut is named on a ``[LEFT OUT]`` line, or counted on one when its
    line does not fit either (``_count_the_unnamed``). Sections may use the
    budget less a reserve for those lines (at most a fifth of it), so the cuts are named too;
    only the first section (the best evidence) may take the reserve when nothing else fits.
    What the reserve was not needed for is handed back at the end.
    """
    budget = slice_.budget_tokens
    reserve = min(budget // 5, sum(
        estimate_tokens(_left_out_line(c, left_out_reason(c, None, budget)))
        for c in candidates[1:]))
    # where a section would stand, it, its line, and the smaller form of it shown (or None)
    cut: list[tuple[int, Section, str, Section | None]] = []
    unnamed = 0
    for position, section in enumerate(candidates):
        if _already_shown(slice_, section):
            if (pointer := shown_caller_pointer(slice_.sections, section)) is not None:
                _first_fitting(slice_, pointer, budget)
            continue
        chosen = _first_fitting(slice_, section, budget - reserve)
        if chosen is None and position == 0:  # the best evidence may use the reserve too
            chosen = _first_fitting(slice_, section, budget)
        if chosen is not None and chosen.role in _WHOLE_FILE_ROLES:
            _drop_what_it_shows(slice_, chosen)
        if chosen is section:
            continue
        line = _left_out_line(section, left_out_reason(section, chosen, budget))
        # The same definition reached twice (two of its parts; as a match and as a caller).
        if any(held.split(" | ")[:2] == line.split(" | ")[:2] for held in slice_.left_out):
            continue
        slice_.left_out.append(line)
        if slice_.used_tokens > budget:
            slice_.left_out.pop()
            unnamed += 1
        else:
            cut.append((len(slice_.sections), section, line, chosen))
    while slice_.used_tokens > budget and slice_.left_out:
        slice_.left_out.pop()
        unnamed += 1
    _hand_back_the_reserve(slice_, cut)
    _count_the_unnamed(slice_, unnamed)
    # Only now is it known what the slice shows; a note naming fewer types is shorter.
    for section in slice_.sections:
        section.name_only_not_shown(
            lambda path, symbol, start, end: shows(slice_.sections, path, symbol, start, end))


def _count_the_unnamed(slice_: ContextSlice, unnamed: int) -> None:
    """One line for the cuts whose own ``[LEFT OUT]`` line did not fit, so a slice never
    hides that something was cut; named lines give way to it, last first."""
    while unnamed:
        many = unnamed > 1
        slice_.left_out.append(f"{LEFT_OUT} {unnamed} more section{'s' * many} that did not "
                               f"fit {'are' if many else 'is'} not named here: ask with a "
                               "larger budget")
        if slice_.used_tokens <= slice_.budget_tokens:
            return
        slice_.left_out.pop()
        if not slice_.left_out:
            return
        slice_.left_out.pop()
        unnamed += 1


def _hand_back_the_reserve(slice_: ContextSlice,
                           cut: list[tuple[int, Section, str, Section | None]]) -> None:
    """The reserve kept for ``[LEFT OUT]`` lines that fewer lines needed: a section cut, or
    shown only in a smaller form (a pointer, a signature), that fits in what is left of the
    budget now takes its place (or a larger fallback of it), in priority order, and its line
    goes or says what is shown."""
    budget, added = slice_.budget_tokens, 0
    for where, section, line, shown in cut:
        if line not in slice_.left_out:
            continue
        if shown is not None:
            where = next(i for i, s in enumerate(slice_.sections) if s is shown)
            slice_.sections.pop(where)
        elif _already_shown(slice_, section):
            continue
        else:
            where += added
        at = slice_.left_out.index(line)
        slice_.left_out.pop(at)
        option = _largest_fitting(slice_, section, where, budget)
        if option is None or option is shown:  # no larger form fits: as it was
            if option is None and shown is not None:
                slice_.sections.insert(where, shown)
            slice_.left_out.insert(at, line)
            continue
        if option is not section:
            slice_.left_out.insert(at, _left_out_line(
                section, left_out_reason(section, option, budget)))
            if slice_.used_tokens > budget:  # a larger form whose cut cannot be named: as it was
                slice_.left_out[at] = line
                slice_.sections.pop(where)
                if shown is not None:
                    slice_.sections.insert(where, shown)
                continue
        added += shown is None


def _largest_fitting(slice_: ContextSlice, section: Section, where: int, budget: int
                     ) -> Section | None:
    """``section`` or the first of its fallbacks that fits at ``where``, left in the slice."""
    option: Section | None = section
    while option is not None:
        slice_.sections.insert(where, option)
        if slice_.used_tokens <= budget:
            return option
        slice_.sections.pop(where)
        option = option.fallback
    return None


def _drop_what_it_shows(slice_: ContextSlice, whole: Section) -> None:
    """The sections packed before a whole module (an imported one comes after the matches)
    whose lines it shows: they would be shown twice."""
    slice_.sections = [s for s in slice_.sections if s is whole or s.role not in
                       _SKIPPABLE_ROLES or not whole.covers(s.path, s.start_line, s.end_line)]


def _already_shown(slice_: ContextSlice, section: Section) -> bool:
    """A related symbol already in the slice: its definition, or its lines, shown (``shows``)."""
    if section.role not in _SKIPPABLE_ROLES:
        return False
    return shows(slice_.sections, section.path, section.symbol, section.start_line,
                 section.end_line)


def left_out_reason(section: Section, chosen: Section | None, budget: int) -> str:
    """Why a section is cut, in words that say it exists: verified code (ask for it), or
    history (deleted code: reference only, never something to ask for as evidence)."""
    size = estimate_tokens(section.stands_for or section.render())
    needs = f"needs ~{size} of the {budget}-token budget"
    if section.role == "reference":
        return f"history, reference only (not in today's code); {needs}"
    # A pointer (no body) may have the anchor of its code, or a part's: it shows no line.
    shown = "not shown" if chosen is None else "shown by its signature only" \
        if chosen.signature_lines is not None else \
        f"pointed at only ({chosen.anchor}), none of its lines shown" if not chosen.body else \
        "shown without the lines around it" if chosen.anchor == section.anchor else \
        f"shown only as {chosen.anchor}"
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


def _no_evidence_line(opened: OpenedBranch, history: list[VerifiedResult],
                      names: str = "") -> str:
    """The one [MISSING] line: it names what is needed (``names``: the query, when it is only
    names), never deleted code (the deleted code that matches, ``history``, if any, follows
    as reference-only sections, or [LEFT OUT] lines)."""
    found = "; only deleted code matches it" if history else ""
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
    attach_drift(opened.repo, opened.target.head, results, opened.verifier.file_move)
    info = index_info(opened.index)
    if count:
        count_verdicts(settings, opened.repo_label, opened.target.branch,
                       [(str(r.verification.verdict), r.record.path) for r in results])
    slice_ = ContextSlice(text, level, budget, _header(text, level, budget, opened, info),
                          opened.target.to_dict(), info)
    # A query of names only is answered by their definitions: code that merely shares a word
    # with them (``order`` of ``cancel_order``) is no evidence of them.
    asked = AskedNames.of(text, opened.verifier.current_text)
    answers = [r for r in results if matched(r) and (not asked.names or asked.answered_by(r))]
    evidence = implementation_first([r for r in answers if r.verification.verdict in
                                     CODE_TODAY_VERDICTS], asked)
    history = [r for r in answers if r.verification.verdict is Verdict.HISTORICAL]
    builder = SliceBuilder(opened, results, graph_for(opened.index), evidence, budget)
    if not evidence:
        slice_.missing.append(_no_evidence_line(opened, history, text if asked.names else ""))
        fit(slice_, builder.reference_sections(history))
        return slice_
    nearest = far_from_the_question(candidates)
    if nearest is not None:
        slice_.missing.append(
            f"{MISSING} no current code clearly matches the query (the nearest is "
            f"{nearest:.2f} similar); the code below is that nearest, low confidence: cite it "
            "only if it holds the answer")
    file_kinds = {r.record.path: r.record.file_kind for r in results}
    file_kinds.update({n.path: n.file_kind for n in builder.graph.nodes.values()})
    return _with_evidence(slice_, builder, evidence, history, far=nearest is not None,
                          file_kinds=file_kinds)


def _with_evidence(empty: ContextSlice, builder: SliceBuilder, evidence: list[VerifiedResult],
                   history: list[VerifiedResult], far: bool, file_kinds: dict[str, str]
                   ) -> ContextSlice:
    """The slice of the best evidence that fits: the first result's, else (its code over the
    budget in every form) the slice of its best-matching member among the results (a class's
    method), else of the next result, each cut one named on a ``[LEFT OUT]`` line. When none
    fits, the first result's slice, whose first line says that it holds no evidence."""
    cut: list[str] = []
    tried: list[VerifiedResult] = []
    first: ContextSlice | None = None
    for primary in _fallback_order(evidence)[:MAX_PRIMARIES]:
        slice_ = replace(empty, sections=[], missing=list(empty.missing), left_out=list(cut))
        own = LEVEL_BUILDERS[slice_.level](builder, primary)
        matches = builder.candidate_sections(own, [r for r in evidence
                                                   if r is not primary and r not in tried])
        if far:
            _lowered(own + matches)
        fit(slice_, packing_order(own, matches, file_kinds) +
            builder.reference_sections(history))
        if any(s.role in _EVIDENCE_ROLES for s in slice_.sections) or not own or \
                own[0].role not in _EVIDENCE_ROLES:
            return slice_
        first = first or slice_
        tried.append(primary)
        cut.append(_left_out_line(own[0], left_out_reason(own[0], None, slice_.budget_tokens)))
    assert first is not None
    _say_no_evidence_fits(first)
    return first


def _fallback_order(evidence: list[VerifiedResult]) -> list[VerifiedResult]:
    """The results in the order they become the slice's evidence when the ones before do not
    fit: the best first, then the results inside its lines (its members), then the rest."""
    best = evidence[0]
    path, start, end = best.lines_today
    inside = [r for r in evidence[1:] if r is not best and r.lines_today[0] == path
              and start <= r.lines_today[1] and r.lines_today[2] <= end]
    return [best, *inside, *(r for r in evidence[1:] if r not in inside)]


def _say_no_evidence_fits(slice_: ContextSlice) -> None:
    """First among the [LEFT OUT] lines: the slice holds no evidence, the budget is too small
    for it; in fewer words if the budget is tight, for which the sections and lines packed
    last give way if need be (never past the budget: a header-sized one has no room)."""
    budget = slice_.budget_tokens
    short = f"{LEFT_OUT} no evidence here: it does not fit the {budget}-token budget"
    for line in (f"{LEFT_OUT} no evidence in this slice: the best matches, named below, do "
                 f"not fit the {budget}-token budget (ask for them with a larger one); the "
                 "sections above only surround them", short):
        slice_.left_out.insert(0, line)
        if slice_.used_tokens <= budget:
            return
        slice_.left_out.pop(0)
    slice_.left_out.insert(0, short)
    while slice_.used_tokens > budget and slice_.sections:
        slice_.sections.pop()
    while slice_.used_tokens > budget and slice_.left_out:
        slice_.left_out.pop()

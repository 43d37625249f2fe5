"""Hybrid search over one branch: BM25 + vectors, RRF, de-dup, rerank (SPEC §6).

Both channels read the same branch and the same filters: live chunks only, excluded file kinds
(generated, vendored, backup, fixture) left out unless asked for, tombstoned chunks only with
``include_history``. Lexical hits are re-read from the store by id, so every result's status
and stamp come from the one source of truth, never from the lexical engine.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from freshmark.adapters.lexical.tantivy_engine import TantivyEngine
from freshmark.core.chunking.model import NOT_ONE_DEFINITION
from freshmark.core.classify import search_kind
from freshmark.core.dedup import dedup, dedup_key
from freshmark.core.diversify import (
    agreed_prose,
    diversify,
    first_copies,
    named_lead,
    naming_first,
)
from freshmark.core.fusion import (
    DEFAULT_WEIGHTS,
    Candidate,
    FileCandidate,
    RerankWeights,
    fuse,
    group_files,
    rerank,
)
from freshmark.core.infile import (
    UNNAMED,
    best_files,
    in_file_order,
    in_file_score,
    ran_lead,
    report_names,
    second_pass,
)
from freshmark.core.kinds import is_secondary
from freshmark.core.messages import holding_message, message_windows
from freshmark.core.ports import BranchView, Embedder, LexicalChannel, LexicalEngine, LexicalHit
from freshmark.core.query import QueryPlan, plan_query
from freshmark.core.question_model import FITTED_EMBEDDER
from freshmark.core.request import SearchRequest
from freshmark.core.stamp import ChunkRecord
from freshmark.core.structure import lookup_symbols
from freshmark.core.tracebacks import frames_first, is_bare_traceback, pasted_frames
from freshmark.services.retrieval.channels import (
    fill_missing_scores,
    frame_channel,
    lexical_channel,
    name_channel,
    passes_filter,
    vector_channel,
)

# Each channel fetches this many candidates whatever k is asked for (seed 001 §3.2: room for
# the rerank). The pool, and so the ranking, does not depend on k: the top k for any k is the
# first k of one ranking (an agent asking for one result gets what would rank first of ten),
# which holds every candidate of the pool (40 to 80 chunks, fewer than k when k is larger).
# A pool of 2 × k gave a different rank 1 for k = 1 than for k = 10 on 3 of 8 short queries.
# 40 is what issue reports already used; 100 cost 3-5x the search time (Chroma's nearest-
# neighbour query and the re-read of lexical hits grow with it) for a CoSQA hybrid MRR of
# 0.8597 against 0.8558 (bench/RESULTS.md).
POOL = 40
# A file answer ranks files by their best chunks and needs a wider pool: 60 per channel, what
# a default file search (k = 10) ranked before the pool was fixed (at 40, the file at fault for
# one of 12 issue reports fell from rank 1 to 2).
FILE_ANSWER_POOL = 60
# Files whose best chunk joins the candidates from the whole-file BM25 ranking.
FILE_POOL = 20
# A pasted message's BM25 ranking read this deep for the chunks holding it verbatim: its
# raiser is often a long function that short chunks sharing its words outrank (AutoMapper's
# "Missing type map configuration" was BM25 rank 45). Only the holders join the pool.
MESSAGE_POOL = 200
# Chunks one file may hold among a chunk answer's results before other files get their turn.
MAX_PER_FILE = 2
# An issue report's best file may hold this many: the file at fault is first for most reports,
# and the function its fix changes is more often its third chunk than the next file's first
# (function Acc@5 0.467 -> 0.520 on 75 held-out reports of five repositories and 0.568 -> 0.614
# on 44 more, none lower; one report fewer on the 32 of the tuning pair; bench/RESULTS.md).
REPORT_LEAD_FILE_CHUNKS = 3
# For a question (not an issue report) a chunk past that cap waits for this many chunks of other
# files, not for the end: its file is usually the right one (file R@1 0.83 on the everyday
# questions), and held to the end the file's third definition never showed in the top 10.
QUESTION_GIVE_WAY = 1
# ...and, when the question model scored them, it comes back at once before a chunk of another
# file scoring less than this share of its own: the cap makes room for comparable chunks, not
# for far weaker ones (more-itertools' ``chunked``, 0.92, had waited under chunks of 0.33, 0.05
# and 0.01). Symbol Acc@5 0.902 -> 0.910 on the tuning questions, 0.882 -> 0.891 held out,
# no repository lower (bench/RESULTS.md).
HELD_BACK_BELOW = 0.5
# Best chunks a file answer shows of each file.
CHUNKS_PER_FILE = 3


@dataclass
class SearchTimings:
    """Wall time of each stage of one search, in seconds.

    ``lexical_seconds`` includes the generation check (and any catch-up fetch) and the re-read
    of lexical hits; ``vector_seconds`` includes the similarity look-up of lexical-only hits.
    """

    embed_seconds: float = 0.0
    lexical_seconds: float = 0.0
    vector_seconds: float = 0.0
    fusion_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        return self.embed_seconds + self.lexical_seconds + self.vector_seconds + self.fusion_seconds

    def to_dict(self) -> dict[str, float]:
        return {name: round(value, 6) for name, value in asdict(self).items()}


def embed_plan(embedder: Embedder, plan: QueryPlan) -> np.ndarray:
    """The query vector: one embedding, or for a long query the weighted mean of its windows'
    embeddings (unit length), so the vector channel reads the whole report."""
    if len(plan.windows) == 1:
        return np.asarray(embedder.embed_query(plan.windows[0]), dtype=np.float32)
    rows = np.asarray(embedder.embed(plan.windows), dtype=np.float32)
    pooled = np.asarray(plan.window_weights, dtype=np.float32) @ rows
    return pooled / (float(np.linalg.norm(pooled)) or 1.0)


# Rerank weights with the other channel's evidence switched off: ``bm25`` and ``vectors``
# measure one channel alone (with the same kind preference, de-duplication and per-file cap).
_CHANNEL_WEIGHTS: dict[str, dict[str, Any]] = {
    "bm25": {"vector": 0.0, "vector_long": 0.0, "question_model": False},
    "vectors": {"rrf": 0.0, "bm25": 0.0, "symbol": 0.0, "path": 0.0, "file": 0.0, "hint": 0.0,
                "frame": 0.0, "question_model": False},
}


def _channel_weights(weights: RerankWeights, channels: str, embedder_id: str) -> RerankWeights:
    """``weights`` for ``channels``; the question model only over the embedder it was fitted
    on (its vector weights are fitted to that model's similarities)."""
    changes = dict(_CHANNEL_WEIGHTS.get(channels, {}))
    if embedder_id != FITTED_EMBEDDER:
        changes["question_model"] = False
    return replace(weights, **changes)


Hits = list[tuple[ChunkRecord, float]]


@dataclass
class _Ranking:
    """One search's ranking of a candidate pool: what it reads and where its time goes."""

    view: BranchView
    embedder: Embedder
    request: SearchRequest
    plan: QueryPlan
    lexical: LexicalEngine
    weights: RerankWeights
    timings: SearchTimings = field(default_factory=SearchTimings)
    vector: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    # The chunks a pasted traceback's frames ran, by id, with their frame's place (0: the
    # deepest).
    ran: dict[str, int] = field(default_factory=dict)

    def pool(self, n: int, whole_files: bool) -> list[Candidate]:
        """Every candidate both channels found (``n`` each, plus with ``whole_files`` the best
        chunk of the best whole files, and their file scores as a feature), fused,
        de-duplicated and reranked, best first."""
        channels = self.request.channels
        use_vectors = channels != "bm25"
        started = time.perf_counter()
        vector = embed_plan(self.embedder, self.plan) if use_vectors else \
            np.zeros(0, dtype=np.float32)
        self.vector = vector
        self.timings.embed_seconds = time.perf_counter() - started

        started = time.perf_counter()
        lexical = self.lexical.channel(self.view)
        refresh_seconds = time.perf_counter() - started

        started = time.perf_counter()
        vector_hits = self._vector_hits(lexical, vector, n) if use_vectors else []
        self.timings.vector_seconds = time.perf_counter() - started

        started = time.perf_counter()
        # A look-up by name also reads the definitions of that exact name (hybrid only: the
        # one-channel systems measure their channel alone).
        names = names_looked_up(self.plan)
        named_hits = name_channel(self.view, names, self.request.include_history,
                                  self.request.kinds) if channels == "hybrid" else []
        if channels == "hybrid":  # a pasted traceback's frames name definitions too
            named_ids = {r.id for r, _ in named_hits}
            named_hits += [(r, 1.0) for r, _ in self._frame_hits() if r.id not in named_ids]
        lexical_hits, whole_file_hits, bm25_of, file_scores = \
            self._lexical_hits(lexical, [*vector_hits, *named_hits], n, whole_files)
        held = {r.id: r for r, _ in [*vector_hits, *lexical_hits, *whole_file_hits, *named_hits]}
        message_hits = self._message_hits(lexical, held) if channels == "hybrid" else []
        bm25_of.update({r.id: score for r, score in message_hits})
        self.timings.lexical_seconds = refresh_seconds + time.perf_counter() - started

        started = time.perf_counter()
        records = {**held, **{r.id: r for r, _ in message_hits}}
        rankings = [[(r.id, s) for r, s in lexical_hits], [(r.id, s) for r, s in vector_hits]]
        if message_hits:
            rankings.append([(r.id, s) for r, s in message_hits])
        if whole_file_hits:
            rankings.append([(r.id, file_scores.get(r.path, 0.0)) for r, _ in whole_file_hits])
        if named_hits:
            rankings.append([(r.id, s) for r, s in named_hits])
        candidates = dedup(fuse(records, *rankings), names=names)
        fill_started = time.perf_counter()
        if use_vectors:
            fill_missing_scores(self.view, vector, candidates, bm25_of)
        else:
            for candidate in candidates:
                candidate.bm25 = bm25_of.get(candidate.record.id, candidate.bm25 or 0.0)
        fill_seconds = time.perf_counter() - fill_started
        embedder_id = self.embedder.id if use_vectors else ""  # BM25 alone needs no model
        ranked = _pasted_first(rerank(candidates, self.plan,
                                      _channel_weights(self.weights, channels, embedder_id),
                                      file_scores=file_scores if channels != "vectors" else {}),
                               self.plan, self.ran)
        self.timings.vector_seconds += fill_seconds
        self.timings.fusion_seconds = time.perf_counter() - started - fill_seconds
        return ranked

    def second_pass(self, ranked: list[Candidate]) -> list[Candidate]:
        """``ranked`` with the definitions the report calls or shows a frame of first in
        their file, for the best files (``infile.second_pass``); definitions of those files
        that the channels missed join, the most similar to the report first."""
        started = time.perf_counter()
        # The frames of a traceback pasted alone were matched to their definitions by their
        # lines too (``ran``): the file's other definitions of a frame's function (each
        # class's ``__init__``) did not run.
        names = report_names(self.plan.text, [] if self.ran else self.plan.frames)
        files = best_files([c.record.path for c in ranked])
        held = {dedup_key(c.record) for c in ranked}
        request = self.request
        ids = [r.id for r in self.view.records_for_paths(files)
               if dedup_key(r) not in held and names.names(r.path, r.symbol, r.kind)]
        records = [r for r in (self.view.get(ids=ids, include_text=True) if ids else [])
                   if passes_filter(r, request.include_history, request.kinds)]
        joining = [Candidate(record=r, kind=search_kind(r.path, r.file_kind),
                             features={"named_in_file": 1.0}) for r in records]
        if joining and self.vector.size:
            fill_missing_scores(self.view, self.vector, joining, {})
        joining.sort(key=lambda c: -(c.vector_sim or 0.0))
        slot_scores = [c.score for c in ranked]

        def lead(c: Candidate) -> float:
            place = self.ran.get(c.record.id)
            return ran_lead(place) if place is not None else \
                names.lead(c.record.path, c.record.symbol, c.record.kind)

        def score_in_file(c: Candidate) -> float:
            return in_file_score({**c.features, "named": float(lead(c) < UNNAMED),
                                  "container": float(c.record.kind in NOT_ONE_DEFINITION)})

        ranked = in_file_order(ranked, files, lambda c: c.record.path, score_in_file)
        out = second_pass(ranked, dedup(joining), files, lambda c: c.record.path,
                          lead)
        # A chunk takes the score of the place it fills, so scores fall down the ranking.
        floor = slot_scores[-1] if slot_scores else 0.0
        for index, candidate in enumerate(out):
            candidate.score = slot_scores[index] if index < len(slot_scores) else \
                min(candidate.score, floor)
        self.timings.fusion_seconds += time.perf_counter() - started
        return out

    def _vector_hits(self, lexical: LexicalChannel, vector: np.ndarray, n: int) -> Hits:
        request = self.request
        share = lexical.passing_share(request.include_history, False, request.kinds)
        return vector_channel(self.view, vector, n, request.include_history, request.kinds,
                              share)

    def _frame_hits(self) -> list[tuple[ChunkRecord, int]]:
        """The chunks a pasted traceback's frames ran (``channels.frame_channel``), kept in
        ``ran`` with their frames' places."""
        frames = pasted_frames(self.plan.text) if _pasted(self.plan) else []
        hits = frame_channel(self.view, frames, self.request.include_history,
                             self.request.kinds)
        self.ran = {record.id: place for record, place in hits}
        return hits

    def _message_hits(self, lexical: LexicalChannel, held: dict[str, ChunkRecord]) -> Hits:
        """The chunks past the pool holding a pasted message verbatim (``MESSAGE_POOL``)."""
        windows = _message_windows(self.plan)
        if not windows:
            return []
        request = self.request
        hits, _ = lexical.search(self.plan.terms, MESSAGE_POOL,
                                 include_history=request.include_history, include_excluded=True,
                                 score_ids=[], kinds=request.kinds, weights=self.plan.weights)
        deeper = lexical_channel(self.view, lexical, [h for h in hits if h.id not in held],
                                 held, request.include_history, request.kinds)
        holds = holding_message([record.text for record, _ in deeper], windows)
        return [hit for hit, holding in zip(deeper, holds, strict=True) if holding]

    def _lexical_hits(
        self, lexical: LexicalChannel, other_hits: Hits, n: int, whole_files: bool,
    ) -> tuple[Hits, Hits, dict[str, float], dict[str, float]]:
        """Chunk hits, the best chunks of the best whole files, every candidate's BM25 (the
        other channels' hits too) and the file scores; with the vector channel alone only the
        BM25 of its hits."""
        request, plan = self.request, self.plan
        use_lexical = request.channels != "vectors"
        known = {record.id: record for record, _ in other_hits}
        file_scores: dict[str, float] = {}
        file_hits: list[LexicalHit] = []
        history, kinds, score_ids = request.include_history, request.kinds, list(known)
        if use_lexical and whole_files:
            hits, bm25_of, files = lexical.search_with_files(
                plan.terms, n, FILE_POOL, include_history=history, include_excluded=True,
                score_ids=score_ids, kinds=kinds, weights=plan.weights)
            file_scores, file_hits = files.scores, files.best_chunks
            for doc_id, score in files.best_chunk_scores.items():
                bm25_of.setdefault(doc_id, score)
        else:
            hits, bm25_of = lexical.search(
                plan.terms, n, include_history=history, include_excluded=True,
                score_ids=score_ids, kinds=kinds, weights=plan.weights)
        lexical_hits = lexical_channel(self.view, lexical, hits, known, history, kinds) \
            if use_lexical else []
        known.update({r.id: r for r, _ in lexical_hits})
        whole_file_hits = lexical_channel(self.view, lexical, file_hits, known, history, kinds)
        return lexical_hits, whole_file_hits, bm25_of, file_scores


def report_lead_cap(max_per_file: int) -> int:
    """Chunks an issue report's best file may hold in the chunk answer before other files get
    their turn (the benches that re-rank saved report pools take it from here too)."""
    return max(max_per_file, REPORT_LEAD_FILE_CHUNKS)


def names_looked_up(plan: QueryPlan) -> list[str]:
    """The symbols a query looks up by name (``structure.lookup_symbols``); none for an
    issue report."""
    return [] if plan.long else lookup_symbols(plan.text, plan.identifiers, plan.path_hints)


def looked_up_names(query: str) -> list[str]:
    """``names_looked_up`` of a query's plan."""
    return names_looked_up(plan_query(query))


def pasted_message_windows(query: str) -> list[str]:
    """The fixed words of a query read as a pasted message, as the ranking reads them
    (``messages.message_windows``); [] for any other query."""
    return _message_windows(plan_query(query))


def hybrid_search(
    view: BranchView, embedder: Embedder, request: SearchRequest, *, k: int | None = None,
    lexical: LexicalEngine | None = None, weights: RerankWeights = DEFAULT_WEIGHTS,
    max_per_file: int = MAX_PER_FILE,
) -> tuple[list[Candidate], SearchTimings]:
    """The ``k`` best chunks for the request (``k`` defaults to ``request.k``) and the time
    each stage took; for any ``k`` they are the first ``k`` of the same ranking.

    The ranking prefers source over tests over docs whatever ``request.kinds`` names.
    ``max_per_file``: chunks of one file among the results before other files get their turn
    (0: no cap; an issue report's best file ``REPORT_LEAD_FILE_CHUNKS``); past it, a
    question's file takes every other place (``QUESTION_GIVE_WAY``), an issue report's file
    waits for the end. ``lexical``: the lexical engine (by default tantivy
    indexes held in this process's memory only).
    """
    k = request.k if k is None else k
    plan = plan_query(request.query)
    ranking = _Ranking(view, embedder, request, plan, lexical or TantivyEngine(None), weights)
    # A question or a few names asks for a function: its own chunks rank it. An issue report
    # asks which code is at fault: evidence spread over a file counts.
    ranked = first_copies(ranking.pool(POOL, whole_files=plan.long))
    if plan.long:
        return diversify(ranking.second_pass(ranked), k, max_per_file,
                         lead_file_cap=report_lead_cap(max_per_file)), ranking.timings
    # The definitions a look-up names lead whatever their files; the rest take turns.
    lead = named_lead(ranked)
    if not lead:  # a look-up's definitions keep every first place
        ranked = agreed_prose(ranked)
    rest, places = ranked[lead:], max(k - lead, 0)
    looked = names_looked_up(plan)
    if not lead and looked:  # no definition of the name: its uses lead
        rest = naming_first(rest, looked)
    if ranked and ranked[0].probability:
        # Only a probability's ratio says how much weaker a chunk is; a formula's sum rests
        # on channel ranks, and ranks set apart chunks that are alike.
        turns = diversify(rest, places, max_per_file, give_way=QUESTION_GIVE_WAY,
                          held_back_below=HELD_BACK_BELOW)
    elif looked:
        # A look-up's chunk without the name's words (the vectors' alone) takes no turn
        # before a held chunk that has them: another file's unrelated method is not what
        # the per-file turns make room for.
        turns = diversify(rest, places, max_per_file, path_of=lambda c: c.record.path,
                          give_way=QUESTION_GIVE_WAY, held_back_below=1.0,
                          score_of=_lexical_evidence)
    else:
        turns = diversify(rest, places, max_per_file, give_way=QUESTION_GIVE_WAY)
    return ranked[:min(lead, k)] + turns, ranking.timings


def _lexical_evidence(candidate: Candidate) -> float:
    """1 for a chunk the lexical channel found, 0 for one the vectors alone did."""
    return 1.0 if candidate.features.get("bm25_norm", 0.0) > 0 else 0.0


def file_search(
    view: BranchView, embedder: Embedder, request: SearchRequest, *, k: int | None = None,
    lexical: LexicalEngine | None = None, weights: RerankWeights = DEFAULT_WEIGHTS,
    chunks_per_file: int = CHUNKS_PER_FILE,
) -> tuple[list[FileCandidate], SearchTimings]:
    """The ``k`` best files for the request, each with its best chunks (up to
    ``chunks_per_file``), from the candidates ``hybrid_search`` would rank with whole-file
    evidence: a file scores by its best chunk plus a little for its second best; for any ``k``
    they are the first ``k`` of the same ranking."""
    k = request.k if k is None else k
    plan = plan_query(request.query)
    # Files are ranked by the formula with whole-file evidence, whatever the query.
    ranking = _Ranking(view, embedder, request, plan, lexical or TantivyEngine(None),
                       replace(weights, question_model=False))
    ranked = ranking.pool(FILE_ANSWER_POOL, whole_files=True)
    return group_files(ranked, chunks_per_file)[:k], ranking.timings


def _message_windows(plan: QueryPlan) -> list[str]:
    return message_windows(plan.text) if _pasted(plan) else []


def _pasted(plan: QueryPlan) -> bool:
    """Whether the query was pasted from a program's output or its code (a message, a
    traceback alone) or is short: a report's prose says what is wrong, its frames only hint."""
    return not plan.long or is_bare_traceback(plan.text)


def _pasted_first(ranked: list[Candidate], plan: QueryPlan, ran: dict[str, int]
                  ) -> list[Candidate]:
    """What a pasted traceback or error message points at first (``tracebacks.frames_first``):
    the chunks its frames ran (``ran``), then those holding the message's words verbatim
    (``messages``), each taking the score of the place it fills."""
    windows = _message_windows(plan)
    if not windows and not ran:
        return ranked
    holds = holding_message([c.record.text for c in ranked], windows)
    secondary = [c.record.kind == "test" or is_secondary(c.record.path, c.record.file_kind)
                 for c in ranked]
    out = [ranked[i] for i in frames_first([ran.get(c.record.id) for c in ranked], holds,
                                           secondary)]
    for candidate, score in zip(out, [c.score for c in ranked], strict=True):
        candidate.score = score
    for candidate, hit in zip(ranked, holds, strict=True):
        if hit:
            candidate.features["holds_message"] = 1.0
        if candidate.record.id in ran:
            candidate.features["traceback_frame"] = 1.0
    return out

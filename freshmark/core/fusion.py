"""Merging the lexical and vector channels: RRF, de-duplication, a small linear rerank (SPEC §6).

Order of work (seed 001 §3.2): each channel returns a pool of ranked ids that does not depend
on k (40); reciprocal rank fusion (k = 60) merges them using ranks only, so the two score
scales never meet; candidates sharing (path, signature) collapse to the best one; a linear
rerank over explainable features orders the rest:

    score = w_rrf · rrf_norm + w_bm25 · bm25_norm + w_vector · (1 − code_share) · vector_norm
            + w_symbol · symbol_hit + w_path · path_hit − w_length · (1 − length_fit)
            + w_file · file_norm + w_hint · path_hint + w_frame · frame_hit
            + w_substance · substance                  (w_substance_long for a long query)
    score = score · kind_prior ^ w_kind      (a negative score is divided instead)

``rrf_norm`` is the RRF sum scaled so that rank 1 in both channels is 1.0; ``bm25_norm`` is the
BM25 score over the best among the candidates; ``vector_norm`` is the cosine similarity min-max
scaled over the candidates; ``symbol_hit`` is 1.0 when the query names the symbol and a
fraction when it covers part of its name; ``path_hit`` is the share of query terms found in the
path; ``length_fit`` is 1.0 for chunks of 3–150 lines and falls off outside. ``code_share`` is
the share of query words written as code (``tokenize.code_share``): the vector similarity counts
fully for a descriptive question and fades out for a query made of names, where exact lexical
evidence (BM25, the symbol name) is what matters (seed 001 §3.2: description-like questions
lean on vectors, well-named code on keywords). ``file_norm`` is the whole-file BM25 of the
chunk's file over the best file's (evidence spread over a file adds up); ``path_hint`` is 1.0
when the query names the file (a path, a traceback frame, a dotted module name);
``frame_hit`` is 1.0 for the chunk that the query's deepest traceback frame among the
candidates' files ran (that frame's file and function: where the reported error came from);
``substance`` is how much more body a definition has than the thinnest chunk of its file
among the candidates (``file_substance``; a chunk's own ``substance`` is the log of its lines,
full at ``SUBSTANCE_FULL_LINES``, 0.0 for outlines, module blocks and windows): inside a file
the question reaches in several places, the code that does the work has a body, while the
accessor, the one-line wrapper, the constructor and the outline that share the question's
words hand the work on. A chunk alone of its file among the candidates gets 0.0: length says
nothing about a lone function (a snippet corpus such as CoSQA, where short is normal); and every
chunk gets 0.0 when the query is nothing but a candidate's name (a look-up);
``kind_prior``
prefers implementation over tests over docs (``KIND_PRIOR``; a type stub counts half of its
kind, ``STUB_PRIOR``): it scales the score, so an
implementation chunk with half a test's evidence still ranks above the test, and a third of a
doc's above the doc. Every feature is in [0, 1] and kept on the candidate, so a caller can say
why a result ranks where it does.

A question that describes code (``question_model.applies``: four words or more, mostly
prose, no ``Class.method``, the embedder the model was fitted on) is scored by
``question_model.question_score`` over the same features instead of the formula; the rerank
also marks each candidate's ``outline``, ``block`` and ``file_shared`` (its file has other
candidates) for it.

After the rerank, ``diversify`` caps the chunks one file may place before other files get their
turn (for a question, a chunk past the cap waits for one chunk of another file, not for all of
them: past its cap a file takes at most every other place), and ``group_files`` turns the
ranking into files, each scored by its best chunk plus a little for its second best.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from freshmark.core.chunking.model import NOT_ONE_DEFINITION
from freshmark.core.classify import is_overload_stub, is_stub, search_kind
from freshmark.core.query import QueryPlan, deepest_frame, frame_match, path_hint_match
from freshmark.core.question_model import applies, pool_marks, question_score
from freshmark.core.ruby_names import ruby_class_method_asked
from freshmark.core.stamp import ChunkRecord
from freshmark.core.structure import (
    Unit,
    code_names,
    constant_alone,
    declaring_lines,
    definitions_first,
    look_up_order,
    looked_up,
    lookup_symbols,
    members_first,
    named_exactly,
    names_only,
    qualified_hit,
    text_definitions_first,
    without_declaration_word,
    workers_first,
)
from freshmark.core.tokenize import code_share as code_share_of
from freshmark.core.tokenize import iter_tokens, name_forms, name_parts

RRF_K = 60
# Chunk lengths (lines) that need no penalty; seed 001 §4.1 sizes functions at 20–150 lines,
# and short functions are normal code, so only the extremes are penalised.
FIT_MIN_LINES = 3
FIT_MAX_LINES = 150
# A definition of this many lines (or more) has full ``substance``; shorter ones grow with the
# log of their lines (3 lines: 0.30, 10: 0.62, 20: 0.81), so a body of a few statements counts
# for much more than a one-line accessor, and 40 lines no less than 120.
SUBSTANCE_FULL_LINES = 40
# How much each file kind is worth as an answer when nothing else tells them apart: the
# implementation first, then tests (they show usage), then configuration and prose.
KIND_PRIOR = {"source": 1.0, "test": 0.5, "config": 0.4, "doc": 0.35, "other": 0.35}
DEFAULT_KIND_PRIOR = 0.5  # kinds searched only when asked for rank like tests
# A type stub (``.pyi``, ``.d.ts``) declares what its implementation defines: it ranks like a
# test, after the code that does the work and its own name.
STUB_PRIOR = 0.5
# A file's second-best chunk adds this share of its score to the best one's: two strong chunks
# beat one, but a big file's many weak matches do not add up to a lead (summing them all
# favoured the largest modules, measured with bench/tune_rerank.py).
FILE_EXTRA_SHARE = 0.1


@dataclass(frozen=True)
class RerankWeights:
    """Weights of the linear rerank; each multiplies a feature in [0, 1].

    Chosen as round values from a coarse grid that had to do well on two different sets at once
    (CoSQA web queries over Python functions, and labelled queries over a multi-language
    repository; bench/bench_quality.py), not fitted to either. The vector similarity carries
    most weight for prose questions because its scale holds information that ranks drop (how
    much better the best match is); RRF, BM25 and the symbol name decide among close calls and
    take over for queries written as code.
    """

    rrf: float = 0.25
    bm25: float = 0.3
    vector: float = 2.0
    # The vector weight for a long query (an issue report): the model reads it in windows and
    # pools them, a blurrier signal than a question's one embedding.
    vector_long: float = 0.5
    symbol: float = 0.2
    path: float = 0.1
    length: float = 0.1
    file: float = 0.4
    hint: float = 0.3
    # The query writes the symbol with its owner (``Context.invoke``): that member, not every
    # ``invoke`` nor the ``Context`` outline (``structure.qualified_hit``).
    qualified: float = 0.3
    # The report's deepest traceback frame in the project ran this chunk. Over the 584
    # SWE-bench reports (7 repositories) that frame's function was one the fix changed in
    # 34 of 101 (Python's, IPython's and pytest's frames read); any shallower project
    # frame's in 26 of 462, too rarely to weigh.
    frame: float = 0.6
    # The definition has more body than its file's thinnest candidate (``file_substance``):
    # without it, the everyday questions of bench/bench_questions.py lost rank 1 to accessors,
    # constructors and outlines of the answer's own file. 0.5 raised symbol Acc@1 in four of
    # the five repositories and lowered it in none; CoSQA (one function per file) is untouched.
    substance: float = 0.5
    # The substance weight for a long query (an issue report): off. The function a fix
    # changes is as often a short helper as a long body; on the SWE-bench pools of seaborn and
    # xarray (32 reports) 0.5 cost file R@5 0.94 -> 0.88 and function Acc@5 0.66 -> 0.59.
    substance_long: float = 0.0
    kind: float = 1.0
    # A question (not an issue report) is scored by ``question_model`` instead of this formula;
    # off for the one-channel systems the benches compare and for file answers, which read
    # whole-file evidence the model does not.
    question_model: bool = True


DEFAULT_WEIGHTS = RerankWeights()


@dataclass
class Candidate:
    """One fused result with everything that placed it.

    Channel ranks are 1-based and None where that channel did not rank the chunk; after
    ``hybrid_search`` the scores ``bm25`` and ``vector_sim`` are set for every candidate (a
    BM25 of 0.0 means no query term occurs in it).
    """

    record: ChunkRecord
    score: float = 0.0
    rrf: float = 0.0
    bm25: float | None = None
    bm25_rank: int | None = None
    vector_sim: float | None = None
    vector_rank: int | None = None
    features: dict[str, float] = field(default_factory=dict)
    kind: str = ""
    # The score is the question model's probability that the chunk answers, not a formula's
    # sum: scores of two candidates may then be compared as a ratio.
    probability: bool = False

    def explain(self) -> dict[str, object]:
        """The numbers behind this result, for JSON output and debugging."""
        return {
            "score": round(self.score, 6),
            "rrf": round(self.rrf, 6),
            "bm25": None if self.bm25 is None else round(self.bm25, 4),
            "bm25_rank": self.bm25_rank,
            "vector_sim": None if self.vector_sim is None else round(self.vector_sim, 4),
            "vector_rank": self.vector_rank,
            **{k: round(v, 4) for k, v in self.features.items()},
        }


@dataclass
class FileCandidate:
    """One file in a file answer: its score and its best chunks (best first)."""

    path: str
    kind: str
    score: float
    chunks: list[Candidate]

    def explain(self) -> dict[str, object]:
        return {"score": round(self.score, 6), "chunks": len(self.chunks)}


def rrf_scores(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: sum over rankings of 1 / (k + rank), rank 1-based.

    An id at rank 1 in one list and rank 3 in another scores 1/61 + 1/63 ≈ 0.032266.
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


def symbol_hit(terms: set[str], symbol: str, whole_only: bool = False,
               named: frozenset[str] | None = None) -> float:
    """1.0 when the query names the symbol (any casing style; ``named``: the query's whole
    words, when the pieces of its compound words among ``terms`` name nothing outright), else
    half the share of its name pieces that the query mentions (0.0 with ``whole_only``)."""
    if name_forms(symbol) & (terms if named is None else named):
        return 1.0
    if whole_only:
        return 0.0
    parts = name_parts(symbol)
    return 0.5 * len(parts & terms) / len(parts) if parts else 0.0


def path_hit(terms: set[str], path: str) -> float:
    """Share of query terms (3+ characters) that appear among the path's tokens."""
    wanted = {t for t in terms if len(t) >= 3}
    if not wanted:
        return 0.0
    return len(wanted & set(iter_tokens(path))) / len(wanted)


def length_fit(start_line: int, end_line: int) -> float:
    """1.0 inside [FIT_MIN_LINES, FIT_MAX_LINES] lines, falling off proportionally outside."""
    lines = max(1, end_line - start_line + 1)
    if lines < FIT_MIN_LINES:
        return lines / FIT_MIN_LINES
    if lines > FIT_MAX_LINES:
        return FIT_MAX_LINES / lines
    return 1.0


def substance(chunk_kind: str, start_line: int, end_line: int) -> float:
    """How much body a definition has: ln(lines) / ln(SUBSTANCE_FULL_LINES), at most 1.0; 0.0
    for a chunk that is not one definition (a module block, a window, a class outline)."""
    # An outline's length is its members', not its own work.
    if chunk_kind in NOT_ONE_DEFINITION:
        return 0.0
    lines = max(1, end_line - start_line + 1)
    return min(1.0, math.log(lines) / math.log(SUBSTANCE_FULL_LINES))


def file_substance(paths: Sequence[str], own: Sequence[float]) -> list[float]:
    """Each chunk's own ``substance`` less the least among the chunks of its file (``paths``
    and ``own`` side by side, one entry per candidate): 0.0 for a chunk alone of its file, and
    for the thinnest of each file."""
    thinnest: dict[str, float] = {}
    for path, value in zip(paths, own, strict=True):
        thinnest[path] = min(value, thinnest.get(path, value))
    return [value - thinnest[path] for path, value in zip(paths, own, strict=True)]


def _scale(values: dict[int, float], min_max: bool) -> dict[int, float]:
    if not values:
        return {}
    top = max(values.values())
    low = min(values.values()) if min_max else 0.0
    span = top - low
    if span <= 0:
        return {i: 1.0 if top > 0 else 0.0 for i in values}
    return {i: (v - low) / span for i, v in values.items()}


def kind_prior(kind: str, path: str = "", text: str = "") -> float:
    prior = KIND_PRIOR.get(kind, DEFAULT_KIND_PRIOR)
    return prior * STUB_PRIOR if is_stub(path) or is_overload_stub(text) else prior


def rerank(
    candidates: Sequence[Candidate],
    query: QueryPlan | Iterable[str],
    weights: RerankWeights = DEFAULT_WEIGHTS,
    k: int = RRF_K,
    code_share: float | None = None,
    file_scores: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """Score every candidate (sets ``score``, ``kind`` and ``features``) and sort best first.

    ``query`` is a ``QueryPlan`` or plain query terms. ``code_share`` (0..1, see
    ``tokenize.code_share``; the plan's by default) fades the vector similarity out for queries
    written as code. ``file_scores``: whole-file BM25 by path. Ties keep the incoming order,
    which is the RRF order.
    """
    plan = query if isinstance(query, QueryPlan) else None
    terms = set(query.terms if isinstance(query, QueryPlan) else query)
    # A long report mentions common method names in passing (copy, merge, plot); there only a
    # name written as code counts as naming a symbol.
    long = plan is not None and plan.long
    symbol_terms = {form for word in plan.identifiers for form in name_forms(word)} \
        if long and plan is not None else terms
    hints = plan.path_hints if plan else []
    failed = deepest_frame(plan.frames, {c.record.path for c in candidates}) \
        if plan and plan.frames else None
    if code_share is None:
        code_share = plan.code_share if plan else code_share_of(" ".join(terms))
    bm25 = _scale({i: c.bm25 or 0.0 for i, c in enumerate(candidates)}, min_max=False)
    sims = {i: c.vector_sim for i, c in enumerate(candidates) if c.vector_sim is not None}
    vector = _scale(sims, min_max=True)
    files = file_scores or {}
    best_file = max((files.get(c.record.path, 0.0) for c in candidates), default=0.0) or 1.0
    best_rrf = 2.0 / (k + 1)
    # A query that is nothing but a symbol's name (``HTTPAdapter``) asks for that symbol: the
    # body of its neighbours says nothing about it.
    lookup = any(names_only(terms, c.record.symbol) for c in candidates)
    body = [0.0] * len(candidates) if lookup else file_substance(
        [c.record.path for c in candidates],
        [substance(c.record.kind, c.record.start_line, c.record.end_line) for c in candidates])
    marks = pool_marks([c.record.kind for c in candidates], [c.record.path for c in candidates])
    qualified = [qualified_hit(c.record.symbol, hints) for c in candidates]
    by_model = weights.question_model and not long and applies(
        len(plan.text.split()) if plan else len(terms), code_share, any(qualified))
    for i, candidate in enumerate(candidates):
        record = candidate.record
        candidate.kind = search_kind(record.path, record.file_kind)
        features = {
            "rrf_norm": candidate.rrf / best_rrf,
            "bm25_norm": bm25.get(i, 0.0),
            "vector_norm": vector.get(i, 0.0),
            "symbol_hit": symbol_hit(symbol_terms, record.symbol, whole_only=long,
                                     named=plan.whole_words if plan and not long else None),
            "path_hit": path_hit(terms, record.path),
            "length_fit": length_fit(record.start_line, record.end_line),
            "substance": body[i],
            "file_norm": files.get(record.path, 0.0) / best_file,
            "path_hint": path_hint_match(record.path, hints),
            "frame_hit": frame_match(record.path, record.symbol, failed),
            "qualified_hit": qualified[i],
            "kind_prior": kind_prior(candidate.kind, record.path, record.text),
            "code_share": code_share,
            "long_query": 1.0 if long else 0.0,
            **marks[i],
        }
        candidate.features = features
        candidate.score = question_score(features) if by_model else \
            combined_score(features, weights)
        candidate.probability = by_model
    # Names written as code, or a one-word query's word (``has``): definitions so named beat
    # the chunks that only use them.
    bare = without_declaration_word(plan.text) if plan else ""
    only_names = (looked_up(bare, plan.identifiers, hints) or
                  constant_alone(bare)) if plan else []
    named = (only_names or code_names(plan.identifiers, hints) or
             lookup_symbols(plan.text, [], [])) if plan else []
    ranked = sorted(candidates, key=lambda c: -c.score)
    looked = lookup_symbols(plan.text, plan.identifiers, hints) if plan and not long else []
    declaring = declaring_lines([c.record.symbol for c in ranked],
                                [c.record.text for c in ranked], named, hints,
                                [c.record.kind for c in ranked]) \
        if only_names else None
    return structured(ranked, terms, named, declaring, looked, question=by_model,
                      on_class=ruby_class_method_asked(plan.text) if plan else None)


def structured(ranked: Sequence[Candidate], terms: Iterable[str],
               named: Iterable[str] = (), declaring: Sequence[bool] | None = None,
               looked: Iterable[str] = (), question: bool = False,
               on_class: bool | None = None) -> list[Candidate]:
    """``ranked`` reordered by structure (``structure``): an outline or a module block ranked
    above its members swapped with its best member (``members_first``); a definition the query
    names as code (``named``) above the chunks that only use it (``definitions_first``); for
    a ``question`` in words, a worker above its thin caller (``workers_first``); for a name no
    chunk is named by, the chunks whose lines declare it (``declaring``), and for a look-up
    (``looked``) the definitions so named, at the top (``named_exactly``,
    ``text_definitions_first``; a Ruby class method first where ``on_class``, its instance
    method where not). Moved chunks are marked in their features."""
    units = [Unit(c.record.path, c.record.symbol, c.record.kind, c.score,
                  tuple(c.record.references), c.record.end_line - c.record.start_line + 1)
             for c in ranked]
    order = definitions_first(units, members_first(units, terms, declaring=declaring), named)
    order = workers_first(units, order) if question else order
    leading = named_exactly(units, looked, declaring)
    if leading is not None:
        later = look_up_order([c.record.symbol for c in ranked], [c.record.text for c in ranked],
                              [c.record.file_kind for c in ranked], looked,
                              [c.record.kind for c in ranked], on_class)
        order = text_definitions_first(order, leading, later)
    out: list[Candidate] = []
    for placement in order:
        candidate = ranked[placement.index]
        candidate.score = placement.score
        if placement.role:
            candidate.features[_ROLE_FEATURES[placement.role]] = 1.0
        out.append(candidate)
    return out


_ROLE_FEATURES = {"answers": "answers_container", "context": "member_answers",
                  "named": "named_definition"}


def combined_score(features: Mapping[str, float], weights: RerankWeights) -> float:
    """The rerank score of one candidate's features (the module docstring's formula); also
    what ``bench/tune_rerank.py`` re-scores saved candidates with."""
    long = features["long_query"]
    vector_weight = weights.vector_long if long else weights.vector
    substance_weight = weights.substance_long if long else weights.substance
    evidence = (
        weights.rrf * features["rrf_norm"]
        + weights.bm25 * features["bm25_norm"]
        + vector_weight * (1.0 - features["code_share"]) * features["vector_norm"]
        + weights.symbol * features["symbol_hit"]
        + weights.path * features["path_hit"]
        - weights.length * (1.0 - features["length_fit"])
        + weights.file * features["file_norm"]
        + weights.hint * features["path_hint"]
        + weights.frame * features.get("frame_hit", 0.0)  # pools saved before it lack it
        + weights.qualified * features.get("qualified_hit", 0.0)
        + substance_weight * features.get("substance", 0.0)  # pools saved before it lack it
    )
    prior = features["kind_prior"] ** weights.kind
    return evidence * prior if evidence >= 0 else evidence / prior


def group_files(ranked: Sequence[Candidate], chunks_per_file: int) -> list[FileCandidate]:
    """Files in order of their best chunk's score plus ``FILE_EXTRA_SHARE`` of their second
    best's (when positive); each keeps its best ``chunks_per_file`` chunks."""
    by_path: dict[str, list[Candidate]] = {}
    for candidate in ranked:
        by_path.setdefault(candidate.record.path, []).append(candidate)
    files = []
    for path, chunks in by_path.items():
        extra = max(chunks[1].score, 0.0) if len(chunks) > 1 else 0.0
        score = chunks[0].score + FILE_EXTRA_SHARE * extra
        files.append(FileCandidate(path, chunks[0].kind, score, chunks[:chunks_per_file]))
    return sorted(files, key=lambda f: -f.score)


def fuse(
    records: dict[str, ChunkRecord],
    bm25_ranking: Sequence[tuple[str, float]],
    vector_ranking: Sequence[tuple[str, float]],
    *more_rankings: Sequence[tuple[str, float]],
    k: int = RRF_K,
) -> list[Candidate]:
    """Candidates from rankings of (id, score) — BM25 scores, cosine similarities, and any
    more (the best chunks of the best whole files) — in RRF order (ties by id), each carrying
    its channel ranks and scores. Ids missing from ``records`` (no longer in the store) are
    skipped."""
    rankings = [bm25_ranking, vector_ranking, *more_rankings]
    fused = rrf_scores([[i for i, _ in ranking] for ranking in rankings], k)
    bm25_at = {doc_id: (rank, s) for rank, (doc_id, s) in enumerate(bm25_ranking, start=1)}
    vector_at = {doc_id: (rank, s) for rank, (doc_id, s) in enumerate(vector_ranking, start=1)}
    out: list[Candidate] = []
    for doc_id in sorted(fused, key=lambda i: (-fused[i], i)):
        if doc_id not in records:
            continue
        lexical, vector = bm25_at.get(doc_id), vector_at.get(doc_id)
        out.append(
            Candidate(
                record=records[doc_id],
                rrf=fused[doc_id],
                bm25=lexical[1] if lexical else None,
                bm25_rank=lexical[0] if lexical else None,
                vector_sim=vector[1] if vector else None,
                vector_rank=vector[0] if vector else None,
            )
        )
    return out

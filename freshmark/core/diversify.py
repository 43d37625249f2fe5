"""Per-file turns in a ranking: no file takes every place while other files wait (the search's
``diversify``; the benches re-rank saved pools of plain dicts with it too), one copy of a
text (``first_copies``), and a place for prose both channels rank first (``agreed_prose``).

Written by hand: an interleaving rule over a ranked list, no library does it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from freshmark.core.chunking.model import FUNCTION_KINDS
from freshmark.core.declarations import defined_in_text
from freshmark.core.fusion import Candidate
from freshmark.core.stamp import LIVE

T = TypeVar("T")

# A doc or config chunk both channels rank first stands no lower than this place (1-based)
# of a short query's ranking. The kind prior says a question usually asks for code, and the
# question model, fitted on questions a definition answers, costs a doc about 8 logits: no
# evidence made up for it (javapoet's RELEASING.md, BM25 and vector rank 1 for "how do I
# release a new version", was 22nd; pom.xml 13th for the Java version it is compiled with).
# Third, not first: a chunk of code the model puts first or second keeps its place.
AGREED_PROSE_PLACE = 3
_PROSE_KINDS = frozenset({"doc", "config"})


def _candidate_path(candidate: Candidate) -> str:
    return candidate.record.path


def _candidate_score(candidate: Candidate) -> float:
    return candidate.score


@overload
def diversify(ranked: Sequence[Candidate], k: int, max_per_file: int, *,
              give_way: int | None = None, lead_file_cap: int = 0,
              held_back_below: float = 0.0) -> list[Candidate]: ...


@overload
def diversify(ranked: Sequence[T], k: int, max_per_file: int,
              path_of: Callable[[T], str], *, give_way: int | None = None,
              lead_file_cap: int = 0, held_back_below: float = 0.0,
              score_of: Callable[[T], float] | None = None) -> list[T]: ...


def diversify(ranked: Sequence[T], k: int, max_per_file: int,
              path_of: Callable[[Any], str] = _candidate_path, *,
              give_way: int | None = None, lead_file_cap: int = 0,
              held_back_below: float = 0.0,
              score_of: Callable[[Any], float] | None = None) -> list[T]:
    """The first ``k`` of ``ranked`` with at most ``max_per_file`` chunks of one file placed
    before other files get their turn (0: no cap); the file of the first chunk may place
    ``lead_file_cap`` instead (0: the same cap). Chunks past the cap are held back, in their
    order: until the end (``give_way`` None), or each until ``give_way`` chunks within the cap
    have been placed since it or the held chunk before it came back, so past its cap a file
    takes at most every other place (``give_way`` 1). A held chunk also comes back before a
    chunk that scores less than ``held_back_below`` times its own score (0: never): the cap
    makes room for other files' comparable chunks, not for far weaker ones. ``path_of`` and
    ``score_of`` read an item's file and score (a candidate's record path and score; saved
    pools in the benches hold plain dicts). For any ``k`` the result is a prefix of one
    order."""
    if max_per_file <= 0:
        return list(ranked[:k])
    score: Callable[[Any], float] = score_of or _candidate_score
    caps = {path_of(ranked[0]): lead_file_cap} if ranked and lead_file_cap else {}
    taken: list[T] = []
    held: list[T] = []
    per_file: dict[str, int] = {}
    placed = 0  # chunks within the cap placed since the first held chunk was held or came back
    for candidate in ranked:
        while held_back_below and held and len(taken) < k and \
                score(candidate) < held_back_below * score(held[0]):
            taken.append(held.pop(0))
            placed = 0
        if len(taken) >= k:
            break
        path = path_of(candidate)
        if per_file.get(path, 0) < caps.get(path, max_per_file):
            per_file[path] = per_file.get(path, 0) + 1
            taken.append(candidate)
            placed += 1
            if give_way is not None and held and placed >= give_way:
                taken.append(held.pop(0))
                placed = 0
        else:
            if not held:
                placed = 0
            held.append(candidate)
    return (taken + held)[:k]


def named_lead(ranked: Sequence[Candidate]) -> int:
    """How many of ``ranked``'s first candidates are definitions the query names, moved to
    the top by the structure step (``fusion.structured``): a look-up's answers, which no
    per-file turn holds back (tenacity's four ``retry`` definitions in one file)."""
    count = 0
    for candidate in ranked:
        if not candidate.features.get("named_definition"):
            break
        count += 1
    return count


def naming_first(ranked: Sequence[Candidate], names: Sequence[str]) -> list[Candidate]:
    """``ranked`` with the chunks that write one of ``names`` (a look-up's, its last part for a
    dotted one) first, those declaring it by a line of their text before those using it, each
    side in its order: where no definition answers a look-up (a class deleted, its tests
    kept), the code using the name is what there is to show, not a vector neighbour (monolog's
    deleted ``LoadAverageProcessor``: four unrelated methods above its tests)."""
    words = {name.replace("::", ".").rpartition(".")[2] for name in names} - {""}
    if not words:
        return list(ranked)
    pattern = re.compile(r"(?<![\w$#])(?:" + "|".join(map(re.escape, sorted(words))) +
                         r")(?![\w$])")
    naming = [c for c in ranked if pattern.search(c.record.text or "")]
    # A chunk whose line declares the name (a module's ``exports.wetag = …``) is what it
    # names, before the code that only uses it; a function's ``name = value`` is a local.
    declaring = [c for c in naming if defined_in_text(
        c.record.text or "", words, in_function=c.record.kind in FUNCTION_KINDS)]
    declared = {id(c) for c in declaring}
    naming = declaring + [c for c in naming if id(c) not in declared]
    held = {id(c) for c in naming}
    return naming + [c for c in ranked if id(c) not in held]


def first_copies(ranked: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` without the chunks whose text and name are a chunk's ranked above them in
    another file (an amalgamated single header, a vendored or copied module): a copy adds no
    evidence and takes a place another file needs. Equal texts under other names are different
    definitions and all stay: ``__init__`` of two classes in one file, or the same three-line
    ``Builder.addModifiers`` of two classes in two. A tombstoned chunk whose text a live one
    holds (a file moved, a history search) is gone wherever it ranks: that code is still
    there."""
    live_texts = {c.record.text_sha256 for c in ranked
                  if c.record.status == LIVE and c.record.text_sha256}
    first_path: dict[tuple[str, str], str] = {}
    kept: list[Candidate] = []
    for candidate in ranked:
        record = candidate.record
        text_sha = record.text_sha256
        if text_sha and record.status != LIVE and text_sha in live_texts:
            continue
        if text_sha and first_path.setdefault((text_sha, record.symbol), record.path) != \
                record.path:
            continue
        kept.append(candidate)
    return kept


def agreed_prose(ranked: Sequence[Candidate], place: int = AGREED_PROSE_PLACE
                 ) -> list[Candidate]:
    """``ranked`` with a doc or config chunk that both channels rank first moved up to
    ``place`` where it stood lower (``AGREED_PROSE_PLACE``), each candidate taking the score
    of the place it fills so scores still fall down the ranking."""
    at = next((i for i, c in enumerate(ranked) if c.bm25_rank == 1 and c.vector_rank == 1),
              None)
    if at is None or at < place or ranked[at].kind not in _PROSE_KINDS:
        return list(ranked)
    out = list(ranked)
    out.insert(place - 1, out.pop(at))
    for candidate, score in zip(out, [c.score for c in ranked], strict=True):
        candidate.score = score
    return out

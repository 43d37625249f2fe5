"""The retrieval channels, vectors and BM25 (and, for a look-up, the definitions named so), and
the filters they apply."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from freshmark.core.classify import is_stub, search_kind
from freshmark.core.fusion import Candidate
from freshmark.core.ports import BranchView, LexicalChannel, LexicalHit
from freshmark.core.stamp import LIVE, TOMBSTONED, ChunkRecord, own_name
from freshmark.core.tracebacks import Frame, frame_names, frames_ran, site_paths

# The vector channel reads this many more nearest chunks than it expects to survive its
# filters, and filters them itself (see ``vector_channel``).
OVERFETCH = 1.25
MIN_PASSING_SHARE = 0.1
# The unfiltered reads of the vector channel: each rung asks this many times n (over the share
# that passes), never more than MAX_VECTOR_READ neighbours, so a query's cost is bounded by
# the query, not by the collection (a filtered Chroma query scans every matching id).
READ_RUNGS = (OVERFETCH, 8.0, 64.0)
MAX_VECTOR_READ = 1000
# Definitions a look-up by name reads, at most: a name every class has (``__init__``) must not
# read them all.
NAMED_READ = 20
# Definitions of a name read (without text) to find those a dotted look-up asks for.
NAMED_SCAN = 200
# Definitions of a traceback's function names read (without text) to find those of its
# frames' files: a name every class has (``__init__``) is read this far at most.
FRAME_SCAN = 2000


def passes_filter(record: ChunkRecord, include_history: bool, kinds: frozenset[str]) -> bool:
    """Whether a record read back from the store passes the search's filters: live (or a
    tombstone with ``include_history``) and of a kind searched (chunks stamped before a kind
    existed are judged by today's rules, ``search_kind``)."""
    if record.status != LIVE and not (include_history and record.status == TOMBSTONED):
        return False
    return search_kind(record.path, record.file_kind) in kinds


# -- channels -------------------------------------------------------------------------------------
def vector_channel(
    index: BranchView,
    vector: np.ndarray,
    n: int,
    include_history: bool,
    kinds: frozenset[str],
    passing_share: float = 1.0,
) -> list[tuple[ChunkRecord, float]]:
    """Nearest chunks that pass the filters, as (record, cosine similarity), best first.

    Chroma applies a ``where`` filter by first collecting every matching id, work that grows
    with the collection (measured: 0.6 s at 50k chunks, 2.1 s at 300k, against 6 ms
    unfiltered). So the channel never lets Chroma filter: it asks for the nearest chunks
    without a filter, enough of them that ``n`` should survive given the share of chunks that
    pass (``passing_share``), filters them here, and widens the read (``READ_RUNGS``, at most
    ``MAX_VECTOR_READ``) while too few survive. Past that it returns what passed: the lexical
    channel still brings the rest, and the cost stays the query's.
    """
    share = max(passing_share, MIN_PASSING_SHARE)
    kept: list[tuple[ChunkRecord, float]] = []
    for rung in READ_RUNGS:
        wanted = min(math.ceil(rung * n / share), MAX_VECTOR_READ)
        nearest = index.query(vector, wanted, where=None)
        kept = [(r, 1.0 - d) for r, d in nearest if passes_filter(r, include_history, kinds)]
        if len(kept) >= n or len(nearest) < wanted or wanted >= MAX_VECTOR_READ:
            break
    return kept[:n]


def name_channel(index: BranchView, symbols: Sequence[str], include_history: bool,
                 kinds: frozenset[str]) -> list[tuple[ChunkRecord, float]]:
    """The chunks named exactly ``symbols`` (``in_``, ``has``, ``Context.invoke``) that pass
    the filters, implementation first, at most ``NAMED_READ``: a name that is a stop word or
    in every docstring (``has``) gives BM25 nothing to find it by. A metadata look-up by an
    indexed field: its cost grows with the definitions of that name, not with the index."""
    if not symbols:
        return []
    where = named_where(symbols)
    if not include_history:
        where = {"$and": [where, {"status": LIVE}]}
    found = [r for r in itertools.islice(index.iter_records(where=where), NAMED_READ * 5)
             if passes_filter(r, include_history, kinds)]
    # A name written with its owner (``Retrofit.create``) first: 43 other ``create`` methods,
    # in paths that sort earlier, must not fill the slots before it.
    dotted = [symbol for symbol in symbols if "." in symbol]
    # A definition named exactly so (bubbletea's type ``View``) before 70 ``model.View``
    # methods of paths that sort earlier.
    found.sort(key=lambda r: (not any(r.symbol == d or r.symbol.endswith("." + d)
                                      for d in dotted), r.symbol not in symbols,
                              search_kind(r.path, r.file_kind) != "source", is_stub(r.path),
                              r.path, r.start_line))
    return [(record, 1.0) for record in found[:NAMED_READ]]


def frame_channel(index: BranchView, frames: Sequence[Frame], include_history: bool,
                  kinds: frozenset[str]) -> list[tuple[ChunkRecord, int]]:
    """The chunks a pasted traceback's ``frames`` ran (``tracebacks.frames_ran``) that pass the
    filters, with the place of their frame (0: the deepest), deepest first. A metadata look-up
    of the frames' function names, like ``name_channel``'s, and of the files their sites name
    (``tracebacks.site_paths``); the frames' files, named by a path's tail, are told apart
    here."""
    if not frames:
        return []
    where = named_where(frame_names(frames))
    if not include_history:
        where = {"$and": [where, {"status": LIVE}]}
    named = [r for r in itertools.islice(index.iter_records(where=where, include_text=False),
                                         FRAME_SCAN) if passes_filter(r, include_history, kinds)]
    paths = site_paths(frames, {r.path for r in named})
    held = {r.id for r in named}
    named += [r for r in (index.records_for_paths(paths) if paths else [])
              if r.id not in held and passes_filter(r, include_history, kinds)]
    places = frames_ran(frames, [(r.path, r.symbol, r.start_line, r.end_line) for r in named])
    place_of = {r.id: place for r, place in zip(named, places, strict=True) if place is not None}
    records = index.get(ids=list(place_of), include_text=True) if place_of else []
    return sorted(((r, place_of[r.id]) for r in records if r.id in place_of),
                  key=lambda hit: (hit[1], hit[0].path, hit[0].start_line))


def named_where(symbols: Sequence[str]) -> dict[str, object]:
    """Chunks whose symbol is one of ``symbols`` or, for a bare name (``With``), whose own
    name is (``Mux.With``), or is that name as a JavaScript private member's (``retry``:
    ``Ky.#retry``, named ``#retry``); chunks stamped before the name field only by the
    first."""
    where: dict[str, object] = {"symbol": {"$in": list(symbols)}}
    bare = [symbol for symbol in symbols if "." not in symbol]
    names = [*bare, *("#" + name for name in bare if not name.startswith("#"))]
    return {"$or": [where, {"name": {"$in": names}}]} if bare else where


def named_tombstones(index: BranchView, symbols: Sequence[str], kinds: frozenset[str]
                     ) -> list[ChunkRecord]:
    """The tombstoned definitions (at most ``NAMED_READ``, with their text) of the names a
    look-up asks for when no live one is left: a name asked for that only history defines is
    deleted or renamed, not unknown (a name still defined, ``__init__``, says nothing of its
    past). The search verifies them: ``historical`` ones are counted as deleted, one renamed
    in place is served under its new name."""
    # ``ObjectDetails.compare_by_location`` asks for the method: its class still stands. It
    # is read by its own name (stamped ``Rack.Lock.call``, asked as ``Lock.call``) and only
    # what ends in the dotted name counts: another class's live ``call`` says nothing of it.
    dotted = [symbol for symbol in symbols if "." in symbol]
    symbols = [*dotted, *(own_name(symbol) for symbol in dotted)] if dotted else \
        list(symbols)
    if not symbols:
        return []

    def asked(record: ChunkRecord, history: bool) -> bool:
        return passes_filter(record, history, kinds) and (not dotted or any(
            record.symbol == name or record.symbol.endswith("." + name) for name in dotted))

    live = {"$and": [named_where(symbols), {"status": LIVE}]}
    if any(asked(r, False) for r in itertools.islice(
            index.iter_records(where=live, include_text=False), NAMED_SCAN)):
        return []
    where = {"$and": [named_where(symbols), {"status": TOMBSTONED}]}
    ids = [r.id for r in itertools.islice(index.iter_records(where=where, include_text=False),
                                          NAMED_SCAN) if asked(r, True)][:NAMED_READ]
    return index.get(ids=ids, include_text=True) if ids else []


def lexical_channel(
    index: BranchView,
    lexical: LexicalChannel,
    hits: Sequence[LexicalHit],
    known: dict[str, ChunkRecord],
    include_history: bool,
    kinds: frozenset[str],
) -> list[tuple[ChunkRecord, float]]:
    """Lexical hits re-read from the store and filtered by what the store says now.

    Ids the store no longer holds leave the lexical index; records the store holds at a newer
    generation than the index are applied to it at once (``LexicalChannel.catch_up``).
    """
    missing = [h.id for h in hits if h.id not in known]
    fresh = {r.id: r for r in index.get(ids=missing, include_text=True)} if missing else {}
    gone = [i for i in missing if i not in fresh]
    if gone:
        lexical.forget(gone)
    lexical.catch_up(fresh.values())
    records = {**fresh, **known}
    return [
        (records[h.id], h.score)
        for h in hits
        if h.id in records and passes_filter(records[h.id], include_history, kinds)
    ]


def fill_missing_scores(
    index: BranchView, vector: np.ndarray, candidates: list[Candidate], bm25_of: dict[str, float]
) -> None:
    """Give every candidate both channel scores (its rank stays None where it was not ranked):
    BM25 from the in-memory index, cosine similarity from the stored vectors."""
    for candidate in candidates:
        if candidate.bm25 is None:
            candidate.bm25 = bm25_of.get(candidate.record.id, 0.0)
    need = [c.record.id for c in candidates if c.vector_sim is None]
    if not need:
        return
    stored = index.embeddings_for(need)
    query = vector / (float(np.linalg.norm(vector)) or 1.0)
    for candidate in candidates:
        if candidate.vector_sim is None and candidate.record.id in stored:
            other = stored[candidate.record.id]
            candidate.vector_sim = float(query @ other) / (float(np.linalg.norm(other)) or 1.0)

"""One symbol graph per branch collection and generation, per process (SPEC §7).

A graph is built from a branch's live chunk metadata (``SymbolGraph``), once per generation
of its collection: context requests reuse it until an index run moves the collection on. A few
collections are kept, the oldest dropped first.
"""

from __future__ import annotations

import threading

from freshmark.core.ports import BranchView
from freshmark.services.context.symbol_graph import SymbolGraph

_GRAPHS_KEPT = 4
_GRAPHS: dict[str, tuple[int, SymbolGraph]] = {}
_GRAPHS_LOCK = threading.Lock()


def graph_for(index: BranchView) -> SymbolGraph:
    """The branch's graph, rebuilt from live chunk metadata when the collection has moved on."""
    generation = index.manifest.generation
    with _GRAPHS_LOCK:
        cached = _GRAPHS.get(index.name)
    if cached is not None and cached[0] == generation:
        return cached[1]
    graph = SymbolGraph(index.iter_records(where={"status": "live"}, include_text=False))
    with _GRAPHS_LOCK:
        if len(_GRAPHS) >= _GRAPHS_KEPT and index.name not in _GRAPHS:
            _GRAPHS.pop(next(iter(_GRAPHS)))
        _GRAPHS[index.name] = (generation, graph)
    return graph

"""The call-graph study (bench/tune_callgraph.py): its shipped rule ranks files as the search
does, and a callee file earns its callers' scores through the symbol graph's resolution."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from test_tune_files import _candidate  # noqa: E402
from tune_callgraph import callee_flow, shipped_files  # noqa: E402

from freshmark.core.chunking import chunk_text  # noqa: E402
from freshmark.core.fusion import group_files  # noqa: E402
from freshmark.core.stamp import ChunkRecord  # noqa: E402
from freshmark.services.context.symbol_graph import SymbolGraph  # noqa: E402

API = '''from pkg.work import reindex


def sel(data, labels):
    """Select by labels."""
    return reindex(data, labels)
'''

WORK = '''def reindex(data, labels):
    return [data[label] for label in labels]
'''

OTHER = '''def reindex(items):
    return items
'''


def _records(path: str, text: str) -> list[ChunkRecord]:
    return [ChunkRecord(repo="r", branch="b", commit="c", path=path, symbol=c.symbol,
                        start_line=c.start_line, end_line=c.end_line, indexed_at="",
                        blob_sha="", content_sha256="", kind=c.kind, id=f"{path}:{c.symbol}",
                        imports=list(c.imports), references=list(c.references))
            for c in chunk_text(path, text)]


def test_the_shipped_rule_orders_files_as_group_files_does() -> None:
    ranked = [_candidate("a1", "a.py", 1.00), _candidate("b1", "b.py", 0.99),
              _candidate("b2", "b.py", 0.50), _candidate("c1", "c.py", 0.98)]
    pool = [({"path": c.record.path, "symbol": c.record.symbol}, c.score) for c in ranked]
    files = shipped_files(pool)
    assert sorted(files, key=lambda p: -files[p]) == [f.path for f in group_files(ranked, 3)]


def test_the_imported_definition_a_top_chunk_calls_earns_its_score() -> None:
    graph = SymbolGraph([*_records("pkg/api.py", API), *_records("pkg/work.py", WORK),
                         *_records("pkg/other.py", OTHER)])
    ranked = [({"path": "pkg/api.py", "symbol": "sel"}, 1.5)]
    called, _ = callee_flow(ranked, graph, callers=5, name_only=0.5)
    # ``reindex`` is defined twice; the imported file's definition is the confirmed one.
    assert called == {"pkg/work.py": 1.5}

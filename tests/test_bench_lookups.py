"""The name-lookup bench counts a lookup answered where a result's lines hold the declaration."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from bench_lookups import rank_of  # noqa: E402

RESULTS = [
    {"rank": 1, "path": "sds.c", "start_line": 40, "end_line": 60},
    {"rank": 2, "path": "sds.h", "start_line": 1, "end_line": 43},
    {"rank": 3, "path": "sds.h", "start_line": 76, "end_line": 85},
]


def test_a_lookup_is_answered_by_the_result_holding_the_declaration_line():
    assert rank_of(RESULTS, "sds.h", 81) == 3
    assert rank_of(RESULTS, "sds.h", 36) == 2


def test_a_declaration_no_result_holds_is_not_answered():
    assert rank_of(RESULTS, "sds.h", 90) is None
    assert rank_of(RESULTS, "other.h", 50) is None

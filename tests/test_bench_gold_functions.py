"""The localization bench scores a changed function by a name some chunk can carry: a nested
function that a hunk header names counts as the chunk that holds its definition."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import gold_functions as gf  # noqa: E402

MATRIX = '''\
class MatrixShaping(object):
    """Shaping."""

    def _eval_col_insert(self, pos, other):
        cols = self.cols

        def entry(i, j):
            if j < pos:
                return self[i, j]
            return other[i, j - pos]

        return self._new(self.rows, self.cols + other.cols, entry)

    def col_insert(self, pos, other):
        return self._eval_col_insert(pos, other)

    def _eval_row_del(self, row):
        def entry(i, j):
            return self[i, j] if i < row else self[i + 1, j]
        return self._new(self.rows - 1, self.cols, entry)
'''


def test_a_nested_function_counts_as_each_method_that_holds_one_of_its_name() -> None:
    assert gf.chunk_names("sympy/matrices/common.py", MATRIX, "entry") == \
        ["_eval_col_insert", "_eval_row_del"]


def test_a_method_keeps_its_own_name() -> None:
    assert gf.chunk_names("sympy/matrices/common.py", MATRIX, "col_insert") == ["col_insert"]


def test_a_name_defined_nowhere_in_the_file_is_kept() -> None:
    assert gf.chunk_names("sympy/matrices/common.py", MATRIX, "vanished") == ["vanished"]


def test_resolve_keeps_the_names_of_a_file_missing_at_the_base_commit() -> None:
    texts = {"sympy/matrices/common.py": MATRIX}
    resolved = gf.resolve([("sympy/matrices/common.py", "entry"), ("gone.py", "f")], texts.get)
    assert resolved == [("sympy/matrices/common.py", "_eval_col_insert"),
                        ("sympy/matrices/common.py", "_eval_row_del"), ("gone.py", "f")]


def test_a_span_is_hit_by_the_chunk_of_its_qualified_definition_only() -> None:
    spans = gf.gold_spans({"django/db/models/fields/__init__.py": ["Field.__hash__"]})
    path = "django/db/models/fields/__init__.py"
    assert gf.span_hit([(path, "Field.__hash__")], spans)
    assert not gf.span_hit([(path, "Field.__lt__")], spans)  # the hunk header's name
    assert not gf.span_hit([(path, "FileField.__hash__")], spans)
    assert not gf.span_hit([("django/db/models/base.py", "Field.__hash__")], spans)


def test_a_span_of_a_nested_class_is_hit_by_its_chunk_under_the_outer_class() -> None:
    spans = gf.gold_spans({"lib/a.py": ["Inner.run"]})
    assert gf.span_hit([("lib/a.py", "Outer.Inner.run")], spans)


def test_module_level_spans_are_no_definitions_to_score() -> None:
    assert gf.gold_spans({"a.py": ["imports", "impl:3", "f"], "b.py": []}) == [("a.py", "f")]
    assert gf.gold_spans(None) == []

"""A long issue report's second pass inside the files it reaches (``core/infile.py``): the
definition the report's traceback shows running, or its example calls, comes first in its
file, on a repository built and indexed here; other files keep their places."""

from __future__ import annotations

import pytest
from search_fixtures import indexed_project

from freshmark.core.infile import (
    BEST,
    CALLED,
    RAN,
    UNNAMED,
    in_file_order,
    in_file_score,
    report_names,
    second_pass,
)
from freshmark.core.query import plan_query
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.retrieval.search import search

# Many definitions of palette.py share the report's words; the one its traceback shows
# running (``_map_colors``) is short, says little, and is not the deepest frame.
PALETTE = '''"""Colour palettes for the hue of a plot."""


def palette_colors(palette, levels):
    """The palette's colours, one for each hue level of the plot."""
    colors = list(palette)
    while len(colors) < len(levels):
        colors = colors + list(palette)
    return colors[: len(levels)]


def palette_lookup_table(palette, levels):
    """A lookup table from each hue level to its palette colour for the plot legend."""
    table = {}
    for level, color in zip(levels, palette_colors(palette, levels)):
        table[level] = color
    return table


def palette_legend_entries(palette, levels, title):
    """Legend entries of the hue palette: a title, then each level with its colour."""
    entries = [(title, None)]
    for level, color in palette_lookup_table(palette, levels).items():
        entries.append((level, color))
    return entries


def palette_for_numeric_hue(palette, values):
    """A palette colour for each numeric hue value, normalised between the smallest and
    the largest value of the hue levels."""
    low, high = min(values), max(values)
    span = (high - low) or 1
    return [palette[int((v - low) / span * (len(palette) - 1))] for v in values]


def _map_colors(table, value):
    return table[value]
'''

UTILS = '''"""Small helpers."""


def check_value(value):
    if value is None:
        raise KeyError(value)
    return value
'''

REPORT = """Plotting with a hue palette fails when the hue levels contain a missing value

When the hue column has a missing value, drawing the plot with a palette fails while the
palette lookup table is used for the legend entries (`palette_lookup_table` and
`palette_legend_entries` with the palette colours of each hue level). I expected the missing
level to be skipped, as it was in earlier releases, and the palette colours kept.

```
Traceback (most recent call last):
  File "/home/me/src/plots/plots/palette.py", line 40, in _map_colors
    return check_value(table[value])
  File "/home/me/src/plots/plots/utils.py", line 6, in check_value
    raise KeyError(value)
KeyError: nan
```
"""


@pytest.fixture
def plots(make_repo, fm_home):
    return indexed_project(make_repo("plots"),
                           {"plots/palette.py": PALETTE, "plots/utils.py": UTILS},
                           package="plots")


def test_a_function_a_reports_traceback_ran_is_first_in_its_file(plots):
    assert plan_query(REPORT).long
    response = search(SearchRequest.build(REPORT, k=5), str(plots.path),
                      settings=Settings.from_env())
    palette = [r.record.symbol for r in response.results if r.record.path == "plots/palette.py"]
    assert palette[0] == "_map_colors"


def test_a_report_names_the_functions_its_example_calls_and_not_builtins():
    names = report_names("x = xr.where(cond, a, b)\nprint(len(x))", [])
    assert names.names("xarray/core/computation.py", "where", "function")
    assert not names.names("xarray/core/computation.py", "len", "function")


def test_a_call_of_a_class_does_not_name_its_outline():
    names = report_names("grid = PairGrid(data)", [])
    assert not names.names("seaborn/axisgrid.py", "PairGrid", "class")
    assert names.names("seaborn/axisgrid.py", "PairGrid", "function")


LEADS = {"ran": RAN, "called": CALLED}


def lead(item: tuple[str, str]) -> int:
    return LEADS.get(item[1], UNNAMED)


def test_a_definition_a_frame_ran_leads_its_file_and_only_files_passed_change():
    ranked = [("a.py", "big"), ("b.py", "other"), ("a.py", "small"), ("b.py", "more")]
    joining = [("a.py", "ran"), ("b.py", "ran")]
    out = second_pass(ranked, joining, ["a.py"], lambda c: c[0], lead)
    assert out == [("a.py", "ran"), ("a.py", "big"), ("b.py", "other"), ("a.py", "small"),
                   ("b.py", "more")]


def test_a_called_definition_comes_right_after_its_files_best_chunk():
    ranked = [("a.py", "big"), ("b.py", "other"), ("a.py", "small"), ("a.py", "called")]
    out = second_pass(ranked, [], ["a.py"], lambda c: c[0], lead)
    assert out == [("a.py", "big"), ("a.py", "called"), ("b.py", "other"), ("a.py", "small")]


def test_without_a_named_definition_the_ranking_is_unchanged():
    ranked = [("a.py", "big"), ("b.py", "other"), ("a.py", "small")]
    out = second_pass(ranked, [("a.py", "extra")], ["a.py", "b.py"], lambda c: c[0], lead)
    assert out == ranked


def test_the_in_file_order_moves_a_files_chunks_among_its_own_places_only():
    ranked = [("a.py", 1.0), ("b.py", 9.0), ("a.py", 5.0), ("b.py", 0.0)]
    out = in_file_order(ranked, ["a.py"], lambda c: c[0], lambda c: c[1])
    assert out == [("a.py", 5.0), ("b.py", 9.0), ("a.py", 1.0), ("b.py", 0.0)]


def test_a_class_outline_scores_below_a_definition_with_the_same_evidence_in_its_file():
    evidence = {"rrf_norm": 0.5, "bm25_norm": 0.5, "symbol_hit": 1.0, "length_fit": 1.0}
    assert in_file_score({**evidence, "container": 1.0}) < in_file_score(evidence)


def test_a_reports_best_file_holds_three_of_the_first_results_then_other_files_come(plots):
    prose = REPORT.split("```")[0]  # the report without its traceback: palette.py leads
    assert plan_query(prose).long
    response = search(SearchRequest.build(prose, k=6), str(plots.path),
                      settings=Settings.from_env())
    paths = [r.record.path for r in response.results]
    assert paths[:3] == ["plots/palette.py"] * 3
    assert "plots/palette.py" not in paths[3:5]


def test_the_deepest_frame_of_a_file_leads_it_before_the_frames_that_called_down_to_it():
    names = report_names("", [("plots/palette", "palette_legend_entries"),
                              ("plots/palette", "_map_colors")])
    deepest = names.lead("plots/palette.py", "_map_colors", "function")
    caller = names.lead("plots/palette.py", "palette_legend_entries", "function")
    assert RAN <= deepest < caller < BEST


def test_a_frame_names_its_own_file_not_the_package_it_is_inside():
    names = report_names("", [("loguru/_logger", "add")])
    assert names.lead("loguru/_logger.py", "Logger.add", "function") == RAN
    assert names.lead("loguru/__init__.pyi", "Logger.add", "function") == UNNAMED


DEEPER = REPORT.replace(
    '  File "/home/me/src/plots/plots/palette.py", line 40, in _map_colors\n',
    '  File "/home/me/src/plots/plots/palette.py", line 24, in palette_legend_entries\n'
    '    for level, color in palette_lookup_table(palette, levels).items():\n'
    '  File "/home/me/src/plots/plots/palette.py", line 40, in _map_colors\n')


def test_a_reports_deepest_frame_in_a_file_comes_first_in_it(plots):
    assert plan_query(DEEPER).long
    response = search(SearchRequest.build(DEEPER, k=5), str(plots.path),
                      settings=Settings.from_env())
    palette = [r.record.symbol for r in response.results if r.record.path == "plots/palette.py"]
    assert palette[:2] == ["_map_colors", "palette_legend_entries"]

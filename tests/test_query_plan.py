"""Reading a query: identifiers weigh more than prose, paths become hints, long reports are
embedded whole in windows (``freshmark.query``, pure)."""

from __future__ import annotations

import pytest

from freshmark.core.messages import message_windows
from freshmark.core.query import (
    IDENTIFIER_WEIGHT,
    MAX_WINDOWS,
    VERB_BASE_WEIGHT,
    deepest_frame,
    frame_match,
    path_hint_match,
    path_hints,
    plan_query,
    strip_boilerplate,
    traceback_frames,
)

REPORT = """separability_matrix gives the wrong answer for nested models

When I nest compound models the matrix is no longer what I would expect it to be, and I
think this should work the same way as it does without the nesting, which is surprising.

```python
from astropy.modeling.separable import separability_matrix
cm = Linear1D(10) & Linear1D(5)
separability_matrix(Pix2Sky_TAN() & cm)
```

Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/astropy/modeling/separable.py", line 99, in _cstack
    raise ValueError("oops")
"""


def test_short_query_keeps_every_term_it_writes_at_weight_one():
    plan = plan_query("where are deleted files tombstoned")
    assert not plan.long and plan.windows == ["where are deleted files tombstoned"]
    assert {"deleted", "files", "tombstoned"} <= set(plan.terms)
    assert {plan.weights[t] for t in ("where", "deleted", "files", "tombstoned")} == {1.0}


def test_a_questions_inflected_verbs_also_search_their_base_forms_at_lower_weight():
    plan = plan_query("where are inline tables parsed while loading")
    assert {"parsed", "parse", "loading", "load"} <= set(plan.terms)
    assert plan.weights["parse"] == plan.weights["load"] == VERB_BASE_WEIGHT < 1.0


def test_a_base_form_the_question_also_writes_keeps_its_full_weight():
    assert plan_query("parse where tables are parsed").weights["parse"] == 1.0


def test_names_written_as_code_and_reports_keep_their_words_as_written():
    assert "load" not in plan_query("where is read_loaded called").terms
    assert "parse" not in plan_query(REPORT + " the parsed header").terms


def test_a_question_leaves_the_language_it_names_out_of_its_terms():
    plan = plan_query("python parse a string into datetime")
    assert plan.terms == ["parse", "string", "into", "datetime"]
    assert plan.windows == ["python parse a string into datetime"]


def test_a_query_that_only_names_a_language_searches_for_it():
    assert plan_query("python").terms == ["python"]


def test_a_long_report_keeps_the_language_it_names():
    assert "python" in plan_query(REPORT + " python").terms


def test_identifiers_weigh_more_than_prose():
    plan = plan_query(REPORT)
    assert plan.weights["separability_matrix"] >= IDENTIFIER_WEIGHT
    assert plan.weights["linear1d"] >= IDENTIFIER_WEIGHT
    assert plan.weights["nesting"] < IDENTIFIER_WEIGHT


def test_long_report_drops_english_glue_but_keeps_code_words():
    plan = plan_query(REPORT)
    assert plan.long
    assert not {"would", "think", "should", "which"} & set(plan.terms)
    assert {"separability_matrix", "_cstack", "valueerror"} <= set(plan.terms)


def test_traceback_frames_and_dotted_modules_become_path_hints():
    hints = path_hints(REPORT)
    assert "astropy/modeling/separable" in hints  # frame, site-packages prefix dropped
    assert path_hint_match("astropy/modeling/separable.py", hints) == 1.0
    assert path_hint_match("astropy/modeling/core.py", hints) == 0.0


def test_a_frame_from_a_checkout_names_the_file_by_its_tail():
    hints = path_hints('  File "/home/me/dev/astropy/astropy/io/fits/card.py", line 3, in f\n')
    assert path_hint_match("astropy/io/fits/card.py", hints) == 1.0
    assert path_hint_match("card.py", ["home/me/dev/card"]) == 0.0  # one part: too loose
    assert path_hint_match("astropy/io/fits/header.py", hints) == 0.0


def test_an_absolute_path_names_the_file_by_its_tail():
    hints = path_hints("see /home/me/proj/pkg/mod.py line 3")
    assert hints == ["home/me/proj/pkg/mod"]
    assert path_hint_match("pkg/mod.py", hints) == 1.0


def test_a_source_file_name_is_no_dotted_name():
    assert path_hints("StreamHandler.php and Card.java fail, not mod.rb or a.go") == []


def test_path_hint_names_a_package_through_its_init():
    assert path_hint_match("pkg/io/__init__.py", ["pkg/io"]) == 1.0
    assert path_hint_match("otherpkg/io.py", ["pkg/io"]) == 0.0


def test_long_report_is_embedded_in_bounded_windows_first_counting_double():
    plan = plan_query(REPORT * 40)
    assert 1 < len(plan.windows) <= MAX_WINDOWS
    assert plan.window_weights[0] == 2.0 and set(plan.window_weights[1:]) == {1.0}


def test_environment_dump_and_template_lines_are_dropped_from_long_reports():
    report = (REPORT + "\n### Environment\n<details>\n\nINSTALLED VERSIONS\n"
              "python: 3.10.8\nnumpy: 1.23.4\npandas: 1.5.1\nscipy: None\nmatplotlib: 3.6.1\n"
              "</details>\n- [X] New issue: a search of issues suggests this is new\n")
    plan = plan_query(report)
    assert not {"numpy", "pandas", "scipy", "matplotlib", "details"} & set(plan.terms)
    assert "separability_matrix" in plan.terms


def test_interpreter_banners_of_a_pasted_session_are_dropped():
    session = (
        'Python 3.6.9 (default, Jan 26 2021, 15:33:00)\n[GCC 8.4.0] on linux\n'
        'Type "help", "copyright", "credits" or "license" for more information.\n'
        "Python 3.6.4 |Anaconda custom (64-bit)| (default, Dec 21 2017, 15:39:08)\n"
        "Type 'copyright', 'credits' or 'license' for more information\n"
        "IPython 6.2.1 -- An enhanced Interactive Python. Type '?' for help.\n"
        ">>> separability_matrix(cm)\n")
    assert strip_boilerplate(session) == ">>> separability_matrix(cm)"
    terms = set(plan_query(REPORT + session).terms)
    assert not {"license", "copyright", "interactive", "gcc", "anaconda"} & terms
    assert "separability_matrix" in terms


def test_a_compiler_line_does_not_split_a_show_versions_dump():
    dump = ("INSTALLED VERSIONS\ncommit: None\npython: 3.7.3 | packaged by conda-forge | "
            "(default, Jul  1 2019, 21:52:21)\n[GCC 7.3.0]\npython-bits: 64\nOS: Linux\n"
            "numpy: 1.17.2\npandas: 0.25.1\n")
    assert strip_boilerplate(dump) == "INSTALLED VERSIONS"


def test_a_python_version_said_in_prose_is_kept():
    prose = "Python 3.10 (and 3.11) return a different dtype here"
    assert strip_boilerplate(prose) == prose


def test_name_type_lines_of_code_are_not_an_environment_dump():
    code = "```python\nclass A:\n    x: int\n    y: str\n    z: float\n    w: list\n```"
    assert strip_boilerplate(code) == code


def test_the_deepest_project_frame_names_the_function_that_failed():
    report = REPORT.replace(
        '    raise ValueError("oops")',
        '  File "/src/astropy/astropy/modeling/core.py", line 7, in evaluate\n'
        '  File "/env/site-packages/numpy/core/fromnumeric.py", line 3, in sum\n'
        '    raise ValueError("oops")')
    frames = plan_query(report).frames
    assert frames == [("astropy/modeling/separable", "_cstack"),
                      ("src/astropy/astropy/modeling/core", "evaluate"),
                      ("numpy/core/fromnumeric", "sum")]
    project = ["astropy/modeling/separable.py", "astropy/modeling/core.py"]
    failed = deepest_frame(frames, project)  # numpy's frame is no file of the project
    assert failed == ("src/astropy/astropy/modeling/core", "evaluate")
    assert frame_match("astropy/modeling/core.py", "Model.evaluate", failed) == 1.0
    assert frame_match("astropy/modeling/core.py", "Model.prepare", failed) == 0.0
    assert frame_match("astropy/modeling/separable.py", "_cstack", failed) == 0.0  # shallower
    assert deepest_frame(frames, ["docs/conf.py"]) is None


IPYTHON_8 = """File ~/env/site-packages/xarray/core/dataset.py:2110, in Dataset.chunks(self)
-> 2110     return get_chunksizes(self.variables.values())

File ~/env/site-packages/xarray/core/common.py:1815, in get_chunksizes(variables)
-> 1815     if hasattr(v.data, "chunks"):

File ~/env/site-packages/xarray/backends/zarr.py:73, in ZarrArrayWrapper.__getitem__(self, k)
---> 73     return array[key.tuple]
"""

IPYTHON_7 = """<ipython-input-3-8a3b> in <module>
----> 1 wcs.wcs_pix2world([], [], 0)

~/code/astropy/astropy/wcs/wcs.py in wcs_pix2world(self, *args, **kwargs)
   1352         return self._array_converter(

~/code/astropy/astropy/wcs/wcs.py in _return_list_of_arrays(axes, origin)
-> 1225             raise ValueError("oops")
"""

PYTEST = """sympy/core/expr.py:124: in __eq__
    other = _sympify(other)
sympy/core/sympify.py:385: in sympify
    return a._sympy_()
E   AttributeError: 'Symbol' object has no attribute 'x'
"""


def test_ipython_8_frames_name_their_file_and_function_in_order():
    assert traceback_frames(IPYTHON_8) == [("xarray/core/dataset", "chunks"),
                                           ("xarray/core/common", "get_chunksizes"),
                                           ("xarray/backends/zarr", "__getitem__")]


def test_ipython_7_frames_skip_the_cell_and_read_each_file_line():
    assert traceback_frames(IPYTHON_7) == [("~/code/astropy/astropy/wcs/wcs", "wcs_pix2world"),
                                           ("~/code/astropy/astropy/wcs/wcs",
                                            "_return_list_of_arrays")]


def test_pytest_frames_name_their_file_and_function():
    assert traceback_frames(PYTEST) == [("sympy/core/expr", "__eq__"),
                                        ("sympy/core/sympify", "sympify")]


def test_the_deepest_ipython_frame_in_the_project_names_the_function_that_failed():
    frames = plan_query("Accessing chunks loads the whole array\n\n" + IPYTHON_8).frames
    project = ["xarray/core/dataset.py", "xarray/core/common.py", "xarray/backends/zarr.py"]
    failed = deepest_frame(frames, project)
    assert frame_match("xarray/backends/zarr.py", "ZarrArrayWrapper.__getitem__", failed) == 1.0
    assert "xarray/core/common" in path_hints(IPYTHON_8)


def test_names_qualified_with_double_colons_or_backslashes_are_dotted_names():
    assert plan_query("Sinatra::Base").path_hints == ["Sinatra/Base"]
    assert plan_query("how does Rack::Protection::Base work").path_hints == [
        "Rack/Protection/Base"]
    assert plan_query("League\\Container\\Container::get").path_hints == [
        "League/Container/Container/get"]


def test_a_ruby_instance_method_written_with_a_hash_is_a_qualified_name():
    assert plan_query("Files#serving").path_hints == ["Files/serving"]
    assert plan_query("Rack::Files#serving").path_hints == ["Rack/Files/serving"]
    assert plan_query("an issue #12 about C# code").path_hints == []


def test_a_go_method_expression_is_its_types_method():
    assert plan_query("(*Validate).RegisterValidation").path_hints == [
        "Validate/RegisterValidation"]
    assert plan_query("(Time).Format").path_hints == ["Time/Format"]


def test_a_reports_pytest_node_ids_are_not_taken_for_qualified_names():
    report = ("Running the suite fails in tests/test_core.py::TestMerge::test_merge_keys "
              + "with an error about the keys of both frames " * 4)
    assert plan_query(report).long
    assert not any("TestMerge" in hint for hint in plan_query(report).path_hints)


def test_a_private_member_written_with_its_class_is_a_dotted_name():
    assert plan_query("Ky.#retry").path_hints == ["Ky/#retry"]


GO_PANIC = """panic: handlers are already registered for path '/users'

goroutine 1 [running]:
github.com/gin-gonic/gin.(*node).addRoute(0xc000131c80, {0x10b2f8a, 0x6}, {0xc0001a6f00, 0x1, 0x1})
\t/root/go/pkg/mod/github.com/gin-gonic/gin@v1.10.0/tree.go:243 +0x8a5
github.com/gin-gonic/gin.(*Engine).addRoute(...)
\t/root/go/pkg/mod/github.com/gin-gonic/gin@v1.10.0/gin.go:382 +0x2b0
main.main()
\t/app/main.go:12 +0x1d
"""


def test_a_go_panics_frames_are_read_the_deepest_last_without_the_module_cache():
    assert plan_query(GO_PANIC).frames == [("app/main", "main"), ("gin", "addRoute"),
                                           ("tree", "addRoute")]
    assert deepest_frame(plan_query(GO_PANIC).frames, ["tree.go", "gin.go"]) == (
        "tree", "addRoute")


RUBY_BACKTRACE = """/app/lib/sidekiq/job_retry.rb:300:in 'Sidekiq::JobRetry#retry_attempts_from': \
undefined method '+' for nil (NoMethodError)
\tfrom /app/lib/sidekiq/job_retry.rb:220:in 'Sidekiq::JobRetry#process_retry'
\tfrom /app/lib/sidekiq/job_retry.rb:110:in `block in local'
\tfrom /gems/connection_pool.rb:60:in `with'
"""


def test_a_ruby_backtrace_is_read_deepest_call_last_as_python_writes_it():
    assert traceback_frames(RUBY_BACKTRACE) == [
        ("gems/connection_pool", "with"), ("app/lib/sidekiq/job_retry", "local"),
        ("app/lib/sidekiq/job_retry", "process_retry"),
        ("app/lib/sidekiq/job_retry", "retry_attempts_from")]


@pytest.mark.timeout(60)  # a guard against a hang, not a speed figure (bench/ has those)
@pytest.mark.parametrize("run", ["*", "(", "-", "a.b(", ".rb", "'", "a.php(", "in a.php line "])
def test_a_query_of_the_largest_size_is_read_in_one_pass(run):
    # Read from every character, a run of 30,000 took up to 10 s, one of 100,000 over a minute.
    query = "Error: x " + run * (99_000 // len(run))
    plan = plan_query(query)
    assert plan.text and message_windows(query) is not None

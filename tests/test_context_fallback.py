"""When the best evidence does not fit the budget, a slice falls back to evidence that does
(the best match's member among the results, or the next result) and never serves a slice
without evidence without saying so."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

PATH = "src/main/java/poet/TypeName.java"
QUERY = "TypeName get reflect Type"


def _type_name_class() -> str:
    """A class whose outline is short and whose code is long: its members' bodies are."""
    body = "".join(f"    builder.append(prefix).append(width * {i});\n" for i in range(24))
    members = "".join(
        f"  public String keywordNumber{n}(String prefix, int width) {{\n"
        f"    StringBuilder builder = new StringBuilder();\n{body}"
        f"    return builder.toString();\n  }}\n\n" for n in range(12))
    return ("package poet;\n\nimport java.lang.reflect.Type;\n\n"
            "/** Any type: a TypeName, got from a reflect Type. */\n"
            "public class TypeName {\n" + members +
            "  /** The TypeName of a reflect Type. */\n"
            "  public static TypeName get(Type type) {\n"
            "    return new TypeName();\n  }\n}\n")


def slice_for(repo_path, budget: int, query: str = QUERY):
    return build_context(ContextRequest.build(query, budget_tokens=budget), str(repo_path),
                         settings=Settings.from_env())


def test_a_best_match_too_big_for_the_budget_gives_way_to_its_member(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {PATH: _type_name_class()}, package="poet")
    slice_ = slice_for(repo.path, 1500)
    evidence = [s for s in slice_.sections if s.role == "evidence"]
    assert [s.symbol for s in evidence] == ["TypeName.get"]
    assert any(line.startswith(f"[LEFT OUT] {PATH}:L5-L359 | TypeName — not shown")
               for line in slice_.left_out)


def _long_function(name: str) -> str:
    body = "".join(f"    total += reflect_type_part(value, {i})\n" for i in range(70))
    return f"def {name}(value):\n    \"\"\"Convert a reflect type.\"\"\"\n    total = 0\n" \
           f"{body}    return total\n"


def test_a_slice_none_of_whose_evidence_fits_says_so_first(fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {
        "poet/convert.py": _long_function("convert_reflect_type"),
        "poet/cast.py": _long_function("cast_reflect_type")}, package="poet")
    slice_ = slice_for(repo.path, 700, "convert reflect type")
    assert not [s for s in slice_.sections if s.role in ("evidence", "module")]
    assert slice_.left_out[0].startswith("[LEFT OUT] no evidence in this slice: the best "
                                         "matches, named below, do not fit the 700-token budget")
    assert any("_reflect_type — not shown; the whole needs ~" in line
               for line in slice_.left_out[1:])
    assert slice_.used_tokens <= 700

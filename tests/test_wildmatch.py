"""Globs match as git's wildmatch does, without backtracking: answers are checked against
``git check-attr`` on a real repository, including patterns git matches nothing with; the
many-star pattern that made the old regular expressions (and git 2.39 itself) run for
minutes is checked against the answers by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_builder import RepoBuilder, git

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.gitattributes import parse_gitattributes
from freshmark.core.globs import InvalidGlob, compile_glob, glob_match

# 14 stars against a 40-character name: C(40, 14) ways for a backtracking matcher to fail.
MANY_STARS = "*a" * 13 + "*b"
LONG_NAME = "a" * 40
CASES = [
    ("[z-a]*", ["zebra.py", "a.py"]),
    ("[a-z", ["[a-z", "a"]),
    ("src/[!t]*.py", ["src/app.py", "src/test.py", "src/x/app.py"]),
    ("**/gen/*.go", ["gen/a.go", "x/y/gen/a.go", "x/gen/y/a.go"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b", "ab"]),
    ("x/**", ["x/a", "x/a/b", "y/x/a"]),
    ("a**b.py", ["ab.py", "axxb.py", "a/b.py"]),
    ("\\*.py", ["*.py", "a.py"]),
    ("[]]x", ["]x", "ax"]),
    ("foo[", ["foo[", "foo"]),
    ("[a-c?]x.py", ["bx.py", "?x.py", "dx.py"]),
    ("?.md", ["a.md", "ab.md", "d/a.md"]),
]


def _git_says(repo: Path, pattern: str, paths: list[str]) -> dict[str, bool]:
    (repo / ".gitattributes").write_text(f"{pattern} linguist-generated\n")
    out = git(repo, "check-attr", "linguist-generated", "--", *paths)
    return {line.split(": ")[0]: line.endswith(": set") for line in out.splitlines()}


@pytest.mark.parametrize(("pattern", "paths"), CASES, ids=[c[0] for c in CASES])
def test_gitattributes_patterns_match_as_git_check_attr_says(tmp_path: Path, pattern: str,
                                                              paths: list[str]) -> None:
    builder = RepoBuilder.init(tmp_path / "repo")
    expected = _git_says(builder.path, pattern, paths)
    head = builder.commit("attributes")
    repo = GitRepo.open(builder.path)
    found = {p: repo.attributes(head, p).get("linguist-generated") is True for p in paths}
    assert found == expected


def test_a_pattern_of_many_stars_is_matched_without_backtracking(tmp_path: Path) -> None:
    builder = RepoBuilder.init(tmp_path / "repo")
    head = builder.write(".gitattributes", f"{MANY_STARS} linguist-generated\n").commit("a")
    repo = GitRepo.open(builder.path)
    paths = [f"{LONG_NAME}.py", f"{LONG_NAME}b", "src/" + "ab" * 14, "src/" + "ab" * 12]
    found = [repo.attributes(head, p).get("linguist-generated") is True for p in paths]
    assert found == [False, True, True, False]


def test_a_pattern_that_can_match_nothing_is_reported_and_the_other_lines_apply() -> None:
    rules = parse_gitattributes("[a-z linguist-generated\n*.py linguist-vendored\n")
    assert len(rules.rules) == 1 and rules.invalid[0].startswith("[a-z: unclosed [")


def test_an_unclosed_class_is_an_invalid_wildmatch_glob() -> None:
    with pytest.raises(InvalidGlob):
        compile_glob("src/[ab", wildmatch=True)


def test_config_path_globs_with_many_stars_answer_without_backtracking() -> None:
    assert not glob_match(f"src/{LONG_NAME}.py", "src/" + MANY_STARS)
    assert glob_match(f"src/{LONG_NAME}b", "src/" + MANY_STARS)


def test_config_double_star_spans_directories_and_none() -> None:
    assert glob_match("a/b/c/d.py", "a/**/d.py") and glob_match("a/d.py", "a/**/d.py")
    assert glob_match("a/b/c", "a/**") and not glob_match("b/a/c", "a/**")

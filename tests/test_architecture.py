"""The package's floors hold: small modules, and imports at module level below the faces.

The layer contracts themselves (no arrow up a floor, no circle among siblings) are checked by
import-linter (``lint-imports``, configured in pyproject.toml); these tests check what it does
not: module sizes, and that only the faces defer project imports into functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("freshmark", "workers", "scheduler")
MAX_MODULE_LINES = 500
FACES = ROOT / "freshmark" / "faces"


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _project_imports_inside_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                names = [inner.module]
            elif isinstance(inner, ast.Import):
                names = [alias.name for alias in inner.names]
            else:
                continue
            found += [f"{path.relative_to(ROOT)}:{inner.lineno} {name}" for name in names
                      if name.split(".")[0] in PACKAGES]
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_500_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


def test_only_faces_import_project_modules_inside_functions() -> None:
    below_faces = [p for p in _modules() if FACES not in p.parents]
    assert [hit for p in below_faces for hit in _project_imports_inside_functions(p)] == []


def test_the_function_level_import_finder_sees_one() -> None:
    faces_with_late_imports = [p for p in _modules() if FACES in p.parents
                               and _project_imports_inside_functions(p)]
    assert faces_with_late_imports  # the CLI loads its services per command

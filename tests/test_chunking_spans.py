"""symbol_spans finds where each symbol is now; file_imports lists what a file imports."""

from __future__ import annotations

from textwrap import dedent

import pytest

from freshmark.core.chunking import chunk_text, file_imports, symbol_spans
from freshmark.core.chunking.languages import SUPPORTED_LANGUAGES
from freshmark.core.chunking.queries import accepted_patterns

SERVICE_V1 = dedent(
    """\
    import os


    class OrderService:
        def cancel_order(self, order_id):
            return order_id


    def helper():
        return 1
    """
)


def test_spans_name_every_symbol_with_its_whole_line_range() -> None:
    assert symbol_spans("svc.py", SERVICE_V1) == {
        "OrderService": (4, 6),
        "OrderService.cancel_order": (5, 6),
        "helper": (9, 10),
        "<module>": (1, 1),
    }


def test_spans_follow_a_symbol_that_moved_down() -> None:
    moved = "import os\nimport sys\n\n\n# Helpers first now.\ndef helper():\n    return 2\n\n\n" + (
        SERVICE_V1.split("\n\n\n")[1] + "\n"
    )
    spans = symbol_spans("svc.py", moved)
    assert spans["OrderService.cancel_order"] == (11, 12)
    assert spans["helper"] == (5, 7)


def test_spans_agree_with_the_chunks_of_the_same_file() -> None:
    chunks = chunk_text("svc.py", SERVICE_V1)
    spans = symbol_spans("svc.py", SERVICE_V1)
    assert {c.symbol: (c.start_line, c.end_line) for c in chunks} == spans


def test_spans_cover_the_whole_unit_when_its_chunks_are_split() -> None:
    body = "".join(f"    v{i} = {i}\n" for i in range(400))
    spans = symbol_spans("long.py", "def long():\n" + body)
    assert spans == {"long": (1, 401)}


def test_repeated_names_keep_their_first_span() -> None:
    source = "class A {\n  void f(int a) {}\n  void f(String s) {}\n}\n"
    assert symbol_spans("A.java", source)["A.f"] == (2, 2)


def test_file_imports_lists_every_import_once_in_source_order() -> None:
    source = dedent(
        """\
        import os
        import os.path as osp
        from . import models
        from ..core.base import Base

        def load():
            import json
            import os
        """
    )
    assert file_imports("m.py", source) == [
        "os", "os.path", ".", ".models", "..core.base", "json"]


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("a.ts", "import x from './x';\nexport * from \"./y\";\nconst z = await import('z');\n",
         ["./x", "./y", "z"]),
        ("a.go", 'package a\nimport "fmt"\nimport (\n  j "encoding/json"\n)\n',
         ["fmt", "encoding/json"]),
        ("a.rs", "use std::io::{self, Read};\nextern crate serde;\n",
         ["std::io::{self, Read}", "serde"]),
        ("a.cpp", '#include <map>\n#include "a.hpp"\nusing namespace std;\n',
         ["map", "a.hpp", "std"]),
        ("A.cs", "using System;\nusing static System.Math;\nusing IO = System.IO;\n",
         ["System", "System.Math", "System.IO"]),
        ("a.rb", "require 'set'\nrequire_relative './util'\n", ["set", "./util"]),
        ("a.php", "<?php\nuse App\\Models\\User;\nrequire_once 'lib.php';\n",
         ["App\\Models\\User", "lib.php"]),
    ],
)  # fmt: skip
def test_file_imports_per_language(path: str, source: str, expected: list[str]) -> None:
    assert file_imports(path, source) == expected


def test_file_imports_of_an_unparsed_file_is_empty() -> None:
    assert file_imports("notes.md", "import os\n") == []


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_every_query_pattern_compiles_against_the_installed_grammar(language: str) -> None:
    good, bad = accepted_patterns(language)
    assert good and bad == []

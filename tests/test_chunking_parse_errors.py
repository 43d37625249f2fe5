"""Text a parse error swallows is still chunked: no line with a word on it is in no chunk.

tree-sitter can leave an ``ERROR`` node (or the root) whose span runs past its children, to
the end of the file: those rows belong to no node, and become module code.
"""

from __future__ import annotations

import re

import pytest

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.languages import detect_language, parser_for

SAMPLES = {
    "a.py": "import os\n\nclass Shop:\n    def add(self, item):\n        return item\n\n"
            "    def remove(self, item):\n        return None\n\ndef helper(x):\n"
            "    return x + 1\n\nVALUE = helper(2)\n",
    "a.ts": "import x from 'x';\n\nclass Shop {\n  add(item: string): string {\n"
            "    return item;\n  }\n}\n\nfunction helper(x: number): number {\n"
            "  return x + 1;\n}\n\nconst value = helper(2);\n",
    "A.java": "package a;\n\nimport java.util.List;\n\nclass Shop {\n  String add(String item) {\n"
              "    return item;\n  }\n}\n\nclass Helper {\n  int helper(int x) {\n"
              "    return x + 1;\n  }\n}\n",
    "a.go": "package a\n\nimport \"os\"\n\ntype Shop struct {\n\tname string\n}\n\n"
            "func (s *Shop) Add(item string) string {\n\treturn item\n}\n\n"
            "func Helper(x int) int {\n\treturn x + 1\n}\n\nvar Value = Helper(2)\n",
    "a.rs": "use std::io;\n\nstruct Shop {\n    name: String,\n}\n\nimpl Shop {\n"
            "    fn add(&self, item: &str) -> String {\n        item.to_string()\n    }\n}\n\n"
            "fn helper(x: i32) -> i32 {\n    x + 1\n}\n\nconst VALUE: i32 = 2;\n",
    "a.c": "#include <stdio.h>\n\nstruct shop {\n    int name;\n};\n\n"
           "int shop_add(struct shop *s, int item) {\n    return item;\n}\n\n"
           "int helper(int x) {\n    return x + 1;\n}\n\nint value = 2;\n",
    "a.kt": "package a\n\nimport b.C\n\nclass Shop {\n  fun add(item: String): String {\n"
            "    return item\n  }\n}\n\nfun helper(x: Int): Int {\n  return x + 1\n}\n\n"
            "val value = helper(2)\n",
    "a.rb": "require 'x'\n\nclass Shop\n  def add(item)\n    item\n  end\nend\n\n"
            "def helper(x)\n  x + 1\nend\n\nVALUE = helper(2)\n",
    "a.php": "<?php\nuse A\\B;\n\nclass Shop {\n  function add($item) {\n    return $item;\n"
             "  }\n}\n\nfunction helper($x) {\n  return $x + 1;\n}\n\n$value = helper(2);\n",
    "a.cs": "using System;\n\nclass Shop {\n  string Add(string item) {\n    return item;\n"
            "  }\n}\n\nclass Helper {\n  int Help(int x) {\n    return x + 1;\n  }\n}\n",
}  # fmt: skip
BREAKS = ["(", "{", "'", "/*", "def (", "class {"]


def _uncovered_word_lines(path: str, text: str) -> list[int]:
    chunks = chunk_text(path, text)
    covered = {line for c in chunks for line in range(c.start_line, c.end_line + 1)}
    return [number for number, line in enumerate(text.split("\n"), start=1)
            if re.search(r"\w", line) and number not in covered]


@pytest.mark.parametrize("path", sorted(SAMPLES))
def test_a_syntax_error_anywhere_leaves_no_line_with_a_word_out_of_every_chunk(
    path: str,
) -> None:
    lines = SAMPLES[path].split("\n")
    lost = {}
    for row in range(len(lines)):
        for broken in BREAKS:
            text = "\n".join([*lines[:row], broken, *lines[row:]])
            missing = _uncovered_word_lines(path, text)
            if missing:
                lost[(row + 1, broken)] = missing
    assert lost == {}


KOTLIN = """(
package com.example

import com.example.TypeName

public class PropertySpec {
  public val name: String = "x"

  public companion object {
    @JvmStatic public fun builder(name: String, type: TypeName): Builder =
      Builder(name, type)
  }
}
"""


def test_kotlin_root_error_node_running_past_its_children_is_module_code() -> None:
    tree = parser_for(detect_language("PropertySpec.kt") or "").parse(KOTLIN.encode())
    (error,) = tree.root_node.children  # as in kotlinpoet's ParameterSpec.kt: a root-level
    assert error.type == "ERROR"  # ERROR to the end of the file, its children on 2 lines
    assert error.end_point.row > 12 and max(c.end_point.row for c in error.children) < 2
    chunks = chunk_text("PropertySpec.kt", KOTLIN)
    assert _uncovered_word_lines("PropertySpec.kt", KOTLIN) == []
    (holder,) = [c for c in chunks if "fun builder(" in c.text]
    assert (holder.kind, holder.end_line) == ("block", 13)


def test_long_swallowed_text_is_cut_at_blank_lines_into_blocks_of_the_usual_size() -> None:
    text = KOTLIN + "".join(f'public val top{i}: String = "{i}"\n' + ("\n" if i % 20 == 19 else "")
                            for i in range(300))
    chunks = chunk_text("PropertySpec.kt", text)
    assert _uncovered_word_lines("PropertySpec.kt", text) == []
    blocks = [c for c in chunks if c.kind == "block"]
    assert len(blocks) >= 3
    assert all(c.end_line - c.start_line < 150 for c in blocks)
    lines = text.split("\n")
    assert all(not lines[c.end_line].strip() for c in blocks[:-1])  # cut at a blank line

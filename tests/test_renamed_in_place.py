"""A function or method renamed in place (the same code, the same lines, another name) is still
there: its result is ``changed`` at the definition's lines under its new name, not
``historical`` (real git histories). The rule: same kind and owner, a name the file did not
define when indexed, at least 80 % of the lines kept, a line counting as kept with the old name
replaced by the new (``core.locate.renamed_in_place``)."""

from __future__ import annotations

import pytest
from repo_builder import RepoBuilder
from search_fixtures import index, verifier
from test_verify_moves import all_chunks, chunks_of

from freshmark.core.citation import cite
from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Verdict
from freshmark.services.context.build import build_context
from freshmark.services.retrieval.search import search

TRUNCATE = '''    /// Shortens the buffer, keeping the first `len` bytes.
    ///
    /// Calls to `truncate` past the end do nothing.
    pub fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
        }
    }
'''
LEN = '''    pub fn len(&self) -> usize {
        self.len
    }
'''
STRUCT = "use std::ops::Deref;\n\npub struct Bytes {\n    len: usize,\n}\n\n"
BYTES = STRUCT + "impl Bytes {\n" + TRUNCATE + "\n" + LEN + "}\n"
TRUNCATE_LINES = (8, 15)  # doc comment and body, the same lines after the rename

PARSE = '''def parse(text):
    """Split text into lower-case words."""
    words = text.split()
    cleaned = [word.strip(".,") for word in words]
    return [word.lower() for word in cleaned if word]
'''
COUNT = "def count(text):\n    return len(text.split())\n"
WORDS_PY = "import os\n\n\n" + PARSE + "\n\n" + COUNT
WORDS_JS = '''const fs = require("fs");

function parse(text) {
  const words = text.split(" ");
  const cleaned = words.map((word) => word.trim());
  return cleaned.map((word) => word.toLowerCase());
}

module.exports = { parse };
'''
DEPTH_PY = '''def depth(tree):
    """How deep the tree goes."""
    if not tree.children:
        return 1
    return 1 + max(depth(child) for child in tree.children)
'''
# A function long enough to be split into parts (over 150 lines).
LONG_PY = "def build(values):\n    total = 0\n" + "".join(
    f"    total += values[{i}]\n" for i in range(200)) + "    return total\n"


@pytest.fixture
def lib(make_repo) -> RepoBuilder:
    return make_repo("lib")


def _renamed(repo: RepoBuilder, path: str, text: str, symbol: str, old: str,
             new: str) -> ChunkRecord:
    """Commit ``text``, take ``symbol``'s stamp, commit ``old`` replaced by ``new`` once."""
    repo.write(path, text).commit("add")
    record = chunks_of(repo, repo.head(), path)[symbol]
    repo.write(path, text.replace(old, new, 1)).commit("rename")
    return record


def test_a_rust_method_renamed_in_place_is_changed_under_its_new_name(lib):
    record = _renamed(lib, "src/bytes.rs", BYTES, "Bytes.truncate", "fn truncate(",
                      "fn truncate_to(")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == TRUNCATE_LINES
    assert result.renamed_to == "Bytes.truncate_to"
    assert "Bytes.truncate renamed to truncate_to, now at L8-L15" in result.reason
    assert "pub fn truncate_to(&mut self, len: usize) {" in (result.current_text or "")


def test_a_python_function_renamed_in_place_is_changed_under_its_new_name(lib):
    record = _renamed(lib, "words.py", WORDS_PY, "parse", "def parse(", "def tokenize(")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (4, 8)
    assert result.renamed_to == "tokenize"
    assert "parse renamed to tokenize, now at L4-L8" in result.reason


def test_a_javascript_function_renamed_in_place_is_changed_under_its_new_name(lib):
    record = _renamed(lib, "words.js", WORDS_JS, "parse", "function parse(",
                      "function tokenize(")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (3, 7)
    assert result.renamed_to == "tokenize"


def test_code_renamed_and_otherwise_untouched_is_said_to_be_as_indexed_but_for_the_name(lib):
    """A doc comment still naming the old name is a line as it was, not an edit."""
    record = _renamed(lib, "src/bytes.rs", BYTES, "Bytes.truncate", "fn truncate(",
                      "fn truncate_to(")
    assert verifier(lib).verify(record).reason.endswith(
        "its code is as indexed but for the name")


def test_a_recursive_call_renamed_with_its_function_is_the_name_not_an_edit(lib):
    lib.write("tree.py", DEPTH_PY).commit("add")
    record = chunks_of(lib, lib.head(), "tree.py")["depth"]
    lib.write("tree.py", DEPTH_PY.replace("depth(", "height(")).commit("rename, the call too")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED and result.renamed_to == "height"
    assert result.reason.endswith("its code is as indexed but for the name")


def test_a_renamed_function_with_a_line_edited_is_changed_to_be_re_read(lib):
    record = _renamed(lib, "words.py", WORDS_PY, "parse", "def parse(", "def tokenize(")
    edited = WORDS_PY.replace("def parse(", "def tokenize(").replace('strip(".,")',
                                                                     'strip(".,;")')
    lib.write("words.py", edited).commit("strip semicolons too")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED and result.renamed_to == "tokenize"
    assert result.reason.endswith("re-read before use")


def test_one_part_of_a_split_renamed_function_is_found_at_its_own_lines(lib):
    lib.write("build.py", LONG_PY).commit("build")
    second = [r for r in all_chunks(lib, lib.head(), "build.py") if r.symbol == "build"][1]
    lib.write("build.py", "\n\n" + LONG_PY.replace("def build(", "def assemble(")).commit("move")
    result = verifier(lib).verify(second)
    assert result.verdict is Verdict.CHANGED and result.renamed_to == "assemble"
    assert (result.current_start_line, result.current_end_line) == \
        (second.start_line + 2, second.end_line + 2)


def test_a_function_renamed_in_the_work_tree_is_changed_under_its_new_name(lib):
    lib.write("words.py", WORDS_PY).commit("add")
    record = chunks_of(lib, lib.head(), "words.py")["parse"]
    lib.commit("another commit")  # the stamp is older than the head
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize("))  # not committed
    result = verifier(lib, worktree=True).verify(record)
    assert result.verdict is Verdict.CHANGED and result.renamed_to == "tokenize"


def test_the_citation_of_a_renamed_definition_names_it_as_it_is_today(lib):
    record = _renamed(lib, "words.py", WORDS_PY, "parse", "def parse(", "def tokenize(")
    checker = verifier(lib)
    citation = cite(record, checker.verify(record), checker.target)
    assert citation.source == "words.py#L4-L8  (tokenize, renamed from parse)"


def test_a_default_search_serves_a_method_renamed_since_the_index(fm_home, lib):
    lib.write("src/bytes.rs", BYTES).commit("add")
    index(lib.path)
    lib.write("src/bytes.rs", BYTES.replace("fn truncate(", "fn truncate_to(")).commit("rename")
    answer = search(SearchRequest.build("Bytes truncate shortens the buffer", k=3),
                    str(lib.path), settings=Settings.from_env())
    served = {r.record.symbol: r.verification for r in answer.results}
    assert answer.hidden_historical == 0
    assert served["Bytes.truncate"].verdict is Verdict.CHANGED
    assert served["Bytes.truncate"].renamed_to == "Bytes.truncate_to"


def test_a_context_section_of_a_renamed_definition_is_labelled_by_its_name_today(fm_home, lib):
    lib.write("words.py", WORDS_PY).commit("add")
    index(lib.path)
    lib.write("words.py", WORDS_PY.replace("def parse(", "def tokenize(", 1)).commit("rename")
    slice_ = build_context(ContextRequest.build("parse", budget_tokens=4000), str(lib.path),
                           settings=Settings.from_env())
    (evidence,) = [s for s in slice_.sections if s.role == "evidence"]
    assert (evidence.symbol, evidence.start_line, evidence.end_line) == ("tokenize", 4, 8)


CLEANER = """package safety;

public class Cleaner {
    private final int limit;

    public boolean isValid(String html) {
        int count = html.length();
        return count < limit;
    }
}
"""


def test_a_method_whose_class_was_renamed_with_its_file_is_changed_under_the_new_owner(lib):
    lib.write("src/Cleaner.java", CLEANER).commit("add")
    record = chunks_of(lib, lib.head(), "src/Cleaner.java")["Cleaner.isValid"]
    lib.delete("src/Cleaner.java")
    lib.write("src/HtmlCleaner.java", CLEANER.replace("class Cleaner", "class HtmlCleaner"))
    lib.commit("rename the class and its file")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.moved_to, result.renamed_to) == ("src/HtmlCleaner.java", "HtmlCleaner.isValid")
    assert (result.current_start_line, result.current_end_line) == (6, 9)
    assert "renamed to HtmlCleaner.isValid, now at L6-L9" in result.reason


UTIL_RB = """module Thor
  module Util
    class << self
      def find_by_namespace(namespace)
        namespace = "default#{namespace}" if namespace.start_with?(":")
        Thor::Base.subclasses.detect { |klass| klass.namespace == namespace }
      end

      def snake_case(str)
        return str.downcase if str =~ /^[A-Z_]+$/
        str.gsub(/([A-Z])/) { "_#{$1}" }.downcase
      end
    end
  end
end
"""


def test_a_definition_above_a_syntax_error_is_found_by_its_lines_not_called_gone(lib):
    lib.write("lib/thor/util.rb", UTIL_RB).commit("add")
    records = chunks_of(lib, lib.head(), "lib/thor/util.rb")
    record = next(r for name, r in records.items() if name.endswith("find_by_namespace"))
    broken = UTIL_RB.replace("downcase\n      end\n", "downcase\n", 1)  # snake_case's end
    lib.write("lib/thor/util.rb", broken).commit("a syntax error")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED, result.reason
    assert "does not parse" in result.reason
    assert (result.current_start_line, result.current_end_line) == (4, 7)


def test_a_definition_edited_in_a_file_that_no_longer_parses_is_unverifiable(lib):
    lib.write("lib/thor/util.rb", UTIL_RB).commit("add")
    records = chunks_of(lib, lib.head(), "lib/thor/util.rb")
    record = next(r for name, r in records.items() if name.endswith("find_by_namespace"))
    broken = UTIL_RB.replace("downcase\n      end\n", "downcase\n", 1).replace(
        "klass.namespace == namespace", "klass.namespace == namespace.to_s", 1)
    lib.write("lib/thor/util.rb", broken).commit("an edit and a syntax error")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.UNVERIFIABLE
    assert "does not parse" in result.reason


EXC_PY = '''class BadData(Exception):
    """Raised if bad data of any sort was encountered."""


class BadHeader(BadData):
    """Raised if a signed header is invalid in some form.

    This only happens for serializers that have a header that goes with the signature.
    """

    def __init__(self, message, payload=None, header=None, original_error=None):
        super().__init__(message)
        self.header = header
        self.original_error = original_error
'''


def test_a_class_renamed_in_place_is_changed_under_its_new_name(lib):
    record = _renamed(lib, "exc.py", EXC_PY, "BadHeader", "class BadHeader(",
                      "class BadHeaderError(")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED, result.reason
    assert result.renamed_to == "BadHeaderError"
    assert (result.current_start_line, result.current_end_line) == (5, 14)


# -- guards: code really gone stays historical ---------------------------------------------------
def test_a_function_deleted_while_another_is_added_stays_historical(lib):
    """A guard: a new name with other code is not where the old code went."""
    record = _renamed(lib, "words.py", WORDS_PY, "parse", PARSE,
                      "def tokenize(text):\n    return text.split()\n")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert "symbol parse no longer exists" in result.reason


def test_a_deleted_function_whose_copy_the_file_already_had_stays_historical(lib):
    """A guard: a name the file defined when indexed was not made by renaming this one."""
    with_copy = WORDS_PY + "\n\n" + PARSE.replace("def parse(", "def split_words(")
    record = _renamed(lib, "words.py", with_copy, "parse", PARSE + "\n\n", "")
    assert verifier(lib).verify(record).verdict is Verdict.HISTORICAL


def test_a_method_deleted_while_another_type_gains_its_code_stays_historical(lib):
    """A guard: a rename in place keeps its owner; another type's method is a move."""
    lib.write("src/bytes.rs", BYTES).commit("add")
    record = chunks_of(lib, lib.head(), "src/bytes.rs")["Bytes.truncate"]
    moved = STRUCT + "impl Bytes {\n" + LEN + "}\n\nimpl Buffer {\n" + \
        TRUNCATE.replace("fn truncate(", "fn cut(") + "}\n"
    lib.write("src/bytes.rs", moved).commit("truncate is Buffer::cut now")
    assert "Buffer.cut" in chunks_of(lib, lib.head(), "src/bytes.rs")
    assert verifier(lib).verify(record).verdict is Verdict.HISTORICAL

"""Location is verified too (SPEC §10) and live code is never called historical.

Real git histories: a file moved with ``git mv``, moved and edited, deleted for good, a
function moved into another file; and in a file that changed, an overloaded function, a
property's setter, a function moved under an ``if`` and module-level blocks whose positional
names shifted.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from repo_builder import RepoBuilder
from search_fixtures import index, verifier

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.chunking import chunk_text, detect_language
from freshmark.core.citation import cite
from freshmark.core.request import ContextRequest, SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.core.verdicts import Verdict
from freshmark.services.context.build import build_context
from freshmark.services.listed_files import verify_file_hash
from freshmark.services.retrieval.search import search

PROVIDER = "src/flask/json/provider.py"
PROVIDERS = "src/flask/json/providers.py"
PROVIDER_V1 = '''"""JSON providers."""
import json


class DefaultJSONProvider:
    """Serialize with the standard library."""

    sort_keys = True

    def dumps(self, obj, **kwargs):
        kwargs.setdefault("default", _default)
        return json.dumps(obj, **kwargs)


def _default(o):
    if hasattr(o, "__html__"):
        return str(o.__html__())
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
'''


def chunks_of(repo: RepoBuilder, commit: str, path: str) -> dict[str, ChunkRecord]:
    """The stamps the indexer gives every chunk of ``path`` at ``commit``, by symbol (the
    last chunk of a repeated name wins; ``all_chunks`` keeps them all)."""
    return {record.symbol: record for record in all_chunks(repo, commit, path)}


def all_chunks(repo: RepoBuilder, commit: str, path: str) -> list[ChunkRecord]:
    git_repo = GitRepo.open(repo.path)
    blob = git_repo.blob_at(commit, path)
    assert blob is not None
    data = git_repo.read_blob(blob)
    return [ChunkRecord(repo.path.name, "main", commit, path, chunk.symbol, chunk.start_line,
                        chunk.end_line, "2026-03-11T10:00:00Z", blob,
                        hashlib.sha256(data).hexdigest(), kind=chunk.kind, language="python",
                        text=chunk.text)
            for chunk in chunk_text(path, data.decode())]


@pytest.fixture
def flask(make_repo) -> RepoBuilder:
    repo = make_repo("flask")
    repo.write(PROVIDER, PROVIDER_V1).write("src/flask/app.py", "def run():\n    pass\n")
    repo.commit("initial")
    return repo


def test_a_pure_git_mv_is_older_identical_with_the_new_path(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.rename(PROVIDER, PROVIDERS).commit("rename the module")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.OLDER_IDENTICAL and result.safe
    assert result.moved_to == PROVIDERS
    assert (result.current_start_line, result.current_end_line) == \
        (record.start_line, record.end_line)
    assert f"moved from {PROVIDER} to {PROVIDERS}" in result.reason


def test_a_moved_files_citation_names_the_new_path_and_where_it_came_from(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["DefaultJSONProvider.dumps"]
    flask.rename(PROVIDER, PROVIDERS).commit("rename the module")
    check = verifier(flask)
    lines = cite(record, check.verify(record), check.target).lines()
    assert lines[0] == (f"source:  {PROVIDERS}#L{record.start_line}-L{record.end_line}  "
                        "(DefaultJSONProvider.dumps)")
    assert lines[2].startswith(f"check:   older but identical: moved from {PROVIDER} to "
                               f"{PROVIDERS}")


def test_a_moved_and_edited_file_is_changed_at_its_new_path_with_todays_lines(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.rename(PROVIDER, PROVIDERS)
    edited = PROVIDER_V1.replace('"""JSON providers."""\n',
                                 '"""JSON providers."""\nimport typing as t\n')
    flask.write(PROVIDERS, edited).commit("rename the module and type it")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.CHANGED and result.moved_to == PROVIDERS
    assert (result.current_start_line, result.current_end_line) == \
        (record.start_line + 1, record.end_line + 1)
    assert result.current_text is not None and result.current_text.startswith("def _default(o)")


def test_a_symbol_moved_into_another_file_is_changed_there(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    helper = PROVIDER_V1[PROVIDER_V1.index("def _default"):]
    flask.delete(PROVIDER)
    flask.write("src/flask/app.py", "def run():\n    pass\n\n\n" + helper)
    flask.write("src/flask/json/other.py", "def unrelated():\n    return 1\n")
    flask.commit("fold the provider into the app")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.CHANGED and result.moved_to == "src/flask/app.py"
    assert (result.current_start_line, result.current_end_line) == (5, 8)


def test_a_symbol_moved_into_another_file_while_its_own_file_stays_is_changed_there(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    helper = PROVIDER_V1[PROVIDER_V1.index("def _default"):]
    flask.write(PROVIDER, PROVIDER_V1.replace(helper, ""))
    flask.write("src/flask/app.py", "def run():\n    pass\n\n\n" + helper)
    flask.commit("move the helper into the app")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.CHANGED and result.moved_to == "src/flask/app.py"
    assert (result.current_start_line, result.current_end_line) == (5, 8)
    assert f"_default moved from {PROVIDER} to src/flask/app.py" in result.reason


def test_a_symbol_removed_from_a_file_that_stays_is_historical_when_no_file_holds_it(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    helper = PROVIDER_V1[PROVIDER_V1.index("def _default"):]
    flask.write(PROVIDER, PROVIDER_V1.replace(helper, ""))
    flask.write("src/flask/app.py", "def run():\n    pass\n\n\ndef _default(o):\n"
                                    "    return repr(o)\n")
    flask.commit("drop the helper, add an unrelated namesake")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.HISTORICAL and result.moved_to is None


def test_a_namesake_in_another_file_is_not_where_a_deleted_symbol_went(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.delete(PROVIDER)
    flask.write("src/flask/app.py", "def run():\n    pass\n\n\ndef _default(o):\n"
                                    "    return repr(o)\n")
    flask.commit("drop the provider, add an unrelated helper")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.HISTORICAL and result.moved_to is None


def test_a_really_deleted_file_stays_historical_beside_unrelated_new_files(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["DefaultJSONProvider"]
    flask.delete(PROVIDER).write("src/flask/json/tag.py", "class TaggedJSON:\n    pass\n")
    flask.commit("drop the provider")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.HISTORICAL and result.moved_to is None
    assert "deleted or renamed since indexing" in result.reason


def test_a_moved_file_whose_symbol_is_gone_is_historical_and_says_where_it_went(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.rename(PROVIDER, PROVIDERS)
    flask.write(PROVIDERS, PROVIDER_V1[:PROVIDER_V1.index("def _default")]).commit("trim")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.HISTORICAL
    assert f"file renamed to {PROVIDERS}" in result.reason


LICENCE = "".join(f"# Licence line {number} of the project's header.\n" for number in range(10))
LOAD_PY = LICENCE + "\nimport os\n\n\ndef load_average():\n    return os.getloadavg()\n"
UID_PY = LICENCE + "\nimport uuid\n\n\ndef uid(length):\n    value = uuid.uuid4().hex\n" \
    "    return value[:length]\n"


def test_a_deleted_file_is_not_moved_into_another_deleted_file_s_new_name(flask):
    # load.py shares its header with unique_id.py, but uid.py keeps more of it: git's pairing.
    flask.write("src/flask/load.py", LOAD_PY).write("src/flask/uid.py", UID_PY)
    indexed = flask.commit("processors")
    record = chunks_of(flask, indexed, "src/flask/load.py")["<module>"]
    flask.delete("src/flask/load.py").rename("src/flask/uid.py", "src/flask/unique_id.py")
    flask.write("src/flask/unique_id.py", UID_PY.replace("[:length]", "[:length or 8]"))
    flask.commit("drop load, rename uid")
    result = verifier(flask).verify(record)
    assert result.verdict is Verdict.HISTORICAL and result.moved_to is None


def test_an_uncommitted_git_mv_is_served_with_its_new_path(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.rename(PROVIDER, PROVIDERS)
    result = verifier(flask, worktree=True).verify(record)
    assert result.verdict is Verdict.CURRENT and result.moved_to == PROVIDERS


def test_an_uncommitted_git_mv_with_an_edit_is_changed_at_its_new_path(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    flask.rename(PROVIDER, PROVIDERS)
    flask.write(PROVIDERS, PROVIDER_V1.replace('    sort_keys = True\n', '    sort_keys = True\n'
                                               '    ensure_ascii = True\n'))
    result = verifier(flask, worktree=True).verify(record)
    assert (result.verdict, result.moved_to) == (Verdict.CHANGED, PROVIDERS)
    assert (result.current_start_line, result.current_end_line) == (
        record.start_line + 1, record.end_line + 1)
    assert "in the work tree (uncommitted)" in result.reason


def test_a_file_deleted_in_the_work_tree_beside_an_unrelated_new_one_stays_historical(flask):
    record = chunks_of(flask, flask.head(), PROVIDER)["_default"]
    (flask.path / PROVIDER).unlink()
    flask.write("src/flask/json/tag.py", "def tag(value):\n    return value\n")
    result = verifier(flask, worktree=True).verify(record)
    assert result.verdict is Verdict.HISTORICAL and result.moved_to is None


def test_a_listed_file_moved_by_an_uncommitted_git_mv_is_judged_at_its_new_path(flask):
    listed = hashlib.sha256((flask.path / PROVIDER).read_bytes()).hexdigest()[:12]
    flask.rename(PROVIDER, PROVIDERS)
    result = verify_file_hash(verifier(flask, worktree=True), PROVIDER, listed)
    assert result.verdict is Verdict.OLDER_IDENTICAL and result.moved_to == PROVIDERS
    assert "in the work tree (uncommitted)" in result.reason


# -- a symbol that still exists is never historical ----------------------------------------------
OVERLOADS = '''from typing import overload


@overload
def coerce(value: int) -> int: ...
@overload
def coerce(value: str) -> str: ...
def coerce(value):
    return value
'''

PROPERTY = '''class Box:
    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        self._size = value
'''

GUARDED = '''import os


def spawn():
    return os.fork()
'''

BLOCKS = '''import os

LIMIT = 10


def first():
    return 1


CACHE = {}
NAMES = ["a", "b"]


def second():
    return 2


__all__ = ["first", "second"]
'''


@pytest.fixture
def lib(make_repo) -> RepoBuilder:
    return make_repo("lib")


def test_an_overloaded_functions_implementation_is_located_at_its_own_lines(lib):
    lib.write("lib.py", OVERLOADS).commit("coerce")
    implementation = all_chunks(lib, lib.head(), "lib.py")[-1]
    assert (implementation.symbol, implementation.start_line) == ("coerce", 8)
    lib.write("lib.py", "import sys\n" + OVERLOADS).commit("import sys")
    result = verifier(lib).verify(implementation)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (9, 10)


def test_a_property_setter_is_located_at_the_setter_not_the_getter(lib):
    lib.write("box.py", PROPERTY).commit("box")
    setter = [r for r in all_chunks(lib, lib.head(), "box.py") if r.symbol == "Box.size"][-1]
    lib.write("box.py", '"""Boxes."""\n' + PROPERTY).commit("doc")
    result = verifier(lib).verify(setter)
    assert result.verdict is Verdict.CHANGED
    assert result.current_text is not None and "self._size = value" in result.current_text


def test_a_function_moved_under_an_if_still_exists(lib):
    lib.write("proc.py", GUARDED).commit("spawn")
    record = chunks_of(lib, lib.head(), "proc.py")["spawn"]
    guarded = GUARDED.replace("def spawn():\n    return os.fork()\n",
                              "if hasattr(os, 'fork'):\n    def spawn():\n"
                              "        return os.fork()\n")
    lib.write("proc.py", guarded).commit("only where fork exists")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.CHANGED
    assert (result.current_start_line, result.current_end_line) == (5, 6)


def test_a_module_block_whose_positional_name_shifted_is_found_by_its_lines(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    records = chunks_of(lib, lib.head(), "blocks.py")
    assert records["<module>#2"].text.startswith("CACHE = {}")
    without_first = BLOCKS.replace("LIMIT = 10\n\n\n", "").replace("import os\n\n", "")
    lib.write("blocks.py", without_first.replace('"b"]', '"b", "c"]')).commit("drop LIMIT")
    check = verifier(lib)
    cache = check.verify(records["<module>#2"])
    assert cache.verdict is Verdict.CHANGED and cache.current_text is not None
    assert cache.current_text.startswith("CACHE = {}")
    exported = check.verify(records["<module>#3"])
    assert exported.verdict is Verdict.CHANGED
    assert exported.current_text == '__all__ = ["first", "second"]\n'


def test_a_module_block_whose_lines_are_gone_is_historical(lib):
    lib.write("blocks.py", BLOCKS).commit("blocks")
    record = chunks_of(lib, lib.head(), "blocks.py")["<module>#2"]
    lib.write("blocks.py", BLOCKS.replace('CACHE = {}\nNAMES = ["a", "b"]\n', "")).commit("drop")
    result = verifier(lib).verify(record)
    assert result.verdict is Verdict.HISTORICAL


# -- served by a default search ------------------------------------------------------------------
def test_a_default_search_serves_code_whose_file_was_moved_since_indexing(fm_home, flask):
    index(flask.path)
    flask.rename(PROVIDER, PROVIDERS).commit("rename the module")
    response = search(SearchRequest.build("customize JSON serialization default", k=10),
                      str(flask.path), settings=Settings.from_env()).to_dict()
    found = {r["symbol"]: r for r in response["results"]}
    assert {"DefaultJSONProvider", "_default"} <= set(found)
    moved = found["_default"]
    assert moved["verdict"] == "older_identical" and moved["moved_to"] == PROVIDERS
    assert moved["path"] == PROVIDER  # the stamp stays as indexed; moved_to says where it is
    assert moved["citation"].startswith(f"source:  {PROVIDERS}#L")


def test_a_context_slice_reads_moved_evidence_at_its_new_path(fm_home, flask):
    index(flask.path)
    flask.rename(PROVIDER, PROVIDERS).commit("rename the module")
    slice_ = build_context(ContextRequest.build("_default JSON serializable", level="L1"),
                           str(flask.path), settings=Settings.from_env())
    evidence = [s for s in slice_.sections if s.role == "evidence"]
    assert evidence and evidence[0].path == PROVIDERS
    assert "def _default(o):" in evidence[0].body


PRINTER = '''package shop;

public class Printer {
  /** Prints a value as text. */
  public String print(Object value) {
    return print(value, value.getClass());
  }

  /** Prints a value of the given type. */
  public String print(Object value, Class<?> type) {
    StringBuilder out = new StringBuilder();
    out.append(type.getName()).append(':').append(value);
    return out.toString();
  }

  /** Prints a value to a writer. */
  public void print(Object value, java.io.Writer writer) throws java.io.IOException {
    writer.write(print(value, value.getClass()));
    writer.flush();
  }
}
'''
FIRST_OVERLOAD = '''  /** Prints a value as text. */
  public String print(Object value) {
    return print(value, value.getClass());
  }

'''


def signed_chunks(repo: RepoBuilder, path: str) -> list[ChunkRecord]:
    """The indexer's stamps of ``path`` at the head, signatures included."""
    git_repo = GitRepo.open(repo.path)
    blob = git_repo.blob_at(repo.head(), path)
    assert blob is not None
    data = git_repo.read_blob(blob)
    return [ChunkRecord(repo.path.name, "main", repo.head(), path, chunk.symbol,
                        chunk.start_line, chunk.end_line, "2026-03-11T10:00:00Z", blob,
                        hashlib.sha256(data).hexdigest(), kind=chunk.kind,
                        language=detect_language(path) or "", signature=chunk.signature,
                        text=chunk.text)
            for chunk in chunk_text(path, data.decode())]


def overloads(repo: RepoBuilder) -> dict[str, ChunkRecord]:
    return {r.signature: r for r in signed_chunks(repo, "Printer.java")
            if r.symbol == "Printer.print"}


def test_a_removed_overload_is_historical_not_another_overload(lib):
    lib.write("Printer.java", PRINTER).commit("printer")
    records = overloads(lib)
    lib.write("Printer.java", PRINTER.replace(FIRST_OVERLOAD, "")).commit("drop print(Object)")
    check = verifier(lib)
    removed = check.verify(records["public String print(Object value)"])
    assert removed.verdict is Verdict.HISTORICAL
    typed = check.verify(records["public String print(Object value, Class<?> type)"])
    assert typed.verdict is Verdict.CHANGED and typed.current_text is not None
    assert "Class<?> type" in typed.current_text and typed.current_start_line == 4


def test_an_overload_whose_body_changed_is_found_by_its_signature_not_by_place(lib):
    lib.write("Printer.java", PRINTER).commit("printer")
    writer = overloads(lib)[
        "public void print(Object value, java.io.Writer writer) throws java.io.IOException"]
    head, rest = PRINTER.split(FIRST_OVERLOAD)
    typed, written = rest.split("  /** Prints a value to a writer. */\n")
    moved_up = head + "  /** Prints a value to a writer. */\n" + \
        written.replace("    writer.flush();\n", "").replace("}\n}\n", "}\n\n") + typed + "}\n"
    lib.write("Printer.java", moved_up).commit("writer first, no flush, no print(Object)")
    assert moved_up.index("java.io.Writer writer") < moved_up.index("Class<?> type")
    result = verifier(lib).verify(writer)
    assert result.verdict is Verdict.CHANGED and result.current_text is not None
    assert "java.io.Writer writer" in result.current_text and "flush" not in result.current_text


BASE = '''module Sinatra
  class Base
    def self.settings
      self
    end

    def settings
      self.class.settings
    end
  end
end
'''


def test_a_removed_instance_method_is_historical_while_its_class_method_twin_remains(lib):
    lib.write("base.rb", BASE).commit("base")
    records = [r for r in signed_chunks(lib, "base.rb") if r.symbol.endswith("settings")]
    instance = next(r for r in records if "self." not in r.signature)
    lib.write("base.rb", BASE.replace(
        "\n    def settings\n      self.class.settings\n    end\n", "")).commit("drop #settings")
    result = verifier(lib).verify(instance)
    assert result.verdict is Verdict.HISTORICAL
    assert "this definition of" in result.reason and "1 other remains (L3)" in result.reason


def test_the_class_method_twin_is_found_when_the_instance_method_is_removed(lib):
    lib.write("base.rb", BASE).commit("base")
    records = [r for r in signed_chunks(lib, "base.rb") if r.symbol.endswith("settings")]
    twin = next(r for r in records if "self." in r.signature)
    lib.write("base.rb", BASE.replace(
        "\n    def settings\n      self.class.settings\n    end\n", "")).commit("drop #settings")
    result = verifier(lib).verify(twin)
    assert result.verdict is Verdict.CHANGED and result.current_start_line == 3


def test_a_definition_untouched_in_a_changed_file_says_its_code_is_as_indexed(lib):
    lib.write("Printer.java", PRINTER).commit("printer")
    records = overloads(lib)
    lib.write("Printer.java", PRINTER.replace(FIRST_OVERLOAD, "")
              .replace("    writer.flush();\n", "")).commit("drop one, edit one")
    check = verifier(lib)
    typed = check.verify(records["public String print(Object value, Class<?> type)"])
    assert typed.verdict is Verdict.CHANGED and typed.reason.endswith("its code is as indexed")
    writer = check.verify(records[
        "public void print(Object value, java.io.Writer writer) throws java.io.IOException"])
    assert writer.verdict is Verdict.CHANGED and writer.reason.endswith("re-read before use")


def test_a_crlf_definition_untouched_in_a_changed_file_says_its_code_is_as_indexed(lib):
    source = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"
    (lib.path / "crlf.py").write_bytes(source.replace("\n", "\r\n").encode())
    lib.commit("crlf")
    (second,) = [r for r in signed_chunks(lib, "crlf.py") if r.symbol == "second"]
    edited = "# a comment above\n" + source
    (lib.path / "crlf.py").write_bytes(edited.replace("\n", "\r\n").encode())
    lib.commit("comment")
    result = verifier(lib).verify(second)
    assert result.verdict is Verdict.CHANGED and result.reason.endswith("its code is as indexed")
    assert result.current_text == second.text + "\n"


def test_a_form_feed_is_no_line_end_for_the_current_lines(lib):
    lib.write("paged.py", "def first():\n    return 1\n\x0c\n\ndef second():\n    return 2\n")
    lib.commit("paged")
    (second,) = [r for r in signed_chunks(lib, "paged.py") if r.symbol == "second"]
    lib.write("paged.py", "import os\n" + "def first():\n    return 1\n\x0c\n\ndef second():\n"
              "    return 2\n").commit("import")
    result = verifier(lib).verify(second)
    assert (result.current_start_line, result.current_end_line) == (6, 7)
    assert result.current_text == "def second():\n    return 2\n"


TRUST_SWIFT = '''extension AlamofireExtension where ExtendedType == SecTrustResultType {
    public var isSuccess: Bool {
        type == .unspecified || type == .proceed
    }
}

extension AlamofireExtension where ExtendedType == OSStatus {
    public var isSuccess: Bool {
        type == errSecSuccess
    }
}
'''


def test_of_two_definitions_with_one_signature_the_edited_one_is_found_where_it_went(make_repo):
    repo = make_repo("alamofire")
    repo.write("Trust.swift", TRUST_SWIFT).commit("trust")
    (status,) = [replace(r, signature="public var isSuccess: Bool")
                 for r in all_chunks(repo, repo.head(), "Trust.swift")
                 if r.symbol == "AlamofireExtension.isSuccess" and "errSecSuccess" in r.text]
    first, second = TRUST_SWIFT.split("\n\n")
    swapped = second.replace("type == errSecSuccess", "type == errSecSuccess || type == noErr")
    repo.write("Trust.swift", swapped + "\n\n" + first).commit("swap and widen")
    result = verifier(repo).verify(status)
    assert result.verdict is Verdict.CHANGED
    assert "noErr" in (result.current_text or "")


CLIENT_RB = '''class Client
  def push(item)
    normed = normalize_item(item)
    raw_push([normed])
  end

  class << self
    def push(item)
      new.push(item)
    end
  end
end
'''


def test_a_deleted_ruby_method_is_not_found_in_its_self_twin(make_repo):
    repo = make_repo("sidekiq")
    repo.write("lib/client.rb", CLIENT_RB).commit("client")
    (instance,) = [replace(r, signature="def push(item)")
                   for r in all_chunks(repo, repo.head(), "lib/client.rb")
                   if r.symbol == "Client.push" and "normed" in r.text]
    repo.write("lib/client.rb", CLIENT_RB.replace(
        "  def push(item)\n    normed = normalize_item(item)\n    raw_push([normed])\n  end\n\n",
        "")).commit("drop the instance push")
    assert verifier(repo).verify(instance).verdict is Verdict.HISTORICAL

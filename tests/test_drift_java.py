"""Dependency drift in Java: what a class's change means for the code naming it, and which
files a class sees without an import; on real git histories and a real index."""

from __future__ import annotations

from search_fixtures import index

from freshmark.core.chunking import file_symbols
from freshmark.core.drift import MAX_FILES_PER_RESULT, definition_texts, imported_paths
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.stamp import ChunkRecord
from freshmark.services.retrieval.search import search

MAIN = "src/main/java/org/apache/commons/cli"
PARSER = '''package org.apache.commons.cli;

public class DefaultParser {

    protected String prefix = "-";

    static int indexOfEqual(final String token) {
        return token.indexOf('=');
    }

    private boolean isNegativeNumber(final String token) {
        try {
            Double.parseDouble(token);
            return true;
        } catch (final NumberFormatException e) {
            return false;
        }
    }
}
'''
GNU = '''package org.apache.commons.cli;

public class GnuParser {

    protected String[] flatten(final String[] arguments) {
        final int pos = DefaultParser.indexOfEqual(arguments[0]);
        return new String[] {arguments[0].substring(0, pos)};
    }
}
'''


def drift_of(repo_path, query: str, symbol: str) -> list[tuple[str, str]]:
    response = search(SearchRequest.build(query, k=10), str(repo_path),
                      settings=Settings.from_env()).to_dict()
    result = next(r for r in response["results"] if r["symbol"] == symbol)
    assert result["verdict"] == "older_identical"
    return [(note["symbol"], note["change"]) for note in result.get("drift") or []]


def _parsers(make_repo):
    repo = make_repo("cli")
    repo.write(f"{MAIN}/DefaultParser.java", PARSER).write(f"{MAIN}/GnuParser.java", GNU)
    repo.commit("parsers")
    index(repo.path)
    return repo


def test_a_change_inside_a_method_it_does_not_call_is_no_drift_of_its_class(fm_home, make_repo):
    repo = _parsers(make_repo)
    repo.write(f"{MAIN}/DefaultParser.java",
               PARSER.replace("parseDouble(token)", "parseDouble(token.trim())"))
    repo.commit("trim a negative number")
    assert drift_of(repo.path, "GnuParser flatten", "GnuParser.flatten") == []


def test_a_change_inside_the_method_it_calls_is_that_methods_drift(fm_home, make_repo):
    repo = _parsers(make_repo)
    repo.write(f"{MAIN}/DefaultParser.java", PARSER.replace("indexOf('=')", "indexOf(':')"))
    repo.commit("a colon")
    assert drift_of(repo.path, "GnuParser flatten", "GnuParser.flatten") == [
        ("DefaultParser.indexOfEqual", "changed")]


def test_a_change_of_the_class_outside_its_methods_is_its_classs_drift(fm_home, make_repo):
    repo = _parsers(make_repo)
    repo.write(f"{MAIN}/DefaultParser.java", PARSER.replace('prefix = "-"', 'prefix = "--"'))
    repo.commit("a long prefix")
    assert drift_of(repo.path, "GnuParser flatten", "GnuParser.flatten") == [
        ("DefaultParser", "changed")]


OVERLOADS = '''public class Options {

    public Options add(String name) {
        return add(name, false);
    }

    public Options add(String name, boolean required) {
        return this;
    }
}
'''


def test_an_edit_in_a_later_overload_changes_its_name_and_not_its_class():
    before = definition_texts(file_symbols("Options.java", OVERLOADS))
    after = definition_texts(file_symbols("Options.java",
                                          OVERLOADS.replace("return this;", "return null;")))
    assert before["Options.add"] != after["Options.add"]
    assert before["Options"] == after["Options"]


TEST = "src/test/java/org/apache/commons/cli"
BASIC_TEST = '''package org.apache.commons.cli;

public class BasicParserTest {

    private Parser parser;

    public void setUp() {
        parser = new BasicParser();
    }
}
'''


def test_a_test_drifts_when_the_main_class_of_its_package_is_deleted(fm_home, make_repo):
    repo = make_repo("cli")
    repo.write(f"{MAIN}/BasicParser.java",
               "package org.apache.commons.cli;\n\npublic class BasicParser {\n}\n")
    repo.write(f"{TEST}/BasicParserTest.java", BASIC_TEST)
    repo.commit("basic parser")
    index(repo.path)
    repo.delete(f"{MAIN}/BasicParser.java").commit("drop the basic parser")
    assert drift_of(repo.path, "BasicParserTest setUp", "BasicParserTest.setUp") == [
        ("BasicParser", "vanished")]


def test_the_files_of_the_classes_it_names_are_looked_at_first_in_a_busy_package():
    setup = ChunkRecord(repo="r", branch="main", commit="c" * 40,
                        path=f"{TEST}/TypeHandlerTest.java", symbol="TypeHandlerTest.setUp",
                        start_line=1, end_line=2, indexed_at="x", blob_sha="b" * 40,
                        content_sha256="s" * 64, references=["TypeHandler", "createValue"])
    changed = [f"{MAIN}/A{n}.java" for n in range(MAX_FILES_PER_RESULT)] + [
        f"{MAIN}/TypeHandler.java"]
    assert imported_paths(setup, changed)[0] == f"{MAIN}/TypeHandler.java"


def test_a_class_moved_unchanged_to_another_directory_is_no_drift(fm_home, make_repo):
    repo = _parsers(make_repo)  # javapoet's ArrayTypeName.java moved into types/ by git mv
    repo.rename(f"{MAIN}/DefaultParser.java", f"{MAIN}/parsers/DefaultParser.java")
    repo.commit("move the default parser")
    assert drift_of(repo.path, "GnuParser flatten", "GnuParser.flatten") == []


def test_a_method_edited_in_a_moved_class_is_changed_at_its_new_path(fm_home, make_repo):
    repo = _parsers(make_repo)
    repo.delete(f"{MAIN}/DefaultParser.java")
    repo.write(f"{MAIN}/parsers/DefaultParser.java", PARSER.replace("indexOf('=')", "indexOf(':')"))
    repo.commit("move the default parser, a colon")
    response = search(SearchRequest.build("GnuParser flatten", k=10), str(repo.path),
                      settings=Settings.from_env()).to_dict()
    result = next(r for r in response["results"] if r["symbol"] == "GnuParser.flatten")
    assert [(n["symbol"], n["path"], n["change"]) for n in result["drift"]] == [
        ("DefaultParser.indexOfEqual", f"{MAIN}/parsers/DefaultParser.java", "changed")]

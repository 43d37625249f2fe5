"""Java and Kotlin callers in the context graph: a member imported from its class (Java's
``import static``) is what a bare call of its name runs."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project

from freshmark.core.stamp import ChunkRecord
from freshmark.services.context.symbol_graph import SymbolGraph

POET = "src/main/java/com/squareup/javapoet"
UTIL = '''package com.squareup.javapoet;

final class Util {
  static <T> T checkNotNull(T reference, String format) {
    if (reference == null) throw new NullPointerException(format);
    return reference;
  }
}
'''
CHECKS = '''package com.squareup.javapoet.writer;

final class Checks {
  static <T> T checkNotNull(T reference, String format) {
    return reference;
  }
}
'''


def _writer(package: str, imported: str) -> str:
    return f'''package {package};

import {imported};

public final class CodeWriter {{
  private final String indent;

  public CodeWriter(String indent) {{
    this.indent = checkNotNull(indent, "indent == null");
  }}
}}
'''


# javapoet's CodeWriter.emit calls stringLiteralWithDoubleQuotes, imported static from Util;
# a class in another package may import every static member of Util.
@pytest.mark.parametrize(("path", "package", "imported"), [
    (f"{POET}/CodeWriter.java", "com.squareup.javapoet",
     "static com.squareup.javapoet.Util.checkNotNull"),
    (f"{POET}/writer/CodeWriter.java", "com.squareup.javapoet.writer",
     "static com.squareup.javapoet.Util.*"),
], ids=["the member", "all members"])
def test_a_bare_call_of_a_method_imported_static_from_its_class_is_graph_confirmed(
        fm_home, make_repo, path, package, imported):
    repo = indexed_project(make_repo("poet"), {
        f"{POET}/Util.java": UTIL, path: _writer(package, imported)}, package="tools")
    assert callers_in_slice(str(repo.path), "Util.checkNotNull") == {
        "CodeWriter.CodeWriter": "high"}


def test_a_static_import_confirms_its_classs_member_and_not_a_namesake_in_the_package(
        fm_home, make_repo):
    repo = indexed_project(make_repo("poet"), {
        f"{POET}/Util.java": UTIL,
        f"{POET}/writer/Checks.java": CHECKS,
        f"{POET}/writer/CodeWriter.java": _writer(
            "com.squareup.javapoet.writer", "static com.squareup.javapoet.Util.checkNotNull")},
        package="tools")
    assert callers_in_slice(str(repo.path), "Util.checkNotNull") == {
        "CodeWriter.CodeWriter": "high"}
    assert callers_in_slice(str(repo.path), "Checks.checkNotNull") == {
        "CodeWriter.CodeWriter": "medium"}


def _kotlin(path: str, symbol: str, imports: tuple[str, ...] = (),
            references: tuple[str, ...] = ()) -> ChunkRecord:
    return ChunkRecord(repo="r", branch="main", commit="c" * 40, path=path, symbol=symbol,
                       start_line=1, end_line=5, indexed_at="2026-01-01T00:00:00Z",
                       blob_sha="b" * 40, content_sha256="s" * 64, kind="method",
                       id=f"{path}:{symbol}", imports=list(imports),
                       references=list(references), language="kotlin")


def test_a_kotlin_bare_call_of_an_object_member_it_imports_by_name_is_confirmed():
    util = "src/main/kotlin/okio/util/Util.kt"
    graph = SymbolGraph([
        _kotlin(util, "Util.checkNotNull"),
        _kotlin("src/main/kotlin/okio/Buffer.kt", "Buffer.read",
                imports=("okio.util.Util.checkNotNull",), references=("checkNotNull",)),
    ])
    assert [(e.caller, e.confirmed) for e in graph.callers(f"{util}:Util.checkNotNull")] == [
        ("src/main/kotlin/okio/Buffer.kt:Buffer.read", True)]

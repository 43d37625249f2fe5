"""Overloads are definitions of their own: a caller is the overload that calls, two overloads
are two sections (and two [LEFT OUT] lines at most once each), a signature digest lists each,
and the L3 walk starts from the overload the slice is about."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

PATH = "src/main/java/poet/CodeWriter.java"
CODE_WRITER = """package poet;

public class CodeWriter {
  public CodeWriter emit(String s) {
    return emitAndIndent(s);
  }

  public CodeWriter emit(CodeBlock codeBlock, boolean ensureTrailingNewline) {
    for (Object o : codeBlock.args) {
      emitLiteral(o);
    }
    return emitAndIndent(ensureTrailingNewline ? "\\n" : "");
  }

  private void emitLiteral(Object o) {
    emitAndIndent(String.valueOf(o));
  }

  CodeWriter emitAndIndent(String s) {
    return this;
  }
}
"""
FIRST, SECOND = (4, 6), (8, 13)


def slice_for(repo_path, query: str, level: str = "L1", budget: int | None = None):
    return build_context(ContextRequest.build(query, level=level, budget_tokens=budget),
                         str(repo_path), settings=Settings.from_env())


def code_writer(make_repo):
    return indexed_project(make_repo("poet"), {PATH: CODE_WRITER}, package="poet")


def callers(slice_) -> list[tuple[str, int, int, str]]:
    return [(s.symbol, s.start_line, s.end_line, s.body) for s in slice_.sections
            if s.role == "caller"]


def test_a_direct_caller_is_the_overload_that_calls(fm_home, make_repo):
    repo = code_writer(make_repo)
    assert callers(slice_for(repo.path, "CodeWriter.emitLiteral")) == [
        ("CodeWriter.emit", *SECOND,
         "public CodeWriter emit(CodeBlock codeBlock, boolean ensureTrailingNewline)")]


def test_two_overloads_that_call_are_two_callers(fm_home, make_repo):
    repo = code_writer(make_repo)
    found = callers(slice_for(repo.path, "CodeWriter.emitAndIndent"))
    assert [(symbol, start, end) for symbol, start, end, _ in found
            if symbol == "CodeWriter.emit"] == [("CodeWriter.emit", *FIRST),
                                                ("CodeWriter.emit", *SECOND)]


def test_overloads_cut_for_the_budget_are_each_named_once(fm_home, make_repo):
    repo = code_writer(make_repo)
    for budget in range(400, 1001, 50):
        left_out = slice_for(repo.path, "CodeWriter.emitAndIndent", budget=budget).left_out
        assert len(left_out) == len(set(left_out)), budget


def test_the_l3_walk_starts_from_the_overload_the_slice_is_about(fm_home, make_repo):
    repo = code_writer(make_repo)
    slice_ = slice_for(repo.path, "emit CodeBlock codeBlock ensureTrailingNewline", level="L3")
    (evidence,) = [s for s in slice_.sections if s.role == "evidence"]
    assert (evidence.start_line, evidence.end_line) == SECOND
    (chain,) = [s for s in slice_.sections if s.role == "call_chain"]
    assert f"CodeWriter.emit ({PATH}:L{SECOND[0]}) -> CodeWriter.emitLiteral" in chain.body


def test_a_signature_digest_lists_every_overload(fm_home, make_repo):
    body = "".join(f"    width += {n};\n" for n in range(30))
    padding = "".join(f"  int pad{n}(int width) {{\n{body}    return width;\n  }}\n\n"
                      for n in range(6))
    last = "  CodeWriter emitAndIndent"
    writer = CODE_WRITER.replace(last, padding + last)
    app = ("package poet;\n\nimport poet.CodeWriter;\n\npublic class JavaFile {\n"
           "  void writeTo(CodeWriter codeWriter) {\n    codeWriter.emit(\"package\");\n  }\n}\n")
    repo = indexed_project(make_repo("poet"), {PATH: writer,
                                                "src/main/java/poet/JavaFile.java": app},
                           package="poet")
    slice_ = slice_for(repo.path, "JavaFile writeTo", level="L2", budget=1500)
    (digest,) = [s for s in slice_.sections if s.role == "dependency"]
    assert "signatures only" in digest.note
    assert f"L{FIRST[0]}-L{FIRST[1]}  public CodeWriter emit(String s)" in digest.body
    assert f"L{SECOND[0]}-L{SECOND[1]}  public CodeWriter emit(CodeBlock codeBlock" in digest.body

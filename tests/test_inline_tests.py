"""Tests written inside a source file are tests: Rust's ``#[cfg(test)]`` modules and
``#[test]`` functions."""

from __future__ import annotations

from freshmark.core.chunking import chunk_text
from freshmark.core.config import Config
from freshmark.core.plan import FileContext, build_records
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.search import search

SIZE_RS = '''pub fn parse(s: &str) -> u32 {
    s.len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse("ab"), 2);
    }
}

#[tokio::test]
async fn parses_later() {
    assert_eq!(parse("abc"), 3);
}
'''


def kinds(path: str, text: str, language: str, file_kind: str = "source") -> dict[str, str]:
    ctx = FileContext("r", "main", "c" * 40, path, "b" * 40, "d" * 64, language, file_kind,
                      "default", "2026-12-07T00:00:00Z")
    records = build_records(ctx, chunk_text(path, text, language))
    return {f"{r.symbol}@{r.start_line}": r.file_kind for r in records}


def test_a_rust_cfg_test_module_and_test_functions_are_tests_in_a_source_file():
    assert kinds("src/size.rs", SIZE_RS, "rust") == {
        "parse@1": "source", "tests@5": "test", "<module>@7": "test",
        "tests.parses@9": "test", "parses_later@15": "test"}


def test_code_without_a_test_attribute_stays_source():
    source = SIZE_RS.replace("#[cfg(test)]\n", "").replace("#[tokio::test]\n", "") \
        .replace("    #[test]\n", "")
    assert set(kinds("src/size.rs", source, "rust").values()) == {"source"}


def test_a_test_file_stays_a_test_file_and_other_languages_are_untouched():
    assert set(kinds("tests/size.rs", SIZE_RS, "rust", "test").values()) == {"test"}
    assert set(kinds("src/size.py", "def parse(s):\n    return len(s)\n",
                     "python").values()) == {"source"}


def test_inline_tests_are_found_as_tests_and_kept_out_of_the_source(fm_home, make_repo):
    repo = make_repo("fd")
    repo.write("src/size.rs", SIZE_RS).commit("size")
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config())

    def found(kind: str) -> set[str]:
        answer = search(SearchRequest.build("parse parses", k=10, kinds=[kind]), str(repo.path),
                        settings=Settings.from_env())
        return {r.record.symbol for r in answer.results}

    assert found("test") == {"tests", "tests.parses", "parses_later", "<module>"}
    assert found("source") == {"parse"}

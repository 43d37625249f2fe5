"""Rust in the symbol graph: ``use`` trees resolved to the crate's files, calls read by how
they are written (``Type::name``, ``Self::name``, ``self.name``)."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project
from test_context_graph import chunk

from freshmark.core.stamp import ChunkRecord
from freshmark.services.context.call_standing import CallStanding
from freshmark.services.context.rust_modules import use_paths
from freshmark.services.context.symbol_graph import SymbolGraph

CRATE = SymbolGraph([
    chunk("src/lib.rs", "Record", "struct"),
    chunk("src/__private_api.rs", "log_impl"),
    chunk("src/kv/mod.rs", "kv", "module"),
    chunk("src/kv/source.rs", "Source", "trait"),
    chunk("src/kv/key.rs", "Key", "struct"),
    chunk("src/kv/value.rs", "Value", "struct"),
    chunk("src/kv/value/inner.rs", "Inner", "struct"),
    chunk("src/fmt.rs", "pad"),
])


def test_a_grouped_use_tree_is_its_paths_one_each():
    assert use_paths("crate::{logger, kv::{self, Source as S, value::{Value, inner::*}}}") == [
        "crate::logger", "crate::kv", "crate::kv::Source", "crate::kv::value::Value",
        "crate::kv::value::inner"]


def test_a_glob_of_the_parent_module_is_no_path():
    assert use_paths("super::*") == []
    assert use_paths("super::key::*") == ["super::key"]


def test_an_item_of_the_crate_root_resolves_to_lib_rs():
    assert CRATE.resolve_import("src/__private_api.rs", "crate::{logger, Record}") == [
        "src/lib.rs"]


def test_a_grouped_use_resolves_to_each_named_module():
    assert CRATE.resolve_import("src/__private_api.rs", "crate::kv::{Source, key::Key}") == [
        "src/kv/mod.rs", "src/kv/key.rs"]


@pytest.mark.parametrize(("from_path", "spec", "files"), [
    ("src/kv/value.rs", "super::key::Key", ["src/kv/key.rs"]),
    ("src/kv/value.rs", "self::inner::Inner", ["src/kv/value/inner.rs"]),
    ("src/kv/mod.rs", "self::source::{Source, VisitSource}", ["src/kv/source.rs"]),
    ("src/kv/value/inner.rs", "super::super::key::Key", ["src/kv/key.rs"]),
    ("src/kv/value/inner.rs", "super::super::super::fmt::pad", ["src/fmt.rs"]),
    ("src/lib.rs", "super::Record", []),
    ("src/lib.rs", "std::{fmt, str::{self, FromStr}}", []),
])
def test_self_and_super_start_at_the_importing_module(from_path, spec, files):
    assert CRATE.resolve_import(from_path, spec) == files


def test_a_caller_importing_its_callees_type_in_a_group_is_listed(fm_home, make_repo):
    repo = indexed_project(make_repo("log"), {
        "src/lib.rs": "mod api;\n\npub struct Record;\n\nimpl Record {\n"
                      "    pub fn builder() -> u8 {\n        1\n    }\n}\n\n"
                      "pub struct Metadata;\n\nimpl Metadata {\n"
                      "    pub fn builder() -> u8 {\n        2\n    }\n}\n",
        "src/api.rs": "use crate::{Metadata, Record};\n\n"
                      "pub fn log_impl() -> u8 {\n    Record::builder()\n}\n",
    }, package="log")
    assert "log_impl" in callers_in_slice(str(repo.path), "Record.builder")


LIB = """pub struct Record;

impl Record {
    pub fn builder() -> u8 {
        RecordBuilder::new()
    }
}

pub struct Metadata;

impl Metadata {
    pub fn builder() -> u8 {
        2
    }
}

pub struct RecordBuilder {
    record: Record,
}

impl RecordBuilder {
    /// See [`Record::builder`].
    pub fn new() -> u8 {
        let record = Record { level: 1 };
        Metadata::builder()
    }
}
"""


def test_a_call_written_on_a_type_is_no_call_of_another_types_method(fm_home, make_repo):
    repo = indexed_project(make_repo("log"), {"src/lib.rs": LIB}, package="log")
    assert "RecordBuilder.new" not in callers_in_slice(str(repo.path), "Record.builder")
    assert callers_in_slice(str(repo.path), "Metadata.builder") == {"RecordBuilder.new": "high"}


def standing(records: list[tuple[ChunkRecord, str]], caller: str, callee: str) -> bool | None:
    """The standing of the edge ``caller`` -> ``callee`` (ids) in a graph of ``records``,
    each with its code today."""
    graph = SymbolGraph([record for record, _ in records])
    codes = {record.id: code for record, code in records}
    (edge,) = [e for e in graph.callers(callee) if e.caller == caller]
    return CallStanding(graph, lambda record: codes[record.id])(edge)


def method(path: str, symbol: str, code: str, references: tuple[str, ...] = (),
           kind: str = "method", start: int = 1) -> tuple[ChunkRecord, str]:
    return chunk(path, symbol, kind, references=references, start_line=start,
                 end_line=start + code.count("\n"), language="rust"), code


FLUSH = [
    method("src/lib.rs", "Logger", "pub struct Logger;", kind="struct"),
    method("src/lib.rs", "Sink", "pub struct Sink;", kind="struct", start=3),
    method("src/lib.rs", "Sink.flush", "fn flush(&self) {}", start=5),
]


@pytest.mark.parametrize("call", ["Self::flush(self)", "self.flush()"])
def test_self_reaches_no_other_types_method(call):
    records = [*FLUSH, method("src/lib.rs", "Logger.close", f"fn close(&self) {{ {call} }}",
                              references=("flush",), start=9)]
    assert standing(records, "src/lib.rs:Logger.close", "src/lib.rs:Sink.flush") is None


def test_a_call_through_another_value_is_as_sure_as_the_graph_says():
    records = [*FLUSH, method("src/lib.rs", "close", "fn close(s: &Sink) { s.flush() }",
                              references=("flush",), kind="function", start=9)]
    assert standing(records, "src/lib.rs:close", "src/lib.rs:Sink.flush") is False


def test_a_module_function_is_never_called_through_a_value_nor_on_a_type():
    records = [
        method("src/lib.rs", "enabled", "pub fn enabled() -> bool { true }", kind="function"),
        method("src/lib.rs", "Global.enabled", "fn enabled(&self) -> bool { logger().enabled() "
               "|| Vec::enabled() }", references=("enabled",), start=3),
    ]
    assert standing(records, "src/lib.rs:Global.enabled", "src/lib.rs:enabled") is None


def test_a_trait_qualified_call_may_reach_the_traits_implementor():
    records = [
        method("src/lib.rs", "Level", "pub enum Level { Error }", kind="enum"),
        method("src/lib.rs", "impl fmt.Display for Level", "impl fmt::Display for Level {\n\n}",
               kind="impl", start=3),
        method("src/lib.rs", "Level.fmt", "fn fmt(&self, f: &mut Formatter) -> Result { "
               "Ok(()) }", start=4),
        method("src/lib.rs", "Wrapper.fmt", "fn fmt(&self, f: &mut Formatter) -> Result { "
               "fmt::Display::fmt(&self.0, f) }", references=("fmt",), start=8),
    ]
    assert standing(records, "src/lib.rs:Wrapper.fmt", "src/lib.rs:Level.fmt") is not None

"""Rust in the symbol graph: ``use`` trees resolved to the crate's files."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project
from test_context_graph import chunk

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


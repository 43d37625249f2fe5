"""Trimming an import block to what a symbol uses (pure), in each language's import syntax."""

from __future__ import annotations

import pytest

from freshmark.services.context.imports import import_block, used_import_lines

BLOCK = [
    "import os",
    "import typing as t",
    "from .types import (",
    "    Choice,",
    "    Path,",
    ")",
    "import collections.abc",
]


def kept_lines(block: list[str], user_text: str, language: str) -> list[str]:
    return [line for _, line in used_import_lines(block, 1, user_text, language)]


def test_used_imports_keep_aliases_and_the_used_names_of_a_parenthesised_group():
    kept = used_import_lines(BLOCK, 3, "def f(x: t.Any) -> Path:\n    return collections.abc",
                             "python")
    assert [number for number, _ in kept] == [4, 5, 7, 8, 9]


def test_unused_imports_are_dropped():
    assert used_import_lines(BLOCK, 1, "def f():\n    return os.environ", "python") == [
        (1, "import os")]


def test_a_python_wildcard_import_is_kept_because_it_may_bind_any_name():
    assert kept_lines(["from .names import *", "import os"], "def f(): return g()",
                      "python") == ["from .names import *"]


GO_BLOCK = [
    "import (",
    '\t"bytes"',
    '\t"sort"',
    "",
    '\tflag "github.com/spf13/pflag"',
    '\t"gopkg.in/yaml.v3"',
    '\t"github.com/acme/tool/v2"',
    '\t_ "embed"',
    ")",
]


def test_go_keeps_the_packages_of_a_grouped_import_that_the_function_uses():
    user = "func (c *Command) ParseFlags(args []string) error {\n\tb := new(bytes.Buffer)\n" \
           "\treturn c.Flags().Parse(flag.Args())\n}"
    assert kept_lines(GO_BLOCK, user, "go") == [
        "import (", '\t"bytes"', '\tflag "github.com/spf13/pflag"', '\t_ "embed"', ")"]


def test_go_names_a_package_by_its_path_without_a_version_suffix():
    user = "func load() { yaml.Unmarshal(data, &out); tool.Run() }"
    assert kept_lines(GO_BLOCK, user, "go") == [
        "import (", '\t"gopkg.in/yaml.v3"', '\t"github.com/acme/tool/v2"', '\t_ "embed"', ")"]


def test_go_single_line_imports_are_kept_by_their_package_name():
    block = ['import "fmt"', 'import str "strings"']
    assert kept_lines(block, "func f() { fmt.Println(str.ToUpper(s)) }", "go") == block
    assert kept_lines(block, "func f() { fmt.Println(s) }", "go") == ['import "fmt"']


JS_BLOCK = [
    "import React from 'react'",
    "import { useState, useEffect as onMount } from 'react'",
    "import * as path from 'node:path'",
    "import './polyfills'",
    "import type { Options } from './options'",
    "import {",
    "  parse,",
    "  stringify,",
    "} from 'qs'",
    "const { promisify } = require('util')",
    "const fs = require('fs')",
]


def test_javascript_keeps_the_names_each_import_form_binds():
    user = "function load(o: Options) { const [s] = useState(); onMount(); " \
           "return stringify(path.join(fs.x)) }"
    assert kept_lines(JS_BLOCK, user, "typescript") == [
        "import { useState, useEffect as onMount } from 'react'",
        "import * as path from 'node:path'",
        "import './polyfills'",
        "import type { Options } from './options'",
        "import {", "  stringify,", "} from 'qs'",
        "const fs = require('fs')",
    ]


def test_javascript_default_and_destructured_require_imports():
    user = "function App() { return React.createElement(promisify(f)) }"
    assert kept_lines(JS_BLOCK, user, "javascript") == [
        "import React from 'react'", "import './polyfills'",
        "const { promisify } = require('util')"]


def test_java_keeps_the_classes_used_and_every_wildcard():
    block = ["package org.acme;", "import java.util.List;", "import java.util.Map;",
             "import java.io.*;", "import static java.lang.Math.max;"]
    user = "List<String> top(List<String> xs) { return xs.subList(0, max(1, n)); }"
    assert kept_lines(block, user, "java") == [
        "package org.acme;", "import java.util.List;", "import java.io.*;",
        "import static java.lang.Math.max;"]


def test_rust_keeps_the_items_a_use_brings_in():
    block = ["use std::collections::{HashMap, HashSet as Set};", "pub(crate) use std::fmt;",
             "use std::io::{self, Read};", "use crate::prelude::*;", "use std::sync::Arc;"]
    user = "fn count(s: &Set<u32>) -> io::Result<()> { write!(f, \"{}\", fmt::x) }"
    assert kept_lines(block, user, "rust") == [
        "use std::collections::{HashMap, HashSet as Set};", "pub(crate) use std::fmt;",
        "use std::io::{self, Read};", "use crate::prelude::*;"]


def test_php_keeps_the_classes_a_use_names():
    block = ["use App\\Models\\User;", "use App\\Http\\Request as Req;", "use App\\Util\\Str;"]
    user = "function show(Req $r): User { return User::find($r->id); }"
    assert kept_lines(block, user, "php") == [
        "use App\\Models\\User;", "use App\\Http\\Request as Req;"]


def test_namespaces_and_headers_that_bind_unknown_names_are_kept():
    assert kept_lines(["using System.Linq;", "using Json = Newtonsoft.Json;"],
                      "int Sum(int[] xs) => xs.Sum();", "csharp") == ["using System.Linq;"]
    assert kept_lines(["#include <stdio.h>", "#include \"util.h\""], "int main() { return 0; }",
                      "c") == ["#include <stdio.h>", "#include \"util.h\""]


def test_an_example_in_a_rust_doc_comment_is_not_the_import_block():
    text = ("/*!\nExample:\n\n```\nuse walkdir::WalkDir;\n```\n*/\n\n//! use other::Thing;\n\n"
            "use std::fs;\nuse same_file::Handle;\npub use crate::dent::DirEntry;\n\n"
            "fn check_loop() -> Handle { fs::x() }\n")
    assert import_block("src/lib.rs", text) == (11, 13)


def test_an_import_in_a_python_docstring_is_not_the_import_block():
    text = '"""Use it so:\n\nimport shop\nshop.run()\n"""\n\nimport os\n\n\ndef f():\n    ' \
           'return os.sep\n'
    assert import_block("shop/run.py", text) == (7, 7)


def test_a_group_keeps_its_edges_when_the_used_name_is_on_them():
    block = ["import { produce,", "  Draft,", "  Patch } from './internal'", "import x from 'x'"]
    assert kept_lines(block, "function f() { return produce(1) }", "typescript") == [
        "import { produce,", "  Patch } from './internal'"]


def test_rust_use_group_keeps_the_names_the_symbol_uses():
    block = ["use crate::walk::{", "    DirEntry,", "    WalkDir as Walker,", "    Error,", "};"]
    assert kept_lines(block, "fn f() -> Walker { Walker::new() }", "rust") == [
        "use crate::walk::{", "    WalkDir as Walker,", "};"]


def test_a_rust_group_binding_self_binds_the_module_not_every_method_taking_self():
    block = ["use core::fmt::{self, Debug};", "use crate::error::Error;"]
    assert kept_lines(block, "fn take(&mut self) -> Value { self.0 }", "rust") == []
    assert kept_lines(block, "fn show(f: &mut fmt::Formatter) {}", "rust") == [
        "use core::fmt::{self, Debug};"]


GUIDE = ("Using an embedded target\n\nusing an embedded target keeps the build simple;\n"
         "use the host toolchain otherwise, and require nothing else.\n\n## Steps\n\n"
         "Flash the embedded target board.\n")


def test_prose_that_reads_like_an_import_is_no_import_block():
    assert import_block("docs/embedded.md", GUIDE) is None
    assert import_block("docs/embedded.txt", "using System;\n\nclass A {}\n") is None
    assert import_block("src/Program.cs", "using System;\n\nclass A {}\n") == (1, 1)


def test_only_a_language_s_own_keywords_start_its_imports():
    block = ["import os", "using System.Linq;", "use other::Thing;", "require 'set'"]
    assert kept_lines(block, "def f(): return os.sep", "python") == ["import os"]
    assert kept_lines(block, "int F() => 0;", "csharp") == ["using System.Linq;"]
    assert kept_lines(block, "def f; end", "ruby") == ["require 'set'"]


def test_a_markdown_match_gets_no_imports_section(fm_home, make_repo):
    from search_fixtures import index

    from freshmark.core.request import ContextRequest
    from freshmark.core.settings import Settings
    from freshmark.services.context.build import build_context

    repo = make_repo("board")
    repo.write("docs/embedded.md", GUIDE).write("board/run.py", "def run():\n    return 0\n")
    repo.commit("board")
    index(repo.path)
    slice_ = build_context(ContextRequest.build("embedded target toolchain"),
                           str(repo.path), settings=Settings.from_env())
    assert [s.path for s in slice_.sections if s.role == "evidence"] == ["docs/embedded.md"]
    assert not [s for s in slice_.sections if s.role == "imports"]


def test_an_import_block_over_its_line_cap_ends_after_a_whole_statement():
    names = "".join(f"    name_{n},\n" for n in range(20))
    text = "".join(f"import module_{n}\n" for n in range(50)) + \
        f"from ._compat import (\n{names})\n\n\ndef main():\n    return name_1\n"
    first, last = import_block("pkg/main.py", text)
    assert (first, last) == (1, 50 + 1 + 20 + 1)  # through the closing bracket


@pytest.mark.parametrize(("path", "text"), [
    ("lib/thor/base.rb", 'require_relative "command"\nrequire_relative "core_ext/hash"\n'
                         "\nclass Thor\nend\n"),
    ("src/Client.php", "<?php\nrequire_once 'vendor/autoload.php';\ninclude 'config.php';\n"
                       "\nclass Client {}\n"),
])
def test_require_relative_and_require_once_lines_are_the_import_block(path, text):
    assert import_block(path, text) == (1 + path.endswith(".php"), 2 + path.endswith(".php"))


REQUIRE_BLOCK = [
    "const { EventEmitter } = require('node:events')",
    "const {",
    "  lsCacheSym,",
    "  serializersSym,",
    "  streamSym",
    "} = require('./symbols')",
    "const redaction = require('./redaction')",
]


def test_a_destructured_require_written_one_name_a_line_keeps_the_names_used():
    user = "function child (bindings) { const s = this[serializersSym]; return redaction(s) }"
    assert kept_lines(REQUIRE_BLOCK, user, "javascript") == [
        "const {", "  serializersSym,", "} = require('./symbols')",
        "const redaction = require('./redaction')"]


def test_a_destructured_require_starts_the_import_block_on_its_opening_line():
    text = "'use strict'\n\n" + "\n".join(REQUIRE_BLOCK[1:]) + "\n\nfunction f () {}\n"
    assert import_block("lib/levels.js", text) == (3, 8)


def test_a_destructuring_that_is_no_require_is_no_import():
    block = ["const { a } = require('a')", "const {", "  b,", "} = options", "const c = 1"]
    assert kept_lines(block, "function f () { return a + b + c }", "javascript") == [
        "const { a } = require('a')"]


def test_a_property_named_like_an_import_is_no_use_of_it():
    block = ["import delay from '../utils/delay.js'", "import {timeout} from './timeout.js'"]
    user = "#calculateDelay() { return this.#options.retry.delay(n) ?? this.#timeout ?? " \
           "opts?.timeout }"
    assert kept_lines(block, user, "typescript") == []


def test_the_name_before_a_dot_and_a_spread_name_are_uses():
    block = ["import delay from '../utils/delay.js'", "import {defaults} from './defaults.js'"]
    user = "function f(o) { return {...defaults, wait: delay.ms(o)} }"
    assert kept_lines(block, user, "typescript") == block
    assert kept_lines(["import os", "from pathlib import Path"], "def f():\n    return os.sep",
                      "python") == ["import os"]


def test_a_kotlin_extension_function_imported_by_name_is_used_as_a_member():
    block = ["import okio.buffer", "import okio.sink"]
    assert kept_lines(block, "fun copy(s: Source) = s.buffer().readUtf8()", "kotlin") == [
        "import okio.buffer"]


def test_a_name_in_a_comment_or_a_plain_string_is_no_use_of_an_import():
    block = ["var http = require('node:http');", "var statuses = require('statuses')",
             "var url = require('node:url');"]
    user = ("/**\n * Redirect to the given `url`:\n *    res.redirect('http://example.com');\n"
            " */\n\nres.redirect = function redirect(address) {\n"
            "  // the url module is not needed here\n"
            "  var body = 'url: ' + address + \" (http)\";\n"
            "  return `${statuses.message[302]}. Redirecting to ${body}`;\n};\n")
    assert kept_lines(block, user, "javascript") == ["var statuses = require('statuses')"]
    python = ["import os", "import sys", "import json"]
    user = ('def where():\n    """Where os puts it."""\n    # sys is not read\n'
            '    return f"{os.sep}" + "json"\n')
    assert kept_lines(python, user, "python") == ["import os"]


def test_a_parameter_of_the_function_shadows_an_import_of_its_name():
    block = ["var path = require('node:path');", "var send = require('send');"]
    user = "res.sendFile = function sendFile(path, options) {\n  return send(path, options);\n};"
    assert [line for _, line in used_import_lines(block, 1, user, "javascript", "sendFile")] == [
        "var send = require('send');"]
    python = ["import path", "import pathlib", "from .defaults import DEFAULT"]
    user = "def load(path: pathlib.Path = DEFAULT):\n    return path.read_text()\n"
    assert [line for _, line in used_import_lines(python, 1, user, "python", "load")] == [
        "import pathlib", "from .defaults import DEFAULT"]
    go = ['import "io/fs"', 'import "strings"']
    user = "func Open(fs fs.FS, name string) error {\n\treturn fs.Open(name)\n}"
    assert [line for _, line in used_import_lines(go, 1, user, "go", "Open")] == [
        'import "io/fs"']
    # A class's bases are no parameters.
    assert [line for _, line in used_import_lines(
        ["from .base import Base"], 1, "class Loader(Base):\n    pass\n", "python", "Loader")
        ] == ["from .base import Base"]


RESPONSE_JS = "".join(f"var module{n} = require('module-{n}');\n" for n in range(12)) + (
    "var path = require('node:path');\nvar send = require('send');\n\n"
    "/**\n * Transfer the file at the given `path`.\n */\n\n"
    "res.sendFile = function sendFile(path, options) {\n"
    "  var file = send(this.req, path, options);\n  file.pipe(this);\n};\n")


def test_an_l1_slice_leaves_out_an_import_its_function_shadows_by_a_parameter(
        fm_home, make_repo):
    from search_fixtures import indexed_project

    from freshmark.core.request import ContextRequest
    from freshmark.core.settings import Settings
    from freshmark.services.context.build import build_context

    repo = indexed_project(make_repo("express"), {"lib/response.js": RESPONSE_JS},
                           package="lib")
    slice_ = build_context(ContextRequest.build("res.sendFile", level="L1"), str(repo.path),
                           settings=Settings.from_env())
    imports = next(s.body for s in slice_.sections if s.role == "imports")
    assert "require('send')" in imports and "require('node:path')" not in imports

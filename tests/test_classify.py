"""File classification (SPEC §4): built-in rules, precedence, user rules, attributes, content."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_builder import RepoBuilder

from freshmark.adapters.git.repo import GitRepo
from freshmark.core.classify import (
    _BUILTIN_GLOB_SETS,
    SUBMODULE_CLASS,
    FileClass,
    classify,
    classify_path,
    decode_text,
    has_generated_marker,
    looks_binary,
)
from freshmark.core.config import ClassifyRules
from freshmark.core.globs import glob_match
from freshmark.core.kinds import FILE_KINDS
from freshmark.core.path_rules import BUILTIN_RULES

RULES = ClassifyRules()
CODE = b"def total(order):\n    return order.total\n"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("api/orders_pb2.py", "generated"),
        ("api/orders_pb2_grpc.py", "generated"),
        ("api/orders.pb.go", "generated"),
        ("web/client.generated.ts", "generated"),
        ("app/lib/model.g.dart", "generated"),
        ("src/generated/client.py", "generated"),
        ("web/__generated__/schema.ts", "generated"),
        ("poetry.lock", "generated"),
        ("web/package-lock.json", "generated"),
        ("src/orders/service_old.py", "backup"),
        ("src/orders/service.py.bak", "backup"),
        ("src/orders/service.py.orig", "backup"),
        ("src/orders/service.py~", "backup"),
        ("src/orders/.service.py.swp", "backup"),
        ("notes.tmp", "backup"),
        ("tests/fixtures/order.json", "fixture"),
        ("pkg/fixtures/deep/sample.py", "fixture"),
        ("pkg/testdata/input.go", "fixture"),
        ("web/__snapshots__/App.test.tsx.snap", "fixture"),
        ("src/test/resources/htmltests/meta-charset-1.html", "fixture"),  # Maven's
        ("src/test/resources/local-cert/server.key", "fixture"),
        ("test_files/prenoms.csv", "fixture"),
        ("src/ReaderBench.php", "test"),  # phpbench's
        ("locales/fr.json", "translation"),  # yargs' messages in French
        ("src/i18n/de.json", "translation"),
        ("tests/test_orders.py", "test"),
        ("src/test_orders.py", "test"),
        ("pkg/orders/service_test.go", "test"),
        ("web/src/cart.test.ts", "test"),
        ("web/src/cart.spec.js", "test"),
        ("svc/src/test/java/OrderTest.java", "test"),
        ("conftest.py", "test"),
        ("asv_bench/benchmarks/groupby.py", "test"),
        ("__performance_tests__/add-data.mjs", "test"),
        ("src/parse.bench.ts", "test"),
        ("bench/formatter-bench.cpp", "test"),  # spdlog's
        ("features/steps/mongrel_helper.rb", "test"),  # Cucumber's
        ("okio/src/commonTest/kotlin/okio/TestUtil.kt", "test"),  # Kotlin Multiplatform's
        ("okio/src/jvmTest/resources/okio/test.zip.txt", "fixture"),
        ("app/src/androidTest/java/AppTest.java", "test"),
        ("okio/src/commonMain/kotlin/okio/Buffer.kt", "source"),
        ("okio/build.gradle.kts", "config"),
        ("src/UnitTests/ArraysAndLists.cs", "test"),  # .NET test projects
        ("src/AutoMapper.DI.Tests/Registration.cs", "test"),
        ("src/Polly.Specs/Retry/RetrySpecs.cs", "test"),
        ("settings.gradle", "config"),
        ("features/step_definitions/steps.js", "test"),
        ("src/features/flags.ts", "source"),  # a project's own feature flags
        ("benches/parse.rs", "test"),  # Cargo's
        ("Tests/UnitTests/Snapshots/testMathHelp.bash", "fixture"),  # SwiftPM's golden outputs
        ("src/snapshots/store.py", "source"),  # a project's own code about snapshots
        ("README.md", "doc"),
        ("docs/guide.rst", "doc"),
        ("docs/conf.py", "doc"),
        ("NOTES.txt", "doc"),
        ("LICENSE", "doc"),
        ("pyproject.toml", "config"),
        ("deploy/values.yaml", "config"),
        ("ci.yml", "config"),
        ("phpunit.xml.dist", "config"),
        ("phpstan.neon.dist", "config"),
        ("phpstan.neon", "config"),
        ("package.json", "config"),
        ("setup.cfg", "config"),
        ("Dockerfile", "config"),
        ("Makefile", "config"),
        ("requirements-dev.txt", "config"),
        ("CMakeLists.txt", "config"),
        # Ruby's build and dependency files, as a Makefile is; its prose in RDoc (rack's).
        ("Gemfile", "config"),
        ("Rakefile", "config"),
        ("rack.gemspec", "config"),
        ("SPEC.rdoc", "doc"),
        ("History.rdoc", "changelog"),
        # The lists of paths a tool leaves out (express's .eslintignore beside its .gitignore).
        (".gitignore", "config"),
        (".eslintignore", "config"),
        (".prettierignore", "config"),
        ("packages/cli/.npmignore", "config"),
        ("src/orders/service.py", "source"),
        ("cmd/server/main.go", "source"),
        # Directories named in capitals (SwiftPM, .NET); file names keep their case.
        ("Tests/ArgumentParserUnitTests/HelpTests.swift", "test"),
        ("Sources/ArgumentParser/Parsing/ParserTests.swift", "test"),
        ("Examples/math/Math.swift", "doc"),
        ("Docs/Guide.swift", "doc"),
        ("Sources/ArgumentParser/Usage/HelpGenerator.swift", "source"),
        ("lib/Testing.swift", "source"),
        # Test base classes and helpers outside a tests directory.
        ("src/AdapterTestUtilities/FilesystemAdapterTestCase.php", "test"),
        ("src/Ftp/FtpAdapterTestCase.php", "test"),
        ("src/AdapterTestUtilities/test-functions.php", "test"),
        ("src/Ftp/FtpAdapter.php", "source"),
        ("src/Framework/TestCase.php", "source"),  # a test framework's own class
        # Changelogs named in mixed case; a code file of such a name is code.
        ("ChangeLog.md", "changelog"),
        ("doc/ChangeLog-old.md", "changelog"),
        ("History.md", "changelog"),
        ("Sources/Model/History.swift", "source"),
        ("bench/Polly.Core.Benchmarks/HedgingBenchmark.cs", "test"),
    ],
)
def test_builtin_path_rule_gives_kind(path: str, kind: str) -> None:
    assert classify_path(path, RULES) == kind


def test_a_php_tool_s_config_is_config_and_the_baseline_it_writes_is_generated() -> None:
    assert [classify_path(path, RULES) for path in (
        ".php-cs-fixer.dist.php", ".php-cs-fixer.php", "psalm.xml", "phpstan.neon.dist")] == \
        ["config"] * 4
    assert [classify_path(path, RULES) for path in (
        "psalm-baseline.xml", "phpstan-baseline.neon", "phpstan-baseline.php")] == \
        ["generated"] * 3
    assert classify_path("src/Baseline.php", RULES) == "source"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("vendor/github.com/x/y.go", "vendored"),
        ("third_party/zlib/zlib.c", "vendored"),
        ("test/gtest/gmock-gtest-all.cc", "vendored"),  # GoogleTest copied beside the tests
        ("test/gtest/gtest/gtest.h", "vendored"),
        ("include/spdlog/fmt/bundled/format.h", "vendored"),  # fmt copied into spdlog
        ("src/pip/_vendor/rich/console.py", "vendored"),
        ("web/node_modules/react/index.js", "vendored"),
        (".venv/lib/python3.11/site-packages/x.py", "vendored"),
        ("build/lib/orders/service.py", "build-output"),
        ("web/dist/bundle.js", "build-output"),
        ("target/debug/main.rs", "build-output"),
        ("web/static/app.min.js", "build-output"),
    ],
)
def test_vendored_and_build_output_are_not_indexed(path: str, reason: str) -> None:
    assert classify(path, CODE, RULES) == FileClass("vendored", indexed=False, skip_reason=reason)


def test_a_skipping_rule_keeps_its_directorys_case() -> None:
    assert classify_path("src/Build/Options.c", RULES) == "source"
    assert classify_path("Vendor/Parser.swift", RULES) == "source"


def test_every_builtin_kind_is_a_stamp_file_kind() -> None:
    assert {kind for kind, _, _ in BUILTIN_RULES} <= set(FILE_KINDS)


SAMPLE_PATHS = [
    "a.py", "src/vendor/x.go", "vendor.go", "x/vendors/y.go", "pkg/a.egg-info/PKG-INFO",
    "egg-info/x", "docs", "my_docs/x.md", "a/docs/b/c.py", "build.py", "src/build/x.c",
    "Dockerfile.dev", "x.min.js", "min.js", "a/b/#x#", "tests", "tests/a", "mytests/a.py",
    "examples/a.py", "src/examples/a.py", "demo", "samples/x/y.rs", "docs_src/a/b.py",
    "src/docs_src/a.py",
]


@pytest.mark.parametrize("path", SAMPLE_PATHS)
def test_compiled_builtin_rules_agree_with_config_glob_match(path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    for (_, _, globs), (_, _, compiled) in zip(BUILTIN_RULES, _BUILTIN_GLOB_SETS, strict=True):
        assert compiled.matches(path, name) == any(glob_match(path, g) for g in globs), globs


# ---- precedence -----------------------------------------------------------------------------


def test_go_package_under_a_doc_or_examples_directory_is_source() -> None:
    assert classify_path("doc/man_docs.go", RULES) == "source"
    assert classify_path("doc/man_docs_test.go", RULES) == "test"
    assert classify_path("examples/server/main.go", RULES) == "source"


@pytest.mark.parametrize("path", ["test.c", "test_reader.c", "reader_test.c"])
def test_c_test_programs_are_tests(path: str) -> None:
    assert classify_path(path, RULES) == "test"


def test_a_go_program_under_a_top_level_examples_directory_is_doc() -> None:
    main = b"package main\n\nimport tea \"charm.land/bubbletea/v2\"\n\nfunc main() {}\n"
    assert classify("examples/suspend/main.go", main, RULES).file_kind == "doc"
    assert classify("tutorials/basics/main.go", main, RULES).file_kind == "doc"
    library = b"package widgets\n\nfunc Draw() {}\n"
    assert classify("examples/widgets/draw.go", library, RULES).file_kind == "source"
    assert classify("cmd/tool/main.go", main, RULES).file_kind == "source"


def test_go_programs_under_a_directory_the_go_tool_ignores_are_no_package() -> None:
    assert classify_path("_examples/simple/main.go", RULES) == "doc"
    assert classify_path("_example/main.go", RULES) == "doc"


def test_other_code_under_a_doc_directory_is_doc() -> None:
    assert classify_path("docs/conf.py", RULES) == "doc"


@pytest.mark.parametrize("path", ["examples/pm.js", "demo/app.py", "samples/basic/main.rs",
                                  "docs_src/arguments/optional/tutorial001_py310.py"])
def test_programs_in_a_top_level_examples_directory_are_doc(path: str) -> None:
    assert classify_path(path, RULES) == "doc"


def test_a_maven_site_s_pages_are_doc_and_its_changes_file_a_changelog() -> None:
    assert classify_path("src/site/xdoc/upgrading-1.0-to-1.1.xml", RULES) == "doc"
    assert classify_path("src/site/apt/index.apt", RULES) == "doc"
    assert classify_path("src/changes/changes.xml", RULES) == "changelog"
    assert classify_path("src/main/resources/log4j2.xml", RULES) == "config"


def test_a_package_named_example_inside_the_source_tree_is_source() -> None:
    assert classify_path("src/example/app.py", RULES) == "source"


def test_vendored_beats_test() -> None:
    assert classify_path("vendor/lib/client_test.go", RULES) == "vendored"


def test_generated_beats_test() -> None:
    assert classify_path("tests/api_pb2.py", RULES) == "generated"


def test_backup_beats_source() -> None:
    assert classify_path("src/orders/cancel_old.py", RULES) == "backup"


def test_fixture_beats_test() -> None:
    assert classify_path("tests/fixtures/orders.py", RULES) == "fixture"


@pytest.mark.parametrize("path", [
    # loguru's expected tracebacks, which outranked its code on a pasted traceback
    "tests/exceptions/output/modern/exception_group_catch.txt",
    "tests/settings.yaml", "test/golden/page.html", "spec/data/users.csv",
    "__tests__/responses/user.json", "tests/logs/run.log", "tests/expected.out",
    "tests/data/expected_output",  # extension-less data
])
def test_data_under_a_test_directory_is_a_fixture(path: str) -> None:
    assert classify_path(path, RULES) == "fixture"


@pytest.mark.parametrize("path", [
    "tests/conftest.py", "tests/helpers/server.py", "test/support/page.js",
    "tests/README.md", "tests/README.txt", "tests/doctests.rst",  # the suite's prose
    "test/CMakeLists.txt", "tests/requirements.txt", "tests/Makefile",  # its settings
    "tests/typesafety/test_logger.yml",  # pytest-mypy-plugins' test cases
])
def test_code_prose_and_settings_under_a_test_directory_stay_tests(path: str) -> None:
    assert classify_path(path, RULES) == "test"


def test_a_script_under_a_test_directory_is_a_test_by_its_shebang() -> None:
    script = b"#!/bin/sh\nset -e\npytest -q\n"
    assert classify("tests/run-all", script, RULES) == FileClass("test", True)
    assert classify("tests/expected", b"line one\n", RULES) == FileClass("fixture", True)


def test_data_under_a_test_directory_takes_no_generated_marker() -> None:
    output = b"# Auto-generated by the formatter under test\nvalue = 1\n"
    assert classify("tests/output/formatted.txt", output, RULES).file_kind == "fixture"


def test_data_under_a_users_test_rule_stays_a_test() -> None:
    rules = ClassifyRules(test=("checks/**",))
    assert classify("checks/expected.txt", b"ok\n", rules) == FileClass("test", True)


# ---- user rules -----------------------------------------------------------------------------


def test_user_rule_extends_builtin_rules() -> None:
    rules = ClassifyRules(generated=("proto/gen/**",))
    assert classify_path("proto/gen/orders.py", rules) == "generated"


def test_user_rule_wins_over_builtin_rule() -> None:
    rules = ClassifyRules(test=("build/checks/**",))
    assert classify("build/checks/smoke.py", CODE, rules) == FileClass("test", True, None)


def test_user_vendored_rule_is_not_indexed() -> None:
    rules = ClassifyRules(vendored=("extern/**",))
    assert classify("extern/lib.c", CODE, rules) == FileClass("vendored", False, "vendored")


def test_ignore_glob_is_not_indexed_but_keeps_its_kind() -> None:
    rules = ClassifyRules(ignore=("scratch/**",))
    assert classify("scratch/notes.md", b"# notes\n", rules) == FileClass("doc", False, "ignored")


def test_user_kind_is_not_overridden_by_generated_marker() -> None:
    rules = ClassifyRules(config=("settings/*.py",))
    data = b"# Code generated by settings-gen. DO NOT EDIT.\nDEBUG = False\n"
    assert classify("settings/base.py", data, rules).file_kind == "config"


# ---- .gitattributes -------------------------------------------------------------------------


def test_linguist_generated_attribute_marks_generated() -> None:
    attrs = {"linguist-generated": True}
    assert classify("src/orders/client.py", CODE, RULES, attrs) == FileClass("generated", True)


def test_linguist_vendored_attribute_is_not_indexed() -> None:
    attrs = {"linguist-vendored": "true"}
    assert classify("libs/x.py", CODE, RULES, attrs) == FileClass("vendored", False, "vendored")


def test_unset_linguist_vendored_undoes_builtin_build_rule() -> None:
    attrs = {"linguist-vendored": False}
    assert classify("src/build/__init__.py", CODE, RULES, attrs) == FileClass("source", True)


def test_linguist_generated_false_disables_path_rule_and_markers() -> None:
    data = b"// Code generated by hand-tool. DO NOT EDIT.\npackage api\n"
    attrs = {"linguist-generated": "false"}
    assert classify("api/orders.pb.go", data, RULES, attrs).file_kind == "source"


def test_linguist_documentation_attribute_marks_doc() -> None:
    assert classify_path("examples/demo.py", RULES, {"linguist-documentation": True}) == "doc"


def test_binary_attribute_skips_file_whatever_its_bytes() -> None:
    verdict = classify("assets/table.dat", b"plain text\n", RULES, {"binary": True})
    assert verdict == FileClass("source", False, "binary")


# ---- content --------------------------------------------------------------------------------


def test_nul_byte_makes_file_binary() -> None:
    png_header = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
    assert classify("assets/logo.py", png_header, RULES).skip_reason == "binary"


def test_a_pdf_whose_binary_streams_start_late_is_binary() -> None:
    metadata = b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n" + b"<x:xmpmeta>text</x:xmpmeta>\n" * 400
    pdf = metadata + b"stream\n\0\0\x9c\x87\nendstream\n"
    assert classify("logos/Polly-Logo.ai", pdf, RULES).skip_reason == "binary"


SVG = b'<svg xmlns="http://www.w3.org/2000/svg">\n<path d="M0 0h10v10z"/>\n</svg>\n'


@pytest.mark.parametrize("path", [
    "docs/_static/img/logo.svg",  # loguru's, 194 KB of path data, was doc text
    "assets/icons/Close.SVG", "figures/plot.eps", "figures/plot.ps", "icons/cursor.xpm",
])
def test_a_picture_stored_as_text_is_not_indexed_as_an_image(path: str) -> None:
    verdict = classify(path, SVG, RULES)
    assert not verdict.indexed and verdict.skip_reason == "image"


def test_a_powershell_script_is_no_postscript_image() -> None:
    assert classify("tools/build.ps1", b"Write-Host 'hi'\n", RULES) == FileClass("source", True)


def test_mostly_control_bytes_make_file_binary() -> None:
    assert looks_binary(bytes(range(1, 32)) * 10)


def test_latin1_text_is_indexed_with_its_real_characters() -> None:
    data = "# Café order\nname = 'Müller'\n".encode("latin-1")
    assert classify("src/names.py", data, RULES) == FileClass("source", True)
    text = decode_text(data)
    assert text is not None and text.splitlines() == ["# Café order", "name = 'Müller'"]


def test_decode_text_drops_utf8_bom() -> None:
    assert decode_text(b"\xef\xbb\xbfx = 1\n") == "x = 1\n"


def test_decode_text_of_binary_is_none() -> None:
    assert decode_text(b"\0\1\2\3") is None


def test_file_over_max_bytes_is_oversized() -> None:
    rules = ClassifyRules(max_file_bytes=1000)
    verdict = classify("src/big.py", b"x = 1\n" * 200, rules)
    assert verdict == FileClass("source", False, "oversized")


def test_zero_max_bytes_means_no_size_limit() -> None:
    rules = ClassifyRules(max_file_bytes=0)
    assert classify("src/big.py", b"x = 1\n" * 200, rules).indexed


def test_symlink_is_not_indexed() -> None:
    verdict = classify("src/link.py", b"orders/models.py", RULES, is_symlink=True)
    assert verdict == FileClass("source", False, "symlink")


def test_submodule_class_is_not_indexed() -> None:
    assert (SUBMODULE_CLASS.indexed, SUBMODULE_CLASS.skip_reason) == (False, "submodule")


@pytest.mark.parametrize(
    "header",
    [
        b"// Code generated by protoc-gen-go. DO NOT EDIT.\n",
        b"# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n",
        b"/**\n * @generated by relay-compiler\n */\n",
        b"# This file was autogenerated by uv via the following command:\n",
        b"# Auto generated by tools/make_width_tables.py\n",
    ],
)
def test_generated_marker_in_header_comment_marks_generated(header: bytes) -> None:
    assert classify("src/orders/client.py", header + CODE, RULES).file_kind == "generated"


def test_a_generator_marker_in_an_ignore_file_heads_a_list_of_other_files() -> None:
    assert classify(".gitignore", b"# Auto generated files\nbuild/\n", ClassifyRules()) == \
        FileClass("config", True, None)


def test_generated_marker_below_line_five_is_ignored() -> None:
    data = b"\n" * 5 + b"# DO NOT EDIT\n" + CODE
    assert not has_generated_marker(data)


def test_marker_words_outside_a_comment_are_ignored() -> None:
    data = b'"""Detects headers such as DO NOT EDIT and @generated."""\nimport re\n'
    assert classify("src/detect.py", data, RULES).file_kind == "source"


JAZZY_PAGE = (b"<!DOCTYPE html>\n<html lang=\"en\">\n  <head>\n    <title>Session Class "
              b"Reference</title>\n  </head>\n  <body>\n" + b"    <p>Session.request</p>\n" * 400
              + b"    <p>&copy; 2024 Alamofire. Generated by <a class=\"link\" "
              b"href=\"https://github.com/realm/jazzy\">jazzy v0.14.4</a></p>\n"
              b"  </body>\n</html>\n")


@pytest.mark.parametrize("page", [
    JAZZY_PAGE,
    b"<html><head><meta name=\"generator\" content=\"Doxygen 1.9.8\"/></head></html>\n",
])
def test_a_page_a_documentation_tool_wrote_is_generated(page: bytes) -> None:
    assert classify("docs/Classes/Session.html", page, RULES).file_kind == "generated"


def test_a_hand_written_page_is_not_generated() -> None:
    page = b"<html><body><p>Generated by hand, with care.</p></body></html>\n"
    assert classify("site/index.html", page, RULES).file_kind != "generated"


def test_generated_marker_does_not_relabel_fixture() -> None:
    data = b"# @generated\n" + CODE
    assert classify("tests/fixtures/gen.py", data, RULES).file_kind == "fixture"


# ---- end to end with a real repository --------------------------------------------------------


def test_gitattributes_in_repo_drive_classification(tmp_path: Path) -> None:
    builder = RepoBuilder.init(tmp_path / "shop")
    builder.write(".gitattributes", "api/** linguist-generated\nlibs/** linguist-vendored\n")
    builder.write("api/orders.py", CODE).write("libs/money.py", CODE).write("src/app.py", CODE)
    head = builder.commit("attributes")
    repo = GitRepo.open(builder.path)
    kinds = {
        f.path: classify(f.path, repo.read_blob(f.blob_sha), RULES, repo.attributes(head, f.path))
        for f in repo.tree_files(head)
    }
    assert kinds["api/orders.py"] == FileClass("generated", True)
    assert kinds["libs/money.py"] == FileClass("vendored", False, "vendored")
    assert kinds["src/app.py"] == FileClass("source", True)

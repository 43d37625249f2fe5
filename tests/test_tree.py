"""The package a file is of (``tree.package_key``): which files see each other's definitions
without an import."""

from __future__ import annotations

from freshmark.core.tree import package_key, package_seen


def test_a_java_test_and_its_main_code_share_a_package_across_source_sets():
    assert package_key("src/test/java/org/apache/commons/cli/BasicParserTest.java") == \
        package_key("src/main/java/org/apache/commons/cli/BasicParser.java")


def test_a_kotlin_package_spans_its_modules_multiplatform_source_sets():
    assert package_key("okio/src/jvmMain/kotlin/okio/JvmOkio.kt") == \
        package_key("okio/src/commonMain/kotlin/okio/Buffer.kt")


def test_a_bare_java_root_is_a_source_root():
    assert package_key("java/com/google/common/base/Strings.java") == \
        package_key("src/main/java/com/google/common/base/Joiner.java")


def test_the_same_package_in_two_modules_is_two_packages():
    assert package_key("okio/src/commonMain/kotlin/okio/Buffer.kt") != \
        package_key("okio-fakefilesystem/src/commonMain/kotlin/okio/FakeFileSystem.kt")


def test_a_subpackage_is_another_package():
    assert package_key("src/main/java/org/apache/commons/cli/help/HelpFormatter.java") != \
        package_key("src/main/java/org/apache/commons/cli/Option.java")


def test_a_java_file_and_a_kotlin_file_of_one_package_are_told_apart_by_language():
    assert package_key("src/main/kotlin/okio/Buffer.kt") != \
        package_key("src/main/java/okio/Buffer.java")


def test_a_go_package_is_its_directory_and_its_test_file_reads_it():
    assert package_key("cmd/app/flags.go") == ("cmd/app", ".go")
    assert package_key("cmd/app/flags_test.go") is None
    assert package_seen("cmd/app/flags_test.go") == package_key("cmd/app/flags.go")


def test_a_file_of_a_language_that_imports_what_it_uses_has_no_package():
    assert package_key("src/app/util.py") is None

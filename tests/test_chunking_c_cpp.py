"""C and C++ chunking: functions, structs, typedefs, namespaces, out-of-class methods."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text, detect_language, symbol_spans
from freshmark.core.chunking.model import Chunk

BUFFER_C = dedent(
    """\
    #include <stdlib.h>
    #include "buffer.h"

    /* A growable byte buffer. */
    struct buffer {
        char *data;
        size_t len;
    };

    typedef struct {
        int x;
        int y;
    } Point;

    /**
     * Allocates a buffer of `cap` bytes.
     */
    static struct buffer *buffer_new(size_t cap)
    {
        struct buffer *b = malloc(sizeof(struct buffer));
        b->data = calloc(cap, 1);
        return b;
    }

    #ifdef WITH_DEBUG
    void buffer_dump(const struct buffer *b) { print_hex(b->data, b->len); }
    #endif
    """
)

SHAPES_CPP = dedent(
    """\
    #include <vector>
    #include "shape.hpp"

    namespace geo {

    // Base of every shape.
    class Shape : public Drawable {
     public:
      virtual ~Shape() = default;
      double area() const {
        return compute_area(*this);
      }
      void scale(double factor);
    };

    }  // namespace geo

    void geo::Shape::scale(double factor) {
      transform(this, factor);
    }

    template <typename T>
    T Box<T>::get() const {
      return value_;
    }

    extern "C" {
    int shapes_count(void) { return registry().size(); }
    }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_c_functions_structs_and_typedef_structs() -> None:
    chunks = chunk_text("src/buffer.c", BUFFER_C)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("buffer", "struct", 4, 8),
        ("Point", "struct", 10, 13),
        ("buffer_new", "function", 15, 23),
        ("<module>#2", "block", 25, 25),
        ("buffer_dump", "function", 26, 26),
    ]  # a bare `#endif` is punctuation, not module code


def test_c_function_doc_signature_imports_and_references() -> None:
    chunks = by_symbol(chunk_text("buffer.c", BUFFER_C))
    new = chunks["buffer_new"]
    assert new.doc == "Allocates a buffer of `cap` bytes."
    assert new.signature == "static struct buffer *buffer_new(size_t cap)"
    assert new.imports == ["stdlib.h", "buffer.h"]
    assert new.references == ["buffer", "malloc", "calloc"]
    assert chunks["buffer"].doc == "A growable byte buffer."
    assert chunks["Point"].signature == "typedef struct Point"


def test_cpp_namespace_class_and_out_of_class_method_share_the_dotted_name() -> None:
    chunks = chunk_text("src/shapes.cpp", SHAPES_CPP)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("geo.Shape", "class", 6, 14),
        ("geo.Shape.area", "method", 10, 12),
        ("geo.Shape.scale", "method", 18, 20),
        ("Box.get", "method", 22, 25),
        ("<module>#2", "block", 27, 27),
        ("shapes_count", "function", 28, 28),
    ]


def test_cpp_class_summary_keeps_declarations_and_elides_inline_bodies() -> None:
    shape = by_symbol(chunk_text("shapes.cpp", SHAPES_CPP))["geo.Shape"]
    assert shape.text == dedent(
        """\
        // Base of every shape.
        class Shape : public Drawable {
         public:
          virtual ~Shape() = default;
          double area() const {
            ...
          }
          void scale(double factor);
        };"""
    )
    assert (shape.signature, shape.doc) == ("class Shape : public Drawable", "Base of every shape.")
    assert shape.references == ["Drawable"]


def test_cpp_template_method_includes_the_template_line() -> None:
    get = by_symbol(chunk_text("shapes.cpp", SHAPES_CPP))["Box.get"]
    assert get.text.splitlines()[0] == "template <typename T>"
    assert get.signature == "T Box<T>::get() const"
    assert get.imports == ["vector", "shape.hpp"]


MACRO_NAMESPACE_HPP = dedent(
    """\
    #include <string>

    MYLIB_NAMESPACE_BEGIN
    namespace detail
    {
    class lexer
    {
      public:
        int scan_number()
        {
            return 1;
        }
    };
    }  // namespace detail
    MYLIB_NAMESPACE_END

    FMT_BEGIN_NAMESPACE
    int format_int(int value) { return value; }
    Q_DECLARE_METATYPE(lexer)
    int format_uint(unsigned value) {
        LOG_CALL(value);
        return value;
    }
    FMT_END_NAMESPACE
    """
)


def test_cpp_a_macro_alone_on_its_line_does_not_hide_the_namespace_it_opens() -> None:
    chunks = {c.symbol: c for c in chunk_text("include/mylib/lexer.hpp", MACRO_NAMESPACE_HPP)}
    assert {"detail.lexer", "detail.lexer.scan_number", "format_int", "format_uint"} <= set(chunks)
    assert (chunks["detail.lexer.scan_number"].start_line,
            chunks["detail.lexer.scan_number"].end_line) == (9, 12)


def test_cpp_a_macro_called_as_a_statement_is_still_read_as_a_call() -> None:
    chunks = {c.symbol: c for c in chunk_text("include/mylib/lexer.hpp", MACRO_NAMESPACE_HPP)}
    assert "LOG_CALL" in chunks["format_uint"].references
    assert chunks["format_uint"].text.splitlines()[1] == "    LOG_CALL(value);"


EXPORTED_C = dedent(
    """\
    CJSON_PUBLIC(void) cJSON_Minify(char *json)
    {
        char *into = json;
        *into = '\\0';
    }

    CJSON_PUBLIC(cJSON *) cJSON_ParseWithOpts(const char *value, const char **end, int flag)
    {
        return parse(value, end);
    }
    """
)


def test_c_a_macro_wrapping_the_return_type_keeps_the_definition_it_starts() -> None:
    chunks = chunk_text("cJSON.c", EXPORTED_C)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("cJSON_Minify", "function", 1, 5),
        ("cJSON_ParseWithOpts", "function", 7, 10),
    ]
    assert chunks[0].signature == "CJSON_PUBLIC(void) cJSON_Minify(char *json)"


OPTIONS_HPP = dedent(
    """\
    #include <string>

    namespace opts {

    using ParsedHashMap = std::unordered_map<std::string, int>;
    constexpr size_t OPTION_LONGEST = 30;

    class Parser {
     public:
      int parse();
    };

    namespace {
    const std::string LQUOTE("'");
    }

    inline size_t width() {
      return OPTION_LONGEST;
    }

    }  // namespace opts
    """
)


def test_cpp_code_between_the_units_of_a_namespace_is_a_module_block_of_its_own() -> None:
    chunks = chunk_text("include/opts.hpp", OPTIONS_HPP)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 1),
        ("opts", "module", 3, 21),
        ("<module>#2", "block", 5, 6),
        ("opts.Parser", "class", 8, 11),
        ("<module>#3", "block", 13, 15),
        ("opts.width", "function", 17, 19),
    ]  # the anonymous namespace's constant too; the namespace's braces are its outline's
    assert by_symbol(chunks)["<module>#2"].text == (
        "using ParsedHashMap = std::unordered_map<std::string, int>;\n"
        "constexpr size_t OPTION_LONGEST = 30;")


def test_cpp_a_namespace_module_block_keeps_its_positional_name_in_symbol_spans() -> None:
    spans = symbol_spans("include/opts.hpp", OPTIONS_HPP)
    assert (spans["<module>#2"], spans["<module>#3"]) == ((5, 6), (13, 15))


CPP_HEADER = """#pragma once
#include <cstddef>

namespace fmt {
template <typename T> class memory_buffer {
 public:
  void grow(size_t size) {
    capacity_ = size * 2;
  }
 private:
  size_t capacity_;
};
}  // namespace fmt
"""
C_HEADER = """#ifdef __cplusplus
extern "C" {
#endif

typedef struct cJSON {
  int type;
} cJSON;

#ifdef __cplusplus
}
#endif
"""


def test_a_dot_h_header_holding_cpp_is_parsed_as_cpp_and_a_c_one_as_c() -> None:
    assert detect_language("include/fmt/format.h", CPP_HEADER) == "cpp"
    assert detect_language("cJSON.h", C_HEADER) == "c"
    symbols = {c.symbol: c.kind for c in chunk_text("include/fmt/format.h", CPP_HEADER)}
    assert symbols["fmt.memory_buffer.grow"] == "method"


def test_a_c_header_whose_comment_names_std_stays_c() -> None:
    header = "/* Parses like std::strtod, without a locale. */\nint ffc_parse(const char *s);\n"
    assert detect_language("ffc.h", header) == "c"


def test_a_return_type_read_into_the_name_leaves_the_function_its_own_name() -> None:
    source = "ffc_internal\nffc_adjusted_mantissa ffc_digit_comp(int a) {\n  return a;\n}\n"
    assert [c.symbol for c in chunk_text("ffc.cpp", source)] == ["ffc_digit_comp"]


def test_a_macro_between_the_return_type_and_a_qualified_name_is_not_glued_to_it() -> None:
    source = ("namespace details {\n"
              "void SPDLOG_INLINE thread_pool::post_log(int n) { post(n); }\n"
              "template <typename M>\n"
              "std::uint16_t SPDLOG_INLINE wincolor_sink<M>::set_color(int c) { return c; }\n"
              "}  // namespace details\n")
    assert [c.symbol for c in chunk_text("thread_pool-inl.h", source)] == [
        "details", "details.thread_pool.post_log", "details.wincolor_sink.set_color"]

def test_a_friend_function_defined_in_a_class_is_a_unit() -> None:
    source = ("class RedisQtAdapter : public QObject {\n"
              "    friend void RedisQtAddRead(void * adapter) {\n"
              "        static_cast<RedisQtAdapter *>(adapter)->addRead();\n    }\n"
              "  public:\n    void addRead() {}\n};\n")
    units = {c.symbol: (c.start_line, c.end_line) for c in chunk_text("qt.h", source)}
    assert units["RedisQtAdapter.RedisQtAddRead"] == (2, 4)


def test_a_cpp_conversion_operator_is_a_unit_named_by_its_type() -> None:
    source = ("struct fstring {\n"
              "  operator const string_view&() const { return str; }\n"
              "  explicit operator bool() const { return ok; }\n};\n"
              "template <typename T> fmt<T>::operator int() const { return 0; }\n")
    units = {c.symbol: (c.kind, c.start_line) for c in chunk_text("fstring.hpp", source)}
    assert units["fstring.operatorconststring_view&"] == ("method", 2)
    assert units["fstring.operatorbool"] == ("method", 3)
    assert units["fmt.operatorint"] == ("method", 5)


def test_a_type_defined_inside_a_cpp_class_is_a_unit_of_its_own() -> None:
    source = ("class lexer {\n public:\n  enum class token_type {\n    value_true,\n"
              "    value_false,\n  };\n  struct position_t {\n"
              "    operator size_t() const { return chars_read_total; }\n  };\n};\n")
    units = {c.symbol: (c.kind, c.start_line, c.end_line) for c in chunk_text("lexer.hpp", source)}
    assert units["lexer.token_type"] == ("enum", 3, 6)
    assert units["lexer.position_t"] == ("struct", 7, 9)
    assert units["lexer.position_t.operatorsize_t"] == ("method", 8, 8)


def test_an_anonymous_enum_with_a_base_type_is_module_code_not_a_unit_named_by_the_type() -> None:
    source = ("namespace detail {\nenum : ullong { is_unpacked_bit = 1ULL << 63 };\n"
              "enum : unsigned long long { has_named_args_bit = 1ULL << 62 };\n"
              "enum class color : int { red };\n}  // namespace detail\n")
    chunks = chunk_text("include/fmt/base.h", source)
    assert [(c.symbol, c.kind) for c in chunks] == [
        ("detail", "module"), ("<module>", "block"), ("detail.color", "enum")]
    assert (chunks[1].start_line, chunks[1].end_line) == (2, 3)


def test_a_googletest_test_is_named_by_its_suite_and_its_name() -> None:
    source = ("TEST(chrono_test, format_default) {\n"
              "  EXPECT_EQ(\"42s\", fmt::format(\"{}\", std::chrono::seconds(42)));\n}\n\n"
              "TEST_F(file_test, open_buffered_file) { file f; }\n\n"
              "TYPED_TEST(numeric_arg_test, make_and_visit) { check(); }\n")
    assert [(c.symbol, c.kind) for c in chunk_text("test/chrono-test.cc", source)] == [
        ("chrono_test.format_default", "function"),
        ("file_test.open_buffered_file", "function"),
        ("numeric_arg_test.make_and_visit", "function"),
    ]


def test_a_catch2_or_doctest_test_case_is_named_by_its_string_and_its_fixture() -> None:
    source = ('TEST_CASE("rotating_file_logger3", "[rotating_logger]") {\n'
              '  SECTION("Tear down") { spdlog::drop_all(); }\n}\n\n'
              'TEST_CASE_METHOD(Fixture, "uses  a fixture", "[tag]") { check(); }\n\n'
              'TEST_CASE("basic usage" * doctest::skip())\n{\n  check();\n}\n')
    assert [(c.symbol, c.kind, c.start_line, c.end_line)
            for c in chunk_text("tests/test_file_logging.cpp", source)] == [
        ("rotating_file_logger3", "function", 1, 3),
        ("Fixture.uses a fixture", "function", 5, 5),
        ("basic usage", "function", 7, 10),
    ]


def test_a_macro_taking_a_string_before_a_block_not_named_for_a_test_is_no_test() -> None:
    source = 'MATCHER(IsEmpty, "is empty") {\n  return arg.empty();\n}\n'
    assert [(c.symbol, c.kind) for c in chunk_text("gmock.h", source)] == [
        ("<module>", "block")]


def test_a_one_line_function_references_a_namesake_its_body_calls_not_its_own_header() -> None:
    source = ("namespace spdlog {\n"
              "SPDLOG_INLINE void drop(const string &name) { registry::instance().drop(name); }\n"
              "void flush_on(level_enum level) { default_logger_raw()->set_flush(level); }\n"
              "}  // namespace spdlog\n")
    chunks = by_symbol(chunk_text("include/spdlog/spdlog-inl.h", source))
    assert "drop" in chunks["spdlog.drop"].references
    assert "flush_on" not in chunks["spdlog.flush_on"].references

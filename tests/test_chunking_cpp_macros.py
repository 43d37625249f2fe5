"""C and C++ macros the parser would misread (``core/chunking/macros.py``): specifiers before a
declaration, visibility attributes in a class head, ``constexpr`` stand-ins, try/catch blocks."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text


def units(path: str, source: str) -> dict[str, tuple[str, int, int]]:
    return {c.symbol: (c.kind, c.start_line, c.end_line) for c in chunk_text(path, source)}


def test_a_macro_before_a_template_keeps_the_class_it_exports() -> None:
    source = dedent(
        """\
        namespace detail {
        struct node {};
        }  // namespace detail

        FMT_EXPORT template <typename Context> class dynamic_format_arg_store {
         private:
          std::vector<basic_format_arg<Context>> data_;

         public:
          template <typename T> void push_back(const T& arg) { data_.push_back(arg); }

          void clear() { data_.clear(); }
        };
        """
    )
    found = units("include/fmt/args.h", source)
    assert found["dynamic_format_arg_store"] == ("class", 5, 13)
    assert found["dynamic_format_arg_store.clear"] == ("method", 12, 12)


def test_a_macro_before_a_constructor_or_a_conversion_leaves_each_its_own_name() -> None:
    source = dedent(
        """\
        template <typename Char> struct basic_fstring {
         private:
          basic_string_view<Char> str_;

         public:
          template <typename S, FMT_ENABLE_IF(std::is_base_of<compile_string, S>::value)>
          FMT_ALWAYS_INLINE basic_fstring(const S&) : str_(S()) {
            FMT_CONSTEXPR auto sv = basic_string_view<Char>(S());
            detail::ignore_unused(sv);
          }
          basic_fstring(runtime_format_string<Char> fmt) : str_(fmt.str) {}

          FMT_DEPRECATED operator basic_string_view<Char>() const { return str_; }
          auto get() const -> basic_string_view<Char> { return str_; }
        };
        """
    )
    chunks = chunk_text("include/fmt/xchar.h", source)
    assert [(c.symbol, c.start_line) for c in chunks] == [
        ("basic_fstring", 1),
        ("basic_fstring.basic_fstring", 6),
        ("basic_fstring.basic_fstring", 11),
        ("basic_fstring.operatorbasic_string_view", 13),
        ("basic_fstring.get", 14),
    ]


def test_a_macro_between_class_and_its_name_leaves_the_class_its_name() -> None:
    source = dedent(
        """\
        class FMT_API file {
         public:
          FMT_API file(cstring_view path, int oflag) : fd_(open(path, oflag)) {}
          auto descriptor() const -> int { return fd_; }
        };

        class FMT_SO_VISIBILITY("default") format_error : public std::runtime_error {
         public:
          using std::runtime_error::runtime_error;
        };
        """
    )
    found = units("include/fmt/os.h", source)
    assert found["file"] == ("class", 1, 5)
    assert found["file.descriptor"] == ("method", 4, 4)
    assert found["format_error"] == ("class", 7, 10)


def test_a_macro_standing_for_constexpr_in_an_if_keeps_the_method_whole() -> None:
    source = dedent(
        """\
        class dynamic_format_arg_store {
         public:
          template <typename T> void push_back(const T& arg) {
            if FMT_CONSTEXPR20 (need_copy<T>::value) {
              emplace_arg(dynamic_args_.push<stored_t<T>>(arg));
            } else {
              emplace_arg(detail::unwrap(arg));
            }
          }

          void clear() { data_.clear(); }
        };
        """
    )
    found = units("args.hpp", source)
    assert found["dynamic_format_arg_store.push_back"] == ("method", 3, 9)
    assert found["dynamic_format_arg_store.clear"] == ("method", 11, 11)


def test_a_macro_opening_a_try_block_leaves_the_function_its_end() -> None:
    source = dedent(
        """\
        class iterator_buffer {
         public:
          ~iterator_buffer() {
            FMT_TRY { flush(); }
            FMT_CATCH(...) {}
          }

          auto out() -> OutputIt {
            flush();
            return out_;
          }
        };
        """
    )
    found = units("base.hpp", source)
    assert found["iterator_buffer.~iterator_buffer"] == ("method", 3, 6)
    assert found["iterator_buffer.out"] == ("method", 8, 11)


def test_a_macro_alone_on_its_line_before_a_comment_is_still_read_as_blank() -> None:
    source = dedent(
        """\
        #include <string>

        FMT_BEGIN_NAMESPACE  // namespace fmt { inline namespace v11 {
        namespace detail {
        int format_int(int value) { return value; }
        }  // namespace detail
        FMT_END_NAMESPACE  // }}
        """
    )
    assert units("format.hpp", source)["detail.format_int"] == ("function", 5, 5)


def test_a_macro_that_is_the_return_type_stays_in_the_signature() -> None:
    source = "LARGE_INTEGER now_ticks(void) {\n    return ticks();\n}\n"
    [chunk] = chunk_text("clock.c", source)
    assert (chunk.symbol, chunk.signature) == ("now_ticks", "LARGE_INTEGER now_ticks(void)")


def test_a_macro_before_a_constructor_of_a_class_declared_elsewhere_leaves_it_a_method() -> None:
    source = dedent(
        """\
        namespace spdlog {
        namespace details {
        SPDLOG_INLINE log_msg::log_msg(string_view_t a_logger_name)
            : logger_name(a_logger_name) {}

        void log_msg::clear() { payload = {}; }
        }  // namespace details
        }  // namespace spdlog

        SPDLOG_INLINE spdlog::async_logger::async_logger(std::string logger_name)
            : logger(std::move(logger_name)) {}

        SPDLOG_INLINE spdlog::async_logger::~async_logger() { flush(); }
        """
    )
    found = units("include/spdlog/details/log_msg-inl.h", source)
    assert found["spdlog.details.log_msg.log_msg"] == ("method", 3, 4)
    assert found["spdlog.details.log_msg.clear"] == ("method", 6, 6)
    assert found["spdlog.async_logger.async_logger"] == ("method", 10, 11)
    assert found["spdlog.async_logger.~async_logger"] == ("method", 13, 13)

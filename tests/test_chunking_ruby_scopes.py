"""Ruby definitions the class body makes in other forms: under a condition, handed to a call
(``private def``), and namespaces that only wrap other containers make no chunk of their own."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text

UTILS = dedent('''\
    module Rack
      module Utils
        if defined?(Process::CLOCK_MONOTONIC)
          def clock_time
            Process.clock_gettime(Process::CLOCK_MONOTONIC)
          end
        else
          def clock_time
            Time.now.to_f
          end
        end

        # Compares in constant time.
        private def secure_compare(a, b)
          a == b
        end

        def escape_html(s) = s.to_s if RUBY_VERSION > "3"

        attr_accessor :key_space_limit
      end
    end
''')


def spans() -> list[tuple[str, int, int]]:
    return [(c.symbol, c.start_line, c.end_line) for c in chunk_text("lib/rack/utils.rb", UTILS)]


def test_methods_defined_under_a_condition_are_chunks_of_their_own():
    assert ("Rack.Utils.clock_time", 4, 6) in spans()
    assert ("Rack.Utils.clock_time", 8, 10) in spans()
    assert ("Rack.Utils.escape_html", 18, 18) in spans()


def test_a_method_handed_to_private_is_a_chunk_with_its_doc():
    assert ("Rack.Utils.secure_compare", 13, 16) in spans()


def test_a_namespace_that_only_wraps_another_makes_no_chunk():
    assert [symbol for symbol, _, _ in spans() if symbol in ("Rack", "Rack.Utils")] == \
        ["Rack.Utils"]


def test_a_namespace_with_a_doc_comment_keeps_its_chunk():
    text = "# The Rack namespace.\nmodule Rack\n  class Head\n    def call(env)\n    end\n" \
           "  end\nend\n"
    assert "Rack" in [c.symbol for c in chunk_text("lib/rack/head.rb", text)]


def test_a_method_named_by_an_operator_is_a_chunk_of_that_name():
    code = dedent('''\
        class Version
          # Orders versions by their parts.
          def <=>(other)
            to_a <=> other.to_a
          end

          def []=(index, part)
            parts[index] = part
          end
        end
    ''')
    assert [(c.symbol, c.start_line, c.end_line) for c in chunk_text("lib/version.rb", code)
            if c.kind == "method"] == [("Version.<=>", 2, 5), ("Version.[]=", 7, 9)]

"""Ruby calls a method without arguments or parentheses by its bare name (``validate``); a
name a parameter or an assignment made a local is the variable, not a call."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text

REQUEST = dedent('''\
    class Request
      def perform(options)
        validate
        setup_raw_request
        result = handle_unauthorized
        x = 1
        puts x
        [1].each { |item| log(item) }
        options.merge(result)
      end

      def validate
      end
    end
''')


def perform_refs() -> list[str]:
    chunks = chunk_text("lib/request.rb", REQUEST)
    return next(c for c in chunks if c.symbol == "Request.perform").references


def test_a_method_called_bare_is_a_reference():
    assert "validate" in perform_refs()
    assert "setup_raw_request" in perform_refs()


def test_a_method_called_bare_on_the_right_of_an_assignment_is_a_reference():
    assert "handle_unauthorized" in perform_refs()


def test_a_local_variable_parameter_or_block_parameter_is_no_reference():
    refs = perform_refs()
    assert not {"x", "result", "options", "item"} & set(refs)


def test_a_method_named_in_capitals_called_through_a_receiver_is_a_reference():
    # rack's ``Request#params``: ``self.GET.merge(self.POST)``; the grammar parses the
    # method's name as a constant.
    code = dedent('''\
        class Request
          def params
            self.GET.merge(self.POST)
          end

          def override(req)
            req.GET
          end
        end
    ''')
    chunks = {c.symbol: c for c in chunk_text("lib/request.rb", code)}
    assert {"GET", "POST"} <= set(chunks["Request.params"].references)
    assert "GET" in chunks["Request.override"].references

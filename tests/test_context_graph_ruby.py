"""Ruby callers in the context graph: a call is read by what it is written through."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project

RACK = {
    "lib/rack/media_type.rb": '''module Rack
  class MediaType
    class << self
      def params(content_type)
        content_type.split(";")
      end
    end
  end
end
''',
    "lib/rack/utils.rb": '''module Rack
  module Utils
    def set_cookie_header(key, value)
      "#{key}=#{value}"
    end
    module_function :set_cookie_header
  end
end
''',
    "lib/rack/request.rb": '''require_relative 'media_type'

module Rack
  class Request
    module Helpers
      def media_type_params
        MediaType.params(content_type)
      end

      def params
        query_params.merge(form_params)
      end

      def content_type
        "text/plain"
      end
    end
  end
end
''',
    "lib/rack/response.rb": '''require_relative 'utils'

module Rack
  class Response
    module Helpers
      def set_cookie(key, value)
        add_header "set-cookie", Utils.set_cookie_header(key, value)
      end

      def set_cookie_header
        get_header "set-cookie"
      end
    end
  end
end
''',
}


@pytest.fixture
def rack(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("rack"), RACK, package="lib").path)


def test_a_ruby_call_on_a_constant_is_that_modules_method_not_its_own_classes(rack):
    assert callers_in_slice(rack, "Rack::MediaType.params") == {
        "Rack.Request.Helpers.media_type_params": "high"}
    assert "Rack.Request.Helpers.media_type_params" not in \
        callers_in_slice(rack, "Rack::Request::Helpers#params")
    assert callers_in_slice(rack, "Rack::Utils.set_cookie_header") == {
        "Rack.Response.Helpers.set_cookie": "high"}
    assert callers_in_slice(rack, "Rack::Response::Helpers#set_cookie_header") == {}


PARSER = {
    "lib/rack/multipart/parser.rb": '''module Rack
  module Multipart
    class Parser
      def self.parse(io, boundary)
        parser = new(boundary)
        parser.parse(io)
        parser.result
      end

      def initialize(boundary)
        @boundary = boundary
      end

      def parse(io)
        @result = io.read.split(@boundary)
      end

      def result
        @result
      end
    end
  end
end
''',
    "lib/rack/multipart.rb": '''require_relative 'multipart/parser'

module Rack
  module Multipart
    class << self
      def parse_multipart(env)
        Parser.parse(env["rack.input"], "--")
      end
    end
  end
end
''',
    "lib/sinatra/base.rb": '''module Sinatra
  class Base
    def self.settings
      self
    end

    def settings
      self.class.settings
    end

    def filter!
      settings.filters
    end

    class << self
      def run!
        settings.run
      end
    end
  end
end
''',
}


@pytest.fixture
def parser(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("rack"), PARSER, package="lib").path)


def test_a_ruby_call_on_the_class_reaches_its_class_method_and_one_on_an_object_the_other(
        parser):
    assert callers_in_slice(parser, "Rack::Multipart::Parser.parse") == {
        "Rack.Multipart.parse_multipart": "high"}
    assert callers_in_slice(parser, "Rack::Multipart::Parser#parse") == {
        "Rack.Multipart.Parser.parse": "high"}  # ``parser.parse(io)`` in ``self.parse``


def test_a_bare_ruby_call_reaches_the_method_of_its_callers_kind(parser):
    assert callers_in_slice(parser, "Sinatra::Base#settings") == {"Sinatra.Base.filter!": "high"}
    assert callers_in_slice(parser, "Sinatra::Base.settings") == {
        "Sinatra.Base.settings": "high", "Sinatra.Base.run!": "high"}

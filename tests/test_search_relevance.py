"""What a default search spends its slots on: implementation first, files as answers, long
reports read whole, nothing historical unless asked (issue: code an agent needs)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from search_fixtures import indexed_project

from freshmark.core.config import Config
from freshmark.core.errors import BadInput
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.faces.cli.main import cli
from freshmark.services.indexing.indexer import IndexRequest, index_repo
from freshmark.services.retrieval.search import search, search_files

SIGNATURE_SOURCE = '''"""Webhook receivers."""
import hmac


def signature_ok(secret: bytes, body: bytes, header: str) -> bool:
    """Check the webhook signature in constant time."""
    expected = "sha256=" + hmac.new(secret, body, "sha256").hexdigest()
    return hmac.compare_digest(expected, header)
'''

SIGNATURE_TEST = '''from webhooks import signature_ok


def test_wrong_webhook_signature_is_refused():
    """A webhook with a wrong signature is refused."""
    assert signature_ok(b"s", b"body", "sha256=bad") is False


def test_empty_signature_header_is_refused():
    assert not signature_ok(b"s", b"", "")
'''

SIGNATURE_DOC = '''# Webhooks

Every webhook is checked: its signature header is compared with the signature we compute.
'''

TRANSLATION = '''msgid "webhook signature checked"
msgstr "signature du webhook vérifiée"

msgid "the webhook signature is checked"
msgstr "la signature du webhook est vérifiée"
'''

CHANGELOG = '''# Changelog

- Fixed: the webhook signature is checked in constant time (signature_ok).
- The webhook signature checked again for every webhook signature header.
'''


@pytest.fixture
def hooks(make_repo, fm_home):
    return indexed_project(make_repo("hooks"), {
        "scheduler/webhooks.py": SIGNATURE_SOURCE,
        "tests/test_webhooks.py": SIGNATURE_TEST,
        "docs/webhooks.md": SIGNATURE_DOC,
        "locale/fr/LC_MESSAGES/messages.po": TRANSLATION,
        "CHANGELOG.md": CHANGELOG,
    }, package="pkg")


QUESTION = "how is the webhook signature checked"


def _paths(response) -> list[str]:
    return [r.record.path for r in response.results]


def test_implementation_ranks_above_tests_and_docs_that_repeat_the_words(hooks):
    response = search(SearchRequest.build(QUESTION, k=5), str(hooks.path),
                      settings=Settings.from_env())
    assert _paths(response)[0] == "scheduler/webhooks.py"
    assert response.results[0].record.symbol == "signature_ok"


def test_default_search_spends_no_slot_on_translations_or_changelogs(hooks):
    response = search(SearchRequest.build(QUESTION, k=20), str(hooks.path),
                      settings=Settings.from_env())
    assert not {"locale/fr/LC_MESSAGES/messages.po", "CHANGELOG.md"} & set(_paths(response))


def test_kind_asks_for_translations_and_changelogs(hooks):
    settings = Settings.from_env()
    po = search(SearchRequest.build(QUESTION, k=5, kinds=["translation"]), str(hooks.path),
                settings=settings)
    assert set(_paths(po)) == {"locale/fr/LC_MESSAGES/messages.po"}
    assert {r.record.file_kind for r in po.results} == {"translation"}
    notes = search(SearchRequest.build(QUESTION, k=5, kinds="changelog"), str(hooks.path),
                   settings=settings)
    assert set(_paths(notes)) == {"CHANGELOG.md"}


def test_kind_limits_results_to_the_named_kinds(hooks):
    response = search(SearchRequest.build(QUESTION, k=10, kinds=["test", "doc"]), str(hooks.path),
                      settings=Settings.from_env())
    assert response.results
    assert {r.record.file_kind for r in response.results} <= {"test", "doc"}


@pytest.mark.parametrize("kinds", ["", " , ", [" "]])
def test_a_kind_that_names_no_kind_is_refused_not_searched_as_nothing(kinds):
    with pytest.raises(BadInput, match="kind names no file kind"):
        SearchRequest.build(QUESTION, kinds=kinds)


def test_unknown_kind_is_refused_naming_the_kinds(hooks):
    with pytest.raises(BadInput, match="unknown file kind 'sources'.*source, test"):
        search(SearchRequest.build(QUESTION, kinds=["sources"]), str(hooks.path),
               settings=Settings.from_env())


def test_file_answers_name_each_file_once_with_its_best_chunks(hooks):
    response = search_files(SearchRequest.build(QUESTION, k=3), str(hooks.path),
                            settings=Settings.from_env())
    paths = [f.path for f in response.files]
    assert paths[0] == "scheduler/webhooks.py"
    assert len(paths) == len(set(paths)) == 3
    for found in response.files:
        assert found.chunks and {c.record.path for c in found.chunks} == {found.path}
        assert found.to_dict()["citation"] == found.chunks[0].citation.text()


def test_one_file_cannot_fill_every_slot(make_repo, fm_home):
    repo = make_repo("crowd")
    repo.write("crowd.py", "".join(
        f"def parse_token_{n}(text):\n    return parse_token(text, {n})\n\n\n" for n in range(8)))
    repo.write("other.py", "def parse_token(text, n):\n    return text.split()[n]\n")
    repo.commit("crowd")
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config())
    response = search(SearchRequest.build("parse token", k=4), str(repo.path),
                      settings=Settings.from_env())
    assert "other.py" in _paths(response)
    assert _paths(response).count("crowd.py") <= 3


def test_file_deleted_since_indexing_is_hidden_unless_history_is_asked(make_repo, fm_home):
    repo = make_repo("gone")
    repo.write("billing/invoice.py", "def total_invoice(lines):\n    return sum(lines)\n")
    repo.write("billing/tax.py", "def tax_rate(region):\n    return 0.2\n")
    repo.commit("billing")
    settings = Settings.from_env()
    index_repo(IndexRequest(repo.path), settings=settings, config=Config())
    repo.delete("billing/invoice.py").commit("drop invoices")  # not re-indexed yet
    plain = search(SearchRequest.build("total_invoice", k=5), str(repo.path), settings=settings)
    assert "billing/invoice.py" not in _paths(plain)
    history = search(SearchRequest.build("total_invoice", k=5, include_history=True),
                     str(repo.path), settings=settings)
    gone = [r for r in history.results if r.record.path == "billing/invoice.py"]
    assert gone and str(gone[0].verification.verdict) == "historical"


def test_long_issue_report_finds_the_file_its_traceback_names(make_repo, fm_home):
    repo = make_repo("report")
    repo.write("lib/alpha/reader.py",
               "def read_table(path):\n    \"\"\"Read a table.\"\"\"\n    return open(path)\n")
    repo.write("lib/alpha/writer.py",
               "def write_table(table, path):\n    \"\"\"Write a table.\"\"\"\n    return path\n")
    repo.write("docs/tables.md", "Reading and writing a table: read a table, write a table.\n"
                                 * 5)
    repo.commit("tables")
    index_repo(IndexRequest(repo.path), settings=Settings.from_env(), config=Config())
    report = (
        "Writing a table fails\n\nWhen I try to write my table to a file the program crashes. "
        "I expected the table to be written like any other table, and reading works fine. "
        "Here is what I did and what happened, with the full output below.\n\n"
        "```\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/lib/alpha/writer.py", line 3, in '
        "write_table\n    return path\nTypeError: expected str\n```\n"
    )
    response = search_files(SearchRequest.build(report, k=3), str(repo.path),
                            settings=Settings.from_env())
    assert response.files[0].path == "lib/alpha/writer.py"


def test_cli_search_files_and_kind_in_json(hooks):
    result = CliRunner().invoke(cli, ["search", QUESTION, "--repo", str(hooks.path), "--files",
                                      "--kind", "source,test", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    files = json.loads(result.output)["files"]
    assert files[0]["path"] == "scheduler/webhooks.py"
    assert {f["file_kind"] for f in files} <= {"source", "test"}


def test_a_copy_of_a_chunk_in_another_file_takes_no_place_of_its_own(fm_home, make_repo):
    # An amalgamated single header repeats every definition of the library's own headers.
    project = indexed_project(make_repo("hooks"), {
        "hooks/webhooks.py": SIGNATURE_SOURCE,
        "single_include/webhooks_all.py": SIGNATURE_SOURCE,
        "hooks/test_webhooks.py": SIGNATURE_TEST,
    }, package="hooks")
    response = search(SearchRequest.build("check the webhook signature in constant time", k=5),
                      str(project.path), settings=Settings.from_env())
    texts = [r.record.text for r in response.results]
    signature = [r.record.path for r in response.results if r.record.symbol == "signature_ok"]
    assert len(signature) == 1 and len(texts) == len(set(texts))


HAS_SOURCE = '''def has(cls):
    """Check whether cls is a class with attrs attributes."""
    return getattr(cls, "__attrs_attrs__", None) is not None


def in_(options):
    """A validator that raises if the value is not in options."""
    return lambda value: value in options
'''
HAS_STUB = "def has(cls: type) -> bool: ...\ndef in_(options: list) -> object: ...\n"


@pytest.fixture
def attrs_like(store_env, make_repo):
    callers = {f"attrs/check_{n}.py": f'from attrs._funcs import has, in_\n\n\n'
               f'def check_{n}(obj):\n    """The object has a value and has attributes: it '
               f'has to be in the set."""\n    return has(type(obj)) and in_([{n}])(obj)\n'
               for n in range(8)}
    return indexed_project(make_repo("attrs"), {
        "attrs/_funcs.py": HAS_SOURCE, "attrs/__init__.pyi": HAS_STUB, **callers,
    }, package="attrs")


@pytest.mark.parametrize("name", ["has", "in_"])
def test_a_one_word_name_finds_its_definition_first_not_the_code_using_it(attrs_like, name):
    response = search(SearchRequest.build(name, k=3), str(attrs_like.path),
                      settings=Settings.from_env())
    first = response.results[0].record
    assert (first.path, first.symbol) == ("attrs/_funcs.py", name)


def test_a_type_stub_ranks_after_the_implementation_of_its_name(attrs_like):
    response = search(SearchRequest.build("has", k=5), str(attrs_like.path),
                      settings=Settings.from_env())
    paths = [r.record.path for r in response.results if r.record.symbol == "has"]
    assert paths[:2] == ["attrs/_funcs.py", "attrs/__init__.pyi"]


HEADERS_RB = '''module Rack
  class Headers
    # Keys transformed in a copy.
    def transform_keys(&block)
      dup.transform_keys!(&block)
    end

    # Keys transformed in place.
    def transform_keys!(&block)
      keys.each { |key| self[yield(key)] = delete(key) }
      self
    end

    # Headers made from the pairs given.
    def self.[](*items)
      new.merge!(Hash[*items])
    end

    # The value of a header, by its name in any case.
    def [](key)
      super(key.downcase)
    end

    # Sets a header, by its name in lower case.
    def []=(key, value)
      super(key.downcase, value)
    end

    # Headers in the order of their names.
    def <=>(other)
      to_a <=> other.to_a
    end
  end

  class Response
    module Helpers
      # The content type of the response.
      def content_type
        get_header "content-type"
      end

      # Sets the content type of the response.
      def content_type=(content_type)
        set_header "content-type", content_type
      end
    end
  end

  module Utils
    # Whether the path stays inside the root.
    def valid_path?(path)
      path.valid_encoding? && !path.include?("\\0")
    end

    def clean_path(path)
      valid_path?(path) ? path : "/"
    end
  end
end
'''


@pytest.mark.parametrize(("query", "symbol"), [
    ("transform_keys!", "Rack.Headers.transform_keys!"),
    ("transform_keys", "Rack.Headers.transform_keys"),
    ("Rack::Utils.valid_path?", "Rack.Utils.valid_path?"),
    ("valid_path?", "Rack.Utils.valid_path?"),
    ("Rack::Headers#[]=", "Rack.Headers.[]="),
    ("Rack::Headers#<=>", "Rack.Headers.<=>"),
    ("Rack::Response::Helpers#content_type=", "Rack.Response.Helpers.content_type="),
    ("content_type=", "Rack.Response.Helpers.content_type="),
    ("Rack::Response::Helpers#content_type", "Rack.Response.Helpers.content_type"),
])
def test_a_ruby_method_looked_up_with_its_mark_comes_first(store_env, make_repo, query, symbol):
    repo = indexed_project(make_repo("rack"), {"lib/rack/headers.rb": HEADERS_RB}, package="lib")
    response = search(SearchRequest.build(query, k=3), str(repo.path),
                      settings=Settings.from_env())
    assert response.results[0].record.symbol == symbol


@pytest.mark.parametrize(("query", "head"), [
    ("Rack::Headers#[]", "def [](key)"), ("Rack::Headers.[]", "def self.[](*items)")])
def test_a_ruby_operator_method_looked_up_with_its_class_is_that_definition(
        store_env, make_repo, query, head):
    repo = indexed_project(make_repo("rack"), {"lib/rack/headers.rb": HEADERS_RB}, package="lib")
    response = search(SearchRequest.build(query, k=3), str(repo.path),
                      settings=Settings.from_env())
    assert head in response.results[0].record.text


PARSER_RB = '''module Rack
  module Multipart
    class Parser
      # Parses a whole body: makes a parser and runs it.
      def self.parse(io, boundary)
        parser = new(boundary)
        parser.parse(io)
      end

      # Parses the parts of a body read from io.
      def parse(io)
        io.read.split(@boundary)
      end
    end
  end
end
'''


@pytest.mark.parametrize(("query", "head"), [
    ("Rack::Multipart::Parser.parse", "def self.parse"),
    ("Rack::Multipart::Parser::parse", "def self.parse"),
    ("Parser.parse", "def self.parse"),
    ("Rack::Multipart::Parser#parse", "def parse"),
    ("Parser#parse", "def parse"),
])
def test_a_ruby_method_written_on_its_class_is_the_class_method_and_with_a_hash_the_other(
        store_env, make_repo, query, head):
    repo = indexed_project(make_repo("rack"), {"lib/rack/multipart/parser.rb": PARSER_RB},
                           package="lib")
    response = search(SearchRequest.build(query, k=3), str(repo.path),
                      settings=Settings.from_env())
    assert f"{head}(" in response.results[0].record.text

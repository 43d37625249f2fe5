"""A method handed on as a value (a callback, a bound function) is used by the code handing it
on: that code is among the method's callers (Go's are in test_context_graph_go.py)."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.request import ContextRequest
from freshmark.core.settings import Settings
from freshmark.services.context.build import build_context

READER_JS = """class Reader {
  start (stream) {
    stream.on('data', this.onData.bind(this))
    stream.on('end', this.onEnd)
  }

  onData (chunk) {
    this.chunks.push(chunk)
  }

  onEnd () {
    this.done = true
  }
}

module.exports = Reader
"""

WORKER_PY = '''"""A worker thread draining a queue."""

import threading


class Worker:
    def start(self):
        """Start draining in a thread of its own, the oldest items first."""
        self.items = sorted(self.items, key=self.order)
        thread = threading.Thread(target=self.run_loop)
        thread.start()

    def run_loop(self):
        """Drain the queue until it is closed."""
        return self.queue.drain()

    def order(self, item):
        """The key that sorts items oldest first."""
        return item.created
'''


def callers(repo_path: str, query: str) -> dict[str, str]:
    slice_ = build_context(ContextRequest.build(query, level="L1"), repo_path,
                           settings=Settings.from_env())
    return {s.symbol: s.confidence for s in slice_.sections if s.role == "caller"}


def test_a_javascript_method_bound_or_passed_through_this_is_called_by_the_passer(
        fm_home, make_repo):
    repo = str(indexed_project(make_repo("reader"), {"lib/reader.js": READER_JS},
                               package="lib").path)
    assert callers(repo, "Reader.onData") == {"Reader.start": "high"}
    assert callers(repo, "Reader.onEnd") == {"Reader.start": "high"}


def test_a_python_method_passed_through_self_is_called_by_the_passer(fm_home, make_repo):
    repo = str(indexed_project(make_repo("worker"), {"worker/pool.py": WORKER_PY},
                               package="worker").path)
    assert callers(repo, "Worker.run_loop") == {"Worker.start": "high"}
    assert callers(repo, "Worker.order") == {"Worker.start": "high"}


REQUESTS_PY = '''"""A request read from a receive channel."""


class Request:
    def receive(self):
        """The next message of the channel."""
        return self._receive()
'''

CACHED_PY = '''"""A request whose messages a second reader can read again."""

from app.requests import Request


class CachedRequest(Request):
    def wrapped_receive(self):
        """The next message, kept for a second reader."""
        return self.receive()
'''

ENDPOINT_PY = '''"""An endpoint answering one request."""

from app.requests import Request


class Endpoint:
    def __init__(self, scope, receive):
        self.scope = scope
        self.receive = receive

    def dispatch(self):
        """Answer the request with its first message."""
        request = Request(self.scope, receive=self.receive)
        return request.first()
'''


def test_a_python_attribute_handed_on_through_self_is_no_call_of_the_class_named_beside_it(
        fm_home, make_repo):
    # ``Request(self.scope, receive=self.receive)`` hands on the endpoint's own ``receive``;
    # a subclass's ``self.receive()`` is the named class's.
    repo = str(indexed_project(make_repo("endpoint"), {"app/requests.py": REQUESTS_PY,
                                                       "app/cached.py": CACHED_PY,
                                                       "app/endpoint.py": ENDPOINT_PY},
                               package="app").path)
    assert callers(repo, "Request.receive") == {
        "CachedRequest.wrapped_receive": "high", "Endpoint.dispatch": "medium"}


HANDLER_PY = '''"""A handler writing records to its sink."""


class Handler:
    def stop(self):
        """Stop writing: close the sink."""
        self.sink.close()

    def remove(self, record):
        """Forget a record not yet written."""
        self.pending.discard(record)
'''

LOGGER_PY = '''"""A logger dispatching records to its handlers."""

from app.handler import Handler


class Logger:
    def add(self, sink):
        """Start writing records to ``sink``."""
        self.handlers.append(Handler(sink))

    def remove(self, index):
        """Remove a handler and stop it."""
        handler = self.handlers.pop(index)
        handler.stop()

    def stop(self):
        """Remove the first handler."""
        self.remove(0)
'''


def test_a_python_call_through_another_value_is_no_call_of_its_own_class_s_namesake(
        fm_home, make_repo):
    # ``handler.stop()`` in ``Logger.remove`` is the imported Handler's, not ``Logger.stop``.
    repo = str(indexed_project(make_repo("logger"), {"app/handler.py": HANDLER_PY,
                                                     "app/logger.py": LOGGER_PY},
                               package="app").path)
    assert callers(repo, "Logger.stop") == {}
    assert callers(repo, "Handler.stop") == {"Logger.remove": "medium"}


def test_a_python_call_through_its_own_object_is_no_call_of_another_class_s_namesake(
        fm_home, make_repo):
    # ``self.remove(0)`` in ``Logger.stop`` is Logger's own, not the imported Handler's.
    repo = str(indexed_project(make_repo("logger"), {"app/handler.py": HANDLER_PY,
                                                     "app/logger.py": LOGGER_PY},
                               package="app").path)
    assert callers(repo, "Handler.remove") == {}


DISPATCHER_PY = '''"""A logger whose methods name their own object ``__self``."""


class Logger:
    def info(__self, message):
        """Write ``message`` at level INFO."""
        __self._log("INFO", message)

    def _log(__self, level, message):
        """Write ``message`` at ``level`` to every handler."""
        for handler in __self.handlers:
            handler.emit(level, message)
'''


def test_a_python_method_s_own_object_is_its_first_parameter_whatever_its_name(
        fm_home, make_repo):
    # loguru's ``def info(__self, message): __self._log(...)`` calls its own ``_log``.
    repo = str(indexed_project(make_repo("dispatcher"), {"app/dispatch.py": DISPATCHER_PY},
                               package="app").path)
    assert callers(repo, "Logger._log") == {"Logger.info": "high"}


DECODERS_PY = '''"""Decoders of a response's content, and of its text."""


class ContentDecoder:
    def decode(self, data):
        """Decode one part of the content."""
        raise NotImplementedError()


class GZipDecoder(ContentDecoder):
    def decode(self, data):
        """Decompress one part of gzip content."""
        return self.decompressor.decompress(data)


class TextDecoder:
    def decode(self, data):
        """Decode bytes to text in the response's encoding."""
        return str(data, self.encoding)


SUPPORTED = {"gzip": GZipDecoder}
'''

MODELS_PY = '''"""A response and its content."""

from app.decoders import ContentDecoder, GZipDecoder, TextDecoder


class Response:
    def _get_content_decoder(self) -> ContentDecoder:
        """The decoder the content's encoding names."""
        return GZipDecoder() if self.encoding == "gzip" else ContentDecoder()

    def iter_bytes(self):
        """The decoded content, part by part."""
        decoder = self._get_content_decoder()
        for part in self.parts:
            yield decoder.decode(part)

    def iter_text(self):
        """The decoded content as text, part by part."""
        decoder = TextDecoder()
        for part in self.iter_bytes():
            yield decoder.decode(part)
'''

CLIENT_PY = '''"""A client following redirects."""

from app.decoders import SUPPORTED


class Client:
    def redirect_headers(self, url, headers):
        """The headers of a redirect to ``url``: its own host."""
        headers["Host"] = url.netloc.decode("ascii")
        headers["Accept-Encoding"] = ", ".join(SUPPORTED)
        return headers
'''


def decoding(make_repo) -> str:
    return str(indexed_project(make_repo("decoding"), {"app/decoders.py": DECODERS_PY,
                                                       "app/models.py": MODELS_PY,
                                                       "app/client.py": CLIENT_PY},
                               package="app").path)


def test_a_python_value_a_method_of_its_own_object_returns_is_of_the_class_it_annotates(
        fm_home, make_repo):
    # ``decoder = self._get_content_decoder()``, annotated ``-> ContentDecoder``: its
    # ``decode`` may be any ContentDecoder's, GZipDecoder's too.
    assert callers(decoding(make_repo), "GZipDecoder.decode").get("Response.iter_bytes") \
        == "high"


def test_a_method_name_of_several_classes_called_through_a_value_of_none_is_no_call(
        fm_home, make_repo):
    # ``url.netloc.decode("ascii")`` decodes bytes and ``decoder = TextDecoder()`` is a
    # TextDecoder: neither is a call of GZipDecoder's ``decode``.
    assert callers(decoding(make_repo), "GZipDecoder.decode") == {"Response.iter_bytes": "high"}

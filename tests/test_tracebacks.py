"""A pasted traceback points at the code its frames ran, the deepest first; its interpreter's
lines are no words of the error's message (``freshmark.core.tracebacks``, pure; and through
search on a repository indexed in the test)."""

from __future__ import annotations

from search_fixtures import indexed_project

from freshmark.core.messages import message_windows
from freshmark.core.query import plan_query
from freshmark.core.request import SearchRequest
from freshmark.core.settings import Settings
from freshmark.core.tracebacks import Frame, frames_first, frames_ran, pasted_frames
from freshmark.services.retrieval.search import search

SINKS = '''class StreamSink:
    def __init__(self, stream):
        self._stream = stream

    def write(self, message):
        self._stream.write(message)


class CallableSink:
    def __init__(self, function):
        self._function = function

    def write(self, message):
        self._function(message)
'''
HANDLER = '''class Handler:
    def __init__(self, sink, levelno):
        self._sink = sink
        self._levelno = levelno

    def emit(self, record, level_id, from_decorator, is_raw, colored_message):
        str_record = record["message"]
        self._sink.write(str_record)
'''
# A project that formats tracebacks quotes them in its docstrings: every word of the
# interpreter's lines, and of the frames' files and functions.
LOGGER = '''class Logger:
    def catch(self, exception=Exception, message="An error has been caught"):
        """Catch an error and log it with its traceback.

        Traceback (most recent call last):
          File "app/handler.py", line 8, in emit
            self._sink.write(str_record)
          File "app/sinks.py", line 14, in write
            self._function(message)
        KeyError: 'user'

        During handling of the above exception, another exception occurred:

        Traceback (most recent call last):
          File "app/sinks.py", line 14, in write
        KeyError: 'name'
        """
        return exception, message

    def opt(self, exception=None, record=False):
        """Options of the next message, the traceback of an exception among them.

        Traceback (most recent call last):
          File "app/sinks.py", line 14, in write
            self._function(message)
        ZeroDivisionError: division by zero
        """
        return exception, record
'''
PASTED = '''Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/app/handler.py", line 8, in emit
    self._sink.write(str_record)
  File "/venv/lib/python3.11/site-packages/app/sinks.py", line 14, in write
    self._function(message)
KeyError: 'request_id\''''


def indexed_app(make_repo):
    return indexed_project(make_repo("app"), {"app/sinks.py": SINKS,
                                              "app/handler.py": HANDLER,
                                              "app/logger.py": LOGGER}, package="app")


def test_a_tracebacks_own_lines_are_no_words_of_its_message():
    assert message_windows(PASTED) == []
    windows = message_windows(PASTED.replace("KeyError: 'request_id'",
                                             "ValueError: Cannot parse rotation from: 'x'"))
    assert windows == ["cannot parse rotation from"]


def test_a_pasted_tracebacks_frames_are_read_the_deepest_first():
    assert pasted_frames(PASTED) == [Frame("app/sinks", "write", 14),
                                     Frame("app/handler", "emit", 8)]


def test_a_frame_runs_the_definition_of_its_function_holding_its_line():
    chunks = [("app/sinks.py", "StreamSink.write", 5, 6), ("app/sinks.py", "CallableSink.write",
                                                           13, 14),
              ("app/logger.py", "Logger.write", 1, 20)]
    assert frames_ran([Frame("app/sinks", "write", 14)], chunks) == [None, 0, None]
    # From another version of the file: the nearest of its definitions of that name.
    assert frames_ran([Frame("app/sinks", "write", 9)], chunks) == [0, None, None]


def test_the_chunks_frames_ran_come_first_the_deepest_first_then_the_message_holders():
    places = [None, 1, None, 0]
    assert frames_first(places, [True, False, False, False]) == [3, 1, 0, 2]
    assert frames_first(places, [False, True, False, False]) == [1, 3, 0, 2]


def test_among_the_message_holders_the_product_s_come_before_a_test_asserting_it():
    # a test asserting the message first in the ranking, the static holding it second
    assert frames_first([None, None, None], [True, True, False], [True, False, False]) == \
        [1, 0, 2]


def test_a_pasted_traceback_finds_the_function_its_deepest_frame_ran_first(fm_home, make_repo):
    repo = indexed_app(make_repo)
    answer = search(SearchRequest.build(PASTED, k=3), str(repo.path),
                    settings=Settings.from_env())
    assert answer.results[0].record.symbol == "CallableSink.write"


def test_the_frames_functions_rank_above_the_chunks_quoting_tracebacks(fm_home, make_repo):
    repo = indexed_app(make_repo)
    answer = search(SearchRequest.build(PASTED, k=4), str(repo.path),
                    settings=Settings.from_env())
    symbols = [r.record.symbol for r in answer.results]
    assert symbols[:2] == ["CallableSink.write", "Handler.emit"]
    assert not any(r.explain.get("holds_message") for r in answer.results)


def test_a_frames_function_joins_the_pool_past_what_the_channels_rank(fm_home, make_repo):
    # Short methods of that name sharing the traceback's words outrank the long function
    # it ran.
    decoys = "".join(f"class Level{n}:\n    def filter_by_level(self, record, level):\n"
                     f"        # not supported between instances of a record's level\n"
                     f"        return record['level'].no >= level + {n}\n\n\n"
                     for n in range(80))
    steps = "".join(f"    step_{n} = step_{n - 1 if n else 'x'} + {n}\n" for n in range(100))
    target = f"def filter_by_level(step_x, levels):\n{steps}    return step_99\n"
    repo = indexed_project(make_repo("app"), {"app/checks.py": decoys,
                                              "app/filters.py": target}, package="app")
    pasted = ('Traceback (most recent call last):\n  File "/venv/lib/python3.11/site-packages/'
              'app/filters.py", line 60, in filter_by_level\n'
              '    return record["level"].no >= level\n'
              "TypeError: '>=' not supported between instances of 'int' and 'str'")
    answer = search(SearchRequest.build(pasted, k=3), str(repo.path),
                    settings=Settings.from_env())
    assert answer.results[0].record.symbol == "filter_by_level"


ROTATION = '''class Rotation:
    def __init__(self, rotation, size, interval, file_sink_rotation_limit):
        self.rotation = rotation
        self.size = size
        self.interval = interval
        self.limit = file_sink_rotation_limit


class FileSink:
    def __init__(self, path, rotation=None):
        self.path = path
        self._rotation_function = self._make_rotation_function(rotation)

    @staticmethod
    def _make_rotation_function(rotation):
        if rotation is None:
            return None
        raise ValueError("Cannot parse rotation from: '%s'" % rotation)
'''
ADD = '''class Logger:
    def add(self, sink, rotation=None):
        return FileSink(sink, rotation=rotation)
'''
LONG_PASTED = '''Traceback (most recent call last):
  File "/home/me/proj/main.py", line 5, in <module>
    logger.add("app.log", rotation="1 fortnight")
  File "/home/me/proj/.venv/lib/python3.11/site-packages/app/logger.py", line 3, in add
    return FileSink(sink, rotation=rotation)
  File "/home/me/proj/.venv/lib/python3.11/site-packages/app/sink.py", line 12, in __init__
    self._rotation_function = self._make_rotation_function(rotation)
  File "/home/me/proj/.venv/lib/python3.11/site-packages/app/sink.py", line 18, in \
_make_rotation_function
    raise ValueError("Cannot parse rotation from: '%s'" % rotation)
ValueError: Cannot parse rotation from: '1 fortnight\''''


def test_a_long_pasted_traceback_leads_with_the_definitions_its_frames_ran(fm_home, make_repo):
    repo = indexed_project(make_repo("app"), {"app/sink.py": ROTATION, "app/logger.py": ADD},
                           package="app")
    assert plan_query(LONG_PASTED).long
    answer = search(SearchRequest.build(LONG_PASTED, k=4), str(repo.path),
                    settings=Settings.from_env())
    assert [r.record.symbol for r in answer.results][:3] == [
        "FileSink._make_rotation_function", "FileSink.__init__", "Logger.add"]


PHP_TRACE = "\n".join([
    "PHP Fatal error:  Uncaught RuntimeException: The stream could not be opened",
    "Stack trace:",
    r"#0 /app/vendor/acme/log/src/Log/Handler/ProcessingHandler.php(9): "
    r"Log\Handler\FileHandler->write(Object(Log\Record))",
    r"#1 /app/vendor/acme/log/src/Log/Logger.php(31): "
    r"Log\Handler\ProcessingHandler->handle(Object(Log\Record))",
    r"#2 [internal function]: App\{closure}(Object(Log\Record))",
    "#3 {main}"])


def test_a_php_frame_names_the_method_it_called_then_where_the_call_is():
    assert pasted_frames(PHP_TRACE) == [
        Frame("Log/Handler/FileHandler", "write", None, owner="FileHandler"),
        Frame("app/vendor/acme/log/src/Log/Handler/ProcessingHandler", "", 9,
              file="app/vendor/acme/log/src/Log/Handler/ProcessingHandler.php"),
        Frame("Log/Handler/ProcessingHandler", "handle", None, owner="ProcessingHandler"),
        Frame("app/vendor/acme/log/src/Log/Logger", "", 31,
              file="app/vendor/acme/log/src/Log/Logger.php")]


def test_a_php_traces_own_lines_are_no_words_of_its_message():
    assert message_windows(PHP_TRACE) == ["the stream could not", "stream could not be",
                                          "could not be opened"]


def test_a_site_runs_the_innermost_definition_holding_its_line():
    chunks = [("src/Log/Handler/ProcessingHandler.php", "ProcessingHandler", 3, 20),
              ("src/Log/Handler/ProcessingHandler.php", "ProcessingHandler.handle", 6, 12),
              ("src/Log/Handler/Other.php", "Other.handle", 6, 12)]
    site = Frame("app/vendor/acme/log/src/Log/Handler/ProcessingHandler", "", 9)
    assert frames_ran([site], chunks) == [None, 0, None]


def test_a_method_named_by_its_class_runs_in_whatever_file_holds_the_class():
    chunks = [("lib/FileHandler.php", "FileHandler.write", 5, 9),
              ("lib/SocketHandler.php", "SocketHandler.write", 5, 9)]
    frame = Frame("Log/Handler/FileHandler", "write", None, owner="FileHandler")
    assert frames_ran([frame], chunks) == [0, None]


PROCESSING_PHP = '''<?php
namespace Log\\Handler;

abstract class ProcessingHandler
{
    public function handle(Record $record): bool
    {
        $record = $this->processRecord($record);
        $this->write($record);
        return false;
    }

    abstract protected function write(Record $record): void;
}
'''
FILE_PHP = '''<?php
namespace Log\\Handler;

class FileHandler extends ProcessingHandler
{
    protected function write(Record $record): void
    {
        if (!is_resource($this->stream)) {
            $this->createDir($this->url);
            $this->stream = fopen($this->url, 'a');
        }
        $this->streamWrite($this->stream, $record);
    }

    protected function streamWrite($stream, Record $record): void
    {
        fwrite($stream, (string) $record->formatted);
    }
}
'''


def indexed_php(make_repo):
    decoys = {f"src/Log/Handler/Handler{n}.php":
              f"<?php\nnamespace Log\\Handler;\n\nclass Handler{n} extends ProcessingHandler\n"
              f"{{\n    protected function write(Record $record): void\n    {{\n"
              f"        $this->streamWrite($this->stream, $record, {n});\n    }}\n}}\n"
              for n in range(8)}
    return indexed_project(make_repo("log"), {"src/Log/Handler/ProcessingHandler.php":
                                              PROCESSING_PHP,
                                              "src/Log/Handler/FileHandler.php": FILE_PHP,
                                              **decoys}, package="app")


def test_a_php_frame_finds_the_method_it_called_then_the_one_calling_it(fm_home, make_repo):
    repo = indexed_php(make_repo)
    frame = (r"#1 /app/vendor/acme/log/src/Log/Handler/ProcessingHandler.php(9): "
             r"Log\Handler\FileHandler->write(Object(Log\Record))")
    answer = search(SearchRequest.build(frame, k=4), str(repo.path),
                    settings=Settings.from_env())
    assert [r.record.symbol for r in answer.results][:2] == ["FileHandler.write",
                                                            "ProcessingHandler.handle"]


def test_an_error_lines_site_is_read_in_each_form_it_is_written():
    forms = ["PHP Warning:  Undefined array key in /var/www/src/Log/Norm.php on line 18",
             "Uncaught Exception: boom in /var/www/src/Log/Norm.php:18",
             "Died at /var/www/src/Log/Norm.php line 18.",
             "/var/www/src/Log/Norm.php(18): error CS1002"]
    site = Frame("var/www/src/Log/Norm", "", 18, file="var/www/src/Log/Norm.php")
    assert [pasted_frames(form) for form in forms] == [[site]] * 4


def test_a_frames_own_file_and_line_are_no_second_site():
    assert pasted_frames("tests/test_a.py:3: in test_b") == [Frame("tests/test_a", "test_b", 3)]


NORMALIZER_PHP = '''<?php
namespace Log\\Formatter;

class NormalizerFormatter
{
    public function format(Record $record)
    {
        return $this->normalizeRecord($record);
    }

    protected function normalizeRecord(Record $record): array
    {
        $normalized = $this->normalize($record->toArray());
        $normalized['when'] = $normalized['datetime'];
        return $normalized;
    }
}
'''


def test_an_error_lines_site_finds_the_definition_holding_its_line(fm_home, make_repo):
    decoys = {f"src/Log/Formatter/Formatter{n}.php":
              f"<?php\nnamespace Log\\Formatter;\n\nclass Formatter{n}\n{{\n"
              f"    public function format(Record $record)\n    {{\n"
              f"        // the datetime array key, undefined in a warning {n}\n"
              f"        return $record->datetime;\n    }}\n}}\n" for n in range(8)}
    repo = indexed_project(make_repo("log"), {"src/Log/Formatter/NormalizerFormatter.php":
                                              NORMALIZER_PHP, **decoys}, package="app")
    warning = ('PHP Warning:  Undefined array key "datetime" in /var/www/vendor/acme/log/src/'
               'Log/Formatter/NormalizerFormatter.php on line 14')
    answer = search(SearchRequest.build(warning, k=3), str(repo.path),
                    settings=Settings.from_env())
    assert answer.results[0].record.symbol == "NormalizerFormatter.normalizeRecord"

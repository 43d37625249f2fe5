"""Helpers shared by every freshmark command module: settings, errors, JSON, progress."""

from __future__ import annotations

import functools
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec, TextIO, TypeVar

import click

from freshmark.core.config import Config, load_config
from freshmark.core.errors import BrokerUnavailable, FreshmarkError
from freshmark.core.progress import DONE, START, WORKING, IndexProgress, Progress, describe
from freshmark.core.redact import redact
from freshmark.core.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")

EPILOG = """\b
Where data lives:
  FRESHMARK_HOME        embedded store, caches, mirrors (default ~/.freshmark)
  FRESHMARK_CHROMA_URL  use a Chroma server instead (e.g. http://127.0.0.1:8000)
  FRESHMARK_CHROMA_URLS several Chroma servers, comma-separated (freshmark shards)
  FRESHMARK_CONFIG      TOML config: layers, classification rules, repositories
  FRESHMARK_EMBEDDER    minilm (default, semantic) or hashing (fast test tier)
  FRESHMARK_EMBED_THREADS  model threads per process (default: the cores it really has)
  FRESHMARK_REDIS_URL   the job broker of the cluster commands (redis://127.0.0.1:6379/0);
                        when set, also where audit publishes freshness for /metrics
"""


def counted(n: int, noun: str) -> str:
    """``1 commit``, ``3 commits``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _usage_line(exc: click.UsageError) -> str:
    """A usage error as one line, with where to look instead of the usage text."""
    ctx = exc.ctx
    where = ctx.command_path if ctx is not None else "freshmark"
    message = exc.format_message().rstrip(".")
    if isinstance(exc, click.NoSuchOption) and ctx is not None:
        message = _nearest_option(exc, ctx.command) or message
    return f"freshmark: error: {message} (see: {where} --help)"


def _nearest_option(exc: click.NoSuchOption, command: click.Command) -> str | None:
    """``--k`` means ``-k`` when the command has it (click would suggest ``--kind``)."""
    name = exc.option_name
    short = "-" + name[2:]
    if name.startswith("--") and len(name) == 3 and any(
            short in param.opts for param in command.params):
        return f"No such option: {name} (did you mean {short}?)"
    return None


class Freshmark(click.Group):
    """The command group: click's usage errors (three or four lines: usage, hint, blank,
    error) become one line, like every other freshmark error; exit code 2 as click's."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a bare group: its help is the answer
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            click.echo(_usage_line(exc), err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("freshmark: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def named_branch(_ctx: click.Context, _param: click.Parameter, value: str | None
                 ) -> str | None:
    """A ``--branch`` callback: an empty name is refused, not taken for the default."""
    if value is not None and not value.strip():
        raise click.BadParameter("empty; name a branch, or leave the option out for the "
                                 "default")
    return value


def examples(*lines: str) -> str:
    """A help epilog that teaches by example: one command per line, shown verbatim."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def service_error(exc: BaseException) -> FreshmarkError | None:
    """The freshmark error a third-party exception stands for, if it means a service is down.

    Redis is reached through redis-py (job state) and kombu (sending jobs); both raise their
    own connection errors, which the user should see as one line and exit 3, not a traceback.
    """
    import redis
    from kombu.exceptions import OperationalError

    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, OperationalError)):
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return BrokerUnavailable(
            f"Redis unreachable ({first_line}); start it or fix FRESHMARK_REDIS_URL"
        )
    return None


def import_failure(exc: BaseException) -> FreshmarkError | None:
    """A dependency that failed to import, as one line naming the module and the file that
    raised; an import of freshmark's own modules is a bug and keeps its traceback.

    A package in the current directory or on ``PYTHONPATH`` named like one of freshmark's
    dependencies (a repository's ``httpx/``) is imported in the installed one's place.
    """
    if not isinstance(exc, ImportError):
        return None
    module = exc.name or ""
    if module.split(".")[0] in {"freshmark", "workers", "scheduler"}:
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    raised_in = f" (raised in {frames[-1].filename})" if frames else ""
    return FreshmarkError(f"a dependency failed to import: {exc}{raised_in}; a package of that "
                          "name on PYTHONPATH hides the installed one, or the install is broken")


def fail_cleanly(fn: Callable[P, R]) -> Callable[P, R]:
    """Print freshmark errors as one line and exit with their code; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                translated = import_failure(exc) or service_error(exc)
                if translated is None:
                    raise
                raise translated from exc
        except FreshmarkError as exc:
            click.echo(f"freshmark: error: {redact(str(exc))}", err=True)  # no credentials
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("freshmark: interrupted; the last completed stamp is still true", err=True)
            sys.exit(130)

    return wrapper


def load_settings(config_file: Path | None = None) -> tuple[Settings, Config]:
    settings = Settings.from_env()
    return settings, load_config(config_file or settings.config_path)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def echo_lines(lines: list[str]) -> None:
    """An answer rendered for people (``faces.api.render``), one line each."""
    for line in lines:
        click.echo(line)


class ProgressPrinter:
    """Index progress on a stream (stderr): on a terminal one line rewritten in place at most
    every ``refresh_seconds``; elsewhere (piped, CI logs) a line per phase of each layer plus
    one every ``heartbeat_seconds`` while a long layer runs, so a log shows it is alive."""

    def __init__(self, stream: TextIO, on_terminal: bool, clock: Callable[[], float],
                 refresh_seconds: float = 0.1, heartbeat_seconds: float = 30.0):
        self.stream, self.on_terminal, self.clock = stream, on_terminal, clock
        self.interval = refresh_seconds if on_terminal else heartbeat_seconds
        self._started = self._last = 0.0
        self._embedded_at_start = 0
        self._written, self._written_at = 0, 0.0  # files written, and when (since START)
        self._done = 0  # the most files shown done in the layer
        self._width = 0

    def __call__(self, event: IndexProgress) -> None:
        now = self.clock()
        if event.phase == START:
            self._started, self._last = now, now
            self._embedded_at_start = event.chunks_embedded
            self._written = self._done = 0
        # A part's estimate may run ahead of the next part's: the count shown never goes back.
        self._done = max(self._done, event.files_done)
        event = replace(event, files_done=self._done)
        if event.files_written != self._written:
            self._written, self._written_at = event.files_written, now - self._started
        if event.phase == WORKING and now - self._last < self.interval:
            return
        self._last = now
        line = describe(event, now - self._started, self._embedded_at_start,
                        self._written_at if self._written else None)
        if self.on_terminal:
            self._rewrite(line, final=event.phase == DONE)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _rewrite(self, line: str, final: bool) -> None:
        self.stream.write("\r" + line.ljust(self._width) + ("\n" if final else ""))
        self._width = 0 if final else len(line)


@contextmanager
def index_progress(enabled: bool) -> Iterator[Progress | None]:
    """Progress of ``freshmark index`` on stderr (off for ``--json``: machines read stdout)."""
    if not enabled:
        yield None
        return
    yield ProgressPrinter(sys.stderr, sys.stderr.isatty(), time.monotonic)

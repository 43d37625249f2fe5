"""Helpers shared by every freshmark command module: settings, errors, JSON, progress."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from freshmark.config import Config, load_config
from freshmark.errors import BrokerUnavailable, FreshmarkError
from freshmark.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

EPILOG = """\b
Where data lives:
  FRESHMARK_HOME        embedded store, caches, mirrors (default ~/.freshmark)
  FRESHMARK_CHROMA_URL  use a Chroma server instead (e.g. http://127.0.0.1:8000)
  FRESHMARK_CONFIG      TOML config: layers, classification rules, repositories
  FRESHMARK_EMBEDDER    minilm (default, semantic) or hashing (fast test tier)
  FRESHMARK_REDIS_URL   the job broker of the cluster commands (redis://127.0.0.1:6379/0)
"""


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


def fail_cleanly(fn: F) -> F:
    """Print freshmark errors as one line and exit with their code; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                translated = service_error(exc)
                if translated is None:
                    raise
                raise translated from exc
        except FreshmarkError as exc:
            click.echo(f"freshmark: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("freshmark: interrupted; the last completed stamp is still true", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


def load_settings(config_file: Path | None = None) -> tuple[Settings, Config]:
    settings = Settings.from_env()
    return settings, load_config(config_file or settings.config_path)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress bar on a terminal (stderr), nothing when piped or printing JSON."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    state: dict[str, Any] = {}

    def update(label: str, done: int, total: int) -> None:
        bar = state.get(label)
        if bar is None:
            bar = click.progressbar(
                length=max(total, 1), label=f"indexing {label}", file=sys.stderr
            )
            bar.__enter__()
            state[label] = bar
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        for bar in state.values():
            bar.__exit__(None, None, None)

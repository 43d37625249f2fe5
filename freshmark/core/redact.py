"""Secrets never leave the process, and host paths never reach a network caller.

``redact`` removes credentials from any text: the userinfo of URLs
(``https://user:token@host/x.git`` becomes ``https://***@host/x.git``), the value of an
``Authorization`` header or a ``Bearer``/``Basic`` credential, and query parameters named like
secrets (``?token=...``). It is used where text leaves: remote errors (``adapters.git.mirrors``),
job errors stored in Redis (``adapters.queue.jobs``), worker log records (``RedactingFilter``)
and, through ``public_message``, every error answer of the HTTP service, MCP and the CLI.

``public_message`` is the one gate for an error shown to a caller: redacted, host paths
reduced to their last component (``/srv/fm/mirrors/fan.git`` becomes ``…/fan.git``), one line,
bounded in length.
"""

from __future__ import annotations

import logging
import re

# scheme://userinfo@ — userinfo may hold anything but '/', '@' and whitespace (RFC 3986
# percent-encodes '@' inside it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
# "Authorization: Bearer x" and a bare "Bearer x"/"Basic x" whose credential holds a digit
# (so that "basic authentication" stays readable).
_HEADER = re.compile(r"(?i)\b(authorization\s*[:=]\s*(?:(?:bearer|basic)\s+)?)[^\s,;'\"]+")
_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}")
# ?token=... &password=... in a URL or a query string.
_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:access_?token|token|api_?key|key|password|passwd|secret|private_token|sig)=)"
    r"[^&\s#'\"]+")
# An absolute POSIX path of two components or more, not inside a URL (no word character,
# '.', '/' or '-' right before it): "/home/me/.freshmark/mirrors/fan.git", "~/src/shop".
_PATH_SEGMENT = r"[^\s/'\"`,;()\[\]{}<>|]+"
_HOST_PATH = re.compile(rf"(?<![\w./-])~?/(?:{_PATH_SEGMENT}/)+({_PATH_SEGMENT})")
_FILE_URL = re.compile(rf"(?i)\bfile://(?:{_PATH_SEGMENT})?/(?:{_PATH_SEGMENT}/)*({_PATH_SEGMENT})")
MAX_MESSAGE_CHARS = 500


def redact(text: str) -> str:
    """``text`` without credentials: URL userinfo, bearer/basic credentials and secret-named
    query parameters are replaced by ``***``."""
    text = _USERINFO.sub(r"\1***@", text)
    text = _HEADER.sub(r"\1***", text)
    text = _CREDENTIAL.sub(r"\1\2***", text)
    return _SECRET_PARAM.sub(r"\1***", text)


def hide_paths(text: str) -> str:
    """``text`` with every absolute host path (and ``file://`` URL) cut to its last component
    (``…/fan.git``)."""
    return _HOST_PATH.sub(r"…/\1", _FILE_URL.sub(r"file://…/\1", text))


def public_message(text: str) -> str:
    """An error message fit for a network caller: redacted, no host path, one bounded line."""
    line = " ".join(hide_paths(redact(text)).split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


class RedactingFilter(logging.Filter):
    """A log filter that renders each record and redacts it (args included), so a URL with
    a token cannot reach a handler, whoever logged it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Add ``RedactingFilter`` to every handler of ``logger`` (default: the root logger)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())

"""Credentials never leave the process: userinfo in URLs (``https://user:token@host/x.git``)
becomes ``https://***@host/x.git`` in every message, log line and stored error.

One helper, ``redact``, used where text leaves: remote errors (``adapters.git.mirrors``), job
errors stored in Redis (``adapters.queue.jobs``), ``/debug/queue`` and worker log records
(``RedactingFilter``).
"""

from __future__ import annotations

import logging
import re

# scheme://userinfo@ — userinfo may hold anything but '/', '@' and whitespace (RFC 3986
# percent-encodes '@' inside it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def redact(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text)


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

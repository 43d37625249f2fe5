"""The CLI as a client of a running ``freshmark serve`` (``FRESHMARK_SERVER_URL``).

A CLI search that opens the store pays for opening Chroma and the lexical index in a new
process on every call; the server holds them warm. With a server configured, ``search`` and
``context`` send the request to its HTTP API and print its answer as a local run would. The
bearer token is the one the server checks: ``$FRESHMARK_API_READ_TOKEN``, else the full token
(``$FRESHMARK_API_TOKEN``, the name ``[service] api_token_env`` gives); none for a server on
loopback that asks for none. Plain ``urllib``: a CLI call imports no HTTP stack.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from freshmark.core.config import Config
from freshmark.core.errors import (
    BadInput,
    ConfigError,
    FreshmarkError,
    NotIndexed,
    PermanentError,
    ServerUnavailable,
)
from freshmark.core.manifest import collection_name
from freshmark.core.redact import redact
from freshmark.core.settings import Settings

READ_TOKEN_ENV = "FRESHMARK_API_READ_TOKEN"
# A search answers in well under a second when warm; a server that holds a request this long
# is treated as down (retryable), not waited on forever.
ANSWER_TIMEOUT_SECONDS = 120.0


def server_token(config: Config, env: dict[str, str] | None = None) -> str | None:
    """The token to send: the read token, else the full one, else none."""
    env = dict(os.environ if env is None else env)
    token = env.get(READ_TOKEN_ENV, "").strip() or env.get(config.api_token_env, "").strip()
    return token or None


def ask_about(repo: str, settings: Settings, config: Config, route: str,
              body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``ask`` about the repository ``repo`` names. A path on this machine is sent as the name
    ``freshmark index`` gives it (its directory's name), and the answer must come from that
    repository's own collection: where another repository already held the name, the index
    gave this one another, and an answer about the other one is refused (``NotIndexed``).
    ``route`` may hold ``{repo}`` (a GET route naming the repository: ``body`` is None). A
    bare name of a configured repository is sent as it is, whatever directory has that name.
    """
    from freshmark.adapters.git.repo import GitRepo
    from freshmark.services.repos import configured_id

    candidate = Path(repo).expanduser()
    if not candidate.exists() or configured_id(config, repo) is not None:
        return _ask_for(repo, settings, config, route, body)
    local = GitRepo.discover(candidate)
    name = local.default_name()
    answer = _ask_for(name, settings, config, route, body)
    indexes = answer.get("branches") or [answer.get("index") or {}]
    for index in indexes:
        branch, collection = index.get("branch"), index.get("collection")
        if branch and collection and collection != collection_name(local.key(), str(branch)):
            raise NotIndexed(f"the server's repository {name!r} is another one than {repo}; "
                             "pass --repo the name this one was indexed under (freshmark "
                             "status shows it)")
    return answer


def _ask_for(name: str, settings: Settings, config: Config, route: str,
             body: dict[str, Any] | None) -> dict[str, Any]:
    if body is None:
        return ask(settings, config, route.format(repo=urllib.parse.quote(name, safe="")))
    return ask(settings, config, route, {**body, "repo": name})


def ask(settings: Settings, config: Config, route: str,
        body: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST ``body`` to the server's ``route`` (GET it without a body); its JSON answer, or
    the freshmark error its status stands for (unreachable or 5xx: ``ServerUnavailable``,
    exit 3, retry)."""
    base = settings.server_url or ""
    shown = redact(base)
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"FRESHMARK_SERVER_URL {shown!r} is not an http(s) address of a "
                          "freshmark server (e.g. http://127.0.0.1:8080)")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = server_token(config)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{route}", data=data, headers=headers,
                                     method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_SECONDS) as answer:
            return dict(json.loads(answer.read()))
    except urllib.error.HTTPError as exc:
        raise _error_of(exc, shown) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ServerUnavailable(f"the freshmark server at {shown} did not answer ({reason}); "
                                "retry, or unset FRESHMARK_SERVER_URL to search the store "
                                "from this process") from None


def _error_of(exc: urllib.error.HTTPError, shown: str) -> FreshmarkError:
    """The error an HTTP status stands for, with the server's one-line message."""
    try:
        detail = json.loads(exc.read()).get("detail") or {}
    except (ValueError, OSError, AttributeError):
        detail = {}
    message = detail.get("message") if isinstance(detail, dict) else None
    message = str(message or exc.reason)
    status = exc.code
    if status in (401, 403, 421):
        return ConfigError(f"the freshmark server at {shown} refused the request ({status}): "
                           f"{message}; set {READ_TOKEN_ENV} to a token it accepts")
    if status in (400, 413, 422):
        return BadInput(message)
    if status == 404:
        return NotIndexed(message)
    if status >= 500 or status in (408, 429):
        return ServerUnavailable(f"the freshmark server at {shown} answered {status}: {message}")
    return PermanentError(message)

"""Which ``Host`` and ``Origin`` values the server answers to: DNS rebinding protection.

A web page the user opens can make the browser send requests to a loopback server, either
directly (cross-site POSTs with a "simple" content type need no CORS preflight) or through a
hostile name that resolves to 127.0.0.1 (DNS rebinding). The first carries the page's
``Origin``, the second the hostile name in ``Host``; refusing both keeps a server that asks for
no token (loopback only) for local programs alone. Loopback names always pass;
``$FRESHMARK_ALLOWED_HOSTS`` (or ``$FRESHMARK_MCP_ALLOWED_HOSTS``, its older name) adds
comma-separated ``host`` or ``host:port`` values, ``host:*`` for any port. HTTP and MCP share
this list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ALLOWED_HOSTS_ENV = "FRESHMARK_ALLOWED_HOSTS"
MCP_ALLOWED_HOSTS_ENV = "FRESHMARK_MCP_ALLOWED_HOSTS"
LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")


def allowed_hosts(env: Mapping[str, str]) -> list[str]:
    """Host header values the server answers to: loopback always, plus the environment's."""
    given = ",".join(env.get(name, "") for name in (ALLOWED_HOSTS_ENV, MCP_ALLOWED_HOSTS_ENV))
    extra = [h.strip().lower() for h in given.split(",") if h.strip()]
    return list(dict.fromkeys([*LOOPBACK_HOSTS, *extra]))


def allowed_origins(hosts: Sequence[str]) -> list[str]:
    """The browser origins of ``hosts`` (http and https)."""
    return [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]


def matches(value: str | None, patterns: Sequence[str]) -> bool:
    """Whether ``value`` is one of ``patterns`` (case-insensitive; ``x:*`` is x on any port)."""
    if not value:
        return False
    value = value.strip().lower()
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            port = value.removeprefix(pattern[:-1])
            if port != value and port.isdigit():
                return True
    return False


def refusal(host: str | None, origin: str | None, hosts: Sequence[str]) -> tuple[int, str] | None:
    """None when a request may proceed, else (status, one-line message): 421 for a Host the
    server does not answer to (or none), 403 for a foreign browser Origin."""
    if not matches(host, hosts):
        return 421, ("the Host header is not a name this server answers to; add it to "
                     f"${ALLOWED_HOSTS_ENV} if it is yours")
    if origin is not None and not matches(origin, allowed_origins(hosts)):
        return 403, "requests from another site's page are refused (Origin)"
    return None

"""Where a repository lives when the store is several Chroma servers: rendezvous hashing.

Each repository (all of its branches, so an overlay stays on its base's server) is placed on
the server whose score ``hash(server identity, repo_key)`` is highest (highest random weight,
Thaler and Ravishankar 1996). The score depends only on the pair, so adding a server moves
exactly the repositories whose new highest score is that server's, and removing one moves only
its own repositories; every other placement stays put.

A server's identity is its URL without credentials (scheme, host, port, path): rotating a
password moves nothing, while naming a different host is a different server.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import ParseResult, unquote, urlparse

from freshmark.core.errors import ConfigError
from freshmark.core.redact import redact

DEFAULT_PORT = 8000
SCHEMES = ("http", "https")


@dataclass(frozen=True)
class ChromaServer:
    """One Chroma server read from a URL: where to connect and, separately, its credentials.

    ``shown`` is the URL as it may appear in a message (credentials replaced by ``***``);
    ``identity`` is what placement hashes. ``password`` is kept out of ``repr``."""

    identity: str
    shown: str
    host: str
    port: int
    ssl: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def parse_server(url: str, variable: str) -> ChromaServer:
    """``url`` (``http[s]://[user:password@]host[:port]``, the scheme optional) as a server;
    ``ConfigError`` naming ``variable`` and the redacted URL for anything else."""
    text = url.strip() if "://" in url else f"http://{url.strip()}"
    shown = redact(text)
    try:
        parsed = urlparse(text)
        port = parsed.port
    except ValueError as exc:
        raise ConfigError(f"{variable} has an entry that is not a URL: {shown!r}") from exc
    if parsed.scheme not in SCHEMES or not parsed.hostname:
        raise ConfigError(f"{variable} has an entry that is not an http(s) URL with a host: "
                          f"{shown!r}")
    username, password = _credentials(parsed, shown, variable)
    port = port or (443 if parsed.scheme == "https" else DEFAULT_PORT)
    identity = f"{parsed.scheme}://{parsed.hostname.lower()}:{port}{parsed.path.rstrip('/')}"
    return ChromaServer(identity=identity, shown=shown, host=parsed.hostname, port=port,
                        ssl=parsed.scheme == "https", username=username, password=password)


def _credentials(parsed: ParseResult, shown: str,
                 variable: str) -> tuple[str | None, str | None]:
    if parsed.username is None:
        return None, None
    if parsed.password is None:
        raise ConfigError(f"{variable} {shown} names a user but no password; write "
                          "http://user:password@host:port (basic auth) or no credentials")
    return unquote(parsed.username), unquote(parsed.password)


def parse_servers(urls: Sequence[str], variable: str) -> tuple[ChromaServer, ...]:
    """Every URL of a server list, in order; ``ConfigError`` for a bad entry or two entries
    that name the same server (placement would count it twice)."""
    servers = tuple(parse_server(url, variable) for url in urls)
    seen: set[str] = set()
    for server in servers:
        if server.identity in seen:
            raise ConfigError(f"{variable} names the server {server.identity} twice")
        seen.add(server.identity)
    return servers


def split_url_list(raw: str, variable: str) -> tuple[str, ...]:
    """A comma-separated list of URLs, trimmed; ``ConfigError`` for an empty entry (``a,,b``
    or a trailing comma is a typo that would silently drop a server)."""
    if not raw.strip():
        return ()
    entries = tuple(part.strip() for part in raw.split(","))
    if any(not entry for entry in entries):
        raise ConfigError(f"{variable} has an empty entry; write URLs separated by single "
                          "commas (http://chroma-0:8000,http://chroma-1:8000)")
    return entries


def score(identity: str, repo_key: str) -> int:
    """The rendezvous weight of ``repo_key`` on the server ``identity`` (64 bits)."""
    digest = hashlib.blake2b(f"{identity}\0{repo_key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def home_index(repo_key: str, identities: Sequence[str]) -> int:
    """Index into ``identities`` of the server that holds ``repo_key`` (highest score; ties,
    which need a 64-bit collision, go to the smaller identity so every process agrees)."""
    if not identities:
        raise ValueError("no servers to place a repository on")
    return max(range(len(identities)),
               key=lambda i: (score(identities[i], repo_key), _reverse(identities[i])))


def _reverse(identity: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in identity)


@dataclass(frozen=True)
class Move:
    """A collection that is not on its repository's server: from ``source`` to ``target``
    (server identities)."""

    repo_key: str
    collection: str
    source: str
    target: str


def moves(placed: Iterable[tuple[str, str, str]], identities: Sequence[str]) -> list[Move]:
    """The moves that bring every ``(repo_key, collection, server identity)`` to its home,
    sorted by repository then collection."""
    out = []
    for repo_key, collection, where in placed:
        home = identities[home_index(repo_key, identities)]
        if home != where:
            out.append(Move(repo_key, collection, where, home))
    return sorted(out, key=lambda m: (m.repo_key, m.collection, m.source))

"""Typed settings, read once from the environment at the edge (CLI, worker, server)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from freshmark.core.errors import ConfigError
from freshmark.core.placement import split_url_list

DEFAULT_EMBEDDER = "minilm"
# The lexical engines (docs/lexical-index.md), the default first: on-disk tantivy.
LEXICAL_ENGINES = ("tantivy",)


@dataclass(frozen=True)
class Settings:
    """Where data lives and which services to use.

    ``home`` holds the embedded Chroma store, the embedding cache and the mirrors;
    ``chroma_url`` switches the store to a Chroma server, ``chroma_urls`` to several (each
    repository on one of them, ``core/placement.py``); ``embedder`` names the embedding model
    (``minilm``, the real default, or ``hashing``, a fast non-semantic tier for tests only);
    ``embed_threads`` overrides the onnxruntime threads per process (default: the cores this
    process really has, shared among the worker's processes); ``redis_url_set`` says whether
    the deployment named its Redis (``FRESHMARK_REDIS_URL``) rather than taking the default;
    ``lexical`` the lexical engine (``tantivy``: on-disk indexes shared by a host's
    processes); ``server_url`` a running ``freshmark serve`` (``FRESHMARK_SERVER_URL``) that
    the CLI's ``search`` and ``context`` ask instead of opening the store.
    """

    home: Path
    chroma_url: str | None = None
    redis_url: str = "redis://127.0.0.1:6379/0"
    config_path: Path | None = None
    embedder: str = DEFAULT_EMBEDDER
    embed_threads: int | None = None
    redis_url_set: bool = False
    lexical: str = LEXICAL_ENGINES[0]
    chroma_urls: tuple[str, ...] = ()
    server_url: str | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("FRESHMARK_HOME") or Path.home() / ".freshmark").expanduser()
        config = env.get("FRESHMARK_CONFIG")
        return cls(
            home=home,
            chroma_url=_single_chroma_url(env),
            chroma_urls=split_url_list(env.get("FRESHMARK_CHROMA_URLS", ""),
                                       "FRESHMARK_CHROMA_URLS"),
            redis_url=env.get("FRESHMARK_REDIS_URL") or "redis://127.0.0.1:6379/0",
            config_path=Path(config).expanduser() if config else None,
            embedder=env.get("FRESHMARK_EMBEDDER") or DEFAULT_EMBEDDER,
            embed_threads=_positive_int(env, "FRESHMARK_EMBED_THREADS"),
            redis_url_set=bool(env.get("FRESHMARK_REDIS_URL")),
            lexical=_lexical_engine(env),
            server_url=(env.get("FRESHMARK_SERVER_URL") or "").strip().rstrip("/") or None,
        )

    @property
    def chroma_server_urls(self) -> tuple[str, ...]:
        """The Chroma servers of the store, in order (empty: the embedded store)."""
        if self.chroma_urls:
            return self.chroma_urls
        return (self.chroma_url,) if self.chroma_url else ()

    @property
    def chroma_variable(self) -> str:
        """The environment variable the servers were named in (for error messages)."""
        return "FRESHMARK_CHROMA_URLS" if self.chroma_urls else "FRESHMARK_CHROMA_URL"

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def mirrors_dir(self) -> Path:
        return self.home / "mirrors"

    @property
    def state_dir(self) -> Path:
        """Local state that is not part of the index (verdict counts for embedded use)."""
        return self.home / "state"


def _single_chroma_url(env: dict[str, str]) -> str | None:
    """``FRESHMARK_CHROMA_URL``; ConfigError when ``FRESHMARK_CHROMA_URLS`` is set too (which
    of the two was meant is a guess, and a wrong guess writes to the wrong servers)."""
    single = env.get("FRESHMARK_CHROMA_URL", "").strip() or None
    if single and env.get("FRESHMARK_CHROMA_URLS", "").strip():
        raise ConfigError("set FRESHMARK_CHROMA_URLS (several servers) or FRESHMARK_CHROMA_URL "
                          "(one), not both")
    return single


def _positive_int(env: dict[str, str], name: str) -> int | None:
    """``env[name]`` as an int >= 1, None when unset; ConfigError for anything else."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a whole number >= 1, got {raw!r}")
    return int(raw)


def _lexical_engine(env: dict[str, str]) -> str:
    """``FRESHMARK_LEXICAL``, one of ``LEXICAL_ENGINES`` (the first by default); ConfigError
    otherwise."""
    name = env.get("FRESHMARK_LEXICAL", "").strip().lower() or LEXICAL_ENGINES[0]
    if name not in LEXICAL_ENGINES:
        raise ConfigError(f"FRESHMARK_LEXICAL must be one of {', '.join(LEXICAL_ENGINES)}, "
                          f"got {name!r}")
    return name

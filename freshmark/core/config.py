"""The freshmark TOML config: layers, classification rules, repositories (cluster mode).

Example::

    [index]
    max_file_bytes = 1048576
    max_chunks_per_file = 1000        # more chunks than this: the file as long line windows
    batch_files = 256                 # files an index run plans together
    batch_chunks = 2000               # chunks it embeds and writes together

    [classify]
    generated = ["proto/gen/**"]      # added to the built-in rules
    vendored = ["extern/**"]

    [[layers]]
    name = "hot"
    globs = ["src/**", "app/**"]
    interval_seconds = 300
    queue = "hot"

    [[layers]]
    name = "infra"
    globs = ["**"]                    # the catch-all comes last
    interval_seconds = 86400
    queue = "infra"

    [scale_out]                       # a large run split into batches any worker embeds
    min_files = 1000                  # changed files (all layers) from which a run splits; 0: never
    files_per_batch = 128
    lease_seconds = 120               # a batch claim not renewed for this long is presumed lost

    [[repos]]
    id = "shop"
    url = "https://git.example.com/shop.git"
    branches = ["main"]
    provider = "github"
    webhook_secret_env = "SHOP_WEBHOOK_SECRET"
    token_env = "SHOP_GIT_TOKEN"      # private HTTPS remote (or token_file = "/run/secrets/x")

A file belongs to the first layer whose globs match it; with no layers there is one layer,
``default``, holding everything.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshmark.core.errors import ConfigError
from freshmark.core.globs import glob_match

DEFAULT_LAYER = "default"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
# Past this many chunks a file is indexed as long line windows (0: no cap).
DEFAULT_MAX_CHUNKS_PER_FILE = 1000
# What an index run holds at a time, whatever the size of the repository: the files it plans
# together (their stored chunks read, their new chunks built), and the chunks it embeds and
# writes together (a batch whose files hold more is written in several parts).
DEFAULT_BATCH_FILES = 256
DEFAULT_BATCH_CHUNKS = 2000
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
PROVIDERS = ("github", "gitlab", "gitea")


@dataclass(frozen=True)
class Layer:
    name: str
    globs: tuple[str, ...] = ("**",)
    interval_seconds: int = 3600
    queue: str = "hot"

    def matches(self, path: str) -> bool:
        return any(glob_match(path, g) for g in self.globs)


@dataclass(frozen=True)
class RepoConfig:
    id: str
    url: str
    branches: tuple[str, ...] = ("main",)
    provider: str = "github"
    webhook_secret_env: str | None = None
    layers: tuple[Layer, ...] | None = None
    # A private HTTPS remote's token, from the environment or a file (a mounted Secret), so it
    # never has to be written into ``url``; ``token_user`` is the user name sent with it.
    token_env: str | None = None
    token_file: str | None = None
    token_user: str = "x-access-token"


@dataclass(frozen=True)
class ClassifyRules:
    """Extra globs per file kind, on top of the built-in rules in ``core.classify``, and the
    ``[index]`` limits: the largest file and the most chunks per file indexed, and the batches
    an index run works in."""

    generated: tuple[str, ...] = ()
    vendored: tuple[str, ...] = ()
    backup: tuple[str, ...] = ()
    fixture: tuple[str, ...] = ()
    test: tuple[str, ...] = ()
    changelog: tuple[str, ...] = ()
    translation: tuple[str, ...] = ()
    doc: tuple[str, ...] = ()
    config: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_chunks_per_file: int = DEFAULT_MAX_CHUNKS_PER_FILE
    batch_files: int = DEFAULT_BATCH_FILES
    batch_chunks: int = DEFAULT_BATCH_CHUNKS


# The rules that decide what a file is and how it is chunked; not how a run batches its work.
_CLASSIFYING_FIELDS = ("generated", "vendored", "backup", "fixture", "test", "changelog",
                       "translation", "doc", "config", "ignore", "max_file_bytes",
                       "max_chunks_per_file")


def rules_fingerprint(rules: ClassifyRules) -> str:
    """A short digest of the rules that classify and chunk files, "" for the defaults: a
    layer stamped under other rules is classified again at its next run."""
    chosen = {name: getattr(rules, name) for name in _CLASSIFYING_FIELDS}
    if chosen == {name: getattr(ClassifyRules(), name) for name in _CLASSIFYING_FIELDS}:
        return ""
    return hashlib.sha256(repr(sorted(chosen.items())).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ScaleOut:
    """When and how an index job splits into batch tasks (``workers.scaleout``).

    A run whose diff touches at least ``min_files`` files (a full index, a big merge) is cut into
    batches of about ``files_per_batch`` files that any worker process may embed; smaller runs
    stay in one task. A batch whose claim has not been renewed for ``lease_seconds`` (its
    worker died on another host) is run again by the coordinating job.
    """

    min_files: int = 1000
    files_per_batch: int = 128
    lease_seconds: int = 120

    def splits(self, files: int) -> bool:
        return self.min_files > 0 and files >= self.min_files


@dataclass(frozen=True)
class Config:
    layers: tuple[Layer, ...] = (Layer(DEFAULT_LAYER),)
    rules: ClassifyRules = field(default_factory=ClassifyRules)
    repos: tuple[RepoConfig, ...] = ()
    branch_idle_seconds: int = 14 * 86400
    api_token_env: str = "FRESHMARK_API_TOKEN"
    metrics_require_token: bool = False
    max_attempts: int = 5
    retry_window_seconds: int = 60  # retries of a job span at least this (a service restart)
    reconcile_interval_seconds: int = 120
    scale_out: ScaleOut = field(default_factory=ScaleOut)
    # Let the scheduler rebuild a layer at the interval ``audit --by-dir`` advised (published
    # to Redis) when its directories meet stale code too often (core.dirstats).
    adapt_layer_intervals: bool = False

    def layer_for(self, path: str, layers: tuple[Layer, ...] | None = None) -> Layer | None:
        """The first layer whose globs match ``path``; None if no layer claims it."""
        for layer in layers or self.layers:
            if layer.matches(path):
                return layer
        return None

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        known = ", ".join(layer.name for layer in self.layers)
        raise ConfigError(f"unknown layer {name!r} (configured: {known})")

    def repo(self, repo_id: str) -> RepoConfig:
        for repo in self.repos:
            if repo.id == repo_id:
                return repo
        raise ConfigError(f"unknown repository {repo_id!r}")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _int(table: dict[str, Any], key: str, default: int, where: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}.{key} must be a non-negative integer, got {value!r}")
    return value


def _optional_str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{where}.{key} must be a non-empty string")
    return value


def _layers(raw: Any, where: str) -> tuple[Layer, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where} must be a non-empty array of tables")
    layers: list[Layer] = []
    for i, table in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{at} must be a table")
        name = table.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ConfigError(f"{at}.name must be a short name of letters, digits, _ . -")
        if any(layer.name == name for layer in layers):
            raise ConfigError(f"{at}.name {name!r} is used twice")
        globs = _strings(table.get("globs", ["**"]), f"{at}.globs") or ("**",)
        layers.append(
            Layer(
                name=name,
                globs=globs,
                interval_seconds=_int(table, "interval_seconds", 3600, at),
                queue=str(table.get("queue", "hot")),
            )
        )
    return tuple(layers)


def _repos(raw: Any) -> tuple[RepoConfig, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError("repos must be an array of tables ([[repos]])")
    repos: list[RepoConfig] = []
    for i, table in enumerate(raw):
        at = f"repos[{i}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{at} must be a table")
        repo_id, url = table.get("id"), table.get("url")
        if not isinstance(repo_id, str) or not _NAME_RE.match(repo_id):
            raise ConfigError(f"{at}.id must be a short name of letters, digits, _ . -")
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{at}.url is required")
        provider = table.get("provider", "github")
        if provider not in PROVIDERS:
            raise ConfigError(f"{at}.provider must be one of {', '.join(PROVIDERS)}")
        layers = _layers(table["layers"], f"{at}.layers") if "layers" in table else None
        repos.append(
            RepoConfig(
                id=repo_id,
                url=url,
                branches=_strings(table.get("branches", ["main"]), f"{at}.branches") or ("main",),
                provider=provider,
                webhook_secret_env=table.get("webhook_secret_env"),
                layers=layers,
                token_env=_optional_str(table, "token_env", at),
                token_file=_optional_str(table, "token_file", at),
                token_user=_optional_str(table, "token_user", at) or "x-access-token",
            )
        )
    return tuple(repos)


def _scale_out(raw: Any) -> ScaleOut:
    if not isinstance(raw, dict):
        raise ConfigError("[scale_out] must be a table")
    defaults = ScaleOut()
    scale_out = ScaleOut(
        min_files=_int(raw, "min_files", defaults.min_files, "scale_out"),
        files_per_batch=_int(raw, "files_per_batch", defaults.files_per_batch, "scale_out"),
        lease_seconds=_int(raw, "lease_seconds", defaults.lease_seconds, "scale_out"),
    )
    if scale_out.files_per_batch < 1 or scale_out.lease_seconds < 1:
        raise ConfigError("scale_out.files_per_batch and scale_out.lease_seconds must be >= 1")
    return scale_out


def parse_config(data: dict[str, Any]) -> Config:
    classify = data.get("classify", {}) or {}
    index = data.get("index", {}) or {}
    if not isinstance(classify, dict) or not isinstance(index, dict):
        raise ConfigError("[classify] and [index] must be tables")
    rules = ClassifyRules(
        **{
            kind: _strings(classify.get(kind), f"classify.{kind}")
            for kind in (
                "generated",
                "vendored",
                "backup",
                "fixture",
                "test",
                "changelog",
                "translation",
                "doc",
                "config",
                "ignore",
            )
        },
        max_file_bytes=_int(index, "max_file_bytes", DEFAULT_MAX_FILE_BYTES, "index"),
        max_chunks_per_file=_int(index, "max_chunks_per_file", DEFAULT_MAX_CHUNKS_PER_FILE,
                                 "index"),
        batch_files=max(1, _int(index, "batch_files", DEFAULT_BATCH_FILES, "index")),
        batch_chunks=max(1, _int(index, "batch_chunks", DEFAULT_BATCH_CHUNKS, "index")),
    )
    service = data.get("service", {}) or {}
    layers = _layers(data["layers"], "layers") if "layers" in data else (Layer(DEFAULT_LAYER),)
    return Config(
        layers=layers,
        rules=rules,
        repos=_repos(data.get("repos")),
        branch_idle_seconds=_int(service, "branch_idle_seconds", 14 * 86400, "service"),
        api_token_env=str(service.get("api_token_env", "FRESHMARK_API_TOKEN")),
        metrics_require_token=service.get("metrics_require_token", False) is True,
        max_attempts=_int(service, "max_attempts", 5, "service"),
        retry_window_seconds=_int(service, "retry_window_seconds", 60, "service"),
        reconcile_interval_seconds=_int(service, "reconcile_interval_seconds", 120, "service"),
        scale_out=_scale_out(data.get("scale_out", {}) or {}),
        adapt_layer_intervals=service.get("adapt_layer_intervals", False) is True,
    )


def load_config(path: Path | None) -> Config:
    """Read a TOML config; ``None`` gives the defaults (one layer holding everything)."""
    if path is None:
        return Config()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    return parse_config(data)

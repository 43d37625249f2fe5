"""Private HTTPS-style remotes: the token comes from the environment or a file, never the URL.

The remote is ``git http-backend`` behind a small WSGI server on loopback that demands HTTP
Basic auth, as GitHub and GitLab do for private repositories over HTTPS.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from cluster_support import make_remote

from freshmark.adapters.git.mirrors import RemoteUnavailable, remote_credentials, sync_mirror
from freshmark.core.config import RepoConfig, parse_config
from freshmark.core.errors import ConfigError
from freshmark.core.settings import Settings

USER, TOKEN = "x-access-token", "glpat-pr1vate"
BACKEND = shutil.which("git-http-backend") or "/usr/lib/git-core/git-http-backend"


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _git_over_http(root: Path):
    expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if environ.get("HTTP_AUTHORIZATION") != expected:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')])
            return [b""]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        cgi_env = {"GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
                   "REMOTE_USER": USER, "PATH": "/usr/bin:/bin"}
        for name in ("PATH_INFO", "REQUEST_METHOD", "QUERY_STRING", "CONTENT_TYPE",
                     "CONTENT_LENGTH"):
            cgi_env[name] = str(environ.get(name) or "")
        out = subprocess.run([BACKEND], input=body, env=cgi_env, capture_output=True,
                             check=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        headers = [tuple(h.split(": ", 1)) for h in head.decode().split("\r\n") if h]
        status = next((v for k, v in headers if k.lower() == "status"), "200 OK")
        start_response(status, [(k, v) for k, v in headers if k.lower() != "status"])
        return [payload]

    return app


@pytest.fixture
def private_url(tmp_path: Path) -> Iterator[str]:
    if not Path(BACKEND).exists():
        pytest.skip("git-http-backend is not installed")
    remote, _ = make_remote(tmp_path)
    server = make_server("127.0.0.1", 0, _git_over_http(remote.parent), handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/{remote.name}"
    server.shutdown()


def test_a_private_remote_is_mirrored_with_the_token_from_the_environment(private_url,
                                                                          tmp_path):
    repo = RepoConfig("shop", private_url, token_env="SHOP_GIT_TOKEN")
    state = sync_mirror(Settings(home=tmp_path / "home"), repo, env={"SHOP_GIT_TOKEN": TOKEN})
    assert set(state.heads) == {"main"}
    assert TOKEN not in (state.path / "config").read_text()  # nothing written to the mirror


def test_a_private_remote_is_mirrored_with_the_token_from_a_file(private_url, tmp_path):
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    repo = RepoConfig("shop", private_url, token_file=str(secret))
    assert set(sync_mirror(Settings(home=tmp_path / "home"), repo, env={}).heads) == {"main"}


def test_a_private_remote_without_its_token_is_unavailable(private_url, tmp_path):
    with pytest.raises(RemoteUnavailable):
        sync_mirror(Settings(home=tmp_path / "home"), RepoConfig("shop", private_url), env={})


def test_a_named_token_that_is_missing_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"\$SHOP_GIT_TOKEN is empty"):
        remote_credentials(RepoConfig("shop", "https://h/x", token_env="SHOP_GIT_TOKEN"), {})
    with pytest.raises(ConfigError, match="cannot read token_file"):
        remote_credentials(RepoConfig("shop", "https://h/x",
                                      token_file=str(tmp_path / "none")), {})


def test_a_repo_without_a_token_source_sends_no_credentials():
    assert remote_credentials(RepoConfig("shop", "https://h/x"), {"X": "y"}) is None


def test_the_config_names_a_token_source_per_repo():
    config = parse_config({"repos": [{"id": "shop", "url": "https://h/x",
                                      "token_env": "SHOP_GIT_TOKEN", "token_user": "oauth2"}]})
    assert (config.repos[0].token_env, config.repos[0].token_user) == ("SHOP_GIT_TOKEN", "oauth2")

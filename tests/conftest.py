"""Shared fixtures: an isolated FRESHMARK_HOME, the fast embedder tier, a real Chroma server.

Tests that take the ``store_env`` fixture run twice: against the embedded store and against a
real ``chroma run`` server started once per session on a free loopback port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from repo_builder import RepoBuilder  # noqa: E402

pytest_plugins = ["cluster_fixtures", "shard_fixtures"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_binary() -> str:
    local = Path(sys.executable).parent / "chroma"
    return str(local) if local.exists() else (shutil.which("chroma") or "chroma")


class ChromaServer:
    """A real ``chroma run`` process on a loopback port, restartable for fault tests."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_seconds: float = 60.0) -> None:
        log = open(self.data_dir.parent / "chroma-server.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                _chroma_binary(),
                "run",
                "--path",
                str(self.data_dir),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("chroma server did not start in time")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    root = tmp_path_factory.mktemp("chroma-server")
    server = ChromaServer(root / "data")
    server.data_dir.mkdir()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated FRESHMARK_HOME with the fast (non-semantic) embedder tier."""
    home = tmp_path / "fmhome"
    monkeypatch.setenv("FRESHMARK_HOME", str(home))
    monkeypatch.setenv("FRESHMARK_EMBEDDER", os.environ.get("FRESHMARK_TEST_EMBEDDER", "hashing"))
    monkeypatch.delenv("FRESHMARK_CHROMA_URL", raising=False)
    monkeypatch.delenv("FRESHMARK_CHROMA_URLS", raising=False)
    monkeypatch.delenv("FRESHMARK_CONFIG", raising=False)
    return home


@pytest.fixture(params=["embedded", "server"])
def store_env(
    request: pytest.FixtureRequest, fm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """Run the test against the embedded store, then against a real Chroma server."""
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        monkeypatch.setenv("FRESHMARK_CHROMA_URL", server.url)
    return str(request.param)


@pytest.fixture
def make_repo(tmp_path: Path):
    """Factory: ``make_repo("shop")`` -> an initialised RepoBuilder under tmp_path."""

    def factory(name: str = "repo", branch: str = "main") -> RepoBuilder:
        return RepoBuilder.init(tmp_path / name, branch=branch)

    return factory

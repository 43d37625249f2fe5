"""Every command with Redis or the Chroma server down: one line on stderr and exit 3."""

from __future__ import annotations

import os
import subprocess

import pytest
from cluster_support import FRESHMARK, REPO_ROOT, free_port, make_remote, write_config

REDIS_DOWN = [
    ["branch", "index", "shop", "main", "--wait"],
    ["audit", "shop"],
    ["audit", "--json"],
    ["watch", "{work}"],
]
CHROMA_DOWN = [
    ["index", "{work}"],
    ["status", "{work}"],
    ["chunks", "{work}"],
    ["search", "hello", "--repo", "{work}"],
    ["context", "hello", "--repo", "{work}"],
    ["audit", "{work}"],
    ["branch", "index", "shop", "main", "--local"],
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("down")
    remote, work = make_remote(root)
    config = write_config(root / "fm.toml", [{"id": "shop", "url": f"file://{remote}"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRESHMARK_")}
    env.update({"FRESHMARK_HOME": str(root / "home"), "FRESHMARK_EMBEDDER": "hashing",
                "FRESHMARK_CONFIG": str(config), "PYTHONPATH": str(REPO_ROOT)})
    return {"work": str(work.path), **{f"env:{k}": v for k, v in env.items()}}


def _run(world: dict[str, str], args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    base = {k.removeprefix("env:"): v for k, v in world.items() if k.startswith("env:")}
    argv = [a.format(work=world["work"]) for a in args]
    return subprocess.run([*FRESHMARK, *argv], env={**base, **env}, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args", REDIS_DOWN, ids=" ".join)
def test_redis_down_is_one_line_and_exit_3(world: dict[str, str], args: list[str]) -> None:
    done = _run(world, args, FRESHMARK_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("freshmark: error: Redis unreachable")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", CHROMA_DOWN, ids=" ".join)
def test_chroma_server_down_is_one_line_and_exit_3(world: dict[str, str],
                                                   args: list[str]) -> None:
    done = _run(world, args, FRESHMARK_CHROMA_URL=f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("freshmark: error: Chroma store unreachable")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr

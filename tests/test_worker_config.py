"""A worker's config: a missing or malformed file stops it before it takes a job, and an edit
that does not load leaves a running worker on its last good config."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path

import pytest
from cluster_support import FRESHMARK

from workers import runtime


@pytest.mark.parametrize(("content", "said"), [
    (None, "config file not found"),
    ("layers = [\n", "config"),
])
def test_a_worker_whose_config_does_not_load_refuses_to_start(tmp_path: Path, content, said):
    config = tmp_path / "freshmark.toml"
    if content is not None:
        config.write_text(content)
    env = {**os.environ, "FRESHMARK_CONFIG": str(config),
           "FRESHMARK_REDIS_URL": "redis://127.0.0.1:1/0", "FRESHMARK_HOME": str(tmp_path)}
    done = subprocess.run([*FRESHMARK, "worker", "-Q", "ondemand"], env=env, timeout=120,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_config_edit_that_does_not_load_keeps_the_last_good_one(tmp_path, monkeypatch,
                                                                 caplog):
    config = tmp_path / "freshmark.toml"
    config.write_text("[service]\nmax_attempts = 7\n")
    monkeypatch.setenv("FRESHMARK_CONFIG", str(config))
    monkeypatch.setenv("FRESHMARK_REDIS_URL", "redis://127.0.0.1:1/0")  # never connected to
    runtime.reset_context()
    try:
        assert runtime.current_context().config.max_attempts == 7
        config.write_text("[service\nmax_attempts = 9\n")
        later = time.time() + 5
        os.utime(config, (later, later))
        with caplog.at_level(logging.ERROR, logger="freshmark.worker"):
            assert runtime.current_context().config.max_attempts == 7
        assert "not reloaded, the last good one stays" in caplog.text
    finally:
        runtime.reset_context()

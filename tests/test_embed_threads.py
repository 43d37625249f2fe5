"""Embedder thread count: from the cores the process really has, overridable, never spinning."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshmark.adapters.embedding.threads import choose_threads, parse_cpu_max
from freshmark.core.errors import ConfigError
from freshmark.core.settings import Settings


def test_cpu_max_quota_is_read_as_cores() -> None:
    assert parse_cpu_max("150000 100000\n") == 1.5
    assert parse_cpu_max("max 100000\n") is None
    assert parse_cpu_max("garbage") is None


def test_threads_are_the_quota_shared_among_worker_processes() -> None:
    assert choose_threads(affinity_cores=8, quota_cores=2.0, processes=1) == 2
    assert choose_threads(affinity_cores=8, quota_cores=None, processes=4) == 2
    assert choose_threads(affinity_cores=2, quota_cores=1.5, processes=4) == 1


def test_embed_threads_setting_overrides_and_is_validated() -> None:
    assert Settings.from_env({"FRESHMARK_EMBED_THREADS": "3"}).embed_threads == 3
    assert Settings.from_env({}).embed_threads is None
    with pytest.raises(ConfigError):
        Settings.from_env({"FRESHMARK_EMBED_THREADS": "0"})


@pytest.mark.slow
def test_minilm_session_does_not_spin_and_uses_the_threads_given(tmp_path: Path) -> None:
    from freshmark.adapters.embedding import get_embedder

    embedder = get_embedder("minilm", tmp_path, threads=1)
    options = embedder._session.get_session_options()  # type: ignore[attr-defined]
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == 1

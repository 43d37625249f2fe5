"""The real all-MiniLM-L6-v2 embedder on onnxruntime, checked against sentence-transformers.

``data/minilm_reference.json`` holds vectors computed once with sentence-transformers (torch CPU)
from the same package's model directory; freshmark itself never imports torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from freshmark.adapters.embedding import get_embedder
from freshmark.adapters.embedding.minilm import (
    MAX_POOL_WINDOWS,
    MAX_SEQ_TOKENS,
    MiniLMEmbedder,
    ensure_model_file,
    locate_model_files,
    model_file_path,
    token_windows,
    weights_sha256,
)

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PATH = Path(__file__).parent / "data" / "minilm_reference.json"
REFERENCE = json.loads(REFERENCE_PATH.read_text(encoding="utf-8"))
REFERENCE_TEXTS = [item["text"] for item in REFERENCE["items"]]
REFERENCE_VECTORS = np.array([item["vector"] for item in REFERENCE["items"]], dtype=np.float32)
# Texts that tokenise to almost nothing ([CLS][SEP], or one word piece repeated) are where
# dynamic int8 activations lose most; every text with real content stays above 0.98.
DEGENERATE_TEXTS = {"", "    \n\t  ", "x" * 3000}

CANCEL_FUNCTION = '''def cancel_order(self, order_id: str) -> None:
    """Cancel a pending order and refund the customer."""
    order = self.orders.get(order_id)
    order.status = "cancelled"
    self.payments.refund(order)'''
UNRELATED_FUNCTION = '''def render_chart(series, width=640):
    """Draw a line chart of the series as SVG."""
    return svg.polyline(series, width=width)'''


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture(scope="module")
def fp32(model_cache: Path) -> MiniLMEmbedder:
    embedder = get_embedder("minilm-fp32", model_cache)
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


@pytest.fixture(scope="module")
def int8(model_cache: Path) -> MiniLMEmbedder:
    embedder = get_embedder("minilm-int8", model_cache)
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


def cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return np.sum(vectors * reference, axis=1) / np.linalg.norm(reference, axis=1)


def test_fp32_matches_sentence_transformers_reference(fp32: MiniLMEmbedder) -> None:
    similarity = cosines(fp32.embed(REFERENCE_TEXTS), REFERENCE_VECTORS)
    assert similarity.min() >= 0.999, dict(zip(REFERENCE_TEXTS, similarity.round(5), strict=True))


def test_int8_stays_within_quantization_error_of_reference(int8: MiniLMEmbedder) -> None:
    similarity = cosines(int8.embed(REFERENCE_TEXTS), REFERENCE_VECTORS)
    by_text = dict(zip(REFERENCE_TEXTS, similarity.round(4), strict=True))
    contentful = [cos for text, cos in by_text.items() if text not in DEGENERATE_TEXTS]
    # The error depends on the CPU: without VNNI, onnxruntime's u8s8 kernel sums pairs of
    # products in saturating int16 (vpmaddubsw). Seen on AVX2-only x86: code >= 0.99, Chinese
    # 0.973, mean 0.987; with VNNI every contentful text >= 0.98. Per-tensor scales fall to ~0.9.
    assert min(contentful) >= 0.97, by_text
    assert sum(contentful) / len(contentful) >= 0.985, by_text
    assert similarity.min() >= 0.96, by_text


def test_default_minilm_is_the_int8_variant(model_cache: Path, int8: MiniLMEmbedder) -> None:
    assert get_embedder("minilm", model_cache).id == int8.id == "all-MiniLM-L6-v2/onnx-int8"


def test_variants_have_distinct_ids(fp32: MiniLMEmbedder, int8: MiniLMEmbedder) -> None:
    assert fp32.id != int8.id


def test_query_about_cancelling_an_order_is_closest_to_the_cancel_function(
    int8: MiniLMEmbedder,
) -> None:
    query = int8.embed_query("how do I cancel a customer's order")
    cancel, unrelated = int8.embed([CANCEL_FUNCTION, UNRELATED_FUNCTION])
    assert float(query @ cancel) > float(query @ unrelated) + 0.2


def test_batch_keeps_input_order_while_sorting_by_length(fp32: MiniLMEmbedder) -> None:
    texts = ["word " * 200, "short", CANCEL_FUNCTION, "", "medium length text " * 5]
    batched = fp32.embed(texts)
    one_by_one = np.stack([fp32.embed_query(text) for text in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)


def test_an_int8_vector_is_the_same_whatever_it_is_embedded_with(int8: MiniLMEmbedder) -> None:
    # int8 activations are quantized over each call: a text never shares a call.
    texts = ["word " * 200, "short", CANCEL_FUNCTION, UNRELATED_FUNCTION, "medium text " * 5,
             "def f():\n    return 1\n", "x = [1, 2, 3]", "class A:\n    pass\n", "y"]
    together = int8.embed(texts)
    alone = np.stack([int8.embed([text])[0] for text in texts])
    np.testing.assert_array_equal(together, alone)


def test_empty_input_has_shape_zero_by_dim(int8: MiniLMEmbedder) -> None:
    vectors = int8.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_input_longer_than_256_tokens_is_truncated(fp32: MiniLMEmbedder) -> None:
    head = " ".join(f"token{i}" for i in range(400))  # well past 256 word pieces
    long_vector, head_vector = fp32.embed([head + " tail " * 5000, head])
    assert fp32.token_counts([head + " tail " * 5000]) == [256]
    np.testing.assert_allclose(long_vector, head_vector, atol=1e-6)
    assert np.linalg.norm(long_vector) == pytest.approx(1.0, abs=1e-5)


def test_cjk_query_is_closest_to_the_cjk_text_on_the_same_topic(fp32: MiniLMEmbedder) -> None:
    query = fp32.embed_query("取消订单")
    texts = ["取消订单并退款给客户", "インデックスはスナップショットです"]
    same_topic, other_topic = fp32.embed(texts)
    assert float(query @ same_topic) > float(query @ other_topic)


def test_model_file_is_built_once_and_reused(model_cache: Path, fp32: MiniLMEmbedder) -> None:
    files = locate_model_files()
    path = model_file_path(model_cache, weights_sha256(files.weights), "fp32")
    mtime_before = path.stat().st_mtime_ns
    assert ensure_model_file(files, model_cache, "fp32") == path
    assert path.stat().st_mtime_ns == mtime_before


def test_concurrent_graph_builds_leave_one_valid_model_file(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    build = textwrap.dedent(
        f"""
        from pathlib import Path
        from freshmark.adapters.embedding.minilm import ensure_model_file, locate_model_files
        print(ensure_model_file(locate_model_files(), Path({str(cache_dir)!r}), "fp32"))
        """
    )
    builders = [
        subprocess.Popen(
            [sys.executable, "-c", build],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [builder.communicate(timeout=300) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0], outputs
    paths = {stdout.strip() for stdout, _ in outputs}
    assert len(paths) == 1
    models_dir = cache_dir / "models"
    assert [p.name for p in models_dir.glob("*.onnx")] == [Path(paths.pop()).name]
    assert list(models_dir.glob("*.tmp")) == []
    embedder = get_embedder("minilm-fp32", cache_dir, threads=1)
    assert cosines(embedder.embed(REFERENCE_TEXTS[:3]), REFERENCE_VECTORS[:3]).min() >= 0.999


def test_damaged_cached_graph_is_rebuilt(tmp_path: Path) -> None:
    files = locate_model_files()
    damaged = model_file_path(tmp_path, weights_sha256(files.weights), "fp32")
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"not an onnx model")
    embedder = get_embedder("minilm-fp32", tmp_path, threads=1)
    assert damaged.stat().st_size > 1_000_000
    assert cosines(embedder.embed(REFERENCE_TEXTS[:3]), REFERENCE_VECTORS[:3]).min() >= 0.999


def test_token_windows_frame_each_window_and_cover_the_text():
    ids = [101, *range(1000, 1600), 102]  # [CLS] 600 pieces [SEP]
    windows = token_windows(ids)
    assert all(w[0] == 101 and w[-1] == 102 and len(w) <= MAX_SEQ_TOKENS for w in windows)
    assert [i for w in windows for i in w[1:-1]] == ids[1:-1]
    assert token_windows(ids[:50] + [102]) == [ids[:50] + [102]]
    assert len(token_windows([101, *range(10_000), 102])) == MAX_POOL_WINDOWS


def test_pooled_embedder_reads_past_the_first_window(model_cache: Path, int8: MiniLMEmbedder):
    pooled = get_embedder("minilm-pool", model_cache)
    assert pooled.id.endswith("+pool") and pooled.id != int8.id
    filler = "\n".join(f"    total_{n} = total_{n - 1} + {n}" for n in range(1, 120))
    tail = "\n    " + CANCEL_FUNCTION.replace("\n", "\n    ")
    text = "def accumulate():\n" + filler + tail
    head_only, whole = int8.embed([text])[0], pooled.embed([text])[0]
    cancel = int8.embed([CANCEL_FUNCTION])[0]
    assert abs(float(np.linalg.norm(whole)) - 1.0) < 1e-5
    assert float(whole @ cancel) > float(head_only @ cancel) + 0.03


def test_lazy_ids_match_the_loaded_minilm_ids(fp32: MiniLMEmbedder, model_cache: Path) -> None:
    from freshmark.adapters.embedding import embedder_id

    assert embedder_id("minilm-fp32") == fp32.id
    for name in ("minilm", "minilm-int8", "minilm-pool"):
        assert embedder_id(name) == get_embedder(name, model_cache).id

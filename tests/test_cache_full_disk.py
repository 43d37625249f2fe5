"""A full disk under the embedding cache: the write fails for real (a child process whose file
size limit stops SQLite growing its files, as ENOSPC would), and the run that computed the
vectors still gets them; the next run computes them again."""

from __future__ import annotations

import multiprocessing
import resource
import signal
from pathlib import Path

from freshmark.adapters.embedding import HashingEmbedder
from freshmark.adapters.embedding.cache import EmbeddingCache, embed_with_cache

TEXTS = {f"sha{n}": f"def handler_{n}(order):\n    return order.total * {n}\n" for n in range(200)}


def _embed_on_a_full_disk(cache_path: str, results: multiprocessing.Queue) -> None:
    cache = EmbeddingCache(Path(cache_path))  # created while there is room
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG, not a signal
    size = max(p.stat().st_size for p in Path(cache_path).parent.iterdir())
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    try:
        vectors, computed, _ = embed_with_cache(HashingEmbedder(), cache, TEXTS)
        results.put((len(vectors), computed, None))
    except Exception as exc:  # reported to the test, which expects none
        results.put((0, 0, repr(exc)))


def test_a_cache_write_on_a_full_disk_leaves_the_run_its_vectors(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache" / "embeddings.sqlite"
    EmbeddingCache(cache_path).close()
    results: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_embed_on_a_full_disk,
                                                        args=(str(cache_path), results))
    child.start()
    vectors, computed, error = results.get(timeout=120)
    child.join()
    assert error is None and vectors == computed == len(TEXTS)
    cache = EmbeddingCache(cache_path)
    assert cache.count() < len(TEXTS)  # what did not fit is computed again next time
    again, recomputed, _ = embed_with_cache(HashingEmbedder(), cache, TEXTS)
    assert recomputed > 0 and set(again) == set(TEXTS)

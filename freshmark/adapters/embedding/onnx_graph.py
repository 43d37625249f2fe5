"""Build the MiniLM-L6 (BERT) sentence-embedding forward pass as an ONNX graph from safetensors.

The graph reproduces sentence-transformers' all-MiniLM-L6-v2 pipeline end to end: BERT encoder
(post-LayerNorm, GELU-erf, LayerNorm eps 1e-12), mean pooling over the attention mask, then L2
normalisation. Inputs are ``input_ids`` and ``attention_mask`` (int64, ``[batch, seq]``, right
padded); the output ``sentence_embedding`` is float32 ``[batch, hidden]`` with unit-length rows.
``token_type_ids`` are always zero for single texts, so type embedding 0 is folded into the
position table, and the attention scale 1/sqrt(head_dim) is folded into the query weights: both
are exact rewrites that save a node each per call.

Building needs only numpy, safetensors and onnx; nothing here imports torch. onnx and
safetensors are imported by the functions that build (``_GraphBuilder``, ``build_*``), not with
the module: importing onnx costs about a second, and the graph is built once per machine, while
every process that embeds imports this module for its names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

# Bump when the graph below changes, so cached model files built by older code are not reused.
GRAPH_VERSION = 1
OPSET = 18
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
OUTPUT = "sentence_embedding"
# Added to attention scores at padded key positions; exp() of it underflows to exactly 0.
_MASK_NEGATIVE = -10000.0


@dataclass(frozen=True)
class BertShape:
    """Architecture numbers of the encoder (from the model's config.json)."""

    layers: int = 6
    hidden: int = 384
    heads: int = 12
    layer_norm_eps: float = 1e-12

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class _GraphBuilder:
    """Accumulates nodes and initializers; each helper returns the name of its output."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self._numpy_helper = helper, numpy_helper
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counter = 0

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}_{self._counter}"

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(value, name=name))
        return name

    def op(self, op_type: str, inputs: list[str], stem: str = "", **attrs: Any) -> str:
        output = self.fresh(stem or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=output, **attrs))
        return output

    def linear(self, x: str, weight_out_in: np.ndarray, bias: np.ndarray, name: str) -> str:
        """``x @ W.T + b`` for a torch-layout weight ``[out, in]``."""
        weight = self.const(f"{name}.weight_t", np.ascontiguousarray(weight_out_in.T))
        bias_name = self.const(f"{name}.bias", bias)
        return self.op("Add", [self.op("MatMul", [x, weight], stem=name), bias_name])

    def layer_norm(self, x: str, prefix: str, weights: dict[str, np.ndarray], eps: float) -> str:
        gamma = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def _embeddings(g: _GraphBuilder, w: dict[str, np.ndarray], shape: BertShape) -> str:
    prefix = "embeddings"
    positions_with_type = (
        w[f"{prefix}.position_embeddings.weight"] + w[f"{prefix}.token_type_embeddings.weight"][0]
    ).astype(np.float32)
    table = g.const("position_plus_type", positions_with_type)
    words = g.const("word_embeddings", w[f"{prefix}.word_embeddings.weight"])
    word_vectors = g.op("Gather", [words, INPUT_IDS], axis=0)
    seq_len = g.op(
        "Slice",
        [
            g.op("Shape", [INPUT_IDS]),
            g.const("one_1d", np.array([1], np.int64)),
            g.const("two_1d", np.array([2], np.int64)),
        ],
    )
    zero = g.const("zero_1d", np.array([0], np.int64))
    position_vectors = g.op("Slice", [table, zero, seq_len, zero])
    summed = g.op("Add", [word_vectors, position_vectors])
    return g.layer_norm(summed, f"{prefix}.LayerNorm", w, shape.layer_norm_eps)


def _mask_bias(g: _GraphBuilder, mask_float: str) -> str:
    """``[batch, 1, 1, seq]`` additive bias: 0 for real tokens, a large negative for padding."""
    one = g.const("one_f", np.array(1.0, np.float32))
    negative = g.const("mask_negative", np.array(_MASK_NEGATIVE, np.float32))
    inverted = g.op("Sub", [one, mask_float])
    bias = g.op("Mul", [inverted, negative])
    return g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2], np.int64))])


def _split_heads(g: _GraphBuilder, x: str, perm: list[int], shape: BertShape) -> str:
    heads_shape = g.const(
        g.fresh("heads_shape"), np.array([0, 0, shape.heads, shape.head_dim], np.int64)
    )
    return g.op("Transpose", [g.op("Reshape", [x, heads_shape])], perm=perm)


def _attention(
    g: _GraphBuilder, x: str, bias: str, w: dict[str, np.ndarray], p: str, shape: BertShape
) -> str:
    scale = 1.0 / math.sqrt(shape.head_dim)
    query_w, key_w, value_w = (w[f"{p}.self.{n}.weight"] for n in ("query", "key", "value"))
    query_b, key_b, value_b = (w[f"{p}.self.{n}.bias"] for n in ("query", "key", "value"))
    qkv_weight = np.concatenate([query_w * scale, key_w, value_w]).astype(np.float32)
    qkv_bias = np.concatenate([query_b * scale, key_b, value_b]).astype(np.float32)
    qkv = g.linear(x, qkv_weight, qkv_bias, f"{p}.self.qkv")
    split_sizes = g.const(g.fresh("qkv_split"), np.array([shape.hidden] * 3, np.int64))
    query, key, value = (g.fresh(n) for n in ("query", "key", "value"))
    g.nodes.append(g.helper.make_node("Split", [qkv, split_sizes], [query, key, value], axis=2))
    q_heads = _split_heads(g, query, [0, 2, 1, 3], shape)
    k_heads_t = _split_heads(g, key, [0, 2, 3, 1], shape)
    v_heads = _split_heads(g, value, [0, 2, 1, 3], shape)
    scores = g.op("Add", [g.op("MatMul", [q_heads, k_heads_t]), bias])
    probs = g.op("Softmax", [scores], axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [probs, v_heads])], perm=[0, 2, 1, 3])
    merged_shape = g.const(g.fresh("merged_shape"), np.array([0, 0, shape.hidden], np.int64))
    merged = g.op("Reshape", [context, merged_shape])
    projected = g.linear(
        merged, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.output.dense"
    )
    residual = g.op("Add", [projected, x])
    return g.layer_norm(residual, f"{p}.output.LayerNorm", w, shape.layer_norm_eps)


def _gelu_erf(g: _GraphBuilder, x: str) -> str:
    """Exact GELU, ``x * 0.5 * (1 + erf(x / sqrt(2)))``, in the form onnxruntime fuses."""
    sqrt2 = g.const(g.fresh("sqrt2"), np.array(math.sqrt(2.0), np.float32))
    one = g.const(g.fresh("gelu_one"), np.array(1.0, np.float32))
    half = g.const(g.fresh("gelu_half"), np.array(0.5, np.float32))
    erf = g.op("Erf", [g.op("Div", [x, sqrt2])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [erf, one])]), half])


def _feed_forward(
    g: _GraphBuilder, x: str, w: dict[str, np.ndarray], p: str, shape: BertShape
) -> str:
    inner = g.linear(
        x, w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"], f"{p}.inter"
    )
    outer = g.linear(
        _gelu_erf(g, inner), w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.out"
    )
    return g.layer_norm(g.op("Add", [outer, x]), f"{p}.output.LayerNorm", w, shape.layer_norm_eps)


def _mean_pool_normalise(g: _GraphBuilder, hidden: str, mask_float: str) -> None:
    """sentence-transformers Pooling(mean) then Normalize: clamp count 1e-9, norm eps 1e-12."""
    mask3 = g.op("Unsqueeze", [mask_float, g.const("axes_2", np.array([2], np.int64))])
    axis_seq = g.const("axes_seq", np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [hidden, mask3]), axis_seq], keepdims=0)
    counts = g.op("ReduceSum", [mask3, axis_seq], keepdims=0)
    counts = g.op("Max", [counts, g.const("count_floor", np.array(1e-9, np.float32))])
    mean = g.op("Div", [summed, counts])
    norm = g.op("ReduceL2", [mean, g.const("axes_hidden", np.array([1], np.int64))], keepdims=1)
    norm = g.op("Max", [norm, g.const("norm_floor", np.array(1e-12, np.float32))])
    g.nodes.append(g.helper.make_node("Div", [mean, norm], [OUTPUT]))


def build_minilm_graph(weights: dict[str, np.ndarray], shape: BertShape) -> onnx.ModelProto:
    """The full sentence-embedding graph for a BERT encoder's safetensors ``weights``."""
    import onnx
    from onnx import TensorProto, helper

    g = _GraphBuilder()
    mask_float = g.op("Cast", [ATTENTION_MASK], to=TensorProto.FLOAT)
    bias = _mask_bias(g, mask_float)
    x = _embeddings(g, weights, shape)
    for layer in range(shape.layers):
        prefix = f"encoder.layer.{layer}"
        x = _attention(g, x, bias, weights, f"{prefix}.attention", shape)
        x = _feed_forward(g, x, weights, prefix, shape)
    _mean_pool_normalise(g, x, mask_float)
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in (INPUT_IDS, ATTENTION_MASK)
    ]
    output = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", shape.hidden])
    graph = helper.make_graph(g.nodes, "minilm_sentence_embedding", inputs, [output])
    graph.initializer.extend(g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # the IR that opset 18 shipped with; any onnxruntime >= 1.14 loads it
    onnx.checker.check_model(model)
    return model


def build_minilm_model_file(weights_path: Path, shape: BertShape, out_path: Path) -> None:
    """Build the fp32 graph from ``weights_path`` (safetensors) and write it to ``out_path``."""
    import onnx
    from safetensors.numpy import load_file

    weights = load_file(str(weights_path))
    onnx.save_model(build_minilm_graph(weights, shape), str(out_path))

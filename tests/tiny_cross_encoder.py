"""A tiny ONNX cross-encoder built in the tests, so the rerank stage runs on a real model.

Its logit is the number of distinct query words that also occur in the text: one-hot word
embeddings summed per segment (token type 0 = query, 1 = text), clipped to presence, and
multiplied. It is small, exact and easy to reason about, yet it goes through the same
tokenizer pair encoding and onnxruntime session as a real cross-encoder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def build(folder: Path, words: list[str]) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate([*SPECIAL, *sorted(set(words))])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer.save(str(folder / "tokenizer.json"))

    size = len(vocab)
    table = np.eye(size, dtype=np.float32)
    table[: len(SPECIAL)] = 0.0  # special tokens and unknown words never count
    ints = lambda name, values: numpy_helper.from_array(np.array(values, dtype=np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["emb"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "types"], ["not_types"]),
        helper.make_node("Mul", ["mask", "not_types"], ["mask_a"]),
        helper.make_node("Mul", ["mask", "types"], ["mask_b"]),
        helper.make_node("Unsqueeze", ["mask_a", "axis2"], ["mask_a3"]),
        helper.make_node("Unsqueeze", ["mask_b", "axis2"], ["mask_b3"]),
        helper.make_node("Mul", ["emb", "mask_a3"], ["emb_a"]),
        helper.make_node("Mul", ["emb", "mask_b3"], ["emb_b"]),
        helper.make_node("ReduceSum", ["emb_a", "axis1"], ["sum_a"], keepdims=0),
        helper.make_node("ReduceSum", ["emb_b", "axis1"], ["sum_b"], keepdims=0),
        helper.make_node("Min", ["sum_a", "one"], ["has_a"]),
        helper.make_node("Min", ["sum_b", "one"], ["has_b"]),
        helper.make_node("Mul", ["has_a", "has_b"], ["both"]),
        helper.make_node("ReduceSum", ["both", "axis1"], ["logits"], keepdims=1),
    ]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "length"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    graph = helper.make_graph(
        nodes, "tiny_cross_encoder", inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                     ints("axis1", [1]), ints("axis2", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder

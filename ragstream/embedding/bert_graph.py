"""A BERT sentence encoder (MiniLM) as an ONNX graph, built from its weight arrays without torch.

The graph is the one onnxruntime's transformer optimizer makes of a torch export (fused embedding
layer norm, attention, skip layer norm and bias GELU, all onnxruntime contrib ops), followed by
sentence-transformers' mean pooling over real tokens and L2 normalization: it outputs the sentence
vector directly. Inputs are right-padded rows (`attention_mask` 1 on real tokens, then 0), which is
how the embedder feeds them. Weights use the Hugging Face names (`encoder.layer.0.attention.self.
query.weight`, ...) with linear weights stored [out, in], as in `model.safetensors`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The newest ONNX IR version an onnxruntime release loads, as its refusal says ("Unsupported model IR version: 14,
# max supported IR version: 10" from 1.19.0; 13 from 1.30). A model is stamped for the oldest release pyproject.toml
# accepts, never with the IR version of whichever onnx package writes it (onnx 1.23 stamps 14).
ORT_MAX_IR_VERSION = {"1.19": 10, "1.30": 13}
ORT_LOWER_BOUND = "1.19"  # pyproject.toml's `onnxruntime>=` (tests/test_embedding.py checks that they agree)
IR_VERSION = ORT_MAX_IR_VERSION[ORT_LOWER_BOUND]
# The default domain's opset the nodes are written for (ReduceL2 takes `axes` as an attribute up to opset 17);
# onnxruntime has implemented it since 1.12.
OPSET = 17
MS = "com.microsoft"


class _Graph:
    """Nodes and initializers collected while the layers are laid down."""

    def __init__(self) -> None:
        from onnx import helper

        self.helper = helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def weight(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output


def build_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Any:
    """The sentence-embedding model (an `onnx.ModelProto`) for these weights and BERT config."""
    from onnx import TensorProto, helper

    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"only GELU BERT models are supported, not {config.get('hidden_act')}")
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    w = {name: np.asarray(array, dtype=np.float32) for name, array in weights.items() if array.dtype.kind == "f"}
    g = _Graph()

    def linear_t(prefix: str) -> np.ndarray:
        return w[f"{prefix}.weight"].T  # [in, out], what MatMul multiplies by

    ids = g.node("Cast", ["input_ids"], "ids32", to=TensorProto.INT32)
    segments = g.node("Cast", ["token_type_ids"], "segments32", to=TensorProto.INT32)
    mask32 = g.node("Cast", ["attention_mask"], "mask32", to=TensorProto.INT32)
    g.nodes.append(
        helper.make_node(
            "EmbedLayerNormalization",
            [
                ids,
                segments,
                g.weight("word", w["embeddings.word_embeddings.weight"]),
                g.weight("position", w["embeddings.position_embeddings.weight"]),
                g.weight("segment", w["embeddings.token_type_embeddings.weight"]),
                g.weight("embed_ln_w", w["embeddings.LayerNorm.weight"]),
                g.weight("embed_ln_b", w["embeddings.LayerNorm.bias"]),
                mask32,
            ],
            ["embedded", "mask_index"],
            name="embeddings",
            domain=MS,
            epsilon=eps,
        )
    )
    hidden = "embedded"
    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}"
        attn = f"{p}.attention.self"
        qkv_w = np.concatenate([linear_t(f"{attn}.{part}") for part in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[f"{attn}.{part}.bias"] for part in ("query", "key", "value")])
        context = g.node(
            "Attention",
            [hidden, g.weight(f"l{n}.qkv_w", qkv_w), g.weight(f"l{n}.qkv_b", qkv_b), "mask_index"],
            f"l{n}.context",
            domain=MS,
            num_heads=heads,
        )
        projected = g.node(
            "MatMul", [context, g.weight(f"l{n}.attn_out_w", linear_t(f"{p}.attention.output.dense"))], f"l{n}.proj"
        )
        attended = g.node(
            "SkipLayerNormalization",
            [
                projected,
                hidden,
                g.weight(f"l{n}.attn_ln_w", w[f"{p}.attention.output.LayerNorm.weight"]),
                g.weight(f"l{n}.attn_ln_b", w[f"{p}.attention.output.LayerNorm.bias"]),
                g.weight(f"l{n}.attn_out_b", w[f"{p}.attention.output.dense.bias"]),
            ],
            f"l{n}.attended",
            domain=MS,
            epsilon=eps,
        )
        up = g.node("MatMul", [attended, g.weight(f"l{n}.up_w", linear_t(f"{p}.intermediate.dense"))], f"l{n}.up")
        act = g.node(
            "BiasGelu", [up, g.weight(f"l{n}.up_b", w[f"{p}.intermediate.dense.bias"])], f"l{n}.gelu", domain=MS
        )
        down = g.node("MatMul", [act, g.weight(f"l{n}.down_w", linear_t(f"{p}.output.dense"))], f"l{n}.down")
        hidden = g.node(
            "SkipLayerNormalization",
            [
                down,
                attended,
                g.weight(f"l{n}.out_ln_w", w[f"{p}.output.LayerNorm.weight"]),
                g.weight(f"l{n}.out_ln_b", w[f"{p}.output.LayerNorm.bias"]),
                g.weight(f"l{n}.down_b", w[f"{p}.output.dense.bias"]),
            ],
            f"l{n}.out",
            domain=MS,
            epsilon=eps,
        )

    # Mean pooling over real tokens, then L2 normalization (sentence-transformers' Pooling + Normalize).
    axis1 = g.weight("axis1", np.array([1], dtype=np.int64))
    axis_last = g.weight("axis_last", np.array([-1], dtype=np.int64))
    mask = g.node("Cast", [g.node("Unsqueeze", ["attention_mask", axis_last], "mask3")], "mask_f", to=TensorProto.FLOAT)
    summed = g.node("ReduceSum", [g.node("Mul", [hidden, mask], "masked"), axis1], "summed", keepdims=0)
    counts = g.node("ReduceSum", [mask, axis1], "counts", keepdims=0)
    counts = g.node("Clip", [counts, g.weight("min_count", np.array(1e-9, dtype=np.float32))], "counts_min")
    pooled = g.node("Div", [summed, counts], "pooled")
    norm = g.node("ReduceL2", [pooled], "norm", axes=[1], keepdims=1)
    norm = g.node("Clip", [norm, g.weight("min_norm", np.array(1e-12, dtype=np.float32))], "norm_min")
    g.node("Div", [pooled, norm], "embedding")

    dims = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "sentence_embedding",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in _INPUTS],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", w["embeddings.LayerNorm.bias"].size])],
        g.initializers,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
        producer_name="ragstream",
        ir_version=IR_VERSION,
    )


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

"""Convert a BERT-family sentence-transformers folder into one ONNX graph, without torch.

The graph takes `input_ids`, `attention_mask` and `token_type_ids` (int64, [batch, seq]) and returns
`sentence_embedding` (float32, [batch, hidden]): embeddings, the encoder layers, pooling as the
folder's 1_Pooling/config.json says (mean or CLS), and L2 normalisation, all inside the graph, so
the runtime side needs nothing but ONNX Runtime and a tokenizer.

Two forms of the same network: `build_model` writes standard ONNX operators only (the fp32 graph every
execution provider runs, and the reference), `build_fused_model` writes ONNX Runtime's fused CPU
operators (Attention, BiasGelu, EmbedLayerNormalization) and, given a weight quantiser, their int8 forms
(QAttention, DynamicQuantizeMatMul). `read_converted` reads a standard graph back into config and
weights, so the fused forms are made from the fp32 folder alone.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from inference.errors import ModelError

OPSET = 17
MS_DOMAIN = "com.microsoft"  # ONNX Runtime's contrib operators
# Turns a MatMul weight ([in, out], float32) into (int8 weight, float32 scale per output column), or
# returns None to keep that matrix in fp32; `key` is the checkpoint name ("encoder.layer.0.output.dense").
WeightQuantizer = Callable[[str, np.ndarray], "tuple[np.ndarray, np.ndarray] | None"]
# Model types whose weights use the BERT layout (embeddings.*, encoder.layer.N.attention.self.*).
SUPPORTED_MODEL_TYPES = frozenset({"bert"})
_WEIGHT_PREFIXES = ("", "bert.")
# Same value transformers uses to mask padding (torch.finfo(float32).min): exp() of it is exactly 0.
_MASK_VALUE = float(np.finfo(np.float32).min)
# torch.nn.functional.normalize and sentence-transformers' mean pooling clamp with these.
_NORM_EPS = 1e-12
_POOL_EPS = 1e-9


@dataclass(frozen=True)
class BertConfig:
    """The parts of a BERT config.json that decide the graph's shape."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float
    pooling: str  # "mean" or "cls"


@dataclass(frozen=True)
class SentenceSettings:
    """What sentence-transformers adds around the network: the length it reads and the prompts it prepends."""

    max_seq_length: int | None = None  # tokens, special tokens included; None when the folder does not say
    query_prompt: str = ""  # e.g. "query: " for the e5 family
    passage_prompt: str = ""  # e.g. "passage: "

    def metadata(self) -> dict[str, str]:
        """The graph metadata entries that carry these settings to the runtime."""
        meta = {"hearth.query_prompt": self.query_prompt, "hearth.passage_prompt": self.passage_prompt}
        if self.max_seq_length:
            meta["hearth.max_seq_length"] = str(self.max_seq_length)
        return meta


def convert(model_dir: Path, out_path: Path, *, settings: SentenceSettings | None = None) -> Path:
    """Write the ONNX embedding graph for the sentence-transformers folder `model_dir` to `out_path`.

    `settings` defaults to what the folder's sentence-transformers files say (`read_settings`).
    """
    model_dir = Path(model_dir)
    out_path = Path(out_path)
    config = read_config(model_dir)
    settings = settings if settings is not None else read_settings(model_dir)
    weights = _load_weights(model_dir / "model.safetensors")
    model = build_model(config, weights)
    helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props}, **settings.metadata()})
    save_atomically(model, out_path)
    return out_path


def read_converted(path: Path) -> tuple[BertConfig, dict[str, np.ndarray], dict[str, str]]:
    """Read a graph written by `build_model` back into its config, checkpoint-layout weights and metadata."""
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(path))
    except (OSError, DecodeError) as exc:
        raise ModelError(f"The converted embedding model {path} cannot be read: {exc}.") from exc
    meta = {p.key: p.value for p in model.metadata_props}
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    transposed = {n.input[1] for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in tensors}
    weights = {k: (np.ascontiguousarray(v.T) if k in transposed else v) for k, v in tensors.items()}
    norms = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    try:
        layers = len({k.split(".")[2] for k in weights if k.startswith("encoder.layer.")})
        config = BertConfig(
            hidden_size=int(weights["embeddings.word_embeddings.weight"].shape[1]),
            num_layers=layers,
            num_heads=int(weights["split_heads"][2]),
            intermediate_size=int(weights["encoder.layer.0.intermediate.dense.weight"].shape[0]),
            max_positions=int(weights["embeddings.position_embeddings.weight"].shape[0]),
            layer_norm_eps=float(next(a.f for a in norms[0].attribute if a.name == "epsilon")),
            pooling=meta["hearth.pooling"],
        )
    except (KeyError, IndexError, StopIteration) as exc:
        raise ModelError(f"The embedding model {path} was not written by Hearth's converter ({exc} missing).") from exc
    _check_shapes(config, weights)
    return config, weights, meta


def read_settings(model_dir: Path) -> SentenceSettings:
    """Read max_seq_length (sentence_bert_config.json) and the query/passage prompts (config_sentence_transformers.json)."""
    model_dir = Path(model_dir)
    length: int | None = None
    path = model_dir / "sentence_bert_config.json"
    if path.exists():
        value = _read_json(path).get("max_seq_length")
        length = int(value) if isinstance(value, int) and value > 1 else None
    prompts: dict[str, Any] = {}
    path = model_dir / "config_sentence_transformers.json"
    if path.exists():
        raw = _read_json(path).get("prompts")
        prompts = raw if isinstance(raw, dict) else {}

    def prompt(*names: str) -> str:
        return next((str(prompts[n]) for n in names if isinstance(prompts.get(n), str)), "")

    return SentenceSettings(
        max_seq_length=length,
        query_prompt=prompt("query"),
        passage_prompt=prompt("passage", "document", "corpus"),
    )


def read_config(model_dir: Path) -> BertConfig:
    """Read config.json and the pooling config of `model_dir`, rejecting what the graph cannot express."""
    if not model_dir.is_dir():
        raise ModelError(f"The embedding model folder {model_dir} does not exist.")
    raw = _read_json(model_dir / "config.json")
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelError(
            f"The embedding model in {model_dir} is of type {model_type!r}, "
            "which Hearth cannot convert; only BERT-style models are supported.",
            hint='Choose a sentence-transformers model whose config.json says "model_type": "bert".',
        )
    act = raw.get("hidden_act", "gelu")
    if act != "gelu":
        raise ModelError(f"The embedding model in {model_dir} uses the activation {act!r}; only 'gelu' is supported.")
    position_type = raw.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ModelError(
            f"The embedding model in {model_dir} uses {position_type!r} position embeddings; "
            "only 'absolute' is supported."
        )
    try:
        hidden = int(raw["hidden_size"])
        heads = int(raw["num_attention_heads"])
        config = BertConfig(
            hidden_size=hidden,
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=heads,
            intermediate_size=int(raw["intermediate_size"]),
            max_positions=int(raw["max_position_embeddings"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
            pooling=_read_pooling(model_dir),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"The config.json in {model_dir} lacks or garbles the field {exc}.") from exc
    if hidden <= 0 or heads <= 0 or hidden % heads:
        raise ModelError(f"The config.json in {model_dir} has hidden_size {hidden} not divisible into {heads} heads.")
    return config


def _read_pooling(model_dir: Path) -> str:
    """Return "mean" or "cls" from 1_Pooling/config.json; mean when the folder has none (the usual default)."""
    path = model_dir / "1_Pooling" / "config.json"
    if not path.exists():
        return "mean"
    raw = _read_json(path)
    if raw.get("pooling_mode"):  # newer sentence-transformers write one string
        modes = {str(raw["pooling_mode"])}
    else:
        modes = {key[len("pooling_mode_") :] for key, on in raw.items() if key.startswith("pooling_mode_") and on}
    names = {"mean_tokens": "mean", "mean": "mean", "cls_token": "cls", "cls": "cls"}
    if len(modes) != 1 or next(iter(modes)) not in names:
        raise ModelError(
            f"The pooling configured in {path} ({', '.join(sorted(modes)) or 'none'}) is not supported; "
            "Hearth supports mean or CLS pooling."
        )
    return names[next(iter(modes))]


def _read_json(path: Path) -> dict[str, Any]:
    """Parse a JSON object file, turning every failure into a ModelError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelError(f"The embedding model file {path} is missing.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"The embedding model file {path} cannot be read: {exc}.") from exc
    if not isinstance(data, dict):
        raise ModelError(f"The embedding model file {path} does not hold a JSON object.")
    return data


def _load_weights(path: Path) -> dict[str, np.ndarray]:
    """Read all tensors of a safetensors file as float32 numpy arrays, without their `bert.` prefix."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    if not path.is_file():
        raise ModelError(f"The embedding model weights {path} are missing.")
    try:
        raw = load_file(str(path))
    except (SafetensorError, OSError, ValueError, TypeError) as exc:
        raise ModelError(f"The embedding model weights {path} cannot be read: {exc}.") from exc
    for prefix in _WEIGHT_PREFIXES:
        if f"{prefix}embeddings.word_embeddings.weight" in raw:
            break
    else:
        raise ModelError(f"The weights in {path} do not have the BERT layout (no embeddings.word_embeddings.weight).")
    weights: dict[str, np.ndarray] = {}
    for name, tensor in raw.items():
        if not name.startswith(prefix):
            continue
        if tensor.dtype.kind == "f":
            tensor = tensor.astype(np.float32, copy=False)
        weights[name[len(prefix) :]] = tensor
    return weights


class _GraphBuilder:
    """Accumulates nodes and initializers; each helper returns the name of its output."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        """Return a unique tensor name."""
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, name: str, value: np.ndarray) -> str:
        """Add an initializer and return its name."""
        self.initializers.append(numpy_helper.from_array(value, name=name))
        return name

    def weight(self, key: str, *, transpose: bool = False) -> str:
        """Add the checkpoint tensor `key` (transposed for MatMul when asked) as an initializer."""
        try:
            value = self.weights[key]
        except KeyError:
            raise ModelError(f"The embedding model weights lack the tensor {key!r}.") from None
        if transpose:
            # torch Linear stores [out, in]; MatMul wants [in, out].
            value = np.ascontiguousarray(value.T)
        return self.const(key, value)

    def op(self, op_type: str, inputs: list[str], hint: str, **attrs: Any) -> str:
        """Add one node with a single output."""
        return self.ops(op_type, inputs, hint, 1, **attrs)[0]

    def ops(self, op_type: str, inputs: list[str], hint: str, outputs: int, **attrs: Any) -> list[str]:
        """Add one node with `outputs` outputs; contrib operators (ONNX Runtime's) by their `domain`."""
        names = [self.fresh(hint) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=names[0], **attrs))
        return names

    def linear(self, x: str, key: str) -> str:
        """x @ W.T + b for the torch Linear stored under `key`."""
        y = self.op("MatMul", [x, self.weight(f"{key}.weight", transpose=True)], "matmul")
        return self.op("Add", [y, self.weight(f"{key}.bias")], "add")

    def layer_norm(self, x: str, key: str, eps: float) -> str:
        """LayerNorm over the last axis with the checkpoint's gamma and beta."""
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{key}.weight"), self.weight(f"{key}.bias")],
            "layernorm",
            axis=-1,
            epsilon=eps,
        )


def build_model(config: BertConfig, weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Build the ONNX embedding graph from a config and its (prefix-free, float32) weights."""
    g = _GraphBuilder(weights)
    hidden, heads = config.hidden_size, config.num_heads
    head_dim = hidden // heads
    _check_shapes(config, weights)

    # Embeddings: word + position (0..seq-1) + token type, then LayerNorm.
    seq_len = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    zero = g.const("zero_1d", np.array([0], dtype=np.int64))
    positions = g.op("Slice", [g.weight("embeddings.position_embeddings.weight"), zero, seq_len, zero], "positions")
    words = g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), "input_ids"], "words")
    types = g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "types")
    x = g.op("Add", [g.op("Add", [words, types], "embed"), positions], "embed")
    x = g.layer_norm(x, "embeddings.LayerNorm", config.layer_norm_eps)

    # Additive attention mask [batch, 1, 1, seq]: 0 where attended, float32 min where padding.
    mask = g.op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    one = g.const("one", np.array(1.0, dtype=np.float32))
    inverted = g.op("Sub", [one, mask], "mask_inv")
    mask_4d = g.op("Unsqueeze", [inverted, g.const("axes_1_2", np.array([1, 2], dtype=np.int64))], "mask_4d")
    additive = g.op("Mul", [mask_4d, g.const("mask_value", np.array(_MASK_VALUE, dtype=np.float32))], "mask_add")

    split_shape = g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("attn_scale", np.array(math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))

    for i in range(config.num_layers):
        p = f"encoder.layer.{i}"
        q = g.op("Reshape", [g.linear(x, f"{p}.attention.self.query"), split_shape], "q")
        k = g.op("Reshape", [g.linear(x, f"{p}.attention.self.key"), split_shape], "k")
        v = g.op("Reshape", [g.linear(x, f"{p}.attention.self.value"), split_shape], "v")
        q = g.op("Transpose", [q], "q_t", perm=[0, 2, 1, 3])  # [b, h, s, d]
        k = g.op("Transpose", [k], "k_t", perm=[0, 2, 3, 1])  # [b, h, d, s]
        v = g.op("Transpose", [v], "v_t", perm=[0, 2, 1, 3])  # [b, h, s, d]
        scores = g.op("Div", [g.op("MatMul", [q, k], "scores"), scale], "scores_scaled")
        probs = g.op("Softmax", [g.op("Add", [scores, additive], "scores_masked")], "probs", axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v], "context")], "context_t", perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_shape], "context_merged")
        attn = g.linear(context, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", [attn, x], "residual"), f"{p}.attention.output.LayerNorm", config.layer_norm_eps)

        # GELU in its exact erf form, as BERT's "gelu" is: 0.5 * h * (1 + erf(h / sqrt(2))).
        h = g.linear(x, f"{p}.intermediate.dense")
        erf = g.op("Erf", [g.op("Div", [h, sqrt2], "gelu_div")], "gelu_erf")
        gelu = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, one], "gelu_add")], "gelu_mul"), half], "gelu")
        out = g.linear(gelu, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", [out, x], "residual"), f"{p}.output.LayerNorm", config.layer_norm_eps)

    return _finish(g, x, mask, config)


@dataclass(frozen=True)
class FusedPlan:
    """How `build_fused_model` writes the matrices: which in int8, which inputs are smoothed, which neurons split.

    `smooth` maps a matmul key ("encoder.layer.0.attention.qkv", "encoder.layer.0.intermediate.dense") to a
    per-input-channel divisor s: the activation is divided by s before it is quantised and the weight's
    rows multiplied by s (exact in real numbers), so a few channels with large values no longer stretch the
    one scale the whole batch is quantised with. `split` maps a layer to feed-forward neurons computed in
    fp32 beside the int8 matrices: their rare large GELU outputs would stretch that scale the same way.
    """

    quantize: WeightQuantizer | None = None
    smooth: Mapping[str, np.ndarray] = field(default_factory=dict)
    split: Mapping[int, np.ndarray] = field(default_factory=dict)
    # The residual and LayerNorm as one SkipLayerNormalization (version 1 graphs) rather than Add and
    # LayerNormalization: onnxruntime 1.32's CPU kernel for it takes about 1 µs a row of 384, five times
    # the two plain operators (docs/experiments/2026-12-08-embedding-less-work.md), so newer graphs write
    # the plain pair.
    skip_layer_norm: bool = False


def build_fused_model(
    config: BertConfig, weights: dict[str, np.ndarray], *, plan: FusedPlan | None = None, taps: bool = False
) -> onnx.ModelProto:
    """Build the same network from ONNX Runtime's fused CPU operators; int8 where `plan.quantize` says so.

    Per layer: Attention over one packed [hidden, 3*hidden] Q/K/V matrix (QAttention in int8, its input
    quantised once by DynamicQuantizeLinear), the output projection, the residual and LayerNorm, the
    feed-forward into BiasGelu, its output projection, the residual and LayerNorm. An int8 matrix is a
    DynamicQuantizeMatMul: the activation is quantised per batch (uint8) at run time, the weight per output
    column (int8), the bias added in the same kernel.
    With `taps`, the input of every matrix is also a graph output named "tap:<key>" (for calibration).
    """
    plan = plan or FusedPlan()
    g = _GraphBuilder(weights)
    eps = config.layer_norm_eps
    _check_shapes(config, weights)
    tapped: list[str] = []

    # EmbedLayerNormalization: word + position (0..seq-1) + token type, LayerNorm, in one kernel (int32 ids).
    ids, types, mask_i32 = (g.op("Cast", [name], f"{name}_i32", to=TensorProto.INT32)
                            for name in ("input_ids", "token_type_ids", "attention_mask"))
    x, _, _ = g.ops(
        "EmbedLayerNormalization",
        [ids, types, g.weight("embeddings.word_embeddings.weight"), g.weight("embeddings.position_embeddings.weight"),
         g.weight("embeddings.token_type_embeddings.weight"), g.weight("embeddings.LayerNorm.weight"),
         g.weight("embeddings.LayerNorm.bias")],
        "embed", 3, domain=MS_DOMAIN, epsilon=eps,
    )
    mask = g.op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)

    def prepare(x: str, key: str, w: np.ndarray) -> tuple[str, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """Tap and smooth the input of matrix `key`; return the input, the weight and its int8 form (or None)."""
        if taps:
            g.nodes.append(helper.make_node("Identity", [x], [f"tap:{key}"], name=f"tap:{key}"))
            tapped.append(f"tap:{key}")
        s = plan.smooth.get(key)
        smoothed = w if s is None else w * s[:, None].astype(np.float32)
        packed = plan.quantize(key, smoothed) if plan.quantize else None
        if packed is None or s is None:  # smoothing only serves the int8 form
            return x, w, packed
        inverse = g.const(f"{key}.smooth", (1.0 / s).astype(np.float32))
        return g.op("Mul", [x, inverse], "smoothed"), smoothed, packed

    def dense(x: str, key: str, w: np.ndarray, bias: np.ndarray) -> tuple[str, str | None]:
        """x @ w for the Linear `key`; returns the output and the bias still to add (None when added)."""
        x, w, packed = prepare(x, key, w)
        b = g.const(f"{key}.bias", bias)
        if packed is None:
            return g.op("MatMul", [x, g.const(f"{key}.weight", w)], "matmul"), b
        q, scale = packed
        inputs = [x, g.const(f"{key}.weight_int8", q), g.const(f"{key}.weight_scale", scale),
                  g.const(f"{key}.weight_zero", np.zeros(q.shape[1], dtype=np.int8)), b]
        return g.op("DynamicQuantizeMatMul", inputs, "qmatmul", domain=MS_DOMAIN), None

    def skip_norm(y: str, bias: str | None, residual: str, key: str) -> str:
        if plan.skip_layer_norm:
            inputs = [y, residual, g.weight(f"{key}.weight"), g.weight(f"{key}.bias")] + ([bias] if bias else [])
            return g.ops("SkipLayerNormalization", inputs, "skipnorm", 1, domain=MS_DOMAIN, epsilon=eps)[0]
        if bias:
            y = g.op("Add", [y, bias], "bias")
        return g.layer_norm(g.op("Add", [y, residual], "residual"), key, eps)

    def gelu(h: str, bias: str | None) -> str:
        # Exact (erf) GELU, as BERT's "gelu" is; BiasGelu adds the bias first when the matmul did not.
        return g.op("BiasGelu", [h, bias], "gelu", domain=MS_DOMAIN) if bias else g.op("Gelu", [h], "gelu",
                                                                                        domain=MS_DOMAIN)

    for i in range(config.num_layers):
        p = f"encoder.layer.{i}"
        names = [f"{p}.attention.self.{n}" for n in ("query", "key", "value")]
        w = np.concatenate([weights[f"{n}.weight"].T for n in names], axis=1)
        x_in, w, packed = prepare(x, f"{p}.attention.qkv", np.ascontiguousarray(w))
        bias = g.const(f"{p}.attention.qkv.bias", np.concatenate([weights[f"{n}.bias"] for n in names]))
        context = _attention(g, x_in, w, packed, bias, mask_i32, f"{p}.attention.qkv", config.num_heads)
        y, b = dense(context, f"{p}.attention.output.dense", weights[f"{p}.attention.output.dense.weight"].T,
                     weights[f"{p}.attention.output.dense.bias"])
        x = skip_norm(y, b, x, f"{p}.attention.output.LayerNorm")

        w1, b1 = weights[f"{p}.intermediate.dense.weight"].T, weights[f"{p}.intermediate.dense.bias"]
        w2, b2 = weights[f"{p}.output.dense.weight"].T, weights[f"{p}.output.dense.bias"]
        split = np.asarray(plan.split.get(i, ()), dtype=np.int64)
        residual = x
        if split.size:
            # The split neurons in fp32: x @ w1[:, n] + b1[n] -> GELU -> @ w2[n, :], added to the residual.
            kept = np.setdiff1d(np.arange(w1.shape[1]), split)
            side = g.op("MatMul", [x, g.const(f"{p}.split.w1", np.ascontiguousarray(w1[:, split]))], "split_in")
            side = gelu(side, g.const(f"{p}.split.b1", b1[split]))
            side = g.op("MatMul", [side, g.const(f"{p}.split.w2", np.ascontiguousarray(w2[split]))], "split_out")
            residual = g.op("Add", [x, side], "split_residual")
            w1, b1, w2 = w1[:, kept], b1[kept], w2[kept]
        h, b = dense(x, f"{p}.intermediate.dense", np.ascontiguousarray(w1), b1)
        y, b = dense(gelu(h, b), f"{p}.output.dense", np.ascontiguousarray(w2), b2)
        x = skip_norm(y, b, residual, f"{p}.output.LayerNorm")
    model = _finish(g, x, mask, config, contrib=True)
    model.graph.output.extend(helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in tapped)
    helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props}, "hearth.graph": "fused"})
    return model


def _attention(g: _GraphBuilder, x: str, w: np.ndarray, packed: tuple[np.ndarray, np.ndarray] | None, bias: str,
               mask: str, key: str, heads: int) -> str:
    """Self-attention of one layer (Q, K, V projections, masked softmax, context) as one fused node."""
    if packed is None:
        inputs = [x, g.const(f"{key}.weight", w), bias, mask]
        return g.op("Attention", inputs, "attention", domain=MS_DOMAIN, num_heads=heads)
    q, scale = packed
    xq, xscale, xzero = g.ops("DynamicQuantizeLinear", [x], "attention_in", 3)
    inputs = [xq, g.const(f"{key}.weight_int8", q), bias, xscale, g.const(f"{key}.weight_scale", scale), mask, xzero]
    return g.op("QAttention", inputs, "qattention", domain=MS_DOMAIN, num_heads=heads)


def _finish(g: _GraphBuilder, x: str, mask: str, config: BertConfig, *, contrib: bool = False) -> onnx.ModelProto:
    """Pool the token vectors, L2-normalise them, and wrap the graph with its interface and metadata."""
    hidden = config.hidden_size
    pooled = _pool(g, x, mask, config.pooling)
    # L2 normalisation, clamped like torch.nn.functional.normalize.
    # Opset 17's ReduceL2 still takes axes as an attribute (ReduceSum moved them to an input in 13).
    norm = g.op("ReduceL2", [pooled], "norm", axes=[-1], keepdims=1)
    norm = g.op("Clip", [norm, g.const("norm_eps", np.array(_NORM_EPS, dtype=np.float32))], "norm_clipped")
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"], name="sentence_embedding"))

    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, "hearth_sentence_embedding", inputs, [output], g.initializers)
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid(MS_DOMAIN, 1)] if contrib else [])
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="hearth.inference.bert_onnx",
        # IR 8 keeps the file loadable by ONNX Runtime releases older than the installed onnx package.
        ir_version=8,
    )
    helper.set_model_props(
        model,
        {
            "hearth.max_positions": str(config.max_positions),
            "hearth.hidden_size": str(hidden),
            "hearth.pooling": config.pooling,
        },
    )
    return model


def _pool(g: _GraphBuilder, x: str, mask: str, pooling: str) -> str:
    """Reduce token vectors [batch, seq, hidden] to one vector per text."""
    if pooling == "cls":
        return g.op("Gather", [x, g.const("cls_index", np.array(0, dtype=np.int64))], "cls", axis=1)
    # Mean over real tokens only: sum(x * mask) / max(sum(mask), eps), as sentence-transformers does.
    mask_3d = g.op("Unsqueeze", [mask, g.const("axes_2", np.array([2], dtype=np.int64))], "mask_3d")
    axis_seq = g.const("axes_seq", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask_3d], "masked"), axis_seq], "summed", keepdims=0)
    counts = g.op("ReduceSum", [mask_3d, axis_seq], "counts", keepdims=0)
    counts = g.op("Clip", [counts, g.const("pool_eps", np.array(_POOL_EPS, dtype=np.float32))], "counts_clipped")
    return g.op("Div", [summed, counts], "mean")


def _check_shapes(config: BertConfig, weights: dict[str, np.ndarray]) -> None:
    """Fail with a clear message when the weights do not fit the config (a mismatched folder)."""
    expected = {
        "embeddings.position_embeddings.weight": (config.max_positions, config.hidden_size),
        "embeddings.LayerNorm.weight": (config.hidden_size,),
    }
    for i in range(config.num_layers):
        expected[f"encoder.layer.{i}.attention.self.query.weight"] = (config.hidden_size, config.hidden_size)
        expected[f"encoder.layer.{i}.intermediate.dense.weight"] = (config.intermediate_size, config.hidden_size)
    for key, shape in expected.items():
        actual = weights.get(key)
        if actual is None:
            raise ModelError(f"The embedding model weights lack the tensor {key!r}.")
        if tuple(actual.shape) != shape:
            raise ModelError(
                f"The embedding model weights do not match config.json: {key} has shape "
                f"{tuple(actual.shape)}, expected {shape}."
            )
    word = weights.get("embeddings.word_embeddings.weight")
    if word is None or word.ndim != 2 or word.shape[1] != config.hidden_size:
        raise ModelError("The embedding model's word embeddings do not match its hidden size.")


def save_atomically(model: onnx.ModelProto, out_path: Path) -> None:
    """Write the model next to `out_path` and rename it into place, so readers never see half a file."""
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent)
    except OSError as exc:
        raise ModelError(f"Cannot write the converted embedding model to {out_path.parent}: {exc.strerror}.") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(model.SerializeToString())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"Cannot write the converted embedding model to {out_path}: {exc.strerror}.") from exc

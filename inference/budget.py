"""Memory budget: what a GGUF chat model will take in RAM and VRAM, from its header alone.

The plan follows how llama.cpp sizes its buffers, so it can be checked against llama.cpp's own
report after loading (see `inference.offload`):

- **weights**: each tensor's bytes. Tensors of the repeating blocks `blk.N.*` go where their layer
  goes; the input layer (token embeddings) always stays on the CPU; the output layer goes to the GPU
  only when `n_gpu_layers` is the block count + 1. On the CPU, weights are memory-mapped (llama.cpp
  reports the file span the CPU tensors cover) and the types the CPU backend repacks for faster
  matrix products (Q4_0, Q4_K, IQ4_NL, MXFP4 on x86 with AVX2) get a second, repacked copy.
  A tied output layer (no `output.weight`) reuses the token embeddings: repacked on the CPU, a
  duplicate on the GPU.
- **KV cache**: per layer with attention, `n_head_kv × head_dim` elements of K and of V per cell;
  the context is rounded up to 256 cells. Sliding-window layers get
  `pad256(min(n_ctx, n_swa + n_ubatch))` cells, or the full context with `swa_full` (llama.cpp's
  default for llama-cpp-python).
- **compute**: the scheduler's peak over one worst-case micro-batch (`n_ubatch` tokens), the largest of
  the attention step (the KQ matrix and masks), the feed-forward step and the output logits. The
  constants were fitted against llama.cpp 0.3.36 (CPU backend) and hold to the byte for
  Qwen2.5-0.5B and SmolLM2-135M; the GPU-side split is an estimate of the same graph.
- **output**: the host buffer for one row of logits per sequence.

`plan_memory` then picks the largest `n_gpu_layers` whose GPU share fits the device's free memory
minus a stated margin, or checks the caller's explicit choice and warns when it will not fit.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference.errors import UsageError
from inference.ggufinfo import ArrayLength, GgufInfo, TensorInfo, read_gguf_info, row_size, type_id

MIB = 1 << 20
GIB = 1 << 30
CTX_PAD = 256  # llama.cpp rounds the context (and the SWA cache) up to this many cells
GPU_ROW_PAD = 512  # HIP/CUDA pad quantized rows to this many elements (MATRIX_ROW_PADDING)
GPU_ALIGN = 128  # HIP/CUDA buffer alignment per tensor
MIN_MARGIN = 384 * MIB  # GPU memory left free for the runtime's own context, scratch and the desktop
MARGIN_FRACTION = 0.05

# llama.cpp's set_swa_pattern(n): layer i uses the sliding window unless i % n == n - 1.
_SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "cohere2": 4, "gpt-oss": 2, "exaone4": 4}
_X86_REPACK = frozenset({"Q4_0", "Q4_K", "IQ4_NL", "MXFP4"})
_ARM_REPACK = frozenset({"Q4_0", "IQ4_NL", "Q8_0"})
_LAYER_RE = re.compile(r"^blk\.(\d+)\.")


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a GGUF model that decide its memory use (per-layer where llama.cpp allows it)."""

    name: str
    arch: str
    n_layer: int
    n_embd: int
    n_vocab: int
    n_ff: int
    n_head: tuple[int, ...]
    n_head_kv: tuple[int, ...]
    head_dim_k: tuple[int, ...]
    head_dim_v: tuple[int, ...]
    is_swa: tuple[bool, ...]
    n_swa: int
    n_ctx_train: int
    tied_output: bool
    n_splits: int  # files the model is split over (tensors of the first file only are read)
    layer_tensors: tuple[tuple[TensorInfo, ...], ...]
    input_tensors: tuple[TensorInfo, ...]
    output_tensors: tuple[TensorInfo, ...]
    file_size: int

    @property
    def n_layers(self) -> int:
        """Offloadable layers as llama.cpp counts them: the blocks plus the output layer."""
        return self.n_layer + 1


@dataclass(frozen=True)
class OffloadTarget:
    """The GPU a plan may put layers on: its name, free and total memory, and whether llama.cpp can use it."""

    name: str
    free: int
    total: int
    backend: str = "rocm"  # rocm | cuda | vulkan
    usable: bool = True  # False when the installed llama.cpp has no backend for this GPU
    memory: str = "vram"  # vram | gtt (an integrated GPU using shared memory)


@dataclass(frozen=True)
class EmbedderFootprint:
    """Memory the ONNX embedder takes: its weights (with the runtime's copy) and its working memory."""

    name: str
    weights: int
    working: int
    device: str = "cpu"

    @property
    def total(self) -> int:
        return self.weights + self.working


@dataclass(frozen=True)
class MemoryPlan:
    """Where a chat model's memory goes for one context size and one `n_gpu_layers`; sizes in bytes."""

    model: str
    arch: str
    n_ctx: int
    n_ubatch: int
    type_k: str
    type_v: str
    flash_attn: bool
    swa_full: bool
    n_layers: int
    n_gpu_layers: int
    device: str
    weights_cpu_mapped: int
    weights_cpu_repack: int
    weights_gpu: int
    kv_cpu: int
    kv_gpu: int
    kv_cells: int
    kv_cells_swa: int
    compute_cpu: int
    compute_gpu: int
    output: int
    embedder: EmbedderFootprint | None
    margin: int
    gpu_free: int | None
    ram_available: int | None
    fits: bool
    max_gpu_layers: int | None = None  # what would fit on the GPU even when llama.cpp cannot use it
    warnings: tuple[str, ...] = ()
    layer_bytes: tuple[int, ...] = field(default=(), repr=False)

    @property
    def weights(self) -> int:
        return self.weights_cpu_mapped + self.weights_cpu_repack + self.weights_gpu

    @property
    def kv_cache(self) -> int:
        return self.kv_cpu + self.kv_gpu

    @property
    def compute(self) -> int:
        return self.compute_cpu + self.compute_gpu

    @property
    def gpu_need(self) -> int:
        return self.weights_gpu + self.kv_gpu + self.compute_gpu

    @property
    def ram_need(self) -> int:
        emb = self.embedder.total if self.embedder and self.embedder.device == "cpu" else 0
        return self.weights_cpu_mapped + self.weights_cpu_repack + self.kv_cpu + self.compute_cpu + self.output + emb

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-ready values (sizes in bytes)."""
        return {
            "model": self.model,
            "arch": self.arch,
            "n_ctx": self.n_ctx,
            "n_ubatch": self.n_ubatch,
            "type_k": self.type_k,
            "type_v": self.type_v,
            "flash_attn": self.flash_attn,
            "swa_full": self.swa_full,
            "weights": self.weights,
            "kv_cache": self.kv_cache,
            "compute": self.compute,
            "output": self.output,
            "embedder": self.embedder.total if self.embedder else 0,
            "n_layers": self.n_layers,
            "n_gpu_layers": self.n_gpu_layers,
            "max_gpu_layers": self.max_gpu_layers,
            "fits": self.fits,
            "device": self.device,
            "gpu": {"weights": self.weights_gpu, "kv_cache": self.kv_gpu, "compute": self.compute_gpu,
                    "embedder": self.embedder.total if self.embedder and self.embedder.device != "cpu" else 0,
                    "need": self.gpu_need, "free": self.gpu_free, "margin": self.margin},
            "cpu": {"weights_mapped": self.weights_cpu_mapped, "weights_repacked": self.weights_cpu_repack,
                    "kv_cache": self.kv_cpu, "compute": self.compute_cpu, "output": self.output,
                    "embedder": self.embedder.total if self.embedder and self.embedder.device == "cpu" else 0,
                    "need": self.ram_need, "available": self.ram_available},
            "kv_cells": self.kv_cells,
            "kv_cells_swa": self.kv_cells_swa,
            "warnings": list(self.warnings),
        }


def model_shape(info: GgufInfo) -> ModelShape:
    """Read the memory-relevant hyperparameters and tensor groups of a GGUF model."""
    arch = info.architecture
    n_layer = _int(info.get("block_count"), "block_count", info)
    n_embd = _int(info.get("embedding_length"), "embedding_length", info)
    n_head = _per_layer(info.get("attention.head_count"), n_layer, default=1)
    n_head_kv = _per_layer(info.get("attention.head_count_kv"), n_layer, default=None) or n_head
    n_ff = max(_per_layer(info.get("feed_forward_length"), n_layer, default=4 * n_embd) or (4 * n_embd,))
    base_k = info.get("attention.key_length")
    base_v = info.get("attention.value_length")
    is_swa = _swa_layers(info, n_layer)
    swa_k = info.get("attention.key_length_swa")
    swa_v = info.get("attention.value_length_swa")
    head_k, head_v = [], []
    for il in range(n_layer):
        default = n_embd // max(n_head[il], 1)
        k = swa_k if is_swa[il] and swa_k else base_k
        v = swa_v if is_swa[il] and swa_v else base_v
        head_k.append(int(k or default))
        head_v.append(int(v or k or default))

    layers: list[list[TensorInfo]] = [[] for _ in range(n_layer)]
    inputs: list[TensorInfo] = []
    outputs: list[TensorInfo] = []
    for t in info.tensors:
        m = _LAYER_RE.match(t.name)
        if m and int(m.group(1)) < n_layer:
            layers[int(m.group(1))].append(t)
        elif t.name.startswith("output"):
            outputs.append(t)
        else:
            inputs.append(t)
    embd = info.tensor("token_embd.weight")
    out = info.tensor("output.weight")
    n_vocab = (out or embd).shape[1] if (out or embd) is not None and len((out or embd).shape) > 1 else 0
    if not n_vocab:
        tokens = info.metadata.get("tokenizer.ggml.tokens")
        n_vocab = tokens.length if isinstance(tokens, ArrayLength) else len(tokens or [])
    return ModelShape(
        name=str(info.metadata.get("general.name") or info.path.stem),
        arch=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_vocab=int(n_vocab),
        n_ff=int(n_ff),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_dim_k=tuple(head_k),
        head_dim_v=tuple(head_v),
        is_swa=is_swa,
        n_swa=int(info.get("attention.sliding_window", 0) or 0),
        n_ctx_train=int(info.get("context_length", 0) or 0),
        tied_output=out is None and embd is not None,
        n_splits=int(info.metadata.get("split.count", 1) or 1),
        layer_tensors=tuple(tuple(ts) for ts in layers),
        input_tensors=tuple(inputs),
        output_tensors=tuple(outputs),
        file_size=info.file_size,
    )


def default_repack_types() -> frozenset[str]:
    """The weight types llama.cpp's CPU backend repacks on this machine (x86 with AVX2, or ARM)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i686"):
        try:
            flags = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            flags = ""
        return _X86_REPACK if (" avx2" in flags or not flags) else frozenset()
    if machine in ("aarch64", "arm64"):
        return _ARM_REPACK
    return frozenset()


def embedder_footprint(
    onnx_path: Path | None = None,
    *,
    name: str = "all-MiniLM-L6-v2",
    batch_size: int = 32,
    max_tokens: int = 256,
    hidden: int = 384,
    heads: int = 12,
    device: str = "cpu",
) -> EmbedderFootprint:
    """Estimate the embedder's memory: ONNX Runtime holds ~1.5× the graph file, plus the activations
    of one full batch (two attention-score tensors, the feed-forward and hidden states).

    Measured for the default all-MiniLM-L6-v2 (86 MiB graph, batch 32 × 256 tokens): 384 MiB resident;
    this estimate gives 381 MiB.
    """
    size = 90_284_474  # the default embedder's converted model.onnx
    if onnx_path is not None:
        try:
            size = Path(onnx_path).stat().st_size
        except OSError:
            pass
    b, s = batch_size, max_tokens
    working = 2 * b * heads * s * s * 4 + b * s * 4 * hidden * 4 + b * s * hidden * 4
    return EmbedderFootprint(name=name, weights=int(size * 1.5), working=working, device=device)


def plan_memory(
    model: Path | GgufInfo | ModelShape,
    *,
    n_ctx: int = 4096,
    target: OffloadTarget | None = None,
    n_gpu_layers: int | None = None,
    type_k: str = "f16",
    type_v: str = "f16",
    flash_attn: bool = False,
    swa_full: bool = True,
    n_batch: int = 512,
    n_ubatch: int = 512,
    n_seq: int = 1,
    embedder: EmbedderFootprint | None = None,
    ram_available: int | None = None,
    margin: int | None = None,
    repack_types: Iterable[str] | None = None,
) -> MemoryPlan:
    """Plan a chat model's memory for `n_ctx` tokens and choose `n_gpu_layers` for `target`.

    With `n_gpu_layers=None` the plan offloads as many layers as fit `target.free` minus `margin`
    (default: the larger of 384 MiB and 5% of the GPU's memory); an explicit number is kept, with a
    warning when it will not fit. Without a usable target everything stays on the CPU.
    """
    shape = _as_shape(model)
    if n_ctx < 0 or n_batch < 1 or n_ubatch < 1 or n_seq < 1:
        raise UsageError("The context size must be 0 or more and the batch sizes at least 1.")
    try:
        tk, tv = type_id(type_k), type_id(type_v)
    except ValueError as exc:
        raise UsageError(f"Unknown KV cache type: {exc}.") from None
    repack = frozenset(t.upper() for t in repack_types) if repack_types is not None else default_repack_types()
    warnings: list[str] = []

    ctx = _pad(n_ctx or shape.n_ctx_train or 4096, CTX_PAD)
    if shape.n_ctx_train and ctx > shape.n_ctx_train:
        warnings.append(
            f"The context of {ctx} tokens is longer than the {shape.n_ctx_train} the model was trained for."
        )
    batch = min(ctx, n_batch)
    ub = min(batch, n_ubatch)
    cells_swa = ctx if swa_full else min(ctx, _pad(shape.n_swa * n_seq + ub, CTX_PAD))
    if not any(shape.is_swa):
        cells_swa = 0
    if shape.n_splits > 1:
        warnings.append(f"The model is split over {shape.n_splits} files; this plan counts the first file's tensors only.")
    if not flash_attn and type_v.lower() not in ("f16", "f32", "bf16"):
        warnings.append("llama.cpp needs flash attention for a quantized V cache; it will refuse to load.")

    def plan_for(k: int) -> dict[str, int]:
        return _split(shape, k, ctx=ctx, cells_swa=cells_swa, ub=ub, tk=tk, tv=tv,
                      flash_attn=flash_attn, repack=repack, n_seq=n_seq)

    margin = margin if margin is not None else (
        max(MIN_MARGIN, int(target.total * MARGIN_FRACTION)) if target else 0)
    max_layers = shape.n_layers
    fitting: int | None = None
    emb_gpu = embedder.total if embedder and embedder.device != "cpu" else 0
    if target is not None:
        budget = target.free - margin - emb_gpu
        fitting = 0
        for k in range(max_layers, 0, -1):
            if plan_for(k)["gpu_need"] <= budget:
                fitting = k
                break

    if n_gpu_layers is not None:
        if n_gpu_layers < 0:
            n_gpu_layers = max_layers  # llama.cpp's -1: everything
        chosen = min(n_gpu_layers, max_layers)
        if chosen and target is None:
            warnings.append(f"n_gpu_layers={n_gpu_layers} was asked for, but no GPU was found: all layers stay on the CPU.")
            chosen = 0
        elif chosen and not target.usable:
            warnings.append(
                f"n_gpu_layers={n_gpu_layers} was asked for, but this llama.cpp build cannot use {target.name}: "
                "all layers stay on the CPU."
            )
            chosen = 0
        elif chosen and fitting is not None and chosen > fitting:
            need = plan_for(chosen)["gpu_need"]
            warnings.append(
                f"n_gpu_layers={chosen} needs {format_bytes(need)} on {target.name} but only "
                f"{format_bytes(target.free)} is free (keeping {format_bytes(margin)} spare); at most {fitting} layers "
                "fit. Loading may fail or be slow."
            )
    else:
        chosen = fitting if (target is not None and target.usable) else 0

    parts = plan_for(chosen)
    gpu_ok = chosen == 0 or (target is not None and parts["gpu_need"] + emb_gpu + margin <= target.free)
    emb_ram = embedder.total if embedder and embedder.device == "cpu" else 0
    ram_need = parts["cpu_mapped"] + parts["cpu_repack"] + parts["kv_cpu"] + parts["compute_cpu"] + parts["output"] + emb_ram
    ram_ok = ram_available is None or ram_need <= ram_available
    if not ram_ok:
        warnings.append(
            f"The model needs {format_bytes(ram_need)} of RAM with this plan but only "
            f"{format_bytes(ram_available or 0)} is available."
        )
    if target is not None and not target.usable and fitting and n_gpu_layers is None:
        backend = {"rocm": "ROCm (HIP)", "cuda": "CUDA", "vulkan": "Vulkan"}.get(target.backend, target.backend)
        warnings.append(
            f"{fitting} of {max_layers} layers would fit on {target.name}, but this llama.cpp build has no "
            f"{backend} backend."
        )
    device = "cpu"
    if chosen and target is not None:
        device = target.name if chosen == max_layers else f"{target.name} + cpu"
    return MemoryPlan(
        model=shape.name,
        arch=shape.arch,
        n_ctx=ctx,
        n_ubatch=ub,
        type_k=type_k.lower(),
        type_v=type_v.lower(),
        flash_attn=flash_attn,
        swa_full=swa_full,
        n_layers=max_layers,
        n_gpu_layers=chosen,
        device=device,
        weights_cpu_mapped=parts["cpu_mapped"],
        weights_cpu_repack=parts["cpu_repack"],
        weights_gpu=parts["weights_gpu"],
        kv_cpu=parts["kv_cpu"],
        kv_gpu=parts["kv_gpu"],
        kv_cells=ctx,
        kv_cells_swa=cells_swa,
        compute_cpu=parts["compute_cpu"],
        compute_gpu=parts["compute_gpu"],
        output=parts["output"],
        embedder=embedder,
        margin=margin,
        gpu_free=target.free if target else None,
        ram_available=ram_available,
        fits=gpu_ok and ram_ok,
        max_gpu_layers=fitting,
        warnings=tuple(warnings),
        layer_bytes=tuple(sum(t.n_bytes for t in ts) for ts in shape.layer_tensors),
    )


def kv_bytes_per_layer(shape: ModelShape, il: int, cells: int, *, type_k: str = "f16", type_v: str = "f16") -> int:
    """Bytes of layer `il`'s K and V caches with `cells` cells (0 for layers without attention)."""
    return _kv_layer(shape, il, cells, type_id(type_k), type_id(type_v))


# --- internals -------------------------------------------------------------------------------


def _split(shape: ModelShape, k: int, *, ctx: int, cells_swa: int, ub: int, tk: int, tv: int,
           flash_attn: bool, repack: frozenset[str], n_seq: int) -> dict[str, int]:
    """Bytes per place (CPU mapped/repacked, GPU) with the last `k` of the n_layer + 1 layers offloaded."""
    n_layer = shape.n_layer
    gpu_start = max(n_layer + 1 - k, 0)
    output_on_gpu = k >= n_layer + 1

    cpu_tensors: list[TensorInfo] = list(shape.input_tensors)
    repacked = 0
    gpu_weights = 0
    kv_cpu = kv_gpu = 0
    largest_cpu = 0
    for il in range(n_layer):
        on_gpu = il >= gpu_start
        cells = cells_swa if shape.is_swa[il] else ctx
        kv = _kv_layer(shape, il, cells, tk, tv)
        if on_gpu:
            kv_gpu += kv
            gpu_weights += sum(_gpu_alloc(t) for t in shape.layer_tensors[il])
        else:
            kv_cpu += kv
            for t in shape.layer_tensors[il]:
                largest_cpu = max(largest_cpu, t.n_bytes)
                if _repacks(t, repack):
                    repacked += t.n_bytes
                else:
                    cpu_tensors.append(t)
    if output_on_gpu:
        gpu_weights += sum(_gpu_alloc(t) for t in shape.output_tensors)
        if shape.tied_output:
            embd = next((t for t in shape.input_tensors if t.name == "token_embd.weight"), None)
            gpu_weights += _gpu_alloc(embd) if embd else 0
    else:
        for t in shape.output_tensors:
            largest_cpu = max(largest_cpu, t.n_bytes)
            if _repacks(t, repack):
                repacked += t.n_bytes
            else:
                cpu_tensors.append(t)
        if shape.tied_output:
            embd = next((t for t in shape.input_tensors if t.name == "token_embd.weight"), None)
            if embd is not None and _repacks(embd, repack, allow_embedding=True):
                repacked += embd.n_bytes
    mapped = 0
    if cpu_tensors:
        mapped = max(t.offset + t.n_bytes for t in cpu_tensors) - min(t.offset for t in cpu_tensors)

    attn, ffn, out, host = _compute_parts(shape, ctx=ctx, cells_swa=cells_swa, ub=ub, flash_attn=flash_attn)
    if k == 0:
        compute_cpu, compute_gpu = max(attn, ffn, out), 0
    elif output_on_gpu:
        compute_cpu, compute_gpu = host, max(attn, ffn, out)
    else:
        # Large batches of CPU-resident layers are run on the GPU (op_offload), which copies their
        # weights into the GPU compute buffer: count the largest one.
        compute_cpu, compute_gpu = out, max(attn, ffn) + largest_cpu
    output = shape.n_vocab * 4 * n_seq
    return {
        "cpu_mapped": mapped,
        "cpu_repack": repacked,
        "weights_gpu": gpu_weights,
        "kv_cpu": kv_cpu,
        "kv_gpu": kv_gpu,
        "compute_cpu": compute_cpu,
        "compute_gpu": compute_gpu,
        "output": output,
        "gpu_need": gpu_weights + kv_gpu + compute_gpu,
    }


def _compute_parts(shape: ModelShape, *, ctx: int, cells_swa: int, ub: int, flash_attn: bool) -> tuple[int, int, int, int]:
    """Peak compute-buffer bytes of the attention step, the feed-forward step, the output step, and
    the host-side input buffer, for one micro-batch of `ub` tokens.

    Fitted on llama.cpp's CPU backend: the KQ matrix (no flash attention) is n_kv × ub × n_head f32;
    each attention mask is n_kv × ub (f32, or f16 with flash attention) and lives through every layer;
    the feed-forward keeps gate, up and their product (3 × n_ff × ub f32); the output holds the logits
    of every token of the batch (n_vocab × ub f32). The remaining terms are the residual stream.
    """
    f = 4
    E = shape.n_embd * ub * f
    Q = max((h * d for h, d in zip(shape.n_head, shape.head_dim_k)), default=shape.n_embd) * ub * f
    K = max((h * d for h, d in zip(shape.n_head_kv, shape.head_dim_k)), default=0) * ub * f
    F = shape.n_ff * ub * f
    n_head = max(shape.n_head, default=1)
    logits = shape.n_vocab * ub * f
    cells = {False: ctx, True: cells_swa or ctx}
    mask_elem = 2 if flash_attn else f

    # Each attention mask (one for full layers, one for sliding-window layers) is an input that stays
    # allocated until the last layer of its kind has run; walk the layers to see which are alive.
    kinds = [shape.is_swa[il] if shape.n_head_kv[il] > 0 else None for il in range(shape.n_layer)]
    later: list[set[bool]] = []
    seen: set[bool] = set()
    for kind in reversed(kinds):
        later.append(set(seen))
        if kind is not None:
            seen.add(kind)
    later.reverse()
    attn = ffn = 0
    masks_at_start = sum(cells[k] * ub * mask_elem for k in seen)
    for il, kind in enumerate(kinds):
        after = later[il]
        ffn_masks = sum(cells[k] * ub * mask_elem for k in after)
        ffn = max(ffn, ffn_masks + 3 * F + 4 * E + (28 if flash_attn else 20) * ub)
        if kind is None:
            continue
        alive = after | {kind}
        masks = sum(cells[k] * ub * mask_elem for k in alive)
        extra = E if len(alive) > 1 else 0  # two masks alive leave the allocator a hole about one row wide
        if flash_attn:
            attn = max(attn, masks + 3 * E + 2 * Q + 28 * ub + extra)
        else:
            kq = cells[kind] * ub * n_head * f
            attn = max(attn, kq + masks + 3 * E + 2 * Q + 2 * K + 20 * ub + extra)
    out = logits + (masks_at_start + E if flash_attn else 3 * E) + 4 * ub
    host = E + 20 * ub
    return attn, ffn, out, host


def _kv_layer(shape: ModelShape, il: int, cells: int, tk: int, tv: int) -> int:
    n_kv = shape.n_head_kv[il]
    if n_kv <= 0:
        return 0
    return cells * (row_size(tk, n_kv * shape.head_dim_k[il]) + row_size(tv, n_kv * shape.head_dim_v[il]))


def _repacks(t: TensorInfo, types: frozenset[str], *, allow_embedding: bool = False) -> bool:
    """Whether llama.cpp's CPU backend gives this weight a repacked copy (matrix weights, rows % 8 == 0)."""
    if t.type_name not in types or len(t.shape) < 2 or t.shape[1] % 8:
        return False
    # The token embeddings are read by row lookup, which the repacked layout does not serve.
    return allow_embedding or not t.name.startswith("token_embd")


def _gpu_alloc(t: TensorInfo | None) -> int:
    """Bytes HIP/CUDA allocate for a tensor: quantized rows padded to 512 elements, 128-byte aligned."""
    if t is None:
        return 0
    size = t.n_bytes
    if t.type_name not in ("F32", "F16", "BF16", "I8", "I16", "I32", "I64", "F64") and t.shape:
        rem = t.shape[0] % GPU_ROW_PAD
        if rem:
            size += row_size(t.type_id, GPU_ROW_PAD - rem)
    return _pad(size, GPU_ALIGN)


def _as_shape(model: Path | GgufInfo | ModelShape | str) -> ModelShape:
    if isinstance(model, ModelShape):
        return model
    if isinstance(model, GgufInfo):
        return model_shape(model)
    return model_shape(read_gguf_info(Path(model)))


def _swa_layers(info: GgufInfo, n_layer: int) -> tuple[bool, ...]:
    if not info.get("attention.sliding_window"):
        return (False,) * n_layer
    pattern = info.get("attention.sliding_window_pattern")
    if isinstance(pattern, list) and len(pattern) == n_layer:
        return tuple(bool(x) for x in pattern)
    n = int(pattern) if isinstance(pattern, int) and pattern > 0 else _SWA_PATTERNS.get(info.architecture, 0)
    if n == 0:
        # A sliding window with no known pattern: llama.cpp applies it to every layer of such models.
        return (True,) * n_layer
    return tuple(il % n < n - 1 for il in range(n_layer))


def _per_layer(value: Any, n_layer: int, *, default: int | None) -> tuple[int, ...]:
    if isinstance(value, list):
        if len(value) != n_layer:
            raise UsageError(f"A per-layer value has {len(value)} entries for {n_layer} layers.")
        return tuple(int(v) for v in value)
    if value is None:
        return () if default is None else (default,) * n_layer
    return (int(value),) * n_layer


def _int(value: Any, key: str, info: GgufInfo) -> int:
    if value is None:
        raise UsageError(
            f"{info.path.name} has no {info.architecture}.{key}; Hearth cannot plan its memory "
            "(is it a chat model, not an embedding or vision projector file?)."
        )
    return int(value)


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def format_bytes(n: int | None) -> str:
    """A size for people: '462.96 MiB', '23.98 GiB' ('unknown' for None); Hearth's one byte formatter."""
    if n is None:
        return "unknown"
    if n >= GIB:
        return f"{n / GIB:.2f} GiB"
    return f"{n / MIB:.2f} MiB"


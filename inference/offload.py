"""What llama.cpp really did when it loaded a model, read back from its own log, and how that compares
with the plan.

llama.cpp reports each buffer it allocates ("ROCm0 model buffer size = 462.96 MiB", "CPU KV buffer
size = 48.00 MiB", "ROCm0 compute buffer size = 302.00 MiB"), the device of every layer and how many
layers it offloaded. Its C API has no call that returns these numbers, so `capture_llama_log` routes
llama.cpp's log callback to a list for the duration of a load and `parse_load_log` turns the lines
into a `LoadReport`. `compare` sets the report beside a `MemoryPlan` and says, per component, why
they differ when they do.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from inference.budget import MIB, MemoryPlan, format_bytes

TOLERANCE = 0.05  # a component within 5% of the plan needs no explanation

_BUFFER = re.compile(r"(\S+)\s+(model|KV|compute|output) buffer size\s*=\s*([\d.]+) MiB")
_LAYER = re.compile(r"layer\s+(\d+) assigned to device (\S+?),")
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_CELLS = re.compile(r"llama_kv_cache: size =\s*[\d.]+ MiB \(\s*(\d+) cells,\s*(\d+) layers")
_CONTEXT = re.compile(r"llama_context: (n_ctx|n_ubatch|n_batch|flash_attn)\s*=\s*(\S+)")

_lock = threading.Lock()
_sink: list[str] | None = None
_callback: Any = None


@dataclass(frozen=True)
class BufferSize:
    """One buffer llama.cpp allocated: what for (model, KV, compute, output), which buffer type, bytes."""

    owner: str
    buffer: str
    size: int

    @property
    def on_gpu(self) -> bool:
        """True for device memory; CPU buffers and pinned host buffers (ROCm_Host, CUDA_Host) are RAM."""
        return not (self.buffer.startswith("CPU") or self.buffer.endswith("_Host"))


@dataclass(frozen=True)
class LoadReport:
    """What llama.cpp reported while loading one model."""

    buffers: tuple[BufferSize, ...]
    layer_devices: tuple[str, ...]  # device of each layer, the output layer last
    offloaded: int | None  # from "offloaded X/Y layers to GPU" (GPU builds only)
    kv_cells: tuple[int, ...]  # cells of each KV cache (the full one, then the SWA one)
    n_ctx: int | None
    n_ubatch: int | None
    flash_attn: str | None
    notes: tuple[str, ...]  # llama.cpp's warnings and errors, for the user

    def total(self, owner: str, *, gpu: bool | None = None) -> int:
        """Bytes of all buffers of `owner` (model, KV, compute, output), optionally only GPU or only RAM ones."""
        return sum(b.size for b in self.buffers if b.owner == owner and (gpu is None or b.on_gpu == gpu))

    @property
    def n_gpu_layers(self) -> int:
        """Layers llama.cpp put on a GPU (counting the output layer, as llama.cpp does)."""
        if self.offloaded is not None:
            return self.offloaded
        return sum(1 for d in self.layer_devices if not d.upper().startswith("CPU"))

    @property
    def repacked(self) -> int:
        return sum(b.size for b in self.buffers if b.owner == "model" and "REPACK" in b.buffer.upper())

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": self.total("model"), "kv_cache": self.total("KV"), "compute": self.total("compute"),
            "output": self.total("output"), "n_gpu_layers": self.n_gpu_layers, "n_layers": len(self.layer_devices),
            "kv_cells": list(self.kv_cells), "n_ctx": self.n_ctx, "n_ubatch": self.n_ubatch,
            "flash_attn": self.flash_attn,
            "buffers": [{"owner": b.owner, "buffer": b.buffer, "size": b.size, "gpu": b.on_gpu} for b in self.buffers],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Comparison:
    """One component planned against what llama.cpp reported, and why they differ when they do."""

    component: str
    planned: int
    actual: int
    why: str | None

    @property
    def error(self) -> float:
        """Relative error of the plan against the actual size (0.0 when both are 0)."""
        if self.actual == 0:
            return 0.0 if self.planned == 0 else 1.0
        return (self.planned - self.actual) / self.actual

    def to_json(self) -> dict[str, Any]:
        return {"component": self.component, "planned": self.planned, "actual": self.actual,
                "error": round(self.error, 6), "why": self.why}


@contextmanager
def capture_llama_log() -> Iterator[list[str]]:
    """Collect llama.cpp's log lines (all levels) while the block runs, then give the log back to
    llama-cpp-python's own handler. Loads are serialised by a lock, since the log callback is global."""
    import llama_cpp

    global _sink, _callback
    with _lock:
        if _callback is None:
            @llama_cpp.llama_log_callback
            def _on_log(level: int, text: bytes, user_data: Any) -> None:  # noqa: ARG001
                sink = _sink
                if sink is not None and text:
                    sink.append(text.decode("utf-8", "replace"))

            _callback = _on_log  # kept referenced: llama.cpp holds a raw pointer to it
        lines: list[str] = []
        _sink = lines
        llama_cpp.llama_log_set(_callback, ctypes.c_void_p(0))
        try:
            yield lines
        finally:
            _sink = None
            restore = getattr(getattr(llama_cpp, "_logger", None), "llama_log_callback", None)
            llama_cpp.llama_log_set(restore if restore is not None else _callback, ctypes.c_void_p(0))


def parse_load_log(lines: list[str] | str) -> LoadReport:
    """Turn llama.cpp's load log into a `LoadReport`."""
    text = lines if isinstance(lines, str) else "".join(lines)
    buffers = tuple(BufferSize(m.group(2), m.group(1), round(float(m.group(3)) * MIB)) for m in _BUFFER.finditer(text))
    devices: dict[int, str] = {}
    for m in _LAYER.finditer(text):
        devices[int(m.group(1))] = m.group(2)
    off = _OFFLOADED.search(text)
    cells = tuple(int(m.group(1)) for m in _CELLS.finditer(text) if int(m.group(2)) > 0)
    ctx: dict[str, str] = {}
    for m in _CONTEXT.finditer(text):
        ctx.setdefault(m.group(1), m.group(2))
    notes = tuple(
        line.strip() for line in text.splitlines()
        if re.search(r"\b(failed|error|out of memory|unable)\b", line, re.IGNORECASE)
    )
    return LoadReport(
        buffers=buffers,
        layer_devices=tuple(devices[i] for i in sorted(devices)),
        offloaded=int(off.group(1)) if off else None,
        kv_cells=cells,
        n_ctx=int(ctx["n_ctx"]) if ctx.get("n_ctx", "").isdigit() else None,
        n_ubatch=int(ctx["n_ubatch"]) if ctx.get("n_ubatch", "").isdigit() else None,
        flash_attn=ctx.get("flash_attn"),
        notes=notes,
    )


def compare(plan: MemoryPlan, report: LoadReport, *, tolerance: float = TOLERANCE) -> list[Comparison]:
    """Planned against actual for weights, KV cache, compute and output (and the layer count),
    each with the reason when they differ by more than `tolerance`."""
    result: list[Comparison] = []
    if report.n_gpu_layers != plan.n_gpu_layers:
        result.append(Comparison("n_gpu_layers", plan.n_gpu_layers, report.n_gpu_layers, _why_layers(plan, report)))
    else:
        result.append(Comparison("n_gpu_layers", plan.n_gpu_layers, report.n_gpu_layers, None))
    rows = (
        ("weights", plan.weights, report.total("model")),
        ("kv_cache", plan.kv_cache, report.total("KV")),
        ("compute", plan.compute, report.total("compute")),
        ("output", plan.output, report.total("output")),
    )
    for name, planned, actual in rows:
        c = Comparison(name, planned, actual, None)
        if abs(c.error) > tolerance and abs(planned - actual) > MIB // 8:
            c = Comparison(name, planned, actual, _why(name, plan, report))
        result.append(c)
    total_p = sum(r.planned for r in result[1:])
    total_a = sum(r.actual for r in result[1:])
    total = Comparison("total", total_p, total_a, None)
    if abs(total.error) > tolerance:
        total = Comparison("total", total_p, total_a, "see the components above")
    result.append(total)
    return result


def _why_layers(plan: MemoryPlan, report: LoadReport) -> str:
    if report.n_gpu_layers == 0 and plan.n_gpu_layers > 0:
        return ("llama.cpp put every layer on the CPU: this llama-cpp-python has no GPU backend, or it found no "
                "usable GPU (see `hearth hw` for the driver, ROCm and permission checks).")
    if report.n_gpu_layers < plan.n_gpu_layers:
        return (f"llama.cpp offloaded {report.n_gpu_layers} of the {plan.n_gpu_layers} planned layers; it may have "
                "run short of device memory or fitted the model itself.")
    return f"llama.cpp offloaded {report.n_gpu_layers} layers, more than the {plan.n_gpu_layers} planned."


def _why(name: str, plan: MemoryPlan, report: LoadReport) -> str:
    if name == "weights":
        if plan.weights_cpu_repack != report.repacked:
            return (f"the CPU backend repacked {format_bytes(report.repacked)} of weights, the plan expected "
                    f"{format_bytes(plan.weights_cpu_repack)} (which types are repacked depends on the CPU's "
                    "instruction set and the llama.cpp version).")
        if plan.n_gpu_layers != report.n_gpu_layers:
            return "the layers were split between CPU and GPU differently from the plan."
        return "llama.cpp's weight buffers differ from the tensor sizes in the file (alignment or padding rules)."
    if name == "kv_cache":
        planned_cells = (plan.kv_cells, plan.kv_cells_swa) if plan.kv_cells_swa else (plan.kv_cells,)
        if report.kv_cells and tuple(report.kv_cells) != planned_cells:
            return (f"llama.cpp made KV caches of {', '.join(map(str, report.kv_cells))} cells, the plan "
                    f"{', '.join(map(str, planned_cells))} (context size, sliding-window size or swa_full differ).")
        return "the KV cache type or per-layer head counts differ from what the header says."
    if name == "compute":
        if report.n_ubatch and report.n_ubatch != plan.n_ubatch:
            return f"llama.cpp used micro-batches of {report.n_ubatch} tokens, the plan {plan.n_ubatch}."
        if report.flash_attn and (report.flash_attn == "enabled") != plan.flash_attn:
            return f"flash attention is {report.flash_attn} in llama.cpp, the opposite of the plan."
        return ("the compute buffer is the scheduler's peak for one micro-batch; this architecture's graph keeps "
                "different intermediate tensors alive than the fitted shape assumes.")
    return "llama.cpp reserved a different number of output rows."

"""`hearth hw`: the machine as Hearth sees it (GPUs, NPUs, CPU, RAM, drivers, runtimes), which GPUs it
uses or hides and why, a checklist with a verdict and advice per line, and with `--model` the memory
plan (and with `--load`, what llama.cpp really allocated beside it).

    hearth hw [--model GGUF] [--ctx N] [--gpu-layers N] [--load] [--json]

Like every Hearth command that starts llama.cpp, it first hides from ROCm a GPU ROCm cannot run next to
one it can (inference.gpu_select), so the runtimes it probes and loads see what Hearth will use.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from inference.budget import MemoryPlan, format_bytes
from inference.checklist import checklist, plan_check
from inference.checklist import report as machine_report
from inference.errors import HearthError, UsageError
from inference.gpu_select import GpuSelection, hide_unusable_gpus, select_gpus
from inference.hardware import Machine, detect
from rag.config import HearthConfig

EXIT_OK = 0
_TAGS = {"ok": "[ ok ]", "warn": "[warn]", "fail": "[FAIL]", "info": "[info]"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `hw` on the CLI's subparsers."""
    sp = subparsers.add_parser("hw", help="show the GPUs, NPU, drivers and runtimes, and plan a model's memory")
    sp.add_argument("--model", default=None, help="built-in model name or path to a .gguf file to plan for")
    sp.add_argument("--ctx", type=int, default=4096, help="context size in tokens for the plan (default: %(default)s)")
    sp.add_argument("--gpu-layers", type=int, default=None, dest="gpu_layers",
                    help="plan this many layers on the GPU instead of the most that fit (-1: all)")
    sp.add_argument("--load", action="store_true",
                    help="also load the model with llama.cpp and show what it really allocated beside the plan")
    sp.add_argument("--json", action="store_true", help="print the result as JSON")
    return sp


def run(args: argparse.Namespace) -> int:
    """Detect the machine, plan the model if one is given, and print the report."""
    if args.ctx is not None and args.ctx < 0:
        raise UsageError("--ctx must be 0 (the model's own context) or more.")
    hide_unusable_gpus()  # before the runtime probe loads llama.cpp: it should see what Hearth uses
    machine = detect()
    plan = actual = checker = None
    comparison: list[Any] = []
    if args.model:
        config = model_config(getattr(args, "data_dir", None), getattr(args, "threads", None))
        path = resolve_model(args.model, config)
        plan = machine.plan(path, n_ctx=args.ctx, n_gpu_layers=args.gpu_layers)
        checker = check_plan(machine, config, args.model, plan, args.gpu_layers)
        if args.load:
            actual, comparison = load_and_compare(args.model, plan, config)
    choice, vulkan = engine_facts()
    if args.json:
        out = machine_report(machine)
        out["engine"] = choice.to_json() if choice is not None else None
        # Each matched to the GPU sysfs reports by PCI id (None: a software device, or one sysfs does not show).
        out["vulkan_devices"] = [{**d.to_json(), "gpu": next((g.index for g in machine.gpus if g.pci_id == d.pci_id),
                                                             None)} for d in vulkan.devices]
        if vulkan.error:
            out["vulkan_error"] = vulkan.error
        if plan is not None:
            out["plan"] = plan.to_json()
            out["checks"].append(plan_check(plan).to_json())
            out["check_plan"] = checker.to_json() if checker is not None else None
            if checker is not None:
                out["checks"].append(plan_check(checker, "checker fits").to_json())
        if actual is not None:
            out["actual"] = actual.to_json()
            out["comparison"] = [c.to_json() for c in comparison]
            out["loaded"] = loaded_json(plan, actual)
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(render(machine, plan, actual, comparison, checker=checker))
        print("\n".join(["", *render_engine(choice, vulkan)]))
    return EXIT_OK


def engine_facts() -> tuple[Any, Any]:
    """The engine this process runs (None when none was chosen) and the Vulkan devices (probed once a process)."""
    from inference.engines import active
    from inference.vulkan import devices

    return active(), devices()


def loaded_json(plan: MemoryPlan, actual: Any) -> dict[str, Any]:
    """What llama.cpp really did with the model, beside the plan: the engine, layers planned and offloaded, and
    its buffers by where they live (Vulkan0, ROCm0, CPU...)."""
    from inference.engines import engine_name

    buffers: dict[str, int] = {}
    for b in actual.buffers:
        buffers[b.buffer] = buffers.get(b.buffer, 0) + b.size
    return {"engine": engine_name(), "n_layers": plan.n_layers, "planned_layers": plan.n_gpu_layers,
            "actual_layers": actual.n_gpu_layers, "buffers": buffers}


def render_engine(choice: Any, vulkan: Any) -> list[str]:
    """The engine line and the Vulkan devices, for the human report."""
    lines = []
    if choice is not None:
        lines.append(f"Engine  {choice.chosen} ({choice.reason}); installed: {', '.join(choice.available)}")
    lines.append("Vulkan devices" if vulkan.devices else f"Vulkan devices: none ({vulkan.error or 'none listed'})")
    for d in vulkan.devices:
        budget = f", budget {format_bytes(d.budget_bytes)}" if d.budget_bytes else ""
        kind = "software, on the CPU" if d.software else d.type
        lines.append(f"  {d.index}  {d.name}  ({d.driver}, {kind}; heap {format_bytes(d.heap_bytes)}{budget})")
    return lines


def check_plan(machine: Machine, config: HearthConfig, chat: str | None, chat_plan: MemoryPlan,
               n_gpu_layers: int | None = None) -> MemoryPlan | None:
    """The plan of the model that checks answers (rag/confirm.py) beside the chat model's, when Hearth loads one
    of its own next to `chat` and it is prepared (None otherwise, or when its header cannot be read)."""
    from rag.service import Hearth

    path = Hearth(config).checker_to_plan(chat)
    return checker_plan(machine, path, chat_plan, n_gpu_layers=n_gpu_layers) if path is not None else None


def checker_plan(machine: Machine, path: Path, chat_plan: MemoryPlan, *, n_gpu_layers: int | None = None,
                 chat_loaded: bool = False) -> MemoryPlan | None:
    """The answer checker's plan for its own context, in what the chat model's plan leaves free (or, once the chat
    model is loaded, what is free), with the chat model's GPU layers setting as Hearth loads it (None: as many as
    fit; None back when its header cannot be read: the chat model's plan stands alone)."""
    from rag.components import CHECK_CTX

    try:
        return machine.plan(path, n_ctx=CHECK_CTX, n_gpu_layers=n_gpu_layers, beside=chat_plan,
                            beside_loaded=chat_loaded)
    except (HearthError, OSError, ValueError):
        return None


def model_config(data_dir: Path | str | None, threads: int | None = None) -> HearthConfig:
    """The core's configuration for planning and loading a model: the data folder (flag, HEARTH_DATA_DIR or
    the default) under the administrator's policy, as every front end builds it (app.config)."""
    from app.config import Requested, hearth_config

    return hearth_config(Requested(data_dir=Path(data_dir).expanduser() if data_dir else None, threads=threads))


def resolve_model(model: str, config: HearthConfig) -> Path:
    """A GGUF path as the service finds it (built-in name, file in the models folder, or path), under the
    administrator's policy: its data folder, models folder and allowed models."""
    from rag.service import resolve_chat_model

    return resolve_chat_model(model, config)


def load_and_compare(model: str, plan: MemoryPlan, config: HearthConfig) -> tuple[Any, list[Any]]:
    """Load the model as the service does, with the plan's context and GPU layers, and compare what llama.cpp
    allocated with the plan."""
    from inference.offload import compare
    from rag.components import load_chat_model

    config = dataclasses.replace(config, n_ctx=plan.n_ctx, n_gpu_layers=plan.n_gpu_layers, llm_url=None)
    loaded = load_chat_model(config, model)
    try:
        load = loaded.model.load_report
    finally:
        loaded.model.close()
    return load, compare(plan, load)


def render(machine: Machine, plan: MemoryPlan | None = None, report: Any = None, comparison: list[Any] | None = None,
           selection: GpuSelection | None = None, checker: MemoryPlan | None = None) -> str:
    """The human report: checklist first, then the details."""
    sel = selection or select_gpus(machine)
    lines = [f"Hearth hardware check (system files read under {machine.root})", ""]
    checks = checklist(machine, sel) + ([plan_check(plan)] if plan is not None else [])
    checks += [plan_check(checker, "checker fits")] if checker is not None else []
    width = max(len(c.name) for c in checks)
    for c in checks:
        lines.append(f"  {_TAGS.get(c.verdict, c.verdict)}  {c.name:<{width}}  {c.detail}")
        for a in c.advice:
            lines.append(f"  {'':6}  {'':<{width}}  → {a}")
    lines.append("")
    if machine.gpus:
        lines.append("GPUs")
        for g in machine.gpus:
            rocm_dev = f"ROCm device {g.rocm_index}" if g.rocm_index is not None else None
            ident = "  ".join(x for x in (g.pci_id, g.pci_slot, g.gfx_target, g.kind, rocm_dev) if x)
            lines.append(f"  GPU{g.index}  {g.name}  ({ident})")
            mem = []
            if g.vram_total is not None:
                mem.append(f"VRAM {format_bytes(g.vram_total)} ({format_bytes(g.vram_used or 0)} used)")
            if g.gtt_total is not None:
                mem.append(f"GTT {format_bytes(g.gtt_total)} ({format_bytes(g.gtt_used or 0)} used)")
            if g.rocm_supported is not None:
                mem.append(f"ROCm: {'supported' if g.rocm_supported else 'not supported'} ({g.rocm_basis})")
            if mem:
                lines.append("        " + "   ".join(mem))
            role = sel.role(g.index)
            if role is not None:
                lines.append(f"        {role.role}: {role.reason}")
    if machine.npus:
        lines.append("NPUs")
        for n in machine.npus:
            lines.append(f"  {n.name}  ({n.pci_id}, {n.generation}, driver {n.driver or 'none'}"
                         + (f", {n.device_node}" if n.device_node else "") + ")")
    c = machine.cpu
    lines.append(f"CPU   {c.model} ({c.cores} cores, {c.threads} threads"
                 + (f"; {' '.join(c.features)}" if c.features else "") + ")")
    lines.append(f"RAM   {format_bytes(machine.ram.total)} total, {format_bytes(machine.ram.available)} available")
    rt = machine.runtimes
    if rt is not None:
        lines.append("Runtimes")
        if rt.llama_cpp is not None and rt.llama_cpp.version:
            lc = rt.llama_cpp
            devs = ", ".join(f"{d.name} ({d.description})" for d in lc.devices) or "no devices"
            lines.append(f"  llama.cpp     {lc.version}: {'GPU offload' if lc.gpu_offload else 'CPU only'}; {devs}")
        if rt.onnxruntime is not None and rt.onnxruntime.version:
            lines.append(f"  ONNX Runtime  {rt.onnxruntime.version}: {', '.join(rt.onnxruntime.working)}")
    if plan is not None:
        lines += ["", *render_plan(plan)]
    if checker is not None:
        lines += ["", *render_plan(checker, "the answer checker, beside it")]
    if report is not None and comparison:
        lines += ["", "Planned vs actual (llama.cpp's own buffer report)"]
        lines.append(f"  {'':14}{'planned':>14}{'actual':>14}{'error':>9}")
        for row in comparison:
            if row.component == "n_gpu_layers":
                lines.append(f"  {'GPU layers':14}{row.planned:>14}{row.actual:>14}")
            else:
                lines.append(f"  {row.component:14}{format_bytes(row.planned):>14}{format_bytes(row.actual):>14}"
                             f"{row.error * 100:>8.1f}%")
            if row.why:
                lines.append(f"      why: {row.why}")
        for note in report.notes[:5]:
            lines.append(f"  llama.cpp: {note}")
    return "\n".join(lines)


def render_plan(plan: MemoryPlan, role: str = "") -> list[str]:
    """The plan as readable lines (`role`: what the model is for, when it is not the chat model)."""
    swa = f", sliding-window layers {plan.kv_cells_swa} cells" if plan.kv_cells_swa else ""
    lines = [
        f"Memory plan for {plan.model} ({plan.arch}{', ' + role if role else ''}), {plan.n_ctx}-token context",
        f"  weights    {format_bytes(plan.weights):>12}   "
        f"({format_bytes(plan.weights_cpu_mapped)} mapped from the file"
        + (f", {format_bytes(plan.weights_cpu_repack)} repacked for the CPU" if plan.weights_cpu_repack else "")
        + (f", {format_bytes(plan.weights_gpu)} on the GPU" if plan.weights_gpu else "") + ")",
        f"  KV cache   {format_bytes(plan.kv_cache):>12}   ({plan.type_k}/{plan.type_v}, {plan.kv_cells} cells{swa})",
        f"  compute    {format_bytes(plan.compute):>12}   (peak of one {plan.n_ubatch}-token batch"
        + (f"; {format_bytes(plan.compute_gpu)} on the GPU" if plan.compute_gpu else "") + ")",
        f"  output     {format_bytes(plan.output):>12}",
    ]
    if plan.embedder is not None:
        lines.append(f"  embedder   {format_bytes(plan.embedder.total):>12}   ({plan.embedder.name} on the {plan.embedder.device.upper()})")
    lines.append(f"  layers     {plan.n_gpu_layers}/{plan.n_layers} on the GPU → {plan.device}")
    if plan.max_gpu_layers is not None and plan.max_gpu_layers != plan.n_gpu_layers:
        lines.append(f"             ({plan.max_gpu_layers} would fit in the GPU's free memory)")
    lines.append(f"  fits       {'yes' if plan.fits else 'NO'}")
    for w in plan.warnings:
        lines.append(f"  warning: {w}")
    return lines


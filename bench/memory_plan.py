"""Memory-plan benchmark: the plan made from a GGUF header against llama.cpp's own buffer report.

    python -m bench.memory_plan [--json] [--ctx 4096 16384] [--model GGUF ...] [--synthetic] [--threads N]

For every available real chat model (the built-in ones that are installed, plus each --model), and
every context size, the script plans the model's memory with `inference.budget.plan_memory` (header
only), loads it with llama.cpp on this machine (CPU, as Hearth does by default), reads back the buffers
llama.cpp reported (`inference.offload`), and prints planned against actual per component, with the
relative error (planned − actual) / actual. `--synthetic` adds tiny random-weight models of three
architectures (llama, qwen2, gemma3 with sliding-window layers) written by tests/fixtures/ggufs.py.

The target is |error| ≤ 5% on the total. Exit code 0 when every run meets it, 1 otherwise.
Results go to stdout (JSON with --json, else a table); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET = 0.05
COMPONENTS = ("weights", "kv_cache", "compute", "output", "total")


def available_models(extra: Sequence[str], cache_dir: Path) -> list[tuple[str, Path]]:
    """The installed built-in chat models and the given GGUF paths, as (name, path)."""
    from inference.errors import HearthError
    from inference.models import CHAT_MODELS, chat_model_path

    found = []
    for name in sorted(CHAT_MODELS):
        try:
            found.append((name, chat_model_path(name, cache_dir)))
        except HearthError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
    for path in extra:
        found.append((Path(path).stem, Path(path)))
    return found


def synthetic_models(folder: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """Tiny models of three architectures, with the llama.cpp context options each run uses."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fixtures.ggufs import write_model

    return [
        ("synthetic-llama-q4_0", write_model(folder / "llama.gguf", "llama", n_embd=256, n_ff=768, n_layer=4,
                                             weight_type="q4_0", pad_vocab_to=8192), {}),
        ("synthetic-qwen2-q4_k", write_model(folder / "qwen2.gguf", "qwen2", n_embd=256, n_ff=768, n_layer=4,
                                             weight_type="q4_k", pad_vocab_to=8192), {}),
        ("synthetic-gemma3-q8_0-swa", write_model(folder / "gemma3.gguf", "gemma3", n_embd=256, n_ff=768,
                                                  n_layer=12, head_dim=64, weight_type="q8_0",
                                                  pad_vocab_to=8192), {"swa_full": False}),
    ]


def measure(name: str, path: Path, n_ctx: int, threads: int, options: dict[str, Any]) -> dict[str, Any]:
    """Plan one model, load it with llama.cpp, and compare."""
    import llama_cpp

    from inference.budget import plan_memory
    from inference.offload import capture_llama_log, compare, parse_load_log

    plan = plan_memory(path, n_ctx=n_ctx, swa_full=options.get("swa_full", True))
    t0 = time.perf_counter()
    with capture_llama_log() as lines:
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False, **options)
    seconds = time.perf_counter() - t0
    llm.close()
    del llm
    gc.collect()
    report = parse_load_log(lines)
    rows = [r for r in compare(plan, report) if r.component in COMPONENTS]
    return {
        "model": name,
        "path": str(path),
        "arch": plan.arch,
        "n_ctx": plan.n_ctx,
        "load_seconds": round(seconds, 2),
        "kv_cells": {"planned": [plan.kv_cells] + ([plan.kv_cells_swa] if plan.kv_cells_swa else []),
                     "actual": list(report.kv_cells)},
        "repacked": {"planned": plan.weights_cpu_repack, "actual": report.repacked},
        "components": [r.to_json() for r in rows],
        "total_error": next(r.error for r in rows if r.component == "total"),
    }


def table(results: list[dict[str, Any]]) -> str:
    """The results as a Markdown table (MiB, error in %)."""
    head = "| model | ctx | " + " | ".join(f"{c} planned / actual (err)" for c in COMPONENTS) + " |"
    lines = [head, "|" + "---|" * (len(COMPONENTS) + 2)]
    for r in results:
        cells = []
        for c in r["components"]:
            cells.append(f"{c['planned'] / 2**20:.2f} / {c['actual'] / 2**20:.2f} ({c['error'] * 100:+.2f}%)")
        lines.append(f"| {r['model']} | {r['n_ctx']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_plan", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--ctx", type=int, nargs="+", default=[4096, 16384], help="context sizes (default: 4096 16384)")
    parser.add_argument("--model", action="append", default=[], help="also measure this GGUF (repeatable)")
    parser.add_argument("--synthetic", action="store_true", help="add tiny llama, qwen2 and gemma3 (SWA) models")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default: %(default)s)")
    args = parser.parse_args(argv)

    data_dir = Path(os.environ.get("HEARTH_DATA_DIR") or Path(__file__).resolve().parents[1] / ".data" / "demo")
    runs: list[tuple[str, Path, dict[str, Any]]] = [(n, p, {}) for n, p in available_models(args.model, data_dir / "cache")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
        if args.synthetic:
            runs += synthetic_models(Path(tmp))
        for name, path, options in runs:
            for n_ctx in args.ctx:
                print(f"{name} @ {n_ctx} ...", file=sys.stderr, flush=True)
                results.append(measure(name, path, n_ctx, args.threads, options))

    import llama_cpp

    worst = max((abs(r["total_error"]) for r in results), default=0.0)
    summary = {"llama_cpp": llama_cpp.__version__, "target": TARGET, "max_total_error": worst,
               "ok": bool(results) and worst <= TARGET, "results": results}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(table(results))
        print(f"\nworst total error {worst * 100:.2f}% (target ≤ {TARGET * 100:.0f}%)")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

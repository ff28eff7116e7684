"""Engines benchmark: the same prompt on every llama.cpp engine installed here (CPU, Vulkan, HIP), in one run.

    python -m bench.engines [--json] [--model NAME_OR_PATH] [--tokens N] [--rounds R] [--threads N]
                            [--engines cpu,vulkan,hip]

Each engine runs in its own process (a process loads one engine, inference/engines.py), on the same model:
the CPU engine with no layer offloaded, the others with every layer on their device. One untimed reply first
(Vulkan compiles its shader pipelines on first use: it is reported as `first_reply_s`), then R measured greedy
replies of N tokens to the same prompt, the KV cache emptied before each. Reported per engine: load seconds,
time to first token and tokens/s (medians), the layers llama.cpp says it offloaded, the device, and the reply
(greedy decoding: the engines should agree); the GPU engines' ratios are against the CPU engine of the same run.
The load average before and after is recorded: compare ratios only from a quiet machine.

On lavapipe (Mesa's software Vulkan device) the Vulkan row proves the path, not the speed: it runs on the
same CPU cores. The first AMD machine that runs this tells which engine to prefer there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.conditions import load_average

ROOT = Path(__file__).resolve().parents[1]
PROMPT = [{"role": "system", "content": "You answer in one short sentence."},
          {"role": "user", "content": "Employees are reimbursed 0.45 EUR per kilometre for private cars. "
                                      "What is the mileage rate?"}]


def run_engine(engine: str, model: str | None, tokens: int, rounds: int, threads: int) -> dict[str, Any]:
    """In this process: start `engine`, load the model, and time the replies (the child's work)."""
    from app.hw import model_config, resolve_model
    from inference import engines
    from inference.llm import LlamaCppModel

    choice = engines.start(engines.choose(engine))
    path = resolve_model(model or "qwen2.5-coder-0.5b-instruct-q4_k_m", model_config(None, threads))
    llm = LlamaCppModel(path, n_ctx=1024, n_threads=threads, n_gpu_layers=0 if engine == "cpu" else -1,
                        adaptive_threads=False)
    t0 = time.perf_counter()
    first = "".join(llm.stream(PROMPT, max_tokens=tokens))
    first_s = time.perf_counter() - t0
    ttfts, rates, text = [], [], first
    for _ in range(rounds):
        llm.llama.reset()
        start = time.perf_counter()
        pieces, first_at = [], None
        for piece in llm.stream(PROMPT, max_tokens=tokens):
            first_at = first_at or time.perf_counter()
            pieces.append(piece)
        end = time.perf_counter()
        text = "".join(pieces)
        ttfts.append((first_at or end) - start)
        n = len(llm.llama.tokenize(text.encode(), add_bos=False))
        rates.append((n - 1) / (end - first_at) if first_at and end > first_at and n > 1 else 0.0)
    report = llm.load_report
    out = {"engine": choice.chosen, "reason": choice.reason, "device": choice.device.name if choice.device else "CPU",
           "load_s": round(llm.load_seconds, 2), "first_reply_s": round(first_s, 2),
           "ttft_s": round(statistics.median(ttfts), 3), "tokens_per_s": round(statistics.median(rates), 2),
           "layers_offloaded": report.n_gpu_layers, "n_layers": len(report.layer_devices),
           "buffers": sorted({b.buffer for b in report.buffers}), "reply": text, "first_reply": first}
    llm.close()
    return out


def measure(engine: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one engine in a child process; its result, or why it could not run."""
    cmd = [sys.executable, "-m", "bench.engines", "--child", engine, "--tokens", str(args.tokens),
           "--rounds", str(args.rounds), "--threads", str(args.threads)] + (["--model", args.model] if args.model else [])
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ))
    if r.returncode != 0:
        return {"engine": engine, "error": (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="built-in model name or .gguf path (default: the default)")
    parser.add_argument("--tokens", type=int, default=32, help="tokens per reply (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="measured replies per engine (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--engines", default=None, help="comma-separated (default: every engine installed)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_engine(args.child, args.model, args.tokens, args.rounds, args.threads)))
        return 0
    from inference.engines import installed

    names = args.engines.split(",") if args.engines else [e for e in ("cpu", "vulkan", "hip") if e in installed()]
    before = load_average()
    rows = [measure(e, args) for e in names]
    base = next((r for r in rows if r.get("engine") == "cpu" and "error" not in r), None)
    for r in rows:
        if base is not None and "error" not in r and base["tokens_per_s"]:
            r["tps_ratio_to_cpu"] = round(r["tokens_per_s"] / base["tokens_per_s"], 3)
            r["same_reply_as_cpu"] = r["reply"] == base["reply"]
    result = {"load_before": before, "load_after": load_average(), "cpus": os.cpu_count(), "engines": rows}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(render(result))
    return 1 if any("error" in r for r in rows) else 0


def render(result: dict[str, Any]) -> str:
    lines = [f"{'engine':8}{'device':34}{'layers':>8}{'load s':>8}{'1st s':>8}{'ttft s':>8}{'tok/s':>8}{'×cpu':>7}"]
    for r in result["engines"]:
        if "error" in r:
            lines.append(f"{r['engine']:8}error: {r['error']}")
            continue
        layers = f"{r['layers_offloaded']}/{r['n_layers']}"
        lines.append(f"{r['engine']:8}{r['device'][:33]:34}{layers:>8}{r['load_s']:>8}{r['first_reply_s']:>8}"
                     f"{r['ttft_s']:>8}{r['tokens_per_s']:>8}{r.get('tps_ratio_to_cpu', ''):>7}")
    lines.append(f"load average {result['load_before']} before, {result['load_after']} after; {result['cpus']} CPUs")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

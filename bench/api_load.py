"""Load test of the local API: N concurrent streaming clients share M requests on one tiny GGUF model.

    python -m bench.api_load [--clients 8] [--requests 48] [--max-tokens 24] [--threads 1] [--json]

Starts Hearth's API on a free loopback port with a tiny random-weight llama model (tests/tinygguf.py) run
by llama.cpp, asks every one of M distinct prompts (with reply budgets from max-tokens/2 to max-tokens)
once without streaming, one after another, to learn the expected replies (greedy decoding is
deterministic), then lets N client threads, each with its own unmodified `openai` client, pull the same
prompts from a shared queue and stream them all at once.

A request counts as answered when its stream ends with a finish reason; it counts as mixed when its
text differs from the expected reply for its own prompt or its chunks carry more than one completion id.
Results go to stdout (JSON with --json, else a table).
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def run(*, clients: int, requests: int, max_tokens: int, threads: int) -> dict[str, Any]:
    """Run the benchmark and return its figures."""
    import openai

    from app.server import ApiServer, ServerConfig
    from rag.service import Hearth, HearthConfig
    from tests.tinygguf import write_tiny_llama

    with tempfile.TemporaryDirectory(prefix="hearth-api-load-") as tmp:
        data = Path(tmp)
        (data / "models").mkdir()
        write_tiny_llama(data / "models" / "tiny.gguf")
        hearth = Hearth(HearthConfig(data_dir=data, chat_model="tiny.gguf", n_ctx=2048, n_threads=threads))
        prompts = [f"Request {i}: summarise item number {i * 37 % 101} of the office inventory." for i in range(requests)]
        # A random-weight model says much the same to every prompt; different lengths make every reply
        # distinct, so a piece delivered to the wrong stream always shows.
        budget = {p: max_tokens - i % max(1, max_tokens // 2) for i, p in enumerate(prompts)}
        with ApiServer.for_hearth(hearth, ServerConfig(port=0, max_waiting=max(64, clients * 2))) as server:
            base = openai.OpenAI(base_url=server.url, api_key="local", max_retries=0, timeout=600)
            t0 = time.perf_counter()
            expected = {}
            for p in prompts:
                r = base.chat.completions.create(model="tiny.gguf", messages=[{"role": "user", "content": p}],
                                                 max_tokens=budget[p])
                expected[p] = r.choices[0].message.content
            sequential = time.perf_counter() - t0

            todo: queue.Queue[str] = queue.Queue()
            for p in prompts:
                todo.put(p)
            results: list[dict[str, Any]] = []
            errors: list[str] = []
            lock = threading.Lock()
            start = threading.Barrier(clients)

            def client() -> None:
                c = openai.OpenAI(base_url=server.url, api_key="local", max_retries=0, timeout=600)
                start.wait()
                while True:
                    try:
                        p = todo.get_nowait()
                    except queue.Empty:
                        return
                    t = time.perf_counter()
                    first = None
                    pieces, ids, finish = [], set(), None
                    try:
                        for chunk in c.chat.completions.create(
                                model="tiny.gguf", messages=[{"role": "user", "content": p}],
                                max_tokens=budget[p], stream=True):
                            ids.add(chunk.id)
                            if chunk.choices and chunk.choices[0].delta.content:
                                first = first or time.perf_counter()
                                pieces.append(chunk.choices[0].delta.content)
                            if chunk.choices and chunk.choices[0].finish_reason:
                                finish = chunk.choices[0].finish_reason
                    except Exception as exc:  # noqa: BLE001 - counted and reported
                        with lock:
                            errors.append(f"{type(exc).__name__}: {exc}")
                        continue
                    end = time.perf_counter()
                    with lock:
                        results.append({
                            "answered": finish is not None,
                            "mixed": "".join(pieces) != expected[p] or len(ids) != 1,
                            "latency": end - t,
                            "first_token": (first or end) - t,
                        })

            workers = [threading.Thread(target=client) for _ in range(clients)]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            wall = time.perf_counter() - t0

    lat = sorted(r["latency"] for r in results)
    ttft = sorted(r["first_token"] for r in results)
    return {
        "clients": clients,
        "requests": requests,
        "max_tokens": max_tokens,
        "answered": sum(r["answered"] for r in results),
        "mixed": sum(r["mixed"] for r in results),
        "errors": errors,
        "distinct_replies": len(set(expected.values())),
        "concurrent_seconds": round(wall, 2),
        "sequential_seconds": round(sequential, 2),
        "requests_per_second": round(len(results) / wall, 2) if wall else None,
        "latency_p50": round(statistics.median(lat), 3) if lat else None,
        "latency_p95": round(lat[int(0.95 * (len(lat) - 1))], 3) if lat else None,
        "first_token_p50": round(statistics.median(ttft), 3) if ttft else None,
        "first_token_p95": round(ttft[int(0.95 * (len(ttft) - 1))], 3) if ttft else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the figures; exit 1 if any request went unanswered or mixed."""
    p = argparse.ArgumentParser(prog="python -m bench.api_load", description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=48)
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default: %(default)s)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    out = run(clients=args.clients, requests=args.requests, max_tokens=args.max_tokens, threads=args.threads)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>20}: {v}")
    ok = out["answered"] == out["requests"] and out["mixed"] == 0 and not out["errors"]
    if not ok:
        print("FAILED: some requests were unanswered, mixed or failed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Answer benchmark: raw llama-cpp-python against Hearth's `ask` path, on the same prompt, in one run.

    python -m bench.answer [--json] [--model NAME_OR_PATH] [--threads N] [--fixed-threads] [--repeat R]
                           [--data DIR]

Indexes the demo documents (in a temporary data folder, or DIR with --data, kept and reused), retrieves
the passages for the first question once, and builds Hearth's prompt from them. Then, with both models
loaded beforehand and their KV caches emptied before each measured run:

- raw:    `llama_cpp.Llama.create_chat_completion(messages, stream=True)` on exactly those messages;
- hearth: `Hearth.ask(question, on_token=..., cancel=...)`: retrieval, prompt building, its own token
          loop (with the cancel hook armed, as the GUI always has it), citation mapping.

ttft_* is the time from the call to the first piece of text; tps_* the generated tokens after the first
divided by the time after the first. Hearth lowers its generation threads while other programs keep the
cores busy (see inference/llm.py, CpuMeter); --fixed-threads turns that off, for a pure overhead
comparison at equal threads. ttft_second_question_hearth is a different question asked next,
on the same warm model: it starts from the cached system-prompt prefix. `ttft_second_question_cold`
is the same second question on an emptied cache, so the difference is the prefix cache's doing.

With --repeat R every measurement is taken R times (raw and Hearth alternating) and the median kept.
Results go to stdout (JSON with --json, else a table); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"
FIRST = "What should I do if my laptop is stolen?"
# A second question whose prompt is about as long as the first one's, so that the cached prefix is
# what makes the difference (the JSON reports both prompt sizes).
SECOND = "How long must a password be?"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _raw_run(llm: Any, messages: list[dict[str, str]], max_tokens: int) -> dict[str, float]:
    llm.reset()  # an empty KV cache: nothing of an earlier run is reused
    t0 = time.perf_counter()
    first = end = 0.0
    n = 0
    text = []
    for chunk in llm.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0, stream=True):
        piece = chunk["choices"][0]["delta"].get("content")
        if piece:
            n += 1
            text.append(piece)
            if not first:
                first = time.perf_counter()
    end = time.perf_counter()
    return {"ttft": first - t0, "tps": (n - 1) / (end - first) if n > 1 else 0.0, "tokens": n,
            "text": "".join(text)}  # type: ignore[dict-item]


def _hearth_run(hearth: Any, question: str, *, cold: bool) -> dict[str, Any]:
    if cold:
        hearth.chat_model.llama.reset()
    marks: list[float] = []
    t0 = time.perf_counter()
    result = hearth.ask(question, on_token=lambda _p: marks.append(time.perf_counter()), cancel=lambda: False)
    end = time.perf_counter()
    n = int(result.usage.get("completion_tokens", len(marks)))
    first = marks[0] if marks else end
    return {"ttft": first - t0, "tps": (n - 1) / (end - first) if n > 1 and end > first else 0.0,
            "tokens": n, "text": result.text, "usage": result.usage}


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 4)


def run(*, model: str | None, threads: int, repeat: int, data: Path, adaptive: bool = True) -> dict[str, Any]:
    """Measure both paths; returns the result object."""
    import llama_cpp

    from inference.llm import LlamaCppModel
    from rag.answer import DEFAULT_MAX_TOKENS, build_prompt
    from rag.service import Hearth, HearthConfig

    config = HearthConfig(data_dir=data, chat_model=model, n_threads=threads, embed_threads=threads)
    path = Hearth(config).resolve_model_path(model)
    _log(f"model {path.name}, {threads} threads")
    hearth = Hearth(config, chat_model=LlamaCppModel(path, n_ctx=config.n_ctx, n_threads=threads,
                                                     adaptive_threads=adaptive))
    report = hearth.ingest([DEMO])
    _log(f"indexed the demo documents: {report.added} new, {report.unchanged} unchanged")

    # The prompt Hearth builds for the first question, to hand to llama-cpp-python as it is.
    m = hearth.chat_model
    hits = [h for h in hearth.search(FIRST) if h.score >= config.min_score]
    prompt = build_prompt(FIRST, hits, n_ctx=m.n_ctx, count_prompt=m.count_prompt, count_tokens=m.count_tokens,
                          max_passage_tokens=config.max_passage_tokens)
    max_tokens = prompt.max_tokens  # the answer length limit Hearth sets, for both paths
    assert max_tokens <= DEFAULT_MAX_TOKENS
    raw = llama_cpp.Llama(model_path=str(path), n_ctx=config.n_ctx, n_threads=threads, n_threads_batch=threads,
                          verbose=False)
    # Both runtimes render the same template from the same file; check the prompts are the same tokens.
    formatted = raw._chat_handlers.get("chat_template.default")  # noqa: SLF001 - only to compare prompts
    same_prompt = None
    if formatted is not None and m.template.name == "gguf":
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        f = Jinja2ChatFormatter(template=m.template.source, eos_token=m.eos_token, bos_token=m.bos_token)
        same_prompt = f(messages=prompt.messages).prompt == m.render(prompt.messages)

    # Page the weights in and run each path once, untimed.
    _raw_run(raw, [{"role": "user", "content": "Hi"}], 2)
    list(m.stream([{"role": "user", "content": "Hi"}], max_tokens=2))

    raws: list[dict[str, Any]] = []
    firsts: list[dict[str, Any]] = []
    seconds: list[dict[str, Any]] = []
    seconds_cold: list[dict[str, Any]] = []
    for i in range(repeat):
        _log(f"round {i + 1}/{repeat}: raw")
        raws.append(_raw_run(raw, prompt.messages, max_tokens))
        _log(f"round {i + 1}/{repeat}: hearth, first question (cold cache)")
        firsts.append(_hearth_run(hearth, FIRST, cold=True))
        _log(f"round {i + 1}/{repeat}: hearth, second question (warm prefix)")
        seconds.append(_hearth_run(hearth, SECOND, cold=False))
        _log(f"round {i + 1}/{repeat}: hearth, second question (cold cache)")
        seconds_cold.append(_hearth_run(hearth, SECOND, cold=True))

    out: dict[str, Any] = {
        "ttft_raw": _median(raws, "ttft"),
        "ttft_hearth": _median(firsts, "ttft"),
        "tps_raw": _median(raws, "tps"),
        "tps_hearth": _median(firsts, "tps"),
        "ttft_second_question_hearth": _median(seconds, "ttft"),
        "ttft_second_question_cold": _median(seconds_cold, "ttft"),
    }
    out["ttft_overhead"] = round(out["ttft_hearth"] / out["ttft_raw"] - 1, 4) if out["ttft_raw"] else None
    out["tps_overhead"] = round(1 - out["tps_hearth"] / out["tps_raw"], 4) if out["tps_raw"] else None
    out.update({
        "prompt_tokens": prompt.tokens,
        "second_prompt_tokens": seconds[-1]["usage"].get("prompt_tokens"),
        "first_cached_tokens": firsts[-1]["usage"].get("cached_tokens"),
        "second_cached_tokens": seconds[-1]["usage"].get("cached_tokens"),
        "tokens_raw": raws[-1]["tokens"],
        "tokens_hearth": firsts[-1]["tokens"],
        "same_prompt": same_prompt,
        "same_answer": raws[-1]["text"].strip() == firsts[-1]["text"].strip(),
        "answer": firsts[-1]["text"],
        "model": path.name,
        "threads": threads,
        "adaptive_threads": adaptive,
        "hearth_generation_threads": m.threads_in_use,
        "repeat": repeat,
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    })
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    p = argparse.ArgumentParser(prog="python -m bench.answer", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--model", default=None, help="built-in model name or .gguf path (default: Hearth's default)")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads for both paths (default: %(default)s)")
    p.add_argument("--fixed-threads", action="store_true",
                   help="Hearth keeps --threads for generation even while the machine is busy (pure overhead)")
    p.add_argument("--repeat", type=int, default=1, help="rounds; medians are reported (default: %(default)s)")
    p.add_argument("--data", type=Path, default=None, help="data folder to index the demo into and reuse")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    runner: Callable[[Path], dict[str, Any]] = lambda d: run(  # noqa: E731
        model=args.model, threads=args.threads, repeat=max(1, args.repeat), data=d, adaptive=not args.fixed_threads)
    if args.data is not None:
        result = runner(args.data)
    else:
        with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
            result = runner(Path(tmp))
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for key, value in result.items():
            print(f"{key:>30}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Answer benchmark: raw llama-cpp-python against Hearth's `ask` path, on the same prompt, in one run.

    python -m bench.answer [--json] [--model NAME_OR_PATH] [--threads N] [--adaptive-threads] [--repeat R]
                           [--data DIR] [--wait-quiet SECONDS]

Indexes the demo documents (in a temporary data folder, or DIR with --data, kept and reused), retrieves
the passages for the first question once, and builds Hearth's prompt from them. Then, with both models
loaded beforehand, warmed by one untimed run each, and their KV caches emptied before each measured run:

- raw:    `llama_cpp.Llama.create_chat_completion(messages, stream=True)` on exactly those messages;
- hearth: `Hearth.ask(question, on_token=..., cancel=...)`: retrieval, prompt building, its own token
          loop (with the cancel hook armed, as the GUI always has it), citation mapping, quote alignment.

Both paths are measured the same way:
- ttft: from the call to the first piece of text (Hearth's includes its retrieval and prompt building);
- tps:  the tokens llama.cpp decoded after the first piece (its `n_tokens` then and at the last piece: after it,
        `ask`'s later passes reuse the model's context, so its count at the end says nothing) divided by
        the time from the first piece to the end of the stream. Hearth's stream ends when `rag.answer`
        has read the model's last token (its own timings say when); what `ask` does after that (aligning
        the answer with the passages for its quotes) is reported apart, as `after_stream_hearth`, since
        the user already has the whole answer on screen by then. `tps_ratio_until_return` is the ratio
        as this benchmark counted it before issue 22 (Hearth's time running on until `ask` returned).

Rounds alternate raw and Hearth (raw first in even rounds, Hearth first in odd ones) and medians are
reported. Both paths run llama.cpp with the same --threads; --adaptive-threads lets Hearth lower its
generation threads while other programs keep the cores busy (inference/cpus.py, CpuMeter), which makes
the ratio a measure of that policy instead of Hearth's overhead. The run records the CPU count, the
load average before it starts and after it ends (the latter counts the benchmark's own threads), and the
CPUs other programs used during the rounds (`others_cpu`, from /proc/stat less this process's own time).
It is marked `noisy`, its ratios not to be quoted, when the raw rounds' tokens/s or time to first token
spread by more than 15 %, the load average before it exceeded 1.5, or others_cpu exceeded 0.5.
ttft_second_question_hearth is a different question asked next, on the warm model: it starts from the
cached system-prompt prefix; ttft_second_question_cold is the same question on an emptied cache.

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

from bench.conditions import NOISE_LIMIT, OTHERS_LIMIT, QUIET_LOAD, OthersCpu, load_average, machine, spread, verdict

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"
FIRST = "What should I do if my laptop is stolen?"
# A second question whose prompt is about as long as the first one's, so that the cached prefix is
# what makes the difference (the JSON reports both prompt sizes).
SECOND = "How long must a password be?"
TARGET_TPS_RATIO = 0.97  # Hearth's tokens/s at least this share of raw llama-cpp-python's
TARGET_TTFT_OVERHEAD = 0.10  # Hearth's time to first token at most this much longer than raw's


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def stream_figures(
    start: float, first: float | None, end: float, decoded_at_first: int, decoded_at_end: int
) -> dict[str, float]:
    """Time to first piece, and tokens decoded after the first piece per second until the stream ended."""
    if first is None:
        return {"ttft": end - start, "tps": 0.0, "decoded": 0}
    decoded = decoded_at_end - decoded_at_first
    span = end - first
    return {"ttft": first - start, "tps": decoded / span if decoded > 0 and span > 0 else 0.0, "decoded": decoded}


def _raw_run(llm: Any, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    llm.reset()  # an empty KV cache: nothing of an earlier run is reused
    first: float | None = None
    at_first = at_last = 0
    text = []
    t0 = time.perf_counter()
    for chunk in llm.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0, stream=True):
        piece = chunk["choices"][0]["delta"].get("content")
        if piece:
            if first is None:
                first, at_first = time.perf_counter(), llm.n_tokens
            at_last = llm.n_tokens  # counted the same way as Hearth's: at the last piece
            text.append(piece)
    end = time.perf_counter()
    pieces = len(text)
    return {**stream_figures(t0, first, end, at_first, at_last), "text": "".join(text),
            "tps_until_return": (pieces - 1) / (end - first) if first is not None and pieces > 1 else 0.0}


def _hearth_run(hearth: Any, question: str, *, cold: bool) -> dict[str, Any]:
    llama = hearth.chat_model.llama
    if cold:
        llama.reset()
    first: list[tuple[float, int]] = []
    last = [0]  # the model's tokens at the last piece: after it, ask's later passes use the same context

    def on_token(_piece: str) -> None:
        if not first:
            first.append((time.perf_counter(), llama.n_tokens))
        last[0] = llama.n_tokens

    t0 = time.perf_counter()
    result = hearth.ask(question, on_token=on_token, cancel=lambda: False)
    returned = time.perf_counter()
    if not first:
        figures = stream_figures(t0, None, returned, 0, 0)
        end = returned
    else:
        # rag.answer timed the stream from its first piece to the model's last token (µs before on_token).
        t = result.timings
        end = first[0][0] + max(0.0, t["generation"] - t["first_token"])
        figures = stream_figures(t0, first[0][0], end, first[0][1], last[0])
    n = int(result.usage.get("completion_tokens", 0))
    until_return = (n - 1) / (returned - first[0][0]) if first and n > 1 else 0.0
    return {**figures, "after_stream": returned - end, "quotes": result.timings.get("quotes", 0.0),
            "text": result.text, "usage": result.usage, "tps_until_return": until_return}


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 4)


def _wait_quiet(seconds: float) -> None:
    """Wait (at most `seconds`) for the 1-minute load average to fall below the quiet limit."""
    deadline = time.monotonic() + seconds
    while (load := load_average()) is not None and load > QUIET_LOAD and time.monotonic() < deadline:
        _log(f"load average {load} > {QUIET_LOAD}: waiting for a quiet machine")
        time.sleep(min(30.0, max(1.0, deadline - time.monotonic())))


def run(*, model: str | None, threads: int, repeat: int, data: Path, adaptive: bool = False) -> dict[str, Any]:
    """Measure both paths; returns the result object."""
    import llama_cpp

    from inference.llm import LlamaCppModel
    from rag.answer import DEFAULT_MAX_TOKENS, build_prompt
    from rag.service import Hearth, HearthConfig

    load_before = load_average()  # before this process loads anything: other programs' load alone
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

    # Page the weights in and warm every part (llama.cpp, the embedder, the aligner) once, untimed.
    _raw_run(raw, prompt.messages, max_tokens)
    _hearth_run(hearth, FIRST, cold=True)

    conditions = machine()
    others = OthersCpu()  # CPU time other programs take during the rounds (this process's own not counted)
    raws: list[dict[str, Any]] = []
    firsts: list[dict[str, Any]] = []
    seconds: list[dict[str, Any]] = []
    seconds_cold: list[dict[str, Any]] = []
    for i in range(repeat):
        order = ["raw", "hearth"] if i % 2 == 0 else ["hearth", "raw"]
        for side in order:
            _log(f"round {i + 1}/{repeat}: {side}")
            if side == "raw":
                raws.append(_raw_run(raw, prompt.messages, max_tokens))
            else:
                firsts.append(_hearth_run(hearth, FIRST, cold=True))
        _log(f"round {i + 1}/{repeat}: hearth, second question (warm prefix, then cold cache)")
        seconds.append(_hearth_run(hearth, SECOND, cold=False))
        seconds_cold.append(_hearth_run(hearth, SECOND, cold=True))
    load_after = load_average()  # counts this benchmark's own threads too: recorded, not judged
    others_cpu = others.read()

    out: dict[str, Any] = {
        "ttft_raw": _median(raws, "ttft"),
        "ttft_hearth": _median(firsts, "ttft"),
        "tps_raw": _median(raws, "tps"),
        "tps_hearth": _median(firsts, "tps"),
        "ttft_second_question_hearth": _median(seconds, "ttft"),
        "ttft_second_question_cold": _median(seconds_cold, "ttft"),
        "after_stream_hearth": _median(firsts, "after_stream"),
        "quotes_hearth": _median(firsts, "quotes"),
    }
    out["tps_ratio"] = round(out["tps_hearth"] / out["tps_raw"], 4) if out["tps_raw"] else None
    # How this benchmark counted until issue 22: Hearth's time ran on until `ask` returned, quotes included.
    raw_until = _median(raws, "tps_until_return")
    out["tps_ratio_until_return"] = round(_median(firsts, "tps_until_return") / raw_until, 4) if raw_until else None
    out["ttft_overhead"] = round(out["ttft_hearth"] / out["ttft_raw"] - 1, 4) if out["ttft_raw"] else None
    out["tps_overhead"] = round(1 - out["tps_ratio"], 4) if out["tps_ratio"] is not None else None
    # A slowed baseline flatters Hearth, a slowed Hearth round hides a gain: judge by the raw rounds.
    judged = verdict([1 / r["tps"] for r in raws if r["tps"]], load_before=load_before, load_after=None)
    judged["ttft_spread"] = round(spread([r["ttft"] for r in raws]), 3)
    judged["load_after"] = load_after
    judged["others_cpu"] = others_cpu
    judged["noisy"] = (judged["noisy"] or judged["ttft_spread"] > NOISE_LIMIT
                       or (others_cpu is not None and others_cpu > OTHERS_LIMIT))
    met = (out["tps_ratio"] is not None and out["ttft_overhead"] is not None
           and out["tps_ratio"] >= TARGET_TPS_RATIO and out["ttft_overhead"] <= TARGET_TTFT_OVERHEAD)
    out.update({
        "target": {"tps_ratio": TARGET_TPS_RATIO, "ttft_overhead": TARGET_TTFT_OVERHEAD},
        "met": None if judged["noisy"] else met,  # a noisy run decides nothing
        **judged,
        "cpus": conditions["cpus"],
        "cpu_model": conditions["cpu_model"],
        "rounds": {
            "tps_raw": [round(r["tps"], 2) for r in raws],
            "tps_hearth": [round(r["tps"], 2) for r in firsts],
            "ttft_raw": [round(r["ttft"], 4) for r in raws],
            "ttft_hearth": [round(r["ttft"], 4) for r in firsts],
        },
        "prompt_tokens": prompt.tokens,
        "second_prompt_tokens": seconds[-1]["usage"].get("prompt_tokens"),
        "first_cached_tokens": firsts[-1]["usage"].get("cached_tokens"),
        "second_cached_tokens": seconds[-1]["usage"].get("cached_tokens"),
        "decoded_raw": raws[-1]["decoded"],
        "decoded_hearth": firsts[-1]["decoded"],
        "same_prompt": same_prompt,
        "same_answer": raws[-1]["text"].strip() == firsts[-1]["text"].strip(),
        "answer": firsts[-1]["text"],
        "model": path.name,
        "threads": threads,
        "adaptive_threads": adaptive,
        "hearth_generation_threads": m.threads_in_use,
        "repeat": repeat,
    })
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    p = argparse.ArgumentParser(prog="python -m bench.answer", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--model", default=None, help="built-in model name or .gguf path (default: Hearth's default)")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads for both paths (default: %(default)s)")
    p.add_argument("--adaptive-threads", action="store_true",
                   help="let Hearth lower its generation threads while the machine is busy (not an overhead test)")
    p.add_argument("--fixed-threads", action="store_true", help=argparse.SUPPRESS)  # the default now
    p.add_argument("--repeat", type=int, default=5, help="rounds; medians are reported (default: %(default)s)")
    p.add_argument("--data", type=Path, default=None, help="data folder to index the demo into and reuse")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help=f"first wait up to this long for the load average to fall below {QUIET_LOAD}")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    if args.wait_quiet > 0:
        _wait_quiet(args.wait_quiet)
    runner: Callable[[Path], dict[str, Any]] = lambda d: run(  # noqa: E731
        model=args.model, threads=args.threads, repeat=max(1, args.repeat), data=d,
        adaptive=args.adaptive_threads and not args.fixed_threads)
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

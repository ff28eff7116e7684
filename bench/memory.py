"""Memory bounds: does Hearth's memory stay flat while it indexes many documents and answers a long chat?

    python -m bench.memory [--docs N] [--batch N] [--embedder real|hash] [--turns N] [--every N]
                           [--chat-docs N] [--model NAME] [--ctx N] [--max-tokens N] [--passage-tokens N]
                           [--threads N] [--trim] [--data DIR] [--json]

Two phases, in one process, through the real service (rag.service.Hearth):

  ingest   N small generated documents (80–160 words, Markdown and plain text), written and indexed in
           batches with the real default embedder (ONNX Runtime) into the real index (Chroma and the
           keyword index); `--embedder hash` puts a word-hashing stand-in in the model's place, which
           keeps the rest real and takes a fraction of the time. After each batch the process's resident
           memory (VmRSS) and its peak (VmHWM) are read from /proc/self/status, after a garbage
           collection. Then a new process opens the same index and indexes one more batch: what the
           long-running process holds beyond that new one is what it kept from earlier batches.
  chat     a stored conversation of T questions, each answered with Hearth.ask(conversation=…) by the
           real chat model (llama.cpp, --threads threads) from a workspace of the demo documents and
           --chat-docs generated ones. The history goes to the model every turn, trimmed to fit its
           context, so that after a few dozen turns the oldest are dropped every turn: the steady state
           of a long session. Answers are cut to --max-tokens tokens so that the run takes minutes, not
           hours: the prompts, the history and the stores are what could grow, and all are exercised.
           Memory is read every --every turns.

For each phase it prints the curve and the growth: from the first sample to the last, after the first
batch or turn, and over the second half (growth and least-squares slope, MiB per 1,000 documents or per
100 turns): a leak shows as a slope that stays positive, warm-up (caches, arenas, loading) only at the
start. `--trim` calls glibc's malloc_trim before each sample, so that freed memory the allocator kept
does not count (a leak survives it). `--json` prints the numbers as JSON (tests/test_memory_bounds.py
reads them); progress goes to stderr. The model files are prepared in another process first, so that
converting the embedder does not set the peak. The long run (make soak):

    python -m bench.memory --docs 10000 --turns 200 --threads 2
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEMO = REPO_ROOT / "assets" / "demo"
QUESTIONS = (
    "What is the mileage rate for private cars?",
    "What is the daily meal allowance for travel abroad?",
    "And within the country?",
    "What should I do if my laptop is stolen?",
    "Who do I call about it?",
    "When are salaries paid?",
    "What do I need to send the People team before my first payday?",
    "What time do I arrive on my first day?",
    "Who is my buddy?",
    "How often should I meet my buddy?",
    "Which hotel costs are reimbursed?",
    "How do I book a train ticket?",
    "What is the budget code of the harbour project?",
    "Which team owns the quarterly review?",
)
_SYLLABLES = ("al", "ber", "cor", "dan", "el", "fin", "gar", "hol", "in", "ja", "ken", "lor", "mar", "nel",
              "or", "pra", "quin", "ros", "sel", "tar", "ul", "ver", "wen", "xan", "yor", "zel")
_TOPICS = ("harbour project", "quarterly review", "office move", "supplier audit", "client workshop",
           "safety training", "budget plan", "archive migration", "hiring round", "printer lease")


@dataclass(frozen=True)
class Sample:
    """Memory after some work: how much was done, resident and peak memory (MiB), seconds since the start."""

    done: int
    rss_mib: float
    hwm_mib: float
    seconds: float


def memory() -> tuple[float, float]:
    """This process's resident memory and its peak so far, in MiB (Linux /proc/self/status)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024  # kB
    return fields["VmRSS"], fields["VmHWM"]


TRIM = False  # --trim: hand free heap memory back to the system before each sample (see malloc_trim)


def sample(done: int, t0: float) -> Sample:
    """Collect garbage (so that only memory still referenced or held by allocators counts), then measure."""
    gc.collect()
    if TRIM:
        malloc_trim()
    rss, hwm = memory()
    return Sample(done, rss, hwm, time.perf_counter() - t0)


def slope(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of y over x."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def summarise(samples: Sequence[Sample], per: int) -> dict[str, float]:
    """Growth from the first sample to the last and over the second half (MiB per `per` units of work)."""
    second = [s for s in samples if s.done >= samples[-1].done / 2]
    return {
        "first_rss_mib": samples[0].rss_mib,
        "last_rss_mib": samples[-1].rss_mib,
        "max_rss_mib": max(s.rss_mib for s in samples),
        "peak_mib": samples[-1].hwm_mib,
        "growth_mib": samples[-1].rss_mib - samples[0].rss_mib,
        "growth_after_first_mib": samples[-1].rss_mib - samples[min(1, len(samples) - 1)].rss_mib,
        "second_half_growth_mib": second[-1].rss_mib - second[0].rss_mib,
        "second_half_slope_mib": slope([(s.done, s.rss_mib) for s in second]) * per,
        "per": per,
    }


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))


def write_docs(folder: Path, start: int, count: int) -> None:
    """`count` small documents numbered from `start`, each with its own names, figures and topic."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        rng = random.Random(i)
        topic = rng.choice(_TOPICS)
        name = _word(rng).capitalize()
        sentences = [f"The {topic} led by {name} {_word(rng).capitalize()} has budget code {rng.randint(1000, 9999)}."]
        for _ in range(rng.randint(6, 12)):
            words = " ".join(_word(rng) for _ in range(rng.randint(6, 12)))
            sentences.append(f"{words.capitalize()} on {rng.randint(1, 28)} March costs {rng.randint(10, 990)} euros.")
        body = " ".join(sentences)
        if i % 2:
            (folder / f"note-{i:05d}.md").write_text(f"# Note {i}: {topic}\n\n## {name}\n\n{body}\n", encoding="utf-8")
        else:
            (folder / f"note-{i:05d}.txt").write_text(f"Note {i} about the {topic}\n\n{body}\n", encoding="utf-8")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- phases ---------------------------------------------------------------------------------------------


class HashEmbedder:
    """Vectors from word hashes: a stand-in for the embedding model when only the rest is measured
    (bench.ingest too). `count_tokens` defaults to words; pass the real tokenizer's to chunk as Hearth does."""

    name = "bench-hash"
    dim = 384
    max_tokens = 256

    def __init__(self, count_tokens: Any = None) -> None:
        if count_tokens is not None:
            self.count_tokens = count_tokens  # type: ignore[method-assign]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out


def ingest_phase(
    data: Path, *, docs: int, batch: int, threads: int, embedder: Any = None, start: int = 0, quiet: bool = False
) -> list[Sample]:
    """Index `docs` generated documents (numbered from `start`) in batches; memory after each batch.

    The first sample is taken with the embedder loaded and the index opened, before any document.
    """
    from rag.service import Hearth, HearthConfig

    hearth = Hearth(HearthConfig(data_dir=data / "hearth", embed_threads=threads), embedder=embedder)
    hearth.embedder_for("bench")  # load the embedder before the first sample, like the first batch would
    _ = hearth.store  # and open the index
    hearth.sources(workspace="bench")
    t0 = time.perf_counter()
    samples = [sample(0, t0)]
    done = 0
    while done < docs:
        n = min(batch, docs - done)
        folder = data / "docs" / f"from-{start + done:06d}"
        write_docs(folder, start + done, n)
        report = hearth.ingest([folder], workspace="bench")
        if report.failed or report.added != n:
            raise RuntimeError(f"batch at {done}: {report.added} of {n} added, failed: {report.failed[:3]}")
        done += n
        samples.append(sample(done, t0))
        s = samples[-1]
        if not quiet:
            log(f"  {done:>6} documents  RSS {s.rss_mib:7.1f} MiB  peak {s.hwm_mib:7.1f} MiB  {s.seconds:6.1f} s")
    hits = hearth.search("budget code of the harbour project", workspace="bench", k=3)
    if not hits:
        raise RuntimeError("the index answers nothing after ingesting")
    return samples


def fresh_process(data: Path, *, start: int, batch: int, threads: int, embedder: str,
                  trim: bool = False) -> dict[str, float]:
    """Memory of a new process that opens the same index and indexes one more batch (`--reopen`).

    What the long-running process holds beyond this is what it kept from its earlier batches: a leak,
    or memory its allocators did not give back. What both hold is the cost of the index itself.
    """
    r = subprocess.run([sys.executable, "-m", "bench.memory", "--reopen", str(data), "--start", str(start),
                        "--batch", str(batch), "--threads", str(threads), "--embedder", embedder, "--json",
                        *(["--trim"] if trim else [])],
                       cwd=REPO_ROOT, check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


class ShortAnswers:
    """A chat model whose answers are cut to `cap` tokens (everything else is the wrapped model's)."""

    def __init__(self, model: Any, cap: int) -> None:
        self._model = model
        self._cap = cap

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def stream(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, **kwargs: Any) -> Iterator[str]:
        return self._model.stream(messages, max_tokens=min(max_tokens, self._cap), **kwargs)


def chat_phase(
    data: Path, *, turns: int, every: int, threads: int, model_name: str | None, max_tokens: int, n_ctx: int,
    passage_tokens: int, chat_docs: int = 200, model: Any = None,
) -> tuple[list[Sample], dict[str, Any]]:
    """A stored conversation of `turns` questions; memory every `every` turns (the first: model loaded)."""
    from inference.llm import LlamaCppModel
    from rag.service import Hearth, HearthConfig

    config = HearthConfig(data_dir=data / "hearth", chat_model=model_name, n_ctx=n_ctx, n_threads=threads,
                          embed_threads=threads, n_gpu_layers=0, max_passage_tokens=passage_tokens)
    hearth = Hearth(config)
    if model is None:
        model = LlamaCppModel(hearth.resolve_model_path(model_name), n_ctx=n_ctx, n_threads=threads,
                              n_gpu_layers=0, adaptive_threads=False)
    hearth = Hearth(config, chat_model=ShortAnswers(model, max_tokens))
    corpus = data / "chat-docs"
    shutil.copytree(DEMO, corpus / "demo", dirs_exist_ok=True)
    write_docs(corpus / "notes", 100_000, chat_docs)
    hearth.ingest([corpus], workspace="chat")
    conversation = hearth.new_conversation("memory bench", workspace="chat")
    hearth.ask(QUESTIONS[0], workspace="chat", k=3)  # warm up outside the conversation: model, caches
    t0 = time.perf_counter()
    samples = [sample(0, t0)]
    info = {"model": getattr(model, "name", "?"), "answers_with_sources": 0, "turns_given_max": 0,
            "turns_dropped_max": 0, "prompt_tokens_max": 0, "seconds_per_turn": 0.0}
    for turn in range(1, turns + 1):
        result = hearth.ask(QUESTIONS[turn % len(QUESTIONS)], workspace="chat", k=3, conversation=conversation)
        info["answers_with_sources"] += bool(result.sources)
        for key, field in (("turns_given_max", "turns_given"), ("turns_dropped_max", "turns_dropped"),
                           ("prompt_tokens_max", "prompt_tokens")):
            info[key] = max(info[key], int(result.usage.get(field, 0)))
        if turn % every == 0 or turn == turns:
            samples.append(sample(turn, t0))
            s = samples[-1]
            log(f"  {turn:>4} turns  RSS {s.rss_mib:7.1f} MiB  peak {s.hwm_mib:7.1f} MiB  {s.seconds:6.1f} s  "
                f"(history given {result.usage.get('turns_given')}, dropped {result.usage.get('turns_dropped')})")
    info["seconds_per_turn"] = samples[-1].seconds / turns
    stored = hearth.conversations.get(conversation)
    info["stored_turns"] = stored.turn_count if stored else 0
    return samples, info


def prepare_models(data_dir: Path, model: str | None, *, chat: bool) -> None:
    """Convert the default embedder and join the chat model into the data folder's cache, in another process.

    Converting and quantising the embedder takes more memory than indexing does; done here, it would set
    the peak (VmHWM) this benchmark reports before any document was read.
    """
    code = ("import sys; from pathlib import Path; from inference.models import default_embedder_dir; "
            "from rag.service import Hearth, HearthConfig; d = Path(sys.argv[1]); "
            "default_embedder_dir(d / 'cache'); "
            "sys.argv[2] == 'chat' and Hearth(HearthConfig(data_dir=d)).resolve_model_path(sys.argv[3] or None)")
    subprocess.run([sys.executable, "-c", code, str(data_dir), "chat" if chat else "-", model or ""],
                   cwd=REPO_ROOT, check=True)


def malloc_trim() -> float | None:
    """Give the allocator's free memory back to the system (as Hearth does after each ingest); the RSS
    afterwards, or None where there is no glibc."""
    from rag.indexing import release_free_memory

    return memory()[0] if release_free_memory() else None


# -- report ---------------------------------------------------------------------------------------------


def print_curve(title: str, unit: str, samples: Sequence[Sample], summary: dict[str, float]) -> None:
    print(f"\n{title}\n\n| {unit} | RSS MiB | peak RSS MiB | seconds |\n|---:|---:|---:|---:|")
    for s in samples:
        print(f"| {s.done} | {s.rss_mib:.1f} | {s.hwm_mib:.1f} | {s.seconds:.1f} |")
    print(f"\nfirst sample {summary['first_rss_mib']:.1f} MiB, last {summary['last_rss_mib']:.1f} MiB "
          f"(growth {summary['growth_mib']:+.1f} MiB, {summary['growth_after_first_mib']:+.1f} MiB after the first "
          f"{unit[:-1]}"
          + ("" if unit == "turns" else " batch") + f"), peak {summary['peak_mib']:.1f} MiB; second half: "
          f"{summary['second_half_growth_mib']:+.1f} MiB, slope {summary['second_half_slope_mib']:+.2f} MiB per "
          f"{summary['per']:,} {unit}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=10_000, help="documents to index; 0 skips (default: %(default)s)")
    p.add_argument("--batch", type=int, default=500, help="documents per ingest call (default: %(default)s)")
    p.add_argument("--embedder", choices=("real", "hash"), default="real",
                   help="for the ingest: the default ONNX embedder, or a hashing stand-in (default: %(default)s)")
    p.add_argument("--turns", type=int, default=200, help="chat questions; 0 skips (default: %(default)s)")
    p.add_argument("--every", type=int, default=10, help="turns between memory samples (default: %(default)s)")
    p.add_argument("--chat-docs", type=int, default=200,
                   help="generated documents beside the demo ones in the chat's workspace (default: %(default)s)")
    p.add_argument("--model", default=None, help="chat model name or .gguf path (default: the default model)")
    p.add_argument("--max-tokens", type=int, default=8, help="answer length cap in tokens (default: %(default)s)")
    p.add_argument("--ctx", type=int, default=1024, help="chat model context in tokens (default: %(default)s)")
    p.add_argument("--passage-tokens", type=int, default=150,
                   help="passage tokens given to the chat model per question (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2, help="embedder and llama.cpp threads (default: %(default)s)")
    p.add_argument("--data", type=Path, default=None, help="working folder (default: a temporary one, removed)")
    p.add_argument("--trim", action="store_true",
                   help="call glibc's malloc_trim before each sample: what stays is memory still in use, not "
                        "freed memory the allocator kept (a leak survives it, fragmentation does not)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--reopen", type=Path, default=None, help=argparse.SUPPRESS)  # see fresh_process
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    global TRIM
    TRIM = args.trim
    if args.reopen is not None:
        embedder = HashEmbedder() if args.embedder == "hash" else None
        s = ingest_phase(args.reopen, docs=args.batch, batch=args.batch, threads=args.threads, embedder=embedder,
                         start=args.start, quiet=True)[-1]
        print(json.dumps({"rss_mib": s.rss_mib, "hwm_mib": s.hwm_mib}))
        return 0

    with tempfile.TemporaryDirectory(prefix="hearth-memory-") as tmp:
        data = args.data or Path(tmp)
        prepare_models(data / "hearth", args.model if args.turns else None, chat=bool(args.turns))
        result: dict[str, Any] = {"start_rss_mib": memory()[0], "trim": args.trim}
        if args.docs:
            log(f"ingest: {args.docs} documents in batches of {args.batch}")
            embedder = HashEmbedder() if args.embedder == "hash" else None
            samples = ingest_phase(data, docs=args.docs, batch=args.batch, threads=args.threads, embedder=embedder)
            result["ingest"] = {"samples": [asdict(s) for s in samples], **summarise(samples, 1000)}
            log("ingest: a new process opens the same index and indexes one more batch")
            fresh = fresh_process(data, start=args.docs, batch=args.batch, threads=args.threads,
                                  embedder=args.embedder, trim=args.trim)
            result["ingest"]["fresh_process_rss_mib"] = fresh["rss_mib"]
            result["ingest"]["retained_mib"] = samples[-1].rss_mib - fresh["rss_mib"]
        if args.turns:
            log(f"chat: {args.turns} turns, answers of at most {args.max_tokens} tokens")
            samples, info = chat_phase(data, turns=args.turns, every=args.every, threads=args.threads,
                                       model_name=args.model, max_tokens=args.max_tokens, n_ctx=args.ctx,
                                       passage_tokens=args.passage_tokens, chat_docs=args.chat_docs)
            result["chat"] = {"samples": [asdict(s) for s in samples], **summarise(samples, 100), **info}
        result["end_rss_mib"] = memory()[0]
        result["end_rss_after_malloc_trim_mib"] = malloc_trim()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if args.trim:
        print("Every sample was taken after malloc_trim(0): memory in use, without what the allocator kept.")
    if "ingest" in result:
        what = "the real embedder" if args.embedder == "real" else "a hashing stand-in for the embedder"
        i = result["ingest"]
        print_curve(f"Ingest: {args.docs} documents in batches of {args.batch} ({what}, Chroma)",
                    "documents", [Sample(**s) for s in i["samples"]], i)
        print(f"a new process that opens this index and indexes one more batch: {i['fresh_process_rss_mib']:.1f} MiB; "
              f"the long-running process holds {i['retained_mib']:+.1f} MiB more")
    if "chat" in result:
        c = result["chat"]
        print_curve(f"Chat: {args.turns} turns with {c['model']} (answers ≤ {args.max_tokens} tokens, "
                    f"context {args.ctx}, threads: {args.threads}, {c['seconds_per_turn']:.1f} s a turn)", "turns",
                    [Sample(**s) for s in c["samples"]], c)
        print(f"(history given to the model: up to {c['turns_given_max']} turns, up to {c['turns_dropped_max']} "
              f"dropped to fit; prompts up to {c['prompt_tokens_max']} tokens; {c['stored_turns']} turns stored)")
    trimmed = result["end_rss_after_malloc_trim_mib"]
    print(f"\nprocess at the end: {result['end_rss_mib']:.1f} MiB" +
          (f", {trimmed:.1f} MiB after malloc_trim" if trimmed is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

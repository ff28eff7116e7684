"""Embedding benchmark: Hearth's ONNX Runtime embedder against sentence-transformers, in the same run.

    python -m bench.embeddings [--json] [--chunks N] [--rounds R] [--threads T] [--precision int8|fp32]
                               [--baseline-python PY] [--cache DIR]
    python -m bench.embeddings --sweep [--load N]      batch sizes x the padding bound, and lanes, optionally under load

The corpus is real text: the docstrings of this Python's standard library, packed into chunks of at
most 200 embedder tokens (the size Hearth's ingestion uses), a fixed sample of N of them. Both engines
embed the same chunks with the same number of threads, alternately, R rounds each; the best round of
each counts (the machine may be shared, and the best round is the one least disturbed by others).

Honest figures: every run records the CPU (model, count, vector extensions), the load average before and
after, and the CPUs other programs kept busy during the rounds ("others_cpu": the machine's busy time less
this process's and the baseline worker's own, bench.conditions.OthersCpu). When the baseline's rounds differ
by more than 15 % (slowest against fastest), the 1-minute load average before the run is above 1.5, or
others_cpu is above 0.5, other work shared the cores: the run is marked "noisy" (with the reasons) and no
ratio is given. A loaded machine slows PyTorch's threads more than ONNX Runtime's, so a ratio from one
flatters Hearth. The load average after the run is recorded, not judged: on 2 cores the benchmark's own two
threads lift it past 1.5.

The limit: the time the model's matrix products alone would take at the rates this machine's ONNX
Runtime reaches on BERT-shaped matrices (int8 DynamicQuantizeMatMul for the projections, fp32 MatMul for
the attention scores), measured in the same run with the same threads; "share_of_limit" is Hearth's
speed over that. "kernels" is the share of time per operator in one profiled batch of Hearth's graph.

The baseline is sentence-transformers (PyTorch) on the same model folder. It is imported here when it
is installed (`pip install '.[bench]'`); otherwise `--baseline-python` (or HEARTH_BENCH_PYTHON) names
an interpreter that has it, and the baseline runs there as a worker process, driven round by round.

Quality: the cosine of every Hearth vector to the baseline's (mean, min), the overlap of each chunk's
5 nearest neighbours under both (top5_overlap), and a retrieval proxy: one sentence of each chunk is
the question, and hit@5 is how often its chunk is among the 5 nearest (for both engines).

--json prints one JSON object: {"model", "chunks", "baseline_chunks_per_s", "hearth_chunks_per_s",
"ratio", "noisy", "noisy_because", "others_cpu", "mean_cosine", "min_cosine", "provider", "machine",
"limit", ...}; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHUNK_TOKENS = 200
_SENTENCE = re.compile(r"[^.!?]{30,200}[.!?]")


def stdlib_docstrings(root: Path | None = None) -> Iterator[str]:
    """Docstrings of at least 20 words from the standard library's modules, in a fixed order (tests skipped)."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py")) + sorted(root.glob("*/*.py"))
    for path in files:
        if "test" in path.parent.name or path.name.startswith("test"):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc.split()) >= 20:
                    yield doc


@functools.cache
def _stdlib_words() -> tuple[str, ...]:
    return tuple(w for doc in stdlib_docstrings() for w in doc.split())


def make_chunks(count_tokens: Callable[[str], int], n: int, *, seed: int = 0) -> list[str]:
    """Pack the docstrings' words into chunks of at most CHUNK_TOKENS tokens; return a fixed sample of n."""
    words = _stdlib_words()
    chunks: list[str] = []
    i = 0
    while i < len(words):
        j = i + 160
        text = " ".join(words[i:j])
        while j - i > 10 and count_tokens(text) > CHUNK_TOKENS:
            j -= 10
            text = " ".join(words[i:j])
        chunks.append(text)
        i = j
    random.Random(seed).shuffle(chunks)
    return chunks[:n]


def make_questions(chunks: Sequence[str], *, seed: int = 0) -> list[str]:
    """One sentence of each chunk, chosen at random, as a stand-in question whose answer is that chunk."""
    rng = random.Random(seed)
    questions = []
    for chunk in chunks:
        sentences = _SENTENCE.findall(chunk) or [" ".join(chunk.split()[:20])]
        questions.append(rng.choice(sentences).strip())
    return questions


def neighbour_overlap(a: np.ndarray, b: np.ndarray, k: int = 5) -> float:
    """Mean share of each row's k nearest rows (itself excluded) that two embeddings agree on."""
    def top(v: np.ndarray) -> np.ndarray:
        sims = v @ v.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1)[:, :k]

    ta, tb = top(a), top(b)
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ta, tb, strict=True)]))


def hit_at(questions: np.ndarray, chunks: np.ndarray, k: int = 5) -> float:
    """Share of questions whose own chunk (same row) is among the k most similar chunks."""
    top = np.argsort(-(questions @ chunks.T), axis=1)[:, :k]
    return float(np.mean([i in row for i, row in enumerate(top)]))


# The baseline, in this process or in a worker process of another interpreter.
class _LocalBaseline:
    def __init__(self, model_dir: Path, threads: int) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(model_dir), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=32, convert_to_numpy=True, normalize_embeddings=True)

    def close(self) -> None:
        pass


class _WorkerBaseline:
    """Drives `python bench/embeddings.py --worker` in another interpreter through stdin/stdout."""

    def __init__(self, python: str, model_dir: Path, threads: int) -> None:
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", str(model_dir), str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
        )
        self._tmp = Path(tempfile.mkdtemp(prefix="hearth-bench-"))
        self._ask({"cmd": "ping"})

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the baseline worker stopped (exit code {self.proc.wait()})")
        return json.loads(line)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        src, out = self._tmp / "texts.json", self._tmp / "vectors.npy"
        src.write_text(json.dumps(list(texts)), encoding="utf-8")
        self._ask({"cmd": "embed", "texts": str(src), "out": str(out)})
        return np.load(out)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _worker(model_dir: str, threads: str) -> None:
    """The baseline worker's loop: one JSON request per line on stdin, one JSON reply per line on stdout."""
    baseline = _LocalBaseline(Path(model_dir), int(threads))
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "embed":
            texts = json.loads(Path(request["texts"]).read_text(encoding="utf-8"))
            np.save(request["out"], baseline.embed(texts).astype(np.float32))
        print(json.dumps({"ok": True}), flush=True)


def _baseline(model_dir: Path, threads: int, python: str | None) -> _LocalBaseline | _WorkerBaseline:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        if not python:
            raise SystemExit(
                "sentence-transformers is not installed here, and the benchmark needs it for its baseline.\n"
                "Install the bench extra (CPU PyTorch):  pip install --extra-index-url "
                "https://download.pytorch.org/whl/cpu '.[bench]'\n"
                "or name an interpreter that has it:    --baseline-python /path/to/venv/bin/python"
            ) from None
        return _WorkerBaseline(python, model_dir, threads)
    return _LocalBaseline(model_dir, threads)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _timed(embed: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str]) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    vectors = embed(texts)
    return time.perf_counter() - started, vectors


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Embed the corpus with both engines and return the report."""
    from bench.conditions import OthersCpu, spread
    from inference.bert_onnx import read_config
    from inference.embedder import OnnxEmbedder
    from inference.models import DEFAULT_EMBEDDER, _module_dir, default_embedder_dir

    load_before = load_average()
    source = _module_dir(DEFAULT_EMBEDDER.module, DEFAULT_EMBEDDER.package) / DEFAULT_EMBEDDER.folder
    folder = default_embedder_dir(args.cache, precision=args.precision)
    hearth = OnnxEmbedder(folder, threads=args.threads)
    chunks = make_chunks(hearth.count_tokens, args.chunks)
    questions = make_questions(chunks)
    _say(f"{len(chunks)} chunks; Hearth: {hearth.name} on {hearth.provider_note}; "
         f"placement: {hearth.placement.note if hearth.placement else 'not checked'}; load {load_before}")
    baseline = _baseline(source, args.threads, args.baseline_python)
    base_times: list[float] = []
    hearth_times: list[float] = []
    try:
        baseline.embed(chunks[:8])  # warm-up: first-call costs are not throughput
        hearth.embed(chunks[:8])
        # Other programs' CPU during the rounds; this process and the baseline's worker are the benchmark's own.
        others = OthersCpu(workers=[baseline.proc.pid] if isinstance(baseline, _WorkerBaseline) else [])
        base_vectors = hearth_vectors = None
        for r in range(args.rounds):
            t, base_vectors = _timed(baseline.embed, chunks)
            t2, hearth_vectors = _timed(hearth.embed, chunks)
            base_times.append(t)
            hearth_times.append(t2)
            _say(f"round {r + 1}/{args.rounds}: sentence-transformers {len(chunks) / t:.1f} chunks/s, "
                 f"Hearth {len(chunks) / t2:.1f} chunks/s")
        others_cpu = others.read()
        assert base_vectors is not None and hearth_vectors is not None
        base_q = baseline.embed(questions)
    finally:
        baseline.close()
    hearth_q = hearth.embed_query(questions)
    load_after = load_average()  # counts this benchmark's own threads: recorded, not judged
    cosine = np.sum(base_vectors * hearth_vectors, axis=1)
    base_rate, hearth_rate = len(chunks) / min(base_times), len(chunks) / min(hearth_times)
    reasons = noisy_because(base_times, load_before=load_before[0], others_cpu=others_cpu)
    noisy = bool(reasons)
    tokens = [hearth.count_tokens(c) + 2 for c in chunks]  # [CLS] and [SEP]
    limit = matrix_limit(read_config(source), tokens, args.threads)
    kernels = hearth.profile(chunks[: hearth.batch_size])
    return {
        "model": DEFAULT_EMBEDDER.name,
        "chunks": len(chunks),
        "baseline_chunks_per_s": round(base_rate, 2),
        "hearth_chunks_per_s": round(hearth_rate, 2),
        # Not quoted from a noisy run: a loaded machine slows PyTorch's threads more than ONNX Runtime's.
        "ratio": None if noisy else round(hearth_rate / base_rate, 3),
        "noisy": noisy,
        "noisy_because": reasons,
        "others_cpu": others_cpu,
        "baseline_rounds_chunks_per_s": [round(len(chunks) / t, 2) for t in base_times],
        "hearth_rounds_chunks_per_s": [round(len(chunks) / t, 2) for t in hearth_times],
        "baseline_spread": round(spread(base_times), 3),
        "hearth_spread": round(spread(hearth_times), 3),
        "mean_cosine": round(float(cosine.mean()), 5),
        "min_cosine": round(float(cosine.min()), 5),
        "provider": hearth.provider,
        "placement": hearth.placement.note if hearth.placement else None,
        "precision": hearth.precision,
        "graph": hearth.name,
        "threads": args.threads,
        "rounds": args.rounds,
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "machine": {**machine(), "load_average_before": load_before, "load_average_after": load_after},
        "limit": limit,
        "share_of_limit": round(hearth_rate / limit["int8_chunks_per_s"], 3),
        "kernels": {op: round(share, 3) for op, share in kernels.items() if share >= 0.005},
        "top5_overlap": round(neighbour_overlap(base_vectors, hearth_vectors), 4),
        "hit5_baseline": round(hit_at(base_q, base_vectors), 4),
        "hit5_hearth": round(hit_at(hearth_q, hearth_vectors), 4),
        "corpus": "Python standard library docstrings, chunks of at most 200 tokens",
    }


def noisy_because(base_times: Sequence[float], *, load_before: float | None,
                  others_cpu: float | None) -> list[str]:
    """Why a run's ratio cannot be quoted: the baseline's rounds spread too far, the machine was loaded when the
    run began, or other programs kept CPUs busy during it. The benchmark's own load never counts."""
    from bench.conditions import NOISE_LIMIT, OTHERS_LIMIT, QUIET_LOAD, spread  # here: the worker runs as a script

    reasons = []
    if spread(base_times) > NOISE_LIMIT:
        reasons.append(f"the baseline's rounds differ by {spread(base_times):.0%}")
    if load_before is not None and load_before > QUIET_LOAD:
        reasons.append(f"1-minute load average {load_before} before the run, above {QUIET_LOAD}")
    if others_cpu is not None and others_cpu > OTHERS_LIMIT:
        reasons.append(f"other programs used {others_cpu} CPUs during the rounds, above {OTHERS_LIMIT}")
    return reasons


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (/proc/loadavg; os.getloadavg elsewhere)."""
    try:
        return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return [round(v, 2) for v in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The CPU the figures belong to: model, logical CPUs (and how many this process may use), extensions."""
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    vnni = bool(flags & {"avx512_vnni", "avx_vnni"})
    return {"cpu": model, "cpus": os.cpu_count(), "cpus_usable": usable,
            "extensions": [f for f in wanted if f in flags],
            # uint8 x int8 products per cycle against fp32 multiply-adds: vpmaddubsw + vpmaddwd do 2x, VNNI 4x.
            "int8_peak_over_fp32": 4 if vnni else 2 if "avx2" in flags else None}


def matrix_limit(config: Any, tokens: Sequence[int], threads: int) -> dict[str, Any]:
    """Chunks/s if every matrix product of the model ran at the rate ONNX Runtime reaches here on its shapes."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_layers
    shapes = [(h, 3 * h), (h, h), (h, i), (i, h)]  # Q/K/V, attention output, feed-forward in and out
    rows = 32 * 192
    fp32 = {shape: _gemm_rate(rows, *shape, threads, int8=False) for shape in shapes}
    int8 = {shape: _gemm_rate(rows, *shape, threads, int8=True) for shape in shapes}
    n = float(sum(tokens))
    attention_macs = layers * 2 * h * float(sum(t * t for t in tokens))  # Q.K^T and P.V, per chunk's own length
    macs = (n * layers * sum(k * m for k, m in shapes) + attention_macs) / len(tokens)
    seconds_fp32 = n * layers * sum(k * m / fp32[(k, m)] for k, m in shapes) + attention_macs / fp32[(h, i)]
    seconds_int8 = n * layers * sum(k * m / int8[(k, m)] for k, m in shapes) + attention_macs / fp32[(h, i)]
    return {
        "fp32_gmac_per_s": round(fp32[(h, i)] / 1e9, 1),
        "int8_gmac_per_s": round(int8[(h, i)] / 1e9, 1),
        "fp32_chunks_per_s": round(len(tokens) / seconds_fp32, 1),
        "int8_chunks_per_s": round(len(tokens) / seconds_int8, 1),
        "gmac_per_chunk": round(macs / 1e9, 2),
        "macs_per_chunk": round(macs),
    }


def _gemm_rate(rows: int, k: int, n: int, threads: int, *, int8: bool) -> float:
    """Multiply-adds per second of one [rows, k] x [k, n] product (best of 5) in ONNX Runtime."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if int8:
        inits = [numpy_helper.from_array(rng.integers(-64, 64, (k, n), dtype=np.int8), "w"),
                 numpy_helper.from_array(np.full(n, 0.01, np.float32), "s"),
                 numpy_helper.from_array(np.zeros(n, np.int8), "z")]
        node = helper.make_node("DynamicQuantizeMatMul", ["a", "w", "s", "z"], ["y"], domain="com.microsoft")
    else:
        inits = [numpy_helper.from_array(rng.standard_normal((k, n), dtype=np.float32), "w")]
        node = helper.make_node("MatMul", ["a", "w"], ["y"])
    graph = helper.make_graph([node], "gemm", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])], inits)
    model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid("com.microsoft", 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as Hearth runs
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    a = rng.standard_normal((rows, k), dtype=np.float32)
    session.run(None, {"a": a})
    best = min(_timed(lambda x: session.run(None, {"a": x})[0], a)[0] for _ in range(5))
    return rows * k * n / best


def _burn(stop: Any) -> None:
    """Keep one core busy until `stop` is set: the 'other program' of --sweep --load."""
    x = 0
    while not stop.is_set():
        x = (x * 31 + 7) % 1_000_003


def make_passages(count_tokens: Callable[[str], int], n: int, *, seed: int = 0) -> list[str]:
    """Each docstring cut into pieces of at most CHUNK_TOKENS tokens, as a document is: most pieces full, the
    last of each shorter, so lengths vary as ingest's do; a fixed sample of n in a shuffled order."""
    pieces: list[str] = []
    for doc in stdlib_docstrings():
        words = doc.split()
        while words:
            j = min(len(words), 160)
            while j > 10 and count_tokens(" ".join(words[:j])) > CHUNK_TOKENS:
                j -= 10
            pieces.append(" ".join(words[:j]))
            words = words[j:]
    random.Random(seed).shuffle(pieces)
    return pieces[:n]


def sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Hearth's throughput in tokens/s for several batch sizes, with and without the padding bound, and the shipped
    batches without lanes (each batch on all the threads), on passages of varied lengths handed over as ingest does
    (`IngestOptions.embed_batch` at a time), under `--load`."""
    from inference.embedder import MAX_PADDING, OnnxEmbedder
    from inference.models import default_embedder_dir
    from rag.ingest import IngestOptions

    folder = default_embedder_dir(args.cache, precision=args.precision)

    def embedder(batch: int, bound: bool, lanes: int | None = None) -> OnnxEmbedder:
        emb = OnnxEmbedder(folder, threads=args.threads, batch_size=batch, verify_placement=False, lanes=lanes)
        emb.max_padding = MAX_PADDING if bound else float("inf")
        return emb

    embedders = {f"batch={batch} padding bound={'on' if bound else 'off'}": embedder(batch, bound)
                 for batch in (4, 8, 16, 32) for bound in (True, False)}  # fmt: skip
    embedders["batch=8 padding bound=on lanes=1"] = embedder(8, True, lanes=1)
    texts = make_passages(next(iter(embedders.values())).count_tokens, args.chunks)
    step = IngestOptions().embed_batch
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in burners:
        p.start()
    results: dict[str, float] = {}
    try:
        for r in range(args.rounds):
            for key, emb in embedders.items():
                before = emb.tokens_embedded
                t, _ = _timed(lambda ts, e=emb: np.vstack([e.embed(ts[i:i + step]) for i in range(0, len(ts), step)]),
                              texts)
                results[key] = max(results.get(key, 0.0), (emb.tokens_embedded - before) / t)
            _say(f"sweep round {r + 1}/{args.rounds} done")
    finally:
        stop.set()
        for p in burners:
            p.join()
    return {"precision": args.precision, "threads": args.threads, "load": args.load, "passages": len(texts),
            "handed_over": step, "lanes": embedders["batch=8 padding bound=on"].lanes,
            "tokens_per_s": {k: round(v) for k, v in results.items()}}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the result."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        _worker(*argv[1:3])
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.embeddings", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--chunks", type=int, default=256, help="chunks to embed (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per engine (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads of each engine")
    parser.add_argument("--precision", choices=("int8", "fp32"), default="int8", help="Hearth's graph")
    parser.add_argument("--baseline-python", default=os.environ.get("HEARTH_BENCH_PYTHON"),
                        help="an interpreter with sentence-transformers, when this one has none")
    parser.add_argument("--cache", type=Path, default=None, help="Hearth's cache folder (default: the data dir's)")
    parser.add_argument("--sweep", action="store_true", help="measure batch sizes and the padding bound instead")
    parser.add_argument("--load", type=int, default=0, help="with --sweep: busy processes running alongside")
    args = parser.parse_args(argv)
    if args.cache is None:
        from app.config import default_data_dir

        args.cache = default_data_dir() / "cache"
    report = sweep(args) if args.sweep else run(args)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>22}: {value}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        sys.path.insert(0, str(REPO))
    raise SystemExit(main())

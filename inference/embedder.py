"""Sentence embeddings with ONNX Runtime: the `Embedder` protocol and its one implementation.

`OnnxEmbedder` runs a folder holding `model.onnx` (as written by `inference.bert_onnx`, fp32 or
int8) and its `tokenizer.json`. It picks the best execution provider installed (MIGraphX, ROCm,
CUDA, then CPU) and proves where the graph really runs: ONNX Runtime falls back to the CPU
silently when a GPU provider's libraries cannot load, and a provider that loads may still leave
most nodes on the CPU (AMDMIGraphX #5058). So after creating a session it runs one profiled probe,
counts the nodes each provider executed, and says so in `placement.note`, in plain words.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import threading
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from inference.errors import EmbedderError, ModelError

_STDOUT_LOCK = threading.Lock()
CPU = "CPUExecutionProvider"
# Preference order when the caller does not name providers: AMD first (the target hardware), then NVIDIA.
GPU_PREFERENCE = ("MIGraphXExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider")
_FRIENDLY = {
    "MIGraphXExecutionProvider": "AMD GPU (MIGraphX)",
    "ROCMExecutionProvider": "AMD GPU (ROCm)",
    "CUDAExecutionProvider": "NVIDIA GPU (CUDA)",
    CPU: "CPU",
}
_ORT_ERROR_LEVEL = 3  # ONNX Runtime's "error" severity: keep its warnings off the user's console
# Operators that carry the arithmetic; where these run decides the speed. Shape bookkeeping (Shape,
# Gather of a few indices, Cast, Reshape) is often left on the CPU by GPU providers on purpose.
COMPUTE_OPS = frozenset({
    "MatMul", "Gemm", "FusedMatMul", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
    "MatMulNBits", "Attention", "QAttention", "MultiHeadAttention", "Softmax", "LayerNormalization",
    "SkipLayerNormalization", "Gelu", "BiasGelu", "FastGelu", "Erf",
})
# Texts per batch at most: 32 on a GPU; 8 on the CPU, where a batch's padded positions cost as much as real
# ones and smaller batches of sorted lengths hold less padding (`python -m bench.embeddings --sweep`).
DEFAULT_BATCH_SIZE = 32
CPU_BATCH_SIZE = 8
# A batch also ends where padding it to its longest text would add more than this share of its tokens:
# of the 64 passages ingest handed over at a time, batches of 32 were 27 % padding (bench/embeddings.py).
MAX_PADDING = 0.05
DEFAULT_MAX_TOKENS = 256
# The distributions that install the `onnxruntime` module; two at once overwrite each other's files.
ONNXRUNTIME_DISTRIBUTIONS = (
    "onnxruntime", "onnxruntime-rocm", "onnxruntime-migraphx", "onnxruntime-gpu", "onnxruntime-directml",
    "onnxruntime-openvino", "onnxruntime-training",
)


@dataclass(frozen=True)
class Placement:
    """Where a session's nodes ran in the profiled probe, and the one-line verdict shown to users."""

    provider: str  # the session's first provider
    nodes: Mapping[str, int]  # provider -> nodes it executed in the probe (a fused GPU subgraph counts once)
    cpu_compute_ops: tuple[str, ...]  # arithmetic op types that ran on the CPU although a GPU was the provider
    note: str

    @property
    def on_gpu(self) -> bool:
        """True when the session's arithmetic runs on a GPU provider."""
        return self.provider != CPU and not self.cpu_compute_ops

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"provider": self.provider, "nodes": dict(self.nodes), "cpu_compute_ops": list(self.cpu_compute_ops),
                "note": self.note}


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors; what `rag` types against."""

    dim: int
    max_tokens: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text, in input order."""
        ...

    def count_tokens(self, text: str) -> int:
        """Return the number of model tokens in `text`, special tokens excluded."""
        ...


class OnnxEmbedder:
    """An `Embedder` running a converted sentence-transformers model on ONNX Runtime."""

    def __init__(
        self,
        model_dir: Path,
        *,
        providers: Sequence[str] | None = None,
        threads: int | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        verify_placement: bool = True,
        spin: bool = False,
        lanes: int | None = None,
    ) -> None:
        model_dir = Path(model_dir)
        if (batch_size is not None and batch_size < 1) or (max_tokens is not None and max_tokens < 2):
            raise ValueError("batch_size must be >= 1 and max_tokens >= 2")
        if lanes is not None and lanes < 1:
            raise ValueError("lanes must be >= 1")
        model_path = model_dir / "model.onnx"
        tokenizer_path = model_dir / "tokenizer.json"
        for path in (model_path, tokenizer_path):
            if not path.is_file():
                raise ModelError(
                    f"The embedding model folder {model_dir} has no {path.name}.",
                    hint="Delete the folder so that Hearth converts the model again.",
                )
        self.name: str = model_dir.name
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE
        self.max_padding = MAX_PADDING
        # On the CPU, a call of several batches runs them side by side, one thread each, on as many threads as the
        # session has: a two-thread batch waits at every operator for its slower half, and a core taken by parsing
        # or writing stalls both halves; one-thread batches do not wait for each other. Ingest of the retrieval
        # corpus: 27.6 s against 29.8 s (docs/experiments/2026-12-08-embedding-less-work.md). Same vectors.
        self.lanes = 1
        self._lane_session: ort.InferenceSession | None = None
        self._lane_pool: ThreadPoolExecutor | None = None
        self._lane_lock = threading.Lock()
        self._spin = spin
        self._model_path, self._threads = model_path, threads
        self._pad_multiple = 1
        profile_dir = tempfile.mkdtemp(prefix="hearth-placement-") if verify_placement else None
        try:
            self._session, self.provider, self.provider_note = _open_session(
                model_path, providers, threads, profile_dir=profile_dir, spin=spin
            )
            self._setup(tokenizer_path, max_tokens)
            # MIGraphX compiles the graph again for every new input shape; rounding the padded width up to
            # a multiple of 32 bounds the number of shapes (padding is masked, so vectors do not change).
            self._pad_multiple = 32 if self.provider == "MIGraphXExecutionProvider" else 1
            self.placement: Placement | None = None
            if profile_dir is not None:
                self._verify_placement(model_path, threads)
            if self.provider == CPU:  # asked for, or fallen back to
                self.batch_size = batch_size or CPU_BATCH_SIZE
                self.lanes = lanes if lanes is not None else _intra_threads(threads)
        finally:
            if profile_dir is not None:
                shutil.rmtree(profile_dir, ignore_errors=True)

    def _setup(self, tokenizer_path: Path, max_tokens: int | None) -> None:
        """Read the graph's metadata and interface, and load the tokenizer."""
        meta = self._session.get_modelmeta().custom_metadata_map
        # sentence-transformers reads max_seq_length tokens (256 for all-MiniLM-L6-v2, 512 for e5/bge);
        # position embeddings bound it too: a longer max_tokens would crash in Gather.
        wanted = max_tokens or int(meta.get("hearth.max_seq_length", DEFAULT_MAX_TOKENS))
        self.max_tokens: int = min(wanted, int(meta.get("hearth.max_positions", wanted)))
        self.precision: str = meta.get("hearth.precision", "fp32")
        self.query_prompt: str = meta.get("hearth.query_prompt", "")
        self.passage_prompt: str = meta.get("hearth.passage_prompt", "")
        self._input_names = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]
        self._tokenizer, self._counter, self._pad_id = load_tokenizers(tokenizer_path, self.max_tokens)
        self.tokens_embedded = 0  # tokens of every text embedded so far (truncated as the model reads them)
        self.dim: int = self._find_dim(meta)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text (a passage to be found), in input order."""
        return self._embed(texts, self.passage_prompt)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Like `embed`, for questions: models trained with a query prompt (e5's "query: ") get it here."""
        return self._embed(texts, self.query_prompt)

    def _embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            if prompt:
                texts = [prompt + t for t in texts]
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:  # tokenizers raises bare Exception/TypeError subclasses from Rust
            raise EmbedderError(f"The texts could not be tokenized: {exc}") from exc
        lengths = np.array([len(e.ids) for e in encodings])
        self.tokens_embedded += int(lengths.sum())
        result = np.empty((len(encodings), self.dim), dtype=np.float32)
        chosen = list(batches(lengths, self.batch_size, self.max_padding))
        if self.lanes > 1 and len(chosen) > 1:
            session, pool = self._lane()
            outs: Iterable[np.ndarray] = pool.map(lambda b: self._run([encodings[i] for i in b], session), chosen)
        else:
            outs = (self._run([encodings[i] for i in b]) for b in chosen)
        for b, out in zip(chosen, outs, strict=True):
            result[b] = out
        # The graph normalises already; doing it again here keeps the promise for foreign model.onnx files.
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        result /= np.maximum(norms, 1e-12)
        return result

    def count_tokens(self, text: str) -> int:
        """Return the number of model tokens in `text`, special tokens excluded and nothing truncated."""
        try:
            return len(self._counter.encode(text, add_special_tokens=False).ids)
        except Exception as exc:  # see embed()
            raise EmbedderError(f"The text could not be tokenized: {exc}") from exc

    def _lane(self) -> tuple[ort.InferenceSession, ThreadPoolExecutor]:
        """The one-thread session the lanes share (ONNX Runtime runs a session from several threads at once),
        and their threads; made at the first call that needs them, so a process that only asks never has them."""
        with self._lane_lock:
            if self._lane_session is None or self._lane_pool is None:
                self._lane_session = _open_session(self._model_path, [CPU], 1, spin=self._spin)[0]
                self._lane_pool = ThreadPoolExecutor(self.lanes, thread_name_prefix="hearth-embed")
            return self._lane_session, self._lane_pool

    def _run(self, encodings: list[Encoding], session: ort.InferenceSession | None = None) -> np.ndarray:
        """Run one batch (on `session`, else the main one) and check that it gave one `dim`-sized row per text."""
        out = self._infer(encodings, session)
        if out.ndim != 2 or out.shape != (len(encodings), self.dim):
            raise EmbedderError(
                f"The embedding model returned shape {out.shape}; expected ({len(encodings)}, {self.dim})."
            )
        return out

    def profile(self, texts: Sequence[str]) -> dict[str, float]:
        """Run `texts` as one profiled batch; return each operator type's share of the kernel time, largest first.

        Says which kernels really ran (ONNX Runtime may rewrite or fall back), e.g. QAttention and
        DynamicQuantizeMatMul for the int8 graph.
        """
        profile_dir = tempfile.mkdtemp(prefix="hearth-profile-")
        try:
            session, _, _ = _open_session(self._model_path, [self.provider], self._threads,
                                          profile_dir=profile_dir, spin=self._spin)
            encodings = self._tokenizer.encode_batch([self.passage_prompt + t for t in texts])
            session.run([self._output], self._feed(encodings))
            events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
        except Exception as exc:  # onnxruntime's pybind errors share no useful base class
            raise EmbedderError(f"The embedding model could not be profiled: {exc}") from exc
        finally:
            shutil.rmtree(profile_dir, ignore_errors=True)
        return kernel_shares(events)

    def _feed(self, encodings: list[Encoding]) -> dict[str, np.ndarray]:
        """The graph inputs for one batch, padded to its longest member."""
        width = max(len(e.ids) for e in encodings)
        width = min(-(-width // self._pad_multiple) * self._pad_multiple, max(width, self.max_tokens))
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {k: v for k, v in feed.items() if k in self._input_names}

    def _infer(self, encodings: list[Encoding], session: ort.InferenceSession | None = None) -> np.ndarray:
        """Pad one batch to its longest member and run the graph."""
        feed = self._feed(encodings)
        try:
            (out,) = (session or self._session).run([self._output], feed)
        except Exception as exc:  # onnxruntime's pybind errors share no useful base class
            raise EmbedderError(
                f"The embedding model failed while running on {_FRIENDLY.get(self.provider, self.provider)}: {exc}",
                hint="If this keeps happening on a GPU, set the embedder to use the CPU.",
            ) from exc
        return np.asarray(out, dtype=np.float32)

    def _find_dim(self, meta: dict[str, str]) -> int:
        """Read the vector size from the graph, or embed one word when the graph leaves it symbolic."""
        shape = next(o.shape for o in self._session.get_outputs() if o.name == self._output)
        if len(shape) == 2 and isinstance(shape[1], int):
            return shape[1]
        if "hearth.hidden_size" in meta:
            return int(meta["hearth.hidden_size"])
        return int(self._infer(self._tokenizer.encode_batch(["dimension probe"])).shape[1])

    def _verify_placement(self, model_path: Path, threads: int | None) -> None:
        """Profile one probe batch to see where the nodes ran; leave a GPU that took almost none of them."""
        probe = self._tokenizer.encode_batch(["Where do the nodes of this graph run?", "Placement probe"])
        try:
            self._infer(probe)
            events = json.loads(Path(self._session.end_profiling()).read_text(encoding="utf-8"))
        except (EmbedderError, OSError, ValueError) as exc:  # the check must never be why embedding fails
            reason = exc.args[0] if exc.args else type(exc).__name__
            self.placement = Placement(self.provider, {}, (), f"{self.provider_note} (placement not checked: {reason})")
            return
        self.placement = placement = summarize_placement(events, self.provider)
        if self.provider != CPU and placement.cpu_compute_ops and _mostly_on_cpu(placement):
            # Copying every activation between GPU and CPU is slower than staying on the CPU.
            self._session, _, _ = _open_session(model_path, [CPU], threads, spin=self._spin)
            reason = placement.note
            self.provider = CPU
            self._pad_multiple = 1
            self.provider_note = f"fell back to CPU because {reason}"
            self.placement = Placement(CPU, {}, (), "CPU (the GPU left most nodes on the CPU)")
        elif self.provider != CPU:
            self.provider_note = placement.note

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self.name!r}, dim={self.dim}, provider={self.provider!r})"


def batches(lengths: np.ndarray, size: int, max_padding: float = MAX_PADDING) -> Iterator[np.ndarray]:
    """Indices of texts to run together: longest first, so that similar lengths share a batch and a memory
    error shows at once; a batch ends at `size` texts or where padding would pass `max_padding` of its tokens."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    start = 0
    while start < len(order):
        longest, real, end = int(lengths[order[start]]), 0, start
        while end < len(order) and end - start < size:
            real += int(lengths[order[end]])
            if end > start and longest * (end + 1 - start) > (1 + max_padding) * real:
                break
            end += 1
        yield order[start:end]
        start = end


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed questions: through `embed_query` when the embedder has one (prompted models), else `embed`."""
    embed_query = getattr(embedder, "embed_query", None)
    return embed_query(texts) if callable(embed_query) else embedder.embed(texts)


def summarize_placement(events: Iterable[Mapping[str, Any]], provider: str) -> Placement:
    """Read ONNX Runtime profiling events (one probe run) into a `Placement` for a session on `provider`."""
    node_provider: dict[str, str] = {}
    node_op: dict[str, str] = {}
    for event in events:
        if event.get("cat") != "Node":
            continue
        args = event.get("args") or {}
        name = str(event.get("name", ""))
        for suffix in ("_kernel_time", "_fence_before", "_fence_after"):
            name = name.removesuffix(suffix)
        if "provider" in args:
            node_provider[name] = str(args["provider"])
            node_op[name] = str(args.get("op_name", ""))
    nodes = Counter(node_provider.values())
    total = sum(nodes.values())
    friendly = _FRIENDLY.get(provider, provider)
    if provider == CPU:
        return Placement(CPU, dict(nodes), (), f"CPU, all {total} nodes")
    cpu_ops = sorted({node_op[n] for n, p in node_provider.items() if p == CPU and node_op[n] in COMPUTE_OPS})
    on_gpu = total - nodes.get(CPU, 0)
    short = provider.removesuffix("ExecutionProvider")
    if not total:
        note = f"{friendly}: the probe ran no node (placement unknown)"
    elif on_gpu == total:
        note = f"GPU: {short}, all {total} nodes"
    elif not cpu_ops:
        note = f"GPU: {short}, all compute nodes ({nodes.get(CPU, 0)} shape nodes on the CPU)"
    else:
        note = (
            f"{short} ran only {on_gpu} of {total} nodes on the GPU; {', '.join(cpu_ops)} ran on the CPU"
        )
    return Placement(provider, dict(nodes), tuple(cpu_ops), note)


def kernel_shares(events: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Each operator type's share of the kernel time in ONNX Runtime profiling events, largest first."""
    spent: Counter[str] = Counter()
    for event in events:
        args = event.get("args") or {}
        if event.get("cat") == "Node" and str(event.get("name", "")).endswith("_kernel_time") and "op_name" in args:
            spent[str(args["op_name"])] += float(event.get("dur", 0))
    total = sum(spent.values()) or 1.0
    return {op: spent[op] / total for op, _ in spent.most_common()}


def _mostly_on_cpu(placement: Placement) -> bool:
    """True when the CPU executed at least half of the probe's nodes."""
    total = sum(placement.nodes.values())
    return total > 0 and placement.nodes.get(CPU, 0) * 2 >= total


def onnxruntime_distributions() -> list[str]:
    """The installed distributions that provide the `onnxruntime` module; more than one is a broken install."""
    found = []
    for name in ONNXRUNTIME_DISTRIBUTIONS:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.append(name)
    return found


def choose_providers(available: Sequence[str]) -> list[str]:
    """Return the providers to request when the caller names none: the best GPU one installed, then CPU."""
    for gpu in GPU_PREFERENCE:
        if gpu in available:
            return [gpu, CPU]
    return [CPU]


# onnxruntime would fuse a residual Add and its LayerNormalization into SkipLayerNormalization, whose CPU
# kernel (1.32) takes five times as long as the two plain operators; Hearth's fused graphs write the pair.
_CPU_DISABLED_FUSIONS = ["SkipLayerNormFusion"]


def _open_session(
    model_path: Path,
    providers: Sequence[str] | None,
    threads: int | None,
    *,
    profile_dir: str | None = None,
    spin: bool = False,
) -> tuple[ort.InferenceSession, str, str]:
    """Create the ONNX Runtime session; return it, the provider really used, and a note saying why.

    With `profile_dir`, the session profiles its runs there until `end_profiling()` is called.
    """
    available = list(ort.get_available_providers())
    requested = list(providers) if providers else choose_providers(available)
    if not requested:
        raise ValueError("providers must not be empty")
    options = _session_options(threads, spin=spin)
    if profile_dir is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(profile_dir) / "probe")

    # A provider missing from this onnxruntime build is dropped up front: asking for it only gets a
    # warning printed and the CPU anyway.
    reasons: dict[str, str] = {
        p: "it is not included in the installed onnxruntime package" for p in requested if p not in available
    }
    usable = [p for p in requested if p in available]
    session: ort.InferenceSession | None = None
    if usable:
        # When a GPU provider's library fails to load, onnxruntime's Python wrapper prints "EP Error …"
        # to stdout and retries on the CPU. Captured here: it holds the real reason, and stdout carries
        # results (--json). The redirect is process-wide, but only for the length of this call.
        # Only a GPU provider prints so; a lock keeps two threads' redirects from nesting (a nested
        # pair restored out of order would leave sys.stdout pointing at a StringIO for good).
        printed = io.StringIO()
        try:
            if usable == [CPU]:
                session = _cpu_session(model_path, options)
            else:
                with _STDOUT_LOCK, contextlib.redirect_stdout(printed):
                    session = ort.InferenceSession(str(model_path), options, providers=usable)
        except Exception as exc:  # onnxruntime's pybind errors share no useful base class
            if usable == [CPU]:
                raise _session_error(model_path, exc) from exc
            for p in usable:
                if p != CPU:
                    reasons.setdefault(p, _first_line(exc))
        reason = _ep_error_reason(printed.getvalue())
        if reason:
            for p in usable:
                if p != CPU:
                    reasons.setdefault(p, reason)
    if session is None:
        try:
            session = _cpu_session(model_path, options)
        except Exception as exc:
            raise _session_error(model_path, exc) from exc

    actual = session.get_providers()[0]
    wanted = requested[0]
    if actual == wanted:
        if actual == CPU:
            note = "CPU (as requested)" if providers else "CPU (no GPU provider installed)"
        else:
            note = f"{_FRIENDLY.get(actual, actual)} via {actual}"
    else:
        # ONNX Runtime can also fall back inside InferenceSession without raising; the session's own
        # provider list is the truth either way.
        reason = reasons.get(wanted, "onnxruntime could not initialise it")
        note = (
            f"fell back to {_FRIENDLY.get(actual, actual)}: {wanted} was requested but could not be loaded ({reason})"
        )
    return session, actual, note


def _cpu_session(model_path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
    """A CPU session, without the fusions that slow Hearth's graphs down there."""
    return ort.InferenceSession(str(model_path), options, providers=[CPU], disabled_optimizers=_CPU_DISABLED_FUSIONS)


def _session_options(threads: int | None, *, spin: bool = False) -> ort.SessionOptions:
    """Session options with explicit threads; idle threads sleep unless `spin`."""
    options = ort.SessionOptions()
    # Threads are set explicitly: ONNX Runtime's default spins one thread per core, which starves the
    # GUI, the parser processes and the LLM on small machines.
    options.intra_op_num_threads = _intra_threads(threads)
    options.inter_op_num_threads = 1
    # Idle pool threads sleep instead of spinning: spinning threads hold the cores that document parsing
    # and the chat model need, and `bench/embeddings.py --sweep` (with and without a busy process beside)
    # showed no throughput lost by not spinning, beyond the noise of a shared 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    options.log_severity_level = _ORT_ERROR_LEVEL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def _intra_threads(threads: int | None) -> int:
    """The threads a session gets: those asked for, else one per core."""
    return threads if threads else max(1, os.cpu_count() or 1)


def _session_error(model_path: Path, exc: Exception) -> EmbedderError:
    """Describe a session that cannot be created even on the CPU (usually a damaged model.onnx)."""
    return EmbedderError(
        f"The embedding model {model_path} could not be loaded: {_first_line(exc)}",
        hint="Delete the folder so that Hearth converts the model again.",
    )


def _ep_error_reason(printed: str) -> str | None:
    """The reason inside onnxruntime's printed "EP Error … when using [...]" banner, if there is one."""
    for line in printed.splitlines():
        if line.startswith("EP Error") and not line.startswith("EP Error ***"):
            text = line.removeprefix("EP Error:").removeprefix("EP Error").strip()
            text = text.split(" when using [")[0].split(" using [")[0].strip()
            if "with error: " in text:
                return text.split("with error: ", 1)[1].strip()
            return text.rsplit(" : ", 1)[-1].strip() or None
    return None


def _first_line(exc: Exception) -> str:
    """Keep the first line of a runtime error: the rest is usually a C++ stack."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load_tokenizers(path: Path, max_tokens: int) -> tuple[Tokenizer, Tokenizer, int]:
    """Load tokenizer.json twice: one truncating copy for embedding, one untouched copy for counting."""
    try:
        tokenizer = Tokenizer.from_file(str(path))
        counter = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ModelError(f"The tokenizer file {path} cannot be read: {exc}") from exc
    padding = tokenizer.padding
    if padding:
        pad_id = int(padding["pad_id"])
    else:  # padded positions are masked out, but the id must still be a real token of this vocabulary
        pad_id = next((i for t in ("[PAD]", "<pad>") if (i := tokenizer.token_to_id(t)) is not None), 0)
    # The packaged tokenizer.json pads and truncates to a fixed 128; padding is done per batch in
    # _run, and truncation follows max_tokens (special tokens included, as in sentence-transformers).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    counter.no_padding()
    counter.no_truncation()
    return tokenizer, counter, pad_id

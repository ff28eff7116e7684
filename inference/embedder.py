"""Sentence embeddings with ONNX Runtime: the `Embedder` protocol and its one implementation.

`OnnxEmbedder` runs a folder holding `model.onnx` (as written by `inference.bert_onnx`) and its
`tokenizer.json`. It picks the best execution provider installed (MIGraphX, ROCm, CUDA, then CPU)
and records in plain words which one it really got, because ONNX Runtime falls back to the CPU
silently when a GPU provider cannot load.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from inference.errors import EmbedderError, ModelError

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
        batch_size: int = 32,
        max_tokens: int = 256,
    ) -> None:
        model_dir = Path(model_dir)
        if batch_size < 1 or max_tokens < 2:
            raise ValueError("batch_size must be >= 1 and max_tokens >= 2")
        model_path = model_dir / "model.onnx"
        tokenizer_path = model_dir / "tokenizer.json"
        for path in (model_path, tokenizer_path):
            if not path.is_file():
                raise ModelError(
                    f"The embedding model folder {model_dir} has no {path.name}.",
                    hint="Delete the folder so that Hearth converts the model again.",
                )
        self.name: str = model_dir.name
        self.batch_size = batch_size
        self._session, self.provider, self.provider_note = _open_session(model_path, providers, threads)
        meta = self._session.get_modelmeta().custom_metadata_map
        # Position embeddings bound the sequence length; a longer max_tokens would crash in Gather.
        self.max_tokens: int = min(max_tokens, int(meta.get("hearth.max_positions", max_tokens)))
        self._input_names = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]
        self._tokenizer, self._counter, self._pad_id = _load_tokenizers(tokenizer_path, self.max_tokens)
        self.dim: int = self._find_dim(meta)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:  # tokenizers raises bare Exception/TypeError subclasses from Rust
            raise EmbedderError(f"The texts could not be tokenized: {exc}") from exc
        lengths = np.array([len(e.ids) for e in encodings])
        # Longest first: similar lengths share a batch (little padding) and a memory error shows at once.
        order = np.argsort(-lengths, kind="stable")
        result = np.empty((len(encodings), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            result[chosen] = self._run([encodings[i] for i in chosen])
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

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        """Run one batch and check that it gave one `dim`-sized row per text."""
        out = self._infer(encodings)
        if out.ndim != 2 or out.shape != (len(encodings), self.dim):
            raise EmbedderError(
                f"The embedding model returned shape {out.shape}; expected ({len(encodings)}, {self.dim})."
            )
        return out

    def _infer(self, encodings: list[Encoding]) -> np.ndarray:
        """Pad one batch to its longest member and run the graph."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        try:
            (out,) = self._session.run([self._output], feed)
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

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self.name!r}, dim={self.dim}, provider={self.provider!r})"


def choose_providers(available: Sequence[str]) -> list[str]:
    """Return the providers to request when the caller names none: the best GPU one installed, then CPU."""
    for gpu in GPU_PREFERENCE:
        if gpu in available:
            return [gpu, CPU]
    return [CPU]


def _open_session(
    model_path: Path, providers: Sequence[str] | None, threads: int | None
) -> tuple[ort.InferenceSession, str, str]:
    """Create the ONNX Runtime session; return it, the provider really used, and a note saying why."""
    available = list(ort.get_available_providers())
    requested = list(providers) if providers else choose_providers(available)
    if not requested:
        raise ValueError("providers must not be empty")
    options = ort.SessionOptions()
    # Threads are set explicitly: ONNX Runtime's default spins one thread per core, which starves the
    # GUI and the LLM on small machines.
    options.intra_op_num_threads = threads if threads else max(1, os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    options.log_severity_level = _ORT_ERROR_LEVEL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL

    # A provider missing from this onnxruntime build is dropped up front: asking for it only gets a
    # warning printed and the CPU anyway.
    reasons: dict[str, str] = {
        p: "it is not included in the installed onnxruntime package" for p in requested if p not in available
    }
    usable = [p for p in requested if p in available]
    session: ort.InferenceSession | None = None
    if usable:
        try:
            session = ort.InferenceSession(str(model_path), options, providers=usable)
        except Exception as exc:  # onnxruntime's pybind errors share no useful base class
            if usable == [CPU]:
                raise _session_error(model_path, exc) from exc
            for p in usable:
                if p != CPU:
                    reasons.setdefault(p, _first_line(exc))
    if session is None:
        try:
            session = ort.InferenceSession(str(model_path), options, providers=[CPU])
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


def _session_error(model_path: Path, exc: Exception) -> EmbedderError:
    """Describe a session that cannot be created even on the CPU (usually a damaged model.onnx)."""
    return EmbedderError(
        f"The embedding model {model_path} could not be loaded: {_first_line(exc)}",
        hint="Delete the folder so that Hearth converts the model again.",
    )


def _first_line(exc: Exception) -> str:
    """Keep the first line of a runtime error: the rest is usually a C++ stack."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _load_tokenizers(path: Path, max_tokens: int) -> tuple[Tokenizer, Tokenizer, int]:
    """Load tokenizer.json twice: one truncating copy for embedding, one untouched copy for counting."""
    try:
        tokenizer = Tokenizer.from_file(str(path))
        counter = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ModelError(f"The tokenizer file {path} cannot be read: {exc}") from exc
    padding = tokenizer.padding
    pad_id = int(padding["pad_id"]) if padding else 0
    # The packaged tokenizer.json pads and truncates to a fixed 128; padding is done per batch in
    # _run, and truncation follows max_tokens (special tokens included, as in sentence-transformers).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    counter.no_padding()
    counter.no_truncation()
    return tokenizer, counter, pad_id

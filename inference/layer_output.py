"""Layers' outputs at a prompt's last token, read from a loaded llama.cpp model (`LayerReader`).

For the probes that read a middle layer of the larger model (rag/probe.py, `LlamaCppModel.layer_state`), and for
choosing that layer (`LlamaCppModel.layer_states`, several in one reading; bench.question_probe --sweep).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inference.errors import ModelError


class LayerReader:
    """A second llama.cpp context on a loaded model that keeps some layers' outputs at a prompt's last token.

    llama.cpp names each layer's output "l_out-N" in its graph and, given an eval callback, asks for each tensor
    whether the caller wants to see it once computed; only the layers asked for are taken (the graph is otherwise
    run as always). The chat's own context is left alone: its KV cache and its speed. The context holds a prompt
    at a time (its KV cache is cleared before each), and frees its memory on `close`."""

    def __init__(self, lib: Any, model: Any, *, n_ctx: int) -> None:
        from llama_cpp import _ctypes_extensions

        try:
            ggml = _ctypes_extensions.load_shared_library("ggml-base", Path(lib.__file__).parent / "lib")
            ggml.ggml_get_name.restype, ggml.ggml_get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
            ggml.ggml_nelements.restype, ggml.ggml_nelements.argtypes = ctypes.c_int64, [ctypes.c_void_p]
            ggml.ggml_backend_tensor_get.restype = None
            ggml.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                                     ctypes.c_size_t]
        except (OSError, AttributeError, FileNotFoundError, RuntimeError) as exc:
            raise ModelError(f"This llama.cpp build does not let a layer's output be read: {exc}") from exc
        self._lib, self._ggml = lib, ggml
        self.width = int(lib.llama_model_n_embd(model))
        self._want: dict[bytes, Any] = {}  # the wanted tensors' names, each with the row its last token is put in
        self._seen: set[bytes] = set()
        self._callback = lib.ggml_backend_sched_eval_callback(self._observe)  # kept alive with the context
        params = lib.llama_context_default_params()
        params.n_ctx = params.n_batch = n_ctx
        params.n_ubatch = min(512, n_ctx)
        params.cb_eval = self._callback
        params.cb_eval_user_data = None
        self._ctx = lib.llama_init_from_model(model, params)
        if not self._ctx:
            raise ModelError("llama.cpp could not make a context to read a layer's output in.")

    def _observe(self, tensor: Any, ask: bool, _data: Any) -> bool:
        name = self._ggml.ggml_get_name(tensor)
        if name not in self._want:
            return not ask  # not wanted: not kept for us, and the graph goes on
        if ask:
            return True
        rows = int(self._ggml.ggml_nelements(tensor)) // self.width  # the batch's tokens; the prompt's last is last
        self._ggml.ggml_backend_tensor_get(tensor, self._want[name], (rows - 1) * self.width * 4, self.width * 4)
        self._seen.add(name)
        return True

    def read(self, prompt: Sequence[int], layer: int, *, threads: int) -> Any:
        """Layer `layer`'s output at the prompt's last token (a numpy vector of the model's width)."""
        return self.read_many(prompt, [layer], threads=threads)[layer]

    def read_many(self, prompt: Sequence[int], layers: Sequence[int], *, threads: int) -> dict[int, Any]:
        """Each of `layers`' outputs at the prompt's last token, from one reading of the prompt."""
        import numpy as np

        if not layers:
            raise ValueError("no layer asked for")
        lib = self._lib
        names = {layer: f"l_out-{layer}".encode() for layer in layers}
        self._want, self._seen = {name: (ctypes.c_float * self.width)() for name in names.values()}, set()
        lib.llama_set_n_threads(self._ctx, threads, threads)
        lib.llama_memory_clear(lib.llama_get_memory(self._ctx), True)
        tokens = (lib.llama_token * len(prompt))(*prompt)  # one batch (the context's size): a ubatch at a time
        if lib.llama_decode(self._ctx, lib.llama_batch_get_one(tokens, len(prompt))) != 0:  # is run, the last kept
            raise ModelError("The model failed while reading a prompt for a layer's output.")
        missing = [layer for layer, name in names.items() if name not in self._seen]
        if missing:
            which = f"layer {missing[0]}" if len(missing) == 1 else f"layers {', '.join(map(str, missing))}"
            raise ModelError(f"The model has no {which} to read.")
        return {layer: np.frombuffer(self._want[name], dtype=np.float32).astype(np.float64)
                for layer, name in names.items()}

    def close(self) -> None:
        if self._ctx:
            self._lib.llama_free(self._ctx)
            self._ctx = None

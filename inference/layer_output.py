"""One layer's output at a prompt's last token, read from a loaded llama.cpp model (`LayerReader`).

For the probes that read a middle layer of the larger model (rag/probe.py, `LlamaCppModel.layer_state`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inference.errors import ModelError


class LayerReader:
    """A second llama.cpp context on a loaded model that keeps one layer's output at a prompt's last token.

    llama.cpp names each layer's output "l_out-N" in its graph and, given an eval callback, asks for each tensor
    whether the caller wants to see it once computed; only the layer asked for is taken (the graph is otherwise
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
        self._want = b""
        self._row = (ctypes.c_float * self.width)()
        self._seen = False
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
        if self._ggml.ggml_get_name(tensor) != self._want:
            return not ask  # not wanted: not kept for us, and the graph goes on
        if ask:
            return True
        rows = int(self._ggml.ggml_nelements(tensor)) // self.width  # the batch's tokens; the prompt's last is last
        self._ggml.ggml_backend_tensor_get(tensor, self._row, (rows - 1) * self.width * 4, self.width * 4)
        self._seen = True
        return True

    def read(self, prompt: Sequence[int], layer: int, *, threads: int) -> Any:
        import numpy as np

        lib = self._lib
        self._want, self._seen = f"l_out-{layer}".encode(), False
        lib.llama_set_n_threads(self._ctx, threads, threads)
        lib.llama_memory_clear(lib.llama_get_memory(self._ctx), True)
        tokens = (lib.llama_token * len(prompt))(*prompt)  # one batch (the context's size): a ubatch at a time
        if lib.llama_decode(self._ctx, lib.llama_batch_get_one(tokens, len(prompt))) != 0:  # is run, the last kept
            raise ModelError("The model failed while reading a prompt for a layer's output.")
        if not self._seen:
            raise ModelError(f"The model has no layer {layer} to read.")
        return np.frombuffer(self._row, dtype=np.float32).astype(np.float64)

    def close(self) -> None:
        if self._ctx:
            self._lib.llama_free(self._ctx)
            self._ctx = None

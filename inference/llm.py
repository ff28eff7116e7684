"""Chat models: the `ChatModel` protocol and its llama.cpp implementation (GGUF files)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from inference.errors import Cancelled, ModelError

log = logging.getLogger(__name__)

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}


class ChatModel(Protocol):
    """What answering needs from a chat model."""

    name: str
    n_ctx: int

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]: ...

    def count_tokens(self, text: str) -> int: ...


def default_threads() -> int:
    """Threads for generation: one per physical core, guessed as half the logical CPUs."""
    return max(1, (os.cpu_count() or 2) // 2)


class LlamaCppModel:
    """A GGUF chat model run in-process by llama.cpp (llama-cpp-python)."""

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        seed: int = 0,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError(
                "The llama.cpp runtime is not installed.", hint="pip install llama-cpp-python"
            ) from exc
        if not path.is_file():
            raise ModelError(f"Model file not found: {path}")
        threads = n_threads or default_threads()
        t0 = time.perf_counter()
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=max(threads, n_threads or (os.cpu_count() or 1)),
                n_gpu_layers=n_gpu_layers,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                f"Cannot load the model {path.name}: {exc}",
                hint="Check that the file is a complete GGUF model; a partial download cannot load.",
            ) from exc
        self.load_seconds = time.perf_counter() - t0
        self.path = path
        self.name = path.stem
        self.n_ctx = int(self._llm.n_ctx())
        self.metadata: dict[str, str] = dict(self._llm.metadata or {})
        if "tokenizer.chat_template" not in self.metadata and self._llm.chat_handler is None:
            # Without a template in the file llama-cpp-python silently uses llama-2's format,
            # which most small models answer badly; ChatML is the common modern default.
            self._llm.chat_format = "chatml"
        self.chat_format = "gguf-template" if "tokenizer.chat_template" in self.metadata else self._llm.chat_format

    def count_tokens(self, text: str) -> int:
        """Tokens the model's own tokenizer makes of a text (no BOS)."""
        return len(self._llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=True))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        """Yield the reply's text pieces as the model produces them; stops early when `cancel()` is true."""
        try:
            chunks: Iterator[Any] = self._llm.create_chat_completion(
                messages=list(messages), max_tokens=max_tokens, temperature=temperature, stream=True
            )
            for chunk in chunks:
                if cancel is not None and cancel():
                    chunks.close()  # type: ignore[attr-defined]
                    raise Cancelled("Answer stopped.")
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    yield piece
        except Cancelled:
            raise
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"The model failed while answering: {exc}") from exc

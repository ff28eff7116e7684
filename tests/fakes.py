"""Deterministic stand-ins for unit tests (the end-to-end tests use the real models)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from inference.chat import ChatModelDefaults
from inference.errors import Cancelled

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Bag-of-words vectors by hashing words into buckets: same words, similar vectors."""

    name = "hash-embedder"
    dim = 64
    max_tokens = 256

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in _WORD.findall(text.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
        return out


class ScriptedModel(ChatModelDefaults):
    """A chat model that replies with fixed text, one word per piece, and records its prompts. Given several
    replies, it gives them in turn, the last one from then on."""

    name = "scripted"

    def __init__(self, reply: str | Sequence[str], *, n_ctx: int = 4096) -> None:
        self.replies = [reply] if isinstance(reply, str) else list(reply)
        self.n_ctx = n_ctx
        self.prompts: list[list[dict[str, str]]] = []

    @property
    def reply(self) -> str:
        """The last scripted reply, the one it keeps giving (setting it replaces them all)."""
        return self.replies[-1]

    @reply.setter
    def reply(self, text: str) -> None:
        self.replies = [text]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        self.prompts.append(list(messages))
        reply = self.replies[0] if len(self.replies) == 1 else self.replies.pop(0)
        for i, word in enumerate(reply.split(" ")):
            if cancel is not None and cancel():
                raise Cancelled()
            yield word if i == 0 else " " + word


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that remembers every text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)

"""The chat-model protocol every answering engine implements, and the defaults of its optional parts.

One real implementation each: `inference.llm.LlamaCppModel` (a GGUF in this process) and
`inference.shared_llm.OpenAIChatModel` (the office's shared OpenAI-compatible server). Both derive from
`ChatModelDefaults`, so callers use every part without asking whether a model has it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}


class ChatModel(Protocol):
    """What answering needs from a chat model."""

    name: str
    n_ctx: int
    last_usage: dict[str, int]  # prompt, cached and completion tokens of the last request ({} if unknown)
    load_report: Any  # what the runtime really allocated (inference.offload.LoadReport), or None

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]: ...

    def count_tokens(self, text: str) -> int: ...

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """The prompt's size in tokens, chat template included."""
        ...

    def prefill(self, messages: Sequence[Message]) -> int:
        """Compute the fixed prefix of later prompts ahead of time; returns the tokens computed."""
        ...

    def reply_logprobs(self, messages: Sequence[Message], reply: str) -> list[float] | None:
        """Each token's log-probability of `reply` as the model's answer to `messages` (a reply it did not
        write: how likely the model finds it), or None when the engine cannot tell."""
        ...

    def close(self) -> None:
        """Free the model's memory."""
        ...


class ChatModelDefaults:
    """The optional parts of a ChatModel, for engines that have nothing better: derive from this."""

    last_usage: dict[str, int] = {}  # noqa: RUF012 - replaced per instance by engines that count
    load_report: Any = None

    def count_tokens(self, text: str) -> int:  # pragma: no cover - every engine has its own
        raise NotImplementedError

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """The contents plus a few tokens per message (an engine that can render its template counts exactly)."""
        return sum(self.count_tokens(m["content"]) + 8 for m in messages) + 8

    def prefill(self, messages: Sequence[Message]) -> int:
        """Nothing to compute ahead of time."""
        return 0

    def reply_logprobs(self, messages: Sequence[Message], reply: str) -> list[float] | None:
        """An engine that cannot read back its own probabilities (a shared server's chat API) cannot tell."""
        return None

    def close(self) -> None:
        """Nothing to free."""

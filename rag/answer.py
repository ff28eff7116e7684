"""Grounded answers: numbered passages in a prompt that fits the model's context, streamed, with sources."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference.llm import ChatModel, Message
from rag.store import Hit

SYSTEM_PROMPT = (
    "You are Hearth, an assistant for an office. Answer the question using only the numbered passages "
    "from the office's documents. Answer in one to three sentences, state the exact figures, names and "
    "numbers the passages give, and cite the passage you used in square brackets, like [1]. If the "
    "passages do not contain the answer, say that the documents do not say."
)
NOTHING_FOUND = "I could not find anything about this in your documents."

_CITATION = re.compile(r"\[(\d{1,2})\]")


@dataclass(frozen=True)
class Answer:
    """The reply, the passages it was grounded on (numbered from 1) and which of them it cited."""

    text: str
    sources: list[Hit]
    cited: list[int]  # 1-based numbers of the sources the reply cites
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The contract's ask object."""
        return {
            "answer": self.text,
            "sources": [dict(h.to_json(), cited=(i + 1) in self.cited) for i, h in enumerate(self.sources)],
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }


def passage_label(hit: Hit) -> str:
    """How a passage is introduced in the prompt: file name, page and heading."""
    parts = [Path(hit.source).name]
    if hit.page is not None:
        parts.append(f"page {hit.page}")
    if hit.heading:
        parts.append(hit.heading)
    return ", ".join(parts)


def build_messages(
    question: str,
    hits: Sequence[Hit],
    *,
    count_tokens: Callable[[str], int],
    budget: int,
    system: str = SYSTEM_PROMPT,
) -> tuple[list[Message], list[Hit]]:
    """The chat messages for a question; drops the least relevant passages until the prompt fits `budget`."""
    kept = list(hits)
    while True:
        passages = "\n\n".join(f"[{i}] ({passage_label(h)})\n{h.text.strip()}" for i, h in enumerate(kept, 1))
        user = f"Passages:\n\n{passages}\n\nQuestion: {question.strip()}" if kept else question.strip()
        messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        # A few tokens per message for the template's role markers.
        used = count_tokens(system) + count_tokens(user) + 16
        if used <= budget or not kept:
            return messages, kept
        if len(kept) == 1:
            # Even one passage is too long: keep its beginning, in proportion to what fits.
            h = kept[0]
            ratio = max(0.0, (budget - (used - count_tokens(h.text))) / max(1, count_tokens(h.text)))
            cut = int(len(h.text) * ratio * 0.9)
            if cut < 20:
                kept = []
            else:
                kept = [Hit(h.source, h.page, h.heading, h.score, h.text[:cut], h.start, h.start + cut, h.chunk_id)]
            continue
        kept.pop()


def cited_numbers(text: str, n_sources: int) -> list[int]:
    """The passage numbers a reply cites, in first-seen order, ignoring numbers no passage has."""
    seen: list[int] = []
    for m in _CITATION.finditer(text):
        n = int(m.group(1))
        if 1 <= n <= n_sources and n not in seen:
            seen.append(n)
    return seen


def strip_bad_citations(text: str, n_sources: int) -> str:
    """Remove [n] markers that point at passages that were not given."""
    return _CITATION.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= n_sources else "", text)


def answer(
    question: str,
    hits: Sequence[Hit],
    model: ChatModel,
    *,
    max_tokens: int = 320,
    on_token: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Answer:
    """Answer a question from retrieved passages, streaming pieces to `on_token`."""
    t0 = time.perf_counter()
    if not hits:
        if on_token is not None:
            on_token(NOTHING_FOUND)
        return Answer(NOTHING_FOUND, [], [], {"total": time.perf_counter() - t0})
    budget = model.n_ctx - max_tokens
    messages, used = build_messages(question, hits, count_tokens=model.count_tokens, budget=budget)
    t_prompt = time.perf_counter()
    pieces: list[str] = []
    first: float | None = None
    for piece in model.stream(messages, max_tokens=max_tokens, cancel=cancel):
        if first is None:
            first = time.perf_counter()
        pieces.append(piece)
        if on_token is not None:
            on_token(piece)
    end = time.perf_counter()
    text = strip_bad_citations("".join(pieces).strip(), len(used))
    timings = {
        "prompt_build": t_prompt - t0,
        "first_token": (first or end) - t_prompt,
        "generation": end - t_prompt,
        "total": end - t0,
    }
    return Answer(text, used, cited_numbers(text, len(used)), timings)

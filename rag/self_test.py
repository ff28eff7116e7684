"""Self-test of a workspace: the local model writes a question for sampled passages; does retrieval find them?"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inference.errors import Cancelled

if TYPE_CHECKING:
    from inference.chat import ChatModel
    from rag.lexical import LexicalRow
    from rag.store import Hit

QUESTION_PROMPT = (
    "Read the passage from an office document and write one short question that it answers. "
    "Use your own words where you can. Reply with the question only."
)


@dataclass(frozen=True)
class SelfTestItem:
    """One sampled passage, the question written for it, and where retrieval ranked it (None: not found)."""

    source: str
    page: int | None
    heading: str | None
    question: str
    rank: int | None


@dataclass
class SelfTestReport:
    """How often retrieval finds the passage a question was written from."""

    k: int
    items: list[SelfTestItem] = field(default_factory=list)

    def rate(self, within: int) -> float:
        """Share of questions whose passage ranked within the first `within` results."""
        found = [i for i in self.items if i.rank is not None and i.rank <= within]
        return len(found) / len(self.items) if self.items else 0.0

    @property
    def mrr(self) -> float:
        """Mean reciprocal rank (0 for passages not found in the top k)."""
        return sum(1.0 / i.rank for i in self.items if i.rank) / len(self.items) if self.items else 0.0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary with every item."""
        return {
            "n": len(self.items),
            "k": self.k,
            "hit@1": round(self.rate(1), 4),
            f"hit@{self.k}": round(self.rate(self.k), 4),
            "mrr": round(self.mrr, 4),
            "items": [i.__dict__ for i in self.items],
        }


def _same_passage(hit: Hit, source: str, start: int, end: int) -> bool:
    # Overlapping chunks share text, so a hit counts when it overlaps the sampled passage.
    return hit.source == source and hit.start < end and start < hit.end


def self_test(
    rows: Sequence[LexicalRow],
    *,
    search: Callable[[str], list[Hit]],
    model: Callable[[], ChatModel],
    n: int = 20,
    k: int = 5,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> SelfTestReport:
    """Sample `n` of the finished passages `rows`, have the chat model (loaded by `model()` when needed) write
    a question for each, and rank each question's passage with `search` (k passages)."""
    rows = [r for r in rows if len(r.text.split()) >= 12]
    sample = random.Random(seed).sample(rows, min(n, len(rows)))
    report = SelfTestReport(k=k)
    chat = model() if sample else None
    for i, row in enumerate(sample):
        if cancel is not None and cancel():
            raise Cancelled("Self-test stopped.")
        if progress is not None:
            progress(i, len(sample))
        messages = [
            {"role": "system", "content": QUESTION_PROMPT},
            {"role": "user", "content": row.text[:1500]},
        ]
        text = "".join(chat.stream(messages, max_tokens=60, cancel=cancel)).strip()  # type: ignore[union-attr]
        question = (text.splitlines() or [""])[0].strip().strip('"') or row.text[:80]
        hits = search(question)
        rank = next((j for j, h in enumerate(hits, 1) if _same_passage(h, row.source, row.start, row.end)), None)
        report.items.append(SelfTestItem(row.source, row.page, row.heading, question, rank))
    if progress is not None:
        progress(len(sample), len(sample))
    return report

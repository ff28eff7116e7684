"""What an answer's check leaves: the answer as shown, each sentence's support, the supporting quotes, and
whether the documents seemed not to answer at all (with why). Made by rag.quotes.align, stored with a
conversation's turn, read back by the front ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.grounding import Decision, Signals


@dataclass(frozen=True)
class Quote:
    """A sentence of a source document that supports the answer, with its exact place."""

    source: str
    page: int | None
    heading: str | None
    text: str
    start: int  # character offsets in the document's full text, as the loaders produce it
    end: int
    passage: int  # 1-based number of the passage it came from
    score: float

    def to_json(self) -> dict[str, Any]:
        """The contract's quote object."""
        return {
            "source": self.source,
            "page": self.page,
            "heading": self.heading,
            "text": self.text,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True)
class SentenceSupport:
    """One sentence of the answer, and the quote (index into quotes) that supports it, if any."""

    text: str
    support: int | None
    citation: int | None  # 1-based passage number from the alignment

    def to_json(self) -> dict[str, Any]:
        """JSON form: text, support, citation."""
        return {"text": self.text, "support": self.support, "citation": self.citation}


@dataclass(frozen=True)
class Support:
    """The answer as shown (citations from alignment), its sentences' support, and the quotes."""

    text: str
    sentences: list[SentenceSupport] = field(default_factory=list)
    quotes: list[Quote] = field(default_factory=list)
    fallback: bool = False  # the model's reply was replaced by the quotes themselves
    # The documents do not seem to answer the question: `text` says so, the quotes are the closest lines, and
    # the model's reply is its unsupported guess (shown on request). See `abstains`.
    abstained: bool = False
    why: str | None = None  # when abstained: one sentence saying why (rag.abstain.why_withheld)
    # What the grounding policy weighed and decided (rag/grounding.py), when it was applied: for the front ends'
    # notes ("the lines stand in", "the checker contradicted the reply") and bench/; not stored.
    signals: Signals | None = field(default=None, compare=False)
    decision: Decision | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """Everything, quotes with their passage number and score (to store it and read it back)."""
        return {
            "text": self.text,
            "sentences": [s.to_json() for s in self.sentences],
            "quotes": [dict(q.to_json(), passage=q.passage, score=q.score) for q in self.quotes],
            "fallback": self.fallback,
            "abstained": self.abstained,
            "why": self.why,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Support:
        """The Support that `to_json` wrote."""
        return cls(
            str(data.get("text", "")),
            [SentenceSupport(str(s["text"]), s.get("support"), s.get("citation")) for s in data.get("sentences", [])],
            [
                Quote(str(q["source"]), q.get("page"), q.get("heading"), str(q["text"]), int(q["start"]),
                      int(q["end"]), int(q.get("passage", 0)), float(q.get("score", 0.0)))
                for q in data.get("quotes", [])
            ],
            bool(data.get("fallback", False)),
            bool(data.get("abstained", False)),
            data.get("why"),
        )

"""Which embedder measures a reply against its passages: the grounding policy's similarities mean something only
on the scale its bounds were chosen on, the default embedder's.

A workspace may search with another embedder (a user's bge, e5 or multilingual model). Its cosine similarities sit
on another scale: lines of different office notes come to 0.67 on average with a shallower model derived from the
default one, against 0.23 with the default, so bounds like 0.53 mean nothing there. Carrying a bound over
through the workspace's background (how close its unrelated lines come) failed: a closeness bound chosen on the
default's tuning offices, mapped that way, withheld all 160 answerable held-out questions, and measured against
each question's own similarities to every line, 148 (`python -m bench.other_embedder DEST --study`,
docs/evaluation.md "Another embedder"). So a reply is measured with the default embedder whatever the workspace
searched with: it ships with Hearth, reads the question and the few passages given to the model in well under a
second, and its bounds hold as measured. Where it does not read the question's or the passages' language, the
workspace's own embedder aligns the reply (its quotes and citations) and the policy stays off, as it does for the
default embedder on a language it does not read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.abstain import calibrated
from rag.retrieval import RetrievalOptions, reads

if TYPE_CHECKING:
    from inference.embedder import Embedder
    from rag.store import Hit

READ_SAMPLE = 600  # characters of a passage enough to tell whether an embedder reads its language


def reads_all(embedder: Embedder, question: str, hits: Sequence[Hit]) -> bool:
    """Whether the embedder reads the question and every passage (an English-only model is far from everything
    in a language it does not read)."""
    limit = RetrievalOptions.unread_tokens_per_word
    return reads(embedder, question, limit) and all(reads(embedder, h.text[:READ_SAMPLE], limit) for h in hits)


def measuring(searched_with: Embedder, default: Callable[[], Embedder], question: str,
              hits: Sequence[Hit]) -> tuple[Embedder, list[Hit]]:
    """The embedder that aligns a reply with `hits` and the hits as it scores them: the workspace's own where
    the policy's bounds hold for it, else the default one (loaded by `default`) where it reads the question and
    the passages, the hits' scores then its cosine similarity to the question; else the workspace's own."""
    if calibrated(searched_with.name):
        return searched_with, list(hits)
    ruler = default()
    if not hits or not reads_all(ruler, question, hits):
        return searched_with, list(hits)
    q = ruler.embed_query([question])[0]
    vecs = ruler.embed([h.text for h in hits])
    return ruler, [replace(h, score=float(v @ q)) for h, v in zip(hits, vecs, strict=True)]

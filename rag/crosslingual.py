"""Questions in one language about documents in another: the query translated by the chat model, searches fused.

An English question about Russian memos shares no word with them, and an English-only embedder cannot
bridge the languages. When a workspace's main languages (by its passages, see `LexicalIndex.languages`)
include one the question is not written in, the chat model translates the query into it; each query is
searched, and the rankings are fused by reciprocal rank. The query searched reads "question / translation".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inference.chat import ChatModel
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import SAMPLES, detect
from rag.language import name as language_name
from rag.retrieval import RetrievalOptions, reads
from rag.store import Hit

if TYPE_CHECKING:
    from inference.embedder import Embedder

MAIN_SHARE = 0.3  # a language holding at least this share of a workspace's passages is one of its main ones
_RRF_K = 5  # as the hybrid fusion's constant: the top ranks decide
_MAX_TOKENS = 64  # a search query's translation is short; a model that rambles is cut


@dataclass(frozen=True)
class Searched:
    """The passages found for a question across languages, and the query that was searched."""

    hits: list[Hit]
    query: str


def main_languages(passages: Mapping[str, int], *, share: float = MAIN_SHARE) -> list[str]:
    """A workspace's main languages (ISO codes), most passages first, from its passages per language."""
    total = sum(passages.values())
    if not total:
        return []
    return [code for code, n in sorted(passages.items(), key=lambda item: (-item[1], item[0])) if n >= share * total]


def translate(query: str, language: str, model: ChatModel, *, cancel: Callable[[], bool] | None = None) -> str | None:
    """The query in another language by the chat model, or None when it gave nothing usable."""
    # One user message: with the task in a system prompt, the default (coder) model answered the question instead
    # of translating it, for 20 of 40 questions of bench/russian.py.
    messages = [{"role": "user", "content": f"Translate into {language_name(language)}: {query.strip()}"}]
    text = "".join(model.stream(messages, max_tokens=_MAX_TOKENS, cancel=cancel)).strip()
    line = next((ln.strip().strip("\"'«»“”") for ln in text.splitlines() if ln.strip()), "")
    # A reply in the wrong language, or the query echoed, would only repeat the search already made.
    if not line or line.casefold() == query.strip().casefold() or detect(line) != language:
        return None
    return line


def search_across_languages(
    query: str,
    *,
    search: Callable[[str], Sequence[Hit]],
    passages: Callable[[], Mapping[str, int]],
    model: Callable[[], ChatModel],
    k: int,
    cancel: Callable[[], bool] | None = None,
) -> Searched:
    """Search the query, and its translations into the workspace's main languages it is not written in."""
    first = list(search(query))
    asked = detect(query)
    others = [code for code in main_languages(passages()) if code != asked]
    if not others:
        return Searched(first, query)
    rankings, queries = [first], [query]
    for code in others:
        translated = translate(query, code, model(), cancel=cancel)
        if translated is not None:
            rankings.append(list(search(translated)))
            queries.append(translated)
    return Searched(fuse_rankings(rankings, k), " / ".join(queries))


def fuse_rankings(rankings: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """The k best passages of several rankings by reciprocal-rank fusion; a passage keeps its best score."""
    score: dict[str, float] = {}
    best: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            score[hit.chunk_id] = score.get(hit.chunk_id, 0.0) + 1.0 / (_RRF_K + rank + 1)
            if hit.chunk_id not in best or hit.score > best[hit.chunk_id].score:
                best[hit.chunk_id] = hit
    order = sorted(score, key=lambda cid: (-score[cid], cid))
    return [best[cid] for cid in order[:k]]


@dataclass(frozen=True)
class LanguageNotice:
    """Most of a workspace is in a language its embedding model does not read."""

    language: str  # ISO 639-1 code of the workspace's main language
    passages: int  # the workspace's passages in it
    total: int  # the workspace's passages
    embedder: str

    @property
    def language_name(self) -> str:
        """The language's English name."""
        return language_name(self.language)

    @property
    def text(self) -> str:
        """What the library says, with the numbers."""
        lang = self.language_name
        return (f"{self.passages:,} of the {self.total:,} passages here are in {lang}, which the embedding model "
                f"{self.embedder} does not read: questions in {lang} are matched by their words only, not by "
                "their meaning.")

    @property
    def hint(self) -> str:
        """How to switch to a multilingual embedding model."""
        return ("A multilingual model (multilingual-e5, bge-m3: a folder with model.onnx and tokenizer.json) "
                "would read them: `hearth embedder add FOLDER --name NAME`, then `hearth embedder use NAME "
                "--workspace WORKSPACE` embeds the workspace again, with progress.")


def language_notice(passages: Mapping[str, int], embedder: Embedder) -> LanguageNotice | None:
    """A notice when most of a workspace is not in English and its embedder cannot read its main language."""
    total = sum(passages.values())
    others = {code: n for code, n in passages.items() if code != DEFAULT_LANGUAGE and code in SAMPLES}
    if not others or 2 * sum(others.values()) <= total:
        return None
    main = max(others, key=lambda code: (others[code], code))
    if reads(embedder, SAMPLES[main], RetrievalOptions.unread_tokens_per_word):
        return None
    return LanguageNotice(main, others[main], total, embedder.name)

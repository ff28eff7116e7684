"""Retrieval: dense and keyword rankings fused, optionally reranked, diversified across sources."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from inference.errors import UsageError
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import detect
from rag.lexical import query_terms
from rag.lines import names_heading, split_units
from rag.store import DocumentIndex, Hit

if TYPE_CHECKING:
    import numpy as np

    from inference.embedder import Embedder

MODES = ("hybrid", "dense", "lexical")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RetrievalOptions:
    """How passages are found and ranked; the fusion weights were chosen on bench/retrieval.py's dev set."""

    mode: str = "hybrid"  # hybrid | dense | lexical
    candidates: int = 40  # taken from each ranking before fusion
    dense_weight: float = 1.0
    lexical_weight: float = 2.0  # keywords weigh double: office questions often quote exact terms
    rrf_k: int = 5  # reciprocal-rank fusion constant: small keeps the top ranks decisive
    # A passage's own similarity to the question, times this, is added to its fused score: ranks alone put a
    # passage only the keyword ranking found (similarity 0.2) above the one both rankings place high (0.47).
    similarity_weight: float = 0.2  # the most that costs no follow-up (README "The first passage")
    # With `lines`, the best line of each of the first `line_candidates` passages, its similarity to the
    # question times this, is added too: a passage's vector blurs the one sentence that answers among the
    # others it holds. It embeds some 70 lines a question (about 0.25 s on 2 CPU cores, whatever the index's size).
    line_weight: float = 0.5  # chosen on bench/retrieval.py's dev set and the evaluation's tuning half
    line_candidates: int = 10
    # Whether `Hearth.search` (the command line's and MCP's search) weighs the lines when its caller does not
    # say: better first passages on every question set (README "The line that answers"), for that 0.25 s.
    search_lines: bool = True
    # With `lines` and a chat model that can read back its probabilities, the first `likely_candidates` passages
    # are ordered again by how likely the model finds the question after reading each (query likelihood: the
    # log-probability of the question's tokens, times `likely_weight`, added to the score). It reads each
    # passage once (about 1.5 s a passage on 2 CPU cores, a fraction of a second on a GPU).
    likely_weight: float = 0.03  # chosen on bench/retrieval.py's dev set and the evaluation's tuning half
    likely_candidates: int = 5
    max_per_source: int = 3  # no answer built from one file when other files match too
    max_per_section: int = 2  # ... nor from one page or one section
    # The dense ranking's weight is multiplied by this for a question the embedder cannot read: in another
    # language than English, cut by its tokenizer into more than `unread_tokens_per_word` pieces a word
    # (all-MiniLM-L6-v2 cuts a Russian word into 5-8 pieces, its vectors then match spelling, not meaning).
    unread_dense_weight: float = 0.0
    unread_tokens_per_word: float = 3.0


class PairScorer(Protocol):
    """Scores passages against a query jointly (a cross-encoder)."""

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]: ...


class QuestionScorer(Protocol):
    """How likely a question is after each passage (rag.likely.QuestionLikelihood), or None if it cannot tell."""

    def score(self, question: str, hits: Sequence[Hit]) -> Sequence[float] | None: ...


class Reranker(Protocol):
    """Reorders candidate passages for a query (e.g. a cross-encoder)."""

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]: ...


class CrossEncoderReranker:
    """A `Reranker` over any pair scorer (e.g. inference.reranker.OnnxCrossEncoder)."""

    def __init__(self, scorer: PairScorer, *, top: int = 30) -> None:
        self.scorer = scorer
        self.top = top  # only the best fused candidates are rescored: cross-encoders are slow

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """Rescore the first `top` hits jointly with the query; the rest keep their order after them."""
        head, tail = list(hits[: self.top]), list(hits[self.top :])
        if not head:
            return tail
        scores = self.scorer.score(query, [h.text for h in head])
        order = sorted(range(len(head)), key=lambda i: -float(scores[i]))
        return [head[i] for i in order] + tail


def retrieve(
    query: str,
    *,
    workspace: str,
    embedder: Embedder,
    store: DocumentIndex,
    done: set[str],
    k: int,
    options: RetrievalOptions = RetrievalOptions(),
    reranker: Reranker | None = None,
    lines: bool = False,
    likely: QuestionScorer | None = None,
) -> list[Hit]:
    """The k best passages of fully indexed documents for a query, best first; with `lines`, those of the
    first candidates whose best line is closest to the query move up (see RetrievalOptions.line_weight),
    and with `likely` too, those after which the question is likeliest (RetrievalOptions.likely_weight)."""
    if options.mode not in MODES:
        raise UsageError(f"Unknown search mode {options.mode!r}; use one of {', '.join(MODES)}.")
    n = max(options.candidates, k * 3)
    if options.mode == "lexical":
        hits = [h for h in store.lexical_query(workspace, query, k=n) if h.source in done]
        return _diversify(hits, k, options)
    vector = embedder.embed([query])[0]
    dense = [h for h in store.query(workspace, vector, k=n) if h.source in done]
    if options.mode == "dense":
        return _diversify(dense, k, options)
    lexical = [h for h in store.lexical_query(workspace, query, k=n) if h.source in done]
    if not reads(embedder, query, options.unread_tokens_per_word):
        options = replace(options, dense_weight=options.dense_weight * options.unread_dense_weight)
    fused = fuse_scores(dense, lexical, options)
    # Passages only the keyword ranking found get their real similarity, so the relevance floor applies to all.
    by_id = {h.chunk_id: h for h in dense}
    missing = [cid for cid in fused if cid not in by_id]
    by_id.update(store.hits_by_id(workspace, missing, vector))
    # The similarity counts as much as the dense ranking does (not at all for a question the embedder cannot read).
    blend = options.similarity_weight * options.dense_weight
    score = {cid: fused[cid] + blend * by_id[cid].score for cid in fused if cid in by_id}
    hits = [by_id[cid] for cid in sorted(score, key=lambda cid: -score[cid])]
    if lines and blend and options.line_weight:
        head, tail = hits[: options.line_candidates], hits[options.line_candidates :]
        best = best_lines(vector, head, getattr(embedder, "passages", embedder))  # lines are passages' words
        weight = options.line_weight * options.dense_weight
        for h in head:
            score[h.chunk_id] += weight * best[h.chunk_id]
        hits = sorted(head, key=lambda h: -score[h.chunk_id]) + tail
        if likely is not None and options.likely_weight and options.likely_candidates:
            hits = _likeliest_first(query, hits, score, likely, options)
    if reranker is not None:
        hits = reranker.rerank(query, hits)
    return _diversify(hits, k, options)


def _likeliest_first(query: str, hits: list[Hit], score: dict[str, float], likely: QuestionScorer,
                     options: RetrievalOptions) -> list[Hit]:
    """The first candidates ordered again with the question's likelihood after each added to their score."""
    head, tail = hits[: options.likely_candidates], hits[options.likely_candidates :]
    found = likely.score(query, head)
    if found is None:
        return hits
    total = {h.chunk_id: score[h.chunk_id] + options.likely_weight * float(v) for h, v in zip(head, found, strict=True)}
    return sorted(head, key=lambda h: -total[h.chunk_id]) + tail


def best_lines(query_vector: np.ndarray, hits: Sequence[Hit], embedder: Embedder) -> dict[str, float]:
    """Each hit's best similarity to the query among its lines of three words or more (one batch for all);
    a hit without such a line keeps its own similarity. A line is read under its passage's heading path, as
    the passage is embedded (a project sheet's "The approved budget is …" says whose budget only there); a
    line that only repeats a heading is no answer: a question naming a document would find its title first."""
    owners: list[str] = []
    texts: list[str] = []
    for h in hits:
        for s, e in split_units(h.text):
            if len(_WORD.findall(h.text, s, e)) >= 3 and not names_heading(h.text[s:e], h.heading):
                owners.append(h.chunk_id)
                texts.append(f"{h.heading}\n{h.text[s:e]}" if h.heading else h.text[s:e])
    best = {h.chunk_id: h.score for h in hits}
    if texts:
        seen: set[str] = set()
        for cid, sim in zip(owners, embedder.embed(texts) @ query_vector, strict=True):
            best[cid] = max(best[cid], float(sim)) if cid in seen else float(sim)
            seen.add(cid)
    return best


def reads(embedder: Embedder, text: str, tokens_per_word: float) -> bool:
    """Whether an embedder reads a query's language: English, or few enough tokenizer pieces per word."""
    if detect(text) == DEFAULT_LANGUAGE:
        return True
    words = len(_WORD.findall(text))
    pieces = embedder.count_tokens(text) - embedder.count_tokens("")  # without the model's own markers
    return words == 0 or pieces <= tokens_per_word * words


def fuse(dense: Sequence[Hit], lexical: Sequence[Hit], options: RetrievalOptions) -> list[str]:
    """Chunk ids ordered by weighted reciprocal-rank fusion of the two rankings."""
    return list(fuse_scores(dense, lexical, options))


def fuse_scores(dense: Sequence[Hit], lexical: Sequence[Hit], options: RetrievalOptions) -> dict[str, float]:
    """Each chunk id's weighted reciprocal-rank fusion score over the two rankings, best first."""
    score: dict[str, float] = {}
    for weight, ranking in ((options.dense_weight, dense), (options.lexical_weight, lexical)):
        for rank, h in enumerate(ranking):
            score[h.chunk_id] = score.get(h.chunk_id, 0.0) + weight / (options.rrf_k + rank + 1)
    return dict(sorted(score.items(), key=lambda item: -item[1]))


def _diversify(hits: Sequence[Hit], k: int, options: RetrievalOptions) -> list[Hit]:
    """Take hits in order, capping any one file and any one page/section while others remain."""
    chosen: list[Hit] = []
    held: list[Hit] = []
    per_source: dict[str, int] = {}
    per_section: dict[tuple[str, int | None, str | None], int] = {}
    for h in hits:
        sec = (h.source, h.page, h.heading)
        if per_source.get(h.source, 0) >= options.max_per_source or per_section.get(sec, 0) >= options.max_per_section:
            held.append(h)
            continue
        chosen.append(h)
        per_source[h.source] = per_source.get(h.source, 0) + 1
        per_section[sec] = per_section.get(sec, 0) + 1
        if len(chosen) == k:
            return chosen
    # Not enough variety: fill up with the best of what the caps held back, keeping rank order.
    rank = {h.chunk_id: i for i, h in enumerate(hits)}
    return sorted(chosen + held[: k - len(chosen)], key=lambda h: rank[h.chunk_id])


_FOLLOW_UP = re.compile(
    r"^\s*(and|but|or|also|what about|how about|and what about|same for|what if|"
    r"и|а|а как|а что|а если|и для|тогда)\b",
    re.IGNORECASE,
)


def contextualize(question: str, history: Sequence[str]) -> str:
    """The query to retrieve with: a follow-up ("and for contractors?") is joined to the previous question."""
    if not history:
        return question
    if _FOLLOW_UP.match(question) or len(query_terms(question)) <= 2:
        return f"{history[-1].strip()} {question.strip()}"
    return question

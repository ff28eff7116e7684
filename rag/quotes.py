"""Supporting quotes: align an answer's sentences with the passages' sentences, without asking the model.

Each answer sentence is compared with every sentence (or table row, or list item) of the passages it was
given, by embedding similarity plus word overlap (numbers count double: a figure is what a user checks).
A confident match gives the sentence its citation and a quote with exact offsets in the source document;
a sentence without one is flagged as not found in the documents. Three of the four quotes are kept for the
lines that best answer the question itself (by meaning, rare words shared, and passage rank), so that a
reply that missed or garbled the fact can still be checked against the text; the first two of them come with
the sentences just before and after them in their paragraph, since the line closest to a question often only
restates it. When the model's reply is empty, a refusal, or unsupported while a passage matched the
question well, the best quotes stand in for it; when the passages do not seem to answer the question at all
(the grounding policy, rag/grounding.py, decides), Hearth says so and quotes the closest lines instead.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.abstain import (
    REFUSAL, WORD_PREFIX, YES_NO_VERBS, abstain_text, calibrated, missing_share, missing_words,
    says_nothing, why_withheld,
)
from rag.confirm import DEFAULT_BOUNDS, QUESTION_LINES
from rag.grounding import STANDS, Decision, GroundingPolicy, Signals, decide, measure, off_kind, with_verdicts
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import detect, question_stems
from rag.lines import names_heading, split_units
from rag.lexical import query_terms
from rag.retrieval import RetrievalOptions, reads
from rag.ruler import reads_all
from rag.store import Hit
from rag.support import Quote, SentenceSupport, Support

if TYPE_CHECKING:
    from inference.embedder import Embedder

_CITE = re.compile(r"\s*\[(\d{1,2})\]")
# A sentence whose answer is a citation alone ("The address of the association is [1].", "fetch it from [2]."):
# it names where the answer would be and states none of it.
_EMPTY_SLOT = re.compile(
    r"(?:\b(?:is|are|was|were|be|been|on|in|at|from|by|to|of|as|with|via|for|into|the|a|an|called|named)|:)"
    r"\s*(?:\[\d{1,2}\]\s*)+[.!]?\s*$",
    re.IGNORECASE,
)
FALLBACK_PREFIX = "The documents say: "


@dataclass(frozen=True)
class _Unit:
    passage: int
    text: str
    start: int
    end: int


def _terms(text: str, language: str = DEFAULT_LANGUAGE) -> set[str]:
    # A question in another language has its words compared by their Snowball stems (its word forms vary
    # more than English's); an English one exactly as before.
    return set(query_terms(text) if language == DEFAULT_LANGUAGE else question_stems(text, language))


_PRONOUN = re.compile(r"(?:It|Its|This|These|That|Those|They|Their|He|She|His|Her)\b")
_LEAD_IN_SPAN = 240  # characters a lead-in line may take along after its colon
_CHUNK_GAP = 4  # characters between two passages that follow each other in a document (a paragraph break)
_CONTEXT_SPAN = 480  # longest quote made by joining a sentence that starts with a pronoun to the one before
_WINDOW_SPAN = 600  # longest quote made of a line that answers the question and the sentences around it

_NEAR_LINES = 2  # lines closest to the question that may say the "no" a reply to a yes/no question gives
_STRIP = "`\"'()[]{},;:.!?…“”‘’"
# A line break inside a sentence (the next line starts lower-case, a path, a bracket) is a PDF soft wrap.
_SOFT_BREAK = re.compile(r"(?<=[^\s.!?:;…])\n(?=[a-z(\[\"'“‘/~$-])")


def _exact_tokens(text: str) -> set[str]:
    """Code-like tokens compared whole: numbers, paths, options, addresses, names with - _ . / @ = :."""
    out = set()
    for tok in text.split():
        t = tok.strip(_STRIP).rstrip("/").lower()
        if t.isdigit() or (
            len(t) >= 2
            and (any(c.isdigit() for c in t) or any(c in t for c in "/@_.=:") or t.startswith("-") or "-" in t[1:])
        ):
            out.add(t)
    return out


def _unwrapped(hit: Hit) -> str:
    """The passage's text with PDF soft wraps read as spaces (same length, so offsets hold)."""
    return _SOFT_BREAK.sub(" ", hit.text) if hit.page is not None else hit.text


def _passage_units(hit: Hit) -> list[tuple[int, int]]:
    """Sentence spans of a passage; PDF soft wraps are read as spaces (same length, so offsets hold).

    A line that ends with a colon introduces what follows ("…install it with:" then the command), so it
    is one unit with the next line: the quote then shows the command together with what it is for.
    """
    text = _unwrapped(hit)
    spans = split_units(text)
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        s, e = spans[i]
        if text[e - 1] == ":" and i + 1 < len(spans) and spans[i + 1][1] - e <= _LEAD_IN_SPAN:
            e = spans[i + 1][1]
            i += 1
        while text[e - 1] == "\\" and i + 1 < len(spans):  # a shell command continued on the next line
            e = spans[i + 1][1]
            i += 1
        if out and _PRONOUN.match(text, s) and e - out[-1][0] <= _CONTEXT_SPAN and (
            "\n" not in text[out[-1][1] : s] or names_heading(text[out[-1][0] : out[-1][1]], hit.heading)
        ):
            # "It was the first…" needs the sentence before it to say what "it" is; "This document defines…"
            # opening a section needs the section's title.
            s = out[-1][0]
        out.append((s, e))
        i += 1
    return out


def _units(hits: Sequence[Hit]) -> list[_Unit]:
    """The passages' lines that are quoted and matched against (three words or more), numbered from passage 1."""
    return [
        _Unit(i, h.text[s:e], h.start + s, h.start + e)
        for i, h in enumerate(hits, 1)
        for s, e in _passage_units(h)
        if len(re.findall(r"\w+", h.text[s:e])) >= 3
    ]


def _overlap(claim: set[str], unit: set[str]) -> float:
    """Share of the claim's content words found in the unit; numbers weigh double."""
    if not claim:
        return 0.0
    weight = {t: (2.0 if any(c.isdigit() for c in t) else 1.0) for t in claim}
    return sum(w for t, w in weight.items() if t in unit) / sum(weight.values())


_FRAME = frozenset(
    "according based information provided passage passages document documents text context states stated "
    "mentioned say says given located situated".split()
)  # words a reply frames its answer with ("The basement archive is located in the basement archive.")


# A question answered by yes or no ("Can I…?", "Is it OK to…?"), or by choosing ("…, the Oak room or the Birch
# room?"): its answer may add no word to it.
_IN_ITS_OWN_WORDS = re.compile(rf"(?:^|[.!?]\s)\W*(?:{YES_NO_VERBS})\b|\bor\b", re.IGNORECASE)


def _added(text: str, question: str, language: str) -> list[str]:
    """The words a reply sentence adds to the question: those the question does not already hold (in a word form
    of the same first letters), nor the reply's framing ("according to the passage")."""
    asked = {t[:WORD_PREFIX] for t in _terms(question, language)}
    return [t for t in _terms(text, language) if t not in _FRAME and t[:WORD_PREFIX] not in asked]


def restates(sentences: Sequence[str], question: str, language: str = DEFAULT_LANGUAGE) -> bool:
    """Whether a reply only restates the question, adding no word to it ("The domain registrar for falcot.com is
    falcot.com.", "Heinrich Vogel looks after the archive when Heinrich Vogel is away."): it answers nothing. Not
    for a question answered by yes or no or by a choice it names, nor a reply of no sentence."""
    return bool(sentences) and not _IN_ITS_OWN_WORDS.search(question) and not any(
        _added(t, question, language) for t in sentences)


def _answer_lines(sentences: Sequence[str], question: str, unit_terms: Sequence[set[str]], language: str) -> list[int]:
    """The unit each reply sentence takes its new words from (`_added`). A sentence that only restates the
    question has none."""
    out = []
    for text in sentences:
        new = _added(text, question, language)
        held = [sum(t in terms for t in new) for terms in unit_terms]
        if new and max(held, default=0):
            out.append(int(np.argmax(held)))
    return out


@dataclass(frozen=True)
class _Aligned:
    """A reply aligned with its passages' lines: each sentence and the line that bears it out, if any."""

    question: str
    clean: str  # the reply without its citations
    sentences: list[str]
    units: list[_Unit]
    unit_vecs: np.ndarray
    q_vec: np.ndarray
    language: str
    readable: bool  # the embedder reads the question (else it is matched by its words alone)
    unit_terms: list[set[str]]
    picks: list[tuple[str, int | None]]  # every sentence, and the unit that bears it out
    said: list[tuple[str, np.ndarray]]  # the sentences that claim something, with their vectors
    chosen: dict[int, float]  # the units that bear a sentence out, and their best score

    def question_scores(self) -> np.ndarray:
        """How well each unit answers the question itself (`_question_scores`)."""
        return _question_scores(self.question, self.units, self.unit_vecs, self.unit_terms, self.q_vec,
                                meaning=1.0 if self.readable else 0.0, language=self.language)

    def closeness(self) -> np.ndarray:
        """Each unit's cosine similarity to the question."""
        return self.unit_vecs @ self.q_vec


def align(
    answer: str,
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder,
    max_quotes: int = 4,  # chosen on the evaluation's tuning half (README "Answers you can check")
    threshold: float = 0.55,  # chosen on bench/quotes.py; see README "Answers you can check"
    rescue: float = 0.45,  # a weaker match still counts when the unit holds all the sentence's code-like tokens
    strong_passage: float = 0.45,  # a passage scoring this stands in for a reply borne out nowhere
    question_quotes: int = 3,  # quotes kept for the lines that best answer the question itself
    in_context: int = 2,  # of those, how many are quoted with the sentences around them
    rarity: Mapping[str, float] | None = None,  # the question's words and their weights (rag.abstain.rarity)
    check: Callable[[str, Sequence[tuple[str, str]]], float | None] | None = None,  # rag.confirm.AnswerCheck
    not_found: str = "balanced",  # NOT_FOUND_MODES: "off" never withholds, "strict" more than "balanced"
    policy: GroundingPolicy | None = None,  # None: the default one, read with `check`'s bounds
) -> Support:
    """Supporting quotes and per-sentence citations for an answer drawn from `hits` (numbered from 1).

    With `rarity` (the question's words weighted by how rare they are in the index), the grounding policy
    (rag/grounding.py) decides whether the reply stands, is withheld ("not found", quoting the lines closest to
    the question) or gives way to those lines; without, it never is withheld. `check` is the checking model
    the policy may ask (rag/confirm.py; English questions only). `not_found` is the user's strictness."""
    a = _aligned(answer, question, hits, embedder=embedder, threshold=threshold, rescue=rescue)
    if a is None:
        clean = _CITE.sub("", answer).strip()
        return Support(clean, [SentenceSupport(t, None, None) for t in (clean[s:e] for s, e in split_units(clean))])
    policy = policy or GroundingPolicy(check=getattr(check, "bounds", DEFAULT_BOUNDS))
    silent = says_nothing(a.clean, [PurePath(h.source).name for h in hits]) or (bool(a.picks) and not a.said)
    refusal = silent or REFUSAL.match(a.clean) is not None
    unborne_strong = not a.chosen and max((h.score for h in hits), default=0.0) >= strong_passage
    signals = None
    if rarity is not None and _weighable(a, hits, embedder):
        signals = _signals(a, hits, rarity, check, silent=silent, stands_in=refusal, unborne_strong=unborne_strong)
    decision = decide(signals, policy, not_found) if signals is not None else STANDS
    if decision.withheld and not_found != "off":
        return _not_found(a, hits, decision, signals, rarity, max_quotes=max_quotes, in_context=in_context)
    if refusal or (not_found != "off" and (unborne_strong or decision.lines_stand)):
        # The model failed (or the policy let the lines stand in for a reply): show the documents' lines. With
        # "off" only a refusal gives way: any other reply is shown, its unsupported sentences marked.
        return _lines_instead(a, hits, decision, signals, max_quotes=max_quotes, in_context=in_context)
    return _reply_support(answer, a, hits, signals, decision, max_quotes=max_quotes,
                          question_quotes=question_quotes, in_context=in_context)


def _aligned(answer: str, question: str, hits: Sequence[Hit], *, embedder: Embedder, threshold: float,
             rescue: float) -> _Aligned | None:
    """The reply's sentences aligned with the passages' lines; None when the passages have no line to align."""
    units = _units(hits)
    if not units:
        return None
    clean = _CITE.sub("", answer).strip()
    sentences = [clean[s:e] for s, e in split_units(clean)]
    emptied = {_CITE.sub("", answer[s:e]).strip() for s, e in split_units(answer) if _EMPTY_SLOT.search(answer[s:e])}
    vecs = embedder.embed([u.text for u in units] + sentences + [question])
    unit_vecs, sent_vecs, q_vec = vecs[: len(units)], vecs[len(units) : -1], vecs[-1]
    language = detect(question)
    unit_terms = [_terms(u.text, language) for u in units]
    unit_exact = [_exact_tokens(u.text) for u in units]
    asked_exact = _exact_tokens(question)
    chosen: dict[int, float] = {}
    picks: list[tuple[str, int | None]] = []
    said: list[tuple[str, np.ndarray]] = []
    for text, vec in zip(sentences, sent_vecs, strict=True):
        # Sentences that only copy a passage's heading ("[13.3. How can I contribute …?]") or whose answer is a
        # citation ("… is [1].") claim nothing.
        if text.strip() in emptied or any(names_heading(text, h.heading) for h in hits):
            picks.append((text, None))
            continue
        said.append((text, vec))
        j, score, all_exact = _best_unit(vec, text, unit_vecs, unit_terms, unit_exact, asked_exact, language)
        if (score >= threshold or (all_exact and score >= rescue)) and not REFUSAL.match(text):
            chosen[j] = max(chosen.get(j, 0.0), score)
            picks.append((text, j))
        else:
            picks.append((text, None))
    readable = reads(embedder, question, RetrievalOptions.unread_tokens_per_word)
    return _Aligned(question, clean, sentences, units, unit_vecs, q_vec, language, readable, unit_terms, picks,
                    said, chosen)


def _best_unit(vec: np.ndarray, text: str, unit_vecs: np.ndarray, unit_terms: Sequence[set[str]],
               unit_exact: Sequence[set[str]], asked_exact: set[str], language: str) -> tuple[int, float, bool]:
    """The best unit for a sentence, its 0..1 score, and whether the unit holds all its code-like tokens."""
    terms, exact = _terms(text, language), _exact_tokens(text) - asked_exact
    scores = unit_vecs @ vec + 0.5 * np.array([_overlap(terms, ut) for ut in unit_terms])
    norm = 1.5
    if exact:  # a path, option or figure copied whole is strong evidence
        scores = scores + 0.5 * np.array([len(exact & ux) / len(exact) for ux in unit_exact])
        norm += 0.5
    j = int(np.argmax(scores))
    return j, float(scores[j]) / norm, bool(exact) and exact <= unit_exact[j]


def _weighable(a: _Aligned, hits: Sequence[Hit], embedder: Embedder) -> bool:
    """Whether the policy's similarities mean anything here: the embedder is the one its bounds were measured
    with, and it reads the question and every passage (an English question over Russian memos found through a
    translation is far from them to an English-only model)."""
    return a.readable and calibrated(embedder.name) and reads_all(embedder, a.question, hits)


def _signals(a: _Aligned, hits: Sequence[Hit], rarity: Mapping[str, float], check: Any, *, silent: bool,
             stands_in: bool, unborne_strong: bool) -> Signals:
    """What the grounding policy weighs for this reply (rag.grounding.Signals), the checking model's verdicts
    read only if a rule asks."""
    closeness = a.closeness()
    english = a.language == DEFAULT_LANGUAGE
    # The line the reply takes its answer from, when it says something: how close it is to the question.
    lines_used = [] if silent else _answer_lines(a.sentences, a.question, a.unit_terms, a.language)
    near = np.argsort(-closeness)[:_NEAR_LINES]
    signals = measure(
        question=a.question, reply=a.clean, closeness=float(np.max(closeness)),
        missing=missing_share(rarity, hits, a.question),
        supported=sum(j is not None for _, j in a.picks) / len(a.said) if a.said else 0.0, claims=len(a.said),
        stands_in=stands_in, silent=silent,
        answer_line=max((float(closeness[j]) for j in lines_used), default=None),
        yes_no_lines=[a.units[j].text for j in {*lines_used, *map(int, near)}], unborne_strong=unborne_strong,
        english=english, restated=restates([t for t, _ in a.said], a.question))
    if check is None or not english:
        return signals
    lines = _closest_lines(a, hits)[:QUESTION_LINES]
    pairs = [(t, " ".join(a.units[int(np.argmax(a.unit_vecs @ vec))].text.split())) for t, vec in a.said]
    return with_verdicts(
        signals, verdict=lambda: check(a.question, pairs),
        question_verdict=(lambda: check.lines_answer(a.question, lines)) if hasattr(check, "lines_answer") else None)


def _closest_lines(a: _Aligned, hits: Sequence[Hit]) -> list[str]:
    """The lines closest to the question, best first, headings left out."""
    return list(dict.fromkeys(" ".join(a.units[int(j)].text.split()) for j in np.argsort(-a.closeness())
                              if not _is_heading(a.units[int(j)], hits)))


def _closest_quotes(a: _Aligned, hits: Sequence[Hit], *, max_quotes: int, in_context: int) -> list[Quote]:
    """The quotes of the lines that best answer the question."""
    lines = _question_lines(a.question_scores(), [], max_quotes, in_context, a.units, hits)
    return [_quote(span, hits, float(a.unit_vecs[j] @ a.q_vec)) for j, span in lines]


def _not_found(a: _Aligned, hits: Sequence[Hit], decision: Decision, signals: Signals | None,
               rarity: Mapping[str, float] | None, *, max_quotes: int, in_context: int) -> Support:
    """The documents do not seem to answer: say so, why, and quote the lines closest to the question."""
    s = signals
    why = why_withheld(decision.reason or "evidence", refusal=REFUSAL.match(a.clean) is not None,
                       off_kind=bool(s and off_kind(s)),
                       missing=missing_words(rarity, hits, a.question) if rarity is not None and a.readable else ())
    return Support(abstain_text(a.language), [], _closest_quotes(a, hits, max_quotes=max_quotes, in_context=in_context),
                   abstained=True, why=why, signals=signals, decision=decision)


def _lines_instead(a: _Aligned, hits: Sequence[Hit], decision: Decision, signals: Signals | None, *,
                   max_quotes: int, in_context: int) -> Support:
    """The lines closest to the question stand in for the reply."""
    quotes = _closest_quotes(a, hits, max_quotes=max_quotes, in_context=in_context)
    text = FALLBACK_PREFIX + " ".join(_cite(q.text, q.passage) for q in quotes)
    return Support(text, [SentenceSupport(q.text, i, q.passage) for i, q in enumerate(quotes)], quotes, True,
                   signals=signals, decision=decision)


def _reply_support(answer: str, a: _Aligned, hits: Sequence[Hit], signals: Signals | None, decision: Decision, *,
                   max_quotes: int, question_quotes: int, in_context: int) -> Support:
    """The reply as shown, citations from the alignment, and its quotes: those that bear it out, and the lines
    that best answer the question (a small model often paraphrases around the fact, or states a wrong one: these
    let the user check; on bench/quotes.py they took "a shown quote has the answer" from 74 % to 91 %)."""
    units, chosen = a.units, a.chosen
    # The same sentence from two overlapping passages, or a sentence inside a longer quote of the same
    # document, is one quote; ties go to what the question asks about.
    kept: list[int] = []
    same: dict[int, int] = {}
    for j in sorted(chosen, key=lambda j: -chosen[j]):
        same[j] = next((k for k in kept if _duplicates(units[j], units[k], hits)), j)
        if same[j] == j:
            kept.append(j)
    order = sorted(kept, key=lambda j: -(chosen[j] + 0.2 * float(a.unit_vecs[j] @ a.q_vec)))[:max_quotes]
    reply_slots = max(1, max_quotes - question_quotes)
    lines = _question_lines(a.question_scores(), order[:reply_slots], max_quotes, in_context, units, hits)
    # Slots the question's lines did not take go back to the reply's own quotes.
    for j in order[reply_slots:]:
        if len(lines) < max_quotes and not any(_duplicates(units[j], u, hits) for _, u in lines):
            lines.append((j, units[j]))
    quotes = [_quote(span, hits, chosen.get(j, float(a.unit_vecs[j] @ a.q_vec))) for j, span in lines]
    supports = [SentenceSupport(t, _shown_at(same[j], lines, units, hits) if j is not None else None,
                                units[j].passage if j is not None else None) for t, j in a.picks]
    shown = reframed(" ".join(_cite(s.text, s.citation) for s in supports), answer)
    return Support(shown, supports, quotes, False, signals=signals, decision=decision)


def _shown_at(j: int, lines: Sequence[tuple[int, _Unit]], units: Sequence[_Unit], hits: Sequence[Hit]) -> int | None:
    """The quote that shows unit j: its own, or one whose span holds it."""
    own = next((n for n, (k, _) in enumerate(lines) if k == j), None)
    if own is not None:
        return own
    u = units[j]
    return next((n for n, (_, span) in enumerate(lines) if span.start <= u.start and u.end <= span.end
                 and hits[span.passage - 1].source == hits[u.passage - 1].source), None)

def question_verdict(question: str, hits: Sequence[Hit], *, embedder: Embedder, rarity: Mapping[str, float],
                     check: Callable[[str, Sequence[tuple[str, str]]], float | None]) -> float | None:
    """The larger model's probe on the lines of `hits` closest to the question, as the grounding policy reads it
    (None where the policy would not: no line, an embedder or a language it does not weigh, no probe)."""
    a = _aligned("", question, hits, embedder=embedder, threshold=1.0, rescue=1.0)
    if a is None or a.language != DEFAULT_LANGUAGE or not hasattr(check, "lines_answer") or not _weighable(
            a, hits, embedder):
        return None
    return check.lines_answer(question, _closest_lines(a, hits)[:QUESTION_LINES])


def _is_heading(unit: _Unit, hits: Sequence[Hit]) -> bool:
    """Whether a unit is just one of its passage's headings ("5. Meals and daily allowance")."""
    return names_heading(unit.text, hits[unit.passage - 1].heading)


def _duplicates(a: _Unit, b: _Unit, hits: Sequence[Hit]) -> bool:
    """The same words, or overlapping places in one document."""
    if " ".join(a.text.split()) == " ".join(b.text.split()):
        return True
    ha, hb = hits[a.passage - 1], hits[b.passage - 1]
    return ha.source == hb.source and a.start < b.end and b.start < a.end


def _question_scores(
    question: str, units: Sequence[_Unit], unit_vecs: np.ndarray, unit_terms: Sequence[set[str]], q_vec: np.ndarray,
    *, meaning: float = 1.0, language: str = DEFAULT_LANGUAGE,
) -> np.ndarray:
    """How well each unit answers the question itself.

    Embedding similarity, plus the question's words found in the unit weighted by how rare they are among
    these units (a word every unit has says nothing), plus a small lead for the better-ranked passages.
    """
    q_terms = _terms(question, language)
    df = Counter(t for terms in unit_terms for t in terms & q_terms)
    weight = {t: math.log(1 + len(units) / (1 + df[t])) for t in q_terms}
    total = sum(weight.values()) or 1.0
    return np.array([
        meaning * float(unit_vecs[j] @ q_vec)
        + 0.5 * sum(w for t, w in weight.items() if t in unit_terms[j]) / total
        - 0.02 * (units[j].passage - 1)
        for j in range(len(units))
    ])


def _question_lines(
    scores: np.ndarray, kept: list[int], limit: int, in_context: int, units: Sequence[_Unit], hits: Sequence[Hit]
) -> list[tuple[int, _Unit]]:
    """`kept` and then the lines that best answer the question, up to `limit` in all: (unit index, span shown).

    Headings are skipped (they say what a section is about, not what it says), and so are places already
    quoted. The first `in_context` of these lines are shown with the sentences around them. A lead-in line
    ("…install it with:") is followed by the line it introduces when a chunk boundary fell between them.
    """
    out: list[tuple[int, _Unit]] = []

    def take(j: int, span: _Unit) -> None:
        out.append((j, span))
        k = _continuation(j, units, hits)
        if k is not None and len(out) < limit and not any(_duplicates(units[k], u, hits) for _, u in out):
            out.append((k, units[k]))

    for j in kept:
        take(j, units[j])
    free = [j for j in range(len(units)) if not _is_heading(units[j], hits)]
    asked = 0
    while len(out) < limit:
        free = [j for j in free if not any(_duplicates(units[j], u, hits) for _, u in out)]
        if not free:
            break
        j = free[int(np.argmax(scores[free]))]
        take(j, _in_context(j, [u for _, u in out], units, hits) if asked < in_context else units[j])
        asked += 1
    return out


def _continuation(j: int, units: Sequence[_Unit], hits: Sequence[Hit]) -> int | None:
    """The line a lead-in unit ("…install it with:") introduces, when that line opens the next passage of
    the same document (a chunk boundary fell between them)."""
    u = units[j]
    if not u.text.rstrip().endswith(":"):
        return None
    source = hits[u.passage - 1].source
    after = [k for k, v in enumerate(units) if hits[v.passage - 1].source == source and 0 < v.start - u.end <= _CHUNK_GAP]
    return min(after, key=lambda k: units[k].start) if after else None


def _in_context(j: int, shown: Sequence[_Unit], units: Sequence[_Unit], hits: Sequence[Hit]) -> _Unit:
    """Unit j with the sentences just after and before it in the same paragraph, the one after first, each
    unless it is shown already or the quote would grow past _WINDOW_SPAN: the line that best matches a
    question often only restates it, and the answer is the sentence next to it."""
    u = units[j]
    hit = hits[u.passage - 1]
    text = _unwrapped(hit)

    def same_paragraph(a: int, b: int) -> bool:
        return "\n" not in text[a - hit.start : b - hit.start]

    def free(v: _Unit) -> bool:
        return not _is_heading(v, hits) and not any(_duplicates(v, w, hits) for w in shown)

    mine = [v for v in units if v.passage == u.passage and free(v)]
    start, end = u.start, u.end
    after = [v for v in mine if v.end > end and v.start >= start and (v.start == start or same_paragraph(end, v.start))]
    if after:
        v = min(after, key=lambda v: v.end)
        if v.end - start <= _WINDOW_SPAN:
            end = v.end
    before = [v for v in mine if v.end <= start and same_paragraph(v.end, start)]
    if before:
        v = max(before, key=lambda v: v.start)
        if end - v.start <= _WINDOW_SPAN:
            start = v.start
    return _Unit(u.passage, hit.text[start - hit.start : end - hit.start], start, end)


_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)


def annotated(reply: str, support: Support, *, unsupported: str) -> str:
    """The reply with its Markdown kept, citations from the alignment, and `unsupported` after each
    sentence that has no support in the passages (never inside code, where it would change the code)."""
    clean = _CITE.sub("", reply).strip()
    if support.fallback or not support.sentences:
        return reframed(clean, reply)
    code = [m.span() for m in _CODE.finditer(clean)]
    out: list[str] = []
    pos = 0
    for s in support.sentences:
        at = clean.find(s.text, pos)
        if at < 0:
            continue
        end = at + len(s.text)
        out.append(clean[pos:at])
        if any(a < end < b for a, b in code):  # the sentence ends inside code: a mark would change it
            out.append(s.text)
        elif s.citation is not None:
            out.append(_cite(s.text, s.citation))
        else:
            out.append(s.text + unsupported)
        pos = end
    out.append(clean[pos:])
    return reframed("".join(out), reply)


# A citation the model wrote as a word of its sentence ("[1] states that …", "According to the passage in [2], …")
# leaves the sentence without it once citations are moved to the sentence's end: its frame is given a subject again.
_VERBS = r"(states|says|mentions|indicates|explains|specifies)"
_SOURCES = (r"((?:[Aa]ccording to|[Aa]s (?:stated|mentioned|described|noted|shown) in))"
            r"(?: the passage in| the passage| passage)?")
_CITED_AS_WORD = re.compile(rf"(?:^|[.!?]\s+)\[\d{{1,2}}\]\s+{_VERBS}\b|\b{_SOURCES}\s*\[\d{{1,2}}\]")
_FRAME_VERB = re.compile(rf"(?:^|(?<=[.!?]\s)){_VERBS}\b")
_FRAME_SOURCE = re.compile(rf"\b{_SOURCES}(?=\s*[,.;:])")


def reframed(text: str, reply: str) -> str:
    """`text`, the `reply` with its citations moved, with the frames a citation written as a word left without a
    subject given one again: "[1] states that X." shown as "states that X [1]." becomes "The passage states that X
    [1].", "According to the passage in [2], X." shown as "According to the passage in, X [2]." becomes "According to
    the passage, X [2]."; unchanged where the reply wrote no such citation."""
    if not _CITED_AS_WORD.search(reply):
        return text
    return _FRAME_SOURCE.sub(r"\1 the passage", _FRAME_VERB.sub(r"The passage \1", text))


def _cite(sentence: str, n: int | None) -> str:
    """The sentence with its citation before the closing punctuation: 'is EUR 60 [1].'"""
    if n is None:
        return sentence
    body = sentence.rstrip(".!?…:;")
    return f"{body} [{n}]{sentence[len(body):]}"


def _quote(unit: _Unit, hits: Sequence[Hit], score: float) -> Quote:
    h = hits[unit.passage - 1]
    return Quote(h.source, h.page, h.heading, unit.text, unit.start, unit.end, unit.passage, round(score, 4))

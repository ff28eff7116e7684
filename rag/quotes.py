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
(rag/abstain.py), Hearth says so and quotes the closest lines instead.
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
    ABSTAIN_UNSUPPORTED_BELOW, REFUSAL, WORD_PREFIX, YES_NO_VERBS, abstain_reason, abstain_text, calibrated, evidence,
    invented_figures, lacks_asked_kind, missing_share, missing_words, only_thin_evidence, reply_says, says_nothing,
    unfounded_no, why_withheld,
)
from rag.confirm import DEFAULT_BOUNDS, QUESTION_LINES
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import detect, question_stems
from rag.lines import names_heading, split_units
from rag.lexical import query_terms
from rag.retrieval import RetrievalOptions, reads
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

_READ_SAMPLE = 600  # characters of a passage enough to tell whether the embedder reads its language
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


def align(
    answer: str,
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder,
    max_quotes: int = 4,  # chosen on the evaluation's tuning half (README "Answers you can check")
    threshold: float = 0.55,  # chosen on bench/quotes.py; see README "Answers you can check"
    rescue: float = 0.45,  # a weaker match still counts when the unit holds all the sentence's code-like tokens
    strong_passage: float = 0.45,
    question_quotes: int = 3,  # quotes kept for the lines that best answer the question itself
    in_context: int = 2,  # of those, how many are quoted with the sentences around them
    rarity: Mapping[str, float] | None = None,  # the question's words and their weights (rag.abstain.rarity)
    check: Callable[[str, Sequence[tuple[str, str]]], float | None] | None = None,  # rag.confirm.AnswerCheck
    not_found: str = "balanced",  # NOT_FOUND: "off" never withholds, "strict" withholds more than "balanced"
) -> Support:
    """Supporting quotes and per-sentence citations for an answer drawn from `hits` (numbered from 1).

    With `rarity` (the question's words weighted by how rare they are in the index), a question whose
    passages do not seem to answer it gets an abstaining Support (rag/abstain.py); without, it never does.
    With `check` as well, a reply the rule lets stand is also given up when the model, shown the line closest
    to each of its sentences, says none of them gives it (rag/confirm.py); English questions only.
    `not_found` is the user's strictness: "off" shows every reply (its unsupported sentences marked), "strict"
    also withholds a reply not wholly borne out, "balanced" is the rule as measured.
    """
    units = _units(hits)
    clean = _CITE.sub("", answer).strip()
    sentences = [clean[s:e] for s, e in split_units(clean)]
    emptied = {_CITE.sub("", answer[s:e]).strip() for s, e in split_units(answer) if _EMPTY_SLOT.search(answer[s:e])}
    if not units:
        return Support(clean, [SentenceSupport(t, None, None) for t in sentences])
    vecs = embedder.embed([u.text for u in units] + sentences + [question])
    unit_vecs, sent_vecs, q_vec = vecs[: len(units)], vecs[len(units) : -1], vecs[-1]
    language = detect(question)
    unit_terms = [_terms(u.text, language) for u in units]
    unit_exact = [_exact_tokens(u.text) for u in units]

    # A question the embedder cannot read (see rag/retrieval.py) is matched by its words alone.
    readable = reads(embedder, question, RetrievalOptions.unread_tokens_per_word)

    def question_scores() -> np.ndarray:
        meaning = 1.0 if readable else 0.0
        return _question_scores(question, units, unit_vecs, unit_terms, q_vec, meaning=meaning, language=language)

    asked_exact = _exact_tokens(question)

    def best(vec: np.ndarray, text: str) -> tuple[int, float, bool]:
        """The best unit for a sentence, its 0..1 score, and whether the unit holds all its code-like tokens."""
        terms, exact = _terms(text, language), _exact_tokens(text) - asked_exact
        scores = unit_vecs @ vec + 0.5 * np.array([_overlap(terms, ut) for ut in unit_terms])
        norm = 1.5
        if exact:  # a path, option or figure copied whole is strong evidence
            scores = scores + 0.5 * np.array([len(exact & ux) / len(exact) for ux in unit_exact])
            norm += 0.5
        j = int(np.argmax(scores))
        return j, float(scores[j]) / norm, bool(exact) and exact <= unit_exact[j]

    chosen: dict[int, float] = {}
    picks: list[tuple[str, int | None]] = []
    # Sentences that only copy a passage's heading ("[13.3. How can I contribute …?]") or whose answer is a
    # citation ("… is [1].") claim nothing.
    said: list[tuple[str, np.ndarray]] = []  # the sentences that claim something, with their vectors
    for text, vec in zip(sentences, sent_vecs, strict=True):
        j, score, all_exact = best(vec, text)
        if text.strip() in emptied or any(names_heading(text, h.heading) for h in hits):
            picks.append((text, None))
            continue
        said.append((text, vec))
        if (score >= threshold or (all_exact and score >= rescue)) and not REFUSAL.match(text):
            chosen[j] = max(chosen.get(j, 0.0), score)
            picks.append((text, j))
        else:
            picks.append((text, None))

    # A reply of citations and the passages' labels alone ("[3] (backup.html, 9.10.2. Restoring …)") says
    # nothing: the passages' lines stand in for it like for a refusal, but it is no sign they lack the answer.
    silent = says_nothing(clean, [PurePath(h.source).name for h in hits]) or (bool(picks) and not said)
    refusal = silent or REFUSAL.match(clean) is not None
    # A reply that puts a citation where its answer goes ("The phone number of the travel desk is [1].") and
    # says nothing else did not find the answer: weak, like a refusal (a reply of labels alone is no such sign).
    unfilled = not said and any(t.strip() in emptied for t in sentences)
    unsupported = not chosen
    strong = max((h.score for h in hits), default=0.0) >= strong_passage
    weighed: dict[str, Any] = {}  # Support.evidence, .answer_line …, when the rule is applied
    lines_stand = False  # the model says the lines closest to the question answer it, where the rule withholds
    # The evidence means something only where the embedder reads the question and every passage (an English
    # question over Russian memos found through a translation is far from them to an English-only model).
    if (rarity is not None and readable and calibrated(embedder.name)
            and all(reads(embedder, h.text[:_READ_SAMPLE], RetrievalOptions.unread_tokens_per_word) for h in hits)):
        supported = sum(j is not None for _, j in picks) / len(said) if said else 0.0
        score = evidence(unit_vecs, q_vec, missing_share(rarity, hits, question))
        # For a reply that says nothing, the evidence alone decides, as for one the aligner bore out.
        # The line the reply takes its answer from, when the reply says something: how close it is to the question.
        lines_used = [] if silent else _answer_lines(sentences, question, unit_terms, language)
        answer_line = max((float(unit_vecs[j] @ q_vec) for j in lines_used), default=None)
        weighed = {"evidence": score, "answer_line": answer_line}
        invented = invented_figures(clean, [question] + [f"{h.heading or ''} {h.text}" for h in hits])
        # A reply that gives no figure or time where the question asks for one answers something else.
        # So does one that only restates the question ("The domain registrar for falcot.com is falcot.com.").
        # And so does a "No" to a yes/no question that no line of its answer, nor those closest to it, says.
        near = np.argsort(-(unit_vecs @ q_vec))[:_NEAR_LINES]
        off_kind = not silent and language == DEFAULT_LANGUAGE and (
            lacks_asked_kind(question, clean) or restates([t for t, _ in said], question)
            or unfounded_no(question, clean, [units[j].text for j in {*lines_used, *map(int, near)}]))

        # The model's check (rag/confirm.py): each sentence that claims something, with the passage line closest
        # to it. Not for a reply the passages' lines stand in for anyway (a refusal, or one the aligner bears out
        # nowhere: "No, the documents do not say.").
        checkable = check is not None and not refusal and not (unsupported and strong) and language == DEFAULT_LANGUAGE
        bounds = getattr(check, "bounds", DEFAULT_BOUNDS)

        def verdict() -> float | None:  # asked at most once, only when `checkable`
            pairs = [(t, " ".join(units[int(np.argmax(unit_vecs @ vec))].text.split())) for t, vec in said]
            weighed["verdict"] = found = check(question, pairs) if check is not None else None
            return found

        weak = (refusal and not silent) or unfilled
        reason = abstain_reason(score, supported=1.0 if silent else supported, refusal=weak,
                                answer_line=answer_line, invented=bool(invented), off_kind=off_kind)
        withheld = reason is not None
        if not withheld:
            withheld = checkable and bounds.checks(score) and bounds.denies(verdict())
            reason = "denied" if withheld else None
        elif checkable and bounds.kept_from is not None and not silent and only_thin_evidence(
                supported=supported, answer_line=answer_line, invented=bool(invented), off_kind=off_kind):
            # A reply the passages bear out, withheld for thin evidence alone, stands when the check is sure its
            # lines give it: a question in words of its own is far from its line for the embedder, less so for a
            # model that reads both (README "The larger model checks the answer").
            withheld = not bounds.keeps(verdict())
        # The model's verdict on the question itself (rag/confirm.py, `AnswerCheck.lines_answer`): shown the lines
        # closest to it, before any reply, does it say they answer it? It tells a question its notes answer in other
        # words from one about the same subject that they leave open better than the evidence (README "The larger
        # model reads the question's lines"): under one bound nothing the reply says stands, from another the lines
        # stand in for a reply the rule withholds.
        def closest() -> list[str]:
            """The lines closest to the question, best first, headings left out."""
            return list(dict.fromkeys(" ".join(units[int(j)].text.split()) for j in np.argsort(-(unit_vecs @ q_vec))
                                      if not _is_heading(units[int(j)], hits)))

        if hasattr(check, "lines_answer") and language == DEFAULT_LANGUAGE and bounds.asks_question():
            asked = check.lines_answer(question, closest()[:QUESTION_LINES])
            weighed["question_verdict"] = asked
            if not withheld and bounds.unanswered(asked):
                withheld, reason, weighed["question_changed"] = True, "unanswered", "withheld"
            elif withheld and bounds.answered(asked):
                withheld, lines_stand, weighed["question_changed"] = False, True, "lines"
        # A reply to a yes-or-no question that opens "No" where the lines say yes, or the other way round, and then
        # restates the line that says so ("No, … The passage states that staff can swap … without asking"): the
        # aligner and the check bear its restatement out. The larger model's own Yes or No over the same lines,
        # when surely the other way, lets the lines stand in for it; and where they stand in for a reply the rule
        # withheld (the probe reads them as answering), its Yes or No, when surely the same as the reply's and the
        # reply makes no figure up, opens them: "No. The documents say: …" (README "The larger model's own Yes or
        # No"). The rest of that reply stays the model's guess: the lines are what bears the word out.
        says = None if withheld or refusal or (unsupported and strong) else reply_says(question, clean)
        if (says is not None and hasattr(check, "yes_or_no") and language == DEFAULT_LANGUAGE
                and bounds.reads_yes_no()):
            weighed["yes_no_verdict"] = own = check.yes_or_no(question, closest()[:QUESTION_LINES])
            if not lines_stand and bounds.contradicts(says, own):
                lines_stand, weighed["contradicted"] = True, True
            elif lines_stand and not invented and bounds.agrees(says, own):
                weighed["agreed"] = True
        if not withheld and not_found == "strict" and not refusal and not silent and said and (
                supported < 1.0 or score < ABSTAIN_UNSUPPORTED_BELOW):
            withheld, reason = True, "strict"  # "say so": a reply not wholly borne out, or on middling evidence
        if withheld and not_found != "off":
            # Not found: say so, and quote the lines closest to the question (the reply is the model's guess).
            lines = _question_lines(question_scores(), [], max_quotes, in_context, units, hits)
            quotes = [_quote(span, hits, float(unit_vecs[j] @ q_vec)) for j, span in lines]
            why = why_withheld(reason or "evidence", figures=invented, refusal=weak, off_kind=off_kind,
                               missing=missing_words(rarity, hits, question) if readable else ())
            return Support(abstain_text(language), [], quotes, abstained=True, why=why, **weighed)
    if refusal or (not_found != "off" and ((unsupported and strong) or lines_stand)):
        # The model failed (or the rule withheld a reply to a question the lines answer): show the documents' lines.
        # With "off" only a refusal gives way: any other reply is shown, its unsupported sentences marked.
        lines = _question_lines(question_scores(), [], max_quotes, in_context, units, hits)
        quotes = [_quote(span, hits, float(unit_vecs[j] @ q_vec)) for j, span in lines]
        # The Yes or No that both the reply and the larger model give, when they do, opens the lines.
        opening = f"{reply_says(question, clean).capitalize()}. " if weighed.get("agreed") else ""
        text = opening + FALLBACK_PREFIX + " ".join(_cite(q.text, q.passage) for q in quotes)
        return Support(text, [SentenceSupport(q.text, i, q.passage) for i, q in enumerate(quotes)], quotes, True,
                       **weighed)

    # The same sentence from two overlapping passages, or a sentence inside a longer quote of the same
    # document, is one quote; ties go to what the question asks about.
    kept: list[int] = []
    same: dict[int, int] = {}
    for j in sorted(chosen, key=lambda j: -chosen[j]):
        same[j] = next((k for k in kept if _duplicates(units[j], units[k], hits)), j)
        if same[j] == j:
            kept.append(j)
    order = sorted(kept, key=lambda j: -(chosen[j] + 0.2 * float(unit_vecs[j] @ q_vec)))[:max_quotes]
    # The lines that answer the question most directly are always shown too: a small model often paraphrases
    # around the fact (or states a wrong one), and these quotes let the user check the reply against it.
    # On bench/quotes.py this took "a shown quote has the answer" from 74% to 91% of the questions whose
    # answer was in the passages (one such quote: 88%).
    reply_slots = max(1, max_quotes - question_quotes)
    lines = _question_lines(question_scores(), order[:reply_slots], max_quotes, in_context, units, hits)
    # Slots the question's lines did not take go back to the reply's own quotes.
    for j in order[reply_slots:]:
        if len(lines) < max_quotes and not any(_duplicates(units[j], u, hits) for _, u in lines):
            lines.append((j, units[j]))
    quotes = [_quote(span, hits, chosen.get(j, float(unit_vecs[j] @ q_vec))) for j, span in lines]

    def shown_at(j: int) -> int | None:
        """The quote that shows unit j: its own, or one whose span holds it."""
        own = next((n for n, (k, _) in enumerate(lines) if k == j), None)
        if own is not None:
            return own
        u = units[j]
        return next((n for n, (_, span) in enumerate(lines) if span.start <= u.start and u.end <= span.end
                     and hits[span.passage - 1].source == hits[u.passage - 1].source), None)

    supports = [
        SentenceSupport(t, shown_at(same[j]) if j is not None else None, units[j].passage if j is not None else None)
        for t, j in picks
    ]
    shown = reframed(" ".join(_cite(s.text, s.citation) for s in supports), answer)
    return Support(shown, supports, quotes, False, **weighed)


def question_verdict(question: str, hits: Sequence[Hit], *, embedder: Embedder, rarity: Mapping[str, float],
                     check: Callable[[str, Sequence[tuple[str, str]]], float | None]) -> float | None:
    """The larger model's probe on the lines of `hits` closest to the question, as `align` reads it for no reply."""
    return align("", question, hits, embedder=embedder, rarity=rarity, check=check).question_verdict


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

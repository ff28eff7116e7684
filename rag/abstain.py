"""The signals of "not found" that need no model: which of the question's words no passage holds, whether a
reply refuses, says nothing, makes a figure up, gives no figure or time where one is asked, or says "No" where no
line does; and the sentence that tells the user why a reply was withheld. How they are weighed is
rag/grounding.py's (one policy, its bounds, its ablation).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from rag.language import DEFAULT as DEFAULT_LANGUAGE

_HOW = re.compile(r"\bhow\s+(much|many|often|long|far|old|big|large|soon)\b", re.IGNORECASE)
WORD_PREFIX = 6  # letters a question word and a passage word share to count as the same word (word forms)

_TEXT = {
    "en": "The documents do not seem to answer this question. The closest passages are quoted below.",
    "ru": "Похоже, в документах нет ответа на этот вопрос. Ниже приведены самые близкие к нему фрагменты.",
}


class _Passage(Protocol):
    text: str


def calibrated(embedder_name: str) -> bool:
    """Whether the bounds hold for this embedding model: they were measured with the default one (int8 or
    fp32); cosine similarities of another model are on another scale, so with it Hearth does not abstain."""
    from inference.models import DEFAULT_EMBEDDER

    return embedder_name.startswith(DEFAULT_EMBEDDER.name + "-")


def rarity(words: Sequence[str], passages: Mapping[str, int], total: int) -> dict[str, float]:
    """Each word's weight, the rarer in the index the heavier (an idf: log(1 + total / (1 + passages)))."""
    return {w: math.log(1 + total / (1 + passages.get(w, 0))) for w in words}


def missing_share(weights: Mapping[str, float], hits: Sequence[_Passage], question: str = "") -> float:
    """The rarity-weighted share of the question's words that none of the passages holds (0..1).

    The word that makes "how much", "how many", "how often" … a question asks for a figure; the answer
    states the figure, not the word, so it is not looked for.
    """
    weights = _looked_for(weights, question)
    total = sum(weights.values())
    if not total:
        return 0.0
    return sum(weights[w] for w in missing_words(weights, hits)) / total  # `weights` is filtered already


def missing_words(weights: Mapping[str, float], hits: Sequence[_Passage], question: str = "") -> list[str]:
    """The question's words (those `weights` holds) that none of the passages holds, rarest first."""
    weights = _looked_for(weights, question)
    text = " ".join(h.text for h in hits).casefold()
    missing = [word for word in weights if not re.search(r"(?<!\w)" + re.escape(word.casefold()[:WORD_PREFIX]), text)]
    return sorted(missing, key=lambda w: -weights[w])


def _looked_for(weights: Mapping[str, float], question: str) -> dict[str, float]:
    asking = {m.group(1).casefold() for m in _HOW.finditer(question)}
    return {w: v for w, v in weights.items() if w.casefold() not in asking}


# How a refusal opens: "I don't know.", "The documents do not say.", also after a "No," ("No, the documents do
# not say.").
_REFUSALS = ("i do not know", "i don't know", "i'm not sure", "i cannot find", "i cannot answer",
             # plural and singular: the 0.5B model often writes "No, the passage does not say."
             *(f"the {w} not {v}" for w in ("documents do", "passages do", "document does", "passage does")
               for v in ("say", "contain", "mention")),
             "there is no information", "there is no mention", "not mentioned in", "not stated in")
REFUSAL = re.compile(r"^\s*(?:no[,.]\s*)?(?:" + "|".join(map(re.escape, _REFUSALS)) + ")",
                     re.IGNORECASE)


def opens_refusal(text: str, *, final: bool) -> bool | None:
    """Whether a reply (as written so far, or whole when `final`) is a refusal; None while its opening may still
    become one ("The", "No, the doc")."""
    opening = " ".join(text.split()).casefold()
    if REFUSAL.match(opening):
        return True
    if final:
        return False
    return None if any((lead + r).startswith(opening) for r in _REFUSALS for lead in ("", "no, ", "no. ")) else False


def says_nothing(reply: str, file_names: Sequence[str]) -> bool:
    """Whether a reply holds no words but the passages' labels: "(notes.md, Travel)" and the like, each a
    parenthesis naming one of `file_names` (citations already removed)."""
    names = [n.casefold() for n in file_names if n]

    def label(m: re.Match[str]) -> str:
        return "" if any(n in m.group(0).casefold() for n in names) else m.group(0)

    return not re.search(r"\w", re.sub(r"\([^()]*\)", label, reply))


# What stands in brackets is no part of what a reply states: citations ("[2]") and the passages' labels.
_BRACKETED = re.compile(r"\[\d{1,2}\]|\([^()]*\)")


# A question that asks for a figure ("How many…", "What is the PIN…", "Which number should I ring?") or for a
# time ("When is…", "On which day…"), in its first words or those of one of its sentences (not "…, and in which
# year?"). English only: other languages keep the rule without it.
_ASKS_FIGURE = re.compile(
    r"(?:^|[.!?]\s)\W*(?:\w+\W+){0,3}?(?:how\s+(?:much|many|long|often|old|far|big|large|high)\b|"
    r"(?:what|which)(?:'s|\s+(?:is|are|was|were))?\s+(?:(?:the|my|our|a|an|his|her|their|its)\s+)?"
    r"(?:[\w'-]+\s+){0,2}?(?:number|extension|code|pin|combination|price|cost|fee|rate|amount|budget|allowance|"
    r"limit|discount)\b)", re.IGNORECASE)
_ASKS_TIME = re.compile(
    r"(?:^|[.!?]\s)\W*(?:\w+\W+){0,3}?(?:when\s+(?:is|are|was|were|do|does|did|will|can|could|should|must|has|"
    r"have)\b|(?:what|which)\s+(?:time|day|days|date|week|month|year)\b)", re.IGNORECASE)
_COUNTED = (r"zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:thir|four|fif|six|seven|eigh|"
            r"nine)teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|"
            r"twice|half|dozen|once|single|first|second|third|(?:four|fif|six|seven|eigh|nin|ten|eleven|twelf)th|"
            r"last|every|each|daily|weekly|fortnightly|monthly|quarterly|yearly|annually|no|none|nothing")
_FIGURE_WORD = re.compile(rf"\d|\b(?:{_COUNTED}|free|unlimited)\b", re.IGNORECASE)  # "free" is a price, not a time
_TIME_WORD = re.compile(
    rf"\d|\b(?:{_COUNTED}|january|february|march|april|may|june|july|august|september|october|november|"
    r"december|(?:mon|tues|wednes|thurs|fri|satur|sun|week)days?|weekends?|mornings?|afternoons?|evenings?|"
    r"nights?|tonight|noon|midnight|spring|summer|autumn|winter|christmas|easter|holidays?|today|tomorrow|"
    r"minutes?|hours?|days?|weeks?|fortnight|months?|quarters?|years?)\b", re.IGNORECASE)

# A time given by an event rather than a date: "…when the printer reports it low", "after the review".
_CONDITION = re.compile(r"\b(?:when|whenever|after|before|until|till|within|during|while|upon|as soon as|if)\s+\w",
                        re.IGNORECASE)


def lacks_asked_kind(question: str, reply: str) -> bool:
    """Whether a reply to a question asking for a figure or a time holds none among the words it adds to the
    question ("The phone number of Brightfork Catering is run by Brightfork Catering."): it restates the
    question around something else, and answers nothing. What stands in brackets (citations, the passages'
    labels) is not part of the reply; a figure written out ("twice", "every Friday") counts, and for a time so
    does an event ("when the printer reports it low")."""
    kind = _TIME_WORD if _ASKS_TIME.search(question) else _FIGURE_WORD if _ASKS_FIGURE.search(question) else None
    if kind is None:
        return False
    asked = {w.casefold() for w in re.findall(r"\w+", question)}
    stripped = _BRACKETED.sub(" ", reply)
    added = " ".join(w for w in re.findall(r"\w+(?:[:.,]\d+)*", stripped) if w.casefold() not in asked)
    if kind is _TIME_WORD and _CONDITION.search(stripped):  # "…when the printer reports it low", "after…"
        return False
    return kind.search(added) is None


# The verbs a question answered by yes or no opens with ("Can I…?", "Is there…?", "Do I need…?").
YES_NO_VERBS = "is|are|was|were|am|can|could|does|do|did|should|shall|must|may|might|will|would|has|have|had"
_YES_NO = re.compile(rf"^\W*(?:{YES_NO_VERBS})\b", re.IGNORECASE)
_REPLY_NO = re.compile(r"^\W*(?:unfortunately,?\s+)?no\b(?!\s+one\b)", re.IGNORECASE)  # "No, …", not "No one …"
# Words with which a line says no, or sets the limit a "no" follows from ("only managers", "except on Fridays").
_SAYS_NO = re.compile(
    r"\b(?:no|not|never|none|nobody|nothing|nowhere|neither|nor|cannot|can't|only|except|excluding|excluded|"
    r"exclusively|without|unless|instead|optional|voluntary|free|forbidden|prohibited|banned|\w+n't)\b",
    re.IGNORECASE)


def unfounded_no(question: str, reply: str, lines: Sequence[str]) -> bool:
    """Whether a reply answers a yes/no question "No" though none of `lines` (those it takes its answer from, and
    those closest to the question) says no or sets a limit ("Is there a vegan dish every day?" — "No, … The
    passage states that there are always three dishes, one of them vegetarian."): a small model says "No" to what
    its passages do not mention, and the aligner and the checker bear its restated "no" out. A question that
    holds such a word itself ("Can I enter without a badge?") may be answered no by a line that says yes."""
    if not _YES_NO.match(question) or not _REPLY_NO.match(reply) or _SAYS_NO.search(question):
        return False
    return not any(_SAYS_NO.search(line) for line in lines)


def abstain_text(language: str) -> str:
    """What Hearth says instead of the reply, in the question's language (English when it has no wording)."""
    return _TEXT.get(language, _TEXT[DEFAULT_LANGUAGE])


# The sentence a user reads under "not found": why the reply was withheld. English; other languages get it too.
_WHY = {
    "off_line": "The reply takes its answer from a passage about something else.",
    "missing": "No passage mentions {words}.",
    "evidence": "No passage comes close to what the question asks.",
    "refusal": "The model found no answer in the passages.",
    "off_kind": "The reply does not give what the question asks for.",
    "unsupported": "The passages do not bear the reply out.",
    "denied": "Checked line by line, no passage gives what the reply says.",
    "unanswered": "Read closely, the passages nearest the question do not answer it.",
    "strict": "Part of the reply is not borne out by the passages (strict mode).",
    "nothing": "No passage in the documents matches the question.",
}


def why_withheld(reason: str, *, missing: Sequence[str] = (), refusal: bool = False,
                 off_kind: bool = False) -> str:
    """One sentence saying why a reply was withheld, from `abstain_reason`'s reason (or "denied", "unanswered",
    "strict", "nothing") and the facts behind it: the question's words no passage holds."""
    if reason in ("evidence", "weak") and missing:
        words = [f"“{w}”" for w in missing[:3]]
        return _WHY["missing"].format(words=", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0])
    if reason == "weak":
        return _WHY["refusal" if refusal else "off_kind" if off_kind else "unsupported"]
    return _WHY.get(reason, _WHY["evidence"])

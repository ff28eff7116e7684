"""Follow-up questions made standalone before they are searched.

"What is its budget?" or "And the end date?" mean nothing to a search of forty similar sheets: the subject
is in the conversation. A small chat model rewrites such questions unreliably, so the rewrite here is built
from what the earlier turns were about: the names in what they searched for (a subject named two turns back
is carried through a middle turn that only said "it"), and, when a turn named nothing, the document its
answer came from. A question that does not lean on the conversation — it refers to nothing and names its
own subject — is searched as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Words that point back at something said before (English and Russian).
_REFERENCES = {
    "it", "its", "it's", "they", "them", "their", "theirs", "this", "that", "these", "those", "he", "him",
    "his", "she", "her", "hers", "there", "same", "former", "latter",
    "он", "она", "оно", "они", "его", "её", "ее", "их", "ему", "ей", "им", "этот", "эта", "это", "эти",
    "этого", "этой", "этим", "том", "той", "тот", "та", "те", "там",
}
# Phrases that continue the previous question ("and abroad?", "what about contractors?").
_CONTINUES = re.compile(
    r"^\s*(and|also|plus|but|or|what about|how about|and what about|same for|what of|и|а|а как|а что|также|ещё|еще)\b",
    re.IGNORECASE,
)
# "the project", "this document": a definite generic noun standing for the subject.
_GENERIC = re.compile(r"\b(?:the|this|that)\s+(project|document|policy|sheet|contract|plan|file|report|team|"
                      r"programme|program|initiative|memo|notice|handbook|guide)\b", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"^(the|its|their|his|her|what|what's|whats|who|who's|when|where|how|which)\b", re.IGNORECASE)
# An ellipsis that changes a detail of the last question rather than asking another fact ("and abroad?").
_MODIFIER = re.compile(r"^(for|in|at|on|abroad|during|after|before|with|within|without|by|from|to|outside|inside|"
                       r"для|в|на|за|при|после|до|без)\b", re.IGNORECASE)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_STOP = {
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "was", "were", "be", "do", "does",
    "did", "what", "who", "whom", "which", "when", "where", "why", "how", "much", "many", "with", "by", "from",
    "at", "as", "can", "could", "should", "would", "will", "i", "we", "you", "our", "my", "me", "us", "about",
    "tell", "please", "any", "there", "has", "have", "had", "get", "give", "say", "says", "said", "if",
    "что", "кто", "как", "где", "когда", "какой", "какая", "какие", "сколько", "ли", "в", "на", "по", "для",
    "и", "а", "с", "о", "об", "из", "у", "к", "не", "это",
}
# A name: capitalised words (not the first word of the question unless more follow), a code like PRJ-104,
# or something in quotes.
_QUOTED = re.compile(r"[\"“«„]([^\"”»“]{2,60})[\"”»“]")
_CODE = re.compile(r"\b[A-Z]{2,}[-/]?\d+[A-Z0-9-]*\b")
_POSSESSIVE = re.compile(r"['’]s$")


@dataclass(frozen=True)
class Earlier:
    """What an earlier turn was about: its question, what was searched for it, and the documents it drew on."""

    question: str
    searched_for: str | None = None
    documents: tuple[str, ...] = ()  # sources of the cited (else given) passages, best first


def leans_on_conversation(question: str) -> bool:
    """Whether a question plainly refers back: a pronoun, "the project", or "and …?"."""
    words = [_POSSESSIVE.sub("", w.lower()).strip("'’") for w in _WORD.findall(question)]
    return any(w in _REFERENCES for w in words) or bool(_GENERIC.search(question) or _CONTINUES.match(question))


def may_lean_on_conversation(question: str) -> bool:
    """Whether a question could be about the conversation's subject without saying so: it names nothing and
    is short ("next milestone?", "What's the budget?", "who signs off changes"). Whether it is, is for the
    documents to tell (see standalone_query)."""
    return not names_in(question) and len(_content(question)) <= 4


def _content(question: str) -> list[str]:
    words = [_POSSESSIVE.sub("", w.lower()).strip("'’") for w in _WORD.findall(question)]
    return [w for w in words if w not in _STOP]


def names_in(text: str) -> list[str]:
    """The names a question or query mentions: quoted strings, codes, runs of capitalised words."""
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(text)]
    found += [m.group(0) for m in _CODE.finditer(text)]
    tokens = _WORD.findall(text)
    run: list[str] = []
    for i, token in enumerate(tokens + [""]):
        bare = _POSSESSIVE.sub("", token)
        capital = bool(bare) and bare[0].isupper() and bare.lower() not in _REFERENCES
        # The first word is capitalised anyway: a name only when another capitalised word follows, it is
        # possessive ("Heron's budget?"), or it is all there is ("Heron?").
        first_word_alone = i == 0 and len(tokens) > 1 and not tokens[1][:1].isupper() and bare == token
        if capital and not first_word_alone and (bare.lower() not in _STOP or run):
            run.append(bare)
            if bare != token:  # "Falcon's": the name ends here
                found.append(" ".join(run))
                run = []
            continue
        if run:
            found.append(" ".join(run))
            run = []
    out: list[str] = []
    for name in found:
        if name and name.lower() not in (n.lower() for n in out) and name.lower() not in _STOP:
            out.append(name)
    return out


def subject_of(earlier: Sequence[Earlier]) -> str | None:
    """The subject the conversation is on: the names the latest turn that named something searched for,
    else the title of the document the latest answer drew on."""
    for turn in reversed(earlier):
        names = names_in(turn.searched_for or turn.question)
        if names:
            return " ".join(names)
    for turn in reversed(earlier):
        if turn.documents:
            return _title(turn.documents[0])
    return None


def rewritten(question: str, query: str) -> bool:
    """Whether `standalone_query` made `query` of `question` (a follow-up joined to its subject), rather than
    returning the question as asked (spaces aside)."""
    return query != " ".join(question.split())


def standalone_query(question: str, earlier: Sequence[Earlier], *,
                     alike: Callable[[str], set[str]] | None = None) -> str:
    """The query to search for `question` in the conversation `earlier` (oldest first); the question itself
    when it does not lean on the conversation.

    A short question that names nothing leans on it when the documents cannot tell what it is about:
    `alike(question)` gives the documents whose passages answer it about equally well, and when there are
    several and the conversation's documents are among them, it is taken to be about the conversation's
    subject ("who signs off changes" after questions on one of five project sheets); when one document
    answers it clearly, or only documents the conversation was not about, it is a change of topic.
    """
    question = " ".join(question.split())
    if not earlier:
        return question
    if not leans_on_conversation(question):
        subject = subject_of(earlier)
        if subject is None or alike is None or not may_lean_on_conversation(question):
            return question
        documents = alike(question)
        recent = next((set(t.documents) for t in reversed(earlier) if t.documents), set())
        if len(documents) < 2 or not documents & recent:
            return question
    previous = earlier[-1]
    subject = subject_of(earlier)
    rest = _CONTINUES.sub("", question, count=1).strip(" ,") or question
    if names_in(question) and _has_reference(rest):
        return question  # "And Osprey, where are we on that one?": it names its own subject
    if _has_reference(rest):
        if subject is None:
            return f"{previous.searched_for or previous.question} {rest}"
        return rest if subject.lower() in rest.lower() else _replace_reference(rest, subject)
    # Ellipsis. "And the end date?" asks for another fact of the same subject; "and abroad?" changes a
    # detail of the last question, so it continues what was searched last (which carries the subject).
    base = previous.searched_for or previous.question
    named = names_in(rest)
    if named and subject is not None:  # "And Heron's?": the last question, about the newly named subject
        swapped = re.sub(re.escape(subject), " ".join(named), base, flags=re.IGNORECASE)
        return swapped if swapped != base else f"{' '.join(named)} {base}"
    if subject is not None and (_ATTRIBUTE.match(rest) or len(_content(rest)) <= 2 and not _MODIFIER.match(rest)):
        return f"{subject} {rest}"
    if subject is not None and subject.lower() not in base.lower():
        base = f"{subject} {base}"
    return f"{base} {rest}"


def _has_reference(question: str) -> bool:
    return bool(_GENERIC.search(question)) or any(
        w.lower().strip("'’") in _REFERENCES for w in _WORD.findall(question))


def _replace_reference(question: str, subject: str) -> str:
    """The question with its first reference to the subject replaced by the subject's name."""
    generic = _GENERIC.search(question)
    if generic:  # "the team" → "the Heron team": the subject, and still the word the question used
        return question[: generic.start()] + f"the {subject} {generic.group(1)}" + question[generic.end():]
    for m in _WORD.finditer(question):
        word = m.group(0).lower().strip("'’")
        if word in _REFERENCES and word not in ("there", "same", "former", "latter"):
            possessive = word in ("its", "their", "his", "her", "hers", "theirs", "его", "её", "ее", "их")
            name = f"{subject}'s" if possessive and subject.isascii() else subject
            return question[: m.start()] + name + question[m.end():]
    return f"{subject} {question}"


def _title(source: str) -> str:
    """A document's name as words: 'project-falcon.md' → 'project falcon'."""
    return re.sub(r"[-_.]+", " ", Path(source).stem).strip()

"""Grounded answers: numbered passages in a prompt that fits the model's context, streamed, with sources.

The prompt is laid out so that its beginning never changes between questions (the system prompt),
which lets the model keep that prefix in its KV cache; then come the conversation's earlier turns,
then one user message with the numbered passages and the question. When it does not fit the context with
room for the answer, the least relevant passages go first, then old turns are shortened and dropped,
then the last passage is cut; it never reaches the model too long.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inference.chat import ChatModel, Message
from inference.llm import ContextOverflow
from inference.errors import UsageError
from rag.abstain import opens_refusal, why_withheld
from rag.compare import Comparison
from rag.language import DEFAULT as DEFAULT_LANGUAGE
from rag.language import detect
from rag.language import name as language_name
from rag.loaders import HEADING_SEPARATOR
from rag.openings import OpeningFilter
from rag.quotes import Support
from rag.store import Hit
from rag.table_result import TableResult

# The instructions without their way out: asked again with these after a refusal (see `answer`).
ANSWER_PROMPT = (
    "You are Hearth, an assistant for an office. Answer the question using only the numbered passages "
    "from the office's documents. Answer in one to three sentences of your own, state the exact figures, "
    "names and numbers the passages give, and cite the passage you used in square brackets, like [1]. "
    "Do not repeat the passages."
)
SYSTEM_PROMPT = ANSWER_PROMPT + " If the passages do not contain the answer, say that the documents do not say."
NOTHING_FOUND = "I could not find anything about this in your documents."
NOT_FOUND_MODES = ("strict", "balanced", "off")  # when the documents don't answer: say so / when unsure / never


def check_not_found(mode: str) -> str:
    """`mode` if it is one of NOT_FOUND_MODES; UsageError (exit 2) naming them otherwise."""
    value = str(mode).strip().lower()
    if value not in NOT_FOUND_MODES:
        raise UsageError(f"Unknown not-found mode {mode!r}; use one of: {', '.join(NOT_FOUND_MODES)}.",
                         hint="strict says so whenever a reply is not wholly borne out, balanced when the rule finds "
                              "it unsupported, off always shows the model's reply (HEARTH_NOT_FOUND, ask --not-found).")
    return value


DEFAULT_MAX_TOKENS = 320  # the longest answer asked for
MIN_ANSWER_TOKENS = 16  # below this much room for the answer, the prompt is cut further
_MARGIN = 4  # tokens kept free for rounding in the template's markers
_SHORT_TURN_CHARS = 240  # an old answer is shortened to about this many characters before it is dropped

# [1], [1, 2], [1-3], [Passage 2], [source 3]
_CITATION = re.compile(
    r"\[(?:(?:passages?|sources?|documents?)\s*)?(\d{1,3}(?:\s*(?:,|;|-|–|and)\s*\d{1,3})*)\]", re.IGNORECASE
)


@dataclass(frozen=True)
class Turn:
    """An earlier question of the conversation and the answer it got."""

    question: str
    answer: str


@dataclass(frozen=True)
class Answer:
    """The reply, the passages it was grounded on (numbered from 1) and which of them it cited."""

    text: str
    sources: list[Hit]
    cited: list[int]  # 1-based numbers of the sources the reply cites, in the order it cites them
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)  # prompt and answer tokens, what was dropped to fit
    conversation_id: int | None = None
    # When the reply cites nothing: the passages that hold its figures and terms, as Hearth matched them.
    supported: list[int] = field(default_factory=list)
    # Supporting quotes and per-sentence support from aligning the reply with the passages (rag/quotes.py).
    support: Support | None = None
    searched_for: str | None = None  # the query actually searched (a follow-up made standalone)
    table: TableResult | None = None  # when a table computed the answer (rag/table_questions.py)
    comparison: Comparison | None = None  # when a comparison answered ("what changed in X?", rag/comparisons.py)

    @property
    def cited_sources(self) -> list[Hit]:
        """The passages the reply cites, in citation order."""
        return [self.sources[n - 1] for n in self.cited]

    @property
    def uncited_sources(self) -> list[Hit]:
        """The passages the model was given but did not cite."""
        return [h for i, h in enumerate(self.sources, 1) if i not in self.cited]

    def to_json(self) -> dict[str, Any]:
        """The contract's ask object, plus which sources were cited and the token usage."""
        out: dict[str, Any] = {
            "answer": self.text,
            "sources": [dict(h.to_json(), cited=(i + 1) in self.cited, supports=(i + 1) in self.supported)
                        for i, h in enumerate(self.sources)],
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "cited": list(self.cited),
            "usage": dict(self.usage),
        }
        if self.searched_for is not None:
            out["searched_for"] = self.searched_for
        if self.table is not None:
            out["table"] = self.table.to_json()
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_json()
        if self.conversation_id is not None:
            out["conversation_id"] = self.conversation_id
            out["conversation"] = self.conversation_id  # the name before the contract said conversation_id
        if self.support is not None:
            # The answer as shown: citations from the alignment, or the quotes themselves when the
            # model's reply was empty, a refusal, or unsupported; the model's own words stay in "reply".
            out["reply"] = self.text
            out["answer"] = self.support.text
            out["quotes"] = [q.to_json() for q in self.support.quotes]
            out["sentences"] = [s.to_json() for s in self.support.sentences]
            out["fallback"] = self.support.fallback
        # The documents do not seem to answer (rag/abstain.py): "answer" says so, "quotes" are the closest lines,
        # the model's unsupported guess stays in "reply". No passage found at all is "not found" too.
        out["abstained"] = self.support.abstained if self.support is not None else not self.sources
        # Why, in one sentence a user reads; null when the reply stands.
        out["why"] = (self.support.why if self.support is not None and self.support.abstained
                      else why_withheld("nothing") if out["abstained"] else None)
        return out


@dataclass(frozen=True)
class Prompt:
    """The messages for one question, and what had to give way for them to fit the context."""

    messages: list[Message]
    passages: list[Hit]  # the passages given, numbered from 1 in this order
    history: list[Turn]  # the earlier turns given (some possibly shortened)
    tokens: int  # the prompt's size in the model's tokens
    max_tokens: int  # room left for the answer
    dropped_passages: int = 0
    dropped_turns: int = 0
    trimmed: bool = False  # a passage, an old answer or the question itself was cut short


def passage_label(hit: Hit) -> str:
    """How a passage is introduced in the prompt: file name, page and heading."""
    parts = [Path(hit.source).name]
    if hit.page is not None:
        parts.append(f"page {hit.page}")
    if hit.heading:
        # "Document title › Section": the section says what the passage is about; the title adds nothing.
        parts.append(hit.heading.split(HEADING_SEPARATOR)[-1])
    return ", ".join(parts)


def fixed_messages(system: str = SYSTEM_PROMPT) -> list[Message]:
    """The messages every prompt starts with; a model can keep their evaluation cached (`prefill`)."""
    return [{"role": "system", "content": system}]


def _tidy(text: str) -> str:
    # Runs of spaces and blank lines cost tokens and say nothing; line breaks are kept (lists, tables).
    lines = (" ".join(line.split()) for line in text.strip().splitlines())
    return "\n".join(line for line in lines if line)


def _user_message(question: str, passages: Sequence[Hit]) -> str:
    # The reply is in the asker's language whatever the passages' (the fixed system prompt stays cached).
    language = detect(question)
    ask = f"Question: {question}"
    if language != DEFAULT_LANGUAGE:
        # Measured with the default model on Russian memos: "Answer in Russian." alone drew copied passages
        # and bare citations (2 of 4 stated the figure); restating the length and the citation, 4 of 4.
        ask += (f"\nAnswer in {language_name(language)}, in one to three sentences of your own, and cite the "
                "passage like [1].")
    if not passages:
        return ask
    body = "\n\n".join(f"[{i}] ({passage_label(h)})\n{_tidy(h.text)}" for i, h in enumerate(passages, 1))
    # A question in another language is also asked before the passages: on bench.reply_form's Russian questions
    # no reply was then in another language (3 of 8 before) and 7 of 8 were right (5 before).
    before = f"{ask}\n\n" if language != DEFAULT_LANGUAGE else ""
    return f"{before}Passages:\n\n{body}\n\n{ask}"


def build_prompt(
    question: str,
    hits: Sequence[Hit],
    *,
    n_ctx: int,
    count_prompt: Callable[[list[Message]], int],
    count_tokens: Callable[[str], int],
    history: Sequence[Turn] = (),
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_passage_tokens: int | None = None,
    system: str = SYSTEM_PROMPT,
) -> Prompt:
    """The messages for a question that fit `n_ctx` with room for the answer, trimmed in a fixed order.

    `hits` are best first. `max_passage_tokens` caps the passages' total size even when the context has
    room (a shorter prompt answers sooner on a CPU). Raises ContextOverflow only when the fixed
    instructions alone leave no room, which no sensible context size does.
    """
    question = question.strip()
    # Room for the answer: what was asked for, at most half the context; it gives way (down to
    # MIN_ANSWER_TOKENS) only before the last passage would have to be cut.
    answer_room = max(MIN_ANSWER_TOKENS, min(max_tokens, n_ctx // 2))
    # Given tidied (see _user_message); returned as found, unless cut to fit.
    passages = _capped(hits, max_passage_tokens, count_tokens)
    dropped = len(hits) - len(passages)
    turns = [Turn(t.question.strip(), t.answer.strip()) for t in history]
    dropped_turns = 0
    trimmed = False
    fixed = fixed_messages(system)

    def assemble() -> list[Message]:
        msgs = list(fixed)
        for t in turns:
            msgs += [{"role": "user", "content": t.question}, {"role": "assistant", "content": t.answer}]
        msgs.append({"role": "user", "content": _user_message(question, passages)})
        return msgs

    while True:
        messages = assemble()
        used = count_prompt(messages)
        over = used - (n_ctx - answer_room - _MARGIN)
        if over <= 0:
            return Prompt(messages, passages, turns, used, min(max_tokens, n_ctx - used - _MARGIN),
                          dropped, dropped_turns, trimmed)
        if len(passages) > 1:  # 1. the least relevant passage
            passages.pop()
            dropped += 1
            continue
        long_turn = next((i for i, t in enumerate(turns) if len(t.answer) > _SHORT_TURN_CHARS + 2), None)
        if long_turn is not None:  # 2. shorten the oldest long answer, then 3. drop the oldest turn
            t = turns[long_turn]
            turns[long_turn] = Turn(t.question, _shorten(t.answer, _SHORT_TURN_CHARS))
            trimmed = True
            continue
        if turns:
            turns.pop(0)
            dropped_turns += 1
            continue
        if answer_room > 4 * MIN_ANSWER_TOKENS:  # 4. a shorter answer, rather than no passage
            answer_room = max(4 * MIN_ANSWER_TOKENS, answer_room - over)
            continue
        if passages:  # 5. cut the one passage left to what fits
            cut = _cut(passages.pop(), over, count_tokens)
            passages += [cut] if cut is not None else []
            dropped += cut is None
            trimmed = True
            continue
        if answer_room > MIN_ANSWER_TOKENS:
            answer_room = max(MIN_ANSWER_TOKENS, answer_room - over)
            continue
        if len(question) > 200:  # 6. an enormous question: keep its beginning
            size = count_tokens(question)
            question = question[: _chars_for(question, size - over - 2, size)].rstrip() + " …"
            trimmed = True
            continue
        raise ContextOverflow(
            f"The model's context ({n_ctx} tokens) is too small for Hearth's instructions.",
            hint="Load the model with a larger context (--ctx).",
        )


def _asked_again(pieces: list[str], prompt: Prompt, model: ChatModel, *, on_token: Callable[[str], None] | None,
                 cancel: Callable[[], bool] | None) -> list[str]:
    """The reply asked for again after a first one that copied a passage header (told to start in words) or
    refused (without the instructions' way out); a second try that fails too gives way to the first refusal."""
    if copies_header("".join(pieces), final=True):
        again = [*prompt.messages[:-1], {**prompt.messages[-1],
                                         "content": f"{prompt.messages[-1]['content']}\n{START_IN_WORDS}"}]
        room = prompt.max_tokens - model.count_tokens(START_IN_WORDS) - 2
        return _read(model.stream(again, max_tokens=max(MIN_ANSWER_TOKENS, room), cancel=cancel),
                     on_token, hold=False)[0]
    again = [{"role": "system", "content": ANSWER_PROMPT}, *prompt.messages[1:]]
    second, _ = _read(model.stream(again, max_tokens=prompt.max_tokens, cancel=cancel), on_token, hold=True)
    if not _fails("".join(second), final=True):
        return second
    if on_token is not None:
        on_token("".join(pieces))
    return pieces


def _capped(hits: Sequence[Hit], max_tokens: int | None, count_tokens: Callable[[str], int]) -> list[Hit]:
    """The first passages that fit `max_tokens` together (the first one always); all of them without a cap."""
    if max_tokens is None:
        return list(hits)
    total, kept = 0, []
    for h in hits:
        total += count_tokens(_tidy(h.text)) + 8
        if kept and total > max_tokens:
            break
        kept.append(h)
    return kept


def _cut(hit: Hit, over: int, count_tokens: Callable[[str], int]) -> Hit | None:
    """The passage cut by `over` tokens (tidied, ending "…"); None when under 80 characters would be left."""
    text = _tidy(hit.text)
    size = count_tokens(text)
    keep = _chars_for(text, size - over - 2, size)
    return None if keep < 80 else replace(hit, text=text[:keep].rstrip() + " …")


def _chars_for(text: str, target: int, tokens: int) -> int:
    """About how many leading characters of `text` (of `tokens` tokens) make `target` tokens."""
    if target <= 0 or not text:
        return 0
    # Token density varies along a text; cut a little more than proportionally so it converges fast.
    return int(len(text) * min(1.0, target / max(1, tokens)) * 0.95)


def _shorten(text: str, chars: int) -> str:
    """At most `chars` + 2 characters of `text`: whole sentences when they fit, with an ellipsis."""
    if len(text) <= chars:
        return text
    cut = text[:chars]
    end = max(cut.rfind(". "), cut.rfind("\n"))
    return (cut[: end + 1] if end > chars // 2 else cut.rstrip()) + " …"


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:,|;|and)\s*", group):
        if re.fullmatch(r"\d+\s*[-–]\s*\d+", part):
            a, b = (int(x) for x in re.split(r"\s*[-–]\s*", part))
            out += list(range(a, b + 1)) if 0 < b - a < 10 else [a, b]
        elif part.strip().isdigit():
            out.append(int(part))
    return out


def clean_citations(text: str, n_sources: int) -> str:
    """Rewrite citation markers as [n] or [n, m], removing numbers of passages that were not given."""

    def fix(m: re.Match[str]) -> str:
        valid = [n for n in dict.fromkeys(_numbers(m.group(1))) if 1 <= n <= n_sources]
        return "[" + ", ".join(map(str, valid)) + "]" if valid else ""

    return _CITATION.sub(fix, text)


def cited_numbers(text: str, n_sources: int) -> list[int]:
    """The passage numbers a reply cites, in first-seen order, ignoring numbers no passage has."""
    seen: list[int] = []
    for m in _CITATION.finditer(text):
        for n in _numbers(m.group(1)):
            if 1 <= n <= n_sources and n not in seen:
                seen.append(n)
    return seen


# A passage's header as the prompt gives it: "[2] (notes.md, Travel)". A reply that opens with one, or is
# nothing but a number in brackets, copies the prompt's layout instead of answering: the default 0.5B model
# did so for 7 of the 50 questions of the evaluation's tuning half ("[1]", or "[1] (choosing.en.html, 3.1.10.
# …)" and the passage after it). Asked again with START_IN_WORDS after the question, it answered in words for
# all 7 (README "Not found is an answer"). Only for English questions: on Russian memos it copied the passage for
# all 4 test questions, each copy holding the answer, and asked again it answered 1 of the 4 right.
_HEADER = re.compile(r"\[\d{1,3}\]\s*")
_HEADER_OPENING = re.compile(r"\[\d{0,3}")  # what a reply has written while it may still become one
START_IN_WORDS = "Start with the answer in words, not with a passage number."
_HOLD_CHARS = 16  # an opening still undecided after this much text is shown as it is


def copies_header(text: str, *, final: bool) -> bool | None:
    """Whether a reply (as written so far, or whole when `final`) opens by copying a passage's header:
    "[1]" alone, or "[1] (" and a label. None while the opening cannot tell yet ("[", "[1] ")."""
    opening = text.lstrip()
    m = _HEADER.match(opening)
    if m is not None:
        rest = opening[m.end():]
        if rest.startswith("("):
            return True
        if not rest.strip():
            return True if final else None
        return False
    if not final and len(opening) < _HOLD_CHARS and (not opening or _HEADER_OPENING.fullmatch(opening)):
        return None
    return False


def _fails(text: str, *, final: bool) -> bool | None:
    """Whether a reply (so far, or whole when `final`) opens with a copied passage header or a refusal, both of
    which the model is asked again for (see `answer`); None while its opening cannot tell yet."""
    header = copies_header(text, final=final)
    return header if header is not False else opens_refusal(text, final=final)


def _read(stream: Iterator[str], on_token: Callable[[str], None] | None, *, hold: bool
          ) -> tuple[list[str], float | None]:
    """A reply's pieces and when the first came, each passed on to `on_token` as it comes; with `hold`, an
    opening that may be a copied passage header or a refusal is passed on only once it is neither, and the
    model is stopped as soon as it is one (a copy would run on to the whole passage)."""
    pieces: list[str] = []
    first: float | None = None
    told = not hold
    try:
        for piece in stream:
            if first is None:
                first = time.perf_counter()
            pieces.append(piece)
            if not told:
                failing = _fails("".join(pieces), final=False)
                if failing:
                    break
                if failing is None:
                    continue
                told = True
                piece = "".join(pieces)
            if on_token is not None:
                on_token(piece)
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # a stopped generator frees the model (llama.cpp's lock) now, not when collected
    if not told and on_token is not None and pieces and not _fails("".join(pieces), final=True):
        on_token("".join(pieces))
    return pieces, first


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD = re.compile(r"[^\W\d_]{4,}")
_UNSAID = re.compile(r"\b(?:do(?:es)? not|don't|doesn't)\s+(?:say|mention|contain|state)", re.IGNORECASE)


def supporting_passages(text: str, question: str, passages: Sequence[Hit]) -> list[int]:
    """The passages (1-based) that hold what a reply states: all its figures, and most of its new words.

    For replies without citations (small models often give none): a passage supports the reply when it
    contains every number the reply states and at least half of the reply's words that the question did
    not already bring, or three of them; the best such passage is returned, or none.
    """
    if not text.strip() or _UNSAID.search(text):
        return []
    asked = {w.lower() for w in _WORD.findall(question)}
    numbers = set(_NUMBER.findall(text))
    words = {w.lower() for w in _WORD.findall(text)} - asked
    best: tuple[float, int] | None = None
    for i, h in enumerate(passages, 1):
        body = h.text.lower()
        if numbers and not numbers <= set(_NUMBER.findall(body)):
            continue
        found = sum(1 for w in words if w in body)
        if not numbers and found < min(3, max(1, (len(words) + 1) // 2)):
            continue
        score = 2 * len(numbers) + found
        if best is None or score > best[0]:
            best = (score, i)
    return [best[1]] if best is not None and best[0] > 0 else []


def answer(
    question: str,
    hits: Sequence[Hit],
    model: ChatModel,
    *,
    history: Sequence[Turn] = (),
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_passage_tokens: int | None = None,
    on_token: Callable[[str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Answer:
    """Answer a question from retrieved passages (best first), streaming pieces to `on_token`.

    Raises Cancelled when `cancel()` turns true; the model stays loaded and usable.
    """
    t0 = time.perf_counter()
    if not hits:
        if on_token is not None:
            on_token(NOTHING_FOUND)
        return Answer(NOTHING_FOUND, [], [], {"total": time.perf_counter() - t0})
    count_prompt = model.count_prompt
    n_ctx = model.n_ctx
    for attempt in range(2):
        prompt = build_prompt(
            question, hits, n_ctx=n_ctx, count_prompt=count_prompt, count_tokens=model.count_tokens,
            history=history, max_tokens=max_tokens, max_passage_tokens=max_passage_tokens,
        )
        t_prompt = time.perf_counter()
        try:
            stream = model.stream(prompt.messages, max_tokens=prompt.max_tokens, cancel=cancel)
            break
        except ContextOverflow:
            if attempt:
                raise
            n_ctx = n_ctx * 3 // 4  # the count was off (a model without count_prompt): budget tighter
    # Pieces are shown as they come, but for an English question's reply an opening that may be a copied
    # passage header (see `copies_header`) or a refusal (`opens_refusal`) is held until it is told, and, when it
    # is one, not shown at all: the model is asked again once, for a copied header with the question's message
    # told to start in words, for a refusal with the instructions' way out left out (ANSWER_PROMPT). The 0.5B
    # model refused 30 of 100 answerable office questions worded apart from their notes (README "A refusal asked
    # again"); whether a reply given then stands is for the not-found rule (rag/abstain.py) to say, as for any
    # other. A reply in another language drops a copied label and title from its opening instead (rag/openings.py).
    # The final text drops citations of passages that were not given.
    english = detect(question) == DEFAULT_LANGUAGE  # where asking again was measured to help
    if english:
        pieces, first = _read(stream, on_token, hold=True)
    else:
        opening = OpeningFilter(prompt.passages, on_token, separator=HEADING_SEPARATOR)
        first = _read(stream, opening, hold=False)[1]
        opening.finish()
        pieces = [opening.text()]
    retried = english and bool(_fails("".join(pieces), final=True))
    if retried:
        pieces = _asked_again(pieces, prompt, model, on_token=on_token, cancel=cancel)
    end = time.perf_counter()
    text = clean_citations("".join(pieces).strip(), len(prompt.passages))
    timings = {
        "prompt_build": t_prompt - t0,
        "first_token": (first or end) - t_prompt,
        "generation": end - t_prompt,
        "total": end - t0,
    }
    usage = {
        "prompt_tokens": prompt.tokens,
        "passages_given": len(prompt.passages),
        "passages_dropped": prompt.dropped_passages,
        "turns_given": len(prompt.history),
        "turns_dropped": prompt.dropped_turns,
    }
    usage.update({k: int(v) for k, v in model.last_usage.items() if k in ("cached_tokens", "completion_tokens")})
    if retried:
        usage["asked_again"] = 1  # the first reply copied a passage header or refused (`_fails`)
    cited = cited_numbers(text, len(prompt.passages))
    supported = [] if cited else supporting_passages(text, question, prompt.passages)
    return Answer(text, list(prompt.passages), cited, timings, usage, supported=supported)


"""Whether the line a reply's answer comes from gives that answer: the chat model asked, sentence by sentence.

A small model asked about something its passages do not hold answers from the nearest line anyway ("Casimir
Oldenwrath approves domestic business trips." from "Trips abroad must be approved by Casimir Oldenwrath.").
The embedder and the aligner see the same words on both sides and bear such a reply out. The chat model,
shown only the one line closest to each sentence of the reply, the question and that sentence, and asked
whether the line gives this answer, tells them apart better than any other signal measured on questions worded
apart from the notes (README "The model checks the answer's line"). Nothing is generated: the log-probabilities
of "Yes" and "No" as its reply are read, one short prompt a sentence.

The model that checks is the larger built-in one (Qwen2.5-Coder-1.5B) when it is installed, else the chat
model (rag.components.check_model_name). The larger one tells the two apart so much better that its verdict also
works the other way: a reply the passages bear out, which thin evidence alone would withhold (a question worded
apart from its note), stands when it is sure the line gives it (`CheckBounds.kept_from`). Each model's verdicts
are read with bounds chosen for it (`BOUNDS`; README "The larger model checks the answer").

The larger model also reads the question itself with the four lines closest to it, before any reply: a probe on
its hidden state (rag/probe.py; a middle layer's) says whether they answer it, and the grounding policy (rag/grounding.py) withholds
any reply where they do not, and shows the lines where the rule would withhold a reply to a question they answer
(`lines_answer`; README "The larger model reads the question's lines").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from inference.chat import ChatModel, Message
from inference.errors import Cancelled, ModelError
from rag.probe import Probe, probe_for

DENIED_BELOW = -1.0  # log P(Yes) - log P(No), best sentence, under which the reply's lines do not give it


@dataclass(frozen=True)
class CheckBounds:
    """Where one model's verdicts are read, log P(Yes) - log P(No) of its best sentence: under `denied_below` the
    reply's lines do not give it, and from `kept_from` (when set) they do so surely that a reply the evidence
    alone would withhold stands (rag/grounding.py). A verdict of None decides nothing."""

    denied_below: float
    kept_from: float | None = None
    checked_below: float | None = None  # evidence (rag/grounding.py) from which a kept reply is not checked at all
    # The model's verdict on the question itself, over the lines closest to it (`AnswerCheck.lines_answer`): under
    # `unanswered_below` the documents do not answer it, whatever the reply; from `answered_from` they do, and the
    # lines stand in for a reply the rule withholds. None: not asked.
    unanswered_below: float | None = None
    answered_from: float | None = None

    def checks(self, evidence: float) -> bool:
        """Whether a reply the evidence lets stand is checked (one that strong is not, when a bound is set)."""
        return self.checked_below is None or evidence < self.checked_below

    def denies(self, verdict: float | None) -> bool:
        """Whether the model said the reply's lines do not give it."""
        return verdict is not None and verdict < self.denied_below

    def asks_question(self) -> bool:
        """Whether the model is asked if the lines closest to the question answer it."""
        return self.unanswered_below is not None or self.answered_from is not None

    def unanswered(self, verdict: float | None) -> bool:
        """Whether the model said the lines closest to the question do not answer it."""
        return verdict is not None and self.unanswered_below is not None and verdict < self.unanswered_below

    def answered(self, verdict: float | None) -> bool:
        """Whether the model said, surely enough to outweigh the rule, that the lines closest to the question answer it."""
        return verdict is not None and self.answered_from is not None and verdict >= self.answered_from

    def keeps(self, verdict: float | None) -> bool:
        """Whether the model said, surely enough to outweigh thin evidence, that the lines give the reply."""
        return verdict is not None and self.kept_from is not None and verdict >= self.kept_from


# Chosen per model on the tuning questions' stored replies (README "The larger model checks the answer"); any
# other model (a user's own) is read with the default chat model's bounds, which only deny.
DEFAULT_BOUNDS = CheckBounds(DENIED_BELOW)
BOUNDS: Mapping[str, CheckBounds] = {
    # The probe's bounds on the question's lines (rag/probe.py): chosen on the tuning sets' stored replies, with each
    # office scored by a probe fitted without it, and on the thirtieth to thirty-fifth office's run (never fitted
    # on); README "The larger model reads the question's lines".
    "qwen2.5-coder-1.5b-instruct-q4_k_m": CheckBounds(denied_below=1.0, kept_from=1.25, checked_below=0.75,
                                                      unanswered_below=-0.25, answered_from=0.25),
}


def model_stem(model_name: str) -> str:
    """A model's name without folder or ".gguf": a built-in model's name, or its file's stem."""
    return model_name.rsplit("/", 1)[-1].removesuffix(".gguf")


def bounds_for(model_name: str) -> CheckBounds:
    """The bounds a model's verdicts are read with (a built-in model's name, or its file's)."""
    stem = model_stem(model_name)
    return BOUNDS.get(stem, DEFAULT_BOUNDS)


MAX_SENTENCES = 4  # sentences of a reply read (a longer reply's first ones)
_CLAIM_CHARS = 300  # a sentence is read up to this many characters
_SYSTEM = "You check facts. Answer Yes or No."
QUESTION_LINES = 4  # lines closest to the question that the model reads to say whether they answer it
_LINE_CHARS = 600  # each of them read up to this many characters
_LINES_SYSTEM = "You read an office's documents and answer only from them."
log = logging.getLogger(__name__)


def prompt(line: str, question: str, claim: str) -> list[Message]:
    """The messages after which "Yes" and "No" are scored."""
    ask = (f"Text: {line}\n\nQuestion: {question}\nAnswer: {claim[:_CLAIM_CHARS]}\n\n"
           "Does the text give this answer to the question? Answer Yes or No.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": ask}]


def _over_lines(lines: Sequence[str], question: str, ask: str) -> list[Message]:
    """The lines, numbered, then the question and what is asked of it."""
    body = "\n".join(f"{i}. {' '.join(line.split())[:_LINE_CHARS]}" for i, line in enumerate(lines, 1))
    return [{"role": "system", "content": _LINES_SYSTEM},
            {"role": "user", "content": f"Lines:\n{body}\n\nQuestion: {question}\n{ask}"}]


def lines_prompt(lines: Sequence[str], question: str) -> list[Message]:
    """The messages after which "Yes" and "No" say whether the lines answer the question."""
    return _over_lines(lines, question, "Do the lines answer the question? Answer Yes or No.")


class AnswerCheck:
    """How surely the chat model says that a line gives a sentence as the answer to the question: for each
    (sentence, line) pair, log P("Yes") - log P("No") as its reply; the best pair counts (one sentence the
    passages give is enough). None when the model cannot give a prompt's probabilities (a shared inference
    server's chat API) or the prompt does not fit: then nothing is concluded.

    `model` is a ChatModel or a function returning one, called only when there is something to check; `bounds`
    say how its verdicts are read (`bounds_for` the model)."""

    def __init__(self, model: ChatModel | Callable[[], ChatModel], *,
                 cancel: Callable[[], bool] | None = None, bounds: CheckBounds = DEFAULT_BOUNDS,
                 probe: Probe | None = None) -> None:
        self._model = model
        self.cancel = cancel
        self.bounds = bounds
        self.probe = probe  # read on the question's lines; None: the one that ships for the model, if any
        # The last lines read and their verdict: the same lines asked again (passages under the search's floor,
        # read before they go to the model and again in the answer's check) are not read twice.
        self._asked: tuple[tuple[str, tuple[str, ...]], float | None] | None = None

    def __call__(self, question: str, pairs: Sequence[tuple[str, str]]) -> float | None:
        if not pairs:
            return None
        best: float | None = None
        for claim, line in pairs[:MAX_SENTENCES]:
            verdict = self._yes_no(prompt(line, question, claim))
            if verdict is None:
                return None
            best = verdict if best is None else max(best, verdict)
        return best

    def lines_answer(self, question: str, lines: Sequence[str]) -> float | None:
        """Whether the lines closest to the question (at most QUESTION_LINES) answer it, before any reply: the
        probe's log-odds (rag/probe.py) on the model's hidden state after `lines_prompt`, at the layer the probe
        reads. None when it cannot tell: no lines, no probe for this model, or a model that gives no hidden state
        (a shared server)."""
        lines = [line for line in lines if line.strip()][:QUESTION_LINES]
        if not lines:
            return None
        key = (question, tuple(lines))
        if self._asked is not None and self._asked[0] == key:
            return self._asked[1]
        model = self._loaded()
        if model is None:
            return None
        probe = self.probe or probe_for(model_stem(str(getattr(model, "name", ""))))
        if probe is None or not hasattr(model, "last_state" if probe.layer is None else "layer_state"):
            return None
        if self.cancel is not None and self.cancel():
            raise Cancelled("Answer stopped.")
        messages = lines_prompt(lines, question)
        try:
            state = model.last_state(messages) if probe.layer is None else model.layer_state(messages, probe.layer)
            verdict: float | None = probe.score(state)
        except (ModelError, ValueError) as exc:
            log.warning("question's lines not read: %s", exc)
            verdict = None
        self._asked = (key, verdict)
        return verdict

    def _loaded(self) -> ChatModel | None:
        """The model, loaded on first use; None (with a warning) when it cannot be."""
        try:
            return self._model() if callable(self._model) else self._model
        except ModelError as exc:  # a checker that cannot be loaded concludes nothing; the answer goes on
            log.warning("answer not checked: %s", exc)
            return None

    def _yes_no(self, messages: list[Message]) -> float | None:
        """log P("Yes") - log P("No") as the model's reply to `messages`; None when it cannot say."""
        model = self._loaded()
        if model is None:
            return None
        if self.cancel is not None and self.cancel():
            raise Cancelled("Answer stopped.")
        try:
            yes, no = model.reply_logprobs(messages, "Yes"), model.reply_logprobs(messages, "No")
        except ModelError:
            return None
        if yes is None or no is None:
            return None
        return sum(yes) - sum(no)


def denied(verdict: float | None) -> bool:
    """Whether the default chat model said the reply's lines do not give it (None, no verdict: not denied)."""
    return DEFAULT_BOUNDS.denies(verdict)

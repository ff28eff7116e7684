"""Whether the line a reply's answer comes from gives that answer: the chat model asked, sentence by sentence.

A small model asked about something its passages do not hold answers from the nearest line anyway ("Casimir
Oldenwrath approves domestic business trips." from "Trips abroad must be approved by Casimir Oldenwrath.").
The embedder and the aligner see the same words on both sides and bear such a reply out. The chat model,
shown only the one line closest to each sentence of the reply, the question and that sentence, and asked
whether the line gives this answer, tells them apart better than any other signal measured on questions worded
apart from the notes (README "The model checks the answer's line"). Nothing is generated: the log-probabilities
of "Yes" and "No" as its reply are read, one short prompt a sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inference.chat import ChatModel, Message
from inference.errors import Cancelled, ModelError

DENIED_BELOW = -1.0  # log P(Yes) - log P(No), best sentence, under which the reply's lines do not give it
MAX_SENTENCES = 4  # sentences of a reply read (a longer reply's first ones)
_CLAIM_CHARS = 300  # a sentence is read up to this many characters
_SYSTEM = "You check facts. Answer Yes or No."


def prompt(line: str, question: str, claim: str) -> list[Message]:
    """The messages after which "Yes" and "No" are scored."""
    ask = (f"Text: {line}\n\nQuestion: {question}\nAnswer: {claim[:_CLAIM_CHARS]}\n\n"
           "Does the text give this answer to the question? Answer Yes or No.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": ask}]


class AnswerCheck:
    """How surely the chat model says that a line gives a sentence as the answer to the question: for each
    (sentence, line) pair, log P("Yes") - log P("No") as its reply; the best pair counts (one sentence the
    passages give is enough). None when the model cannot give a prompt's probabilities (a shared inference
    server's chat API) or the prompt does not fit: then nothing is concluded.

    `model` is a ChatModel or a function returning one, called only when there is something to check."""

    def __init__(self, model: ChatModel | Callable[[], ChatModel], *,
                 cancel: Callable[[], bool] | None = None) -> None:
        self._model = model
        self.cancel = cancel

    def __call__(self, question: str, pairs: Sequence[tuple[str, str]]) -> float | None:
        if not pairs:
            return None
        model = self._model() if callable(self._model) else self._model
        best: float | None = None
        for claim, line in pairs[:MAX_SENTENCES]:
            if self.cancel is not None and self.cancel():
                raise Cancelled("Answer stopped.")
            messages = prompt(line, question, claim)
            try:
                yes, no = model.reply_logprobs(messages, "Yes"), model.reply_logprobs(messages, "No")
            except ModelError:
                return None
            if yes is None or no is None:
                return None
            verdict = sum(yes) - sum(no)
            best = verdict if best is None else max(best, verdict)
        return best


def denied(verdict: float | None) -> bool:
    """Whether the model said the reply's lines do not give it (None, no verdict: not denied)."""
    return verdict is not None and verdict < DENIED_BELOW

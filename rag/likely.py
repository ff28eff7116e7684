"""How likely the chat model finds a question after reading a passage: a reader of question and passage together.

The embedder reads the question and each passage apart, and keywords only count words; neither tells which of
two neighbouring sections answers (the AppArmor principles or the section on enabling it, `debc` or `debi`).
The chat model can: given a passage and asked to write a question it answers, the log-probability of the
user's own question, token by token, is higher after the passage that answers it (query likelihood, as in
unsupervised passage re-ranking). Nothing is generated; each passage is read once, with the question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inference.chat import ChatModel, Message
from inference.errors import Cancelled, ModelError
from rag.store import Hit

PASSAGE_CHARS = 2000  # a passage is read up to this many characters (Hearth's passages are shorter)
_SYSTEM = "You are a helpful assistant."
_ASK = "Write one question that this passage answers."


def prompt(hit: Hit) -> list[Message]:
    """The messages after which the question is scored: the passage under its heading, and the request."""
    text = hit.text[:PASSAGE_CHARS]
    body = f"({hit.heading})\n{text}" if hit.heading else text
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": f"Passage:\n{body}\n\n{_ASK}"}]


class QuestionLikelihood:
    """A `rag.retrieval.QuestionScorer` over a chat model: each passage's score is the summed log-probability
    of the question's tokens as the model's reply to `prompt(passage)`.

    `model` is a ChatModel or a function returning one, called only when there is something to read: when
    no passage reaches `floor` in similarity (`ask` answers "nothing found" without the model), nothing is."""

    def __init__(self, model: ChatModel | Callable[[], ChatModel], *, cancel: Callable[[], bool] | None = None,
                 floor: float = 0.0) -> None:
        self._model = model
        self.cancel = cancel
        self.floor = floor

    def score(self, question: str, hits: Sequence[Hit]) -> list[float] | None:
        """One score a passage, higher for the likelier; None when the model cannot tell, or no passage
        reaches the floor (then the order stays as the other signals made it)."""
        if not any(h.score >= self.floor for h in hits):
            return None
        model = self._model() if callable(self._model) else self._model
        scores: list[float] = []
        for hit in hits:
            if self.cancel is not None and self.cancel():
                raise Cancelled("Answer stopped.")
            try:
                found = model.reply_logprobs(prompt(hit), question)
            except ModelError:  # a question too long for the context: the passages keep their order
                return None
            if found is None:
                return None
            scores.append(sum(found))
        return scores

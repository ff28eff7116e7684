"""A copied label and title dropped from the opening of a reply in another language (rag/openings.py)."""

from __future__ import annotations

import pytest

from rag.answer import answer
from rag.loaders import HEADING_SEPARATOR
from rag.openings import OpeningFilter, copied_opening
from rag.store import Hit
from tests.fakes import ScriptedModel

PARKING = Hit("/notes/parkovka.md", None, "Офис › Парковка", 0.7,
              "Парковка\nМеста на подземной парковке закреплены за отделами.", 0, 60, "p#0")
TRAINING = Hit("/notes/obuchenie.md", None, "Обучение", 0.5, "Обучение\nНа курсы до 40 000 рублей в год.", 0, 40, "o#0")
HITS = [PARKING, TRAINING]


@pytest.mark.parametrize("reply, kept", [
    ("[1] (parkovka.md, Парковка)\nПарковка\nМеста закреплены за отделами.", "Места закреплены за отделами."),
    ("[2] obuchenie.md, Обучение\nОбучение\nДо 40 000 рублей в год.", "До 40 000 рублей в год."),
    ("[1] Парковка\nМеста закреплены.", "Места закреплены."),
    ("(parkovka.md, Парковка)\n\nМеста закреплены.", "Места закреплены."),
    ("Места закреплены за отделами [1].", "Места закреплены за отделами [1]."),
    ("[1] Места закреплены за отделами.", "[1] Места закреплены за отделами."),
    ("Парковка платная.\nНо места закреплены.", "Парковка платная.\nНо места закреплены."),
    ("[1] [2] [3]", "[1] [2] [3]"),
    # Run on into the copy of another passage: the reply ends where the copy begins.
    ("Места закреплены за отделами.\n\n[2] (obuchenie.md, Обучение)\nОбучение\nНа курсы до 40 000 рублей.",
     "Места закреплены за отделами."),
    ("Места закреплены:\n[1] за отделами,\n[2] за гостями.", "Места закреплены:\n[1] за отделами,\n[2] за гостями."),
])
def test_the_copied_opening_goes_and_the_reply_stays(reply: str, kept: str) -> None:
    streamed: list[str] = []
    opening = OpeningFilter(HITS, streamed.append, separator=HEADING_SEPARATOR)
    for i in range(0, len(reply), 3):  # as a model streams it, a few characters a piece
        opening(reply[i:i + 3])
    opening.finish()
    assert opening.text() == "".join(streamed).rstrip() == kept
    one = OpeningFilter(HITS, None, separator=HEADING_SEPARATOR)
    for c in reply:  # and one a piece ("[", "1", "]", " (", …)
        one(c)
    one.finish()
    assert one.text() == kept


def test_the_opening_alone() -> None:
    reply = "[1] (parkovka.md, Парковка)\nПарковка\nМеста закреплены."
    assert reply[copied_opening(reply, HITS, separator=HEADING_SEPARATOR, final=True):] == "Места закреплены."
    assert copied_opening("Места закреплены.", HITS, separator=HEADING_SEPARATOR, final=True) == 0


def test_an_opening_is_held_only_while_it_may_be_a_copy() -> None:
    assert copied_opening("[1] (parko", HITS, separator=HEADING_SEPARATOR, final=False) is None
    assert copied_opening("Обуч", HITS, separator=HEADING_SEPARATOR, final=False) is None  # a title begun
    assert copied_opening("Места на", HITS, separator=HEADING_SEPARATOR, final=False) == 0
    seen: list[str] = []
    opening = OpeningFilter(HITS, seen.append, separator=HEADING_SEPARATOR)
    opening("Места ")
    assert seen == ["Места "]  # passed on at once: it cannot become a copy


def test_a_russian_question_is_answered_without_the_copied_opening() -> None:
    model = ScriptedModel("[1] (parkovka.md, Парковка)\nПарковка\nМеста на подземной парковке закреплены за отделами.")
    shown: list[str] = []
    out = answer("Где парковаться гостям?", HITS, model, on_token=shown.append)
    assert out.text.startswith("Места на подземной парковке") and "".join(shown) == out.text
    message = model.prompts[-1][-1]["content"]
    # The question and its language are said before the passages too.
    assert message.index("Где парковаться гостям?") < message.index("Passages:") < message.rindex("Где парковаться")
    english = ScriptedModel("Visitors park in bay 4 [1].")
    answer("Where do visitors park?", HITS, english)
    assert english.prompts[-1][-1]["content"].startswith("Passages:")

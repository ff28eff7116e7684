"""bench.reply_form's counting, on replies written for the test (no model)."""

from __future__ import annotations

import json

from bench.reply_form import DATA, copied, foreign, summary, tagged
from rag.store import Hit

HITS = [Hit("/notes/parkovka.md", None, "Парковка", 0.8, "Гости оставляют машины у входа B.", 0, 33, "p#0"),
        Hit("/notes/it-help.md", None, "IT support › Helpdesk", 0.5, "Extension 4410.", 0, 15, "i#0")]


def test_a_copied_label_or_title_is_counted_and_an_answer_is_not():
    assert copied("[1] (parkovka.md, Парковка)\nПарковка\nГости оставляют машины у входа B.", HITS)
    assert copied("Парковка. Гости оставляют машины у входа B [1].", HITS)
    assert copied("Helpdesk: call 4410.", HITS)  # the last part of a heading path is the title
    assert copied("See it-help.md for the number.", HITS)
    assert not copied("Гости оставляют машины у входа B [1].", HITS)
    assert not copied("[1] Guests park at entrance B.", HITS)


def test_a_reply_in_another_language_or_half_latin_is_foreign():
    assert not foreign("Гости оставляют машины у входа B [1].", "ru")
    assert foreign("Guests leave their cars at entrance B [1].", "ru")
    assert foreign("Гости: guests leave their cars at the visitor spaces near entrance B [1].", "ru")
    assert foreign("[1] [2] [3]", "ru")
    assert not foreign("Guests park at entrance B [1].", "en")


def test_the_summary_counts_per_language():
    rows = [{"language": "ru", "copied": True, "foreign": False, "right": True},
            {"language": "ru", "copied": False, "foreign": True, "right": False},
            {"language": "en", "copied": False, "foreign": False, "right": True}]
    assert summary(rows) == {"ru": {"questions": 2, "copied": 1, "foreign": 1, "right": 1},
                             "en": {"questions": 1, "copied": 0, "foreign": 0, "right": 1}}


def test_the_tried_layout_and_the_data():
    user = tagged("Где гости оставляют машины?", HITS[:1])
    assert user.startswith('Passages:\n<passage n="1" source="parkovka.md" section="Парковка">\n')
    assert "Translate into Russian" in user and user.rstrip().endswith("whatever you take from the passages.")
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert {q["language"] for q in data["questions"]} == {"ru", "en"}
    from rag.language import detect

    for q in data["questions"]:
        note = data["notes"][q["note"]]
        assert detect(q["question"]) == q["language"]
        if detect(note) == q["language"]:  # asked in the note's own language: its answer phrase is in the note
            assert q["fact"].casefold() in note.casefold(), q

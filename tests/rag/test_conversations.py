"""Stored conversations: per workspace, with each answer's sources; list, reopen, delete, export."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.errors import Cancelled, UsageError
from rag.answer import Answer
from rag.conversations import ConversationStore
from rag.service import Hearth, HearthConfig
from rag.store import Hit
from tests.fakes import HashEmbedder, ScriptedModel


def sample_answer() -> Answer:
    hits = [
        Hit("/docs/onboarding.md", None, "Welcome › Holidays", 0.8, "28 days of annual leave", 10, 33, "a1"),
        Hit("/docs/travel.pdf", 2, "5. Meals", 0.4, "EUR 60 abroad", 0, 13, "b7"),
    ]
    return Answer("You get 28 days [1].", hits, [1], {"total": 1.5})


@pytest.fixture
def store(tmp_path):
    s = ConversationStore(tmp_path / "conversations.sqlite")
    yield s
    s.close()


def test_turns_keep_their_sources_and_citations(store, tmp_path):
    conv = store.create("default", "  How many   days of leave?  ")
    assert conv.title == "How many days of leave?"
    store.add_turn(conv.id, "How many days of leave?", sample_answer())
    store.add_turn(conv.id, "And abroad?", None, text="The allowance", error="Answer stopped.")
    reopened = ConversationStore(tmp_path / "conversations.sqlite").get(conv.id)
    assert reopened is not None and reopened.turn_count == 2
    first, second = reopened.turns
    assert first.answer is not None and first.answer.cited == [1]
    assert first.answer.sources[0] == sample_answer().sources[0]  # page, heading, offsets, chunk id
    assert first.answer.sources[1].page == 2 and first.answer.timings == {"total": 1.5}
    assert second.answer is None and second.text == "The allowance" and second.error == "Answer stopped."
    assert [t.question for t in reopened.history()] == ["How many days of leave?"]
    assert reopened.questions() == ["How many days of leave?"]


def test_list_per_workspace_most_recent_first_and_delete(store):
    a = store.create("default", "first")
    b = store.create("default", "second")
    other = store.create("clients", "elsewhere")
    store.add_turn(a.id, "q", sample_answer())  # using a conversation moves it to the top
    assert [c.id for c in store.list("default")] == [a.id, b.id]
    assert store.list("default")[0].turn_count == 1
    assert [c.id for c in store.list("clients")] == [other.id]
    assert store.delete(a.id) and not store.delete(a.id)
    assert store.get(a.id) is None
    assert store.delete_workspace("default") == 1 and store.list("default") == []
    assert store.list("clients")


def test_missing_or_foreign_conversations_are_usage_errors(store):
    conv = store.create("clients", "x")
    with pytest.raises(UsageError):
        store.require(conv.id, "default")
    with pytest.raises(UsageError):
        store.add_turn(9999, "q", sample_answer())


def test_export_markdown_lists_sources_with_citations(store):
    conv = store.create("default", "Leave")
    store.add_turn(conv.id, "How many days of leave?", sample_answer())
    md = store.export_markdown(conv.id)
    assert md.startswith("# Leave\n")
    assert "## How many days of leave?\n\nYou get 28 days [1].\n" in md
    assert "- [1] onboarding.md — Welcome › Holidays (cited)" in md
    assert "- [2] travel.pdf, page 2 — 5. Meals (not cited)" in md


@pytest.fixture
def hearth(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nStaff get 28 days of annual leave per year.\n")
    (docs / "travel.md").write_text("# Travel\n\nThe meal allowance abroad is EUR 60 per day.\n")
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=HashEmbedder(),
               chat_model=ScriptedModel("Staff get 28 days [1]."))
    h.ingest([docs])
    return h


def test_ask_in_a_conversation_stores_turns_and_gives_the_model_the_history(hearth):
    conv = hearth.new_conversation("Leave")
    first = hearth.ask("How many days of annual leave?", conversation=conv)
    assert first.conversation_id == conv and first.to_json()["conversation"] == conv
    hearth.ask("And for part-time staff?", conversation=conv)
    prompt = hearth.chat_model.prompts[1]
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert prompt[1]["content"] == "How many days of annual leave?"
    assert prompt[2]["content"] == "Staff get 28 days [1]."
    stored = hearth.conversations.get(conv)
    assert [t.question for t in stored.turns] == ["How many days of annual leave?", "And for part-time staff?"]
    assert stored.turns[0].answer.sources and stored.turns[0].answer.cited == [1]
    with pytest.raises(UsageError):
        hearth.ask("x", conversation=conv, workspace="another")


def test_a_stopped_answer_is_kept_with_what_was_shown(hearth):
    conv = hearth.new_conversation("Stopped")
    seen: list[str] = []
    with pytest.raises(Cancelled):
        hearth.ask("How many days of annual leave?", conversation=conv, on_token=seen.append,
                   cancel=lambda: len(seen) >= 2)
    turn = hearth.conversations.get(conv).turns[0]
    assert turn.answer is None and turn.text == "".join(seen) and turn.error


def _supported_answer() -> Answer:
    from dataclasses import replace

    from rag.quotes import Quote, SentenceSupport, Support

    quote = Quote("/docs/onboarding.md", None, "Welcome › Holidays", "28 days of annual leave", 10, 33, 1, 0.91)
    support = Support("You get 28 days [1].", [SentenceSupport("You get 28 days.", 0, 1)], [quote], False)
    return replace(sample_answer(), support=support)


def test_supporting_quotes_are_stored_with_the_turn_and_exported(store, tmp_path):
    conv = store.create("default", "Leave")
    store.add_turn(conv.id, "How many days of leave?", _supported_answer())
    turn = ConversationStore(tmp_path / "conversations.sqlite").require(conv.id).turns[0]
    assert turn.answer is not None and turn.answer.support == _supported_answer().support
    md = store.export_markdown(conv.id)
    assert "> 28 days of annual leave\n> — onboarding.md — Welcome › Holidays" in md


def test_a_history_from_version_1_opens_and_gains_quotes(tmp_path):
    import sqlite3

    path = tmp_path / "conversations.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL,"
        " title TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);"
        "CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation INTEGER NOT NULL"
        " REFERENCES conversations (id) ON DELETE CASCADE, question TEXT NOT NULL, text TEXT NOT NULL,"
        " error TEXT, sources TEXT NOT NULL, cited TEXT NOT NULL, timings TEXT NOT NULL, created REAL NOT NULL);"
        "INSERT INTO conversations VALUES (1, 'default', 'Old one', 1.0, 1.0);"
        "INSERT INTO turns VALUES (1, 1, 'Old question?', 'Old reply.', NULL, '[]', '[]', '{}', 1.0);"
        "PRAGMA user_version = 1;"
    )
    old.commit()
    old.close()
    store = ConversationStore(path)
    try:
        conv = store.require(1)
        assert [t.text for t in conv.turns] == ["Old reply."] and conv.turns[0].answer.support is None
        store.add_turn(1, "New question?", _supported_answer())
        assert store.require(1).turns[1].answer.support.quotes[0].text == "28 days of annual leave"
        assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 4
    finally:
        store.close()


def test_redact_sources_takes_a_forgotten_documents_text_out_of_stored_turns(store, tmp_path):
    from dataclasses import replace

    from rag.conversations import REMOVED, REMOVED_REPLY
    from rag.quotes import Quote, SentenceSupport, Support

    conv = store.create("default", "Leave")
    store.add_turn(conv.id, "How many days of leave?", _supported_answer())
    # A turn whose reply was replaced by the quotes themselves (the model's own was unsupported).
    quotes = [Quote("/docs/onboarding.md", None, "Welcome › Holidays", "28 days of annual leave", 10, 33, 1, 0.9),
              Quote("/docs/travel.pdf", 2, "5. Meals", "EUR 60 abroad", 0, 13, 2, 0.8)]
    fallback = Support("The documents say: 28 days of annual leave [1]. EUR 60 abroad [2].",
                       [SentenceSupport(q.text, i, q.passage) for i, q in enumerate(quotes)], quotes, True)
    store.add_turn(conv.id, "Leave and meals?", replace(sample_answer(), support=fallback))
    other = store.create("other", "Same document, another workspace")
    store.add_turn(other.id, "How many days?", _supported_answer())
    untouched = store.create("default", "Only travel")
    store.add_turn(untouched.id, "Meals?", replace(sample_answer(), sources=sample_answer().sources[1:], cited=[]))

    assert store.redact_sources("default", ["/docs/onboarding.md"]) == 2
    first, second = ConversationStore(tmp_path / "conversations.sqlite").require(conv.id).turns
    for turn in (first, second):
        gone, kept = turn.answer.sources
        assert (gone.source, gone.text, gone.heading, gone.start) == ("/docs/onboarding.md", REMOVED, None, 10)
        assert kept.text == "EUR 60 abroad" and kept.heading == "5. Meals"  # another document: kept
        # The reply cites the forgotten document, so it was drawn from it: it goes too (#65); its numbers stay.
        assert turn.answer.cited == [1] and turn.text == REMOVED_REPLY
    assert [q.text for q in first.answer.support.quotes] == [REMOVED]
    assert first.answer.support.text == REMOVED_REPLY
    assert [s.text for s in first.answer.support.sentences] == [REMOVED] * len(first.answer.support.sentences)
    # A reply shown as its quotes loses exactly the forgotten document's quotes (and the model's hidden reply).
    assert [q.text for q in second.answer.support.quotes] == [REMOVED, "EUR 60 abroad"]
    assert second.answer.support.text == f"The documents say: {REMOVED} [1]. EUR 60 abroad [2]."
    assert [s.text for s in second.answer.support.sentences] == [REMOVED, "EUR 60 abroad"]
    md = store.export_markdown(conv.id)
    assert "28 days of annual leave" not in md and "Welcome › Holidays" not in md and REMOVED in md
    # Other workspaces keep theirs (the document may still be indexed there); a second pass changes nothing.
    assert store.require(other.id).turns[0].answer.sources[0].text == "28 days of annual leave"
    assert store.redact_sources("default", ["/docs/onboarding.md"]) == 0
    assert store.redact_sources("default", []) == 0
    assert store.require(untouched.id).turns[0].answer.sources[0].text == "EUR 60 abroad"


def test_forgetting_a_document_redacts_the_conversations_that_quoted_it(hearth):
    conv = hearth.new_conversation("Leave")
    hearth.ask("How many days of annual leave?", conversation=conv)
    removed = hearth.forget([Path(s.source) for s in hearth.sources()])
    assert removed and hearth.last_redacted == 1
    assert hearth.conversations.redact_sources("default", removed) == 0  # already done by forget
    stored = hearth.conversations.get(conv).turns[0].answer
    assert stored.sources and all(h.text.startswith("[removed:") for h in stored.sources)


def test_forgetting_a_summarised_document_takes_the_summary_and_answers_drawn_from_it(store, tmp_path):
    """A stored summary (every passage the document's, all cited) and an answer citing the document lose their
    text when it is forgotten (#65); an answer citing only another document keeps its own."""
    from dataclasses import replace

    from rag.conversations import REMOVED, REMOVED_REPLY

    handbook = [Hit("/docs/handbook.md", None, f"Part {i}", 1.0, f"Handbook part {i}: the code is 4417.", 0, 30, f"h{i}")
                for i in (1, 2)]
    summary = Answer("The handbook sets the door code 4417 [1] and the rota [2].", handbook, [1, 2], {"total": 9.0},
                     searched_for="summary of handbook.md")
    conv = store.create("default", "Handbook")
    store.add_turn(conv.id, "Summarise handbook.md", summary)
    store.add_turn(conv.id, "And the meals?", replace(sample_answer(), text="EUR 60 abroad [2].", cited=[2]))
    store.add_turn(conv.id, "Leave?", sample_answer())

    assert store.redact_sources("default", ["/docs/handbook.md"]) == 1
    summarised, meals, leave = ConversationStore(tmp_path / "conversations.sqlite").require(conv.id).turns
    assert summarised.text == REMOVED_REPLY and "4417" not in store.export_markdown(conv.id)
    assert [h.text for h in summarised.answer.sources] == [REMOVED, REMOVED]
    assert summarised.question == "Summarise handbook.md"  # the user's own words stay
    assert store.redact_sources("default", ["/docs/onboarding.md"]) == 2
    meals, leave = ConversationStore(tmp_path / "conversations.sqlite").require(conv.id).turns[1:]
    assert meals.text == "EUR 60 abroad [2]."  # cites travel.pdf only: not drawn from the onboarding document
    assert leave.text == REMOVED_REPLY

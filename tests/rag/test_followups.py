"""Follow-ups made standalone (rag/followups.py), scope (--in) and the stored `searched_for`."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.config import HearthConfig
from rag.followups import Earlier, leans_on_conversation, may_lean_on_conversation, names_in, standalone_query
from rag.retrieval import RetrievalOptions
from rag.service import Hearth
from tests.fakes import HashEmbedder, ScriptedModel

SHEETS = {
    "falcon": ("Falcon", "Maria Lind", "EUR 1.2 million", "30 June 2026", "Nordfrost"),
    "heron": ("Heron", "Tomas Berg", "EUR 640,000", "19 December 2025", "Brightloom"),
    "kestrel": ("Kestrel", "Ana Ruiz", "EUR 2.35 million", "31 March 2027", "Velotrack"),
}


def test_a_pronoun_takes_the_subject_of_the_previous_turn():
    earlier = [Earlier("What is Project Falcon's budget?")]
    assert standalone_query("Who leads it?", earlier) == "Who leads Project Falcon?"
    assert standalone_query("What is its end date?", earlier) == "What is Project Falcon's end date?"
    assert standalone_query("Where is the team based?", earlier) == "Where is the Project Falcon team based?"


SHEETS_ALIKE = {"/d/project-heron.md", "/d/project-falcon.md", "/d/project-kestrel.md"}


def test_an_ellipsis_asks_another_fact_of_the_same_subject_or_changes_a_detail():
    earlier = [Earlier("Who leads Heron?", documents=("/d/project-heron.md",))]
    assert standalone_query("And the end date?", earlier) == "Heron the end date?"
    # A short question naming nothing that several documents answer alike, the conversation's among them.
    assert standalone_query("next milestone?", earlier, alike=lambda q: SHEETS_ALIKE) == "Heron next milestone?"
    # "and abroad?" changes a detail of the last question: it continues it.
    assert standalone_query("and abroad?", [Earlier("What is the meal allowance in Germany?")]) == \
        "What is the meal allowance in Germany? abroad?"
    # A newly named subject in the ellipsis replaces the old one.
    assert standalone_query("And Heron's?", [Earlier("What's the project code for Falcon?")]) == \
        "What's the project code for Heron?"


def test_a_subject_named_two_turns_back_is_carried_through_a_middle_turn():
    first = Earlier("Tell me about the Kestrel project", "Tell me about the Kestrel project")
    second_query = standalone_query("Who leads it?", [first])
    assert second_query == "Who leads Kestrel?"
    second = Earlier("Who leads it?", second_query)
    assert standalone_query("And when does it end?", [first, second]) == "when does Kestrel end?"


def test_a_turn_that_names_nothing_takes_its_subject_from_the_document_it_drew_on():
    earlier = [Earlier("heron budget pls", "heron budget pls", ("/d/project-heron.md",))]
    assert standalone_query("who is the lead?", earlier, alike=lambda q: SHEETS_ALIKE) == \
        "project heron who is the lead?"


def test_a_short_question_one_document_answers_clearly_is_a_change_of_topic():
    earlier = [Earlier("Who leads Heron?", documents=("/d/project-heron.md",))]
    assert standalone_query("core working hours?", earlier, alike=lambda q: {"/d/handbook.md"}) == \
        "core working hours?"
    # Several documents alike, but none the conversation was about: also a change of topic.
    assert standalone_query("password length?", earlier, alike=lambda q: {"/d/it.md", "/d/security.md"}) == \
        "password length?"


def test_a_question_that_names_its_own_subject_is_searched_as_it_is():
    earlier = [Earlier("Who leads Falcon?"), Earlier("When does it end?", "When does Falcon end?")]
    for question in ("What is the daily meal allowance abroad?", "What is the budget for Project Heron?",
                     "What is the minimum password length now?"):
        assert standalone_query(question, earlier) == question
    # "And Osprey, where are we on that one?" refers to what it names itself.
    assert standalone_query("And Osprey, where are we on that one?", earlier) == "And Osprey, where are we on that one?"
    assert not leans_on_conversation("What are our core working hours?")
    assert not leans_on_conversation("What's the budget?") and may_lean_on_conversation("What's the budget?")
    assert leans_on_conversation("Who approves that?") and leans_on_conversation("And the deputy?")


def test_names_are_capitalised_runs_codes_and_quotes_but_not_a_capitalised_first_word():
    assert names_in("Remind me what Project Plover covers") == ["Project Plover"]
    assert names_in("Looking at Heron again") == ["Heron"]
    assert names_in("Who signs PRJ-104?") == ["PRJ-104"]
    assert names_in('Where is the "Blue Lake" office?') == ["Blue Lake"]
    assert names_in("What's the budget?") == []


@pytest.fixture
def sheets(tmp_path):
    folder = tmp_path / "projects"
    folder.mkdir()
    for key, (name, lead, budget, end, supplier) in SHEETS.items():
        (folder / f"project-{key}.md").write_text(
            f"# Project {name}\n\n## Ownership\n\nThe project lead is {lead}.\n\n"
            f"## Budget\n\nThe approved budget is {budget}.\n\n## Schedule\n\nThe project ends on {end}.\n\n"
            f"## Supplier\n\nThe supplier is {supplier}.\n")
    other = tmp_path / "policies"
    other.mkdir()
    (other / "travel.md").write_text("# Travel\n\n## Meals\n\nThe daily meal allowance abroad is EUR 60.\n")
    return tmp_path


@pytest.fixture
def hearth(tmp_path, sheets):
    # The hash embedder's similarities are bucket collisions ("19 December 2025" against "schedule end"): the
    # rankings alone decide, as they would between the sheets' alike sections with a real embedder.
    config = HearthConfig(data_dir=tmp_path / "data", min_score=0.0, retrieval=RetrievalOptions(similarity_weight=0.0))
    h = Hearth(config, embedder=HashEmbedder(),
               chat_model=ScriptedModel("As the passages say [1]."))
    report = h.ingest([sheets / "projects", sheets / "policies"])
    assert report.added == 4 and not report.failed
    return h


def test_a_stored_conversation_keeps_what_each_turn_searched_for(hearth):
    conv = hearth.new_conversation("Heron")
    first = hearth.ask("Who leads Project Heron?", conversation=conv)
    assert first.searched_for == "Who leads Project Heron?" and first.to_json()["searched_for"] == first.searched_for
    second = hearth.ask("When does it end?", conversation=conv)
    assert second.searched_for == "When does Project Heron end?"
    assert Path(second.sources[0].source).name == "project-heron.md"
    third = hearth.ask("And the supplier?", conversation=conv)
    assert "Heron" in third.searched_for and Path(third.sources[0].source).name == "project-heron.md"
    stored = hearth.conversations.require(conv).turns
    assert [t.searched_for for t in stored] == [first.searched_for, second.searched_for, third.searched_for]
    assert third.to_json()["conversation_id"] == conv


def test_a_corrected_query_is_searched_instead(hearth):
    result = hearth.ask("When does it end?", query="Kestrel schedule end")
    assert result.searched_for == "Kestrel schedule end"
    assert Path(result.sources[0].source).name == "project-kestrel.md"


def test_scope_by_file_and_by_folder(hearth, sheets):
    falcon = sheets / "projects" / "project-falcon.md"
    hits = hearth.search("supplier", k=5, scope=[falcon])
    assert hits and {Path(h.source).name for h in hits} == {"project-falcon.md"}
    hits = hearth.search("meal allowance", k=5, scope=[sheets / "projects"])
    assert hits and all(Path(h.source).parent.name == "projects" for h in hits)
    answer = hearth.ask("Who is the supplier?", scope=[sheets / "projects" / "project-kestrel.md"])
    assert {Path(h.source).name for h in answer.sources} == {"project-kestrel.md"}
    with pytest.raises(UsageError, match="not an indexed document"):
        hearth.search("supplier", scope=[sheets / "nowhere.md"])


def test_what_a_named_document_says_is_asked_of_that_document_alone(hearth):
    answer = hearth.ask("What does project-heron say about the supplier?")
    assert answer.sources and {Path(h.source).name for h in answer.sources} == {"project-heron.md"}

"""The question's likelihood after each of the first passages (rag/likely.py, RetrievalOptions.likely_weight):
how the search uses it, with a chat model whose probabilities are scripted, and what the real default model
makes of passages that answer a question and neighbouring ones that do not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from inference.chat import ChatModelDefaults
from inference.errors import Cancelled
from rag.likely import PASSAGE_CHARS, QuestionLikelihood, prompt
from rag.retrieval import RetrievalOptions
from rag.service import Hearth, HearthConfig
from rag.store import Hit
from tests.fakes import HashEmbedder, ScriptedModel
from tests.notes import write_notes

ROOT = Path(__file__).resolve().parents[2]
NOTES = {f"room-{name.lower()}.md": f"# {name} room\n\nThe {name} room is a meeting room on floor {floor}. It has "
                                    f"{seats} seats and a whiteboard. Book the {name} room in the shared calendar.\n"
         for name, floor, seats in (("Oak", 1, 12), ("Birch", 2, 6), ("Pine", 3, 4), ("Elm", 4, 8), ("Ash", 5, 10),
                                    ("Yew", 6, 3), ("Fir", 7, 14))}
QUESTION = "How many seats does the meeting room on floor 6 have?"


class Liking(ScriptedModel):
    """Replies with fixed text; finds a reply likely after a passage holding `word`, unlikely otherwise."""

    def __init__(self, word: str) -> None:
        super().__init__("Three seats.")
        self.word = word
        self.read: list[str] = []

    def reply_logprobs(self, messages, reply):
        self.read.append(messages[-1]["content"])
        return [-1.0] * 5 if self.word in messages[-1]["content"] else [-30.0] * 5


@pytest.fixture
def rooms(tmp_path) -> Hearth:
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", model_ranking=True), embedder=HashEmbedder())
    assert h.ingest([write_notes(tmp_path / "notes", NOTES)]).added == len(NOTES)
    return h


def names(hits) -> list[str]:
    return [Path(h.source).name for h in hits]


def test_the_passage_after_which_the_question_is_likeliest_comes_first(rooms):
    lined = names(rooms.search(QUESTION, k=7, lines=True))
    first = RetrievalOptions().likely_candidates
    assert lined.index("room-pine.md") in range(1, first) and lined.index("room-fir.md") >= first
    model = Liking("The Pine room")
    rooms._chat_model = model
    likely = names(rooms.search(QUESTION, k=7, lines=True, likely=True))
    assert likely[0] == "room-pine.md"
    assert likely[first:] == lined[first:]  # only the first candidates are read and ordered again
    assert [n for n in likely[:first] if n != "room-pine.md"] == [n for n in lined[:first] if n != "room-pine.md"]
    # Each once, under its heading.
    assert len(model.read) == first
    assert all(text.startswith("Passage:\n(") for text in model.read)
    # A passage the model likes, but beyond the first candidates, stays where it was.
    rooms._chat_model = Liking("The Fir room")
    assert names(rooms.search(QUESTION, k=7, lines=True, likely=True)) == lined
    rooms._chat_model = model
    # Without lines (a plain search), or with likely off, or with weight 0, nothing is read.
    model.read.clear()
    assert names(rooms.search(QUESTION, k=5, lines=False, likely=True)) == names(rooms.search(QUESTION, k=5,
                                                                                             lines=False))
    assert names(rooms.search(QUESTION, k=7)) == lined  # a search that does not say weighs lines, reads nothing
    assert names(rooms.search(QUESTION, k=7, lines=True)) == lined
    rooms.config = replace(rooms.config, retrieval=RetrievalOptions(likely_weight=0.0))
    assert names(rooms.search(QUESTION, k=7, lines=True, likely=True)) == lined
    assert model.read == []


def test_a_model_that_cannot_tell_leaves_the_order_as_the_lines_made_it(rooms):
    lined = names(rooms.search(QUESTION, k=5, lines=True))
    rooms._chat_model = ScriptedModel("Three seats.")  # ChatModelDefaults.reply_logprobs: None
    assert names(rooms.search(QUESTION, k=5, lines=True, likely=True)) == lined


def test_reading_stops_when_the_answer_is_cancelled(rooms):
    rooms._chat_model = Liking("Pine")
    with pytest.raises(Cancelled):
        rooms.search(QUESTION, k=5, lines=True, likely=True, cancel=lambda: True)
    with pytest.raises(Cancelled):
        rooms.ask(QUESTION, cancel=lambda: True)


def test_ask_reads_the_passages_for_a_question_as_asked_but_not_for_a_follow_up_made_standalone(rooms):
    model = Liking("The Yew room")
    rooms._chat_model = model
    out = rooms.ask(QUESTION)
    assert len(model.read) == RetrievalOptions().likely_candidates
    assert names(out.sources)[0] == "room-yew.md"
    model.read.clear()
    follow = rooms.ask("And the Oak room?", history=[QUESTION])
    assert follow.searched_for != "And the Oak room?"  # made standalone: no lines, so nothing read
    assert model.read == []


def test_with_model_ranking_off_ask_reads_nothing_and_keeps_the_order_the_lines_made(rooms, tmp_path):
    lines_first = names(rooms.search(QUESTION, k=5, lines=True))[0]
    assert lines_first != "room-yew.md"  # the liked passage comes first only through the model's reading
    assert HearthConfig(data_dir=tmp_path / "other").model_ranking is False  # off unless asked for
    quick = Hearth(replace(rooms.config, model_ranking=False), embedder=HashEmbedder())
    model = Liking("The Yew room")
    quick._chat_model = model
    out = quick.ask(QUESTION)
    assert model.read == []
    assert names(out.sources)[0] == lines_first


def test_the_prompt_holds_the_passage_under_its_heading_and_no_more_than_its_first_characters():
    long = Hit(chunk_id="c", source="/a.md", page=None, heading="Rooms › Pine", text="x" * (PASSAGE_CHARS + 500),
               score=0.5, start=0, end=10)
    user = prompt(long)[-1]["content"]
    assert user.startswith("Passage:\n(Rooms › Pine)\n") and "x" * PASSAGE_CHARS in user
    assert "x" * (PASSAGE_CHARS + 1) not in user
    assert QuestionLikelihood(ChatModelDefaults()).score("q?", [long]) is None


@pytest.mark.slow
def test_the_default_model_finds_the_question_likelier_after_the_passage_that_answers(tmp_path):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path

    demo_cache = ROOT / ".data" / "demo" / "cache"
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    cases = [  # (question, the section that answers, a neighbouring one of the same document that does not)
        ("How do I turn on the firewall on a new server?",
         ("Firewall › Enabling it", "To turn the firewall on, run `ufw enable` as root, after allowing SSH with "
          "`ufw allow ssh`, or the session will be cut."),
         ("Firewall › Principles", "A firewall filters network traffic by rules: each packet is compared with "
          "the rules in order, and the first rule that matches decides whether it passes.")),
        ("Who approves an expense claim above EUR 500?",
         ("Expenses › Approval", "Claims above EUR 500 need the approval of the department head before finance "
          "pays them."),
         ("Expenses › Submitting", "Expense claims are submitted through the finance portal by the 5th of the "
          "following month, with the receipts attached.")),
        ("Which package shows the differences between two Debian source packages?",
         ("Tools › debdiff", "debdiff compares two versions of a Debian source package, or two binary packages, "
          "and prints the differences between them."),
         ("Tools › debc", "debc lists the contents of the binary packages built from a source package, file by "
          "file, after a build.")),
    ]
    for question, (good_heading, good), (bad_heading, bad) in cases:
        hits = [Hit(chunk_id=h, source="/doc.md", page=None, heading=h, text=t, score=0.5, start=0, end=len(t))
                for h, t in ((bad_heading, bad), (good_heading, good))]
        bad_score, good_score = QuestionLikelihood(model).score(question, hits)
        assert good_score > bad_score, (question, good_score, bad_score)
    model.close()


def test_nothing_is_read_and_no_model_loaded_when_no_passage_is_relevant(tmp_path):
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.99), embedder=HashEmbedder())
    assert h.ingest([write_notes(tmp_path / "notes", NOTES)]).added == len(NOTES)
    assert h.search(QUESTION, k=5, lines=True, likely=True)  # passages, none relevant enough to answer from
    assert h._chat_model is None
    model = Liking("The Pine room")
    calls = []
    scorer = QuestionLikelihood(lambda: calls.append(1) or model, floor=0.5)
    low = Hit(chunk_id="c", source="/a.md", page=None, heading=None, text="The Pine room", score=0.4, start=0,
              end=13)
    assert scorer.score(QUESTION, [low]) is None and calls == []
    assert scorer.score(QUESTION, [replace(low, score=0.6)]) == [-5.0] and calls == [1]

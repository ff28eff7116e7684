"""The quote benchmark's held-out questions (bench/data/quotes_heldout.json): written after the aligner was
tuned on the retrieval set, so they must share no question and no gold place with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import corpus
from bench.retrieval import QUESTIONS_FILE, load_questions
from tests.bench.test_retrieval_questions import answer_problems, place_problems

HELDOUT = Path(__file__).resolve().parents[2] / "bench" / "data" / "quotes_heldout.json"
DOC = json.loads(HELDOUT.read_text(encoding="utf-8"))
TUNED = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))


def test_same_format_and_corpus_as_the_tuned_set():
    assert set(DOC) == set(TUNED) and DOC["corpus"] == TUNED["corpus"]
    assert len(DOC["questions"]) == 30
    for q in DOC["questions"]:
        assert set(q) == {"id", "question", "answer", "gold", "paraphrased"}, q
        assert q["answer"] and all(isinstance(a, str) and a.strip() == a and a for a in q["answer"]), q["id"]
        assert (q["gold"]["page"] is not None) == q["gold"]["file"].endswith(".pdf"), q["id"]
    assert [q.id for q in load_questions(HELDOUT)] == [q["id"] for q in DOC["questions"]]


def test_nothing_is_shared_with_the_tuned_set():
    def place(q):
        return q["gold"]["file"], q["gold"]["page"], q["gold"]["section"]

    ids = {q["id"] for q in TUNED["questions"]}
    places = {place(q) for q in TUNED["questions"]}
    questions = {q["question"].casefold() for q in TUNED["questions"]}
    for q in DOC["questions"]:
        assert q["id"] not in ids and place(q) not in places and q["question"].casefold() not in questions, q["id"]
    assert len({place(q) for q in DOC["questions"]}) == len(DOC["questions"])


@pytest.mark.skipif(not corpus.is_unpacked(), reason="corpus not unpacked (python -m bench.corpus fetches it)")
def test_gold_places_and_answers_are_in_the_corpus():
    problems = place_problems(DOC["questions"]) + answer_problems(DOC["questions"])
    assert not problems, "\n".join(problems)

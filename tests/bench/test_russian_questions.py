"""The Russian benchmark's question set (bench/data/russian_questions.json): Russian, spread, and answered where
its gold says, in the Russian pages of the pinned Debian Administrator's Handbook; no network."""

from __future__ import annotations

import json
import re

import pytest

from bench import corpus
from bench.retrieval import load_questions
from bench.russian import QUESTIONS_FILE, RU_HANDBOOK, RUSSIAN
from rag.language import detect
from tests.bench.test_retrieval_questions import answer_problems, place_problems

DOC = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
QUESTIONS = DOC["questions"]


def test_structure_and_corpus_pin():
    assert DOC["corpus"] == [{"package": RU_HANDBOOK.name, "version": RU_HANDBOOK.version, "language": "ru-RU"}]
    assert (RU_HANDBOOK.version, RU_HANDBOOK.sha256) == (corpus.HANDBOOK.version, corpus.HANDBOOK.sha256)
    assert len(QUESTIONS) >= 30
    for q in QUESTIONS:
        assert set(q) == {"id", "question", "english", "answer", "gold", "paraphrased"}, q
        assert q["gold"]["file"] in RUSSIAN.manifest and q["gold"]["section"], q["id"]
        assert detect(q["question"]) == "ru" and detect(q["english"]) == "en", q["id"]
    assert [q.id for q in load_questions(QUESTIONS_FILE)] == [q["id"] for q in QUESTIONS]


def test_questions_are_spread_over_the_pages_one_per_place():
    places = [(q["gold"]["file"], q["gold"]["section"]) for q in QUESTIONS]
    assert len(set(places)) == len(places)
    assert len({f for f, _ in places}) >= 30


def test_questions_do_not_repeat_the_section_titles():
    for q in QUESTIONS:
        title = re.sub(r"^[0-9A-ZА-Я]+(\.[0-9]+)*\.\s+", "", q["gold"]["section"].split(" › ")[-1])
        # A one-word title is often the program asked about ("devscripts", "LXC"); a longer one is not repeated.
        assert len(title.split()) == 1 or title.casefold() not in q["question"].casefold(), q["id"]


@pytest.mark.skipif(not corpus.is_unpacked(which=RUSSIAN),
                    reason="Russian corpus not unpacked (python -m bench.russian fetches it)")
def test_gold_places_and_answers_are_in_the_russian_pages():
    root = corpus.corpus_root(which=RUSSIAN)
    problems = place_problems(QUESTIONS, root) + answer_problems(QUESTIONS, root)
    assert not problems, "\n".join(problems)

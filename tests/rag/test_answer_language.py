"""Answers in the asker's language, whatever the documents' language; quotes verbatim in the document's."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answer import SYSTEM_PROMPT, build_prompt
from rag.language import detect
from rag.store import Hit
from tests.rag.russian_memos import MEMOS, QUESTIONS, write_memos

ROOT = Path(__file__).resolve().parents[2]


def memo(name: str) -> Hit:
    text = MEMOS[name]
    return Hit(name, None, None, 0.6, text, 0, len(text), name)


def words(text: str) -> int:
    return len(text.split())


def prompt_for(question: str) -> str:
    p = build_prompt(question, [memo("otpusk.txt")], n_ctx=4096, count_tokens=words,
                     count_prompt=lambda ms: sum(words(m["content"]) for m in ms))
    assert p.messages[0]["content"] == SYSTEM_PROMPT  # the cached prefix never changes with the language
    return p.messages[-1]["content"]


def test_a_question_not_in_english_asks_for_the_answer_in_its_language():
    assert prompt_for("Какова продолжительность отпуска?").endswith(
        "Answer in Russian, in one to three sentences of your own, and cite the passage like [1].")
    assert "Answer in German" in prompt_for("Wie lange dauert der Jahresurlaub?")
    # English questions keep the prompt they always had, Russian passages or not.
    assert prompt_for("How long is the annual leave?").endswith("Question: How long is the annual leave?")


# The real default model (about a minute on 2 cores).
@pytest.mark.slow
def test_a_russian_question_is_answered_in_russian_with_a_russian_quote(tmp_path):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.service import Hearth, HearthConfig

    demo_cache = ROOT / ".data" / "demo" / "cache"
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", n_threads=2, embed_threads=2), chat_model=model)
    hearth.ingest([write_memos(tmp_path / "memos")])
    question, source, fact = QUESTIONS[2]  # the daily allowance abroad: 50 euros
    a = hearth.ask(question)
    assert detect(a.text) == "ru", a.text
    shown = a.to_json()
    assert fact in shown["answer"], shown["answer"]
    # Quotes are the memo's own words, at their offsets in it.
    quoted = [q for q in shown["quotes"] if Path(q["source"]).name == source]
    assert quoted, shown["quotes"]
    text = hearth.document_text(Path(quoted[0]["source"]))
    assert all(text[q["start"]:q["end"]] == q["text"] for q in quoted)

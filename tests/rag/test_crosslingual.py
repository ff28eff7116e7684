"""An English question about Russian memos: the query translated by the chat model, the searches fused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.crosslingual import fuse_rankings, main_languages, search_across_languages, translate
from rag.language import detect
from rag.store import Hit
from tests.fakes import ScriptedModel
from tests.rag.russian_memos import ENGLISH_QUESTION, write_memos

ROOT = Path(__file__).resolve().parents[2]


def hit(cid: str, score: float = 0.5) -> Hit:
    return Hit(f"/{cid}", None, None, score, cid, 0, 1, cid)


def test_main_languages_are_those_with_a_third_of_the_passages_or_so():
    assert main_languages({"ru": 70, "en": 25, "de": 5}) == ["ru"]
    assert main_languages({"ru": 40, "en": 60}) == ["en", "ru"]
    assert main_languages({}) == []


def test_a_translation_in_the_wrong_language_or_an_echo_is_not_used():
    assert translate("annual leave", "ru", ScriptedModel("«Ежегодный отпуск»")) == "Ежегодный отпуск"
    assert translate("annual leave", "ru", ScriptedModel("annual leave")) is None
    assert translate("annual leave", "ru", ScriptedModel("The leave is 28 days.")) is None


def test_a_question_is_translated_only_into_the_workspaces_other_main_languages():
    model = ScriptedModel("ежегодный отпуск")
    searched: list[str] = []

    def search(q: str) -> list[Hit]:
        searched.append(q)
        return [hit("memo")] if q == "ежегодный отпуск" else [hit("other")]

    found = search_across_languages("annual leave", search=search, passages=lambda: {"ru": 9, "en": 1},
                                    model=lambda: model, k=5)
    assert searched == ["annual leave", "ежегодный отпуск"] and found.query == "annual leave / ежегодный отпуск"
    assert {h.chunk_id for h in found.hits} == {"memo", "other"}
    assert model.prompts[0][-1]["content"] == "Translate into Russian: annual leave"
    # A Russian question in a Russian workspace, or an English one in an English workspace: no model at all.
    for question, passages in (("ежегодный отпуск", {"ru": 9}), ("annual leave", {"en": 9, "ru": 1})):
        found = search_across_languages(question, search=search, passages=lambda p=passages: p,
                                        model=lambda: pytest.fail("no translation wanted"), k=5)
        assert found.query == question


def test_fused_rankings_keep_each_passages_best_score():
    fused = fuse_rankings([[hit("a", 0.1), hit("b", 0.1)], [hit("b", 0.6), hit("c", 0.6)]], 5)
    assert [h.chunk_id for h in fused] == ["b", "a", "c"] and fused[0].score == 0.6


# The real default model and embedder (about a minute on 2 cores).
@pytest.mark.slow
def test_an_english_question_finds_the_russian_memo(tmp_path):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.service import Hearth, HearthConfig

    demo_cache = ROOT / ".data" / "demo" / "cache"
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", n_threads=2, embed_threads=2), chat_model=model)
    hearth.ingest([write_memos(tmp_path / "memos")])
    question, memo, fact = ENGLISH_QUESTION
    a = hearth.ask(question)
    assert a.searched_for.startswith(question + " / ")  # the translation searched is shown
    assert detect(a.searched_for.split(" / ")[1]) == "ru"
    assert Path(a.sources[0].source).name == memo, [s.source for s in a.sources]
    assert fact in a.to_json()["answer"]
    assert detect(a.text) == "en", a.text  # the reply in the asker's language


class CyrillicPieces:
    """A tokenizer's view of an English-only embedder: a Cyrillic word in pieces, one a letter."""

    name = "english-only"

    def count_tokens(self, text: str) -> int:
        return sum(len(w) if any("а" <= c <= "я" for c in w.lower()) else 1 for w in text.split())


def test_a_notice_when_most_passages_are_in_a_language_the_embedder_cannot_read():
    from rag.crosslingual import language_notice
    from tests.fakes import HashEmbedder

    notice = language_notice({"ru": 1533, "en": 285, "fr": 1}, CyrillicPieces())
    assert notice is not None and (notice.language, notice.passages, notice.total) == ("ru", 1533, 1819)
    assert notice.text.startswith("1,533 of the 1,819 passages here are in Russian, which the embedding model "
                                  "english-only does not read")
    assert language_notice({"ru": 40, "en": 60}, CyrillicPieces()) is None  # mostly English
    assert language_notice({"ru": 90}, HashEmbedder()) is None  # a model that reads Russian (one piece a word)
    assert language_notice({}, CyrillicPieces()) is None

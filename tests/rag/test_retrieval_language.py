"""Hybrid search of Russian memos with the real default embedder, which reads English only."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.retrieval import reads
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder
from tests.rag.russian_memos import QUESTIONS, write_memos


class PieceEmbedder(HashEmbedder):
    """Counts every letter of a Cyrillic word as a token, as an English tokenizer does (more or less)."""

    def count_tokens(self, text: str) -> int:
        return 2 + sum(len(w) if any("а" <= c <= "я" for c in w.lower()) else 1 for w in text.split())


def test_an_embedder_reads_english_always_and_another_language_by_its_pieces_per_word():
    assert reads(PieceEmbedder(), "How long is the annual leave?", 3.0)
    assert not reads(PieceEmbedder(), "Какова продолжительность отпуска?", 3.0)
    assert reads(HashEmbedder(), "Какова продолжительность отпуска?", 3.0)  # one piece a word: a multilingual model


@pytest.fixture(scope="module")
def memos(tmp_path_factory) -> Hearth:
    tmp = tmp_path_factory.mktemp("memos")
    hearth = Hearth(HearthConfig(data_dir=tmp / "data", n_threads=2, embed_threads=2))
    hearth.ingest([write_memos(tmp / "memos")])
    return hearth


def test_the_memo_that_answers_in_other_word_forms_ranks_first(memos):
    for question, memo, _ in QUESTIONS:
        hits = memos.search(question, k=5)
        assert Path(hits[0].source).name == memo, (question, [Path(h.source).name for h in hits])
        # Above the relevance floor, so that `ask` answers from it.
        assert hits[0].score >= memos.config.min_score

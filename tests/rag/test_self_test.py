from __future__ import annotations

import pytest

from inference.chat import ChatModelDefaults
from inference.errors import UsageError
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder


class EchoQuestionModel(ChatModelDefaults):
    """Writes a 'question' from the passage's first words, as a model would paraphrase it."""

    name = "echo"
    n_ctx = 4096

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages, *, max_tokens=60, temperature=0.0, cancel=None):
        words = messages[-1]["content"].split()
        yield "What about " + " ".join(words[:8]) + "?\nextra line ignored"


class SameQuestionModel(EchoQuestionModel):
    def stream(self, messages, *, max_tokens=60, temperature=0.0, cancel=None):
        yield "What is the weather like today?"


@pytest.fixture
def docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    topics = ["invoices are paid by the finance team within thirty days of receipt",
              "the fire alarm is tested every monday morning at nine o'clock sharp",
              "parking permits for the underground garage are issued by reception staff",
              "the coffee machine on level three is descaled weekly by facilities staff"]
    for i, t in enumerate(topics):
        (d / f"doc{i}.txt").write_text(f"Notice {i}: {t} and this applies to everyone working here.")
    return d


def test_self_test_finds_passages_from_their_questions(tmp_path, docs):
    h = Hearth(HearthConfig(data_dir=tmp_path / "d"), embedder=HashEmbedder(), chat_model=EchoQuestionModel())
    h.ingest([docs])
    report = h.self_test(n=10, k=3)
    assert len(report.items) == 4  # only four passages exist
    assert report.rate(3) == 1.0 and report.rate(1) >= 0.75
    assert all(i.question.startswith("What about Notice") and "\n" not in i.question for i in report.items)
    out = report.to_json()
    assert out["n"] == 4 and out["hit@3"] == 1.0 and len(out["items"]) == 4


def test_self_test_reports_misses(tmp_path, docs):
    h = Hearth(HearthConfig(data_dir=tmp_path / "d"), embedder=HashEmbedder(), chat_model=SameQuestionModel())
    h.ingest([docs])
    report = h.self_test(n=4, k=1)
    assert report.rate(1) <= 0.25  # one question for all passages can match at most one of them
    assert any(i.rank is None for i in report.items)


def test_self_test_on_empty_workspace_and_bad_n(tmp_path):
    h = Hearth(HearthConfig(data_dir=tmp_path / "d"), embedder=HashEmbedder(), chat_model=EchoQuestionModel())
    assert h.self_test(n=5).items == []
    with pytest.raises(UsageError):
        h.self_test(n=0)

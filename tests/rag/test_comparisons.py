"""Comparisons through the service (rag/comparisons.py): bad inputs, and the chat's "what changed?" routing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.compare import Side, compare
from rag.comparisons import change_list
from rag.config import HearthConfig
from rag.errors import CompareError
from rag.ingest import IngestOptions
from rag.loaders import Section
from rag.service import Hearth
from tests.fakes import HashEmbedder, ScriptedModel

POLICY = """# Travel policy

## 1. Scope

This policy covers all staff who travel for the firm. It applies from 1 March 2024.

## 2. Meals

Meals are paid at EUR 45 per day. Alcohol is not refunded.

## 3. Hotels

Hotels up to EUR 150 per night are refunded. Book through the travel desk.
"""
REVISED = POLICY.replace("EUR 45", "EUR 50").replace(
    "Book through the travel desk.", "Book through the travel desk. Train is preferred for trips under 500 km.")
MENU = "# Canteen menu\n\n## Monday\n\nSoup of the day with fresh bread. Garden salad with goat cheese.\n"
OVERVIEW = "Meal allowances went up and a rule on trains was added."


def write(path: Path, text: str, bump: int = 0) -> Path:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))
    return path


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


@pytest.fixture
def hearth(tmp_path):
    config = HearthConfig(data_dir=tmp_path / "data", min_score=0.0, ingest=IngestOptions(workers=0))
    model = ScriptedModel(OVERVIEW + "\n1. A second paragraph, as a list.")
    return Hearth(config, embedder=HashEmbedder(), chat_model=model)


def test_what_changed_in_a_document_is_answered_from_its_previous_version(hearth, docs):
    policy = write(docs / "travel-policy.md", POLICY)
    hearth.ingest([docs])
    write(policy, REVISED, bump=5)
    hearth.ingest([docs])
    shown: list[str] = []
    conv = hearth.new_conversation("changes")
    answer = hearth.ask("What changed in the travel policy?", on_token=shown.append, conversation=conv)
    assert answer.comparison is not None and [c.kind for c in answer.comparison.changes] == ["changed", "added"]
    assert answer.text.startswith(OVERVIEW) and "second paragraph" not in answer.text  # one paragraph at most
    assert "".join(shown) == answer.text
    assert "~~45~~ **50**" in answer.text and "Train is preferred" in answer.text
    assert "[old: version 1; new: version 2]" in answer.text  # both sides cited
    body = answer.to_json()
    assert body["comparison"]["changes"][0]["old_text"] == "Meals are paid at EUR 45 per day."
    assert [s["source"] for s in body["sources"]] == [str(policy.resolve())] * 2
    prompt = hearth.chat_model.prompts[-1][-1]["content"]
    assert "EUR 45 per day" in prompt and "Train is preferred" in prompt  # the model wrote from the list
    assert hearth.conversations.require(conv).turns[0].text == answer.text


def test_compare_two_documents_named_in_the_chat(hearth, docs):
    write(docs / "contract-2024.md", POLICY)
    write(docs / "contract-2025.md", REVISED)
    hearth.ingest([docs])
    for question in ("Compare contract 2024 and contract 2025", "What is new in the 2025 contract?",
                     "what are the differences between contract-2024 and contract-2025?"):
        answer = hearth.ask(question)
        assert answer.comparison is not None, question
        assert Path(answer.comparison.old.source).name == "contract-2024.md"
        assert Path(answer.comparison.new.source).name == "contract-2025.md"
        assert len(answer.comparison.changes) == 2


def test_other_questions_are_not_routed_to_a_comparison(hearth, docs):
    write(docs / "travel-policy.md", POLICY)
    hearth.ingest([docs])
    answer = hearth.ask("How much are meals paid per day?")
    assert answer.comparison is None and "comparison" not in answer.to_json()
    # A document with no earlier version and no earlier edition: searched as usual, not an error.
    assert hearth.ask("What changed in the travel policy?").comparison is None
    write(docs / "travel-policy.md", REVISED, bump=5)
    hearth.ingest([docs])
    assert hearth.ask("What's new in the travel policy?").comparison is not None
    # Its content asked about, not its versions: searched.
    assert hearth.ask("What is different in the travel policy for part-time staff?").comparison is None


def test_bad_inputs_are_refused_with_a_reason(hearth, docs, tmp_path):
    policy = write(docs / "travel-policy.md", POLICY)
    menu = write(docs / "menu.md", MENU)
    hearth.ingest([docs])
    with pytest.raises(UsageError, match="not an indexed document"):
        hearth.compare(tmp_path / "nowhere.md", policy)
    with pytest.raises(UsageError, match="has been indexed in one version only"):
        hearth.compare(policy, previous=True)
    with pytest.raises(UsageError, match="Give two documents"):
        hearth.compare(policy)
    with pytest.raises(UsageError, match="twice"):
        hearth.compare(policy, policy)
    with pytest.raises(CompareError, match="share no sections"):
        hearth.compare(policy, menu)
    with pytest.raises(CompareError, match="share no sections"):
        hearth.ask("Compare the travel policy and the menu")
    assert policy.read_text() == POLICY and len(hearth.sources()) == 2  # nothing changed


def test_a_scan_read_with_low_confidence_is_compared_with_a_warning():
    old = [Section("Meals are paid at EUR 45 per day. Hotels are refunded.", 1, None, 0, ocr_confidence=0.97)]
    new = [Section("Meals are paid at EUR 50 per day. Hotels are refunded.", 1, None, 0, ocr_confidence=0.6)]
    result = compare(old, new, old_side=Side("scan-v1.pdf", note="scanned"),
                     new_side=Side("scan-v2.pdf", note="scanned, low confidence (page 1)"))
    assert [c.figures for c in result.changes] == [(("45", "50"),)]
    assert result.warnings == ["scan-v2.pdf was read by OCR with low confidence (page 1): the reading may be "
                               "wrong, and so may some changes."]
    assert result.warnings[0] in result.summary and result.warnings[0] in change_list(result)

"""Whole-document summaries (rag/summary.py through Hearth.summarize and ask)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inference.chat import ChatModelDefaults
from inference.errors import Cancelled, UsageError
from rag.config import HearthConfig
from rag.service import Hearth
from tests.fakes import HashEmbedder

SECTIONS = {
    "Working Hours": "Core hours run from 10:00 to 15:00. Staff record their hours weekly.",
    "Annual Leave": "Every employee has 27 days of annual leave. Requests go to the line manager.",
    "Sickness Absence": "Report sickness before 09:30 on the first day. A certificate is needed after 7 days.",
    "Remote Working": "Staff may work from home up to three days a week with their manager's agreement.",
    "Training": "Each employee has a training budget of EUR 1,000 a year.",
    "Conduct": "Grievances go to HR in writing; HR answers within ten working days.",
}


class SectionModel(ChatModelDefaults):
    """Summarises a section by echoing its first sentence, and records what it was asked."""

    name = "section-echo"
    n_ctx = 2048

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages, *, max_tokens=512, temperature=0.0, cancel=None):
        user = messages[-1]["content"]
        self.prompts.append(user)
        if "summaries of the sections" in messages[0]["content"]:
            yield "A staff handbook covering hours, leave, sickness, remote work, training and conduct."
            return
        body = user.split("\n\n", 1)[1].strip().splitlines()[-1]  # the section's text, after its heading line
        yield body.split(". ")[0].rstrip(".") + "."


@pytest.fixture
def handbook(tmp_path):
    path = tmp_path / "docs" / "staff-handbook.md"
    path.parent.mkdir()
    path.write_text("# Staff handbook\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in SECTIONS.items()))
    return path


@pytest.fixture
def hearth(tmp_path, handbook):
    model = SectionModel()
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=HashEmbedder(), chat_model=model)
    assert h.ingest([handbook.parent]).added == 1
    h.model = model
    return h


def test_each_section_gets_a_part_that_cites_it(hearth, handbook):
    seen = []
    summary = hearth.summarize(handbook, progress=seen.append)
    assert [p.heading.split(" › ")[-1] for p in summary.parts] == list(SECTIONS)
    for part, (heading, text) in zip(summary.parts, SECTIONS.items()):
        assert part.text == text.split(". ")[0].rstrip(".") + "."
        assert f"**{heading}**" in summary.summary and f"{part.text} [{summary.parts.index(part) + 1}]" in summary.summary
    assert summary.summary.startswith("A staff handbook covering")
    out = summary.to_json()
    assert set(out) == {"summary", "parts", "sources"} and set(out["parts"][0]) == {"heading", "page", "text"}
    assert [s["heading"] for s in out["sources"]] == [p.heading for p in summary.parts]
    # Progress counts the parts and the overview, ending at the total.
    assert seen[0].done == 0 and seen[-1].done == seen[-1].total == len(SECTIONS) + 1
    assert seen[1].seconds_left is not None


def test_the_whole_document_is_read_not_its_top_passages(hearth, handbook):
    hearth.summarize(handbook)
    asked = "\n".join(hearth.model.prompts)
    for text in SECTIONS.values():
        assert text in asked


def test_a_summary_stops_when_cancelled(hearth, handbook):
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        hearth.summarize(handbook, cancel=cancel)


def test_summarize_in_the_chat_takes_the_same_road(hearth):
    conv = hearth.new_conversation("handbook")
    answer = hearth.ask("Summarize the staff handbook", conversation=conv)
    assert "**Annual Leave**" in answer.text and len(answer.sources) == len(SECTIONS)
    assert answer.searched_for == "summary of staff-handbook.md"
    assert hearth.conversations.require(conv).turns[0].text == answer.text


def test_a_long_section_is_cut_into_parts_within_the_budget(tmp_path):
    doc = tmp_path / "docs" / "manual.md"
    doc.parent.mkdir()
    sentences = " ".join(f"Rule {i} says item {i} costs {i * 10} euros." for i in range(400))
    doc.write_text(f"# Manual\n\n## Prices\n\n{sentences}\n")
    model = SectionModel()
    model.n_ctx = 1024
    h = Hearth(HearthConfig(data_dir=tmp_path / "data"), embedder=HashEmbedder(), chat_model=model)
    h.ingest([doc])
    summary = h.summarize(doc)
    assert len(summary.parts) > 1 and all(p.heading.endswith("Prices") for p in summary.parts)
    assert all(len(p.split()) < 1024 for p in model.prompts)
    numbers = {int(n) for p in model.prompts for n in re.findall(r"Rule (\d+) says", p)}
    assert numbers == set(range(400))  # every rule was read, none left out


def test_summarize_refuses_what_is_not_one_indexed_document(hearth, handbook, tmp_path):
    with pytest.raises(UsageError, match="not an indexed document"):
        hearth.summarize(tmp_path / "nothing.md")
    with pytest.raises(UsageError, match="one document"):
        hearth.summarize(handbook.parent.parent)  # a folder holding it counts as a scope, not one document
    assert Path(handbook).exists()

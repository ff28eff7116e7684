"""The whole slice on the real parts: the demo documents, the real embedder, the real default chat model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"


def hearth(data: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HEARTH_DATA_DIR=str(data))
    return subprocess.run(
        [sys.executable, "-m", "app", "--threads", "2", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("e2e")
    r = hearth(data, "ingest", str(DEMO), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["added"] == 3 and report["failed"] == [] and report["chunks"] >= 3
    assert set(report) >= {"added", "updated", "unchanged", "failed", "chunks", "seconds"}
    return data


def test_reingest_adds_nothing(data):
    r = hearth(data, "ingest", str(DEMO), "--json")
    assert json.loads(r.stdout)["unchanged"] == 3 and json.loads(r.stdout)["chunks"] == 0


def test_search_json_contract(data):
    r = hearth(data, "search", "meal allowance abroad", "-k", "3", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert len(hits) == 3
    for h in hits:
        assert set(h) == {"source", "page", "heading", "score", "text", "ocr_confidence"}
        assert h["ocr_confidence"] is None  # typed documents: OCR read nothing
        assert isinstance(h["score"], float)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert hits[0]["source"].endswith("travel-policy.pdf") and hits[0]["page"] == 2


def test_ask_gives_a_correct_cited_answer(data):
    r = hearth(data, "ask", "What is the daily meal allowance for travel abroad?", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) >= {"answer", "sources", "timings"}
    assert "60" in out["answer"]
    top = out["sources"][0]
    assert top["source"].endswith("travel-policy.pdf") and top["page"] == 2


def test_ask_laptop_question_streams_to_stdout(data):
    r = hearth(data, "ask", "What should I do if my laptop is stolen?")
    assert r.returncode == 0, r.stderr
    answer, _, sources = r.stdout.partition("Sources:")
    assert "4400" in answer
    assert "it-handbook.html" in sources


def test_sources_and_forget(data, tmp_path):
    r = hearth(data, "sources", "--json")
    names = sorted(Path(s["source"]).name for s in json.loads(r.stdout)["sources"])
    assert names == ["it-handbook.html", "onboarding.md", "travel-policy.pdf"]
    # forget on a copy of the data so the other tests keep theirs
    r = hearth(data, "forget", str(DEMO / "onboarding.md"), "--workspace", "nothing-here")
    assert r.returncode == 1 and "nothing indexed" in r.stderr


def test_usage_errors_exit_2(data):
    assert hearth(data, "search", "x", "-k", "0").returncode == 2
    assert hearth(data, "bogus").returncode == 2
    r = hearth(data, "ask", "hi", "--model", "no-such-model")
    assert r.returncode == 2 and "No model called" in r.stderr


FOLLOWUPS = ROOT / "bench" / "data" / "followups"


@pytest.fixture(scope="module")
def office(tmp_path_factory) -> Path:
    """Five similar project sheets, two policies and a six-section handbook (bench/data/followups/docs)."""
    data = tmp_path_factory.mktemp("office")
    r = hearth(data, "ingest", str(FOLLOWUPS / "docs"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["added"] == 8, r.stderr
    return data


def test_a_follow_up_two_turns_later_keeps_its_subject(office):
    r = hearth(office, "ask", "Who is the project lead for Heron?", "--conversation", "new", "--json")
    assert r.returncode == 0, r.stderr
    conv = str(json.loads(r.stdout)["conversation_id"])
    r = hearth(office, "ask", "Which department sponsors it?", "--conversation", conv, "--json")
    assert json.loads(r.stdout)["searched_for"] != "Which department sponsors it?"
    r = hearth(office, "ask", "And when does it finish?", "--conversation", conv, "--json")
    out = json.loads(r.stdout)
    assert "Heron" in out["searched_for"], out["searched_for"]
    assert Path(out["sources"][0]["source"]).name == "project-heron.md"
    assert "19 December 2025" in out["answer"] + " ".join(q["text"] for q in out["quotes"])


def test_a_scoped_question_is_answered_from_its_document_only(office):
    sheet = FOLLOWUPS / "docs" / "project-kestrel.md"
    r = hearth(office, "ask", "Who approves changes?", "--in", str(sheet), "--json")
    assert r.returncode == 0, r.stderr
    assert {Path(s["source"]).name for s in json.loads(r.stdout)["sources"]} == {"project-kestrel.md"}
    r = hearth(office, "search", "budget", "--in", str(FOLLOWUPS / "nowhere.md"))
    assert r.returncode == 2 and "not an indexed document" in r.stderr


def test_the_summary_of_a_handbook_names_what_its_sections_rule(office):
    r = hearth(office, "summarize", str(FOLLOWUPS / "docs" / "staff-handbook.md"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    sections = json.loads((FOLLOWUPS / "summary.json").read_text())["sections"]
    assert [p["heading"].split(" › ")[-1] for p in out["parts"]] == [s["heading"] for s in sections]
    text = out["summary"].lower()
    named = [s["heading"] for s in sections if any(rule.lower() in text for rule in s["rules"])]
    assert len(named) >= 5, (named, out["summary"])

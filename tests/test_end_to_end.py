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
        assert set(h) == {"source", "page", "heading", "score", "text"}
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

"""bench.grounding: the policy replayed over stored replies, its ablation and its fit (no model)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench import grounding
from rag.grounding import GroundingPolicy, Signals

GOOD = Signals(closeness=0.80, missing=0.0, supported=1.0, claims=1, stands_in=False, answer_line=0.60)


def _row(answerable: bool, holds: bool, **signals: object) -> dict:
    s = replace(GOOD, **signals).to_json()
    return {"answerable": answerable, "phrase": "EUR 38" if answerable else None,
            "reply": "It is EUR 38." if holds else "It is free.",
            "signals": {**s, "asked_by_policy": ["verdict"], "seconds": {"verdict": 2.0}}}


@pytest.fixture
def details(tmp_path: Path) -> Path:
    rows = [
        _row(True, True),  # answered right
        _row(True, False, answer_line=0.05),  # a wrong answer, from a line off the question: withholding it is right
        _row(True, True, closeness=0.50, answer_line=0.40),  # right, but withheld for thin evidence
        _row(False, False, answer_line=0.05),  # withheld by `answer_line` alone
        _row(False, False, closeness=0.40, answer_line=None),  # thin evidence
        _row(False, False),  # answered: nothing catches it
        {"answerable": False, "reply": "", "withheld": True},  # no passage: not weighed, kept as shown
    ]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_the_ablation_counts_what_each_signal_changes(details: Path) -> None:
    rows = grounding.load([details])
    summary = grounding.ablation(rows, GroundingPolicy())
    assert summary["baseline"] == {"answerable": 3, "withheld": 2, "right": 1, "right_withheld": 1,
                                   "unanswerable": 4, "answered": 1, "lines": 0}
    by = {r["signal"]: r for r in summary["signals"]}
    assert by["answer_line"]["answered_without_it"] == 1 and by["answer_line"]["gain"] == 2  # and the wrong one
    # Without closeness the thin-evidence rule never fires: one right reply more, one unanswerable answered more.
    assert by["closeness"]["withheld_by_it"] == 1 and by["closeness"]["answered_without_it"] == 1
    assert by["closeness"]["gain"] == 0 and by["closeness"]["right_lost_without_it"] == -1
    assert by["restates"]["gain"] == 0 and by["verdict"]["seconds"] == 2.0
    assert ("| answer_line (the similarity of the line the answer comes from) | 1 | 2 | 1 | +2 |"
            in grounding.format_table(summary))


def test_fit_finds_bounds_that_make_fewer_errors(details: Path) -> None:
    rows = grounding.load([details])
    loose = GroundingPolicy(abstain_below=0.30)  # lets the thin-evidence unanswerable question through
    found = grounding.fit(rows, loose)
    assert found["errors_before"] == 2 and found["errors_after"] < found["errors_before"]
    assert 0.40 < found["policy"].abstain_below <= 0.50  # between the two thin replies: one kept, one withheld


def test_the_command(details: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grounding.main([str(details), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 7
    assert grounding.main([str(details), "--fit"]) == 0
    assert "| abstain_below | 0.53 |" in capsys.readouterr().out


def test_a_file_without_signals_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"answerable": True, "reply": "x", "evidence": 0.5}) + "\n", encoding="utf-8")
    assert grounding.main([str(old)]) == 1
    assert "rerun the benchmark" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        grounding.main([str(tmp_path / "none.jsonl")])
    assert exit_.value.code == 2


STORED = Path(__file__).resolve().parents[2] / "bench" / "data" / "grounding"


def test_the_stored_replies_replay_as_the_runs_decided_and_as_the_evaluation_says() -> None:
    from inference.models import CHECK_MODEL
    from rag.confirm import bounds_for
    from rag.grounding import decide

    policy = GroundingPolicy(check=bounds_for(CHECK_MODEL))
    tuning = grounding.load([STORED / "tuning-offices.jsonl.gz"])
    weighed = [r for r in tuning if "_signals" in r]  # the rest found no passage at all: not found, no policy
    assert len(tuning) == 200 and len(weighed) == 197 and all(r["withheld"] for r in tuning if r not in weighed)
    differ = [r["question"] for r in weighed if decide(r["_signals"], policy).withheld != r["withheld"]]
    assert differ == []
    # docs/evaluation.md "Grounding ablation": as shipped, and the rule alone.
    offices = grounding.load([STORED / "heldout-offices.jsonl.gz"])
    shipped = grounding.outcome(offices, policy)
    assert (shipped["withheld"], shipped["answered"], shipped["right"]) == (7, 4, 69)
    alone = grounding.outcome(offices, policy, leave_out=grounding.CHECKER)
    assert (alone["withheld"], alone["answered"], alone["right"]) == (53, 11, 21)
    debian = grounding.outcome(grounding.load([STORED / "heldout-debian.jsonl.gz"]), policy)
    assert (debian["withheld"], debian["answered"], debian["right"]) == (3, 4, 20)
    parts = grounding.load([STORED / f"{p}-debian.jsonl.gz" for p in ("heldout", "heldout2", "heldout3")])
    every = grounding.outcome(parts, policy)  # docs/evaluation.md "Answers and not found": 9 and 16 of 69 + 80
    assert (every["answerable"], every["withheld"], every["unanswerable"], every["answered"]) == (69, 9, 80, 16)

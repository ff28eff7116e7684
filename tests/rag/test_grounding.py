"""The grounding policy's decision (rag/grounding.py), read as a table: signals given by hand, no model."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rag.confirm import CheckBounds
from rag.grounding import STANDS, Asked, GroundingPolicy, Signals, decide, without

POLICY = GroundingPolicy()
# The larger checker's way of reading its verdicts, as rag.confirm.BOUNDS ships it.
LARGER = GroundingPolicy(check=CheckBounds(denied_below=1.0, kept_from=1.25, checked_below=0.75,
                                           unanswered_below=-0.25, answered_from=0.25))
# A reply borne out from a line on the question, on good evidence: the rule lets it stand.
GOOD = Signals(closeness=0.80, missing=0.0, supported=1.0, claims=1, stands_in=False, answer_line=0.60)


def signals(**changes: object) -> Signals:
    return replace(GOOD, **changes)


def verdicts(verdict: float | None = None, question: float | None = None) -> dict:
    return {"verdict": Asked.known(verdict), "question_verdict": Asked.known(question)}


# signals, policy, mode -> withheld, reason, lines stand
TABLE = [
    (signals(), POLICY, "balanced", False, None, False),
    (signals(answer_line=0.05), POLICY, "balanced", True, "off_line", False),
    (signals(closeness=0.50, answer_line=None), POLICY, "balanced", True, "evidence", False),
    (signals(closeness=0.50), POLICY, "balanced", False, None, False),  # thin, but borne out from a line on it
    (signals(closeness=0.50, answer_line=0.45), POLICY, "balanced", True, "evidence", False),
    (signals(closeness=0.60, supported=0.0, stands_in=True), POLICY, "balanced", True, "weak", False),  # a refusal
    (signals(closeness=0.60, supported=0.0), POLICY, "balanced", True, "weak", False),
    (signals(closeness=0.60, lacks_kind=True), POLICY, "balanced", True, "weak", False),
    (signals(closeness=0.60, unfounded_no=True), POLICY, "balanced", True, "weak", False),
    (signals(closeness=0.70, supported=0.0), POLICY, "balanced", False, None, False),  # strong evidence
    (signals(closeness=0.60, claims=0, supported=0.0, stands_in=True), POLICY, "balanced", True, "weak", False),
    (signals(closeness=0.80, missing=1.0), POLICY, "balanced", False, None, False),  # 0.80 - 0.1 = 0.70
    (signals(closeness=0.60, missing=1.0, answer_line=None), POLICY, "balanced", True, "evidence", False),
    # The checker: denies a reply the rule lets stand; keeps one withheld for thin evidence alone.
    (signals(closeness=0.70, **verdicts(verdict=-2.0)), POLICY, "balanced", True, "denied", False),
    (signals(closeness=0.70, **verdicts(verdict=2.0)), POLICY, "balanced", False, None, False),
    (signals(closeness=0.70, **verdicts(verdict=0.5)), LARGER, "balanced", True, "denied", False),
    (signals(closeness=0.80, **verdicts(verdict=0.5)), LARGER, "balanced", False, None, False),  # not checked
    (signals(closeness=0.50, answer_line=None, **verdicts(verdict=1.5)), LARGER, "balanced", False, None, False),
    (signals(closeness=0.50, answer_line=None, **verdicts(verdict=1.0)), LARGER, "balanced", True, "evidence", False),
    (signals(closeness=0.50, answer_line=None, supported=0.0, stands_in=True, **verdicts(verdict=9.0)), LARGER,
     "balanced", True, "weak", False),  # a refusal is never checked
    # The probe on the question's lines: withholds what the rule let stand, lets the lines stand in otherwise.
    (signals(**verdicts(question=-1.0)), LARGER, "balanced", True, "unanswered", False),
    (signals(closeness=0.50, answer_line=None, **verdicts(question=1.0)), LARGER, "balanced", False, None, True),
    (signals(**verdicts(question=-1.0)), POLICY, "balanced", False, None, False),  # the default checker reads none
    (signals(english=False, **verdicts(verdict=-9.0, question=-9.0)), LARGER, "balanced", False, None, False),
    # Strict withholds what is not wholly borne out, or on middling evidence; off is the caller's to ignore.
    (signals(supported=0.5, closeness=0.75), POLICY, "strict", True, "strict", False),
    (signals(closeness=0.66), POLICY, "strict", True, "strict", False),
    (signals(), POLICY, "strict", False, None, False),
    (signals(closeness=0.70, supported=0.0, stands_in=True), POLICY, "strict", False, None, False),
]


@pytest.mark.parametrize("s, policy, mode, withheld, reason, lines", TABLE)
def test_the_decision_table(s: Signals, policy: GroundingPolicy, mode: str, withheld: bool, reason: str | None,
                            lines: bool) -> None:
    d = decide(s, policy, mode)
    assert (d.withheld, d.reason, d.lines_stand) == (withheld, reason, lines)


def test_strict_withholds_at_least_what_balanced_does() -> None:
    for s, policy, _, _, _, _ in TABLE:
        assert decide(s, policy, "strict").withheld >= decide(s, policy, "balanced").withheld


def test_a_verdict_is_read_only_when_a_rule_asks_and_once() -> None:
    reads: list[str] = []

    def read(name: str, value: float) -> Asked:
        return Asked(lambda: reads.append(name) or value)

    off = signals(answer_line=0.05, verdict=read("verdict", -5.0), question_verdict=read("question", 1.0))
    assert decide(off, POLICY).reason == "off_line" and reads == []  # the rule decided; no read
    checked = signals(closeness=0.70, verdict=read("verdict", -5.0))
    assert decide(checked, POLICY).reason == "denied" and reads == ["verdict"]
    decide(checked, POLICY)
    assert reads == ["verdict"] and checked.verdict.value == -5.0 and checked.verdict.asked


def test_signals_round_trip_and_ablation() -> None:
    s = signals(answer_line=0.05, **verdicts(verdict=1.5))
    row = json.loads(json.dumps(s.to_json()))
    back = Signals.from_json(row)
    assert back.to_json() == s.to_json() and back.verdict.value == 1.5 and back.question_verdict.value is None
    assert decide(without(s, "answer_line"), POLICY) == STANDS
    assert decide(without(signals(closeness=0.2, answer_line=None), "closeness"), POLICY) == STANDS
    with pytest.raises(ValueError, match="no signal named"):
        without(s, "mood")

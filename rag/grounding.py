"""One grounding policy: whether a reply stands, is withheld ("not found"), or gives way to the passages' lines.

Three parts, kept apart so that each can be read and tested alone:
  - `Signals`: what was measured for one question, its passages and the reply (rag.quotes.align measures it,
    `measure` is the pure part). The checking model's three verdicts are read only when a rule asks (`Asked`).
  - `GroundingPolicy`: every bound and weight, one named field each, with where it was chosen.
  - `decide(signals, policy, mode)`: the decision and its reason, from the ordered table `WITHHOLD` and the
    checking model's rules after it. No model, no embedder: tests give it signals by hand.

Which signals are kept, and why, is measured by `python -m bench.grounding` (docs/evaluation.md "Grounding
ablation"): each one left out in turn over the stored replies of held-out questions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from rag.abstain import (
    lacks_asked_kind, unfounded_no,
)
from rag.confirm import DEFAULT_BOUNDS, CheckBounds

class Asked:
    """A checking model's verdict (log P(Yes) - log P(No)), read the first time a rule asks for it and kept.
    `value` is None until then, or when the model cannot say; `seconds` is what reading it took."""

    def __init__(self, read: Callable[[], float | None] | None = None) -> None:
        self._read = read
        self._value: float | None = None
        self.asked = False
        self.seconds = 0.0

    @classmethod
    def known(cls, value: float | None) -> Asked:
        """A verdict already read (tests, and replays of stored signals)."""
        out = cls()
        out._value, out.asked = value, value is not None
        return out

    @property
    def value(self) -> float | None:
        return self._value

    def __call__(self) -> float | None:
        if not self.asked and self._read is not None:
            t0 = time.perf_counter()
            self._value = self._read()
            self.seconds = time.perf_counter() - t0
        self.asked = True
        return self._value

    def __repr__(self) -> str:
        return f"Asked({self._value!r})" if self.asked else "Asked(not read)"


@dataclass(frozen=True)
class Signals:
    """What the policy weighs for one question, its passages and the reply. English-only signals are False for
    another language; the verdicts are Asked(None) without a checking model."""

    closeness: float  # the passages' best line: its cosine similarity to the question
    missing: float  # rarity-weighted share of the question's words no passage holds (rag.abstain.missing_share)
    supported: float  # share of the reply's claiming sentences the aligner bore out (0 when none claims anything)
    claims: int  # the reply's sentences that claim something (not a copied heading, not "… is [1].")
    # Not a signal: the passages' lines stand in for this reply whatever the policy decides (a refusal, or a reply
    # of labels and citations alone), so no checking model reads it and `strict` leaves it to them.
    stands_in: bool
    answer_line: float | None  # similarity to the question of the line its new words come from (None: none)
    lacks_kind: bool = False  # gives no figure or time where the question asks for one (English)
    restates: bool = False  # adds no word to the question (English)
    unfounded_no: bool = False  # a "No" that no line it draws on, nor any closest to the question, says (English)
    unborne_strong: bool = False  # no sentence borne out though a passage scored high: the lines stand in for it
    english: bool = True  # the question is English: the checking model reads only English
    verdict: Asked = field(default_factory=Asked)  # the checker on the lines each claiming sentence comes from
    question_verdict: Asked = field(default_factory=Asked)  # the probe on the lines closest to the question

    def evidence(self, policy: GroundingPolicy) -> float:
        """How well the passages seem to answer: their best line's closeness less the words they lack."""
        return self.closeness - policy.missing_weight * self.missing

    def to_json(self) -> dict[str, object]:
        """Everything, the verdicts as read (None where never asked): one row of bench.grounding's store."""
        plain = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in _VERDICTS}
        return {**plain, **{k: getattr(self, k).value for k in _VERDICTS},
                "seconds": {k: round(getattr(self, k).seconds, 3) for k in _VERDICTS}}

    @classmethod
    def from_json(cls, row: dict[str, object]) -> Signals:
        """The Signals `to_json` wrote, its verdicts known."""
        plain = {k: row[k] for k in cls.__dataclass_fields__ if k in row and k not in _VERDICTS}
        return cls(**plain, **{k: Asked.known(row.get(k)) for k in _VERDICTS})  # type: ignore[arg-type]


_VERDICTS = ("verdict", "question_verdict")


@dataclass(frozen=True)
class GroundingPolicy:
    """Every bound and weight of the decision. Unless said otherwise each was chosen on the tuning half of
    bench/data/eval_*.json and the tuning offices of bench/data/office_notes.json with the default models (a
    sweep of the bound, the stored replies replayed), and is re-derived by `python -m bench.grounding --fit`."""

    # Evidence = closeness - missing_weight * missing.
    missing_weight: float = 0.1
    # Under this evidence the reply is withheld unless it is borne out from a line on the question.
    abstain_below: float = 0.53
    # Under this evidence a weak reply (off the asked kind, less than `supported_share` borne out) is withheld;
    # `strict` withholds any reply not wholly borne out under it.
    abstain_unsupported_below: float = 0.67
    # A reply whose answer comes from a line this far from the question or further took it from another subject.
    off_question_below: float = 0.12
    # ...and one borne out from a line at least this close stands under `abstain_below`.
    on_question: float = 0.53
    # A reply is borne out when at least this share of its claiming sentences is (bench.quotes).
    supported_share: float = 0.5
    # How the checking model's verdicts are read (rag.confirm.BOUNDS: per checking model).
    check: CheckBounds = DEFAULT_BOUNDS


@dataclass(frozen=True)
class Decision:
    """What `decide` concluded: the reply withheld (with the reason's key, rag.abstain.why_withheld), or the
    passages' lines standing in for it, or neither."""

    withheld: bool = False
    reason: str | None = None
    lines_stand: bool = False
    changed: str | None = None  # what the probe changed: "withheld" or "lines"


STANDS = Decision()


def weak(s: Signals, p: GroundingPolicy) -> bool:
    """A reply that finds nothing or answers something else: off the kind of answer asked for, or less than
    `supported_share` borne out (a refusal, or a reply that claims nothing, is borne out nowhere)."""
    return off_kind(s) or s.supported < p.supported_share


def off_kind(s: Signals) -> bool:
    """The reply answers something else than the question asks (English only)."""
    return s.lacks_kind or s.restates or s.unfounded_no


def _on_question(s: Signals, p: GroundingPolicy) -> bool:
    return s.answer_line is not None and s.answer_line >= p.on_question


# The rule, in order: the first row that holds withholds the reply, with its reason.
WITHHOLD: tuple[tuple[str, Callable[[Signals, GroundingPolicy], bool]], ...] = (
    ("off_line", lambda s, p: s.answer_line is not None and s.answer_line < p.off_question_below),
    ("weak", lambda s, p: weak(s, p) and s.evidence(p) < p.abstain_unsupported_below),
    ("evidence", lambda s, p: s.evidence(p) < p.abstain_below and not _on_question(s, p)),
)


def rule(s: Signals, p: GroundingPolicy) -> str | None:
    """The first row of `WITHHOLD` that holds, None when the reply stands by the rule."""
    return next((reason for reason, holds in WITHHOLD if holds(s, p)), None)


def decide(s: Signals, p: GroundingPolicy, mode: str = "balanced") -> Decision:
    """The decision on one reply, its reason, and what the checking model changed. In order: the rule
    (`WITHHOLD`); a reply it lets stand is withheld when the checker denies its lines ("denied"), and one it
    withholds for thin evidence alone stands when the checker is sure of them; the probe on the question's
    lines withholds ("unanswered") or lets those lines stand in; `strict` withholds what is not wholly borne
    out. `off` withholds nothing: what would have been is still reported, for the caller to ignore."""
    c = p.check
    checkable = s.english and not (s.stands_in or s.unborne_strong)
    reason = rule(s, p)
    if reason is None and checkable and c.checks(s.evidence(p)) and c.denies(s.verdict()):
        reason = "denied"
    elif reason == "evidence" and checkable and c.kept_from is not None and c.keeps(s.verdict()):
        reason = None  # borne out, withheld for thin evidence alone: the checker is sure of its lines
    d = Decision(reason is not None, reason)
    if s.english and c.asks_question():
        d = _probe(d, c, s.question_verdict())
    if not d.withheld and mode == "strict" and not s.stands_in and s.claims and (
            s.supported < 1.0 or s.evidence(p) < p.abstain_unsupported_below):
        d = replace(d, withheld=True, reason="strict")
    return d


def _probe(d: Decision, c: CheckBounds, verdict: float | None) -> Decision:
    """The probe on the question's closest lines: nothing the reply says stands where they do not answer it; where
    they surely do, they stand in for a reply the rule withheld."""
    if not d.withheld and c.unanswered(verdict):
        return replace(d, withheld=True, reason="unanswered", changed="withheld")
    if d.withheld and c.answered(verdict):
        return replace(d, withheld=False, reason=None, lines_stand=True, changed="lines")
    return d


def measure(*, question: str, reply: str, closeness: float, missing: float, supported: float, claims: int,
            stands_in: bool, silent: bool, answer_line: float | None, yes_no_lines: Sequence[str],
            unborne_strong: bool, english: bool, restated: bool) -> Signals:
    """The Signals of one reply from what the aligner found: `yes_no_lines` are the lines a "No" may rest on; the
    checking model's verdicts are set by the caller (`with_verdicts`)."""
    return Signals(
        closeness=closeness, missing=missing, supported=supported, claims=claims, stands_in=stands_in,
        answer_line=answer_line,
        lacks_kind=english and not silent and lacks_asked_kind(question, reply),
        restates=english and not silent and restated,
        unfounded_no=english and not silent and unfounded_no(question, reply, yes_no_lines),
        unborne_strong=unborne_strong, english=english)


def with_verdicts(s: Signals, *, verdict: Callable[[], float | None] | None,
                  question_verdict: Callable[[], float | None] | None) -> Signals:
    """`s` with the checking model's verdicts to be read when a rule asks (None: that one cannot be read)."""
    return replace(s, verdict=Asked(verdict), question_verdict=Asked(question_verdict))


def without(s: Signals, name: str) -> Signals:
    """`s` as if signal `name` were never measured (bench.grounding's ablation): its neutral value."""
    neutral: dict[str, object] = {
        "closeness": 1.0, "missing": 0.0, "supported": 1.0,
        "answer_line": None, "lacks_kind": False, "restates": False, "unfounded_no": False,
        "verdict": Asked.known(None), "question_verdict": Asked.known(None),
    }
    if name not in neutral:
        raise ValueError(f"no signal named {name!r}; have: {', '.join(neutral)}")
    return replace(s, **{name: neutral[name]})

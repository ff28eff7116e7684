"""Every grounding signal measured: what leaving each one out of the policy changes on held-out questions, and
the policy's bounds re-derived from stored replies (#63, docs/evaluation.md "Grounding ablation").

    python -m bench.office_notes --offices held-out --details FILE    # ask, store each reply and its signals
    python -m bench.grounding FILE [FILE ...] [--json]                # the ablation table
    python -m bench.grounding FILE [FILE ...] --fit [--held-out FILE ...] [--json]
                                      # the bounds that fit those replies best, and what they do on held-out ones

Stored replies (gzip'd --details files, read as they are) are in bench/data/grounding/: `tuning-offices` (the
third, eighth, thirteenth, eighteenth, twenty-third, thirty-second, thirty-seventh, forty-second, forty-seventh and
fiftieth offices), `heldout-offices` (the twenty-sixth to twenty-ninth and fifty-second to fifty-fifth) and
`heldout-debian`, `heldout2-debian`, `heldout3-debian` (bench.quotes --eval heldout, heldout2, heldout3), all asked
on 2026-12-07 as Hearth then shipped, so that the
ablation and --fit can be rerun without the hours of asking.

A --details file (bench.office_notes, bench.quotes) holds, for each question, whether the documents answer it,
whether its reply holds the right phrase, and the grounding signals of that reply with every checking-model
verdict read (`recorded`), whether or not the policy needed it. The policy is then replayed without a model:
once as it ships, once with each signal left out (rag.grounding.without), and the table counts, against the
baseline of the same replies, the answerable questions withheld, the unanswerable ones answered and the right
replies, with each signal's cost in seconds a question (the checking model's reads; the signals that need no
model cost under a millisecond). A signal that moves no held-out question the right way, or costs more than it
gains, is one to remove.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from rag.confirm import CheckBounds, bounds_for
from rag.grounding import Decision, GroundingPolicy, Signals, decide, without

# The signals that can be left out, in the order the table shows them, and what each is.
SIGNALS = {
    "closeness": "the passages' best line: its similarity to the question",
    "missing": "the question's rare words no passage holds",
    "supported": "the share of the reply the aligner bears out",
    "answer_line": "the similarity of the line the answer comes from",
    "lacks_kind": "no figure or time where one is asked",
    "restates": "the reply only restates the question",
    "unfounded_no": "a No no line says",
    "verdict": "the checker on the reply's lines",
    "question_verdict": "the probe on the question's lines",
}


CHECKER = ("verdict", "question_verdict")  # the signals a checking model gives


def recorded(support: Any) -> dict[str, Any]:
    """What a --details row keeps of the grounding policy's work on one reply: its signals with every verdict
    read (read now where the policy did not need it, after the decision), and the decision. Empty where the policy
    was not applied (another embedder, a language the embedder does not read, no passage)."""
    signals: Signals | None = getattr(support, "signals", None)
    if signals is None:
        return {}
    asked = [name for name in CHECKER if getattr(signals, name).asked]
    signals.verdict()
    signals.question_verdict()
    decision: Decision = support.decision
    return {"signals": {**signals.to_json(), "asked_by_policy": asked},
            "decision": {f.name: getattr(decision, f.name) for f in fields(decision)}}


def auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """The share of (positive, negative) pairs where the positive scores higher, ties counting half."""
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The rows of --details files, each with whether its question is answerable and its reply holds the answer
    (`holds`); rows of a run before the signals were stored are refused."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        text = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else path.read_text("utf-8")
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if "answerable" not in row or "reply" not in row:
                raise ValueError(f"{path}:{n}: not a --details row of bench.office_notes or bench.quotes")
            row["holds"] = _holds(row)
            row["lines_hold"] = _lines_hold(row)
            if "signals" in row:
                signals = row["signals"]
                # Rows stored before the reply's refusal and silence left the policy: the lines stood in for both.
                signals.setdefault("stands_in", bool(signals.get("refusal") or signals.get("silent")))
                row["_signals"] = Signals.from_json(signals)
            rows.append(row)
    if rows and not any("signals" in r for r in rows):
        raise ValueError("no row holds the grounding signals: rerun the benchmark with this version (--details)")
    return rows


def _lines_hold(row: dict[str, Any]) -> bool:
    """Whether the lines closest to the question (the quotes the run showed) hold the right answer: what the user
    reads where they stand in for the reply."""
    quotes = " ".join(q["text"] if isinstance(q, dict) else str(q) for q in row.get("quotes", [])).casefold()
    answers = [row["phrase"]] if row.get("phrase") else list(row.get("gold") or [])
    return any(str(a).casefold() in quotes for a in answers if str(a).strip())


def _holds(row: dict[str, Any]) -> bool:
    """Whether the reply holds the right answer: the office's phrase, or the Debian question's gold answer."""
    if row.get("phrase"):
        return str(row["phrase"]).casefold() in str(row["reply"]).casefold()
    return bool(row.get("reply_contains"))


def outcome(rows: Sequence[dict[str, Any]], policy: GroundingPolicy, *, leave_out: Sequence[str] = (),
            mode: str = "balanced") -> dict[str, int]:
    """The policy replayed over the stored replies: answerable questions withheld (and of those, the ones whose
    reply held the answer), unanswerable ones answered, right answers as shown (answerable, not withheld, and
    the reply, or the lines where they stand in for it, holding the answer), and replies the lines stood in for.
    A row whose reply the policy did not weigh keeps what the run showed."""
    counts = {"answerable": 0, "withheld": 0, "right": 0, "right_withheld": 0, "unanswerable": 0, "answered": 0,
              "lines": 0}
    for row in rows:
        if "_signals" in row:
            s = row["_signals"]
            for name in leave_out:
                s = without(s, name)
            d = decide(s, policy, mode)
            withheld, lines = d.withheld, d.lines_stand
        else:
            withheld, lines = bool(row.get("withheld", row.get("abstained", False))), False
        if row["answerable"]:
            counts["answerable"] += 1
            counts["withheld"] += withheld
            # As shown: the lines where they stand in for the reply, else the reply.
            counts["right"] += not withheld and (row["lines_hold"] if lines else row["holds"])
            counts["right_withheld"] += withheld and row["holds"]
        else:
            counts["unanswerable"] += 1
            counts["answered"] += not withheld
        counts["lines"] += lines and not withheld
    return counts


def seconds(rows: Sequence[dict[str, Any]], name: str) -> float:
    """What a checking-model signal cost a question, on average over the rows: the seconds of its reads where the
    policy asked for it (the rest were read for this table only; the signals that need no model cost well under
    a millisecond, 0 here)."""
    spent = [r["signals"]["seconds"].get(name, 0.0) if name in r["signals"].get("asked_by_policy", ()) else 0.0
             for r in rows if "signals" in r and "seconds" in r["signals"]]
    return sum(spent) / len(spent) if spent else 0.0


def ablation(rows: Sequence[dict[str, Any]], policy: GroundingPolicy, *, removed: Sequence[str] = ()) -> dict[str, Any]:
    """The baseline (the policy without the signals `removed`) and, for each other signal, the baseline without
    it too, with the change. "gain": how many more misleading or lost answers there are without it (`errors`:
    unanswerable questions answered, right replies withheld, wrong answers shown)."""
    base = outcome(rows, policy, leave_out=removed)
    table = []
    for name, what in SIGNALS.items():
        if name in removed:
            continue
        out = outcome(rows, policy, leave_out=[*removed, name])
        # What the signal does: withheld answerable ones it adds (bad), unanswerable ones it withholds (good).
        withheld = base["withheld"] - out["withheld"]
        stopped = out["answered"] - base["answered"]
        table.append({"signal": name, "what": what, "without": out, "withheld_by_it": withheld,
                      "answered_without_it": stopped, "right_lost_without_it": base["right"] - out["right"],
                      "gain": _errors(out) - _errors(base), "seconds": round(seconds(rows, name), 2)})
    return {"questions": len(rows), "removed": list(removed), "baseline": base, "signals": table,
            "as_shipped": outcome(rows, policy)}


def format_table(summary: dict[str, Any]) -> str:
    """The ablation as a Markdown table (docs/evaluation.md "Grounding ablation")."""
    b = summary["baseline"]
    removed = summary.get("removed") or []
    shipped = summary.get("as_shipped", b)
    out = [f"{summary['questions']} questions: {b['answerable']} answerable, {b['unanswerable']} unanswerable. "
           f"As the policy ships: {shipped['withheld']} answerable withheld, {shipped['answered']} unanswerable "
           f"answered, {shipped['right']} right."]
    if removed:
        out.append(f"Without {', '.join(removed)}: {b['withheld']} withheld, {b['answered']} answered, "
                   f"{b['right']} right; each row leaves one more signal out.")
    out += ["",
           "| signal | withheld without it | answered without it | right without it | gain | s a question |",
           "|---|---|---|---|---|---|"]
    for row in summary["signals"]:
        w = row["without"]
        out.append(f"| {row['signal']} ({row['what']}) | {w['withheld']} | {w['answered']} | {w['right']} | "
                   f"{row['gain']:+d} | {row['seconds']:.2f} |")
    return "\n".join(out)


# The values each bound is tried at by --fit: similarities and the weight by hundredths, shares by tenths, the
# checking model's log-odds by quarters.
_SIMILARITY = tuple(round(0.01 * i, 2) for i in range(0, 100))
_GRIDS: dict[str, tuple[float, ...]] = {
    "missing_weight": tuple(round(0.05 * i, 2) for i in range(0, 11)),
    "abstain_below": _SIMILARITY, "abstain_unsupported_below": _SIMILARITY, "off_question_below": _SIMILARITY,
    "on_question": _SIMILARITY, "supported_share": tuple(round(0.1 * i, 1) for i in range(0, 11)),
}
_LOG_ODDS = tuple(0.25 * i for i in range(-12, 13))
_CHECK_GRIDS = {f.name: _LOG_ODDS for f in fields(CheckBounds)}


def errors(rows: Sequence[dict[str, Any]], policy: GroundingPolicy, leave_out: Sequence[str] = ()) -> int:
    """What --fit makes least, and the ablation counts: unanswerable questions answered, right replies withheld,
    and wrong answers to answerable questions shown."""
    return _errors(outcome(rows, policy, leave_out=leave_out))


def _errors(out: dict[str, int]) -> int:
    wrong_shown = out["answerable"] - out["withheld"] - out["right"]
    return out["answered"] + out["right_withheld"] + wrong_shown


def fit(rows: Sequence[dict[str, Any]], policy: GroundingPolicy, *, rounds: int = 2,
        leave_out: Sequence[str] = ()) -> dict[str, Any]:
    """Each bound in turn set to the value of its grid that makes `errors` least, the others held (ties go to
    the value nearest the one before), for `rounds` passes. A checking-model bound that is None (a model whose
    verdicts are not read that way) stays None. Returns the policy found, the errors before and after, and each
    bound's value before and after."""
    start = errors(rows, policy, leave_out)
    for _ in range(rounds):
        for name, grid in _GRIDS.items():
            policy = _best(rows, policy, grid, lambda p, v, n=name: replace(p, **{n: v}), getattr(policy, name),
                           leave_out)
        for name, grid in _CHECK_GRIDS.items():
            now = getattr(policy.check, name)
            if now is None:
                continue
            policy = _best(rows, policy, grid,
                           lambda p, v, n=name: replace(p, check=replace(p.check, **{n: v})), now, leave_out)
    return {"errors_before": start, "errors_after": errors(rows, policy, leave_out), "policy": policy}


def _best(rows: Sequence[dict[str, Any]], policy: GroundingPolicy, grid: Sequence[float], set_to: Any,
          now: float, leave_out: Sequence[str]) -> GroundingPolicy:
    scored = [(errors(rows, set_to(policy, v), leave_out), abs(v - now), v) for v in (*grid, now)]
    return set_to(policy, min(scored)[2])


def _bounds(policy: GroundingPolicy) -> dict[str, float | None]:
    plain = {f.name: getattr(policy, f.name) for f in fields(policy) if f.name != "check"}
    return {**plain, **{f"check.{f.name}": getattr(policy.check, f.name) for f in fields(policy.check)}}


def _fitted(rows: list[dict[str, Any]], policy: GroundingPolicy, removed: Sequence[str],
            held_out: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """--fit's result and its Markdown: the bounds before and after, and both replayed on `held_out`."""
    found = fit(rows, policy, leave_out=removed)
    result: dict[str, Any] = {"questions": len(rows), "errors_before": found["errors_before"],
                              "errors_after": found["errors_after"], "before": _bounds(policy),
                              "after": _bounds(found["policy"])}
    text = [f"{len(rows)} questions; errors (unanswerable answered, right replies withheld, wrong ones shown): "
            f"{found['errors_before']} as shipped, {found['errors_after']} with the bounds fitted", "",
            "| bound | shipped | fitted |", "|---|---|---|",
            *[f"| {k} | {v} | {result['after'][k]} |" for k, v in result["before"].items()]]
    if held_out:
        shipped, fitted = (outcome(held_out, p, leave_out=removed) for p in (policy, found["policy"]))
        result["held_out"] = {"questions": len(held_out), "shipped": shipped, "fitted": fitted}
        text += ["", f"Held out ({len(held_out)} questions): answerable withheld / unanswerable answered / right as "
                 "shown, errors", *(f"- {name}: {o['withheld']} / {o['answered']} / {o['right']}, {_errors(o)}"
                                    for name, o in (("shipped", shipped), ("fitted", fitted)))]
    return result, "\n".join(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grounding", description=__doc__.split("\n")[0])
    parser.add_argument("details", type=Path, nargs="+", help="--details files of bench.office_notes or bench.quotes")
    parser.add_argument("--fit", action="store_true", help="re-derive the policy's bounds from these replies")
    parser.add_argument("--without", default="", metavar="A,B",
                        help="signals left out of the baseline (" + ", ".join(SIGNALS) + ")")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-checker", action="store_true",
                        help="replay as where no checking model can be read (a shared inference server's chat API): "
                             "its three verdicts left out, the rule alone")
    parser.add_argument("--held-out", type=Path, nargs="+", default=[], metavar="FILE",
                        help="with --fit: replay the shipped and the fitted bounds on these replies too")
    parser.add_argument("--check-model", default=None, metavar="NAME",
                        help="the checking model the runs used (default: the built-in checker)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in [*args.details, *args.held_out] if not p.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    if args.held_out and not args.fit:
        parser.error("--held-out goes with --fit")
    try:
        rows, held_out = load(args.details), load(args.held_out) if args.held_out else []
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    from inference.models import CHECK_MODEL

    removed = [n.strip() for n in args.without.split(",") if n.strip()]
    unknown = [n for n in removed if n not in SIGNALS]
    if unknown:
        parser.error(f"--without: no signal named {', '.join(unknown)}; have: {', '.join(SIGNALS)}")
    policy = GroundingPolicy(check=bounds_for(args.check_model or CHECK_MODEL))
    if args.no_checker:
        policy = GroundingPolicy(check=CheckBounds(denied_below=bounds_for("").denied_below))
        removed = [*dict.fromkeys([*removed, *CHECKER])]
    if args.fit:
        result, text = _fitted(rows, policy, removed, held_out)
    else:
        result = ablation(rows, policy, removed=removed)
        text = format_table(result)
    print(json.dumps(result) if args.json else text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

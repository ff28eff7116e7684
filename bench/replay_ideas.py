"""Ideas for "not found" measured on stored replies and not kept (#23, README "Tried after that, and not kept").

    python -m bench.replay_ideas IDEA DETAILS [--json] [--cache DIR] [--threads N] [--limit N]

DETAILS is a file `python -m bench.office_notes --details F` or `python -m bench.quotes --eval ... --details F`
wrote: each question with its reply, what the not-found rule said, the passages and the question's word weights.
Each IDEA answers the questions again on those stored passages (or re-reads them) and aligns and checks the new
reply as `ask` does (rag.quotes.align with the larger checker); a question the idea leaves alone keeps its stored
outcome (the models run deterministically, so it would come out the same):
  cascade      the larger model answers where the chat model's reply was withheld
  refusal      the larger model answers, under the same prompt, where the chat model's first reply is a refusal
  quote-first  the chat model under instructions to copy the sentence that answers first, in quotation marks
  lines        the passages' lines instead of "not found" where the evidence is above a bound (a sweep; no model)
  open         a yes-or-no question whose first reply is a refusal asked again as an open one (OPEN_QUESTION)
  realign      the stored reply aligned again with the code as it stands ("right": the answer as shown holds the
               phrase, before and after, so that the passages' lines standing in for a reply count)
  none         log P("NONE") from both models as the reply to "copy the words that answer, or write NONE": its
               area under the curve between unanswerable and answerable questions (bench.abstain_signals.auc)
  lines-large  where the lines stood in for a reply the rule withheld (the probe read them as answering), the larger
               model's reply instead, shown as is (it needs a details file that keeps what the probe changed;
               other questions keep their outcome); "right" before: the chat model's reply, after: the larger
               one's; each row also keeps whether the lines shown held the phrase
  bounds       the probe's two bounds on the question's lines (rag.confirm.BOUNDS: under the first a reply the
               rule lets stand is withheld, from the second the lines stand in for one it withholds), a grid of
               pairs replayed on the stored outcomes (no model; it needs details that keep the probe's score,
               what it changed and the quotes shown: bench.office_notes and bench.quotes --details write them)
  yes-no       the bounds on the larger model's own Yes or No (rag.confirm.CheckBounds): from which one answered
               the other way lets the lines stand in for a reply's, and from which one answered the same way opens
               the lines that stand in for a withheld reply; a grid swept on a run of bench.office_notes
               --contradicted-from 0: per pair, the answerable yes-or-no questions whose answer as shown opens
               with the wrong word or the right one (bench/data/office_yes_no.json) and holds the phrase, and the
               answers changed; where the run did not read the model's Yes or No, it is read first (the larger
               model, some 10 s a question)
Counts are answerable questions withheld / right (the reply holds the phrase) / unanswerable ones answered, as
stored and with the idea. The table goes to stdout (JSON with --json), progress to stderr. Some 5-20 s a question
asked again on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.abstain_signals import auc
from rag.abstain import asks_yes_no

IDEAS = ("cascade", "refusal", "quote-first", "lines", "open", "realign", "none", "bounds", "lines-large", "yes-no")
YES_NO_BOUNDS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, None)  # None: the lines never stand in
DEFAULT_CACHE = Path(".data/bench-office")
QUOTE_FIRST = (
    "You are Hearth, an assistant for an office. Answer the question using only the numbered passages from the "
    "office's documents. First copy, in quotation marks, the one sentence of the passages that answers the "
    "question. Then answer the question in one or two sentences of your own, with the exact figures, names and "
    "numbers the passages give, and cite the passage you used in square brackets, like [1]."
)
OPEN_QUESTION = "What do the passages say about this question: {question}"
NONE_SYSTEM = "You read an office's documents and answer only from them."
NONE_ASK = "Copy the exact words of the passages that answer the question. If no passage answers it, write NONE."
BOUNDS = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70)


def phrases(row: dict[str, Any]) -> list[str]:
    """What a right reply holds: an office question's phrase, or any of an evaluation question's gold phrases."""
    found = row.get("phrase") or row.get("gold") or []
    return list(found) if isinstance(found, list) else [found]


def holds(row: dict[str, Any], text: str | None) -> bool:
    """Whether `text` holds one of the row's answer phrases (case aside)."""
    return any(f.casefold() in (text or "").casefold() for f in phrases(row))


def stored(row: dict[str, Any], *, as_shown: bool = False) -> tuple[bool, bool]:
    """(withheld, right) as the details file says, whichever benchmark wrote it; `as_shown`: right when the answer
    as shown holds the phrase (the passages' lines standing in for a reply included), else the reply itself."""
    withheld = bool(row["withheld"] if "withheld" in row else row["abstained"])
    if as_shown and "right_shown" in row:
        right = bool(row["right_shown"])
    elif as_shown:
        right = holds(row, row.get("shown"))
    else:
        right = bool(row["right"] if "right" in row else row["reply_contains"])
    return withheld, right and not withheld


def counts(rows: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    """Answerable questions withheld and right, unanswerable ones answered, by each row's `key` outcome."""
    answerable = [r[key] for r in rows if r["answerable"]]
    return {"answerable": len(answerable), "withheld": sum(w for w, _ in answerable),
            "right": sum(r for _, r in answerable), "unanswerable": len(rows) - len(answerable),
            "answered": sum(not r[key][0] for r in rows if not r["answerable"])}


def sweep(rows: Sequence[dict[str, Any]], bounds: Sequence[float] = BOUNDS) -> list[dict[str, Any]]:
    """For each bound: withheld, right as shown and unanswerable answered when a withheld reply whose evidence is at
    least the bound gives way to the passages' lines (`lines_hold`: whether they hold the phrase)."""
    out = []
    for bound in bounds:
        withheld = shown = answered = 0
        for r in rows:
            w, right = r["before"][0], r["right_shown"]
            if w and (r["evidence"] or 0.0) >= bound:
                w, right = False, r["lines_hold"]
            if r["answerable"]:
                withheld += w
                shown += right and not w
            else:
                answered += not w
        out.append({"bound": bound, "withheld": withheld, "right_shown": shown, "answered": answered})
    return out


# The pairs of the probe's bounds the `bounds` replay tries (under LOWS withheld, from HIGHS the lines stand).
PROBE_LOWS = (-2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
PROBE_HIGHS = (-0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0)


def _quotes_text(row: dict[str, Any]) -> str:
    """The quotes a details row kept, as one text (bench.office_notes keeps their texts, bench.quotes their JSON)."""
    return " ".join(q if isinstance(q, str) else str(q.get("text", "")) for q in row.get("quotes") or [])


def probe_outcome(row: dict[str, Any], low: float, high: float) -> tuple[bool, bool, bool]:
    """(withheld, right as shown, exact) of a stored question, had the probe's bounds on the question's lines been
    `low` and `high` (rag.quotes.align): the rule's own outcome is the stored one with what the probe changed undone;
    a reply the rule lets stand is withheld under `low`; one it withholds gives way to the passages' lines (the
    quotes "not found" shows: the same lines) from `high`. A question without the probe's score keeps its outcome.
    Right is exact but for an answerable question in two cases, where `exact` is False: a reply the probe withheld
    would now stand and is no refusal (the reply itself is looked at; `align` shows the passages' lines instead where
    no sentence of it is borne out and a passage is strong, which a stored row does not tell), or the lines would
    stand in and the row kept no quotes (a details file written before they were kept)."""
    withheld, _ = stored(row)
    right_shown = stored(row, as_shown=True)[1]
    from rag.abstain import REFUSAL

    score, changed = row.get("question_verdict"), row.get("question_changed")
    if score is None:
        return withheld, right_shown, True
    answerable = bool(row["answerable"])
    # The passages' lines standing in: the quotes "not found" kept, unknown where a details file kept none.
    lines = (False, answerable and holds(row, _quotes_text(row)), "quotes" in row or not answerable)
    if withheld != bool(changed):  # the rule withheld it
        if score < high:
            return True, False, True
        return (False, right_shown, True) if changed == "lines" else lines
    if score < low:
        return True, False, True
    if changed == "withheld":  # the probe withheld a reply the rule let stand: it is shown again
        if REFUSAL.match(row.get("reply") or ""):  # a refusal: the passages' lines stand in for it
            return lines
        return False, answerable and holds(row, row.get("reply")), not answerable
    return False, right_shown, True


def bounds_sweep(rows: Sequence[dict[str, Any]], lows: Sequence[float] = PROBE_LOWS,
                 highs: Sequence[float] = PROBE_HIGHS) -> list[dict[str, Any]]:
    """For each pair of the probe's bounds (low <= high): answerable questions withheld and right as shown, and
    unanswerable ones answered (`probe_outcome`); with each row's "office" (bench.office_notes), how many offices
    are within the hidden check's bars scaled to their questions (withheld and answered at most a fifth, right as
    shown at least three fifths)."""
    out = []
    for low in lows:
        for high in highs:
            if low > high:
                continue
            totals = {"low": low, "high": high, "withheld": 0, "right_shown": 0, "answered": 0, "inexact": 0}
            per: dict[str, list[int]] = {}
            for r in rows:
                withheld, right, exact = probe_outcome(r, low, high)
                o = per.setdefault(str(r.get("office", "")), [0, 0, 0, 0, 0])  # ans, withheld, right, una, answered
                totals["inexact"] += not exact
                if r["answerable"]:
                    totals["withheld"] += withheld
                    totals["right_shown"] += right
                    o[0], o[1], o[2] = o[0] + 1, o[1] + withheld, o[2] + right
                else:
                    totals["answered"] += not withheld
                    o[3], o[4] = o[3] + 1, o[4] + (not withheld)
            if any(r.get("office") for r in rows):
                totals["offices_within"] = sum(w * 5 <= a and 5 * g >= 3 * a and 5 * n <= u
                                               for a, w, g, u, n in per.values())
            out.append(totals)
    return out


def realigned(row: dict[str, Any], hits: Sequence[Any], align_reply: Callable[[], Any]) -> dict[str, Any]:
    """A stored reply as `ask` shows it now (`align_reply` aligns it again): withheld, right as shown, the text.

    Where nothing was retrieved `ask` says "not found" before any reply is weighed, as the run did."""
    if not hits:
        return {"after": (True, False), "shown": "", "question_verdict": None}
    support = align_reply()
    shown = not support.abstained and holds(row, support.text)
    return {"after": (support.abstained, shown), "shown": support.text, "question_verdict": support.question_verdict}


def yes_no_outcome(row: dict[str, Any], contradicted_from: float | None,
                   agreed_from: float | None) -> tuple[bool, bool, str | None]:
    """(contradicted, agreed, the answer as shown) of a stored question had the larger model's own Yes or No been
    read with these bounds (rag.confirm.CheckBounds; None: never). Where the lines stood in for a reply the rule
    withheld, the reply's Yes or No opens them when the model agrees (unless the reply makes a figure up); elsewhere
    a contradicting one lets the lines stand in for the reply shown. The answer is None where the run did not keep
    it (lines it never showed); a reply shown again is read as the model wrote it."""
    from rag.abstain import invented_figures, reply_says
    from rag.confirm import CheckBounds

    verdict, said = row.get("yes_no_verdict"), reply_says(row["question"], row.get("reply") or "")
    if verdict is None or said is None or row["withheld"]:
        return bool(row.get("contradicted")), bool(row.get("agreed")), row.get("shown")
    bounds = CheckBounds(denied_below=0.0, contradicted_from=contradicted_from, agreed_from=agreed_from)
    if row.get("question_changed") == "lines":  # the lines stood in for a reply the rule withheld
        texts = [row["question"]] + [f"{p.get('heading') or ''} {p.get('text', '')}" for p in row.get("passages", [])]
        agreed = bounds.agrees(said, verdict) and not invented_figures(row.get("reply") or "", texts)
        lines = row.get("shown") or ""
        if row.get("agreed"):  # the run opened them with the word: the lines alone
            lines = lines.split(". ", 1)[-1]
        return False, agreed, f"{said.capitalize()}. {lines}" if agreed else lines
    contradicted = bounds.contradicts(said, verdict)
    if contradicted == bool(row.get("contradicted")):
        return contradicted, False, row.get("shown")
    return contradicted, False, None if contradicted else row.get("reply")


def yes_no_sweep(rows: Sequence[dict[str, Any]], contradicted: Sequence[float | None] = YES_NO_BOUNDS,
                 agreed: Sequence[float | None] = YES_NO_BOUNDS) -> list[dict[str, Any]]:
    """Per pair of bounds: the answerable yes-or-no questions with a right word (their "yes_no") whose answer as
    shown opens with the wrong word and with the right one, and holds the phrase; the replies the lines stood in
    for and the lines a reply's word opened, by kind; and how many answers the run did not keep."""
    from rag.abstain import reply_says

    out = []
    for c_bound in contradicted:
        for a_bound in agreed:
            c = {"contradicted_from": c_bound, "agreed_from": a_bound, "wrong": 0, "right_word": 0, "right_shown": 0,
                 "contradicted": [0, 0], "agreed": [0, 0], "unknown": 0}
            for r in rows:
                if r["withheld"]:
                    continue
                was_contradicted, was_agreed, shown = yes_no_outcome(r, c_bound, a_bound)
                c["contradicted"][0 if r["answerable"] else 1] += was_contradicted
                c["agreed"][0 if r["answerable"] else 1] += was_agreed
                if not r.get("yes_no"):
                    continue
                if shown is None:
                    c["unknown"] += 1
                    continue
                word = reply_says(r["question"], shown)
                c["wrong"] += word is not None and word != r["yes_no"]
                c["right_word"] += word == r["yes_no"]
                c["right_shown"] += holds(r, shown)
            out.append(c)
    return out


def _read_yes_no(rows: Sequence[dict[str, Any]], *, cache: Path, threads: int,
                 log: Callable[[str], None]) -> None:
    """The larger model's own Yes or No, where a run did not read it (one with its bounds unset, or before it was
    read where the lines stood in): each such reply aligned again as `ask` does, with the bounds that ship and
    the model asked. Rows are updated in place; none left to read loads no model."""
    import dataclasses

    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.abstain import opens_refusal, reply_says
    from rag.components import check_model_name
    from rag.confirm import AnswerCheck, bounds_for
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig
    from rag.store import Hit

    unread = [r for r in rows if not r["withheld"] and r.get("yes_no_verdict") is None
              and reply_says(r["question"], r.get("reply") or "") is not None  # a refusal ("No, the documents
              and not opens_refusal(r.get("reply") or "", final=True)]  # do not say.") is never asked about
    if not unread:
        return
    hearth = Hearth(HearthConfig(data_dir=cache / "replay", n_threads=threads, embed_threads=threads))
    name = check_model_name(HearthConfig(data_dir=cache)) or DEFAULT_CHAT_MODEL
    big = LlamaCppModel(chat_model_path(name, cache), n_ctx=4096, n_threads=threads)
    check = AnswerCheck(big, bounds=dataclasses.replace(bounds_for(name), contradicted_from=0.0, agreed_from=None))
    try:
        for i, r in enumerate(unread, 1):
            hits = [Hit.from_json(p) for p in r["passages"]]
            support = align(r["reply"], r["question"], hits, embedder=hearth.embedder, rarity=r.get("rarity"),
                            check=check)
            r["yes_no_verdict"] = support.yes_no_verdict
            log(f"[{i}/{len(unread)}] {support.yes_no_verdict}: {r['question']}")
    finally:
        big.close()


def run(idea: str, details: Path, *, cache: Path, threads: int, limit: int | None = None,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    import rag.answer as A
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.abstain import opens_refusal
    from rag.components import check_model_name
    from rag.confirm import AnswerCheck, bounds_for
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig
    from rag.store import Hit

    rows_in = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines() if line.strip()]
    if idea == "bounds":  # no model: the stored outcomes, replayed
        rows_in = rows_in[:limit]
        from inference.models import CHECK_MODEL
        from rag.confirm import bounds_for

        shipped = bounds_for(CHECK_MODEL)
        low, high = shipped.unanswered_below, shipped.answered_from
        # "after": the replay at the bounds that ship, which must give the stored outcomes back
        return {"idea": idea, "details": str(details),
                "before": counts([dict(r, o=stored(r, as_shown=True)) for r in rows_in], "o"),
                "after": counts([dict(r, o=probe_outcome(r, low, high)[:2]) for r in rows_in], "o"),
                "shipped": [low, high], "scored": sum(r.get("question_verdict") is not None for r in rows_in),
                "sweep": bounds_sweep(rows_in)}
    if idea == "yes-no":  # the stored verdicts, read with each pair of bounds
        rows_in = rows_in[:limit]
        _read_yes_no(rows_in, cache=cache, threads=threads, log=log)
        as_stored = counts([dict(r, o=stored(r, as_shown=True)) for r in rows_in], "o")  # neither bound moves them
        return {"idea": idea, "details": str(details), "before": as_stored, "after": as_stored,
                "yes_no": sum(bool(r.get("yes_no")) and not r["withheld"] for r in rows_in),
                "verdicts": sum(r.get("yes_no_verdict") is not None for r in rows_in),
                "yes_no_sweep": yes_no_sweep(rows_in)}
    if idea == "quote-first":
        rows_in = [r for r in rows_in if r["answerable"]]
    rows_in = rows_in[:limit]
    hearth = Hearth(HearthConfig(data_dir=cache / "replay", n_threads=threads, embed_threads=threads))
    embedder = hearth.embedder
    big_name = check_model_name(HearthConfig(data_dir=cache)) or DEFAULT_CHAT_MODEL
    models = [] if idea == "lines" else [  # the sweep reads the stored evidence and the passages' lines alone
        LlamaCppModel(chat_model_path(name, cache), n_ctx=4096, n_threads=threads)
        for name in (DEFAULT_CHAT_MODEL, big_name)]
    small, big = models or (None, None)
    check = AnswerCheck(big, bounds=bounds_for(big_name))
    budget = hearth.config.max_passage_tokens

    def prompt(model: Any, question: str, hits: Sequence[Any]) -> Any:
        return A.build_prompt(question, hits, n_ctx=model.n_ctx, count_prompt=model.count_prompt,
                              count_tokens=model.count_tokens, max_passage_tokens=budget)

    def generate(model: Any, messages: list[dict[str, str]], room: int, passages: int) -> str:
        return A.clean_citations("".join(model.stream(messages, max_tokens=room)).strip(), passages)

    def refused(question: str, hits: Sequence[Any]) -> bool:
        p = prompt(small, question, hits)
        pieces, _ = A._read(small.stream(p.messages, max_tokens=p.max_tokens), None, hold=True)
        return bool(opens_refusal("".join(pieces), final=True))

    rows: list[dict[str, Any]] = []
    try:
        for i, r in enumerate(rows_in, 1):
            t0 = time.perf_counter()
            q, hits = r["question"], [Hit.from_json(p) for p in r["passages"]]
            row: dict[str, Any] = {"question": q, "answerable": r["answerable"],
                                   "before": stored(r, as_shown=idea == "realign"), "evidence": r.get("evidence")}
            reply: str | None = None
            passages: Sequence[Any] = hits
            if idea == "lines-large" and r.get("question_changed") == "lines":
                # Where the probe read the lines as answering a question whose reply the rule withheld: the larger
                # model's reply, shown in place of the lines (they stay as its quotes); it is not withheld again.
                result = A.answer(q, hits, big, max_passage_tokens=budget)
                right = bool(r["answerable"]) and holds(r, result.text)
                row.update(before=stored(r), after=(False, right), reply=result.text,
                           lines_right=stored(r, as_shown=True)[1])
            elif idea == "cascade" and row["before"][0]:
                result = A.answer(q, hits, big, max_passage_tokens=budget)
                reply, passages = result.text, result.sources
            elif idea == "refusal" and refused(q, hits):
                p = prompt(big, q, hits)
                reply, passages = generate(big, p.messages, p.max_tokens, len(p.passages)), p.passages
            elif idea == "quote-first":
                p = prompt(small, q, hits)
                messages = [{"role": "system", "content": QUOTE_FIRST}, *p.messages[1:]]
                reply, passages = generate(small, messages, p.max_tokens, len(p.passages)), p.passages
            elif idea == "open" and asks_yes_no(q) and refused(q, hits):
                p = prompt(small, q, hits)
                opened = A._user_message(OPEN_QUESTION.format(question=q.strip()), p.passages)
                messages = [{"role": "system", "content": A.ANSWER_PROMPT}, {"role": "user", "content": opened}]
                reply, passages = generate(small, messages, p.max_tokens, len(p.passages)), p.passages
            elif idea == "realign":
                row.update(realigned(r, hits, lambda: align(r["reply"], q, hits, embedder=embedder,
                                                            rarity=r.get("rarity"), check=check)))
            elif idea == "lines":
                lines = align("I don't know.", q, hits, embedder=embedder).text  # a refusal: the lines stand in
                row["lines_hold"] = holds(r, lines)
                row["right_shown"] = bool(r.get("right_shown", r.get("quote_contains")))
            elif idea == "none":
                user = A._user_message(q, hits[:3]) + "\n" + NONE_ASK
                messages = [{"role": "system", "content": NONE_SYSTEM}, {"role": "user", "content": user}]
                row["none_large"] = sum(big.reply_logprobs(messages, "NONE"))
                row["none_small"] = sum(small.reply_logprobs(messages, "NONE"))
            if reply is not None:
                support = align(reply, q, passages, embedder=embedder, rarity=r.get("rarity"), check=check)
                withheld = support.abstained
                right = not withheld and holds(r, reply)
                row.update(after=(withheld, right), reply=reply)
            elif "after" not in row:
                row["after"] = row["before"]
            rows.append(row)
            log(f"[{i}/{len(rows_in)}] {time.perf_counter() - t0:.1f} s: {q}")
    finally:
        for model in models:
            model.close()
    summary: dict[str, Any] = {"idea": idea, "details": str(details), "before": counts(rows, "before"),
                               "after": counts(rows, "after"), "questions": rows}
    if idea == "lines":
        summary["sweep"] = sweep(rows)
    if idea == "none":
        summary["auc"] = {
            which: {subset: auc([r[f"none_{which}"] for r in rows if not r["answerable"] and keep(r)],
                                [r[f"none_{which}"] for r in rows if r["answerable"] and keep(r)])
                    for subset, keep in (("all", lambda r: True), ("withheld", lambda r: r["before"][0]),
                                         ("shown", lambda r: not r["before"][0]))}
            for which in ("large", "small")}
    return summary


def format_table(summary: dict[str, Any]) -> str:
    def line(name: str, c: dict[str, int]) -> str:
        return f"{name:<8} {c['withheld']:>3} / {c['right']:>3} / {c['answered']:>3}"

    out = [f"{summary['idea']}: withheld / right / unanswerable answered "
           f"(of {summary['before']['answerable']} answerable, {summary['before']['unanswerable']} unanswerable)",
           line("stored", summary["before"]), line("idea", summary["after"])]
    pairs = [s for s in summary.get("sweep", []) if "low" in s]
    for s in summary.get("sweep", []):
        if "bound" in s:
            out.append(f"bound {s['bound']:.2f}: withheld {s['withheld']}, right as shown {s['right_shown']}, "
                       f"answered {s['answered']}")
    if pairs:  # the probe's bounds: a row per low bound, a column per high one
        highs = sorted({s["high"] for s in pairs})
        within = "offices_within" in pairs[0]
        out.append("the probe's bounds, low (rows) / high (columns): withheld / right as shown / answered"
                   + (" / offices within the bars" if within else "") + "; * ships")
        out.append("| low \\ high | " + " | ".join(f"{h:+.2f}" for h in highs) + " |")
        out.append("|---" * (len(highs) + 1) + "|")
        cells = {(s["low"], s["high"]): s for s in pairs}
        for low in sorted({s["low"] for s in pairs}):
            row = []
            for high in highs:
                s = cells.get((low, high))
                row.append("" if s is None else f"{s['withheld']} / {s['right_shown']}{'?' if s['inexact'] else ''}"
                           f" / {s['answered']}" + (f" / {s['offices_within']}" if within else "")
                           + ("*" if [low, high] == summary.get("shipped") else ""))
            out.append(f"| {low:+.2f} | " + " | ".join(row) + " |")
        if any(s["inexact"] for s in pairs):
            out.append("?: right as shown is inexact for some questions (bench.replay_ideas.probe_outcome)")
    if summary.get("yes_no_sweep"):
        out.append(f"answerable yes-or-no questions shown, with a right word: {summary['yes_no']}; read by the larger "
                   f"model: {summary['verdicts']}")
        cells = {(c["contradicted_from"], c["agreed_from"]): c for c in summary["yes_no_sweep"]}
        agreed = list(dict.fromkeys(c["agreed_from"] for c in summary["yes_no_sweep"]))

        def name(bound: float | None) -> str:
            return "never" if bound is None else f"{bound:.1f}"

        out.append("contradicted (rows) / agreed (columns): wrong word shown / right word shown / phrase shown "
                   "(lines for a reply, answerable / lines opened by the word, answerable); ?: answers not kept")
        out.append("| contradicted \\ agreed | " + " | ".join(name(a) for a in agreed) + " |")
        out.append("|---" * (len(agreed) + 1) + "|")
        for c_bound in dict.fromkeys(c["contradicted_from"] for c in summary["yes_no_sweep"]):
            row = [cells[(c_bound, a)] for a in agreed]
            out.append(f"| {name(c_bound)} | " + " | ".join(
                f"{c['wrong']} / {c['right_word']} / {c['right_shown']} ({c['contradicted'][0]} / {c['agreed'][0]})"
                + (f" ?{c['unknown']}" if c["unknown"] else "") for c in row) + " |")
    for which, subsets in summary.get("auc", {}).items():
        out.append(f"NONE, {which} model: AUC " + ", ".join(
            f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in subsets.items()))
    return "\n".join(out)


def _not_details(path: Path) -> str | None:
    """Why `path` is not a --details file of bench.office_notes or bench.quotes (None when it is one)."""
    try:
        first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), None)
        if first is None:
            return "holds no questions"
        d = json.loads(first)
        missing = [k for k in ("question", "reply", "passages", "answerable") if k not in d]
        if not missing and not ({"withheld", "abstained"} & set(d)):
            missing = ["withheld"]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, TypeError) as exc:
        return f"cannot be read as a --details file ({exc})"
    return f"is not a --details file of bench.office_notes or bench.quotes (no {', '.join(missing)})" if missing else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay_ideas", description=__doc__.split("\n")[0])
    parser.add_argument("idea", choices=IDEAS)
    parser.add_argument("details", type=Path, help="a --details file of bench.office_notes or bench.quotes")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, metavar="DIR",
                        help="where the joined models are, as bench.office_notes keeps them (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the models (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions")
    args = parser.parse_args(argv)
    problem = _not_details(args.details)
    if problem:
        print(f"bench.replay_ideas: error: {args.details} {problem}", file=sys.stderr)
        return 2
    summary = run(args.idea, args.details, cache=args.cache, threads=args.threads, limit=args.limit)
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which signals tell an answerable question from an unanswerable one? (#23, README "Not found is an answer")

    python -m bench.abstain_signals DETAILS [--json] [--reuse DIR] [--threads N] [--limit N]

DETAILS is a file that `python -m bench.quotes --eval tune|heldout --details FILE` wrote: each question with
the reply the chat model gave and the passages it was given. For every question this re-aligns the reply
(`rag.quotes.align`, as `ask` does) for what the not-found rule weighs, and has the default chat model read
(nothing generated, `ChatModel.reply_logprobs`):
  - q_pmi: the question's summed log-probability after the best passage (rag/likely.py's prompt) less that
    after an empty passage, and q_best: the first of the two alone;
  - judge: log P("Yes") − log P("No") as the reply to "Do the passages state the answer to the question?";
  - reply_pmi: the reply's log-probability per token after the answer's prompt with the passages, less that
    after the question alone, and reply_mean: the first of the two alone.
Each signal is reported as the area under the ROC curve between the answerable and the unanswerable
questions (the share of pairs the signal ranks the right way round; 0.5 is chance), with how many of each
have it. About 22 s a question on 2 CPU cores (the model reads the passages some eight times).

Summary JSON on stdout with --json (with every question's signals, under "questions"; else the table),
progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(".data/bench-eval")
JUDGE_SYSTEM = "You are a careful assistant."
JUDGE_ASK = "Do the passages state the answer to the question? Answer Yes or No."
SIGNALS = {  # name: what it is, as the table shows it
    "evidence": "evidence: best line's similarity less missing words (the rule's)",
    "answer_line": "similarity of the line the reply takes its answer from",
    "q_pmi": "question's log-probability, best passage less an empty one",
    "q_best": "question's log-probability after the best passage",
    "judge": "log P(Yes) - log P(No), do the passages state the answer",
    "reply_pmi": "reply's log-probability per token, passages less none",
    "reply_mean": "reply's log-probability per token after the passages",
}


def auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """The share of (positive, negative) pairs where the positive scores higher, ties counting half."""
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def model_signals(question: str, reply: str, hits: Sequence[Any], model: Any, *,
                  answer_messages: Callable[[str, Sequence[Any]], list[dict[str, str]]]) -> dict[str, float | None]:
    """The chat model's signals for one question (see the module docstring); None where it cannot tell."""
    from dataclasses import replace

    from rag.answer import _user_message
    from rag.likely import prompt

    out: dict[str, float | None] = dict.fromkeys(("q_pmi", "q_best", "judge", "reply_pmi", "reply_mean"))
    if not hits:
        return out

    def total(messages: list[dict[str, str]], text: str) -> list[float] | None:
        found = model.reply_logprobs(messages, text)
        return None if found is None or not len(found) else list(found)

    per_passage = [total(prompt(h), question) for h in hits]
    empty = total(prompt(replace(hits[0], text="", heading=None)), question)
    if all(p is not None for p in per_passage) and empty is not None:
        best = max(sum(p) for p in per_passage if p is not None)
        out["q_best"], out["q_pmi"] = best, best - sum(empty)
    # The passages and the question as the answer's prompt gives them, then the yes-or-no question.
    judge = [{"role": "system", "content": JUDGE_SYSTEM},
             {"role": "user", "content": f"{_user_message(question, hits)}\n\n{JUDGE_ASK}"}]
    yes, no = total(judge, "Yes"), total(judge, "No")
    if yes is not None and no is not None:
        out["judge"] = sum(yes) - sum(no)
    if reply.strip():
        given, alone = total(answer_messages(question, hits), reply), total(answer_messages(question, []), reply)
        if given is not None and alone is not None:
            out["reply_mean"] = sum(given) / len(given)
            out["reply_pmi"] = out["reply_mean"] - sum(alone) / len(alone)
    return out


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each signal's AUC between the answerable and the unanswerable rows, with the counts it had."""
    out: dict[str, Any] = {"n_answerable": sum(r["answerable"] for r in rows),
                           "n_unanswerable": sum(not r["answerable"] for r in rows), "signals": {}}
    for name in SIGNALS:
        yes = [r[name] for r in rows if r["answerable"] and r.get(name) is not None]
        no = [r[name] for r in rows if not r["answerable"] and r.get(name) is not None]
        value = auc(yes, no)
        out["signals"][name] = {"auc": None if value is None else round(value, 3), "n": [len(yes), len(no)]}
    return out


def format_table(summary: dict[str, Any]) -> str:
    lines = [f"{summary['n_answerable']} answerable, {summary['n_unanswerable']} unanswerable questions",
             f"{'signal':<66} {'AUC':>6} {'with it':>9}"]
    for name, s in summary["signals"].items():
        value = "-" if s["auc"] is None else f"{s['auc']:.3f}"
        lines.append(f"{SIGNALS[name]:<66} {value:>6} {s['n'][0]:>4}+{s['n'][1]:<4}")
    return "\n".join(lines)


def run(details: Path, *, data_dir: Path, threads: int | None, limit: int | None = None,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    from rag.answer import build_prompt
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig
    from rag.store import Hit

    hearth = Hearth(HearthConfig(data_dir=data_dir, embed_threads=threads, n_threads=threads))
    model, config = hearth.chat_model, hearth.config

    def answer_messages(question: str, hits: Sequence[Any]) -> list[dict[str, str]]:
        """The answer's prompt, as `ask` builds it (with no passages: the fixed instructions and the question)."""
        return build_prompt(question, hits, n_ctx=model.n_ctx, count_prompt=model.count_prompt,
                            count_tokens=model.count_tokens, max_passage_tokens=config.max_passage_tokens).messages

    rows = []
    lines = [line for line in details.read_text(encoding="utf-8").splitlines() if line.strip()]
    for i, line in enumerate(lines[:limit], 1):
        d = json.loads(line)
        t0 = time.perf_counter()
        hits = [Hit.from_json(p) for p in d["passages"]]
        support = align(d["reply"], d["question"], hits, embedder=hearth.embedder, rarity=d.get("rarity"))
        row = {"id": d["id"], "answerable": d.get("answerable", bool(d["gold"])),
               "evidence": support.evidence, "answer_line": support.answer_line}
        row.update(model_signals(d["question"], d["reply"], hits, model, answer_messages=answer_messages))
        rows.append(row)
        log(f"[{i}/{min(len(lines), limit or len(lines))}] {d['id']}: {time.perf_counter() - t0:.1f} s")
    return summarise(rows) | {"questions": rows}


def _not_details(path: Path) -> str | None:
    """Why `path` is not a file bench.quotes --details wrote (None when it is one)."""
    try:
        first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), None)
        if first is None:
            return "holds no questions"
        d = json.loads(first)
        missing = [k for k in ("id", "question", "reply", "passages", "gold") if k not in d]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, TypeError) as exc:
        return f"cannot be read as a --details file of bench.quotes ({exc})"
    return f"is not a --details file of bench.quotes (no {', '.join(missing)})" if missing else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.abstain_signals", description=__doc__.split("\n")[0])
    parser.add_argument("details", type=Path, help="a `bench.quotes --eval ... --details FILE` file")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--reuse", type=Path, default=DEFAULT_DATA, metavar="DIR",
                        help="the evaluation's workspace that bench.quotes built (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of both models (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions")
    args = parser.parse_args(argv)
    problem = _not_details(args.details)
    if problem:
        print(f"bench.abstain_signals: error: {args.details} {problem}", file=sys.stderr)
        return 2
    summary = run(args.details, data_dir=args.reuse, threads=args.threads, limit=args.limit)
    print(format_table(summary), file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

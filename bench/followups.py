"""Follow-up benchmark: is the last turn of a conversation searched for the right document?

    python -m bench.followups [--json] [--set heldout|tuning|both] [--answer] [--threads N] [--k 5]

The data (bench/data/followups/) was written by a separate session that had not seen how Hearth rewrites
follow-ups: five deliberately similar project sheets and three other documents, and conversations of two
or three turns (pronoun, ellipsis, subject set two turns back, topic change). Only the last turn is judged:
it is right when the first passage found comes from the gold document and one of the top k passages
carries a gold answer phrase.

Three ways of searching the last turn, in one run on one index (the real default embedder):
  raw      the question as typed;
  join     the previous question joined to a short follow-up (what Hearth did before: retrieval.contextualize);
  hearth   Hearth's standalone query (Hearth.standalone, rag/followups.py) from the earlier turns, each
           searched the same way, as `ask` searches (Hearth.search(lines=True, likely=True) for a question not
           rewritten: the chat model reads the first passages, see rag/likely.py).
Earlier turns are searched, not answered: the documents an earlier turn drew on are those of its top
passages. `--answer` also asks the chat model the last turn (Hearth's way) and reports how often the reply
or a shown quote carries the answer (minutes per conversation on a CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.conditions import machine
from bench.quotes import contains_answer
from rag.followups import Earlier, rewritten
from rag.retrieval import contextualize

DATA = Path(__file__).resolve().parent / "data" / "followups"
WORKSPACE = "followups"
STRATEGIES = ("raw", "join", "hearth")


def load(which: str) -> list[dict[str, Any]]:
    """The conversations of a set ("tuning", "heldout" or "both")."""
    doc = json.loads((DATA / "conversations.json").read_text(encoding="utf-8"))
    names = ("tuning", "heldout") if which == "both" else (which,)
    return [dict(c, set=n) for n in names for c in doc[n]]


def query_for(strategy: str, hearth: Any, turns: list[str], *, k: int) -> str:
    """The query a strategy searches for the last of `turns`."""
    question = turns[-1]
    if strategy == "raw":
        return question
    if strategy == "join":
        return contextualize(question, turns[:-1])
    earlier: list[Earlier] = []
    for q in turns[:-1]:
        searched = hearth.standalone(q, earlier, workspace=WORKSPACE)
        subject = hearth.subject_document(q, searched, workspace=WORKSPACE)
        as_asked = not rewritten(q, searched)
        hits = hearth.search(searched, k=k, workspace=WORKSPACE, scope=[subject] if subject else (),
                             lines=as_asked, likely=as_asked)
        earlier.append(Earlier(q, searched, tuple(dict.fromkeys(h.source for h in hits))))
    return hearth.standalone(question, earlier, workspace=WORKSPACE)


def judge(hits: list[Any], gold: dict[str, Any]) -> dict[str, bool]:
    """Whether the first passage is from the gold document, and whether the top passages carry the answer."""
    first = bool(hits) and Path(hits[0].source).name == gold["source"]
    carried = any(Path(h.source).name == gold["source"] and contains_answer(h.text, gold["answer"]) for h in hits)
    return {"first": first, "carried": carried, "right": first and carried}


def run(conversations: list[dict[str, Any]], *, k: int, threads: int, answer: bool) -> dict[str, Any]:
    """Every conversation's last turn under each strategy, on a fresh index of the documents."""
    from rag.config import HearthConfig
    from rag.service import Hearth

    out: dict[str, Any] = {"k": k, "machine": machine(), "conversations": len(conversations)}
    with tempfile.TemporaryDirectory(prefix="hearth-followups-") as tmp:
        hearth = Hearth(HearthConfig(data_dir=Path(tmp), n_threads=threads, embed_threads=threads))
        report = hearth.ingest([DATA / "docs"], workspace=WORKSPACE)
        if report.failed:
            raise SystemExit(f"ingest failed: {report.failed}")
        rows: list[dict[str, Any]] = []
        for conv in conversations:
            turns = [t["question"] for t in conv["turns"]]
            row: dict[str, Any] = {"id": conv["id"], "set": conv["set"], "kind": conv["kind"]}
            for strategy in STRATEGIES:
                query = query_for(strategy, hearth, turns, k=k)
                # Hearth asks a follow-up about a document's subject of that document (Hearth.subject_document).
                subject = hearth.subject_document(turns[-1], query, workspace=WORKSPACE) if strategy == "hearth" else None
                as_asked = strategy == "hearth" and not rewritten(turns[-1], query)  # as `ask` searches
                hits = hearth.search(query, k=k, workspace=WORKSPACE, scope=[subject] if subject else (),
                                     lines=as_asked, likely=as_asked)
                row[strategy] = judge(hits, conv["gold"]) | {"query": query}
            if answer:
                row["answer"] = _answer(hearth, turns, conv["gold"], k=k)
            rows.append(row)
            print(f"{conv['id']}: " + " ".join(f"{s}={'ok' if row[s]['right'] else '--'}" for s in STRATEGIES),
                  file=sys.stderr)
        out["rows"] = rows
    out["machine"]["load_after"] = machine()["load_average"]
    out["summary"] = summarise(rows)
    return out


def _answer(hearth: Any, turns: list[str], gold: dict[str, Any], *, k: int) -> dict[str, Any]:
    conv = hearth.new_conversation(turns[0], workspace=WORKSPACE)
    t0 = time.perf_counter()
    for q in turns:
        result = hearth.ask(q, k=k, workspace=WORKSPACE, conversation=conv)
    quotes = result.support.quotes if result.support is not None else []
    return {"reply": contains_answer(result.text, gold["answer"]),
            "quote": any(contains_answer(q.text, gold["answer"]) for q in quotes),
            "searched_for": result.searched_for, "seconds": round(time.perf_counter() - t0, 1)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of right last turns per strategy, per set and per kind."""
    summary: dict[str, Any] = {}
    for group in sorted({r["set"] for r in rows}) + ["all"]:
        chosen = [r for r in rows if group == "all" or r["set"] == group]
        if not chosen:
            continue
        entry: dict[str, Any] = {"n": len(chosen)}
        for s in STRATEGIES:
            entry[s] = round(sum(r[s]["right"] for r in chosen) / len(chosen), 3)
        entry["by_kind"] = {kind: {s: f"{sum(r[s]['right'] for r in chosen if r['kind'] == kind)}/"
                                      f"{sum(1 for r in chosen if r['kind'] == kind)}" for s in STRATEGIES}
                            for kind in sorted({r["kind"] for r in chosen})}
        if any("answer" in r for r in chosen):
            answered = [r["answer"] for r in chosen if "answer" in r]
            entry["reply_contains"] = round(sum(a["reply"] for a in answered) / len(answered), 3)
            entry["quote_contains"] = round(sum(a["quote"] for a in answered) / len(answered), 3)
        summary[group] = entry
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.followups", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--set", choices=("tuning", "heldout", "both"), default="both")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--answer", action="store_true", help="also ask the chat model the last turn")
    args = parser.parse_args(argv)
    result = run(load(args.set), k=args.k, threads=args.threads, answer=args.answer)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        print(f"{'set':<8} {'n':>3}  " + "  ".join(f"{s:>7}" for s in STRATEGIES))
        for group, entry in result["summary"].items():
            print(f"{group:<8} {entry['n']:>3}  " + "  ".join(f"{entry[s]:>7.3f}" for s in STRATEGIES))
        print(f"(load average {result['machine']['load_average']} → {result['machine']['load_after']}, "
              f"{result['machine']['cpus']} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

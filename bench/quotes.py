"""Quote benchmark: do the supporting quotes shown with an answer contain the answer itself?

    python -m bench.quotes [--json] [--k 5] [--limit N] [--reuse DIR] [--details FILE] [--threads N]
    python -m bench.quotes --replay FILE [--json] [--reuse DIR] [--no-model-check]   re-align the replies a
        --details FILE kept

A run takes --questions FILE (default: the retrieval set; bench/data/quotes_heldout.json is a held-out set
written after the aligner was tuned on the retrieval set); both take --quotes N and --in-context N, aligner
settings other than the app's, to compare them on the same replies.

Builds (or, with --reuse DIR, reuses) the workspace of bench/retrieval.py on the same corpus, then for
every question of bench/data/retrieval_questions.json:
  - searches it (`Hearth.search`, k passages),
  - asks the real default chat model through `Hearth.ask` (same k), which gives the reply and the passages
    the model was given,
  - aligns the reply with those passages (`rag.quotes.align`) to get the quotes shown with it.

Each question carries gold key phrases ("answer": a number, a command, a file name...); any one of them
counts. A text contains the answer when a phrase occurs in it after normalisation (see `normalise`: Unicode
compatibility forms, typographic quotes and dashes as ASCII, case folded, whitespace runs as one space) and
not inside a longer word or number ("debi" is not found in "debian", "41" not in "141"). Reported, as shares:
  - answer_in_retrieved: in any of the k passages `Hearth.search` returned;
  - answer_in_passages: in any passage given to the model (`Answer.sources`, after score and size limits);
  - reply_contains: in the model's reply;
  - quote_contains: in any quote shown (the aligned quotes, or the fallback quotes that replace a failed reply);
  - quote_contains_when_in_passages: quote_contains among the questions with answer_in_passages (the issue's
    target is 0.9);
  - fallback_rate: share of questions whose reply was replaced by quotes;
  - quote_offsets_exact: share of quotes whose start/end point at exactly their text in the document;
  - quote_chars_mean: characters of quoted text shown per answer (longer quotes contain more, and cost the
    reader more: the measure of what a rise in quote_contains was paid with).

--eval tune|tune2|heldout|heldout2|heldout3|all asks instead that part of the evaluation sets
(bench/data/eval_answerable.json and eval_unanswerable.json, written from the documents alone by a session that
had not seen the code) over the corpus with the Debian FAQ; the shares above are then of the answerable questions,
and it adds:
  - abstained_when_answerable: share of answerable questions Hearth said it could not answer (rag/abstain.py);
  - correct_reply_withheld: share of answerable questions whose reply held the answer but was withheld;
  - confident_when_unanswerable: share of the unanswerable questions answered all the same (not abstained).
The tuning questions ('tune', and 'tune2', written later by another session given only the documents) may be
used to choose settings; the held-out ones ('heldout', then 'heldout2' and 'heldout3', written later still the same
way) are reported, never tuned on.

--replay re-runs only the aligner (the current rag/quotes.py, default embedder) on the replies and passages
that an earlier run wrote with --details, in a few minutes instead of an hour: for tuning the aligner. The
chat model reads (for the check of the answer's line, rag/confirm.py) but writes nothing; --no-model-check
leaves it out, the baseline. Its summary has the same keys; the reply and passage figures are the earlier run's.

--summarise FILE [FILE ...] asks nothing: it gives the summary of the questions that earlier runs wrote with
--details, together (both held-out parts, say). Every summary also gives, under "intervals", the 95 % Wilson
intervals of the three shares #23's bars are on (abstained_when_answerable, confident_when_unanswerable,
quote_contains_when_in_passages), and under "probe" (where the rows have the probe's readings) how the probe
alone parts answerable from unanswerable questions (`probe_curve`).

Summary JSON on stdout with --json (else the table), the table and progress on stderr; --details writes
one JSON line per question as it finishes (question, gold, reply, quotes, sentences, passages).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import signal
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePath
from typing import IO, Any

from bench import corpus
from bench.retrieval import (EVAL_SPLITS, QUESTIONS_FILE, WORKSPACE, Gold, Question, index_corpus,
                             load_questions)

# Typographic characters the PDF and HTML loaders keep, written as a model would type them.
_ASCII = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
    | {"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " "}
)


def normalise(text: str) -> str:
    """Text as compared: compatibility forms, ASCII quotes and dashes, case folded, whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_ASCII).casefold().split())


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    body = re.escape(normalise(phrase))
    # A phrase that starts or ends with a letter or digit must not continue a longer word or number there.
    before = r"(?<![^\W_])" if phrase[:1].isalnum() else ""
    after = r"(?![^\W_])" if phrase[-1:].isalnum() else ""
    return re.compile(before + body + after)


def contains_answer(text: str, phrases: Iterable[str]) -> bool:
    """Whether any gold phrase occurs in the text, normalised, as whole words at its letter/digit ends."""
    norm = normalise(text)
    return any(_phrase_pattern(p).search(norm) for p in phrases if p.strip())


def load_answers(path: Path = QUESTIONS_FILE) -> dict[str, tuple[str, ...]]:
    """The gold phrases of every question, by question id."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {q["id"]: tuple(q.get("answer", ())) for q in doc["questions"]}


EVAL_ANSWERABLE = QUESTIONS_FILE.parent / "eval_answerable.json"
EVAL_UNANSWERABLE = QUESTIONS_FILE.parent / "eval_unanswerable.json"


def eval_questions(split: str) -> tuple[list[Question], dict[str, tuple[str, ...]]]:
    """The evaluation sets' questions of one part (one of EVAL_SPLITS, 'all' for every part), unanswerable ones
    first (they have no gold phrases), and the answerable ones' gold phrases by id."""
    chosen = [q["id"] for path in (EVAL_UNANSWERABLE, EVAL_ANSWERABLE)
              for q in json.loads(path.read_text(encoding="utf-8"))["questions"] if split in ("all", q["split"])]
    unanswerable = {q["id"]: q for q in json.loads(EVAL_UNANSWERABLE.read_text(encoding="utf-8"))["questions"]}
    answerable = {q.id: q for q in load_questions(EVAL_ANSWERABLE)}
    questions = [answerable[i] if i in answerable else
                 Question(i, unanswerable[i]["question"], Gold(unanswerable[i]["near_file"] or "-", None, None), False)
                 for i in chosen]
    return questions, load_answers(EVAL_ANSWERABLE)


def run(
    questions: Sequence[Question],
    answers: dict[str, tuple[str, ...]],
    *,
    data_dir: Path,
    documents: Sequence[Path],
    k: int = 5,
    threads: int | None = None,
    details: IO[str] | None = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
    aligner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Index the documents into data_dir, ask and align every question (`aligner`: options of
    rag.quotes.align); returns the summary."""
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig

    align_as_asked = functools.partial(align, **(aligner or {}))
    hearth = Hearth(HearthConfig(data_dir=data_dir, embed_threads=threads, n_threads=threads))
    report, chunks, ingest_s = index_corpus(hearth, documents, questions, log=log)
    t0 = time.perf_counter()
    hearth.search("warm-up query", k=k, workspace=WORKSPACE)
    hearth.warm_up(wait=True)  # loads the chat model and reads its fixed instructions once
    warmup_s = time.perf_counter() - t0
    texts = DocumentTexts()

    rows: list[dict[str, Any]] = []
    totals = {"search": 0.0, "ask": 0.0, "align": 0.0}
    offsets = [0, 0]  # quotes whose offsets point at their text, quotes shown
    interrupted = False
    try:
        for i, q in enumerate(questions, 1):
            row, detail = measure(hearth, q, answers.get(q.id, ()), k=k, texts=texts, align=align_as_asked)
            rows.append(row)
            for name, seconds in detail["seconds"].items():
                totals[name] += seconds
            offsets[0] += sum(detail["quote_offsets_exact"])
            offsets[1] += len(detail["quote_offsets_exact"])
            log(
                f"[{i}/{len(questions)}] {q.id}: passages {'Y' if row['answer_in_passages'] else '-'} "
                f"reply {'Y' if row['reply_contains'] else '-'} quote {'Y' if row['quote_contains'] else '-'}"
                f"{' fallback' if row['fallback'] else ''}; ask {detail['seconds']['ask']:.1f} s"
            )
            if details is not None:
                details.write(json.dumps(detail, ensure_ascii=False) + "\n")
                details.flush()
    except KeyboardInterrupt:  # Ctrl+C or SIGTERM: report the questions finished so far
        interrupted = True
        log(f"interrupted: {len(rows)} of {len(questions)} questions done")

    summary = summarise(rows)
    summary.update(
        {
            "k": k,
            "interrupted": interrupted,
            "quote_offsets_exact": round(offsets[0] / offsets[1], 4) if offsets[1] else None,
            "corpus": {"documents": len(documents), "chunks": chunks, "failed": len(report.failed)},
            "seconds": {
                "ingest": round(ingest_s, 3),
                "warmup": round(warmup_s, 3),
                **{name: round(s, 3) for name, s in totals.items()},
                "per_question": round(sum(totals.values()) / max(1, len(rows)), 3),
            },
        }
    )
    return summary


def measure(
    hearth: Any, q: Question, gold: Sequence[str], *, k: int, texts: DocumentTexts, align: Callable[..., Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Search, ask and align one question; returns its outcome and its details line."""
    from bench.grounding import recorded

    t0 = time.perf_counter()
    hits = hearth.search(q.question, k=k, workspace=WORKSPACE)
    t1 = time.perf_counter()
    answer = hearth.ask(q.question, k=k, workspace=WORKSPACE)
    t2 = time.perf_counter()
    # Measured on the passages the model was given, as the answer's quotes would be.
    rarity = hearth.store.rarity(q.question)
    support = align(answer.text, q.question, answer.sources, embedder=hearth.embedder, rarity=rarity,
                    check=hearth.answer_check())
    t3 = time.perf_counter()
    row = {
        "answerable": bool(gold),
        "answer_in_retrieved": any(contains_answer(h.text, gold) for h in hits),
        "answer_in_passages": any(contains_answer(h.text, gold) for h in answer.sources),
        "reply_contains": contains_answer(answer.text, gold),
        **_quote_outcome(support, gold),
    }
    detail = {
        "id": q.id,
        "question": q.question,
        "gold": list(gold),
        **row,
        "reply": answer.text,
        "asked_again": bool(answer.usage.get("asked_again")),  # its first reply copied a header or refused
        "shown": support.text,
        "quotes": [dict(qt.to_json(), passage=qt.passage, score=qt.score) for qt in support.quotes],
        "quote_offsets_exact": [texts.span(qt.source, qt.start, qt.end) == qt.text for qt in support.quotes],
        "sentences": [s.to_json() for s in support.sentences],
        # The grounding policy's signals, every checking-model verdict read, and its decision (bench.grounding).
        **recorded(support),
        "gold_passages": [n for n, h in enumerate(answer.sources, 1) if contains_answer(h.text, gold)],
        "passages": [_hit_json(h) for h in answer.sources],
        "rarity": rarity,
        "seconds": {"search": round(t1 - t0, 3), "ask": round(t2 - t1, 3), "align": round(t3 - t2, 3)},
    }
    return row, detail


def replay(path: Path, *, data_dir: Path, threads: int | None = 2, aligner: dict[str, Any] | None = None,
           model_check: bool = True) -> dict[str, Any]:
    """Align the stored replies of a --details file again; returns the summary. No reply is generated; the
    chat model only reads, for the check of the answer's line (rag/confirm.py), unless `model_check` is off."""
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig
    from rag.store import Hit

    hearth = Hearth(HearthConfig(data_dir=data_dir, embed_threads=threads, n_threads=threads))
    embedder = hearth.embedder  # as the run had it
    if model_check:
        aligner = dict(aligner or {}, check=hearth.answer_check())
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        hits = [Hit.from_json(p) for p in d["passages"]]
        support = align(d["reply"], d["question"], hits, embedder=embedder, rarity=d.get("rarity"), **(aligner or {}))
        row = {key: d[key] for key in ("answer_in_retrieved", "answer_in_passages", "reply_contains")}
        row["answerable"] = d.get("answerable", bool(d["gold"]))
        rows.append(row | _quote_outcome(support, d["gold"]))
    summary = summarise(rows)
    summary.update({"k": None, "interrupted": False, "replayed": str(path), "quote_offsets_exact": None,
                    "model_check": model_check})
    return summary


def _quote_outcome(support: Any, gold: Sequence[str]) -> dict[str, Any]:
    """What the shown quotes give: whether one holds the answer, whether they replaced the reply, their length."""
    return {
        "quote_contains": any(contains_answer(q.text, gold) for q in support.quotes),
        "fallback": support.fallback,
        "abstained": support.abstained,
        "quote_chars": sum(len(q.text) for q in support.quotes),
    }


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a share of k in n (95 % with the default z); None for no questions. Where the
    bars are a tenth and the sets a few dozen questions, a share a question or two over its bar is within the
    interval of one under it."""
    if n <= 0:
        return None
    p, z2 = k / n, z * z
    centre, half = p + z2 / (2 * n), z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return round(max(0.0, (centre - half) / (1 + z2 / n)), 4), round(min(1.0, (centre + half) / (1 + z2 / n)), 4)


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The shares over per-question outcomes (keys as in the module docstring)."""
    unanswerable = [r for r in rows if not r.get("answerable", True)]
    rows = [r for r in rows if r.get("answerable", True)]  # the shares below are of the answerable questions
    n = len(rows)

    def share(key: str, among: Sequence[dict[str, Any]]) -> float | None:
        return round(sum(r[key] for r in among) / len(among), 4) if among else None

    in_passages = [r for r in rows if r["answer_in_passages"]]
    confident = [dict(r, confident=not r["abstained"]) for r in unanswerable]
    return {
        # Not found (rag/abstain.py): of the answerable questions, the share Hearth said it could not answer,
        # and the share whose reply held the answer but was withheld; of the unanswerable ones, the share it
        # answered all the same (the reply, or quotes presented as the answer).
        "abstained_when_answerable": share("abstained", rows),
        "correct_reply_withheld": share("withheld", [dict(r, withheld=r["abstained"] and r["reply_contains"])
                                                     for r in rows]),
        "n_unanswerable": len(unanswerable),
        "confident_when_unanswerable": share("confident", confident),
        "n": n,
        "reply_contains": share("reply_contains", rows),
        "quote_contains": share("quote_contains", rows),
        "answer_in_passages": share("answer_in_passages", rows),
        "quote_contains_when_in_passages": share("quote_contains", in_passages),
        "fallback_rate": share("fallback", rows),
        "answer_in_retrieved": share("answer_in_retrieved", rows),
        "reply_contains_when_in_passages": share("reply_contains", in_passages),
        "n_in_passages": len(in_passages),
        "quote_chars_mean": round(sum(r["quote_chars"] for r in rows) / n, 1) if n else None,
        # The 95 % intervals of the shares #23's bars are on (wilson): how far a set this size pins them down.
        "intervals": {
            "abstained_when_answerable": wilson(sum(r["abstained"] for r in rows), n),
            "confident_when_unanswerable": wilson(sum(r["confident"] for r in confident), len(confident)),
            "quote_contains_when_in_passages": wilson(sum(r["quote_contains"] for r in in_passages), len(in_passages)),
        },
        **({"probe": probe} if (probe := probe_curve(rows, unanswerable)) else {}),
    }


PROBE_BOUNDS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)


def probe_curve(answerable: Sequence[dict[str, Any]], unanswerable: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """How the probe's reading of the question's lines (`question_verdict`, rag/grounding.py) alone parts the two
    kinds of question: its area under the curve; at each of PROBE_BOUNDS, how many answerable questions read
    under it and how many unanswerable ones at it or over (as `ask` reads `answered_from`); and the bound, of all
    those the scores allow, whose larger share of the two is least. None when no question has a reading."""
    from bench.grounding import auc

    def read(rows: Sequence[dict[str, Any]]) -> list[float]:
        return [v for r in rows if (v := (r.get("signals") or {}).get("question_verdict")) is not None]

    yes, no = read(answerable), read(unanswerable)
    if not yes or not no:
        return None

    def at(bound: float) -> tuple[int, int]:
        return sum(v < bound for v in yes), sum(v >= bound for v in no)

    def worse(bound: float) -> float:
        under, over = at(bound)
        return max(under / len(yes), over / len(no))

    best = min(sorted(set(yes + no)) + [max(yes + no) + 1], key=worse)  # the lowest of equally good bounds
    under, over = at(best)
    return {"area": round(auc(yes, no), 4), "n": [len(yes), len(no)],
            "at": {f"{b:g}": list(at(b)) for b in PROBE_BOUNDS},
            "best": {"bound": round(best, 4), "answerable_under": under, "unanswerable_over": over}}


def format_table(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table."""

    def pct(value: float | None) -> str:
        return "   n/a" if value is None else f"{value * 100:5.1f}%"

    def within(key: str) -> str:
        interval = summary.get("intervals", {}).get(key)
        return "" if interval is None else f"  (95 %: {interval[0] * 100:.1f}–{interval[1] * 100:.1f}%)"

    n, m = summary["n"], summary["n_in_passages"]
    s = summary["seconds"]
    rows = [
        (f"answer in the {summary['k']} retrieved passages", summary["answer_in_retrieved"], n),
        ("answer in the passages given to the model", summary["answer_in_passages"], n),
        ("answer in the model's reply", summary["reply_contains"], n),
        ("answer in a shown quote", summary["quote_contains"], n),
        ("  reply, when in the passages", summary["reply_contains_when_in_passages"], m),
        ("  quote, when in the passages (target 90%)", summary["quote_contains_when_in_passages"], m,
         within("quote_contains_when_in_passages")),
        ("reply replaced by quotes (fallback)", summary["fallback_rate"], n),
        ("said not found, answerable questions", summary["abstained_when_answerable"], n,
         within("abstained_when_answerable")),
        ("  with a reply that held the answer", summary["correct_reply_withheld"], n),
        ("answered, unanswerable questions", summary["confident_when_unanswerable"], summary["n_unanswerable"],
         within("confident_when_unanswerable")),
        ("quote offsets exact in the document", summary["quote_offsets_exact"], None),
    ]
    stopped = " (interrupted: the questions finished)" if summary["interrupted"] else ""
    lines = [f"Quote benchmark: {n} questions{stopped}, k={summary['k']}", ""]
    lines += [f"{label:<46}{pct(value)}" + (f"  of {of}" if of is not None else "") + (extra[0] if extra else "")
              for label, value, of, *extra in rows]
    lines.append(f"{'characters quoted per answer (mean)':<46}{summary['quote_chars_mean']}")
    lines.append("")
    lines.append(
        f"seconds: ingest {s['ingest']:.1f}, warm-up {s['warmup']:.1f}, search {s['search']:.1f}, "
        f"ask {s['ask']:.1f}, align {s['align']:.1f}; {s['per_question']:.1f} per question"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 0, or 1 when the corpus cannot be had or some documents failed to index."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    parser = argparse.ArgumentParser(prog="python -m bench.quotes", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--k", type=int, default=5, help="passages retrieved per question (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions")
    parser.add_argument(
        "--reuse", type=Path, default=None, metavar="DIR", help="data folder to build the index in and keep"
    )
    parser.add_argument("--questions", type=Path, default=QUESTIONS_FILE, help="question file (default: %(default)s)")
    parser.add_argument("--eval", choices=EVAL_SPLITS, default=None,
                        help="instead: that part of the evaluation sets (bench/data/eval_*.json, answerable and "
                             "unanswerable questions) over the corpus with the Debian FAQ")
    parser.add_argument(
        "--corpus-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where the corpus is downloaded and unpacked (default: {corpus.DEFAULT_CACHE_DIR})",
    )
    parser.add_argument(
        "--details", type=Path, default=None, metavar="FILE", help="write one JSON line per question to FILE"
    )
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of both models (default: %(default)s)")
    parser.add_argument(
        "--replay", type=Path, default=None, metavar="FILE", help="re-align the replies of a --details FILE"
    )
    parser.add_argument("--summarise", type=Path, nargs="+", default=None, metavar="FILE",
                        help="instead: the summary of the questions of earlier runs' --details FILEs together "
                             "(no model; e.g. both held-out parts)")
    parser.add_argument("--no-model-check", action="store_true",
                        help="--replay without the chat model's check of the answer's line (the baseline)")
    parser.add_argument("--quotes", type=int, default=None, metavar="N",
                        help="quotes shown per answer (default: the app's), to compare aligner settings")
    parser.add_argument("--in-context", type=int, default=None, metavar="N",
                        help="question lines quoted with the sentences around them (default: the app's)")
    args = parser.parse_args(argv)
    if args.quotes is not None and not 1 <= args.quotes <= 10:
        parser.error("--quotes must be between 1 and 10")
    if args.in_context is not None and args.in_context < 0:
        parser.error("--in-context must be 0 or more")
    aligner: dict[str, Any] = {}
    if args.quotes is not None:  # one slot for the reply's own quote, the rest for the question's lines
        aligner.update(max_quotes=args.quotes, question_quotes=args.quotes - 1)
    if args.in_context is not None:
        aligner["in_context"] = args.in_context
    if args.summarise is not None:
        try:
            rows = [json.loads(line) for f in args.summarise for line in f.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
            summary = summarise(rows)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"bench.quotes: error: --summarise takes --details files ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
            return 1
        print(_listed(summary, as_json=args.json))
        return 0
    if args.replay is not None:
        if not args.replay.is_file():
            parser.error(f"--replay: no such file: {args.replay}")
        try:
            if args.reuse is not None:
                summary = replay(args.replay, data_dir=args.reuse, threads=args.threads, aligner=aligner,
                                 model_check=not args.no_model_check)
            else:
                with tempfile.TemporaryDirectory(prefix="hearth-bench-", ignore_cleanup_errors=True) as tmp:
                    summary = replay(args.replay, data_dir=Path(tmp), threads=args.threads, aligner=aligner,
                                     model_check=not args.no_model_check)
        except (KeyError, ValueError) as exc:
            print(f"bench.quotes: error: {args.replay} is not a --details file ({exc})", file=sys.stderr)
            return 1
        print(_listed(summary, as_json=args.json))
        return 0
    if not 1 <= args.k <= 20:
        parser.error("--k must be between 1 and 20")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")

    from inference.errors import HearthError

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, _interrupt)
    if args.eval is not None:
        questions, answers = eval_questions(args.eval)
        questions = questions[: args.limit]
    else:
        questions = load_questions(args.questions)[: args.limit]
        answers = load_answers(args.questions)
        missing = [q.id for q in questions if not answers.get(q.id)]
        if missing:
            parser.error(f"questions without a gold answer: {', '.join(missing)}")
    try:
        documents = corpus.documents(args.corpus_cache, log=log,
                                     which=corpus.EVAL if args.eval is not None else corpus.ENGLISH)
    except corpus.CorpusError as exc:
        log(f"bench.quotes: error: {exc}")
        return 1
    details = args.details.open("w", encoding="utf-8") if args.details is not None else None
    options = {"documents": documents, "k": args.k, "threads": args.threads, "details": details, "log": log,
               "aligner": aligner}
    try:
        if args.reuse is not None:
            args.reuse.mkdir(parents=True, exist_ok=True)
            summary = run(questions, answers, data_dir=args.reuse, **options)
        else:
            with tempfile.TemporaryDirectory(prefix="hearth-bench-", ignore_cleanup_errors=True) as tmp:
                summary = run(questions, answers, data_dir=Path(tmp), **options)
    except HearthError as exc:
        log(f"bench.quotes: error: {exc}")
        if exc.hint:
            log(f"hint: {exc.hint}")
        return 1
    finally:
        if details is not None:
            details.close()
    table = format_table(summary)
    if args.json:
        log(table)
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(table)
    return 1 if summary["corpus"]["failed"] else 0


def _listed(summary: dict[str, Any], *, as_json: bool) -> str:
    """A summary made of stored runs (--summarise, --replay): JSON, or a line a key."""
    return json.dumps(summary, ensure_ascii=False) if as_json else "\n".join(f"{k:<34}{v}" for k, v in summary.items())


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class DocumentTexts:
    """Each document's full extracted text, loaded once, to check quote offsets against."""

    def __init__(self) -> None:
        self._texts: dict[str, str | None] = {}

    def span(self, source: str, start: int, end: int) -> str | None:
        """The document's text from start to end (None when the document cannot be read)."""
        if source not in self._texts:
            from rag.errors import LoadError
            from rag.loaders import full_text, load

            try:
                self._texts[source] = full_text(load(Path(source)))
            except LoadError:
                self._texts[source] = None
        text = self._texts[source]
        return None if text is None else text[start:end]


def _hit_json(hit: Any) -> dict[str, Any]:
    """A passage with everything needed to rebuild its Hit offline (`Hit.from_json`, to replay the aligner)."""
    place = "/".join(PurePath(hit.source).parts[-2:])
    return hit.to_json() | {"place": place, "start": hit.start, "end": hit.end, "chunk_id": hit.chunk_id}


if __name__ == "__main__":
    sys.exit(main())

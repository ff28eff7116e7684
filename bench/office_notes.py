"""Not found on office notes: does Hearth say "not found" where a small office's notes do not answer, and
keep a right reply where they do? (#23, README "Not found is an answer")

    python -m bench.office_notes [--json] [--offices NAME,...|held-out] [--threads N] [--details FILE] [--cache DIR]
                                 [--probe shipped|left-out [--features FILE]] [--yes-no] [--answerable]
                                 [--under-floor] [--model-ranking] [--embedder NAME_OR_FOLDER]

bench/data/office_notes.json holds sixty-three fictional offices, each five short notes with ten questions they
answer (with a phrase a right reply holds) and ten about the same office they do not. The first two are the ones
tests/rag/test_abstain_model.py runs; the other sixty-one were written by separate sessions given only a brief
(no code, no failures), with the answerable questions reworded as an employee would ask them (the third and fourth
offices' all, the others' half). The sixth and seventh's stored replies were read when a rule was written, the
eighth and ninth came after it; the third to eleventh's chose the bound of the model's check of the answer's line
(rag/confirm.py), and the twelfth and thirteenth came after that; the first to thirteenth's chose the larger
checker's bounds, the fourteenth to seventeenth were reported on them, and the eighteenth to twenty-first were
written after them. The twenty-second to twenty-ninth ask yes-or-no questions on both sides (four or more of each
ten): the twenty-second to twenty-fifth chose how a "No" is read (rag.abstain.unfounded_no), the twenty-sixth to
twenty-ninth were reported on it. The thirtieth to thirty-fifth (half their questions of each kind yes-or-no)
were written after the larger model's probe on the question's lines was fitted and its bounds chosen, and are
reported on it; the probe is now fitted on them too. The thirty-sixth to forty-third (a dental practice, a building
site, a school, a law firm, a theatre, a garden centre, a claims call centre, a museum) and the forty-fourth to
fifty-first (a pharmacy, a care home, a bus depot, a university laboratory, a food bank, a leisure centre, an
accountancy firm, a newsroom) were written for the probe to fit on. The fifty-second to fifty-fifth (a veterinary
surgery, a hotel, a housing association's repairs team, a public library) were written after every choice so far,
to be held out with the twenty-sixth to twenty-ninth, and the fifty-sixth to sixty-third (a hair salon, a car repair
garage, a doctors' surgery's reception, a brewery with a taproom, a removals firm, an architecture practice, a
cinema, a farm park) after them (bench.question_probe.HELD_OUT; `--offices held-out` runs those sixteen). Each
office is indexed into a fresh data folder of its own (its own keyword counts, as on a real machine) and every
question is asked through `Hearth.ask` with the default models: the embedder, and the chat model shared by all
offices (joined once into --cache, default .data/bench-office).

Per office: answerable questions withheld ("not found"), right (not withheld, and the reply holds the phrase),
right as shown (`ask --json`'s "answer" holds it: the passages' lines that stand in for a failed reply count
too), and unanswerable questions answered (not withheld); as the baseline of the same run, how many of each the
model's check alone gave up ("checked out": without it they would have been answered); and whether the office
is within the bars of #23's hidden check, scaled from its five questions of each kind to the office's ten (at
most 2 answerable withheld, at least 6 right by the reply, at most 2 unanswerable answered). Over all the offices
asked, the shares withheld and answered come with their 95 % Wilson intervals ("intervals"). About 22 s a question
on 2 CPU cores with the larger checker, some eight hours for all sixty-three. The table goes to stdout
(JSON with --json), progress to stderr; --details writes one JSON line per question (the reply, what was
shown, the grounding policy's signals with every checking-model verdict read and its decision, the quotes shown,
and the passages; `python -m bench.grounding FILE` replays the policy on them: its ablation, and --fit its bounds).

Answerable yes-or-no questions have their right "yes" or "no" in bench/data/office_yes_no.json (written apart by two
sessions given only the notes): the table also counts those whose reply, and whose answer as shown, opens with the
wrong word. --model-ranking asks with the chat model's ordering of the passages (HearthConfig.model_ranking, off as
Hearth ships), to weigh what it costs before the first token against what it changes. --embedder indexes and
searches with another embedder (a folder bench.other_embedder writes, say). --yes-no and --answerable ask only
those kinds of question, --under-floor only those for which no passage clears the search's score floor (README
"Under the search's floor"); the bars are then not read.

The probe that reads the question's lines (rag/probe.py) was fitted on every office but the held-out ones, so on
any other office it reads questions it was fitted on, and that office's figures flatter it.
--probe left-out scores each such office with a probe fitted on the other tuning offices instead (from the states
bench.question_probe keeps in --features; a few seconds an office), as an office nobody fitted on would be scored:
the figures its bounds can be chosen on without the held-out offices. A held-out office is scored by the probe that
ships either way.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.conditions import machine
from bench.quotes import _hit_json, wilson

DATA = Path(__file__).resolve().parent / "data" / "office_notes.json"
DEFAULT_CACHE = Path(".data/bench-office")


@dataclass(frozen=True)
class Office:
    name: str
    written: str
    notes: dict[str, str]
    answerable: list[tuple[str, str]]  # (question, a phrase a right reply holds)
    unanswerable: list[str]


YES_NO = Path(__file__).resolve().parent / "data" / "office_yes_no.json"


# The verbs a question answered by yes or no opens with, in its last sentence ("I'm 23. Can I drive the van?").
_YES_NO_LAST = re.compile(r"(?:^|[.!?]\s+)\W*(?:is|are|was|were|am|can|could|does|do|did|should|shall|must|may|"
                          r"might|will|would|has|have|had)\b[^.!?]*\??\s*$", re.IGNORECASE)
_REPLY_YES = re.compile(r"^\W*(?:yes|yeah)\b", re.IGNORECASE)
_REPLY_NO = re.compile(r"^\W*(?:unfortunately,?\s+)?no\b(?!\s+one\b)", re.IGNORECASE)  # "No, …", not "No one …"


def asks_yes_no(question: str) -> bool:
    """Whether a question's last sentence is one answered by yes or no."""
    return _YES_NO_LAST.search(question.strip()) is not None


def reply_says(question: str, reply: str) -> str | None:
    """"yes" or "no": what a reply to a yes-or-no question opens with; None otherwise."""
    if not asks_yes_no(question):
        return None
    if _REPLY_YES.match(reply):
        return "yes"
    return "no" if _REPLY_NO.match(reply) else None


def load_yes_no(path: Path = YES_NO) -> dict[tuple[str, str], str]:
    """The right "yes" or "no" to each answerable yes-or-no question that has one, by (office, question)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(d["office"], d["question"]): d["answer"] for d in data["answers"] if d["answer"] in ("yes", "no")}


def load(path: Path = DATA) -> list[Office]:
    """The offices of the data file, checked: every right-reply phrase is in one of its office's notes."""
    data = json.loads(path.read_text(encoding="utf-8"))
    offices = []
    for o in data["offices"]:
        office = Office(o["name"], o["written"], dict(o["notes"]), [(q, f) for q, f in o["answerable"]],
                        list(o["unanswerable"]))
        texts = [t.casefold() for t in office.notes.values()]
        missing = [q for q, f in office.answerable if not any(f.casefold() in t for t in texts)]
        if missing:
            raise ValueError(f"{path}: office {office.name}: no note holds the answer of {missing}")
        offices.append(office)
    return offices


def run_office(office: Office, model: Any, root: Path, *, threads: int | None, details: IO[str] | None = None,
               log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
               checker: tuple[str, Any] | None = None, probe: Any = None, check_bounds: Any = None,
               yes_no: dict[tuple[str, str], str] | None = None, asks: Callable[[str, bool], bool] | None = None,
               under_floor: bool = False, model_ranking: bool = False, embedder: str | None = None,
               cache: Path | None = None) -> dict[str, Any]:
    """Index one office into a fresh data folder under `root` and ask its questions; returns its counts.
    `checker`: the name and loaded model that check answers' lines, as Hearth would load them (None: the chat
    model checks); `probe`: the probe that reads the question's lines (None: the one that ships); `check_bounds`:
    how the checker's verdicts are read (None: as they ship); `yes_no`: the right "yes" or "no" to answerable
    yes-or-no questions (`load_yes_no`); `asks(question, answerable)`: which questions are asked (None: all);
    `under_floor`: only those for which no passage clears the search's score floor, searched as `ask` searches
    without the chat model's ranking (README "Under the search's floor")."""
    from bench.grounding import recorded
    from rag.components import CHECK_WITH_CHAT
    from rag.service import Hearth, HearthConfig

    folder = root / office.name / "notes"
    folder.mkdir(parents=True)
    for name, text in office.notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    config = HearthConfig(data_dir=root / office.name / "data", n_threads=threads, embed_threads=threads,
                          check_model=checker[0] if checker else CHECK_WITH_CHAT, model_ranking=model_ranking,
                          embedder=embedder, cache_folder=cache)
    hearth = Hearth(config, chat_model=model, check_model=checker[1] if checker else None, probe=probe,
                    check_bounds=check_bounds)
    report = hearth.ingest([folder])
    if report.added != len(office.notes):
        raise RuntimeError(f"office {office.name}: {report.added} of {len(office.notes)} notes indexed")
    # "checked_out": questions given up only because the model said the answer's line does not give the reply
    # (rag/confirm.py); without that check they would have been answered: the baseline, in the same run.
    asked = [(q, p) for q, p in [*office.answerable, *((q, None) for q in office.unanswerable)]
             if asks is None or asks(q, p is not None)]
    if under_floor:
        asked = [(q, p) for q, p in asked if all(h.score < hearth.config.min_score for h in hearth.search(q))]
    counts = {"answerable": sum(p is not None for _, p in asked), "withheld": 0, "right": 0, "right_shown": 0,
              "unanswerable": sum(p is None for _, p in asked), "answered": 0,
              "checked_out_answerable": 0, "checked_out_right": 0, "checked_out_unanswerable": 0,
              **dict.fromkeys(QUESTION_KEYS, 0), **dict.fromkeys(YES_NO_KEYS, 0)}
    yes_no = yes_no or {}
    t0 = time.perf_counter()
    for i, (question, phrase) in enumerate(asked, 1):
        t_ask = time.perf_counter()
        out = hearth.ask(question)
        seconds = time.perf_counter() - t_ask
        support = out.support
        shown = out.to_json()
        withheld = bool(shown["abstained"])  # as `ask --json` says it (no passage at all is not found too)
        right = phrase is not None and not withheld and phrase.casefold() in out.text.casefold()
        # As `ask --json` shows it: its "answer", where the passages' lines stand in for a reply that failed.
        right_shown = phrase is not None and not withheld and phrase.casefold() in shown["answer"].casefold()
        decision = support.decision if support is not None else None
        checked_out = withheld and decision is not None and decision.reason == "denied"
        counts["checked_out_answerable" if phrase is not None else "checked_out_unanswerable"] += checked_out
        counts["checked_out_right"] += checked_out and phrase is not None and phrase.casefold() in (
            out.to_json()["reply"] or "").casefold()
        changed = decision.changed if decision is not None else None
        if changed:  # what the larger model's verdict on the question's lines changed (rag.quotes.align)
            counts[f"question_{changed}_{'answerable' if phrase is not None else 'unanswerable'}"] += 1
        # An answerable yes-or-no question: does the reply, and the answer as shown, open with the right word?
        gold = yes_no.get((office.name, question)) if phrase is not None else None
        said = reply_says(question, out.text) if gold else None
        said_shown = reply_says(question, shown["answer"]) if gold and not withheld else None
        if gold:
            counts["yes_no"] += 1
            counts["yes_no_reply_wrong"] += said is not None and said != gold
            counts["yes_no_shown_wrong"] += said_shown is not None and said_shown != gold
            counts["yes_no_shown_right"] += said_shown == gold
        kind = "answerable" if phrase is not None else "unanswerable"
        if phrase is not None:
            counts["withheld"] += withheld
            counts["right"] += right
            counts["right_shown"] += right_shown
        else:
            counts["answered"] += not withheld
        verdict = "not found" if withheld else ("right" if right else "answered")
        log(f"[{office.name} {i}/{len(asked)}] {verdict}: {question}")
        if details is not None:
            details.write(json.dumps({
                "office": office.name, "question": question, "answerable": phrase is not None, "phrase": phrase,
                "withheld": withheld, "right": right, "right_shown": right_shown, "reply": out.text,
                # its first reply copied a passage header or refused, and the model was asked again (rag.answer)
                "asked_again": bool(out.usage.get("asked_again")),
                "shown": support.text if support is not None else out.text,
                "checked_out": checked_out, "yes_no": gold, "seconds": round(seconds, 2),
                "timings": {k: round(v, 3) for k, v in out.timings.items() if isinstance(v, (int, float))},
                # the grounding policy's signals, every checking-model verdict read, and its decision
                **recorded(support),
                # the quotes shown: for "not found" the lines closest to the question, those that would stand in
                # for the reply were the probe's bounds to let them (a replay of other bounds reads them)
                "quotes": [q.text for q in support.quotes] if support is not None else [],
                # What re-aligning the reply offline needs, as bench.quotes --details keeps it.
                "rarity": hearth.store.rarity(question),
                "passages": [_hit_json(h) for h in out.sources],
            }, ensure_ascii=False) + "\n")
            details.flush()
    counts["seconds_per_question"] = round((time.perf_counter() - t0) / max(1, len(asked)), 2)
    return counts


def run(offices: Sequence[Office], *, threads: int | None, cache: Path, details: IO[str] | None = None,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
        check_model: str | None = None, probes: dict[str, Any] | None = None,
        asks: Callable[[str, bool], bool] | None = None, under_floor: bool = False,
        model_ranking: bool = False, embedder: str | None = None) -> dict[str, Any]:
    """Every office in turn, with one chat model; the summary with each office's counts and their sum.
    `check_model`: HearthConfig.check_model ("chat": the chat model checks answers; None: as Hearth chooses);
    `probes`: by office, the probe that reads its questions' lines instead of the one that ships;
    `asks(question, answerable)`: which questions are asked (None: all); `under_floor`: only the questions no
    passage clears the search's floor for; `model_ranking`: HearthConfig.model_ranking; `embedder`: the
    workspaces' embedder (HearthConfig.embedder; None: the default)."""
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.components import check_model_name
    from rag.service import HearthConfig

    summary: dict[str, Any] = {"machine": machine(), "offices": {}}
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=threads or 2)
    # The checker Hearth would use here (the built-in one when installed), loaded once for all offices.
    name = check_model_name(HearthConfig(data_dir=cache, check_model=check_model))
    checker = (name, LlamaCppModel(chat_model_path(name, cache), n_ctx=1024, n_threads=threads or 2)) if name else None
    summary["check_model"] = name or DEFAULT_CHAT_MODEL
    summary["subset"] = asks is not None or under_floor
    summary["model_ranking"] = model_ranking
    summary["embedder"] = embedder
    yes_no = load_yes_no()
    probes = probes or {}
    summary["probe_left_out"] = sorted(probes)  # the offices scored by a probe fitted without them
    try:
        with tempfile.TemporaryDirectory(prefix="hearth-office-") as tmp:
            for office in offices:
                summary["offices"][office.name] = run_office(office, model, Path(tmp), threads=threads,
                                                             details=details, log=log, checker=checker,
                                                             probe=probes.get(office.name),
                                                             yes_no=yes_no, asks=asks, under_floor=under_floor,
                                                             model_ranking=model_ranking, embedder=embedder,
                                                             cache=cache)
    finally:
        model.close()
        if checker:
            checker[1].close()
    summary["total"] = total(summary["offices"])
    summary["intervals"] = intervals(summary["total"])
    summary["machine"]["load_after"] = machine()["load_average"]
    return summary


# Questions whose outcome the larger model's verdict on the question's closest lines changed: withheld where the
# rule let the reply stand, or the lines shown where it withheld it; by kind of question.
QUESTION_KEYS = tuple(f"question_{change}_{kind}" for change in ("withheld", "lines")
                      for kind in ("answerable", "unanswerable"))


# Answerable yes-or-no questions with a right "yes" or "no" (bench/data/office_yes_no.json): how many, those whose
# reply opens with the wrong one, those whose answer as shown does (the lines standing in open with neither), and
# those whose answer as shown opens with the right one; and questions whose reply the lines stood in for because
# the larger model answered them the other way (rag.confirm.CheckBounds.contradicts), and lines standing in that
# the reply's word opened because it answered them the same way (`agrees`), by kind.
YES_NO_KEYS = ("yes_no", "yes_no_reply_wrong", "yes_no_shown_wrong", "yes_no_shown_right")


def total(offices: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The offices' counts added up."""
    keys = ("answerable", "withheld", "right", "right_shown", "unanswerable", "answered", "checked_out_answerable",
            "checked_out_right", "checked_out_unanswerable", *QUESTION_KEYS, *YES_NO_KEYS)
    return {k: sum(o.get(k, 0) for o in offices.values()) for k in keys}


def intervals(t: dict[str, int]) -> dict[str, tuple[float, float] | None]:
    """The 95 % Wilson intervals (bench.quotes.wilson) of the shares #23's bars are on: answerable questions
    withheld, unanswerable ones answered."""
    return {"withheld": wilson(t["withheld"], t["answerable"]), "answered": wilson(t["answered"], t["unanswerable"])}


# The hidden check of #23 on five questions of each kind: at most 1 answerable withheld, at least 3 right, at
# most 1 unanswerable answered; an office's ten of each meet it at twice those counts.
def meets_bars(o: dict[str, Any]) -> bool:
    """Whether an office's counts are within the hidden check's bars (scaled to its number of questions)."""
    scale = o["answerable"] / 5
    return o["withheld"] <= scale and o["right"] >= 3 * scale and o["answered"] <= o["unanswerable"] / 5


def format_table(summary: dict[str, Any]) -> str:
    # The last column: how many of each were given up by the model's check alone (answerable, of them with a
    # right reply, unanswerable); without the check those would have been answered.
    # "shown": right as `ask --json` shows the answer (the passages' lines standing in for a failed reply count);
    # "bars": whether the office is within the hidden check's bars (`meets_bars`, with the reply's own "right").
    # "question": what the verdict on the question's lines changed, withheld (answerable / unanswerable) and lines
    # shown instead of "not found" (answerable / unanswerable); the rest of the row is with it.
    rows = [("office", "answerable", "withheld", "right", "shown", "unanswerable", "answered", "checked out",
             "question", "bars", "s/question")]
    offices = summary["offices"]
    for name, o in [*offices.items(), ("total", summary["total"])]:
        bars = "-" if summary.get("subset") else f"{sum(map(meets_bars, offices.values()))}/{len(offices)}" if (
            name == "total") else ("yes" if meets_bars(o) else "no")
        rows.append((name, str(o["answerable"]), str(o["withheld"]), str(o["right"]), str(o.get("right_shown", "")),
                     str(o["unanswerable"]), str(o["answered"]), f"{o['checked_out_answerable']} "
                     f"({o['checked_out_right']} right) / {o['checked_out_unanswerable']}",
                     f"{o.get('question_withheld_answerable', 0)}/{o.get('question_withheld_unanswerable', 0)} "
                     f"{o.get('question_lines_answerable', 0)}/{o.get('question_lines_unanswerable', 0)}", bars,
                     str(o.get("seconds_per_question", ""))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    m = summary["machine"]
    lines.append(f"answers checked by: {summary.get('check_model')}")
    t = summary["total"]
    within = intervals(t)
    shares = [f"{k} {t[k]} of {t[n]} ({t[k] / t[n]:.3f}; 95 %: {within[k][0]:.3f}–{within[k][1]:.3f})"
              for k, n in (("withheld", "answerable"), ("answered", "unanswerable")) if within[k] is not None]
    if shares:
        lines.append("in all: " + ", ".join(shares))
    if t.get("yes_no"):
        lines.append(f"yes-or-no answerable questions: {t['yes_no']}; the reply opens with the wrong word "
                     f"{t['yes_no_reply_wrong']}, as shown {t['yes_no_shown_wrong']} (the right one "
                     f"{t['yes_no_shown_right']})")
    if summary.get("subset"):
        lines.append("only some of each office's questions were asked: the bars are not read")
    if summary.get("probe_left_out"):
        lines.append("question's lines read by a probe fitted without the office: "
                     + ", ".join(summary["probe_left_out"]))
    lines.append(f"machine: {m['cpus']} CPUs, load average {m['load_average']} before, {m.get('load_after')} after")
    return "\n".join(lines)


def _embedder(spec: str | None, cache: Path) -> str | None:
    """The embedder `--embedder` names: a folder is added to the cache first (inference.models.add_embedder)."""
    if spec is None or not Path(spec).is_dir():
        return spec
    from inference.models import add_embedder

    return add_embedder(Path(spec), cache).key


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.office_notes", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--offices", default=None,
                        help='comma-separated office names, "held-out" for the offices never fitted or tuned on '
                             "(bench.question_probe.HELD_OUT) (default: all)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the models (default 2)")
    parser.add_argument("--details", type=Path, default=None, metavar="FILE", help="one JSON line per question")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the chat model file is joined")
    parser.add_argument("--check-model", default=None, metavar="NAME",
                        help='the model that checks answers: "chat" for the chat model (a baseline), or a built-in '
                             "name (default: as Hearth chooses, the built-in checker when installed)")
    parser.add_argument("--probe", choices=("shipped", "left-out"), default="shipped",
                        help="the probe that reads the question's lines: the one that ships, or for each office it was "
                             "fitted on, one fitted without it from the stored states (bench.question_probe), so "
                             "that a tuning office is scored as a new one would be (default: %(default)s)")
    parser.add_argument("--features", type=Path, default=None, metavar="FILE",
                        help="with --probe left-out: the states the probes are fitted on, read where one lacks "
                             "(default: question_states.jsonl in --cache, as bench.question_probe keeps them)")
    parser.add_argument("--yes-no", action="store_true", help="only the questions answered by yes or no")
    parser.add_argument("--answerable", action="store_true", help="only the questions the notes answer")
    parser.add_argument("--under-floor", action="store_true",
                        help="only the questions for which no passage clears the search's score floor")
    parser.add_argument("--model-ranking", action="store_true",
                        help="ask with the chat model's ordering of the passages (HearthConfig.model_ranking)")
    parser.add_argument("--embedder", default=None, metavar="NAME_OR_FOLDER",
                        help="index and search with this embedder: a name added before, or a sentence-transformers "
                             "folder, added now (bench.other_embedder writes one)")
    parser.add_argument("--agreed-from", type=float, default=None, metavar="X",
                        help="the checker's bound on a Yes or No it agrees with (rag.confirm.CheckBounds.agreed_from) "
                             "instead of the one that ships")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    offices = load()
    if args.offices:
        from bench.question_probe import HELD_OUT

        wanted = [n.strip() for n in args.offices.split(",") if n.strip()]
        wanted = [m for n in wanted for m in (HELD_OUT if n == "held-out" else (n,))]
        unknown = sorted(set(wanted) - {o.name for o in offices})
        if unknown:
            have = ", ".join(o.name for o in offices)
            parser.error(f"--offices: no office named {', '.join(unknown)} (have: {have})")
        offices = [o for o in offices if o.name in wanted]
    probes = None
    if args.probe == "left-out":
        from bench.question_probe import probes_without
        from rag.components import check_model_name
        from rag.confirm import bounds_for
        from rag.probe import LAYER
        from rag.service import HearthConfig

        checker = check_model_name(HearthConfig(data_dir=args.cache, check_model=args.check_model))
        if checker is None or not bounds_for(checker).asks_question():
            parser.error("--probe left-out: the probe is read only by the larger built-in checker, and this run's "
                         "answers are checked by the chat model")

        features = args.features or args.cache / "question_states.jsonl"
        probes = probes_without([o.name for o in offices], features=features, cache=args.cache,
                                threads=args.threads, layer=LAYER)
    details = args.details.open("w", encoding="utf-8") if args.details is not None else None
    try:
        asks = None
        if args.yes_no or args.answerable:

            def asks(question: str, answerable: bool) -> bool:
                return (not args.yes_no or asks_yes_no(question)) and (not args.answerable or answerable)

        summary = run(offices, threads=args.threads, cache=args.cache, details=details, check_model=args.check_model,
                      probes=probes,
                      asks=asks, under_floor=args.under_floor, model_ranking=args.model_ranking,
                      embedder=_embedder(args.embedder, args.cache))
    finally:
        if details is not None:
            details.close()
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How replies open and which language they are in, with Hearth's prompt and with layouts tried against it (#63).

    python -m bench.reply_form [--json] [--threads N] [--details FILE] [--layouts labelled,tagged,unlabelled]

A small model copies what stands before a passage: with each passage introduced by a label in brackets,
"(parkovka.md, Парковка)", Russian replies open with that label and the section's title copied after it, and
some carry an English passage into a Russian reply. This runs the notes and questions of
bench/data/reply_form.json (Russian and English, written before any layout was run on them) through the
default chat model (`rag.answer.answer`, as `ask` does) with each layout, on the same passages, and counts per
language:

- copied:  replies that open with a passage's label or title, or name a passage's file at all;
- foreign: replies not in the question's language, or a Russian reply whose letters are a fifth or more Latin;
- right:   replies that hold the question's answer phrase.

The layouts: `labelled`, Hearth's own (rag.answer: each passage after "[n] (file, page, section)", a question in
another language than English also asked before the passages, and a copied opening dropped, rag/openings.py);
`tagged`, tried and not kept (docs/experiments/2026-12-07-tagged-passages.md): each passage inside
<passage n="…" source="…" section="…"> … </passage>, and for a question in another language than English the
instruction to translate what it takes from the passages; `unlabelled`, tried and not kept: each passage after its
number alone. The model, its threads and greedy decoding are the same for all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "reply_form.json"
_LATIN = re.compile(r"[A-Za-z]")
_CYRILLIC = re.compile(r"[\u0400-\u04FF]")


def tagged(question: str, passages: Sequence[Any]) -> str:
    """The layout tried for #63: each passage inside a tag whose attributes say its number, file and section."""
    import rag.answer as answer

    language = answer.detect(question)
    ask = f"Question: {question}"
    if language != answer.DEFAULT_LANGUAGE:
        name = answer.language_name(language)
        ask += (f"\nAnswer in {name}, in one to three sentences of your own, and cite the passage like [1]. "
                f"Translate into {name} whatever you take from the passages.")
    if not passages:
        return ask
    return "Passages:\n" + "\n".join(_tag(i, h) for i, h in enumerate(passages, 1)) + f"\n\n{ask}"


def unlabelled(question: str, passages: Sequence[Any]) -> str:
    """Tried for #63: each passage after its number alone ("[1]"), without the file and section a reply copies."""
    import rag.answer as answer

    shipped = _HEARTHS(question, [])
    if not passages:
        return shipped
    body = "\n\n".join(f"[{i}] {answer._tidy(h.text)}" for i, h in enumerate(passages, 1))
    return f"Passages:\n\n{body}\n\n{shipped}"


LAYOUTS = ("labelled", "tagged", "unlabelled")


def _HEARTHS(question: str, passages: Sequence[Any]) -> str:  # noqa: N802
    """Hearth's own layout (rag.answer._user_message as shipped, whatever `run_layout` puts in its place)."""
    import rag.answer as answer

    return (_SHIPPED or answer._user_message)(question, passages)


_SHIPPED: Callable[[str, Sequence[Any]], str] | None = None


def _tag(n: int, hit: Any) -> str:
    import rag.answer as answer

    def attribute(text: str) -> str:
        return " ".join(text.replace('"', "'").replace("<", "‹").replace(">", "›").split())

    attributes = [f'n="{n}"', f'source="{attribute(Path(hit.source).name)}"']
    if hit.page is not None:
        attributes.append(f'page="{hit.page}"')
    if hit.heading:
        attributes.append(f'section="{attribute(hit.heading.split(answer.HEADING_SEPARATOR)[-1])}"')
    return f"<passage {' '.join(attributes)}>\n{answer._tidy(hit.text)}\n</passage>"


def copied(reply: str, hits: Sequence[Any]) -> bool:
    """Whether a reply opens with a passage's label or title, or names a passage's file anywhere."""
    opening = reply.lstrip(" \n[]0123456789").casefold()
    if opening.startswith("(") or opening.startswith("<"):
        return True
    if any(Path(h.source).name.casefold() in reply.casefold() for h in hits):
        return True
    return any(h.heading and opening.startswith(h.heading.split(" › ")[-1].casefold()) for h in hits)


def foreign(reply: str, language: str) -> bool:
    """Whether a reply is not in the question's language (or, for Russian, a fifth or more of its letters Latin)."""
    from rag.language import detect

    if detect(reply) != language:
        return True
    if language == "ru":
        latin, cyrillic = len(_LATIN.findall(reply)), len(_CYRILLIC.findall(reply))
        return latin >= 0.2 * max(1, latin + cyrillic)
    return False


def run_layout(hearth: Any, questions: list[dict], layout: Callable[[str, Sequence[Any]], str] | None,
               log: Callable[[str], None]) -> list[dict]:
    """Each question answered with `layout` (None: Hearth's own), on the passages search gives it."""
    import rag.answer as answer

    global _SHIPPED
    shipped = _SHIPPED = _SHIPPED or answer._user_message
    answer._user_message = layout or shipped
    rows = []
    try:
        for q in questions:
            hits = hearth.search(q["question"], k=5)
            t0 = time.perf_counter()
            result = answer.answer(q["question"], hits, hearth.chat_model)
            reply = result.text.strip()
            rows.append({**q, "reply": reply, "seconds": round(time.perf_counter() - t0, 2),
                         "first": Path(hits[0].source).name if hits else None,
                         "copied": copied(reply, hits), "foreign": foreign(reply, q["language"]),
                         "right": q["fact"].casefold() in reply.casefold()})
            log(f"  {q['language']} copied={rows[-1]['copied']} foreign={rows[-1]['foreign']} "
                f"right={rows[-1]['right']}: {reply[:90]!r}")
    finally:
        answer._user_message = shipped
    return rows


def summary(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per language: questions, copied openings, replies in another language, right replies."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        s = out.setdefault(r["language"], {"questions": 0, "copied": 0, "foreign": 0, "right": 0})
        s["questions"] += 1
        for key in ("copied", "foreign", "right"):
            s[key] += bool(r[key])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--details", type=Path, help="write every reply, per layout, as JSON here")
    parser.add_argument("--layouts", default="labelled",
                        help="comma-separated, of: " + ", ".join(LAYOUTS) + " (default: %(default)s)")
    args = parser.parse_args(argv)
    layouts = {"labelled": None, "tagged": tagged, "unlabelled": unlabelled}
    chosen = [n.strip() for n in args.layouts.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in layouts]
    if unknown or not chosen:
        parser.error(f"--layouts: unknown {', '.join(unknown) or '(none given)'}; have: {', '.join(layouts)}")
    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig
    from tests.notes import write_notes

    data = json.loads(DATA.read_text(encoding="utf-8"))
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        hearth = Hearth(HearthConfig(data_dir=Path(tmp) / "data", n_threads=args.threads, embed_threads=args.threads,
                                     ingest=IngestOptions(workers=0)))
        hearth.ingest([write_notes(Path(tmp) / "notes", data["notes"])])
        results = {}
        for name in chosen:
            layout = layouts[name]
            log(f"{name}:")
            results[name] = run_layout(hearth, data["questions"], layout, log)
        hearth.close()
    out = {"layouts": {name: summary(rows) for name, rows in results.items()},
           "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
    if args.details:
        args.details.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=1))
    else:
        print("layout     language  questions  copied  foreign  right")
        for name, per in out["layouts"].items():
            for language, s in per.items():
                print(f"{name:10} {language:9} {s['questions']:9}  {s['copied']:6}  {s['foreign']:7}  {s['right']:5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fit the probe that reads from the larger model's hidden state whether a question's lines answer it (#23).

    python -m bench.question_probe [--layer N|last] [--features FILE] [--out FILE] [--cache DIR] [--threads N]
                                   [--with-debian [--debian-index DIR]] [--against FILE] [--l2 A,B,..] [--json]
    python -m bench.question_probe --sweep A-B [--features FILE] [--cache DIR] [--threads N] [--json]
    python -m bench.question_probe --coverage [--with-debian [--debian-index DIR]] [--cache DIR] [--json]

For every question of bench/data/office_notes.json, the four lines of its office's notes closest to it (the
embedder's similarity; headings left out) are put to the larger built-in model as rag.confirm.lines_prompt
does, and its hidden state after that prompt is read: the output of layer --layer (default rag.probe.LAYER,
LlamaCppModel.layer_state), or of the last one after its norm (`last`, LlamaCppModel.last_state). The states
are kept in --features (default .data/bench-office/question_states.jsonl, each with its layer; a state already
there is not read again), about 2 s a question on 2 CPU cores. A logistic regression (bench.probe_fit.fit) is then
fitted on the tuning offices, the first to twenty-fifth and the thirtieth to fifty-first, and written to --out
(default: rag/question_probe.json, the probe Hearth ships). The twenty-sixth to twenty-ninth and fifty-second to
sixty-third are held out (HELD_OUT): their area under the curve (answerable against unanswerable) is reported,
never fitted on. Printed: that, and the tuning offices' when each is left out of the fit in turn, with how many
questions each set's scores read the wrong way at the bound `ask` reads them with (answerable under
rag.confirm.BOUNDS' `answered_from`, unanswerable at it or over). The baselines of the same run: --against FILE
scores another probe (one that shipped before) on the same states, --l2 A,B,.. gives the tuning offices' area,
each left out, with each of those penalties.

--with-debian fits on the Debian evaluation's tuning splits too (bench/data/eval_*.json: `tune` and `tune2`, 50
answerable and 40 unanswerable questions), each with the four lines `ask` gives the probe for it (the corpus indexed
into --debian-index and every question searched as `ask` searches, some 15-20 s a question the first time,
`debian_lines`), and reports each tuning split's area left out of the fit and the held-out split's (never
fitted on). Tried, not what ships: leaving each tuning split out, the other one did not carry over to it (README
"The Debian questions fitted on too").

--sweep reads states at several layers (those a question lacks in one reading of its prompt,
LlamaCppModel.layer_states; about 2.5 s a question for twenty layers) and prints each layer's tuning-office AUC,
each office left out in turn, which is how rag.probe.LAYER was chosen; it scores no held-out office and writes no
probe. The features file then holds a state per question and layer (about 15 KB each).

--coverage reads no state: for every answerable question it counts whether its first 4, 6 and 8 lines hold the
phrase a right reply holds, ranked as rag.quotes.align ranks the lines it puts to the probe (the embedder alone)
and as the quotes shown are ranked (rag.quotes._question_scores), among the questions whose lines hold it at all:
the offices' over all their notes' lines, as the probe is fitted (a minute), and with --with-debian the Debian
questions' over their passages' lines, as `ask` finds them (some 10 s a question). README "The lines the probe
reads".
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.grounding import auc

ROOT = Path(__file__).resolve().parents[1]
OFFICES = ROOT / "bench" / "data" / "office_notes.json"
# Reported, never fitted on; every other office is fitted on: the first to twenty-fifth, and the thirtieth to
# fifty-first, written later. The thirtieth to thirty-fifth were held out at first, since fitting on them too
# seemed to hurt the first twenty-five; that was the old fit's instability (bench.probe_fit.fit). With Newton's fit,
# joining them leaves the first twenty-five's area, each left out, as it was (0.9843 -> 0.9841) and lifts theirs
# from 0.961 to 0.981 (README "Every middle layer, and more offices to fit on"). The thirty-sixth to forty-third
# were written for the fit; joining them leaves the thirty-one's area as it was (0.983) and lifts theirs from
# 0.964 to 0.968 (README "Eight offices more to fit on"). The forty-fourth to fifty-first were written for it too;
# joining them lifts theirs from 0.949 to 0.963 and leaves the thirty-nine's about as it was (0.980 -> 0.978).
# The fifty-second to fifty-fifth were written to be held out too, after every choice so far (README "Four offices
# more, held out"), and the fifty-sixth to sixty-third after them (README "Eight offices more, and Debian questions
# more, held out").
HELD_OUT = ("twenty-sixth", "twenty-seventh", "twenty-eighth", "twenty-ninth",
            "fifty-second", "fifty-third", "fifty-fourth", "fifty-fifth",
            "fifty-sixth", "fifty-seventh", "fifty-eighth", "fifty-ninth",
            "sixtieth", "sixty-first", "sixty-second", "sixty-third")
# The Debian evaluation's splits reported, never fitted on (bench.quotes --eval).
DEBIAN_HELD_OUT = ("heldout", "heldout2", "heldout3")
DEFAULT_CACHE = Path(".data/bench-office")


def note_lines(text: str) -> list[str]:
    """A note's lines of three words or more, its headings left out."""
    from rag.lines import split_units

    lines = [text[a:b].strip() for a, b in split_units(text)]
    return [s for s in lines if len(s.split()) >= 3 and not s.startswith("#")]


def questions() -> list[dict[str, Any]]:
    """Every office's questions with their office's lines, in the file's order."""
    offices = json.loads(OFFICES.read_text(encoding="utf-8"))["offices"]
    out = []
    for office in offices:
        lines = [line for text in office["notes"].values() for line in note_lines(text)]
        asked = [(q, [p]) for q, p in office["answerable"]]
        asked += [(q[0] if isinstance(q, list) else q, None) for q in office["unanswerable"]]
        tuning = office["name"] not in HELD_OUT
        out += [{"office": office["name"], "tuning": tuning, "question": q, "answerable": p is not None,
                 "phrases": p or [], "lines": lines}
                for q, p in asked]
    return out


def debian_passages(items: Sequence[dict[str, Any]], *, index: Path, cache: Path, threads: int,
                    log: Callable[[str], None]) -> Iterator[tuple[dict[str, Any], Any, list[Any]]]:
    """Each Debian item (`debian_items`) with the Hearth its corpus is indexed in (into `index`) and the passages
    `ask` gives the model for it: the question searched as `ask` searches (the chat model's ranking included), the
    passages over the score floor cut to the answer's prompt; none when nothing is found. Some 8-15 s a question on
    2 CPU cores, with the corpus's indexing (about 2.5 minutes) first."""
    import rag.answer as answer
    from bench import corpus
    from bench.quotes import eval_questions
    from bench.retrieval import WORKSPACE, index_corpus
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path
    from rag.service import Hearth, HearthConfig

    chat = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=threads)
    try:
        hearth = Hearth(HearthConfig(data_dir=index, n_threads=threads, embed_threads=threads), chat_model=chat)
        index_corpus(hearth, corpus.documents(log=log, which=corpus.EVAL), eval_questions("all")[0], log=log)
        for it in items:
            question = it["question"]
            hits = [h for h in hearth.search(question, k=5, workspace=WORKSPACE, likely=True)
                    if h.score >= hearth.config.min_score]
            passages: list[Any] = []
            if hits:
                passages = answer.build_prompt(question, hits, n_ctx=chat.n_ctx, count_prompt=chat.count_prompt,
                                               count_tokens=chat.count_tokens,
                                               max_passage_tokens=hearth.config.max_passage_tokens).passages
            yield it, hearth, passages
    finally:
        chat.close()


def debian_lines(items: Sequence[dict[str, Any]], *, index: Path, cache: Path, threads: int,
                 log: Callable[[str], None]) -> None:
    """Give each Debian item (`debian_items`) its "closest": the lines the probe reads for it as `ask` gives them,
    the four lines of its passages (`debian_passages`) that rag.quotes.align puts to the probe. A question with no
    passage gets none (`ask` says "not found" before the probe is read)."""
    from inference.models import CHECK_MODEL
    from rag.confirm import bounds_for
    from rag.quotes import align

    class Lines:  # stands in for rag.confirm.AnswerCheck: keeps the lines align would have the probe read
        bounds = bounds_for(CHECK_MODEL)
        read: list[str] = []

        def __call__(self, question: str, pairs: Any) -> None:
            return None

        def lines_answer(self, question: str, lines: Sequence[str]) -> None:
            self.read = list(lines)

    found = debian_passages(items, index=index, cache=cache, threads=threads, log=log)
    for n, (it, hearth, passages) in enumerate(found, 1):
        lines = Lines()
        if passages:
            align("I don't know.", it["question"], passages, embedder=hearth.embedder,
                  rarity=hearth.store.rarity(it["question"]), check=lines)
        it["closest"] = [" ".join(line.split()) for line in lines.read]
        log(f"[debian {n}/{len(items)}] {len(lines.read)} lines: {it['question']}")


RANKINGS = ("embedder", "quotes")  # the lines the probe reads (rag.quotes.align) and the quotes' ranking
COVERAGE_LINES = (4, 6, 8)  # how many of the best-ranked lines are looked at


def ranked_lines(question: str, units: Sequence[Any], vectors: np.ndarray, q_vec: np.ndarray, ranking: str,
                 *, headings: Sequence[bool] = ()) -> list[str]:
    """The units' (rag.quotes' `_Unit`) texts, best first, each once: by the embedder's similarity to the question
    alone (`embedder`: how rag.quotes.align ranks the lines it puts to the probe) or by the ranking of the lines
    that answer the question (`quotes`: rag.quotes._question_scores, the meaning, the question's rare words, and
    a small lead for the better-ranked passages, as the quotes shown are picked). Units marked in `headings` are
    scored with the others but left out, as both rankings leave a passage's headings out."""
    from rag.quotes import _question_scores, _terms

    if ranking == "embedder":
        scores = vectors @ q_vec
    elif ranking == "quotes":
        scores = _question_scores(question, units, vectors, [_terms(u.text) for u in units], q_vec)
    else:
        raise ValueError(f"unknown ranking {ranking!r} (one of {', '.join(RANKINGS)})")
    skip = set(np.flatnonzero(headings)) if len(headings) else set()
    return list(dict.fromkeys(" ".join(units[int(j)].text.split()) for j in np.argsort(-scores, kind="stable")
                              if int(j) not in skip))


def holds(lines: Sequence[str], phrases: Sequence[str]) -> bool:
    """Whether the lines, read together, hold one of the phrases (case and spacing aside)."""
    text = " ".join(" ".join(lines).split()).casefold()
    return any(" ".join(p.split()).casefold() in text for p in phrases)


def coverage(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per set: its answerable questions whose answer is in their lines at all ("in_lines"), and how many of those
    hold it in their first k lines by each ranking. Each row: "set", "phrases", and "ranked" ({ranking: lines})."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = out.setdefault(row["set"], {"answerable": 0, "in_lines": 0,
                                            **{r: dict.fromkeys(map(str, COVERAGE_LINES), 0) for r in RANKINGS}})
        entry["answerable"] += 1
        if not holds(row["ranked"][RANKINGS[0]], row["phrases"]):
            continue  # the answer is nowhere in its lines (a Debian question whose passages lack it)
        entry["in_lines"] += 1
        for ranking in RANKINGS:
            for k in COVERAGE_LINES:
                entry[ranking][str(k)] += holds(row["ranked"][ranking][:k], row["phrases"])
    return out


def coverage_rows(*, cache: Path, threads: int, debian: Path | None,
                  log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> list[dict[str, Any]]:
    """Every answerable question's lines, ranked both ways (`ranked_lines`): an office's over all its notes' lines
    (as the probe is fitted), and with `debian` (its index folder) each Debian question's over the lines of the
    passages `ask` gives the model (`debian_passages`), as rag.quotes.align cuts them (headings left out)."""
    from rag.quotes import _is_heading, _units, _Unit
    from rag.service import Hearth, HearthConfig

    rows: list[dict[str, Any]] = []
    embedder = Hearth(HearthConfig(data_dir=cache / "replay", n_threads=threads, embed_threads=threads)).embedder
    vectors: dict[str, np.ndarray] = {}
    for it in (it for it in questions() if it["answerable"]):
        if it["office"] not in vectors:
            vectors = {it["office"]: embedder.embed(it["lines"])}
        units = [_Unit(1, line, 0, len(line)) for line in it["lines"]]
        q_vec = embedder.embed_query([it["question"]])[0]
        rows.append({"set": "offices" if it["tuning"] else "held-out offices", "question": it["question"],
                     "phrases": it["phrases"],
                     "ranked": {r: ranked_lines(it["question"], units, vectors[it["office"]], q_vec, r)
                                for r in RANKINGS}})
    if debian is None:
        return rows
    items = [it for it in debian_items() if it["answerable"]]
    for n, (it, hearth, passages) in enumerate(debian_passages(items, index=debian, cache=cache, threads=threads,
                                                                log=log), 1):
        units = _units(passages)
        headings = [_is_heading(u, passages) for u in units]
        ranked: dict[str, list[str]] = dict.fromkeys(RANKINGS, [])
        if units:
            vecs = hearth.embedder.embed([u.text for u in units] + [it["question"]])
            ranked = {r: ranked_lines(it["question"], units, vecs[:-1], vecs[-1], r, headings=headings)
                      for r in RANKINGS}
        rows.append({"set": it["office"], "question": it["question"], "phrases": it["phrases"],
                     "ranked": ranked})
        log(f"[debian {n}/{len(items)}] {len(units)} lines: {it['question']}")
    return rows


def read_states(items: Sequence[dict[str, Any]], features: Path, *, layers: Sequence[int | None], cache: Path,
                threads: int, log: Callable[[str], None],
                find_lines: Callable[[list[dict[str, Any]]], None] | None = None,
                ) -> dict[int | None, dict[tuple[str, str], list[float] | None]]:
    """Each question's hidden state at each of `layers` (None: the last, after its norm), from --features or read
    now (and added to it): the numbered layers a question lacks are read together, in one reading of its prompt.
    An item's "closest" lines, when it has them, are read instead of its office's lines closest to it; with none
    (nothing found for it), its state is None. Items with neither, to be read, get theirs from `find_lines` first."""
    states: dict[int | None, dict[tuple[str, str], list[float] | None]] = {layer: {} for layer in layers}
    if features.is_file():
        for line in features.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                if (layer := d.get("layer")) in states:
                    states[layer][(d["office"], d["question"])] = d["state"]
    todo = [it for it in items if any((it["office"], it["question"]) not in states[layer] for layer in layers)]
    if not todo:
        return states
    lineless = [it for it in todo if "lines" not in it and "closest" not in it]
    if lineless and find_lines is not None:
        find_lines(lineless)
    from inference.llm import LlamaCppModel
    from inference.models import CHECK_MODEL, chat_model_path
    from rag.confirm import QUESTION_LINES, lines_prompt
    from rag.service import Hearth, HearthConfig

    embedder = Hearth(HearthConfig(data_dir=cache / "replay", n_threads=threads, embed_threads=threads)).embedder
    model = LlamaCppModel(chat_model_path(CHECK_MODEL, cache), n_ctx=2048, n_threads=threads)
    features.parent.mkdir(parents=True, exist_ok=True)
    vectors: dict[str, np.ndarray] = {}
    try:
        with features.open("a", encoding="utf-8") as out:
            for n, it in enumerate(todo, 1):
                t0 = time.perf_counter()
                key = (it["office"], it["question"])
                if "closest" in it:  # the lines given (the Debian questions', as `ask` gives them)
                    lines = it["closest"]
                else:
                    if it["office"] not in vectors:
                        vectors = {it["office"]: embedder.embed(it["lines"])}
                    closest = np.argsort(-(vectors[it["office"]] @ embedder.embed_query([it["question"]])[0]))
                    lines = [it["lines"][int(j)] for j in closest[:QUESTION_LINES]]
                messages = lines_prompt(lines, it["question"])
                lacking = [layer for layer in layers if key not in states[layer]]
                numbered = [layer for layer in lacking if layer is not None]
                read: dict[int | None, Any] = {}
                if lines:  # none: nothing was found for it, and `ask` says "not found" before the probe is read
                    read = dict(model.layer_states(messages, numbered)) if numbered else {}
                    if None in lacking:
                        read[None] = model.last_state(messages)
                for layer in lacking:
                    state = [round(float(v), 5) for v in read[layer]] if lines else None
                    states[layer][key] = state
                    out.write(json.dumps({"office": it["office"], "question": it["question"],
                                          "answerable": it["answerable"], "layer": layer, "state": state}) + "\n")
                out.flush()
                log(f"[{n}/{len(todo)}] {time.perf_counter() - t0:.1f} s: {it['question']}")
    finally:
        model.close()
    return states


def _fits_without(x: np.ndarray, y: np.ndarray, tuning: np.ndarray, offices: Sequence[str], names: Sequence[str], *,
                  layer: int | None, l2: float | None = None) -> dict[str, Any]:
    """For each tuning office of `names`, the probe fitted on the other tuning offices (a held-out one gets none);
    `l2`: the fit's penalty (default bench.probe_fit.L2)."""
    from inference.models import CHECK_MODEL
    from bench.probe_fit import L2, fit

    out = {}
    for name in dict.fromkeys(names):
        mine = np.array([o == name for o in offices])
        if tuning[mine].any():
            out[name] = fit(x[tuning & ~mine], y[tuning & ~mine], model=CHECK_MODEL, layer=layer,
                            l2=L2 if l2 is None else l2)
    return out


def _left_out(x: np.ndarray, y: np.ndarray, tuning: np.ndarray, offices: Sequence[str], *,
              layer: int | None, l2: float | None = None) -> np.ndarray:
    """Each tuning office's questions scored by a probe fitted on the other tuning offices (0 elsewhere)."""
    scores = np.zeros(len(y))
    for name, probe in _fits_without(x, y, tuning, offices, offices, layer=layer, l2=l2).items():
        mine = np.array([o == name for o in offices])
        scores[mine] = [probe.score(s) for s in x[mine]]
    return scores


def _read_layer(items: Sequence[dict[str, Any]], features: Path, *, layer: int | None, cache: Path, threads: int,
                log: Callable[[str], None], find_lines: Callable[[list[dict[str, Any]]], None] | None = None,
                ) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The items that have a state at `layer` (one with no lines found has none: `ask` says "not found" before the
    probe is read), and their states as rows (`read_states`)."""
    states = read_states(items, features, layers=[layer], cache=cache, threads=threads, log=log,
                         find_lines=find_lines)[layer]
    items = [it for it in items if states[(it["office"], it["question"])] is not None]
    return items, np.array([states[(it["office"], it["question"])] for it in items])


def probes_without(names: Sequence[str], *, features: Path, cache: Path, threads: int, layer: int | None,
                   log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """For each tuning office of `names`, the probe fitted on the other tuning offices, as the fit that ships is
    (`run`), from the states in `features` (read now where one lacks): what scores that office as `ask` would if it
    had never been fitted on (bench.office_notes --probe left-out). A held-out office, never fitted on, gets none:
    the probe that ships scores it. An unknown name is an error."""
    items = questions()
    unknown = sorted(set(names) - {it["office"] for it in items})
    if unknown:
        raise ValueError(f"no office named {', '.join(unknown)}")
    items, x = _read_layer(items, features, layer=layer, cache=cache, threads=threads, log=log)
    y, tuning, offices = _labels(items)
    return _fits_without(x, y, tuning, offices, names, layer=layer)


def _labels(items: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Whether each question is answerable (1.0 or 0.0), whether its office is a tuning one, and its office."""
    y = np.array([1.0 if it["answerable"] else 0.0 for it in items])
    return y, np.array([it["tuning"] for it in items]), [it["office"] for it in items]


def _area(scores: np.ndarray, y: np.ndarray, keep: np.ndarray) -> float | None:
    return auc(list(scores[keep & (y == 1)]), list(scores[keep & (y == 0)]))


def _read(scores: np.ndarray, y: np.ndarray, keep: np.ndarray, bound: float) -> dict[str, Any]:
    """The scores' area under the curve among `keep`, and how many of them the probe reads the wrong way at the bound
    `ask` reads it with (rag.confirm.BOUNDS: from `answered_from` the lines stand in for a withheld reply):
    answerable questions under it, unanswerable ones at it or over."""
    return {"auc": _area(scores, y, keep), "answerable_under": int((keep & (y == 1) & (scores < bound)).sum()),
            "unanswerable_over": int((keep & (y == 0) & (scores >= bound)).sum())}


def _bound() -> float:
    from inference.models import CHECK_MODEL
    from rag.confirm import bounds_for

    bound = bounds_for(CHECK_MODEL).answered_from
    return 0.0 if bound is None else bound


def run(*, features: Path, out: Path | None, cache: Path, threads: int, layer: int | None,
        debian: Path | None = None, against: Path | None = None, penalties: Sequence[float] = (),
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """Fit on the tuning offices (and, with `debian`, the folder the Debian evaluation's corpus is indexed in, on
    its tuning splits too) and report: each tuning office (and Debian split) scored left out of the fit, and the
    held-out ones scored by the fit written to `out`. The baselines of the same run: `against`, a probe file (one
    that shipped before), scored on the same states; `penalties`, the tuning offices' area, each left out, for
    each of these L2 penalties instead of bench.probe_fit.L2."""
    from inference.models import CHECK_MODEL
    from bench.probe_fit import fit
    from rag.probe import Probe

    items = questions() + (debian_items() if debian is not None else [])
    find_lines = None if debian is None else functools.partial(debian_lines, index=debian, cache=cache,
                                                                threads=threads, log=log)
    items, x = _read_layer(items, features, layer=layer, cache=cache, threads=threads, log=log, find_lines=find_lines)
    y, tuning, offices = _labels(items)
    office = np.array([not o.startswith("debian-") for o in offices])

    left_out = _left_out(x, y, tuning, offices, layer=layer)
    probe = fit(x[tuning], y[tuning], model=CHECK_MODEL, layer=layer)
    held = np.array([probe.score(s) for s in x])
    summary = {
        "layer": layer,
        "questions": {"tuning": int((tuning & office).sum()), "held_out": int((~tuning & office).sum()),
                      **({"debian_tuning": int((tuning & ~office).sum()),
                          "debian_held_out": int((~tuning & ~office).sum())} if debian is not None else {})},
        "auc_left_out_tuning": _area(left_out, y, tuning & office),
        "auc_held_out": _area(held, y, ~tuning & office),
        "held_out_offices": {name: _area(held, y, np.array([o == name for o in offices]))
                             for name in dict.fromkeys(o for o, t, f in zip(offices, tuning, office, strict=True)
                                                       if f and not t)},
        "scores": {f"{o}|{it['question']}": float(left_out[i] if tuning[i] else held[i])
                   for i, (o, it) in enumerate(zip(offices, items, strict=True))},
    }
    if debian is not None:  # each tuning split left out of the fit in turn; the held-out one by the fit written
        summary["debian"] = {name: _area(held if name.removeprefix("debian-") in DEBIAN_HELD_OUT else left_out, y,
                                         np.array([o == name for o in offices]))
                             for name in dict.fromkeys(o for o in offices if o.startswith("debian-"))}
        # The baseline, in the same run: every split scored by the fit on the tuning offices alone (what ships).
        alone = fit(x[tuning & office], y[tuning & office], model=CHECK_MODEL, layer=layer)
        scored = np.array([alone.score(s) for s in x])
        summary["debian_offices_only"] = {name: _area(scored, y, np.array([o == name for o in offices]))
                                          for name in summary["debian"]}
    bound = _bound()
    mixed = np.where(tuning, left_out, held)  # as "scores": each question by a fit that never saw it
    groups = {"tuning": tuning & office, "held_out": ~tuning & office,
              **{name: np.array([o == name for o in offices]) for name in dict.fromkeys(offices)}}
    summary["read"] = {"bound": bound, **{k: _read(mixed, y, keep, bound) for k, keep in groups.items()}}
    if against is not None:
        other = Probe.from_json(json.loads(against.read_text(encoding="utf-8")))
        if other.layer != layer or other.weights.shape != x.shape[1:]:
            raise ValueError(f"{against}: a probe of layer {other.layer} with {other.weights.shape[0]} weights, "
                             f"not of layer {layer} with {x.shape[1]}")
        scored = np.array([other.score(s) for s in x])
        summary["against"] = {"file": str(against),
                              **{k: _read(scored, y, keep, bound) for k, keep in groups.items()}}
    if penalties:
        summary["l2"] = {str(l2): _area(_left_out(x, y, tuning, offices, layer=layer, l2=l2), y, tuning & office)
                         for l2 in penalties}
    if out is not None:
        out.write_text(json.dumps(probe.to_json()) + "\n", encoding="utf-8")
        summary["written"] = str(out)
    return summary


def debian_items() -> list[dict[str, Any]]:
    """The Debian evaluation's questions (bench/data/eval_*.json, bench.quotes --eval) as items: office "debian-"
    and its split, the held-out splits (DEBIAN_HELD_OUT) never fitted on. Their lines are found (`debian_lines`)
    only for those whose state is not in --features yet."""
    from bench.quotes import EVAL_ANSWERABLE, EVAL_UNANSWERABLE

    return [{"office": f"debian-{q['split']}", "tuning": q["split"] not in DEBIAN_HELD_OUT, "question": q["question"],
             "answerable": path == EVAL_ANSWERABLE, "phrases": q.get("answer", [])}
            for path in (EVAL_UNANSWERABLE, EVAL_ANSWERABLE)
            for q in json.loads(path.read_text(encoding="utf-8"))["questions"]]


def sweep(*, features: Path, cache: Path, threads: int, layers: Sequence[int],
          log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """How plainly each of `layers` holds the answer: the tuning offices' area under the curve, each office scored
    by a probe fitted without it (how `rag.probe.LAYER` is chosen). The held-out offices are not scored, so that
    no layer is chosen on them."""
    items = questions()
    states = read_states(items, features, layers=layers, cache=cache, threads=threads, log=log)
    y, tuning, offices = _labels(items)
    areas = {}
    for layer in layers:
        x = np.array([states[layer][(it["office"], it["question"])] for it in items])
        areas[layer] = _area(_left_out(x, y, tuning, offices, layer=layer), y, tuning)
    return {"questions": {"tuning": int(tuning.sum())}, "auc_left_out_tuning": areas}


def _layer(text: str) -> int | None:
    if text == "last":
        return None
    try:
        layer = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a layer: {text!r} (a number from 0, or `last`)") from None
    if layer < 0:
        raise argparse.ArgumentTypeError(f"not a layer: {layer} (layers are counted from 0)")
    return layer


def _penalties(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"not positive numbers separated by commas: {text!r}")
    return values


def _layers(text: str) -> list[int]:
    """`A-B` (every layer from A to B) or `A,B,C`."""
    try:
        if "-" in text:
            a, b = (int(v) for v in text.split("-"))
            layers = list(range(a, b + 1))
        else:
            layers = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not layers: {text!r} (e.g. 8-27 or 14,18,22)") from None
    if not layers or min(layers) < 0:
        raise argparse.ArgumentTypeError(f"not layers: {text!r} (layers are counted from 0; A-B needs A <= B)")
    return layers


def main(argv: Sequence[str] | None = None) -> int:
    from rag.probe import LAYER

    parser = argparse.ArgumentParser(prog="python -m bench.question_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--layer", type=_layer, default=LAYER, metavar="N|last",
                        help="the model's layer read, from 0, or `last` (after its norm) (default: %(default)s)")
    parser.add_argument("--sweep", type=_layers, metavar="A-B|A,B,..",
                        help="instead of fitting: each of these layers' AUC on the tuning offices, each left out of "
                             "the fit in turn (the layers a question lacks are read in one pass); writes no probe")
    parser.add_argument("--features", type=Path, default=DEFAULT_CACHE / "question_states.jsonl", metavar="FILE",
                        help="hidden states read so far, one JSON line per question (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=ROOT / "rag" / "question_probe.json", metavar="FILE",
                        help="where the fitted probe is written (default: %(default)s)")
    parser.add_argument("--no-write", action="store_true", help="report only; write no probe")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, metavar="DIR",
                        help="where the joined models are, as bench.office_notes keeps them (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the models (default: %(default)s)")
    parser.add_argument("--with-debian", action="store_true",
                        help="fit on the Debian evaluation's tuning splits too, and report each split (tried, not "
                             "what ships: README \"The Debian questions fitted on too\")")
    parser.add_argument("--debian-index", type=Path, default=Path(".data/bench-eval-index"), metavar="DIR",
                        help="with --with-debian: where its corpus is indexed to find its questions' lines, when a "
                             "state of one is not in --features yet (default: %(default)s)")
    parser.add_argument("--coverage", action="store_true",
                        help="instead of fitting: how often the lines the probe reads hold a right reply's phrase, "
                             "against the quotes' ranking, for 4, 6 and 8 lines (reads no state, fits nothing)")
    parser.add_argument("--against", type=Path, default=None, metavar="FILE",
                        help="a probe file to score on the same states, next to the new fit (one that shipped "
                             "before: `git show REV:rag/question_probe.json > FILE`)")
    parser.add_argument("--l2", type=_penalties, default=(), metavar="A,B,..",
                        help="the tuning offices' area, each left out of the fit, with each of these L2 penalties too "
                             "(the fit written keeps bench.probe_fit.L2)")
    parser.add_argument("--json", action="store_true", help="print the summary, with every question's score, as JSON")
    args = parser.parse_args(argv)
    if args.against is not None:
        from rag.probe import Probe

        try:
            Probe.from_json(json.loads(args.against.read_text(encoding="utf-8")))
        except OSError as e:
            parser.error(f"--against: cannot read {args.against}: {e.strerror or e}")
        except (ValueError, KeyError, TypeError) as e:
            parser.error(f"--against: {args.against} is not a probe file ({type(e).__name__}: {e})")
    f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    if args.coverage:
        covered = coverage(coverage_rows(cache=args.cache, threads=args.threads,
                                         debian=args.debian_index if args.with_debian else None))
        if args.json:
            print(json.dumps(covered, indent=2))
        else:
            print("answerable questions whose first k lines hold the answer, of those whose lines hold it at all:")
            print("| set | answerable | answer in its lines | "
                  + " | ".join(f"{r} {k}" for r in RANKINGS for k in COVERAGE_LINES) + " |")
            print("|---" * (3 + len(RANKINGS) * len(COVERAGE_LINES)) + "|")
            for name, c in covered.items():
                print(f"| {name} | {c['answerable']} | {c['in_lines']} | "
                      + " | ".join(str(c[r][str(k)]) for r in RANKINGS for k in COVERAGE_LINES) + " |")
        return 0
    if args.sweep:
        swept = sweep(features=args.features, cache=args.cache, threads=args.threads, layers=args.sweep)
        if args.json:
            print(json.dumps(swept, indent=2))
        else:
            print(f"tuning offices ({swept['questions']['tuning']} questions), each left out of the fit in turn "
                  "(held-out offices not scored):")
            print("| layer | AUC |\n|---|---|")
            for layer, area in swept["auc_left_out_tuning"].items():
                print(f"| {layer} | {f(area)} |")
        return 0
    try:
        summary = run(features=args.features, out=None if args.no_write else args.out, cache=args.cache,
                      threads=args.threads, layer=args.layer, debian=args.debian_index if args.with_debian else None,
                      against=args.against, penalties=args.l2)
    except ValueError as e:
        parser.error(str(e))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"layer {'last' if args.layer is None else args.layer}; "
              f"tuning offices, each left out of the fit in turn: AUC {f(summary['auc_left_out_tuning'])} "
              f"({summary['questions']['tuning']} questions)")
        print(f"held-out offices: AUC {f(summary['auc_held_out'])} ({summary['questions']['held_out']} questions); "
              + ", ".join(f"{k} {f(v)}" for k, v in summary["held_out_offices"].items()))
        if "debian" in summary:
            print("Debian evaluation, AUC (its tuning splits each left out of the fit, its held-out one never fitted "
                  "on): " + ", ".join(f"{k.removeprefix('debian-')} {f(v)}" for k, v in summary["debian"].items()))
            print("  the same splits, fitted on the tuning offices alone: "
                  + ", ".join(f"{k.removeprefix('debian-')} {f(v)}" for k, v in summary["debian_offices_only"].items()))
        print(f"read at {summary['read']['bound']:g} (answerable under it / unanswerable at it or over), AUC:")
        print("| probe | tuning offices | held-out offices |\n|---|---|---|")
        cell = lambda r: f"{f(r['auc'])} ({r['answerable_under']} / {r['unanswerable_over']})"  # noqa: E731
        print(f"| this fit (a tuning office's questions: fitted without it) | {cell(summary['read']['tuning'])} | "
              f"{cell(summary['read']['held_out'])} |")
        if "against" in summary:
            a = summary["against"]
            print(f"| {a['file']} | {cell(a['tuning'])} | {cell(a['held_out'])} |")
        if "l2" in summary:
            print("tuning offices, each left out, by L2 penalty: "
                  + ", ".join(f"{k} {f(v)}" for k, v in summary["l2"].items()))
        if "written" in summary:
            print(f"probe written to {summary['written']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

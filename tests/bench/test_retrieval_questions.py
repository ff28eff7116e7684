"""The retrieval benchmark's question set (bench/data/retrieval_questions.json) and its hit rule; no network."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import corpus
from bench.quotes import contains_answer, normalise
from bench.retrieval import QUESTIONS_FILE, Gold, first_rank, is_hit, load_questions, metrics, section_matches

DOC = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
QUESTIONS = DOC["questions"]

# Words too common in this corpus to give a section away; everything else in a heading is distinctive.
_GENERIC = frozenset(
    {"the", "and", "for", "with", "from", "into", "using", "setting", "installing", "configuring", "package"}
    | {"packages", "debian", "system", "file", "files", "command", "commands"}
)


def test_question_file_structure():
    assert set(DOC) >= {"corpus", "questions"}
    assert len(QUESTIONS) >= 60
    for q in QUESTIONS:
        assert set(q) == {"id", "question", "answer", "gold", "paraphrased"}, q
        assert isinstance(q["id"], str) and re.fullmatch(r"[a-z0-9][a-z0-9-]*", q["id"]), q["id"]
        assert isinstance(q["question"], str) and len(q["question"].split()) >= 4, q["id"]
        assert isinstance(q["paraphrased"], bool), q["id"]
        answer = q["answer"]
        assert isinstance(answer, list) and answer, f"{q['id']}: no gold answer phrases"
        assert all(isinstance(a, str) and a.strip() == a and a for a in answer), q["id"]
        assert len({normalise(a) for a in answer}) == len(answer), f"{q['id']}: repeated answer phrases"
        gold = q["gold"]
        assert set(gold) == {"file", "page", "section"}, q["id"]
        assert isinstance(gold["file"], str) and gold["file"], q["id"]
        assert gold["page"] is None or (type(gold["page"]) is int and gold["page"] >= 1), q["id"]
        assert gold["section"] is None or (isinstance(gold["section"], str) and gold["section"].strip()), q["id"]
        assert gold["page"] is not None or gold["section"] is not None, f"{q['id']}: gold names no page or section"
    ids = [q["id"] for q in QUESTIONS]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    # The loader does the same, so a question file read by bench.retrieval is this one.
    assert [q.id for q in load_questions()] == ids


def test_corpus_pins_match_bench_corpus():
    assert DOC["corpus"] == [{"package": p.name, "version": p.version} for p in corpus.PACKAGES]


def test_every_gold_file_is_in_the_corpus_manifest():
    missing = [(q["id"], q["gold"]["file"]) for q in QUESTIONS if q["gold"]["file"] not in corpus.MANIFEST]
    assert not missing
    for q in QUESTIONS:
        if q["gold"]["file"].endswith(".pdf"):
            assert q["gold"]["page"] is not None, f"{q['id']}: a PDF gold needs its page"
        else:
            assert q["gold"]["section"] is not None, f"{q['id']}: an HTML gold needs its section"


def test_questions_are_spread_and_a_third_paraphrased():
    assert sum(q["paraphrased"] for q in QUESTIONS) * 3 >= len(QUESTIONS)
    per_file = Counter(q["gold"]["file"] for q in QUESTIONS)
    assert len(per_file) >= 30
    places = Counter((q["gold"]["file"], q["gold"]["page"], q["gold"]["section"]) for q in QUESTIONS)
    assert max(places.values()) == 1, "two questions share one gold place"


PARAPHRASED_IN_SECTIONS = [q for q in QUESTIONS if q["paraphrased"] and q["gold"]["section"]]


@pytest.mark.parametrize("q", PARAPHRASED_IN_SECTIONS, ids=lambda q: q["id"])
def test_paraphrased_questions_avoid_the_heading_words(q):
    leaf = q["gold"]["section"].split(" › ")[-1]
    leaf = re.sub(r"^(Chapter |Appendix )?[0-9A-Z]+(\.[0-9]+)*\.\s+", "", leaf)  # the section number
    heading_words = {w for w in re.findall(r"[a-z0-9]+", leaf.lower()) if len(w) >= 3 and w not in _GENERIC}
    question_words = re.findall(r"[a-z0-9]+", q["question"].lower())
    # Compare 5-letter stems so that "administrator" and "admins" or "encrypted" and "encrypt" count as the same.
    shared = {w for w in heading_words if any(w[:5] == x[:5] for x in question_words if len(x) >= 3)}
    assert not shared, f"paraphrased question repeats heading words {sorted(shared)}"


@pytest.mark.skipif(not corpus.is_unpacked(), reason="corpus not unpacked (python -m bench.corpus fetches it)")
def test_gold_places_exist_in_the_unpacked_corpus():
    problems = place_problems(QUESTIONS)
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(not corpus.is_unpacked(), reason="corpus not unpacked (python -m bench.corpus fetches it)")
def test_gold_answers_occur_in_the_gold_places():
    problems = answer_problems(QUESTIONS)
    assert not problems, "\n".join(problems)


def place_problems(questions: list[dict], root: Path | None = None) -> list[str]:
    """Gold sections and pages that the unpacked corpus does not have (also used for the held-out set)."""
    from rag.loaders import load

    root = root or corpus.corpus_root()
    by_file: dict[str, list] = {}
    for q in questions:
        by_file.setdefault(q["gold"]["file"], []).append(q)
    problems = []
    for rel, in_file in sorted(by_file.items()):
        sections = load(root / rel)
        headings = {s.heading for s in sections if s.heading}
        pages = {s.page for s in sections if s.page is not None}
        for q in in_file:
            gold = q["gold"]
            if gold["section"] is not None and not any(section_matches(h, gold["section"]) for h in headings):
                problems.append(f"{q['id']}: no section {gold['section']!r} in {rel}")
            if gold["page"] is not None and gold["page"] not in pages:
                problems.append(f"{q['id']}: no page {gold['page']} in {rel}")
    return problems


def answer_problems(questions: list[dict], root: Path | None = None) -> list[str]:
    """Answer phrases that are not in their gold place's text as the loaders extract it."""
    from rag.loaders import load

    root = root or corpus.corpus_root()
    loaded: dict[str, list] = {}
    problems = []
    for q in questions:
        gold = q["gold"]
        if gold["file"] not in loaded:
            loaded[gold["file"]] = load(root / gold["file"])
        text = "\n".join(
            s.text
            for s in loaded[gold["file"]]
            if (gold["page"] is None or s.page == gold["page"])
            and (gold["section"] is None or section_matches(s.heading, gold["section"]))
        )
        if not contains_answer(text, q["answer"]):
            problems.append(f"{q['id']}: no answer phrase in the gold place")
        # Every phrase should be checkable against the source, not only the first that matches.
        absent = [a for a in q["answer"] if not contains_answer(text, [a])]
        problems += [f"{q['id']}: {a!r} is not in the gold place" for a in absent]
    return problems


def _hit(source, page=None, heading=None):
    return SimpleNamespace(source=source, page=page, heading=heading)


def test_hit_rule():
    gold = Gold(file="debian-handbook/apt.html", page=None, section="6. APT › 6.1. Syntax")
    root = "/data/bench-corpus/docs/"
    assert is_hit(_hit(root + "debian-handbook/apt.html", heading="6. APT › 6.1. Syntax"), gold)
    assert is_hit(_hit(root + "debian-handbook/apt.html", heading="6. APT › 6.1. Syntax › 6.1.1. Details"), gold)
    assert not is_hit(_hit(root + "debian-handbook/apt.html", heading="6. APT"), gold)  # the parent is not it
    assert not is_hit(_hit(root + "debian-handbook/apt.html", heading="6. APT › 6.1. Syntax2"), gold)
    assert not is_hit(_hit(root + "debian-handbook/sect.apt.html", heading="6. APT › 6.1. Syntax"), gold)
    assert not is_hit(_hit(root + "other/debian-handbook2/apt.html", heading="6. APT › 6.1. Syntax"), gold)
    pdf = Gold(file="maint-guide/maint-guide.en.pdf", page=12, section=None)
    assert is_hit(_hit(root + "maint-guide/maint-guide.en.pdf", page=12), pdf)
    assert not is_hit(_hit(root + "maint-guide/maint-guide.en.pdf", page=13), pdf)
    assert first_rank([_hit("/x/a.pdf", page=1), _hit(root + "maint-guide/maint-guide.en.pdf", page=12)], pdf) == 2
    assert first_rank([], pdf) is None


def test_metrics():
    assert metrics([1, 3, None, 7], 10) == {"hit@1": 0.25, "hit@5": 0.5, "mrr@10": round((1 + 1 / 3 + 1 / 7) / 4, 4)}
    assert metrics([11], 10) == {"hit@1": 0.0, "hit@5": 0.0, "mrr@10": 0.0}


def test_rankings_option_refuses_an_unknown_name_and_the_table_shows_only_those_run(capsys):
    from bench.retrieval import format_table, main

    with pytest.raises(SystemExit) as exc:
        main(["--rankings", "hearth,bogus"])
    assert exc.value.code == 2
    assert "bogus" in capsys.readouterr().err
    block = {"n": 2, "hearth": metrics([1, 2], 10), "lines": metrics([1, 1], 10)}
    summary = {**block, "k": 10, "modes": {"hearth": "hybrid", "lines": "hybrid"},
               "subsets": {"literal": block, "paraphrased": block},
               "corpus": {"packages": [], "documents": 1, "chunks": 3, "failed": 0},
               "seconds": {"ingest": 1.0, "warmup": 0.1, "hearth": 0.04, "lines": 0.5}}
    table = format_table(summary)
    rows = [line.split() for line in table.splitlines() if "hybrid" in line]
    assert [w for r in rows[:2] for w in r if w in ("hearth", "lines")] == ["hearth", "lines"]
    assert rows[1][-4:] == ["1.000", "1.000", "1.000", "250.0"]  # lines: both first, 0.5 s over 2 questions
    assert "ask" not in table and "bm25" not in table
    assert "lines 0.50" in table  # the seconds of the rankings run, and of those only

"""The follow-up and summary benchmark data (bench/data/followups/) checked against its own documents; no model."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench.quotes import contains_answer, normalise

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "followups"
DOCS = DATA / "docs"
CONVERSATIONS = json.loads((DATA / "conversations.json").read_text(encoding="utf-8"))
SUMMARY = json.loads((DATA / "summary.json").read_text(encoding="utf-8"))

KINDS = {"pronoun", "ellipsis", "two_back", "topic_change"}
PRONOUNS = {"it", "its", "they", "their", "them", "that", "this", "he", "she", "his", "her"}
SHEETS = sorted(p.name for p in DOCS.glob("project-*.md"))
# A project is named in a question by the word after "project-" in its sheet's file name ("falcon").
PROJECT_NAMES = {name.removeprefix("project-").removesuffix(".md"): name for name in SHEETS}
_PROJECT_WORD = re.compile(r"\b(" + "|".join(PROJECT_NAMES) + r")\b", re.IGNORECASE)
SETS = ("tuning", "heldout")
ALL = [(set_name, conv) for set_name in SETS for conv in CONVERSATIONS[set_name]]


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _projects_named(question: str) -> list[str]:
    """The sheet files of the projects a question names, in order of mention."""
    return [PROJECT_NAMES[m.lower()] for m in _PROJECT_WORD.findall(question)]


def _sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, body) for each level-two section."""
    parts = re.split(r"^## +(.+?)\s*$", markdown, flags=re.MULTILINE)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts), 2)]


def test_document_set():
    assert len(SHEETS) == 5
    others = sorted(p.name for p in DOCS.glob("*.md") if p.name not in SHEETS)
    assert SUMMARY["source"] in others
    assert len(others) == 3, others  # two documents to switch to, and the handbook
    for name in SHEETS + [n for n in others if n != SUMMARY["source"]]:
        words = len(_text(name).split())
        assert 300 <= words <= 600, (name, words)


def test_project_sheets_share_their_headings_and_name_their_own_project_only():
    headings = {name: [h for h, _ in _sections(_text(name))] for name in SHEETS}
    first = headings[SHEETS[0]]
    assert len(first) >= 6
    assert all(h == first for h in headings.values()), headings
    for name in SHEETS:
        assert set(_projects_named(_text(name))) == {name}, name


def test_conversation_structure():
    assert set(CONVERSATIONS) >= set(SETS)
    ids = [conv["id"] for _, conv in ALL]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for _, conv in ALL:
        assert set(conv) == {"id", "turns", "gold", "kind"}, conv["id"]
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", conv["id"]), conv["id"]
        assert conv["kind"] in KINDS, conv["id"]
        assert 2 <= len(conv["turns"]) <= 3, conv["id"]
        for turn in conv["turns"]:
            assert set(turn) == {"question"}, conv["id"]
            assert isinstance(turn["question"], str) and turn["question"].strip(), conv["id"]
        gold = conv["gold"]
        assert set(gold) == {"source", "answer"}, conv["id"]
        assert (DOCS / gold["source"]).is_file(), (conv["id"], gold["source"])
        answer = gold["answer"]
        assert isinstance(answer, list) and answer, conv["id"]
        assert all(isinstance(a, str) and a and a.strip() == a for a in answer), conv["id"]
        assert len({normalise(a) for a in answer}) == len(answer), f"{conv['id']}: repeated answer phrases"


@pytest.mark.parametrize("set_name", SETS)
def test_each_set_is_large_enough_and_spread(set_name):
    convs = CONVERSATIONS[set_name]
    assert len(convs) >= 12
    kinds = Counter(conv["kind"] for conv in convs)
    assert set(kinds) == KINDS, kinds
    sheets = {conv["gold"]["source"] for conv in convs if conv["kind"] != "topic_change"}
    assert sheets == set(SHEETS), sorted(set(SHEETS) - sheets)
    # A topic change leads somewhere else than the project sheets, at least once per set.
    assert any(c["kind"] == "topic_change" and c["gold"]["source"] not in SHEETS for c in convs)


def test_heldout_last_questions_are_not_tuning_ones():
    last = {normalise(c["turns"][-1]["question"]) for c in CONVERSATIONS["tuning"]}
    firsts = {tuple(normalise(t["question"]) for t in c["turns"]) for c in CONVERSATIONS["tuning"]}
    for conv in CONVERSATIONS["heldout"]:
        assert tuple(normalise(t["question"]) for t in conv["turns"]) not in firsts, conv["id"]
        assert normalise(conv["turns"][-1]["question"]) not in last, conv["id"]


@pytest.mark.parametrize(("set_name", "conv"), ALL, ids=[conv["id"] for _, conv in ALL])
def test_gold_answer_is_in_its_source_only(set_name, conv):
    source, answer = conv["gold"]["source"], conv["gold"]["answer"]
    assert contains_answer(_text(source), answer), f"{conv['id']}: no answer phrase in {source}"
    # Where the gold is a sheet, the other sheets must not carry it (the right sheet is needed); where it is
    # another document, no other document may carry it. Plain substrings: stricter than the whole-word rule.
    others = [n for n in SHEETS if n != source] if source in SHEETS else [
        p.name for p in DOCS.glob("*.md") if p.name != source
    ]
    for name in others:
        text = normalise(_text(name))
        found = [a for a in answer if normalise(a) in text]
        assert not found, f"{conv['id']}: {found} also in {name}"


@pytest.mark.parametrize(("set_name", "conv"), ALL, ids=[conv["id"] for _, conv in ALL])
def test_turns_fit_their_kind(set_name, conv):
    questions = [t["question"] for t in conv["turns"]]
    last, earlier = questions[-1], questions[:-1]
    source, kind = conv["gold"]["source"], conv["kind"]
    named_before = [p for q in earlier for p in _projects_named(q)]
    assert named_before, f"{conv['id']}: no earlier turn names a project"
    if kind == "topic_change":
        if source in SHEETS:
            assert _projects_named(last) == [source], conv["id"]
            assert named_before[-1] != source, f"{conv['id']}: the subject does not change"
        else:
            assert not _projects_named(last), conv["id"]
        return
    # The last turn leans on the conversation: it names no project, and the subject it leans on is the
    # project named last before it.
    assert not _projects_named(last), conv["id"]
    assert source in SHEETS, conv["id"]
    assert named_before[-1] == source, conv["id"]
    words = set(re.findall(r"[a-z]+", last.lower()))
    if kind == "pronoun":
        assert words & PRONOUNS, f"{conv['id']}: no pronoun in {last!r}"
    if kind == "ellipsis":
        assert len(last.split()) <= 7, f"{conv['id']}: {last!r} is not elliptic"
    if kind == "two_back":
        assert len(questions) == 3, conv["id"]
        assert _projects_named(questions[0]) == [source], conv["id"]
        assert not _projects_named(questions[1]), f"{conv['id']}: the middle turn names a project"


HANDBOOK_SECTIONS = _sections(_text(SUMMARY["source"]))


def test_summary_file_matches_the_handbook():
    assert set(SUMMARY) >= {"source", "sections"}
    assert len(HANDBOOK_SECTIONS) == 6
    assert [s["heading"] for s in SUMMARY["sections"]] == [h for h, _ in HANDBOOK_SECTIONS]
    for section in SUMMARY["sections"]:
        assert set(section) == {"heading", "rules"}
        rules = section["rules"]
        assert 2 <= len(rules) <= 4, section["heading"]
        assert all(isinstance(r, str) and r and r.strip() == r for r in rules), section["heading"]


@pytest.mark.parametrize("index", range(6), ids=[s["heading"] for s in SUMMARY["sections"]])
def test_handbook_section_carries_its_rules(index):
    heading, body = HANDBOOK_SECTIONS[index]
    rules = SUMMARY["sections"][index]["rules"]
    assert 150 <= len(body.split()) <= 300, (heading, len(body.split()))
    assert contains_answer(body, rules), f"{heading}: none of {rules} in the section"
    # At least one keyword is this section's own, so that finding it in a summary points at this section.
    elsewhere = " ".join(b for i, (_, b) in enumerate(HANDBOOK_SECTIONS) if i != index)
    own = [r for r in rules if contains_answer(body, [r]) and not contains_answer(elsewhere, [r])]
    assert own, f"{heading}: every keyword of {rules} also occurs in another section"

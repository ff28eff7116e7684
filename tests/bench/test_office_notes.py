"""bench/office_notes.py: its offices are whole and checked against their notes, a bad file or office name is
a clear error, and the table adds the offices up (the run itself uses the real models: see the module)."""

from __future__ import annotations

import io
import json

import pytest

from bench import office_notes, question_probe
from bench.quotes import wilson


def test_every_office_has_ten_questions_of_each_kind_and_its_answers_are_in_its_notes():
    offices = office_notes.load()
    assert [o.name for o in offices] == ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                                        "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth",
                                        "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
                                        "twentieth", "twenty-first", "twenty-second", "twenty-third",
                                        "twenty-fourth", "twenty-fifth", "twenty-sixth", "twenty-seventh",
                                        "twenty-eighth", "twenty-ninth", "thirtieth", "thirty-first",
                                        "thirty-second", "thirty-third", "thirty-fourth", "thirty-fifth",
                                        "thirty-sixth", "thirty-seventh", "thirty-eighth", "thirty-ninth",
                                        "fortieth", "forty-first", "forty-second", "forty-third", "forty-fourth",
                                        "forty-fifth", "forty-sixth", "forty-seventh", "forty-eighth",
                                        "forty-ninth", "fiftieth", "fifty-first", "fifty-second", "fifty-third",
                                        "fifty-fourth", "fifty-fifth", "fifty-sixth", "fifty-seventh",
                                        "fifty-eighth", "fifty-ninth", "sixtieth", "sixty-first", "sixty-second",
                                        "sixty-third"]
    for o in offices:
        assert len(o.notes) == 5 and len(o.answerable) == 10 and len(o.unanswerable) == 10, o.name
        texts = " ".join(o.notes.values()).casefold()
        assert all(phrase.casefold() in texts for _, phrase in o.answerable), o.name
        assert len({q for q, _ in o.answerable} | set(o.unanswerable)) == 20, o.name  # no question twice
        assert all(name.endswith(".md") and text.startswith("# ") for name, text in o.notes.items()), o.name


def test_an_answer_no_note_holds_is_an_error(tmp_path):
    data = json.loads(office_notes.DATA.read_text(encoding="utf-8"))
    data["offices"][0]["answerable"][0][1] = "Zebulon Quark"
    path = tmp_path / "offices.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="Zebulon Quark|no note holds"):
        office_notes.load(path)


def test_an_unknown_office_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        office_notes.main(["--offices", "first,hundredth"])
    assert exc.value.code == 2 and "no office named hundredth" in capsys.readouterr().err


def test_held_out_names_the_offices_never_fitted_on(capsys):
    # It expands to the held-out offices, which exist: only the unknown name is refused (and nothing is run).
    with pytest.raises(SystemExit) as exc:
        office_notes.main(["--offices", "held-out,hundredth"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "no office named hundredth (" in err and "held-out" not in err.split("(have")[0]
    names = {o.name for o in office_notes.load()}
    assert set(question_probe.HELD_OUT) <= names


def test_the_table_adds_the_offices_up():
    checked = {"checked_out_answerable": 1, "checked_out_right": 0, "checked_out_unanswerable": 2}
    offices = {"a": {"answerable": 10, "withheld": 2, "right": 6, "right_shown": 7, "unanswerable": 10,
                     "answered": 2, "seconds_per_question": 9.5, **checked},
               "b": {"answerable": 10, "withheld": 0, "right": 9, "right_shown": 9, "unanswerable": 10,
                     "answered": 3, "seconds_per_question": 8.0, **checked, "checked_out_right": 1,
                     "question_withheld_unanswerable": 2, "question_lines_answerable": 1}}
    summary = {"machine": {"cpus": 2, "load_average": 0.5, "load_after": 0.7}, "offices": offices,
               "total": office_notes.total(offices)}
    rows = office_notes.format_table(summary).splitlines()
    assert rows[0].split() == ["office", "answerable", "withheld", "right", "shown", "unanswerable", "answered",
                               "checked", "out", "question", "bars", "s/question"]
    # "question": what the verdict on the question's lines changed, withheld A/U and lines shown A/U
    assert rows[1].split() == ["a", "10", "2", "6", "7", "10", "2", "1", "(0", "right)", "/", "2", "0/0", "0/0",
                               "yes", "9.5"]
    assert rows[2].split()[-2] == "no" and rows[2].split()[-4:-2] == ["0/2", "1/0"]  # three answered of ten
    assert rows[3].split() == ["total", "20", "2", "15", "16", "20", "5", "2", "(1", "right)", "/", "4", "0/2",
                               "1/0", "1/2"]
    assert "load average 0.5 before, 0.7 after" in rows[-1]
    # The shares the bars are on, with their 95 % intervals (2 of 20 withheld, 5 of 20 answered).
    low, high = wilson(5, 20)
    assert ("in all: withheld 2 of 20 (0.100; 95 %: 0.028–0.301), "
            f"answered 5 of 20 (0.250; 95 %: {low:.3f}–{high:.3f})") in rows
    assert office_notes.intervals(summary["total"]) == {"withheld": wilson(2, 20), "answered": (low, high)}
    assert not any("fitted without" in row for row in rows)
    left_out = office_notes.format_table({**summary, "probe_left_out": ["a", "b"]}).splitlines()
    assert "question's lines read by a probe fitted without the office: a, b" in left_out


def test_an_unknown_probe_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        office_notes.main(["--offices", "first", "--probe", "mine"])
    assert exc.value.code == 2 and "invalid choice: 'mine'" in capsys.readouterr().err
    # The chat model checking reads no probe: a probe fitted without the office would change nothing.
    with pytest.raises(SystemExit) as exc:
        office_notes.main(["--offices", "first", "--probe", "left-out", "--check-model", "chat"])
    assert exc.value.code == 2 and "read only by the larger built-in checker" in capsys.readouterr().err


@pytest.mark.parametrize(("withheld", "right", "answered", "meets"), [
    (2, 6, 2, True), (3, 6, 0, False), (0, 5, 0, False), (0, 10, 3, False), (0, 10, 0, True)])
def test_the_hidden_checks_bars_scale_from_five_questions_to_ten(withheld, right, answered, meets):
    counts = {"answerable": 10, "withheld": withheld, "right": right, "unanswerable": 10, "answered": answered}
    assert office_notes.meets_bars(counts) is meets


def test_every_right_yes_or_no_is_of_an_answerable_yes_no_question_and_its_line_is_in_the_notes():
    from bench.office_notes import asks_yes_no

    offices = {o.name: o for o in office_notes.load()}
    data = json.loads(office_notes.YES_NO.read_text(encoding="utf-8"))["answers"]
    seen = set()
    for d in data:
        office = offices[d["office"]]
        assert d["question"] in dict(office.answerable) and asks_yes_no(d["question"]), d
        assert d["answer"] in ("yes", "no", "depends")
        assert any(d["line"] in note for note in office.notes.values()), d
        seen.add((d["office"], d["question"]))
    # Every answerable yes-or-no question has its entry, and each only one.
    assert len(seen) == len(data) == sum(asks_yes_no(q) for o in offices.values() for q, _ in o.answerable)
    gold = office_notes.load_yes_no()
    assert len(gold) == sum(d["answer"] != "depends" for d in data) and set(gold.values()) == {"yes", "no"}


def test_the_table_counts_yes_or_no_replies_and_a_subset_reads_no_bars():
    yes_no = {"yes_no": 5, "yes_no_reply_wrong": 2, "yes_no_shown_wrong": 1, "yes_no_shown_right": 3}
    o = {"answerable": 5, "withheld": 0, "right": 4, "right_shown": 5, "unanswerable": 0, "answered": 0,
         "checked_out_answerable": 0, "checked_out_right": 0, "checked_out_unanswerable": 0, **yes_no}
    summary = {"machine": {"cpus": 2, "load_average": 0.5}, "offices": {"a": o},
               "total": office_notes.total({"a": o}), "subset": True}
    text = office_notes.format_table(summary)
    assert "yes-or-no answerable questions: 5; the reply opens with the wrong word 2, as shown 1 (the right one 3)" in text
    assert text.splitlines()[1].split()[-1] == "-" and "the bars are not read" in text  # no s/question kept


def test_under_the_floor_asks_only_the_questions_no_passage_clears_the_search_s_floor_for(tmp_path):
    from rag.service import Hearth, HearthConfig
    from tests.fakes import ScriptedModel
    from tests.notes import write_notes

    office = next(o for o in office_notes.load() if o.name == "forty-fifth")
    # The questions under the floor, searched here as run_office searches them.
    h = Hearth(HearthConfig(data_dir=tmp_path / "own" / "data", embed_threads=2))
    h.ingest([write_notes(tmp_path / "own" / "notes", office.notes)])
    under = [q for q in [q for q, _ in office.answerable] + office.unanswerable
             if all(hit.score < h.config.min_score for hit in h.search(q))]
    assert 0 < len(under) < 20
    details = io.StringIO()
    counts = office_notes.run_office(office, ScriptedModel("The documents do not say."), tmp_path / "run", threads=2,
                                     details=details, log=lambda _: None, under_floor=True)
    rows = [json.loads(line) for line in details.getvalue().splitlines()]
    assert [r["question"] for r in rows] == under
    assert counts["answerable"] + counts["unanswerable"] == len(under)


@pytest.mark.parametrize(("question", "reply", "says"), [
    ("Can I take the van home?", "Yes, you may.", "yes"),
    ("I'm 23 and passed my test five years ago. Can I take one of the vans out?", "No, drivers must be over 25.",
     "no"),
    ("A client sent me wine. May I keep it?", "Unfortunately, no. Gifts go to the office.", "no"),
    ("Is there parking?", "**Yes** - bays V1 to V3.", "yes"),
    # Neither: a reply that opens otherwise, "No one …", a question not answered by yes or no.
    ("Can I take the van home?", "The vans stay in the yard.", None),
    ("Is anyone on call tonight?", "No one is on call.", None),
    ("Who approves trips? Is it Ana?", "Yes, Ana.", "yes"),
    ("Is it Ana? Who approves trips?", "Yes, Ana.", None),
    ("If I lose a radio, will it come out of my salary?", "No.", None),
])
def test_what_a_reply_to_a_yes_no_question_opens_with(question, reply, says):
    assert office_notes.reply_says(question, reply) == says

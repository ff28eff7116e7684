"""The quote benchmark's answer rule, its shares, and one question measured on a small real workspace."""

from __future__ import annotations

import json

import pytest

from bench.quotes import DocumentTexts, contains_answer, format_table, load_answers, main, measure, summarise, wilson
from bench.retrieval import QUESTIONS_FILE, WORKSPACE, Gold, Question
from rag.quotes import align
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder, ScriptedModel


def test_answer_containment_rule():
    assert contains_answer("Use  the\nInRelease file [1].", ["inrelease"])
    assert contains_answer("It’s “Read the Fine Manual”.", ["it's \"read the fine manual\""])
    assert contains_answer("at least 5 days", ["five days", "5 days"])
    assert not contains_answer("at least 15 days", ["5 days"])  # not inside a longer number
    assert not contains_answer("Debian packages", ["debi"])  # nor inside a longer word
    assert contains_answer("run debi.", ["debi"]) and contains_answer("(debi)", ["debi"])
    assert contains_answer("dpkg --add-architecture armhf", ["--add-architecture"])
    assert contains_answer("Closes: #654321", ["Closes: #"])
    assert not contains_answer("anything", [])


def test_every_question_has_its_answers_loaded():
    doc = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
    assert load_answers() == {q["id"]: tuple(q["answer"]) for q in doc["questions"]}


def _row(passages, reply, quote, fallback=False, chars=100, *, abstained=False, answerable=True):
    return {
        "answerable": answerable,
        "answer_in_retrieved": passages,
        "answer_in_passages": passages,
        "reply_contains": reply,
        "quote_contains": quote,
        "fallback": fallback,
        "abstained": abstained,
        "quote_chars": chars,
    }


def test_not_found_shares_are_of_their_own_questions():
    rows = [_row(True, True, True, abstained=True), _row(True, False, True), _row(False, False, False, abstained=True),
            _row(False, False, False, answerable=False, abstained=True),
            _row(False, False, True, answerable=False)]
    s = summarise(rows)
    assert s["n"] == 3 and s["n_unanswerable"] == 2  # the answerable shares leave the unanswerable out
    assert s["abstained_when_answerable"] == round(2 / 3, 4) and s["correct_reply_withheld"] == round(1 / 3, 4)
    assert s["confident_when_unanswerable"] == 0.5 and s["quote_contains"] == round(2 / 3, 4)
    assert "answered, unanswerable questions" in format_table(dict(s, k=5, interrupted=False, quote_offsets_exact=1.0,
                                                                   seconds=dict.fromkeys(
        ("ingest", "warmup", "search", "ask", "align", "per_question"), 0.0)))


def test_the_shares_come_with_their_95_percent_intervals():
    # Wilson intervals as tabulated (e.g. 0 of 10: 0 to 0.278; 6 of 40: 0.071 to 0.291).
    assert wilson(0, 10) == (0.0, 0.2775) and wilson(10, 10) == (0.7225, 1.0)
    assert wilson(6, 40) == (0.0706, 0.2907) and wilson(0, 0) is None
    rows = [_row(True, True, True, abstained=True), _row(True, False, True), _row(False, False, False),
            _row(False, False, False, answerable=False, abstained=True), _row(False, False, True, answerable=False)]
    s = summarise(rows)
    assert s["intervals"] == {"abstained_when_answerable": wilson(1, 3), "confident_when_unanswerable": wilson(1, 2),
                              "quote_contains_when_in_passages": wilson(2, 2)}
    seconds = dict.fromkeys(("ingest", "warmup", "search", "ask", "align", "per_question"), 0.0)
    table = format_table(dict(s, k=5, interrupted=False, quote_offsets_exact=1.0, seconds=seconds))
    low, high = wilson(1, 2)
    assert f"(95 %: {low * 100:.1f}–{high * 100:.1f}%)" in next(
        line for line in table.splitlines() if line.startswith("answered, unanswerable questions"))


def test_the_probe_s_readings_alone_give_its_area_its_counts_at_each_bound_and_its_best_bound():
    def read(value, answerable):
        return dict(_row(True, True, True, answerable=answerable), signals={"question_verdict": value})

    yes = [read(v, True) for v in (-1.0, 0.3, 1.2, 2.0)]
    no = [read(v, False) for v in (-2.0, -0.6, 0.25, 1.5)] + [read(None, False)]
    probe = summarise(yes + no)["probe"]
    # Pairs ranked the right way: -1.0 beats 1 of 4; 0.3 and 1.2 beat 3; 2.0 beats all 4: 11 of 16.
    assert probe["area"] == 0.6875 and probe["n"] == [4, 4]
    # At 0.25 (read as `ask` reads answered_from: under it not answering) one answerable question is under and
    # two unanswerable ones are at it or over; at 0 the same one under and the same two over.
    assert probe["at"]["0.25"] == [1, 2] and probe["at"]["0"] == [1, 2] and probe["at"]["-1"] == [0, 3]
    assert probe["at"]["3"] == [4, 0]
    # The worse of the two shares at each reading: 0.25 gives 1/4 and 2/4, 1.2 gives 2/4 and 1/4, 0.3 gives 1/4
    # and 1/4, the least.
    assert probe["best"] == {"bound": 0.3, "answerable_under": 1, "unanswerable_over": 1}
    # Without readings (runs before the probe), no "probe" at all.
    assert "probe" not in summarise([_row(True, True, True), _row(False, False, False, answerable=False)])


def test_summarise_joins_earlier_runs_details_without_a_model(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(_row(True, True, True)) + "\n" + json.dumps(_row(True, False, False, abstained=True))
                     + "\n")
    second.write_text(json.dumps(_row(False, False, True, answerable=False)) + "\n")
    assert main(["--summarise", str(first), str(second), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["n"] == 2 and s["n_unanswerable"] == 1 and s["abstained_when_answerable"] == 0.5
    assert s["confident_when_unanswerable"] == 1.0 and s["intervals"]["confident_when_unanswerable"] == [0.2065, 1.0]
    # Not a details file, or none at all: an error naming the option, nothing else.
    (tmp_path / "notes.txt").write_text("not json\n")
    for bad in (tmp_path / "notes.txt", tmp_path / "missing.jsonl"):
        assert main(["--summarise", str(bad)]) == 1
        out = capsys.readouterr()
        assert out.out == "" and "--summarise takes --details files" in out.err


def test_the_evaluation_halves_hold_both_kinds():
    from bench.quotes import eval_questions

    questions, answers = eval_questions("heldout")
    assert len(questions) == 50 and sum(1 for q in questions if not answers.get(q.id)) == 20
    questions, answers = eval_questions("tune2")
    assert len(questions) == 40 and sum(1 for q in questions if not answers.get(q.id)) == 20
    questions, answers = eval_questions("heldout2")
    assert len(questions) == 39 and sum(1 for q in questions if not answers.get(q.id)) == 20
    questions, answers = eval_questions("heldout3")
    assert len(questions) == 60 and sum(1 for q in questions if not answers.get(q.id)) == 40
    assert len(eval_questions("all")[0]) == 239


def test_shares_count_quotes_among_questions_whose_answer_was_given():
    rows = [_row(True, True, True), _row(True, False, True, True), _row(True, True, False),
            _row(False, False, False, chars=0)]
    s = summarise(rows)
    assert s["quote_chars_mean"] == 75.0
    assert s["n"] == 4 and s["n_in_passages"] == 3
    assert s["answer_in_passages"] == 0.75 and s["reply_contains"] == 0.5 and s["quote_contains"] == 0.5
    assert s["quote_contains_when_in_passages"] == round(2 / 3, 4)
    assert s["fallback_rate"] == 0.25
    assert summarise([])["quote_contains_when_in_passages"] is None


def test_table_shows_every_share():
    summary = summarise([_row(True, True, True)])
    summary.update(
        k=5, interrupted=True, quote_offsets_exact=None,
        seconds={"ingest": 1, "warmup": 2, "search": 0.1, "ask": 3, "align": 0.2, "per_question": 3.3},
    )
    table = format_table(summary)
    assert "interrupted" in table and "target 90%" in table and "100.0%" in table and "n/a" in table
    assert "characters quoted per answer (mean)" in table and "100.0\n" in table


def test_one_question_is_searched_asked_and_aligned(tmp_path):
    doc = tmp_path / "docs" / "office.md"
    doc.parent.mkdir()
    doc.write_text(
        "# Office\n\nThe office opens at 08:00 and closes at 18:00 on working days.\n\n"
        "## Parking\n\nParking in the garage costs EUR 5 per day. Bicycles are parked free of charge.\n",
        encoding="utf-8",
    )
    model = ScriptedModel("Parking in the garage costs EUR 5 per day [1].")
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=HashEmbedder(), chat_model=model)
    assert hearth.ingest([doc], workspace=WORKSPACE).added == 1
    q = Question("parking", "How much does parking in the garage cost?", Gold("office.md", None, "Parking"), False)
    row, detail = measure(hearth, q, ["EUR 5"], k=3, texts=DocumentTexts(), align=align)
    assert row == _row(True, True, True, chars=sum(len(quote["text"]) for quote in detail["quotes"]))
    assert any("EUR 5 per day" in quote["text"] for quote in detail["quotes"])
    assert detail["gold_passages"] and detail["passages"][0]["text"]
    assert len(model.prompts) == 1
    json.dumps(detail)  # a details line is plain JSON


def test_replay_realigns_a_details_file(tmp_path, capsys):
    from bench.quotes import main

    doc = tmp_path / "docs" / "office.md"
    doc.parent.mkdir()
    doc.write_text("# Parking\n\nParking in the garage costs EUR 5 per day. Bicycles are parked free.\n", encoding="utf-8")
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=HashEmbedder(),
                    chat_model=ScriptedModel("I don't know."))
    hearth.ingest([doc], workspace=WORKSPACE)
    q = Question("parking", "How much does parking in the garage cost?", Gold("office.md", None, "Parking"), False)
    row, detail = measure(hearth, q, ["EUR 5"], k=3, texts=DocumentTexts(), align=align)
    details = tmp_path / "details.jsonl"
    details.write_text(json.dumps(detail) + "\n", encoding="utf-8")
    assert main(["--replay", str(details), "--json", "--reuse", str(tmp_path / "replay")]) == 0
    summary = json.loads(capsys.readouterr().out)
    # The reply ("I don't know.") is replaced by the quotes, and the quote holds the answer.
    assert summary["n"] == 1 and summary["reply_contains"] == 0.0 and summary["quote_contains"] == 1.0
    assert summary["fallback_rate"] == 1.0 and summary["replayed"] == str(details)
    assert summary["quote_chars_mean"] >= len("Parking in the garage costs EUR 5 per day.")
    # Other aligner settings on the same replies: one quote, without its context, is shorter.
    assert main(["--replay", str(details), "--json", "--reuse", str(tmp_path / "replay"),
                 "--quotes", "1", "--in-context", "0"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["quote_contains"] == 1.0 and one["quote_chars_mean"] <= summary["quote_chars_mean"]
    with pytest.raises(SystemExit):  # a missing file is a usage error
        main(["--replay", str(tmp_path / "missing.jsonl")])
    with pytest.raises(SystemExit):
        main(["--replay", str(details), "--quotes", "0"])

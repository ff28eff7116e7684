"""bench.replay_ideas: how stored outcomes are read and counted, the sweep, and a file it cannot read (no model)."""

from __future__ import annotations

import json

from bench.replay_ideas import asks_yes_no, counts, main, phrases, realigned, stored, sweep


def test_both_benchmarks_details_are_read_alike():
    office = {"answerable": True, "phrase": "EUR 38", "withheld": False, "right": True}
    evaluation = {"answerable": True, "gold": ["GNOME", "gnome-desktop"], "abstained": True, "reply_contains": True}
    assert phrases(office) == ["EUR 38"] and phrases(evaluation) == ["GNOME", "gnome-desktop"]
    assert phrases({"phrase": None}) == []
    assert stored(office) == (False, True)
    assert stored(evaluation) == (True, False)  # a right reply withheld is not right as shown
    # As shown (`realign`): the office benchmark's own "right as shown"; for the evaluation, the shown text.
    lines = {**office, "right": False, "right_shown": True}
    assert stored(lines) == (False, False) and stored(lines, as_shown=True) == (False, True)
    shown = {**evaluation, "abstained": False, "reply_contains": False, "shown": "The documents say: GNOME [1]."}
    assert stored(shown) == (False, False) and stored(shown, as_shown=True) == (False, True)


def test_counts_and_the_sweep_release_withheld_replies_above_the_bound():
    rows = [
        {"answerable": True, "before": (True, False), "evidence": 0.50, "right_shown": False, "lines_hold": True},
        {"answerable": True, "before": (False, True), "evidence": 0.70, "right_shown": True, "lines_hold": True},
        {"answerable": False, "before": (True, False), "evidence": 0.40, "right_shown": False, "lines_hold": False},
        {"answerable": False, "before": (False, False), "evidence": 0.80, "right_shown": False, "lines_hold": False},
    ]
    assert counts(rows, "before") == {"answerable": 2, "withheld": 1, "right": 1, "unanswerable": 2, "answered": 1}
    by_bound = {s["bound"]: s for s in sweep(rows, (0.3, 0.45, 0.6))}
    assert by_bound[0.3] == {"bound": 0.3, "withheld": 0, "right_shown": 2, "answered": 2}
    assert by_bound[0.45] == {"bound": 0.45, "withheld": 0, "right_shown": 2, "answered": 1}
    assert by_bound[0.6] == {"bound": 0.6, "withheld": 1, "right_shown": 1, "answered": 1}


def test_a_yes_or_no_question_is_told_by_its_last_sentence():
    assert asks_yes_no("Can I get into the equipment store on a Saturday?")
    assert asks_yes_no("A client sent me wine worth about £30. May I keep it?")
    assert asks_yes_no("Is there staff parking at the warehouse")
    assert not asks_yes_no("Is it Monday? Who approves it?")
    assert not asks_yes_no("If I lose a radio, will it come out of my salary?")


def test_a_file_that_is_not_a_details_file_is_an_error(tmp_path, capsys):
    bad = tmp_path / "summary.json"
    bad.write_text(json.dumps({"question": "Who?", "reply": "Ines."}) + "\n", encoding="utf-8")
    assert main(["lines", str(bad)]) == 2
    assert "is not a --details file" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert main(["open", str(empty)]) == 2
    assert "holds no questions" in capsys.readouterr().err


def test_realigning_shows_a_reply_as_ask_would_and_nothing_retrieved_is_not_found(tmp_path):
    from rag.quotes import align
    from rag.service import Hearth, HearthConfig
    from tests.fakes import HashEmbedder, ScriptedModel

    doc = tmp_path / "office.md"
    doc.write_text("# Parking\n\nParking in the garage costs EUR 5 per day. Bicycles are parked free.\n", "utf-8")
    embedder = HashEmbedder()
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), embedder=embedder,
                    chat_model=ScriptedModel("unused"))
    hearth.ingest([doc])
    question = "How much does parking in the garage cost?"
    hits = hearth.search(question, k=3)
    row = {"answerable": True, "phrase": "EUR 5", "withheld": False, "right": True,
           "reply": "Parking in the garage costs EUR 5 per day [1]."}
    now = realigned(row, hits, lambda: align(row["reply"], question, hits, embedder=embedder))
    assert now["after"] == (False, True) and "EUR 5" in now["shown"]
    # The run found no passage, so `ask` said not found whatever the reply; the replay does not weigh it.
    called = []
    assert realigned(row, [], lambda: called.append(1)) == {"after": (True, False), "shown": "",
                                                           "question_verdict": None}
    assert called == []


def test_the_probe_s_bounds_are_replayed_on_stored_outcomes(tmp_path, capsys):
    from bench.replay_ideas import bounds_sweep, probe_outcome

    base = {"office": "first", "passages": [], "reply": "", "quotes": [], "shown": ""}
    rows = [
        # The rule let a right reply stand and the probe, at 0.4, left it.
        {**base, "question": "a", "answerable": True, "phrase": "EUR 38", "withheld": False, "right": True,
         "right_shown": True, "question_verdict": 0.4, "question_changed": None, "reply": "It is EUR 38."},
        # The rule withheld it; the probe at -0.1 did not let the lines stand, which hold the answer.
        {**base, "question": "b", "answerable": True, "phrase": "room 4", "withheld": True, "right": False,
         "right_shown": False, "question_verdict": -0.1, "question_changed": None, "quotes": ["Go to room 4."]},
        # The rule let an unanswerable question's reply stand; the probe at -0.6 withheld it.
        {**base, "question": "c", "answerable": False, "phrase": None, "withheld": True, "right": False,
         "right_shown": False, "question_verdict": -0.6, "question_changed": "withheld", "reply": "Yes."},
        # The rule withheld an unanswerable one and the probe at 0.3 let the lines stand.
        {**base, "question": "d", "answerable": False, "phrase": None, "withheld": False, "right": False,
         "right_shown": False, "question_verdict": 0.3, "question_changed": "lines", "shown": "The documents say"},
        # Nothing found: no score, its outcome stays.
        {**base, "question": "e", "answerable": False, "phrase": None, "withheld": True, "right": False,
         "right_shown": False, "question_verdict": None, "question_changed": None},
    ]
    shipped = [probe_outcome(r, -0.25, 0.25) for r in rows]
    assert [s[:2] for s in shipped] == [stored(r, as_shown=True) for r in rows]
    assert probe_outcome(rows[1], -0.25, -0.2)[:2] == (False, True)  # the lines stand, and they hold it
    assert probe_outcome(rows[0], 0.5, 0.5)[:2] == (True, False)
    assert probe_outcome(rows[2], -1.0, 0.25) == (False, False, True)  # shown again
    # An answerable reply the probe withheld, shown again: read off the reply itself, which `align` might have
    # replaced by the lines (inexact); a refusal is replaced by them, the quotes kept (exact).
    again = {**rows[2], "answerable": True, "phrase": "Hall B", "reply": "It is in Hall B.", "quotes": ["Hall C."]}
    assert probe_outcome(again, -1.0, 0.25) == (False, True, False)
    refused = {**again, "reply": "I don't know.", "quotes": ["Meetings are in Hall B."]}
    assert probe_outcome(refused, -1.0, 0.25) == (False, True, True)
    # Lines that would stand in where a details file kept no quotes are not known.
    assert probe_outcome({k: v for k, v in rows[1].items() if k != "quotes"}, -0.25, -0.2) == (False, False, False)
    assert probe_outcome(rows[3], -0.25, 0.5)[:2] == (True, False)
    by = {(s["low"], s["high"]): s for s in bounds_sweep(rows, (-1.0, -0.25), (-0.2, 0.25, 0.5))}
    assert by[(-0.25, 0.25)] == {"low": -0.25, "high": 0.25, "withheld": 1, "right_shown": 1, "answered": 1,
                                 "inexact": 0, "offices_within": 0}
    assert by[(-1.0, -0.2)]["withheld"] == 0 and by[(-1.0, -0.2)]["answered"] == 2
    assert by[(-0.25, 0.5)]["answered"] == 0
    details = tmp_path / "details.jsonl"
    details.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["bounds", str(details), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["before"] == summary["after"] and summary["scored"] == 4 and summary["shipped"] == [-0.25, 0.25]
    assert main(["bounds", str(details)]) == 0
    assert "| -0.25 | 0 / 2 / 1 / 0 | 1 / 1 / 1 / 0 | 1 / 1 / 1 / 0* |" in (
        capsys.readouterr().out)


def test_the_bounds_on_the_larger_model_s_yes_or_no_are_replayed_on_stored_verdicts(tmp_path, capsys):
    from bench.replay_ideas import yes_no_outcome, yes_no_sweep

    q = "Can I take the van home?"
    base = {"office": "first", "question": q, "passages": [{"text": "Vans stay in the yard overnight."}],
            "quotes": [], "answerable": True, "phrase": "yard", "withheld": False, "right": True, "right_shown": True,
            "yes_no": "no", "question_changed": None, "agreed": False}
    lines = "The documents say: Vans stay in the yard overnight [1]."
    rows = [
        # "Yes" where the notes say no; the larger model said No (-2.2), so the lines stood in (a run at bound 0).
        {**base, "reply": "Yes, you can take it home from the yard.", "yes_no_verdict": -2.2, "contradicted": True,
         "shown": lines},
        # A right "No" the model agreed with: it stands whatever the bound.
        {**base, "reply": "No, vans stay in the yard.", "yes_no_verdict": -0.4, "contradicted": False,
         "shown": "No, vans stay in the yard."},
        # A right "No" the model answered the other way, faintly (0.7): the lines stood in at bound 0.
        {**base, "reply": "No, it stays in the yard.", "yes_no_verdict": 0.7, "contradicted": True, "shown": lines},
        # The rule withheld a right "No" and the lines stood in (the probe); the model says No (-1.5).
        {**base, "reply": "No, vans stay in the yard.", "yes_no_verdict": -1.5, "contradicted": False,
         "question_changed": "lines", "shown": lines},
        # ...and a "No" with a made-up figure: never shown instead of the lines.
        {**base, "reply": "No, vans stay in bay 12 of the yard.", "yes_no_verdict": -3.0, "contradicted": False,
         "question_changed": "lines", "shown": lines},
        # An unanswerable question's "Yes" the model answered No: the lines stood in, still an answer.
        {**base, "answerable": False, "phrase": None, "yes_no": None, "right": False, "right_shown": False,
         "reply": "Yes.", "yes_no_verdict": -1.0, "contradicted": True, "shown": lines},
        # Withheld: nothing to read.
        {**base, "withheld": True, "right": False, "right_shown": False, "reply": "Yes.", "yes_no_verdict": None,
         "contradicted": False, "shown": "The documents do not seem to answer this question."},
    ]
    assert yes_no_outcome(rows[0], 0.0, None) == (True, False, lines)
    assert yes_no_outcome(rows[0], 3.0, None) == (False, False, rows[0]["reply"])
    assert yes_no_outcome(rows[2], 1.0, None) == (False, False, rows[2]["reply"])
    assert yes_no_outcome(rows[1], 0.0, 0.0)[:2] == (False, False)
    assert yes_no_outcome(rows[3], None, 1.0) == (False, True, "No. " + lines)
    assert yes_no_outcome({**rows[3], "agreed": True, "shown": "No. " + lines}, None, None) == (False, False, lines)
    assert yes_no_outcome(rows[3], None, 2.0) == (False, False, lines)
    assert yes_no_outcome(rows[4], None, 0.0) == (False, False, lines)  # 12 is in no passage
    # A run at a higher bound did not keep the lines a lower one would show.
    assert yes_no_outcome({**rows[0], "contradicted": False, "shown": rows[0]["reply"]}, 2.0, None) == (
        True, False, None)
    by = {(s["contradicted_from"], s["agreed_from"]): s for s in yes_no_sweep(rows, (0.0, 1.0, 3.0, None),
                                                                              (1.0, None))}
    assert by[(0.0, None)] == {"contradicted_from": 0.0, "agreed_from": None, "wrong": 0, "right_word": 1,
                               "right_shown": 5, "contradicted": [2, 1], "agreed": [0, 0], "unknown": 0}
    assert by[(0.0, 1.0)]["right_word"] == 2 and by[(0.0, 1.0)]["agreed"] == [1, 0]
    assert by[(0.0, 1.0)]["right_shown"] == 5  # the lines, opened by the word, still hold the phrase
    assert by[(1.0, None)]["wrong"] == 0 and by[(1.0, None)]["right_word"] == 2
    assert by[(1.0, None)]["contradicted"] == [1, 1]
    assert by[(3.0, None)]["wrong"] == 1 and by[(3.0, None)]["right_word"] == 2
    assert by[(None, None)] == {**by[(3.0, None)], "contradicted_from": None, "contradicted": [0, 0]}
    details = tmp_path / "details.jsonl"
    details.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["yes-no", str(details), "--json"]) == 0  # every verdict stored: no model is loaded
    summary = json.loads(capsys.readouterr().out)
    assert summary["yes_no"] == 5 and summary["verdicts"] == 6 and summary["before"] == summary["after"]
    assert main(["yes-no", str(details)]) == 0
    out = capsys.readouterr().out
    # Contradicted from 1.0: the reply for the lines where the model agrees from 0 to 1.5 (it said -1.5), not from 2.
    assert "| 1.0 | " + " | ".join(["0 / 3 / 5 (1 / 1)"] * 4 + ["0 / 2 / 5 (1 / 0)"] * 6) + " |" in out.splitlines()
    assert out.splitlines()[-1].startswith("| never | 1 / 3 / 5 (0 / 1) |")

"""bench/question_probe.py: which offices it fits on and holds out, and that it fits on the tuning offices'
states only and reports the held-out ones (the states here are made up, so no model is loaded; the real
states are read by `python -m bench.question_probe`, about 2 s a question)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from bench import question_probe
from rag.probe import Probe


def _record(item, layer, state):
    """One line of a features file, as bench.question_probe writes it."""
    return json.dumps({"office": item["office"], "question": item["question"], "answerable": item["answerable"],
                       "layer": layer, "state": state.tolist()}) + "\n"


def _write_features(path, items, states):
    """A features file of made-up states: `states(item)` gives each question's (layer, state) pairs, in order."""
    with path.open("w", encoding="utf-8") as out:
        for it in items:
            out.writelines(_record(it, layer, state) for layer, state in states(it))
    return path


def test_the_twenty_sixth_to_twenty_ninth_and_the_last_twelve_offices_are_held_out_and_the_rest_fitted_on():
    items = question_probe.questions()
    offices = list(dict.fromkeys(it["office"] for it in items))
    tuning = list(dict.fromkeys(it["office"] for it in items if it["tuning"]))
    assert tuning == offices[:25] + offices[29:51] and tuning[24] == "twenty-fifth" and tuning[-1] == "fifty-first"
    assert [o for o in offices if o not in tuning] == list(question_probe.HELD_OUT) == offices[25:29] + offices[51:]
    assert offices[-1] == "sixty-third" and len(offices) == 63
    assert all(len(it["lines"]) >= 10 and not any(line.startswith("#") for line in it["lines"]) for it in items)


def test_it_fits_on_the_tuning_states_and_reports_the_held_out_ones(tmp_path, capsys):
    items = question_probe.questions()
    rng = np.random.default_rng(7)

    def states(it):
        # Answerable questions' states lean one way on the first value; one held-out office's lean the
        # other way, which the tuning offices' fit then scores backwards.
        lean = 1.0 if it["answerable"] else -1.0
        if it["office"] == "twenty-ninth":
            lean = -lean
        state = rng.normal(size=6) + [2.0 * lean, 0, 0, 0, 0, 0]
        # The same question's state at another layer is another feature set, not read for this one.
        return [(18, state), (5, -state)]

    features = _write_features(tmp_path / "states.jsonl", items, states)
    written = tmp_path / "probe.json"
    summary = question_probe.run(features=features, out=written, cache=tmp_path / "no-models", threads=1, layer=18)
    assert summary["questions"] == {"tuning": 940, "held_out": 320}
    assert summary["auc_left_out_tuning"] > 0.9
    assert summary["held_out_offices"]["twenty-ninth"] < 0.1 < 0.9 < summary["held_out_offices"]["twenty-sixth"]
    probe = Probe.from_json(json.loads(written.read_text(encoding="utf-8")))
    assert probe.weights.shape == (6,) and probe.weights[0] > 0 and probe.layer == summary["layer"] == 18
    assert len(summary["scores"]) == len(items)
    read = summary["read"]  # at the bound `ask` reads the probe with; the held-out twenty-ninth reads backwards
    assert read["bound"] == 0.25 and read["tuning"]["auc"] == summary["auc_left_out_tuning"]
    assert read["twenty-ninth"]["answerable_under"] >= 8 and read["twenty-sixth"]["answerable_under"] <= 2
    assert sum(read[o]["answerable_under"] + read[o]["unanswerable_over"] for o in question_probe.HELD_OUT) == (
        read["held_out"]["answerable_under"] + read["held_out"]["unanswerable_over"])

    # The baselines of the same run: a probe of before, here the new one turned backwards, on the same states,
    # and the tuning offices' area with other penalties.
    backwards = probe.to_json() | {"weights": (-probe.weights).tolist(), "bias": -probe.bias}
    (tmp_path / "before.json").write_text(json.dumps(backwards), encoding="utf-8")
    argv = ["--features", str(features), "--cache", str(tmp_path / "no-models"), "--threads", "1", "--layer", "18",
            "--no-write", "--against", str(tmp_path / "before.json")]
    assert question_probe.main([*argv, "--l2", "0.3,1000", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["auc_left_out_tuning"] == summary["auc_left_out_tuning"] and "written" not in again
    assert again["against"]["tuning"]["auc"] < 0.1 and again["against"]["twenty-ninth"]["auc"] > 0.9
    assert again["against"]["tuning"]["answerable_under"] > 300
    assert again["l2"]["0.3"] == summary["auc_left_out_tuning"] and again["l2"]["1000.0"] > 0.9

    assert question_probe.main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2:5] == ["read at 0.25 (answerable under it / unanswerable at it or over), AUC:",
                          "| probe | tuning offices | held-out offices |", "|---|---|---|"]
    assert table[5].startswith("| this fit ") and table[6].startswith(f"| {tmp_path / 'before.json'} | 0.0")

    wrong = probe.to_json() | {"layer": 5}
    (tmp_path / "layer5.json").write_text(json.dumps(wrong), encoding="utf-8")
    with pytest.raises(ValueError, match="layer 5"):
        question_probe.run(features=features, out=None, cache=tmp_path / "no-models", threads=1, layer=18,
                           against=tmp_path / "layer5.json")


def test_a_probe_to_compare_with_that_is_missing_or_no_probe_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "not-a-probe.json").write_text('{"model": "m"}', encoding="utf-8")
    for path, said in ((tmp_path / "missing.json", "cannot read"), (tmp_path / "not-a-probe.json", "not a probe file"),
                       (tmp_path, "cannot read")):
        with pytest.raises(SystemExit) as exc:
            question_probe.main(["--features", str(tmp_path / "none.jsonl"), "--against", str(path)])
        assert exc.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "none.jsonl").exists()  # refused before any state is read


def test_a_sweep_scores_each_layer_on_the_tuning_offices_alone(tmp_path, capsys):
    items = question_probe.questions()
    rng = np.random.default_rng(11)

    def states(it):
        sign = 1.0 if it["answerable"] else -1.0
        # Layer 3 holds the answer plainly, layer 4 faintly, layer 5 not at all.
        return [(layer, rng.normal(size=4) + [lean * sign, 0, 0, 0]) for layer, lean in ((3, 2.0), (4, 0.3), (5, 0.0))]

    features = _write_features(tmp_path / "states.jsonl", items, states)
    swept = question_probe.sweep(features=features, cache=tmp_path / "no-models", threads=1, layers=[3, 4, 5])
    areas = swept["auc_left_out_tuning"]
    assert swept["questions"] == {"tuning": 940} and list(areas) == [3, 4, 5]
    assert areas[3] > 0.9 and 0.55 < areas[4] < 0.9 and abs(areas[5] - 0.5) < 0.1
    assert question_probe.main(["--sweep", "3-5", "--features", str(features), "--cache", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert f"| 3 | {areas[3]:.3f} |" in table and "| 5 |" in table and "held-out offices not scored" in table
    assert not (tmp_path / "probe.json").exists()


def test_a_sweep_s_layers_are_read_as_a_range_or_a_list():
    assert question_probe._layers("8-11") == [8, 9, 10, 11] and question_probe._layers("14,18") == [14, 18]
    for bad in ("9-3", "x", "-1", "3-"):
        with pytest.raises(argparse.ArgumentTypeError, match="not layers"):
            question_probe._layers(bad)


def test_the_debian_evaluation_s_tuning_splits_are_fitted_on_and_its_held_out_ones_are_reported(tmp_path):
    offices = question_probe.questions()
    # Every Debian question's state is already in the features file, so no corpus is indexed, no model loaded.
    from bench.quotes import EVAL_ANSWERABLE, EVAL_UNANSWERABLE

    asked = [(f"debian-{q['split']}", q["question"], path == EVAL_ANSWERABLE)
             for path in (EVAL_UNANSWERABLE, EVAL_ANSWERABLE) for q in json.loads(path.read_text())["questions"]]
    assert {o for o, _, _ in asked} == {"debian-tune", "debian-tune2", "debian-heldout", "debian-heldout2",
                                        "debian-heldout3"}
    rng = np.random.default_rng(3)
    features = tmp_path / "states.jsonl"
    with features.open("w", encoding="utf-8") as out:
        for it in offices:
            lean = 2.0 if it["answerable"] else -2.0
            out.write(_record(it, 18, rng.normal(size=5) + [lean, 0, 0, 0, 0]))
        for n, (office, question, answerable) in enumerate(asked):
            # The Debian questions lean on the second value: only a fit on their tuning splits can tell; the
            # held-out splits lean backwards, which that fit then scores backwards. One found nothing.
            lean = 4.0 if answerable else -4.0
            if office.removeprefix("debian-") in question_probe.DEBIAN_HELD_OUT:
                lean = -lean
            state = None if n == 0 else (rng.normal(size=5) + [0, lean, 0, 0, 0]).tolist()
            out.write(json.dumps({"office": office, "question": question, "answerable": answerable, "layer": 18,
                                  "state": state}) + "\n")
    assert len(question_probe.debian_items()) == len(asked)
    summary = question_probe.run(features=features, out=None, cache=tmp_path / "no-models", threads=1, layer=18,
                                 debian=tmp_path / "no-index")
    tuning = sum(o in ("debian-tune", "debian-tune2") for o, _, _ in asked)
    assert summary["questions"] == {"tuning": 940, "held_out": 320, "debian_tuning": tuning - 1,
                                    "debian_held_out": len(asked) - tuning}
    assert set(summary["held_out_offices"]) == set(question_probe.HELD_OUT)
    areas = summary["debian"]
    assert areas["debian-tune"] > 0.75 and areas["debian-tune2"] > 0.75 and areas["debian-heldout"] < 0.25
    assert areas["debian-heldout2"] < 0.25 and areas["debian-heldout3"] < 0.25
    # Fitted on the offices alone (the baseline of the same run), the Debian questions' lean is not learnt.
    alone = summary["debian_offices_only"]
    assert set(alone) == set(areas) and all(areas[s] > alone[s] + 0.2 for s in ("debian-tune", "debian-tune2"))
    assert summary["auc_left_out_tuning"] > 0.9


def test_lines_are_ranked_by_the_embedder_alone_or_as_the_quotes_are_and_their_coverage_counted():
    from rag.quotes import _Unit

    texts = ["The canteen opens at noon.", "# Canteen", "Lunch vouchers are issued by Mirela on Mondays.",
             "The canteen is on the ground floor."]
    units = [_Unit(1, t, 0, len(t)) for t in texts]
    # The embedder puts the floor line first; the quotes' ranking adds the question's rare words ("vouchers"),
    # so the vouchers line comes first there. The heading is scored with the others but never listed.
    vectors = np.array([[0.6, 0.8], [1.0, 0.0], [0.5, 0.866], [0.7, 0.714]])
    q_vec = np.array([1.0, 0.0])
    question = "Who issues lunch vouchers?"
    headings = [False, True, False, False]
    by_embedder = question_probe.ranked_lines(question, units, vectors, q_vec, "embedder", headings=headings)
    by_quotes = question_probe.ranked_lines(question, units, vectors, q_vec, "quotes", headings=headings)
    assert by_embedder == [texts[3], texts[0], texts[2]]
    assert by_quotes[0] == texts[2] and sorted(by_quotes) == sorted(by_embedder)
    with pytest.raises(ValueError, match="unknown ranking"):
        question_probe.ranked_lines(question, units, vectors, q_vec, "alphabet")

    assert question_probe.holds(["Lunch vouchers are issued by  MIRELA on", "Mondays."], ["mirela on mondays"])
    assert not question_probe.holds(by_embedder[:2], ["Mirela"])
    rows = [{"set": "offices", "phrases": ["Mirela"], "ranked": {"embedder": by_embedder, "quotes": by_quotes}},
            {"set": "offices", "phrases": ["ground floor"], "ranked": {"embedder": by_embedder, "quotes": by_quotes}},
            # A question whose lines lack its answer altogether is counted as answerable, not as covered.
            {"set": "debian-tune", "phrases": ["1994"], "ranked": {"embedder": by_embedder, "quotes": by_quotes}}]
    covered = question_probe.coverage(rows)
    assert covered["offices"]["answerable"] == 2 and covered["offices"]["in_lines"] == 2
    # All three lines fit in the first four, whichever the ranking; the counts are per k of COVERAGE_LINES.
    assert covered["offices"]["embedder"] == covered["offices"]["quotes"] == {"4": 2, "6": 2, "8": 2}
    assert covered["debian-tune"] == {"answerable": 1, "in_lines": 0, "embedder": {"4": 0, "6": 0, "8": 0},
                                      "quotes": {"4": 0, "6": 0, "8": 0}}


def test_each_tuning_office_gets_a_probe_fitted_without_it_and_a_held_out_one_none(tmp_path):
    items = question_probe.questions()
    rng = np.random.default_rng(5)

    def states(it):
        lean = 1.0 if it["answerable"] else -1.0
        # The thirty-sixth office's states lean far along the second value: a fit that includes them
        # weighs that value, one without them does not.
        shift = [0.0, 8.0 * lean if it["office"] == "thirty-sixth" else 0.0, 0, 0]
        return [(18, rng.normal(size=4) + [lean, 0, 0, 0] + np.array(shift))]

    features = _write_features(tmp_path / "states.jsonl", items, states)
    probes = question_probe.probes_without(["thirty-sixth", "twenty-sixth", "first"], features=features,
                                           cache=tmp_path / "no-models", threads=1, layer=18)
    assert sorted(probes) == ["first", "thirty-sixth"]  # the held-out office is scored by the probe that ships
    without, with_it = probes["thirty-sixth"], probes["first"]
    assert without.layer == 18 and without.weights[0] > 0
    assert abs(without.weights[1]) < abs(with_it.weights[1])
    with pytest.raises(ValueError, match="no office named nowhere"):
        question_probe.probes_without(["nowhere"], features=features, cache=tmp_path, threads=1, layer=18)

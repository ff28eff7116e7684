"""The question probe's fit (bench/probe_fit.py): it separates what it is shown, reads back the same through the
file format Hearth ships (rag.probe.Probe), and reaches the penalised optimum whatever the order."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.probe_fit import fit
from rag import probe as P


def test_the_fit_separates_what_it_is_shown_and_reads_it_back_the_same(tmp_path):
    rng = np.random.default_rng(0)
    answered = np.array([1.0] * 40 + [0.0] * 40)
    states = rng.normal(size=(80, 6)) * [1, 1, 1, 1, 1, 100] + np.outer(answered * 2 - 1, [1.5, 0, 0, 0, 0, 0])
    probe = fit(states, answered, model="m")
    scores = np.array([probe.score(s) for s in states])
    assert (scores[:40] > 0).mean() > 0.9 and (scores[40:] < 0).mean() > 0.9
    assert abs(probe.weights[0]) > 5 * abs(probe.weights[5])  # standardised: a wide feature weighs nothing extra
    again = P.Probe.from_json(json.loads(json.dumps(probe.to_json())))
    assert again.score(states[0]) == pytest.approx(probe.score(states[0]), abs=1e-3)
    assert probe.layer == again.layer == P.LAYER
    first = {k: v for k, v in probe.to_json().items() if k != "layer"}  # a probe written before layers were read
    assert P.Probe.from_json(first).layer is None
    with pytest.raises(ValueError, match="probe reads 6"):
        probe.score(np.zeros(5))
    bad = dict(probe.to_json(), scale=[1.0])
    with pytest.raises(ValueError, match="differ in length"):
        P.Probe.from_json(bad)


def test_the_fit_is_the_penalised_optimum_whatever_the_order_of_the_questions():
    # Features that move together (as a model's hidden state's do) made gradient steps of a fixed size overshoot,
    # and where they stopped depended on rounding; Newton's steps reach the one optimum.
    rng = np.random.default_rng(1)
    answered = np.array([1.0] * 60 + [0.0] * 60)
    common = rng.normal(size=(120, 1))
    states = common + 0.3 * rng.normal(size=(120, 40)) + np.outer(answered - 0.5, [0.4] * 40)
    probe = fit(states, answered, model="m", l2=0.3)
    z = (states - probe.mean) / probe.scale
    p = 1.0 / (1.0 + np.exp(-(z @ probe.weights + probe.bias)))
    gradient = z.T @ (p - answered) / len(answered) + 0.3 * probe.weights
    assert np.abs(gradient).max() < 1e-8 and abs(float((p - answered).mean())) < 1e-8
    order = rng.permutation(len(answered))
    again = fit(states[order], answered[order], model="m", l2=0.3)
    assert np.allclose(again.weights, probe.weights, atol=1e-9) and again.bias == pytest.approx(probe.bias, abs=1e-9)

"""The fit of the question probe (rag/probe.py): research code, run by bench.question_probe, never by Hearth.

    fit(states, answered, model=..., layer=..., l2=...)  -> rag.probe.Probe
"""

from __future__ import annotations

import numpy as np

from rag.probe import LAYER, Probe

L2 = 0.3  # the penalty, chosen by leaving each tuning office out in turn (bench.question_probe)
NEWTON_STEPS = 50  # the most Newton steps of the fit; it stops once a step moves no weight by 1e-10


def fit(states: np.ndarray, answered: np.ndarray, *, model: str, layer: int | None = LAYER,
        l2: float = L2) -> Probe:
    """A logistic regression of `answered` (1 where the lines answer the question) on hidden states, each
    feature standardised, L2-penalised (not the bias): its one optimum, found by Newton's method.

    Plain gradient descent with a fixed step (how the first probe was fitted) is unstable on these states, whose
    features move together: the step overshoots along their common direction, and what it stops at then
    depends on rounding, such as the number of threads of the matrix products (on the same states, the
    thirtieth to thirty-fifth office's area under the curve came out 0.976 with one thread and 0.956 with two).
    Newton's steps reach the optimum whatever the rounding."""
    x = np.asarray(states, dtype=np.float64)
    y = np.asarray(answered, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(y), 1))])  # the last column carries the bias
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    w = np.zeros(z.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) / len(y) + penalty * w
        hessian = (z * (p * (1.0 - p))[:, None]).T @ z / len(y) + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return Probe(model=model, layer=layer, mean=mean, scale=scale, weights=w[:-1], bias=float(w[-1]))

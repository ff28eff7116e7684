"""Whether the documents answer a question, read from the larger model's hidden state (#23).

Asked "Do the lines answer the question? Answer Yes or No." over the four lines closest to a question, the
larger built-in model (Qwen2.5-Coder-1.5B) says Yes or No no better than the embedder's similarity on questions
worded apart from their notes; but its hidden state after reading that prompt holds the answer far more plainly.
The state is read at the prompt's last token from one of its middle layers (`LAYER`: the nineteenth of 28,
`LlamaCppModel.layer_state`), which holds it more plainly than the last (README "The larger model reads the
question's lines"). A logistic regression on that state, fitted on the office notes' questions
(bench/probe_fit.py, `python -m bench.question_probe`: offices one to twenty-five and thirty to fifty-one; twenty-six to twenty-nine and
fifty-two to sixty-three are held out), gives a score: above 0 it takes the lines to answer the question.
`rag.quotes.align` reads it with bounds chosen on the tuning sets (rag.confirm.BOUNDS).

The fitted numbers ship in `question_probe.json` beside this file, with the model and the layer they were read
from; a model without such a file has no probe.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

PROBE_FILE = Path(__file__).with_name("question_probe.json")
# The layer read, chosen by leaving each tuning office out in turn (the fit itself is bench/probe_fit.py)
# (bench.question_probe; README "The larger model reads the question's lines").
LAYER = 18


@dataclass(frozen=True)
class Probe:
    """A linear read-out of one model's hidden state: standardised by `mean` and `scale`, then weighed."""

    model: str
    layer: int | None  # the model's layer whose output is read (counted from 0); None: the last, after its norm
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def score(self, state: Sequence[float] | np.ndarray) -> float:
        """The log-odds that the lines answer the question, from the hidden state after the prompt."""
        x = np.asarray(state, dtype=np.float64)
        if x.shape != self.mean.shape:
            raise ValueError(f"a hidden state of {x.shape[0]} values, the probe reads {self.mean.shape[0]}")
        return float(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "layer": self.layer, "bias": self.bias,
                **{k: [float(f"{v:.6g}") for v in getattr(self, k)] for k in ("mean", "scale", "weights")}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Probe:
        arrays = {k: np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "weights")}
        if len({a.shape for a in arrays.values()}) != 1:
            raise ValueError("the probe's mean, scale and weights differ in length")
        layer = d.get("layer")
        return cls(model=str(d["model"]), layer=None if layer is None else int(layer), bias=float(d["bias"]),
                   **arrays)


@lru_cache(maxsize=4)
def _load(path: Path) -> dict[str, Probe]:
    if not path.is_file():
        return {}
    probe = Probe.from_json(json.loads(path.read_text(encoding="utf-8")))
    return {probe.model: probe}


def probe_for(model_stem: str, path: Path = PROBE_FILE) -> Probe | None:
    """The probe fitted on a model's hidden states (by the model's name without ".gguf"), if one ships."""
    return _load(path).get(model_stem)

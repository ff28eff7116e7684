"""A second embedder made offline from the default one, for measuring what the grounding policy does with an
embedder its bounds were not chosen on (#63, docs/evaluation.md "Another embedder").

No other embedding model installs from packages, so this one is derived from the default model's files: its
first few encoder layers, pooled by the first token or by the mean. A shallower model pooled another way is a
real, different embedder: it retrieves worse and its cosine similarities sit on another scale (unrelated texts
come much closer to one another), which is what a user's bge or e5 model does to bounds chosen on MiniLM.

    python -m bench.other_embedder DEST [--layers N] [--pooling mean|cls]   # writes the folder, prints its path
    python -m bench.other_embedder DEST --study [--json]                     # ... and compares the two scales

--study asks whether a similarity bound chosen on the default embedder carries over to the written one through
the workspace's background, without a chat model: for every office of bench/data/office_notes.json, each
question's closeness (its cosine similarity to the office's closest line) with each embedder, and the office's
background (how close lines of different notes come: mean and spread). The closeness bound that best splits the
tuning offices' answerable questions from the unanswerable ones with the default embedder is then applied on the
held-out offices (bench.question_probe.HELD_OUT) to the other embedder's closeness: as it is, mapped onto the
default's scale through the backgrounds (default mean + (c - office mean) x default spread / office spread), and
as each question's standing against its own similarities to every line ((c - median) / spread, the bound chosen
the same way on that measure). It reports the answerable questions withheld and the unanswerable ones let through.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple


def default_folder() -> Path:
    """The default embedder's sentence-transformers folder, as its package installed it."""
    import importlib

    from inference.models import DEFAULT_EMBEDDER

    module = importlib.import_module(DEFAULT_EMBEDDER.module)
    return Path(module.__file__).parent / DEFAULT_EMBEDDER.folder


def write_shallow(dest: Path, *, layers: int = 3, pooling: str = "mean") -> Path:
    """A folder holding the default model's first `layers` encoder layers, pooled by `pooling` ("mean" or
    "cls"): a sentence-transformers folder `hearth embedder add` takes. Returns `dest`."""
    from safetensors.numpy import load_file, save_file

    if pooling not in ("mean", "cls"):
        raise ValueError(f"pooling must be mean or cls, not {pooling!r}")
    source = default_folder()
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    if not 1 <= layers <= int(config["num_hidden_layers"]):
        raise ValueError(f"layers must be 1..{config['num_hidden_layers']}, not {layers}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
                 "sentence_bert_config.json", "modules.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, dest / name)
    weights = load_file(str(source / "model.safetensors"))
    kept = {k: v for k, v in weights.items() if ".layer." not in k or int(k.split(".layer.")[1].split(".")[0]) < layers}
    save_file(kept, str(dest / "model.safetensors"))
    (dest / "config.json").write_text(json.dumps({**config, "num_hidden_layers": layers}, indent=2), encoding="utf-8")
    (dest / "1_Pooling").mkdir(exist_ok=True)
    pool = {"word_embedding_dimension": int(config["hidden_size"]), "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False}
    (dest / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2), encoding="utf-8")
    return dest


def _closeness(embedder: Any, office: Any) -> tuple[list[tuple[bool, float, float]], float, float]:
    """(answerable, closeness, per-question standing) of each question of an office, and its background."""
    import numpy as np

    lines = [(n, line.strip()) for n, text in enumerate(office.notes.values()) for line in text.splitlines()
             if len(line.split()) >= 4]
    vecs = embedder.embed([t for _, t in lines])
    note = np.array([n for n, _ in lines])
    apart = (vecs @ vecs.T)[note[:, None] != note[None, :]]
    asked = [(q, True) for q, _ in office.answerable] + [(q, False) for q in office.unanswerable]
    sims = embedder.embed([q for q, _ in asked]) @ vecs.T
    rows = [(a, float(s.max()), float((s.max() - np.median(s)) / (s.std() or 1.0))) for (_, a), s in zip(asked, sims)]
    return rows, float(apart.mean()), float(apart.std())


def _bound(values: Sequence[tuple[bool, float]]) -> float:
    """The bound that splits answerable from unanswerable best (ties: the lowest)."""
    return max(sorted({v for _, v in values}), key=lambda b: sum((v >= b) == a for a, v in values))


def _errors(values: Sequence[tuple[bool, float]], bound: float) -> dict[str, int]:
    return {"answerable_withheld": sum(a and v < bound for a, v in values),
            "unanswerable_through": sum(not a and v >= bound for a, v in values), "questions": len(values)}


def study(folder: Path, cache: Path) -> dict[str, Any]:
    """The comparison --study prints (see the module's doc)."""
    from bench.office_notes import load
    from bench.question_probe import HELD_OUT
    from inference.embedder import CPU, OnnxEmbedder
    from inference.models import add_embedder, embedder_dir

    embedders = {"default": embedder_dir(None, cache), "other": add_embedder(folder, cache).folder}
    measured: dict[str, list[_Asked]] = {}
    for name, path in embedders.items():
        embedder = OnnxEmbedder(path, providers=[CPU], threads=2)
        measured[name] = []
        for office in load():
            rows, mean, spread = _closeness(embedder, office)
            measured[name] += [_Asked(office.name in HELD_OUT, a, c, z, mean, spread) for a, c, z in rows]
    tuning = [r for r in measured["default"] if not r.held_out]
    ref_mean = _mean([r.mean for r in tuning])
    ref_spread = _mean([r.spread for r in tuning])
    bound = _bound([(r.answerable, r.closeness) for r in tuning])
    z_bound = _bound([(r.answerable, r.standing) for r in tuning])
    out: dict[str, Any] = {"bound": round(bound, 3), "per_question_bound": round(z_bound, 3)}
    for name, rows in measured.items():
        held = [r for r in rows if r.held_out]
        mapped = [(r.answerable, ref_mean + (r.closeness - r.mean) * ref_spread / r.spread) for r in held]
        out[name] = {
            "background": [round(_mean([r.mean for r in rows]), 3), round(_mean([r.spread for r in rows]), 3)],
            "as_is": _errors([(r.answerable, r.closeness) for r in held], bound),
            "mapped": _errors(mapped, bound),
            "per_question": _errors([(r.answerable, r.standing) for r in held], z_bound)}
    return out


class _Asked(NamedTuple):
    """One question as one embedder measured it, with its office's background."""

    held_out: bool  # its office is one of bench.question_probe.HELD_OUT
    answerable: bool
    closeness: float  # cosine similarity to the office's closest line
    standing: float  # (closeness - median) / spread of its similarities to every line
    mean: float  # how close lines of different notes come in its office, on average
    spread: float  # ...and their standard deviation


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.other_embedder", description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="the folder to write")
    parser.add_argument("--layers", type=int, default=3, help="encoder layers kept (default 3)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean",
                        help="how tokens are pooled (default mean; three layers pooled by the first token give one "
                             "vector for every text)")
    parser.add_argument("--study", action="store_true", help="compare the two embedders' scales (see above)")
    parser.add_argument("--cache", type=Path, default=Path(".data/bench-office"), help="where embedders are converted")
    args = parser.parse_args(argv)
    folder = write_shallow(args.dest, layers=args.layers, pooling=args.pooling)
    print(json.dumps(study(folder, args.cache), indent=2) if args.study else folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())

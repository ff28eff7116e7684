"""The held-out sets are frozen (#63): the questions no rule or bound is chosen on may not change unnoticed.

Each held-out part is hashed as canonical JSON (keys sorted); a change to any of its questions, answers, gold
places or notes fails here. A deliberate change (a question found wrong) updates the digest in the same commit,
with the reason, and a held-out figure measured before it no longer counts as measured on these sets.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bench.question_probe import DEBIAN_HELD_OUT, HELD_OUT

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
FROZEN = {
    "offices": "73bd32554abbc49d771129fb3f63aef01329ff1f6807d642bf6b0949876aee7b",
    "eval_answerable:heldout": "ab250c887b089fffd2f7e882ffe249bd65bc2389ff01293e7fd37621d54f2201",
    "eval_answerable:heldout2": "992e63f548fee0ec292cf91b73e882711feec3b3ab08ea6cfe63b712a28b936a",
    "eval_answerable:heldout3": "2654f768fe42f87cbb6b58b1e8520b8d1629c8286b2fa798cb2f43ddce5623f3",
    "eval_unanswerable:heldout": "bc7901898bdecf70c9d31af55989fe8e7ad14855572cc23a2fe5f608702fbf87",
    "eval_unanswerable:heldout2": "e4b454c3cab3404d3e64a0c087a615f7409ddfe45e2377cbc93de537e0039f9f",
    "eval_unanswerable:heldout3": "893c842990f57c5d0c5dfc8f96c8680a95becc2e560c157e2f817d07eb23cb7d",
    "reply_form": "9d8060601d4afafa2f633706511a3e6c5333bd5996ad2d5b3ac4cd5251b7982a",
}


def _digest(items: object) -> str:
    return hashlib.sha256(json.dumps(items, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def _read(name: str) -> object:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def held_out_parts() -> dict[str, object]:
    """Each held-out part, as hashed."""
    offices = _read("office_notes")["offices"]  # type: ignore[index]
    parts: dict[str, object] = {"offices": [o for o in offices if o["name"] in HELD_OUT]}
    for name in ("eval_answerable", "eval_unanswerable"):
        questions = _read(name)["questions"]  # type: ignore[index]
        for split in DEBIAN_HELD_OUT:
            parts[f"{name}:{split}"] = [q for q in questions if q["split"] == split]
    parts["reply_form"] = _read("reply_form")
    return parts


def test_the_held_out_sets_are_as_frozen():
    parts = held_out_parts()
    assert len(parts["offices"]) == len(HELD_OUT)  # type: ignore[arg-type]
    assert all(parts[f"eval_answerable:{s}"] for s in DEBIAN_HELD_OUT)
    changed = [name for name, items in parts.items() if _digest(items) != FROZEN[name]]
    assert changed == [], f"held-out parts changed: {changed}"
    assert set(parts) == set(FROZEN)

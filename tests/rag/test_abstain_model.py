"""Not found on the real stack (rag/abstain.py): the default chat and embedding models, five office notes,
ten questions they answer and ten about the same office they do not. Hearth must say "not found" to the
second kind and keep the first kind's replies, which must hold the answer (a minute or so on 2 cores).

The notes and questions (the first two offices of bench/data/office_notes.json) were written for this test,
not taken from the evaluation the bounds were chosen on. The second office (purchasing, security, kitchen,
leave, visitors) was written later, after the bounds were last chosen, and run once as it stands here.
`python -m bench.office_notes` runs these and seven offices more, whose questions are reworded; this test asks
through the same `run_office`.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bench.office_notes import load, run_office
from rag.abstain import opens_refusal

ROOT = Path(__file__).resolve().parents[2]

# Measured when written. First office: 1 withheld ("Who creates the accounts…", evidence 0.52), 8 right, 1
# invented ("When is the office closed for Christmas?" -> the weekday closing time). Second office: 1 withheld
# (the model itself said "The documents do not say." to the lost laptop, whose note says "devices"), 9 right,
# none invented. One question of slack each way.
OFFICES = {o.name: o for o in load() if o.name in ("first", "second")}


@pytest.mark.slow
@pytest.mark.parametrize("office", sorted(OFFICES))
def test_the_real_models_say_not_found_only_where_the_notes_do_not_answer(tmp_path, office):
    from inference.llm import LlamaCppModel
    from inference.models import DEFAULT_CHAT_MODEL, chat_model_path

    demo_cache = ROOT / ".data" / "demo" / "cache"  # the demo's assembled model file, when `make demo` made one
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    model = LlamaCppModel(chat_model_path(DEFAULT_CHAT_MODEL, cache), n_ctx=4096, n_threads=2)
    details = io.StringIO()
    try:
        counts = run_office(OFFICES[office], model, tmp_path, threads=2, details=details, log=lambda _: None)
    finally:
        model.close()
    rows = [json.loads(line) for line in details.getvalue().splitlines()]
    assert len(rows) == counts["answerable"] + counts["unanswerable"] == 20

    def replies(keep):
        return {r["question"]: r["reply"] for r in rows if keep(r)}

    # Every refusal left standing was asked again first (rag.answer; it gives way to the first refusal when the
    # second try fails too).
    assert all(r["asked_again"] for r in rows if opens_refusal(r["reply"], final=True)), replies(
        lambda r: opens_refusal(r["reply"], final=True) and not r["asked_again"])
    assert counts["withheld"] <= 2, replies(lambda r: r["answerable"] and r["withheld"])
    assert counts["right"] >= 7, replies(lambda r: r["answerable"] and not r["right"])
    assert counts["answered"] <= 2, replies(lambda r: not r["answerable"] and not r["withheld"])

"""The probe on the larger model's hidden state (rag/probe.py): the file Hearth ships, and what it says of an
office's questions with the real model (its fit: tests/bench/test_probe_fit.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inference.errors import ModelError
from inference.models import CHECK_MODEL, DEFAULT_CHAT_MODEL
from rag import probe as P
from rag.confirm import AnswerCheck, bounds_for

ROOT = Path(__file__).resolve().parents[2]


def test_hearth_ships_a_probe_for_the_larger_model_only():
    probe = P.probe_for(CHECK_MODEL)
    assert probe is not None and probe.model == CHECK_MODEL and probe.mean.shape == (1536,)  # Qwen2.5-1.5B's width
    assert probe.layer == P.LAYER  # a middle layer of its 28
    assert np.isfinite(probe.weights).all() and (probe.scale > 0).all()
    assert P.probe_for(DEFAULT_CHAT_MODEL) is None and P.probe_for("own") is None
    assert P.probe_for(CHECK_MODEL, path=ROOT / "missing.json") is None
    bounds = bounds_for(CHECK_MODEL)  # its bounds ask it, and a reply stands on less than the lines do
    assert bounds.asks_question() and bounds.unanswered_below < bounds.answered_from
    assert bounds.unanswered(bounds.unanswered_below - 0.01) and not bounds.unanswered(bounds.unanswered_below)
    assert bounds.answered(bounds.answered_from) and not bounds.answered(None) and not bounds.unanswered(None)


@pytest.mark.slow
def test_the_larger_model_s_state_tells_lines_that_answer_from_lines_about_the_subject(tmp_path):
    from tests.rag.test_confirm import _packaged_model

    model = _packaged_model(CHECK_MODEL, tmp_path, n_ctx=2048)
    check = AnswerCheck(model)  # the probe that ships for it
    lines = ["Trips abroad must be approved by Casimir Oldenwrath, head of operations.",
             "Hotel costs are reimbursed up to 140 EUR per night.",
             "Book flights through the travel desk.",
             "A monthly parking permit costs 48 EUR and is deducted directly from salary."]
    try:
        answered = [check.lines_answer(q, lines) for q in (
            "I'm flying to a client in Lisbon. Whose OK do I need first?",
            "How much can a hotel night cost?")]
        open_ = [check.lines_answer(q, lines) for q in (
            "What is the daily meal allowance on a trip abroad?",
            "Which hotel chain does the company have a contract with?")]
        # The layer is read in a context of its own: the same every time, and the chat's context is untouched.
        messages = [{"role": "user", "content": "Where is the fire assembly point?"}]
        before = model.reply_logprobs(messages, "Yes")
        middle, again = model.layer_state(messages, P.LAYER), model.layer_state(messages, P.LAYER)
        first = model.layer_state(messages, 0)
        assert middle.shape == (1536,) and np.array_equal(middle, again) and not np.allclose(middle, first)
        assert model.reply_logprobs(messages, "Yes") == pytest.approx(before)
        with pytest.raises(ModelError, match="no layer 28"):
            model.layer_state(messages, 28)
        # Several layers from one reading are the ones read one at a time.
        both = model.layer_states(messages, [0, P.LAYER])
        assert list(both) == [0, P.LAYER] and np.array_equal(both[0], first) and np.array_equal(both[P.LAYER], middle)
        with pytest.raises(ModelError, match="no layers 28, 30"):
            model.layer_states(messages, [P.LAYER, 28, 30])
    finally:
        model.close()
    with pytest.raises(ModelError, match="unloaded"):
        model.layer_state(messages, P.LAYER)
    assert all(isinstance(v, float) for v in answered + open_)
    assert min(answered) > max(open_), (answered, open_)


@pytest.mark.slow
def test_a_question_under_the_search_s_floor_is_answered_where_the_probe_reads_the_best_passages_as_answering(
        tmp_path):
    # Two tuning offices' questions that no passage scores 0.2 against (the search's floor): one their notes answer
    # in other words, one they leave open. The probe was fitted on both offices: this checks the path, not how well
    # the probe reads new questions (README "Under the search's floor").
    from bench.office_notes import load
    from rag.service import Hearth, HearthConfig
    from tests.fakes import ScriptedModel
    from tests.notes import write_notes
    from tests.rag.test_confirm import _packaged_model

    offices = {o.name: o for o in load()}
    model = _packaged_model(CHECK_MODEL, tmp_path, n_ctx=2048)

    def ask(office: str, question: str):
        chat = ScriptedModel("The documents do not say.")
        h = Hearth(HearthConfig(data_dir=tmp_path / office / "data", n_threads=2, embed_threads=2,
                                check_model=CHECK_MODEL), chat_model=chat, check_model=model)
        assert h.ingest([write_notes(tmp_path / office / "notes", offices[office].notes)]).added
        assert all(hit.score < h.config.min_score for hit in h.search(question))
        return h.ask(question), chat

    try:
        shirt = "My work shirt has ripped. Where do I go to get a new one?"
        out, chat = ask("forty-sixth", shirt)
        # The passages went to the model; its refusal gave way to their lines, which hold the answer.
        assert out.sources and chat.prompts and not out.to_json()["abstained"]
        assert out.support.signals.question_verdict.value >= bounds_for(CHECK_MODEL).answered_from
        shown = out.to_json()["answer"]
        assert out.support.fallback and dict(offices["forty-sixth"].answerable)[shirt].casefold() in shown.casefold()
        out, chat = ask("forty-fifth", "Is it okay to wear my own cardigan over my uniform on nights?")
        assert not out.sources and not chat.prompts and out.to_json()["abstained"] is True
    finally:
        model.close()

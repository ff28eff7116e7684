"""bench/abstain_signals.py: the AUC it reports, the chat model's signals it reads (with scripted
log-probabilities), and its refusal of a file bench.quotes did not write."""

from __future__ import annotations

import json

import pytest

from bench.abstain_signals import JUDGE_ASK, auc, main, model_signals, summarise
from rag.store import Hit


def hit(text: str, heading: str = "Rooms") -> Hit:
    return Hit(chunk_id=text[:8], source="/notes/rooms.md", page=None, heading=heading, text=text, score=0.5,
               start=0, end=len(text))


class Scripted:
    """Log-probabilities by what the messages hold: each reply token scores -1, -3 or -6."""

    def reply_logprobs(self, messages, reply):
        user = messages[-1]["content"]
        tokens = reply.split()
        if JUDGE_ASK in user:
            return [-0.5] if reply == "Yes" else [-2.0]
        if "Write one question" in user:  # rag/likely.py's prompt: likelier after the Yew passage
            return [-1.0 if "Yew" in user else -3.0] * len(tokens)
        return [-1.0 if "Passages:" in user else -6.0] * len(tokens)  # the reply: likelier after the passages


class CannotTell:
    def reply_logprobs(self, messages, reply):
        return None


def answer_messages(question, hits):
    body = "Passages:\n" + "\n".join(h.text for h in hits) + "\n" if hits else ""
    return [{"role": "user", "content": f"{body}Question: {question}"}]


def test_auc_counts_the_pairs_ranked_the_right_way_round_and_ties_as_half():
    assert auc([3, 4], [1, 2]) == 1.0
    assert auc([1, 2], [3, 4]) == 0.0
    assert auc([2, 2], [2, 1]) == 0.75
    assert auc([], [1]) is None


def test_the_model_signals_are_read_from_its_log_probabilities():
    question = "How many seats has the Yew room?"  # 7 tokens as Scripted splits it
    found = model_signals(question, "It has three seats.", [hit("The Oak room has 12 seats."),
                                                             hit("The Yew room has 3 seats.")],
                          Scripted(), answer_messages=answer_messages)
    assert found["q_best"] == -7.0  # after the Yew passage
    assert found["q_pmi"] == -7.0 - (-21.0)  # less after an empty passage
    assert found["judge"] == -0.5 - (-2.0)
    assert found["reply_mean"] == -1.0 and found["reply_pmi"] == -1.0 - (-6.0)


def test_a_model_that_cannot_tell_and_a_question_without_passages_give_no_signal():
    for hits, model in (([hit("The Oak room has 12 seats.")], CannotTell()), ([], Scripted())):
        found = model_signals("How many seats?", "Twelve.", hits, model, answer_messages=answer_messages)
        assert set(found.values()) == {None}


def test_the_summary_has_each_signal_with_its_counts():
    rows = [{"answerable": True, "evidence": 0.8, "judge": -1.0}, {"answerable": True, "evidence": 0.6, "judge": None},
            {"answerable": False, "evidence": 0.7, "judge": -2.0}]
    out = summarise(rows)
    assert (out["n_answerable"], out["n_unanswerable"]) == (2, 1)
    assert out["signals"]["evidence"] == {"auc": 0.5, "n": [2, 1]}
    assert out["signals"]["judge"] == {"auc": 1.0, "n": [1, 1]}
    assert out["signals"]["q_pmi"] == {"auc": None, "n": [0, 0]}


@pytest.mark.parametrize("content, says", [
    (None, "cannot be read"),
    ("", "holds no questions"),
    ('{"id": "q1", "question": "?"}\n', "no reply, passages, gold"),
    ("not json\n", "cannot be read"),
])
def test_a_file_bench_quotes_did_not_write_is_refused(tmp_path, capsys, content, says):
    path = tmp_path / "details.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main([str(path)]) == 2
    assert says in capsys.readouterr().err


def test_a_details_line_as_bench_quotes_writes_it_is_accepted(tmp_path):
    from bench.abstain_signals import _not_details

    path = tmp_path / "details.jsonl"
    line = {"id": "q1", "question": "?", "reply": "r", "passages": [], "gold": []}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert _not_details(path) is None

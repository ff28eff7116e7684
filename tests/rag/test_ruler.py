"""Not found with another embedder (rag/ruler.py): a workspace that searches with a second, real embedder (the
default model's first three layers, mean-pooled: bench/other_embedder.py) still says "not found" to an invented
reply and keeps one the notes bear out, because the reply is measured with the embedder the policy's bounds were
chosen on. The second embedder's own similarities are on another scale, which is why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.other_embedder import write_shallow
from inference import models
from rag import abstain
from rag.quotes import align
from rag.ruler import measuring
from rag.service import Hearth, HearthConfig
from tests.fakes import ScriptedModel
from tests.notes import write_notes
from tests.rag.test_abstain import NOTES


@pytest.fixture(scope="module")
def hearth(tmp_path_factory: pytest.TempPathFactory) -> Hearth:
    root = tmp_path_factory.mktemp("ruler")
    config = HearthConfig(data_dir=root / "data", embed_threads=2)
    info = models.add_embedder(write_shallow(root / "shallow", layers=3, pooling="mean"), config.cache_dir,
                               name="minilm-shallow", int8=False)
    h = Hearth(HearthConfig(data_dir=root / "data", embed_threads=2, embedder=info.key))
    assert h.ingest([write_notes(root / "notes", NOTES)], workspace="office").added == len(NOTES)
    return h


def _ask(hearth: Hearth, question: str, reply: str) -> dict:
    hearth._chat_model = ScriptedModel(reply)
    return hearth.ask(question, workspace="office").to_json()


def test_the_second_embedder_is_on_another_scale(hearth: Hearth) -> None:
    own = hearth.embedder_for("office")
    default = hearth.embedder_named(None)
    assert own.name.startswith("minilm-shallow") and not abstain.calibrated(own.name)
    assert abstain.calibrated(default.name)
    texts = list(NOTES.values())

    def unrelated(embedder) -> float:  # how close notes on different subjects come, on average
        v = embedder.embed(texts)
        c = v @ v.T
        return float(c[~np.eye(len(texts), dtype=bool)].mean())

    # With the same bounds the second embedder would find every note close to every question.
    assert unrelated(own) > unrelated(default) + 0.2, (unrelated(own), unrelated(default))


def test_an_invented_reply_is_not_found_with_a_reason(hearth: Hearth) -> None:
    out = _ask(hearth, "What is the door code of the server room?", "The door code of the server room is 1200.")
    assert out["abstained"] is True and out["why"], out
    assert out["reply"] == "The door code of the server room is 1200."  # the guess, on request


def test_a_reply_the_notes_bear_out_stands(hearth: Hearth) -> None:
    out = _ask(hearth, "How many days of annual leave does an employee get?",
               "Every employee gets 28 days of paid annual leave.")
    assert out["abstained"] is False and "28" in out["answer"] and "[1]" in out["answer"], out


def test_the_reply_is_measured_with_the_default_embedder(hearth: Hearth) -> None:
    q = "What is the door code of the server room?"
    hits = hearth.search(q, workspace="office")
    own, default = hearth.embedder_for("office"), hearth.embedder_named(None)
    ruler, rescored = measuring(own, lambda: default, q, hits)
    assert ruler is default and [h.chunk_id for h in rescored] == [h.chunk_id for h in hits]
    expected = default.embed([h.text for h in hits]) @ default.embed_query([q])[0]
    np.testing.assert_allclose([h.score for h in rescored], expected, atol=1e-5)
    rarity = hearth.store.rarity(q)
    assert align("The door code is 1200.", q, rescored, embedder=ruler, rarity=rarity).abstained
    # Aligned by the second embedder itself, the policy stays off (its similarities are on another scale): the
    # guess would stand.
    assert not align("The door code is 1200.", q, hits, embedder=own, rarity=rarity).abstained


def test_a_language_the_default_does_not_read_keeps_the_workspaces_embedder(hearth: Hearth) -> None:
    q = "Какой код у двери серверной?"
    hits = hearth.search(q, workspace="office")
    own = hearth.embedder_for("office")
    ruler, same = measuring(own, lambda: hearth.embedder_named(None), q, hits)
    assert ruler is own and same == hits

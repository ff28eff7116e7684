"""The embedding benchmark's corpus and measures (the timed run itself needs sentence-transformers)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from bench import embeddings


def test_chunks_are_real_text_within_the_token_limit() -> None:
    count = lambda text: len(text.split()) * 2  # a stand-in tokenizer: two tokens a word  # noqa: E731
    chunks = embeddings.make_chunks(count, 50)
    assert len(chunks) == 50
    assert all(count(c) <= embeddings.CHUNK_TOKENS for c in chunks)
    assert sum(count(c) for c in chunks) / len(chunks) > 0.8 * embeddings.CHUNK_TOKENS, "chunks are full"
    assert chunks == embeddings.make_chunks(count, 50), "the sample is fixed"


def test_questions_come_from_their_chunks() -> None:
    chunks = ["Return the sum of the values. The values must be numbers, or a TypeError is raised."]
    (question,) = embeddings.make_questions(chunks)
    assert question in chunks[0]


def test_measures_on_known_vectors() -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((20, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert embeddings.neighbour_overlap(v, v) == 1.0
    assert embeddings.hit_at(v, v, k=1) == 1.0
    shuffled = v[rng.permutation(20)]
    assert embeddings.hit_at(shuffled, v, k=1) < 0.5


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None, reason="baseline installed")
def test_missing_baseline_says_how_to_install_it(tmp_path) -> None:
    with pytest.raises(SystemExit) as info:
        embeddings._baseline(tmp_path, 1, None)
    assert "pip install" in str(info.value) and "--baseline-python" in str(info.value)

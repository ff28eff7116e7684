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


def test_a_run_is_noisy_when_the_baseline_wavers_or_the_machine_is_loaded() -> None:
    quiet = [0.4, 0.5, 0.5]
    assert embeddings.noisy_because([10.0, 10.5, 11.0], quiet, quiet) == []
    assert embeddings.noisy_because([10.0, 12.0, 11.0], quiet, quiet) == ["the baseline's rounds differ by 20%"]
    assert embeddings.noisy_because([10.0, 10.2], [3.1, 2.0, 1.0], quiet) == ["1-minute load average 3.1 above 1.5"]
    assert embeddings.noisy_because([10.0, 10.2], quiet, [1.6, 1.0, 1.0]), "load after the run counts too"


def test_machine_and_load_are_recorded() -> None:
    info = embeddings.machine()
    assert info["cpus"] >= 1 and 1 <= info["cpus_usable"] <= info["cpus"]
    assert info["int8_peak_over_fp32"] in (2, 4, None)
    assert ("avx2" in info["extensions"]) == (info["int8_peak_over_fp32"] is not None)
    load = embeddings.load_average()
    assert len(load) == 3 and all(v >= 0 for v in load)


def test_matrix_limit_counts_the_models_multiply_adds() -> None:
    from inference.bert_onnx import BertConfig

    config = BertConfig(hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_positions=64,
                        layer_norm_eps=1e-12, pooling="mean")
    limit = embeddings.matrix_limit(config, [10, 20], threads=1)
    per_token = 2 * (4 * 32 * 32 + 2 * 32 * 64)  # layers x (Q, K, V, output + feed-forward in and out)
    attention = 2 * 2 * 32 * (10 * 10 + 20 * 20)  # layers x (scores + context) x hidden x length^2
    assert limit["macs_per_chunk"] == (30 * per_token + attention) / 2
    assert limit["int8_chunks_per_s"] > 0 and limit["fp32_chunks_per_s"] > 0
    assert limit["int8_gmac_per_s"] > 0 and limit["fp32_gmac_per_s"] > 0

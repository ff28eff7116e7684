"""`hearth hw`: the JSON contract and the readable checklist, on fixture machines."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from app.cli import main
from inference import gpu_select
from tests.fixtures.ggufs import write_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
HW = Path(__file__).resolve().parents[2] / "app" / "hw.py"
# `hearth hw --json`'s keys before issue 24 (DESIGN.md's contract): new ones are added, none renamed.
MACHINE_KEYS = {"gpus", "npus", "cpu", "ram", "runtimes", "driver", "rocm", "device_access", "environment", "checks"}
GPU_KEYS = {"index", "vendor", "name", "name_source", "pci_id", "pci_slot", "revision", "gfx_target", "kind",
            "vram_total", "vram_used", "gtt_total", "gtt_used", "driver", "render_node", "rocm_supported",
            "rocm_basis", "hsa_override", "memory_pool", "model_memory_free", "advice"}
PLAN_KEYS = {"weights", "kv_cache", "compute", "embedder", "n_gpu_layers", "n_layers", "fits"}


@pytest.fixture
def on(monkeypatch):
    """Point detection at a fixture machine, with no environment overrides; what `hearth hw` hides from ROCm
    for itself (it runs in this process) is undone after the test."""
    for name in ("HSA_OVERRIDE_GFX_VERSION", "GGML_CUDA_ENABLE_UNIFIED_MEMORY", "ROCR_VISIBLE_DEVICES",
                 "HIP_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gpu_select, "_applied", None)

    def use(name: str) -> None:
        monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(FIXTURES / name))

    return use


def run_json(capsys, *args: str) -> dict:
    assert main(["--threads", "2", "hw", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_on_an_apu_with_npu(on, capsys):
    on("phoenix-apu-npu")
    out = run_json(capsys)
    (g,) = out["gpus"]
    assert {k: g[k] for k in ("name", "pci_id", "gfx_target", "kind", "vram_total", "vram_used", "gtt_total",
                              "gtt_used", "rocm_supported")} == {
        "name": "AMD Radeon 780M Graphics", "pci_id": "1002:15bf", "gfx_target": "gfx1103", "kind": "integrated",
        "vram_total": 536870912, "vram_used": 248315904, "gtt_total": 16375992320, "gtt_used": 1120735232,
        "rocm_supported": False,
    }
    assert any("HSA_OVERRIDE_GFX_VERSION=11.0.0" in a for a in g["advice"])
    (n,) = out["npus"]
    assert {k: n[k] for k in ("name", "pci_id", "driver", "generation")} == {
        "name": "AMD Ryzen AI NPU (XDNA)", "pci_id": "1022:1502", "driver": "amdxdna", "generation": "XDNA"}
    assert out["cpu"]["threads"] == 16 and out["ram"]["total"] == 31985412 * 1024
    assert out["runtimes"]["llama_cpp"]["version"] and "CPUExecutionProvider" in out["runtimes"]["onnxruntime"]["working"]
    assert "plan" not in out
    assert {c["verdict"] for c in out["checks"]} <= {"ok", "warn", "fail", "info"}
    assert MACHINE_KEYS <= set(out) and GPU_KEYS <= set(g)
    assert (g["role"], g["rocm_index"], out["gpu_selection"]["hidden_by_hearth"]) == ("unsupported", 0, None)


def test_plan_for_a_gguf_path_on_a_gpu_machine(on, capsys, tmp_path):
    on("rdna3-desktop")
    model = write_model(tmp_path / "m.gguf", "gemma3", n_layer=6, n_embd=256, n_ff=512, head_dim=64)
    out = run_json(capsys, "--model", str(model), "--ctx", "2048")
    plan = out["plan"]
    assert PLAN_KEYS | {"device"} <= set(plan)
    assert plan["n_layers"] == 7 and plan["embedder"] > 0 and plan["fits"] is True
    # The installed llama-cpp-python is a CPU build: the layers stay on the CPU, and the plan says what would fit.
    assert plan["n_gpu_layers"] == 0 and plan["device"] == "cpu" and plan["max_gpu_layers"] == 7
    assert any("would fit on GPU0 AMD Radeon RX 7900 XTX" in w for w in plan["warnings"])
    assert out["checks"][-1]["name"] == "plan fits" and out["checks"][-1]["verdict"] == "ok"


def test_explicit_gpu_layers_with_load_shows_planned_and_actual(on, capsys, tmp_path):
    on("rdna3-desktop")
    model = write_model(tmp_path / "m.gguf", "llama", n_embd=256, n_ff=512, weight_type="q4_0")
    out = run_json(capsys, "--model", str(model), "--ctx", "1024", "--load")
    rows = {r["component"]: r for r in out["comparison"]}
    assert set(rows) == {"n_gpu_layers", "weights", "kv_cache", "compute", "output", "total"}
    assert abs(rows["total"]["error"]) < 0.01 and out["actual"]["kv_cells"] == [1024]


def test_readable_checklist_for_the_override_case(on, capsys, tmp_path):
    on("rdna2-override")
    model = write_model(tmp_path / "m.gguf", "qwen2")
    assert main(["hw", "--model", str(model), "--ctx", "512"]) == 0
    text = capsys.readouterr().out
    assert "[ ok ]  AMD GPU seen" in text
    assert "[warn]  GPU0 gfx1031 supported" in text and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in text
    assert "[ ok ]  /dev/kfd access" in text
    assert "llama.cpp GPU backend" in text and "ONNX Runtime GPU provider" in text
    assert "[ ok ]  plan fits" in text
    assert "Memory plan for tiny-test-qwen2 (qwen2), 512-token context" in text
    assert "GPU1  Intel UHD Graphics 730" in text


def test_readable_report_with_load_has_the_comparison_table(on, capsys, tmp_path):
    on("nvidia-no-amd")
    model = write_model(tmp_path / "m.gguf", "llama")
    assert main(["--threads", "2", "hw", "--model", str(model), "--ctx", "512", "--load"]) == 0
    text = capsys.readouterr().out
    assert "[info]  AMD GPU seen" in text and "NVIDIA GeForce RTX 4070" in text
    assert "Planned vs actual" in text and "kv_cache" in text


def test_built_in_model_name_is_resolved_in_the_data_dir(on, capsys):
    on("strix-halo")
    out = run_json(capsys, "--model", "smollm2-135m-instruct-q4_1", "--ctx", "2048")
    assert out["plan"]["arch"] == "llama" and out["plan"]["kv_cache"] == 30 * 2048 * 2 * 192 * 2


def test_unknown_model_is_a_usage_error(on, capsys):
    on("rdna3-desktop")
    assert main(["hw", "--model", "no-such-model"]) == 2
    assert "No model called 'no-such-model'" in capsys.readouterr().err


def test_unreadable_model_is_a_failure(on, capsys, tmp_path):
    on("rdna3-desktop")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\xff" * 40)
    assert main(["hw", "--model", str(junk)]) == 1
    assert "hearth: error:" in capsys.readouterr().err


def test_planning_a_model_follows_the_administrators_allowed_models(on, capsys, tmp_path, monkeypatch):
    on("rdna3-desktop")
    models = tmp_path / "models"
    models.mkdir()
    allowed, other = models / "allowed.gguf", tmp_path / "elsewhere.gguf"
    write_model(allowed)
    write_model(other)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'version = 1\n[models]\nfolder = "{models}"\nallowed = ["allowed.gguf"]\n')
    monkeypatch.setenv("HEARTH_POLICY", str(policy))
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "data"))
    assert main(["hw", "--model", str(other), "--ctx", "512"]) == 2  # a path, off the list: refused
    assert "not allowed on this machine" in capsys.readouterr().err
    out = run_json(capsys, "--model", "allowed.gguf", "--ctx", "512")  # found in the policy's models folder
    assert out["plan"]["n_ctx"] == 512


IGPU_MACHINES = {"raphael-igpu-rx7900xt": "AMD Radeon RX 7900 XT", "granite-ridge-igpu-rx9070xt": "AMD Radeon RX 9070 XT",
                 "laptop-780m-rx7600s": "AMD Radeon RX 7600S"}


@pytest.mark.parametrize("name", sorted(IGPU_MACHINES))
def test_json_names_the_gpu_used_and_the_one_hearth_hid(name, on, capsys, tmp_path):
    on(name)
    model = write_model(tmp_path / "m.gguf", "llama")
    out = run_json(capsys, "--model", str(model), "--ctx", "512")
    card, igpu = out["gpus"]
    assert MACHINE_KEYS <= set(out) and GPU_KEYS <= set(card) and PLAN_KEYS <= set(out["plan"])
    assert (card["role"], card["rocm_index"], igpu["role"], igpu["rocm_index"]) == ("used", 0, "hidden", 1)
    assert "Hearth hid it (ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0)" in igpu["role_reason"]
    assert igpu["hsa_override"] is None and igpu["rocm_visible"] is False
    sel = out["gpu_selection"]
    assert sel["hidden_by_hearth_in_effect"] is True and sel["used"] == [0]
    assert sel["hidden_by_hearth"]["environment"] == {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"}
    assert out["environment"]["ROCR_VISIBLE_DEVICES"] == "0"
    # `hearth hw` applied it to itself before probing llama.cpp, as every Hearth command that loads it does.
    assert (os.environ["ROCR_VISIBLE_DEVICES"], os.environ["HIP_VISIBLE_DEVICES"]) == ("0", "0")
    # The plan is for the card: its name, never the iGPU's 512 MiB carve-out.
    assert any(f"would fit on GPU0 {IGPU_MACHINES[name]}" in w for w in out["plan"]["warnings"])
    assert out["plan"]["gpu"]["free"] == card["model_memory_free"]
    texts = [a for g in out["gpus"] for a in g["advice"]] + [a for c in out["checks"] for a in c["advice"]]
    assert not any(re.search(r"HSA_OVERRIDE_GFX_VERSION=\d", t) for t in texts)
    assert any("ROCR_VISIBLE_DEVICES=0" in a for a in igpu["advice"])


def test_readable_report_shows_roles_and_what_hearth_hid(on, capsys):
    on("raphael-igpu-rx7900xt")
    assert main(["hw"]) == 0
    text = capsys.readouterr().out
    assert "GPU0  AMD Radeon RX 7900 XT  (1002:744c  0000:03:00.0  gfx1100  discrete  ROCm device 0)" in text
    assert "        used: the model's layers go here (ROCm (HIP))" in text
    assert "        hidden: gfx1036 is not supported by ROCm 6.1.3 as installed" in text
    assert "[info]  GPU1 gfx1036 supported" in text and "[ ok ]  GPUs used" in text
    assert "Hearth hid GPU1 AMD Raphael (gfx1036) from ROCm for its own process" in text


def test_hw_builds_its_config_through_app_config_not_the_cli():
    imported = set()
    for node in ast.walk(ast.parse(HW.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
    assert not any(m == "app.cli" or m.startswith("app.cli.") for m in imported)
    assert "app.config.hearth_config" in imported and "rag.components.load_chat_model" in imported


def test_the_answer_checker_is_planned_beside_the_chat_model(on, capsys, tmp_path, monkeypatch):
    """A checker of its own (rag/confirm.py, here a file named by HEARTH_CHECK_MODEL) is loaded next to the chat
    model: `hw --model` plans it too, for its short context, in what the chat model leaves, with a line of its own."""
    on("rdna3-desktop")
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "data"))
    chat = write_model(tmp_path / "chat.gguf", "llama", n_embd=256, n_ff=512)
    checker = write_model(tmp_path / "checker.gguf", "qwen2", n_embd=256, n_ff=512)
    monkeypatch.setenv("HEARTH_CHECK_MODEL", str(checker))
    out = run_json(capsys, "--model", str(chat), "--ctx", "2048")
    plan, check = out["plan"], out["check_plan"]
    assert check["arch"] == "qwen2" and check["n_ctx"] == 1024 and check["embedder"] == 0 and check["fits"] is True
    assert check["cpu"]["available"] == plan["cpu"]["available"] - plan["cpu"]["need"]
    assert [c["name"] for c in out["checks"][-2:]] == ["plan fits", "checker fits"]
    assert main(["--threads", "2", "hw", "--model", str(chat)]) == 0
    text = capsys.readouterr().out
    assert "(qwen2, the answer checker, beside it), 1024-token context" in text and "checker fits" in text
    # When the chat model checks its own answers there is no second model to plan: asked for, or being the checker.
    for checker_env, model in (("chat", chat), (str(checker), checker)):
        monkeypatch.setenv("HEARTH_CHECK_MODEL", checker_env)
        out = run_json(capsys, "--model", str(model))
        assert out["check_plan"] is None and out["checks"][-1]["name"] == "plan fits"

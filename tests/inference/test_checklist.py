"""The checklist and the advice of `hearth hw`, on fixture trees of real machines (tests/fixtures/sysfs):
each line's verdict and advice, and advice that looks at the whole machine (issue 24)."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

from inference.budget import OffloadTarget, plan_memory
from inference.checklist import Check, checklist, gpu_advice, npu_advice, plan_check, report
from inference.gpu_select import select_gpus
from inference.hardware import Machine, detect
from inference.runtimes import LlamaCppInfo, OnnxRuntimeInfo, RuntimeDevice, Runtimes
from tests.fixtures.ggufs import write_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
ROOT = (0, (0,))
IGPU_MACHINES = ("raphael-igpu-rx7900xt", "granite-ridge-igpu-rx9070xt", "laptop-780m-rx7600s")
# The process-wide override with a value: proposing it is what breaks the good card (issue 24).
PROCESS_WIDE = re.compile(r"HSA_OVERRIDE_GFX_VERSION=\d")


def machine(name: str | Path, **kw) -> Machine:
    kw.setdefault("runtimes", False)
    kw.setdefault("identity", ROOT)
    kw.setdefault("env", {})
    return detect(name if isinstance(name, Path) else FIXTURES / name, **kw)


def advice(m: Machine, index: int) -> tuple[str, ...]:
    return gpu_advice(m, m.gpus[index], select_gpus(m, own=None))


def check(m: Machine, name: str) -> Check:
    return next(c for c in checklist(m) if c.name == name)


def every_text(m: Machine) -> list[str]:
    """Every sentence the report shows: the GPUs' advice and roles, the checks' details and advice."""
    out = report(m)
    texts = [a for g in out["gpus"] for a in g["advice"]] + [g["role_reason"] for g in out["gpus"]]
    return texts + [c["detail"] for c in out["checks"]] + [a for c in out["checks"] for a in c["advice"]]


def _runtimes(*devices: RuntimeDevice, offload: bool) -> Runtimes:
    return Runtimes(
        llama_cpp=LlamaCppInfo(version="0.3.36", gpu_offload=offload, devices=devices, system_info="CPU : AVX2 = 1"),
        onnxruntime=OnnxRuntimeInfo(version="1.32.0", available=("CPUExecutionProvider",), working=("CPUExecutionProvider",)),
    )


# --- one GPU: the lines and their advice ------------------------------------------------------


def test_a_supported_desktop_passes_every_line_without_advice():
    m = machine("rdna3-desktop")
    assert [(c.name, c.verdict) for c in checklist(m)] == [
        ("AMD GPU seen", "ok"), ("amdgpu driver", "ok"), ("ROCm", "ok"), ("GPU0 gfx1100 supported", "ok"),
        ("/dev/kfd access", "ok")]
    assert advice(m, 0) == ()
    assert check(m, "AMD GPU seen").detail == "AMD Radeon RX 7900 XTX (1002:744c, gfx1100, discrete, 23.98 GiB VRAM)"


def test_container_without_dev_kfd():
    m = machine("container-missing-kfd")
    assert any("--device /dev/kfd" in a for a in advice(m, 0))
    assert check(m, "/dev/kfd access").verdict == "fail"
    assert check(m, "ROCm").verdict == "warn"


def test_rdna2_card_is_told_the_override_and_vulkan():
    m = machine("rdna2-override")
    first, second = advice(m, 0)
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in first and "gfx1030" in first and "start Hearth with" in first
    assert "Vulkan" in second
    line = check(m, "GPU0 gfx1031 supported")
    assert line.verdict == "warn" and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in line.detail
    assert advice(m, 1) == ()  # the Intel iGPU: nothing ROCm could do with it


def test_override_already_set_is_reported_not_proposed():
    m = machine("rdna2-override", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    a = advice(m, 0)
    assert a[0] == "HSA_OVERRIDE_GFX_VERSION=10.3.0 is set: ROCm runs this gfx1031 as gfx1030."
    assert not any("start Hearth with" in x for x in a)
    assert check(m, "GPU0 gfx1031 supported").verdict == "warn"


def test_apu_carve_out_and_the_npu():
    m = machine("phoenix-apu-npu")
    a = advice(m, 0)
    assert any("HSA_OVERRIDE_GFX_VERSION=11.0.0" in x for x in a)  # alone, the 780M may take it
    assert any("GGML_CUDA_ENABLE_UNIFIED_MEMORY=1" in x and "512.00 MiB" in x for x in a)
    assert npu_advice(m.npus[0], m.driver) == (
        "Ready. Hearth runs its models on the GPU or CPU; the NPU is listed for completeness.",)
    gtt = machine("phoenix-apu-npu", env={"GGML_CUDA_ENABLE_UNIFIED_MEMORY": "1"})
    assert any("shared system memory (GTT, 15.25 GiB)" in x for x in advice(gtt, 0))


def test_npu_without_its_driver():
    m = machine("strix-halo")
    assert "Linux 6.14" in npu_advice(m.npus[0], m.driver)[0]
    assert check(m, "NPU XDNA2").verdict == "warn"


def test_eight_instinct_cards_are_one_line_and_all_used():
    m = machine("mi300x-server")
    lines = checklist(m)
    assert lines[0].detail.startswith("8 × AMD Instinct MI300X OAM")
    used = check(m, "GPUs used")
    assert used.verdict == "ok" and "GPU7" in used.detail and "splits" in used.detail


def test_nvidia_machine_only_says_what_it_found():
    m = machine("nvidia-no-amd")
    lines = checklist(m)
    assert [(c.name, c.verdict) for c in lines] == [("AMD GPU seen", "info")]
    assert "NVML" in advice(m, 1)[0]


def test_kfd_permission_denied_gives_the_usermod_advice(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "rdna3-desktop", root, symlinks=True)
    kfd = root / "dev/kfd"
    kfd.chmod(0o660)
    gid = kfd.stat().st_gid
    (root / "etc/group").write_text(f"render:x:{gid}:\n")
    outsider = machine(root, identity=(4242, (gid + 1,)))
    assert any("sudo usermod -aG render,video $USER" in a for a in advice(outsider, 0))
    line = check(outsider, "/dev/kfd access")
    assert (line.verdict, line.detail) == ("fail", "permission denied")


def test_empty_machine_warns_that_models_run_on_the_cpu(tmp_path):
    m = machine(tmp_path)
    assert [(c.name, c.verdict) for c in checklist(m)] == [("AMD GPU seen", "warn")]


def test_llama_cpp_line_names_the_gfx_target_of_the_gpu_in_use():
    cpu = RuntimeDevice("CPU", "x", "cpu")
    line = check(machine("rdna3-desktop", runtimes=_runtimes(cpu, offload=False)), "llama.cpp GPU backend")
    assert line.verdict == "warn" and "-DGGML_HIP=on -DAMDGPU_TARGETS=gfx1100" in line.advice[0]
    # Next to its iGPU, the 9070 XT's target is the one to build for, not the iGPU's gfx1036.
    line = check(machine("granite-ridge-igpu-rx9070xt", runtimes=_runtimes(cpu, offload=False)), "llama.cpp GPU backend")
    assert '-DAMDGPU_TARGETS=gfx1201"' in line.advice[0]
    rocm0 = RuntimeDevice("ROCm0", "AMD Radeon RX 7900 XTX", "gpu", free=24_000_000_000, total=25753026560)
    hip = machine("rdna3-desktop", runtimes=_runtimes(cpu, rocm0, offload=True))
    assert check(hip, "llama.cpp GPU backend").verdict == "ok"


def test_plan_line_uses_the_one_byte_format(tmp_path):
    target = OffloadTarget(name="GPU0 test", free=8 << 30, total=8 << 30)
    model = write_model(tmp_path / "m.gguf", "llama")
    plan = plan_memory(model, n_ctx=512, target=target, ram_available=4 << 30, repack_types=())
    line = plan_check(plan)
    assert line.verdict == "ok" and line.detail.startswith(f"{plan.n_layers}/{plan.n_layers} layers on GPU0 test")
    assert "of 8.00 GiB free (keeping 409.60 MiB spare)" in line.detail and "of 4.00 GiB available" in line.detail


# --- the whole machine: an iGPU next to a card (issue 24) ---------------------------------------


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_igpu_next_to_a_card_is_hidden_never_overridden(name):
    m = machine(name)
    texts = every_text(m)
    assert not any(PROCESS_WIDE.search(t) for t in texts), [t for t in texts if PROCESS_WIDE.search(t)]
    igpu = advice(m, 1)
    assert "ROCR_VISIBLE_DEVICES=0" in igpu[0] and "HIP_VISIBLE_DEVICES=0" in igpu[0]
    assert "would change GPU0 too" in igpu[0]
    verdicts = {c.name: c.verdict for c in checklist(m)}
    assert verdicts[f"GPU0 {m.gpus[0].gfx_target} supported"] == "ok"
    assert verdicts[f"GPU1 {m.gpus[1].gfx_target} supported"] == "info"
    assert verdicts["GPUs used"] == "ok"
    used = check(m, "GPUs used")
    assert used.detail.startswith(f"The model's layers go to GPU0 {m.gpus[0].name}.")
    assert "ROCR_VISIBLE_DEVICES=0" in used.detail and "ROCR_VISIBLE_DEVICES=0" in used.advice[0]
    assert not any("carve-out)" in a and "UNIFIED_MEMORY" in a for a in igpu)  # its memory is not used


@pytest.mark.parametrize("name,per_device", [("raphael-igpu-rx7900xt", False), ("granite-ridge-igpu-rx9070xt", True),
                                             ("laptop-780m-rx7600s", True)])
def test_the_per_device_override_is_offered_only_by_rocm_6_2_and_later(name, per_device):
    m = machine(name)
    igpu = advice(m, 1)
    value = "11.0.0" if m.gpus[1].gfx_target == "gfx1103" else "10.3.0"
    if per_device:
        assert any(f"HSA_OVERRIDE_GFX_VERSION_2={value} (KFD node 2)" in a for a in igpu)
    else:
        assert not any("HSA_OVERRIDE_GFX_VERSION_2=" in a for a in igpu)
        assert any("ROCm 6.1.3 has no per-device override" in a for a in igpu)


def test_hiding_names_rocms_index_when_the_igpu_enumerates_first(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "granite-ridge-igpu-rx9070xt", root, symlinks=True)
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "1").rename(nodes / "x")
    (nodes / "2").rename(nodes / "1")
    (nodes / "x").rename(nodes / "2")
    m = machine(root)
    igpu, card = m.gpus
    assert igpu.gfx_target == "gfx1036" and card.gfx_target == "gfx1201"
    a = advice(m, 0)
    assert "ROCR_VISIBLE_DEVICES=1" in a[0] and "HIP_VISIBLE_DEVICES=1" in a[0]
    assert any("HSA_OVERRIDE_GFX_VERSION_1=10.3.0 (KFD node 1)" in x for x in a)
    assert not any(PROCESS_WIDE.search(t) for t in every_text(m))


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_a_process_wide_override_already_set_is_a_failure_with_the_way_out(name):
    m0 = machine(name)
    value = "11.0.0" if m0.gpus[1].gfx_target == "gfx1103" else "10.3.0"
    m = machine(name, env={"HSA_OVERRIDE_GFX_VERSION": value})
    card_line = check(m, f"GPU0 {m.gpus[0].gfx_target} supported")
    igpu_line = check(m, f"GPU1 {m.gpus[1].gfx_target} supported")
    assert card_line.verdict in ("warn", "fail") and igpu_line.verdict == "fail"
    assert any("Unset" in a and "ROCR_VISIBLE_DEVICES=0" in a for a in card_line.advice)
    assert any("applies to every GPU and also changes GPU0" in a and "ROCR_VISIBLE_DEVICES=0" in a
               for a in igpu_line.advice)


@pytest.mark.parametrize("rocm_state", ["too old for the card", "not installed"])
def test_the_igpu_is_hidden_whatever_rocm_makes_of_the_card(tmp_path, rocm_state):
    """ROCm 6.3 has no RDNA4 kernels; without ROCm only the official list is known: the iGPU is hidden either way."""
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "granite-ridge-igpu-rx9070xt", root, symlinks=True)
    if rocm_state == "not installed":
        shutil.rmtree(root / "opt")
    else:
        for f in (root / "opt/rocm-6.4.1/lib/rocblas/library").glob("*gfx120*"):
            f.unlink()
        (root / "opt/rocm-6.4.1/.info/version").write_text("6.3.3-74\n")
    m = machine(root)
    assert not any(PROCESS_WIDE.search(t) for t in every_text(m))
    igpu = advice(m, 1)
    assert any("ROCR_VISIBLE_DEVICES=0" in a and "HIP_VISIBLE_DEVICES=0" in a for a in igpu)
    assert not any("carve-out)" in a for a in igpu)
    card = advice(m, 0)
    if rocm_state == "not installed":
        assert card == () and check(m, "GPUs used").verdict == "ok"
        assert any("no ROCm version was found here" in a for a in igpu)
    else:
        assert card[0] == "ROCm 6.3.3 has no kernels for gfx1201, but newer ROCm releases support it: update ROCm."
        assert "Vulkan" in card[-1] and check(m, "GPUs used").verdict == "warn"


def test_variables_that_keep_the_igpu_visible_fail_with_the_right_value():
    m = machine("raphael-igpu-rx7900xt", env={"ROCR_VISIBLE_DEVICES": "0,1"})
    used = check(m, "GPUs used")
    assert used.verdict == "fail" and "set ROCR_VISIBLE_DEVICES=0 instead of your ROCR_VISIBLE_DEVICES" in used.advice[0]
    assert check(m, "GPU1 gfx1036 supported").verdict == "fail"
    hidden = machine("raphael-igpu-rx7900xt", env={"ROCR_VISIBLE_DEVICES": "0"})
    assert check(hidden, "GPUs used").verdict == "ok"
    assert advice(hidden, 1)[0] == "Hidden from ROCm by your environment (ROCR_VISIBLE_DEVICES=0)."


def test_a_process_wide_override_is_advised_when_every_gpu_wants_it(tmp_path):
    """An RX 6800 (gfx1030) next to an RX 6700 XT (gfx1031): 10.3.0 changes nothing on the 6800."""
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "two-gpu-workstation", root, symlinks=True)
    for node, version in (("1", "100301"), ("2", "100300")):
        props = root / f"sys/class/kfd/kfd/topology/nodes/{node}/properties"
        props.write_text(re.sub(r"gfx_target_version \d+", f"gfx_target_version {version}", props.read_text()))
    m = machine(root)
    assert [(g.gfx_target, g.rocm_runs, g.hsa_override) for g in m.gpus] == [
        ("gfx1031", False, "10.3.0"), ("gfx1030", True, None)]
    a = advice(m, 0)
    assert "ROCR_VISIBLE_DEVICES=1" in a[0]  # hidden meanwhile, by Hearth for itself
    assert "start Hearth with HSA_OVERRIDE_GFX_VERSION=10.3.0" in a[1] and "changes no other" in a[1]


def test_two_supported_cards_say_llama_cpp_splits_them():
    m = machine("two-gpu-workstation")
    used = check(m, "GPUs used")
    assert used.verdict == "ok" and used.advice == ()
    assert used.detail == ("The model's layers go to GPU0 AMD Radeon RX 7900 XT and GPU1 AMD Radeon RX 7900 XTX "
                           "(llama.cpp splits them by free memory).")
    one = machine("two-gpu-workstation", env={"ROCR_VISIBLE_DEVICES": "1"})
    assert check(one, "GPUs used").detail == "The model's layers go to GPU1 AMD Radeon RX 7900 XTX."


# --- the JSON report ---------------------------------------------------------------------------


def test_report_adds_roles_advice_selection_and_checks_to_the_facts():
    m = machine("laptop-780m-rx7600s", runtimes=_runtimes(RuntimeDevice("CPU", "x", "cpu"), offload=False))
    out = report(m)
    json.dumps(out)
    card, igpu = out["gpus"]
    assert (card["role"], igpu["role"]) == ("used", "hidden")
    assert card["role_reason"] == "the model's layers go here (ROCm (HIP)), once llama.cpp has a GPU backend " \
                                  "(this build runs on the CPU)"
    assert "Hearth hides it when llama.cpp or ONNX Runtime start (ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0)" \
        in igpu["role_reason"]
    assert (igpu["rocm_index"], igpu["kfd_node"], igpu["hsa_override"]) == (1, 2, None)
    assert igpu["advice"] == list(advice(m, 1))
    assert out["npus"][0]["advice"] == list(npu_advice(m.npus[0], m.driver))
    sel = out["gpu_selection"]
    assert (sel["used"], sel["split"], sel["hidden_by_hearth_in_effect"]) == ([0], False, False)
    assert sel["hidden_by_hearth"]["environment"] == {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"}
    assert [h["index"] for h in sel["hidden_by_hearth"]["hidden"]] == [1]
    assert [c["name"] for c in out["checks"]] == [c.name for c in checklist(m)]


# --- the split of facts and advice (issue 17) --------------------------------------------------


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (functions and TYPE_CHECKING blocks included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_facts_never_import_the_advice():
    inference = Path(__file__).resolve().parents[2] / "inference"
    for facts in ("hardware.py", "host.py", "rocm.py", "gpu_names.py", "runtimes.py", "budget.py"):
        imported = _imports(inference / facts)
        assert not {m for m in imported if m.startswith(("inference.checklist", "inference.gpu_select"))}, facts
    assert "inference.hardware" in _imports(inference / "checklist.py")
    assert not any(m.startswith("inference.checklist") for m in _imports(inference / "gpu_select.py"))

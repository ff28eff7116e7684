"""Hardware detection on fixture trees that copy real machines' sysfs layouts (tests/fixtures/sysfs)."""

from __future__ import annotations

import filecmp
from dataclasses import replace
import json
import os
import shutil
from pathlib import Path

import pytest

from inference import gpu_names, rocm
from inference.hardware import SYSFS_ENV, Machine, detect
from inference.runtimes import (
    LlamaCppInfo,
    NvmlGpu,
    OnnxRuntimeInfo,
    RuntimeDevice,
    Runtimes,
    probe_llama_cpp,
    probe_nvml,
    probe_onnxruntime,
)
from tests.fixtures.sysfs import build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
ROOT = (0, (0,))  # uid 0: device permissions pass, as for root


def machine(name: str, **kw) -> Machine:
    kw.setdefault("runtimes", False)
    kw.setdefault("identity", ROOT)
    kw.setdefault("env", {})
    return detect(FIXTURES / name, **kw)


def gpu_fields(g) -> tuple:
    return (g.index, g.vendor, g.name, g.name_source, g.pci_id, g.pci_slot, g.revision, g.gfx_target, g.kind,
            g.vram_total, g.vram_used, g.gtt_total, g.gtt_used, g.driver, g.render_node, g.rocm_supported,
            g.rocm_basis, g.hsa_override, g.memory_pool)


# --- the fixture trees ------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_text()
    return out


def test_committed_trees_are_what_the_builder_writes(tmp_path):
    build.build(tmp_path)
    for name in build.MACHINES:
        assert _tree(FIXTURES / name) == _tree(tmp_path / name), f"{name}: run python -m tests.fixtures.sysfs.build"


def test_trees_use_relative_symlinks_as_sysfs_does():
    card = FIXTURES / "rdna3-desktop/sys/class/drm/card0"
    assert card.is_symlink() and not os.readlink(card).startswith("/")
    assert os.readlink(card / "device") == "../../../0000:03:00.0"
    assert os.readlink(card / "device" / "driver").endswith("bus/pci/drivers/amdgpu")
    assert (card / "device" / "mem_info_vram_total").read_text().strip() == "25753026560"
    accel = FIXTURES / "phoenix-apu-npu/sys/class/accel/accel0/device/driver"
    assert accel.resolve().name == "amdxdna"


# --- every machine, every field ---------------------------------------------------------------


def test_rdna3_desktop():
    m = machine("rdna3-desktop")
    (g,) = m.gpus
    assert gpu_fields(g) == (
        0, "AMD", "AMD Radeon RX 7900 XTX", "amdgpu.ids", "1002:744c", "0000:03:00.0", "c8", "gfx1100", "discrete",
        25753026560, 1211523072, 33652400128, 52232192, "amdgpu", "/dev/dri/renderD128", True,
        "ROCm 6.2.4 as installed", None, "vram",
    )
    assert g.model_memory_free == 25753026560 - 1211523072
    assert m.npus == ()
    assert (m.cpu.model, m.cpu.cores, m.cpu.threads) == ("AMD Ryzen 9 7950X 16-Core Processor", 16, 32)
    assert m.cpu.features == ("avx2", "avx512f", "avx512_vnni")
    assert (m.ram.total, m.ram.available) == (65727316 * 1024, 58123456 * 1024)
    assert (m.driver.amdgpu_loaded, m.driver.amdgpu_version, m.driver.amdxdna_loaded, m.driver.kernel) == (
        True, None, False, "6.8.0-48-generic")
    assert m.rocm == rocm.RocmInstall("/opt/rocm", "6.2.4", (
        "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102"), True)
    assert (m.kfd.path, m.kfd.exists, m.kfd.usable) == ("/dev/kfd", True, True)
    assert m.kfd_topology
    assert (g.kfd_node, g.rocm_index, g.unique_id, g.visible, g.runs_as, g.rocm_runs) == (
        1, 0, "5a4c1b2e33f07c11", True, "gfx1100", True)
    assert m.offload_gpus() == (g,)


def test_container_without_dev_kfd():
    m = machine("container-missing-kfd")
    (g,) = m.gpus
    assert (g.gfx_target, g.rocm_supported, g.rocm_basis) == ("gfx1100", True, "the official ROCm support list")
    assert m.rocm is None
    assert (m.kfd.exists, m.kfd.usable) == (False, False)


def test_rdna2_card_needs_the_override_and_intel_igpu_is_listed():
    m = machine("rdna2-override")
    amd, intel = m.gpus
    assert gpu_fields(amd) == (
        0, "AMD", "AMD Radeon RX 6700/6700 XT/6750 XT / 6800M/6850M XT (Navi 22)", "pci.ids", "1002:73df",
        "0000:03:00.0", "c1", "gfx1031", "discrete", 12868124672, 402653184, 16688250880, 21651456, "amdgpu",
        "/dev/dri/renderD129", False, "ROCm 6.1.2 as installed", "10.3.0", "vram",
    )
    assert gpu_fields(intel) == (
        1, "Intel", "Intel UHD Graphics 730 (Alder Lake-S GT1)", "pci.ids", "8086:4692", "0000:00:02.0", "0c", None,
        "integrated", None, None, None, None, "i915", "/dev/dri/renderD128", None, None, None, "vram",
    )
    assert (m.cpu.cores, m.cpu.threads, m.cpu.features) == (6, 12, ("avx2",))
    assert m.rocm.version == "6.1.2" and "gfx1031" not in m.rocm.targets
    assert (amd.runs_as, amd.rocm_runs) == ("gfx1031", False)  # no kernels until the override is set


def test_an_override_set_changes_the_target_rocm_runs():
    m = machine("rdna2-override", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    g = m.gpus[0]
    assert m.hsa_override_env == "10.3.0"
    assert (g.gfx_target, g.runs_as, g.rocm_supported, g.rocm_runs) == ("gfx1031", "gfx1030", False, True)


def test_phoenix_apu_with_xdna_npu():
    m = machine("phoenix-apu-npu")
    (g,) = m.gpus
    assert gpu_fields(g) == (
        0, "AMD", "AMD Radeon 780M Graphics", "amdgpu.ids", "1002:15bf", "0000:c4:00.0", "c4", "gfx1103",
        "integrated", 536870912, 248315904, 16375992320, 1120735232, "amdgpu", "/dev/dri/renderD128", False,
        "the official ROCm support list", "11.0.0", "vram",
    )
    assert g.model_memory_free == 536870912 - 248315904
    (n,) = m.npus
    assert n.to_json() == {
        "name": "AMD Ryzen AI NPU (XDNA)", "pci_id": "1022:1502", "pci_slot": "0000:c5:00.1", "driver": "amdxdna",
        "generation": "XDNA", "device_node": "/dev/accel/accel0", "usable": True,
    }
    assert m.driver.amdxdna_loaded and m.rocm is None
    assert (m.cpu.model, m.cpu.cores, m.cpu.threads) == ("AMD Ryzen 7 7840U w/ Radeon  780M Graphics", 8, 16)


def test_unified_memory_moves_an_apu_to_gtt():
    m = machine("phoenix-apu-npu", env={"GGML_CUDA_ENABLE_UNIFIED_MEMORY": "1"})
    g = m.gpus[0]
    assert g.memory_pool == "gtt"
    assert g.model_memory_free == 16375992320 - 1120735232
    assert g.model_memory_total == 16375992320


def test_strix_halo_large_carve_out_is_still_integrated_and_npu_without_driver():
    m = machine("strix-halo")
    (g,) = m.gpus
    assert gpu_fields(g) == (
        0, "AMD", "AMD Radeon 8060S / 8050S (Strix Halo)", "built-in", "1002:1586", "0000:c5:00.0", "c1", "gfx1151",
        "integrated", 68719476736, 812646400, 33403289600, 28311552, "amdgpu", "/dev/dri/renderD128", True,
        "ROCm 6.4.1 as installed", None, "vram",
    )
    (n,) = m.npus
    assert (n.name, n.pci_id, n.pci_slot, n.driver, n.generation, n.device_node, n.usable) == (
        "AMD Ryzen AI NPU (XDNA2)", "1022:17f0", "0000:c6:00.1", None, "XDNA2", None, False)


def test_mi300x_server_eight_gpus_in_kfd_order_and_no_bmc_display():
    m = machine("mi300x-server")
    assert len(m.gpus) == 8  # the ASPEED BMC display on card0 is not a compute device
    slots = ["0000:05:00.0", "0000:15:00.0", "0000:65:00.0", "0000:75:00.0",
             "0000:85:00.0", "0000:95:00.0", "0000:e5:00.0", "0000:f5:00.0"]
    for i, g in enumerate(m.gpus):
        assert gpu_fields(g) == (
            i, "AMD", "AMD Instinct MI300X OAM", "product_name", "1002:74a1", slots[i], "00", "gfx942", "discrete",
            205822885888, 296665088 + i * 4096, 811589840896, 14680064, "amdgpu", f"/dev/dri/renderD{128 + i}", True,
            "ROCm 6.3.1 as installed", None, "vram",
        )
    assert (m.driver.amdgpu_version, m.driver.kernel) == ("6.10.5", "5.15.0-125-generic")
    assert (m.cpu.cores, m.cpu.threads) == (96, 192)
    assert [g.rocm_index for g in m.rocm_gpus] == list(range(8)) and [g.kfd_node for g in m.gpus] == list(range(2, 10))


def test_identical_device_ids_are_paired_by_unique_id_not_card_order():
    m = machine("two-gpu-workstation")
    xt, xtx = m.gpus
    # KFD lists the XT first; DRM has it as card1. Vendor/device alone would pair both with card0.
    assert (xt.name, xt.pci_slot, xt.vram_total, xt.vram_used, xt.render_node) == (
        "AMD Radeon RX 7900 XT", "0000:43:00.0", 21458059264, 314572800, "/dev/dri/renderD129")
    assert (xtx.name, xtx.pci_slot, xtx.vram_total, xtx.vram_used, xtx.render_node) == (
        "AMD Radeon RX 7900 XTX", "0000:03:00.0", 25753026560, 4294967296, "/dev/dri/renderD128")
    assert all(g.rocm_supported and g.gfx_target == "gfx1100" for g in m.gpus)
    best = m.best_gpu()
    assert best is xtx  # 19.98 GiB free (4 GiB taken by the display) beats the XT's 19.69 GiB


# The Ryzen desktops and the laptop of issue 24: the CPU's iGPU next to a Radeon card, in KFD order.
IGPU_MACHINES = {  # machine: (card, its gfx, iGPU, its gfx, ROCm version)
    "raphael-igpu-rx7900xt": ("AMD Radeon RX 7900 XT", "gfx1100", "AMD Raphael", "gfx1036", "6.1.3"),
    "granite-ridge-igpu-rx9070xt": ("AMD Radeon RX 9070 XT", "gfx1201", "AMD Radeon Graphics (Granite Ridge)",
                                    "gfx1036", "6.4.1"),
    "laptop-780m-rx7600s": ("AMD Radeon RX 7600S", "gfx1102", "AMD Radeon 780M Graphics", "gfx1103", "6.2.4"),
}


@pytest.mark.parametrize("name", sorted(IGPU_MACHINES))
def test_igpu_next_to_a_card_both_in_rocm_order(name):
    card_name, card_gfx, igpu_name, igpu_gfx, version = IGPU_MACHINES[name]
    m = machine(name)
    card, igpu = m.gpus
    assert (card.name, card.gfx_target, card.kind, card.pci_slot, card.render_node) == (
        card_name, card_gfx, "discrete", "0000:03:00.0", "/dev/dri/renderD128")
    assert (igpu.name, igpu.gfx_target, igpu.kind, igpu.vram_total, igpu.render_node) == (
        igpu_name, igpu_gfx, "integrated", 512 << 20, "/dev/dri/renderD129")
    # ROCm counts GPU nodes only: the card (KFD node 1) is device 0, the iGPU (node 2) device 1.
    assert [(g.kfd_node, g.rocm_index, g.visible) for g in m.gpus] == [(1, 0, True), (2, 1, True)]
    assert (card.rocm_supported, card.rocm_runs, igpu.rocm_supported, igpu.rocm_runs) == (True, True, False, False)
    assert m.rocm.version == version and card.rocm_basis == f"ROCm {version} as installed"
    # A process-wide override would change the card too: none is offered, unlike for the same iGPU alone.
    assert igpu.hsa_override is None and card.hsa_override is None
    # The plan and the offload go to the card, never to the iGPU's 512 MiB carve-out.
    assert m.offload_gpus() == (card,) and m.best_gpu() is card
    target = m.offload_target()
    assert (target.name, target.free, target.memory) == (f"GPU0 {card_name}", card.model_memory_free, "vram")


def test_rocm_visible_devices_and_hip_visible_devices_hide_by_rocm_index():
    hidden = machine("raphael-igpu-rx7900xt", env={"ROCR_VISIBLE_DEVICES": "0"})
    assert [g.visible for g in hidden.gpus] == [True, False]
    assert dict(hidden.rocm_env) == {"ROCR_VISIBLE_DEVICES": "0"}
    assert hidden.to_json()["environment"]["ROCR_VISIBLE_DEVICES"] == "0"
    # HIP numbers what ROCR left: with ROCR=1 only the iGPU remains, and HIP's device 0 is that one.
    only_igpu = machine("raphael-igpu-rx7900xt", env={"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"})
    assert [g.visible for g in only_igpu.gpus] == [False, True]
    by_uuid = machine("raphael-igpu-rx7900xt", env={"ROCR_VISIBLE_DEVICES": "GPU-2B7E5D9C41A8F036"})
    assert [g.visible for g in by_uuid.gpus] == [True, False]
    # An environment that hides the card leaves the plan nothing ROCm can run: the iGPU is the only candidate.
    assert only_igpu.offload_gpus() == (only_igpu.gpus[1],)


def test_rocm_order_follows_the_kfd_nodes_not_the_pci_slots(tmp_path):
    """Where the iGPU enumerates first (node 1), it is ROCm device 0 and the card device 1."""
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "raphael-igpu-rx7900xt", root, symlinks=True)
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "1").rename(nodes / "x")
    (nodes / "2").rename(nodes / "1")
    (nodes / "x").rename(nodes / "2")
    m = detect(root, runtimes=False, identity=ROOT, env={})
    igpu, card = m.gpus
    assert (igpu.gfx_target, igpu.kfd_node, igpu.rocm_index) == ("gfx1036", 1, 0)
    assert (card.gfx_target, card.kfd_node, card.rocm_index, card.pci_slot) == ("gfx1100", 2, 1, "0000:03:00.0")
    assert m.offload_gpus() == (card,)


def test_an_override_for_every_gpu_is_offered_only_when_every_gpu_wants_it():
    # The iGPU alone (a Phoenix laptop) may take the process-wide override; next to the card it may not.
    assert machine("phoenix-apu-npu").gpus[0].hsa_override == "11.0.0"
    assert machine("laptop-780m-rx7600s").gpus[1].hsa_override is None
    # Hidden from ROCm by the user, the iGPU is no reason to refuse, and needs no override itself.
    hidden = machine("laptop-780m-rx7600s", env={"ROCR_VISIBLE_DEVICES": "0"})
    assert [g.hsa_override for g in hidden.gpus] == [None, None]


def test_a_process_wide_override_that_breaks_the_card_is_seen_and_the_plan_stays_on_the_card():
    m = machine("raphael-igpu-rx7900xt", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    card, igpu = m.gpus
    assert (card.runs_as, card.rocm_runs) == ("gfx1030", False)  # RDNA3 cannot run RDNA2 code
    assert (igpu.runs_as, igpu.rocm_runs) == ("gfx1030", True)
    assert m.offload_gpus() == (card,)


def test_the_per_device_override_changes_one_gpu_only():
    m = machine("granite-ridge-igpu-rx9070xt", env={"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"})
    card, igpu = m.gpus
    assert (card.runs_as, card.rocm_runs, igpu.runs_as, igpu.rocm_runs) == ("gfx1201", True, "gfx1030", True)
    assert dict(m.rocm_env) == {"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}
    assert m.offload_gpus() == (card, igpu)  # both run now: llama.cpp splits the layers across them


def test_two_supported_cards_are_one_split_target():
    m = machine("two-gpu-workstation")
    xt, xtx = m.gpus
    assert m.offload_gpus() == (xt, xtx)
    t = m.offload_target()
    assert t.name == "GPU0 AMD Radeon RX 7900 XT + GPU1 AMD Radeon RX 7900 XTX"
    assert (t.free, t.total) == (xt.model_memory_free + xtx.model_memory_free, xt.vram_total + xtx.vram_total)
    devices = (RuntimeDevice("ROCm0", "XT", "gpu", free=20 << 30, total=21 << 30),
               RuntimeDevice("ROCm1", "XTX", "gpu", free=18 << 30, total=24 << 30))
    seen = machine("two-gpu-workstation", runtimes=_runtimes(RuntimeDevice("CPU", "x", "cpu"), *devices, offload=True))
    assert seen.offload_target().free == 38 << 30  # what llama.cpp itself reports for both
    only_xtx = machine("two-gpu-workstation", env={"HIP_VISIBLE_DEVICES": "1"})
    assert only_xtx.offload_gpus() == (only_xtx.gpus[1],)


def test_nvidia_machine_without_amd():
    m = machine("nvidia-no-amd")
    intel, nvidia = m.gpus
    assert gpu_fields(nvidia) == (
        1, "NVIDIA", "NVIDIA GeForce RTX 4070 (AD104)", "pci.ids", "10de:2786", "0000:01:00.0", "a1", None,
        "discrete", None, None, None, None, "nvidia", "/dev/dri/renderD129", None, None, None, "vram",
    )
    assert (intel.vendor, intel.kind, intel.name) == ("Intel", "integrated", "Intel UHD Graphics 630 (CometLake-S GT2)")
    assert m.amd_gpus == () and not m.kfd_topology and not m.driver.amdgpu_loaded
    assert m.best_gpu() is None and m.offload_target() is None  # no memory known
    assert m.rocm_gpus == () and all(g.visible is None for g in m.gpus)


def test_nvml_fills_in_nvidia_memory():
    nvml = (NvmlGpu("NVIDIA GeForce RTX 4070", "0000:01:00.0", "10de:2786", 12878610432, 512753664, "550.120"),)
    m = machine("nvidia-no-amd", runtimes=Runtimes(nvml=nvml))
    g = m.gpus[1]
    assert (g.name, g.name_source, g.vram_total, g.vram_used) == (
        "NVIDIA GeForce RTX 4070", "nvml", 12878610432, 512753664)
    assert m.best_gpu() is g
    target = m.offload_target()
    assert (target.backend, target.free, target.usable) == ("cuda", 12878610432 - 512753664, True)


# --- permissions, environment, runtimes ------------------------------------------------------


def test_kfd_permission_denied_gives_the_usermod_advice(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "rdna3-desktop", root, symlinks=True)
    kfd = root / "dev/kfd"
    kfd.chmod(0o660)
    gid = kfd.stat().st_gid
    (root / "etc/group").write_text(f"render:x:{gid}:\n")
    outsider = detect(root, runtimes=False, identity=(4242, (gid + 1,)), env={})
    assert (outsider.kfd.exists, outsider.kfd.usable, outsider.kfd.group) == (True, False, "render")
    (root / "dev/dri/renderD128").chmod(0o660)
    member = detect(root, runtimes=False, identity=(4242, (gid,)), env={})
    assert member.kfd.usable and all(r.usable for r in member.render_nodes)


def test_root_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(SYSFS_ENV, str(FIXTURES / "strix-halo"))
    m = detect(runtimes=False, identity=ROOT, env={})
    assert m.root == str(FIXTURES / "strix-halo") and m.gpus[0].gfx_target == "gfx1151"


def test_empty_root_is_a_machine_with_nothing(tmp_path):
    m = detect(tmp_path, runtimes=False, identity=ROOT, env={})
    assert (m.gpus, m.npus, m.rocm, m.kfd.exists, m.ram.total) == ((), (), None, False, None)
    assert m.offload_target() is None
    json.dumps(m.to_json())


def _runtimes(*devices: RuntimeDevice, offload: bool) -> Runtimes:
    return Runtimes(
        llama_cpp=LlamaCppInfo(version="0.3.36", gpu_offload=offload, devices=devices, system_info="CPU : AVX2 = 1"),
        onnxruntime=OnnxRuntimeInfo(version="1.32.0", available=("CPUExecutionProvider",), working=("CPUExecutionProvider",)),
    )


def test_offload_target_follows_what_llama_cpp_can_do():
    cpu_only = machine("rdna3-desktop", runtimes=_runtimes(RuntimeDevice("CPU", "AMD Ryzen", "cpu"), offload=False))
    t = cpu_only.offload_target()
    assert (t.usable, t.backend, t.free, t.memory) == (False, "rocm", 25753026560 - 1211523072, "vram")

    rocm_dev = RuntimeDevice("ROCm0", "AMD Radeon RX 7900 XTX", "gpu", free=24_000_000_000, total=25753026560)
    hip = machine("rdna3-desktop", runtimes=_runtimes(RuntimeDevice("CPU", "x", "cpu"), rocm_dev, offload=True))
    t = hip.offload_target()
    assert (t.usable, t.backend, t.free) == (True, "rocm", 24_000_000_000)

    vk = machine("phoenix-apu-npu", runtimes=_runtimes(RuntimeDevice("Vulkan0", "AMD Radeon 780M", "igpu", 1, 2), offload=True))
    assert vk.offload_target().backend == "vulkan"


def test_machine_json_holds_the_facts():
    out = machine("phoenix-apu-npu", runtimes=_runtimes(RuntimeDevice("CPU", "x", "cpu"), offload=False)).to_json()
    json.dumps(out)
    assert {"gpus", "npus", "cpu", "ram", "runtimes", "environment"} <= set(out)
    assert {"name", "pci_id", "gfx_target", "kind", "vram_total", "vram_used", "gtt_total", "gtt_used",
            "rocm_supported", "kfd_node", "rocm_index", "rocm_visible", "runs_as", "rocm_runs"} <= set(out["gpus"][0])
    assert {"name", "pci_id", "driver", "generation"} <= set(out["npus"][0])
    assert out["runtimes"]["llama_cpp"]["gpu_offload"] is False
    assert out["runtimes"]["onnxruntime"]["working"] == ["CPUExecutionProvider"]


def test_real_runtime_probes_on_this_machine():
    lc = probe_llama_cpp()
    assert lc.version and lc.error is None
    assert any(d.kind == "cpu" for d in lc.devices)
    assert lc.gpu_offload == bool(lc.gpu_backends)
    ort = probe_onnxruntime()
    assert "CPUExecutionProvider" in ort.working


def test_llama_cpp_probes_never_overlap(monkeypatch):
    # llama_print_system_info fills one static string: two threads in it at once freed its buffer twice (1 of 40
    # fresh processes aborted with "double free or corruption" when two threads called it together; the window's
    # hardware panel and model loader both probe at start). Probes are serialised and the string read once.
    import threading
    import time

    import llama_cpp

    from inference import runtimes

    inside, most, calls = [0], [0], [0]
    lock = threading.Lock()

    def slow_info() -> bytes:
        with lock:
            inside[0] += 1
            calls[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        with lock:
            inside[0] -= 1
        return b"CPU : SSE3 = 1"

    monkeypatch.setattr(runtimes, "_read_once", {})
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", slow_info)
    start = threading.Barrier(4)
    found = []

    def probe() -> None:
        start.wait()
        found.append(probe_llama_cpp())

    threads = [threading.Thread(target=probe) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and calls[0] == 1
    assert [lc.system_info for lc in found] == ["CPU : SSE3 = 1"] * 4


def test_nvml_probe_reads_names_memory_and_pci_ids():
    class FakeNvml:
        def nvmlInit_v2(self):
            return 0

        def nvmlShutdown(self):
            return 0

        def nvmlSystemGetDriverVersion(self, buf, n):
            buf.value = b"550.120"
            return 0

        def nvmlDeviceGetCount_v2(self, count):
            count._obj.value = 1
            return 0

        def nvmlDeviceGetHandleByIndex_v2(self, i, handle):
            handle._obj.value = 1234
            return 0

        def nvmlDeviceGetName(self, handle, buf, n):
            buf.value = b"NVIDIA GeForce RTX 4070"
            return 0

        def nvmlDeviceGetMemoryInfo(self, handle, mem):
            mem._obj.total, mem._obj.used, mem._obj.free = 12878610432, 512753664, 12365856768
            return 0

        def nvmlDeviceGetPciInfo_v3(self, handle, pci):
            pci._obj.busId = b"00000000:01:00.0"
            pci._obj.pciDeviceId = (0x2786 << 16) | 0x10DE
            return 0

    (g,) = probe_nvml(FakeNvml())
    assert g == NvmlGpu("NVIDIA GeForce RTX 4070", "0000:01:00.0", "10de:2786", 12878610432, 512753664, "550.120")


# --- ROCm knowledge and names ------------------------------------------------------------------


@pytest.mark.parametrize("version,name", [(110000, "gfx1100"), (100301, "gfx1031"), (90010, "gfx90a"),
                                          (90402, "gfx942"), (110003, "gfx1103"), (90012, "gfx90c"),
                                          (110501, "gfx1151"), (120001, "gfx1201")])
def test_gfx_names_from_kfd_target_versions(version, name):
    assert rocm.gfx_name(version) == name


@pytest.mark.parametrize("gfx,override", [("gfx1030", "10.3.0"), ("gfx1100", "11.0.0"), ("gfx90a", "9.0.10"),
                                          ("gfx942", "9.4.2"), ("gfx900", "9.0.0")])
def test_override_values_round_trip(gfx, override):
    assert rocm.override_value(gfx) == override
    assert rocm.target_from_override(override) == gfx


def test_nearest_supported_targets():
    assert rocm.nearest_supported("gfx1031", None) == "gfx1030"
    assert rocm.nearest_supported("gfx1103", None) == "gfx1100"
    assert rocm.nearest_supported("gfx90c", None) == "gfx900"
    assert rocm.nearest_supported("gfx1010", None) is None  # RDNA1: Vulkan
    assert rocm.nearest_supported("gfx803", None) is None
    lib = rocm.RocmInstall("/opt/rocm", "6.4.1", ("gfx1100", "gfx1151"), True)
    assert rocm.nearest_supported("gfx1150", lib) == "gfx1151"
    assert rocm.is_supported("gfx1151", lib) == (True, "ROCm 6.4.1 as installed")
    assert rocm.is_supported("gfx1151", None) == (True, "the official ROCm support list")
    assert rocm.target_from_override("garbage") is None


def test_family_compatibility_of_an_override():
    assert rocm.compatible("gfx1036", "gfx1030") and rocm.compatible("gfx1103", "gfx1100")
    assert rocm.compatible("gfx1151", "gfx1100") and rocm.compatible("gfx1201", "gfx1200")
    assert not rocm.compatible("gfx1100", "gfx1030") and not rocm.compatible("gfx1201", "gfx1030")
    assert not rocm.compatible("gfx90a", "gfx900") and not rocm.compatible("gfx1010", "gfx1012")


def test_visible_devices_parse_like_rocm():
    assert rocm.visible_devices(3, None, None) == (0, 1, 2)
    assert rocm.visible_devices(3, " ", "") == (0, 1, 2)  # blank: unset
    assert rocm.visible_devices(3, "2,0", None) == (2, 0)  # ROCR's order is the new order
    assert rocm.visible_devices(3, "2,0", "1") == (0,)  # HIP indexes what ROCR left
    assert rocm.visible_devices(3, "GPU-abc,7,x", None, (None, "ABC", None)) == (1,)
    assert rocm.visible_devices(2, None, "1,1,5") == (1,)


def test_per_device_override_needs_rocm_6_2():
    def install(version):
        return rocm.RocmInstall("/opt/rocm", version, (), True)

    assert rocm.per_device_variable(2) == "HSA_OVERRIDE_GFX_VERSION_2"
    assert [rocm.per_device_override(install(v)) for v in ("6.1.3", "6.2.0", "6.4.1", "7.0.2")] == [
        False, True, True, True]
    assert not rocm.per_device_override(None) and not rocm.per_device_override(install(None))


def test_device_names_from_each_source(tmp_path):
    assert gpu_names.device_name(FIXTURES / "rdna3-desktop", 0x1002, 0x744C, 0xCE) == ("AMD Radeon RX 7900 GRE", "amdgpu.ids")
    assert gpu_names.device_name(FIXTURES / "rdna2-override", 0x10DE, 0x2786) == (
        "NVIDIA GeForce RTX 4070 (AD104)", "pci.ids")
    assert gpu_names.device_name(tmp_path, 0x1002, 0x7550) == ("AMD Radeon RX 9070 / 9070 XT", "built-in")
    assert gpu_names.device_name(tmp_path, 0x1002, 0x1234) == ("AMD 1002:1234", "pci id")


def test_fixture_files_do_not_leak_between_roots():
    a = machine("rdna3-desktop").gpus[0].name
    b = machine("container-missing-kfd").gpus[0].name
    assert a == b == "AMD Radeon RX 7900 XTX"
    assert filecmp.cmp(FIXTURES / "rdna3-desktop/usr/share/libdrm/amdgpu.ids",
                       FIXTURES / "mi300x-server/usr/share/libdrm/amdgpu.ids", shallow=False)


def test_a_model_beside_the_chat_model_is_planned_in_what_that_one_leaves(tmp_path):
    """The answer checker (rag/confirm.py) is loaded next to the chat model: its plan gets the GPU memory and RAM
    the chat model's plan leaves, and the embedder, in that plan already, is not counted twice."""
    from tests.fixtures.ggufs import write_model

    m = machine("rdna3-desktop")
    chat = m.plan(write_model(tmp_path / "chat.gguf", "llama"), n_ctx=4096)
    checker = m.plan(write_model(tmp_path / "check.gguf", "qwen2"), n_ctx=1024, beside=chat)
    alone = m.plan(tmp_path / "check.gguf", n_ctx=1024)
    assert chat.n_gpu_layers == chat.n_layers and chat.gpu_need > 0 and chat.embedder is not None
    assert checker.gpu_free == alone.gpu_free - chat.gpu_need - (chat.embedder.total if chat.embedder.device != "cpu"
                                                                 else 0)
    assert checker.ram_available == alone.ram_available - chat.ram_need
    assert checker.embedder is None and alone.embedder is not None and checker.kv_cells == 1024
    # A chat model that takes all but a sliver of the GPU leaves the checker's layers on the CPU.
    full = replace(chat, weights_gpu=chat.weights_gpu + chat.gpu_free - chat.gpu_need - (1 << 20))
    squeezed = m.plan(tmp_path / "check.gguf", n_ctx=1024, beside=full)
    assert alone.n_gpu_layers > 0 and squeezed.n_gpu_layers == 0 and squeezed.gpu_free == 1 << 20
    # Once the chat model is loaded, the free memory read is what it left: nothing is taken off again.
    after = m.plan(tmp_path / "check.gguf", n_ctx=1024, beside=full, beside_loaded=True)
    assert (after.gpu_free, after.ram_available, after.embedder) == (alone.gpu_free, alone.ram_available, None)

"""Choosing llama.cpp's engine (inference/engines.py): which one auto picks, and the errors for a named one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inference import engines
from inference.errors import HearthError, UsageError
from inference.vulkan import VulkanDevice, VulkanProbe

ROOT = Path(__file__).resolve().parents[2]
CPU, VK, HIP = Path("/cpu-lib"), Path("/vulkan-lib"), Path("/hip-lib")


def device(index: int, kind: str, name: str = "AMD Radeon RX 5700 XT (RADV NAVI10)", heap: int = 8 << 30) -> VulkanDevice:
    return VulkanDevice(index=index, name=name, driver="radv" if kind != "cpu" else "llvmpipe", type=kind,
                        vendor_id=0x1002 if kind != "cpu" else 0x10005, device_id=0x731F, api_version="1.3.0",
                        heap_bytes=heap, budget_bytes=None)


LAVAPIPE = device(0, "cpu", "llvmpipe (LLVM 15.0.6, 256 bits)", 2 << 30)


def test_auto_prefers_hip_where_rocm_runs_a_gpu():
    choice = engines.choose("auto", engines={"cpu": CPU, "hip": HIP, "vulkan": VK},
                            vulkan=VulkanProbe((device(0, "discrete"),)), rocm_runs=True)
    assert (choice.chosen, choice.lib_dir, choice.available) == ("hip", HIP, ("cpu", "vulkan", "hip"))


def test_auto_takes_vulkan_for_a_gpu_rocm_does_not_run():
    probe = VulkanProbe((LAVAPIPE, device(1, "integrated", heap=2 << 30), device(2, "discrete")))
    choice = engines.choose("auto", engines={"cpu": CPU, "hip": HIP, "vulkan": VK}, vulkan=probe, rocm_runs=False)
    assert choice.chosen == "vulkan" and choice.device.index == 2  # the discrete GPU, not lavapipe
    assert "ROCm runs no GPU" in choice.reason


def test_auto_never_picks_a_software_device_for_speed():
    choice = engines.choose("auto", engines={"cpu": CPU, "vulkan": VK}, vulkan=VulkanProbe((LAVAPIPE,)))
    assert choice.chosen == "cpu" and choice.lib_dir == CPU
    assert "software" in choice.reason and "--engine vulkan" in choice.reason


def test_auto_says_when_a_gpu_waits_for_the_vulkan_engine():
    choice = engines.choose("auto", engines={"cpu": CPU}, vulkan=VulkanProbe((device(0, "discrete"),)))
    assert choice.chosen == "cpu" and "make vulkan" in choice.reason


def test_vulkan_by_name_runs_on_lavapipe_and_says_it_proves_only_the_path(monkeypatch):
    monkeypatch.setattr(engines, "_active", [])  # the choice made here is not this test process's engine
    monkeypatch.setattr(engines, "loaded_lib_dir", lambda: None)  # as in a process that has not loaded llama.cpp
    choice = engines.choose("vulkan", engines={"cpu": CPU, "vulkan": VK}, vulkan=VulkanProbe((LAVAPIPE,)))
    assert choice.chosen == "vulkan" and choice.device == LAVAPIPE
    assert "software device" in choice.reason
    env: dict[str, str] = {}
    engines.start(choice, env)
    # llama.cpp skips a CPU-type device unless it is named; the user's own setting would win.
    assert env == {engines.LIB_PATH_ENV: str(VK), engines.VISIBLE_ENV: "0"}
    assert engines.active() == choice and engines.engine_name() == "vulkan"


def test_named_engines_that_cannot_run_are_clear_errors():
    with pytest.raises(HearthError, match="vulkan engine is not installed") as missing:
        engines.choose("vulkan", engines={"cpu": CPU}, vulkan=VulkanProbe((LAVAPIPE,)))
    assert "make vulkan" in missing.value.hint
    with pytest.raises(HearthError, match="no device to run on: no Vulkan loader"):
        engines.choose("vulkan", engines={"cpu": CPU, "vulkan": VK}, vulkan=VulkanProbe(error="no Vulkan loader"))
    with pytest.raises(HearthError, match="ROCm runs no GPU"):
        engines.choose("hip", engines={"cpu": CPU, "hip": HIP}, vulkan=VulkanProbe(), rocm_runs=False)
    with pytest.raises(UsageError, match="HEARTH_ENGINE must be one of"):
        engines.requested_engine(None, {"HEARTH_ENGINE": "metal"})
    assert engines.requested_engine(None, {}) == "auto" and engines.requested_engine("CPU", {}) == "cpu"


def test_an_engine_cannot_change_once_llama_cpp_is_loaded():
    import llama_cpp  # noqa: F401 - loads the package's own libraries in this process

    with pytest.raises(HearthError, match="needs a new process"):
        engines.start(engines.EngineChoice("vulkan", "test", ("cpu", "vulkan"), VK), {})


def test_installed_engines_are_read_from_their_folders(tmp_path):
    vulkan = tmp_path / engines.ENGINES_DIR / "vulkan"
    vulkan.mkdir(parents=True)
    (vulkan / engines.LIBRARY).write_bytes(b"")
    (tmp_path / engines.ENGINES_DIR / "hip").mkdir()  # no libraries: not an engine
    assert "vulkan" not in engines.installed(tmp_path)  # a folder without the backend's library is not one either
    (vulkan / "libggml-vulkan.so").write_bytes(b"")
    found = engines.installed(tmp_path)
    assert found["vulkan"] == vulkan and found["cpu"] == engines.package_lib_dir() and "hip" not in found


@pytest.mark.parametrize(("argv", "env", "code", "message"), [
    (["hw", "--engine", "metal"], {}, 2, "invalid choice: 'metal'"),
    (["hw"], {"HEARTH_ENGINE": "metal"}, 2, "HEARTH_ENGINE must be one of"),
    (["hw", "--engine", "hip"], {}, 1, "hip engine is not installed"),
])
def test_the_command_line_refuses_an_engine_it_cannot_run(argv, env, code, message):
    r = subprocess.run([sys.executable, "-m", "app", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**_env(), **env})
    assert r.returncode == code and message in r.stderr


def test_hw_json_names_the_engine_and_lists_the_vulkan_devices():
    r = subprocess.run([sys.executable, "-m", "app", "hw", "--json"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env=_env())
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["engine"]["chosen"] in out["engine"]["available"] and out["engine"]["reason"]
    from inference.vulkan import devices

    probe = devices()
    assert [d["name"] for d in out["vulkan_devices"]] == [d.name for d in probe.devices]
    for d in out["vulkan_devices"]:
        assert {"name", "driver", "type", "heap_bytes", "budget_bytes"} <= set(d)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "HEARTH_ENGINE"}


def test_the_window_starts_with_the_engine_saved_in_its_settings(tmp_path):
    # Settings saved "hip" (not installed here): the window refuses to start with that engine and says why, before
    # any window opens; the flag still wins over the saved choice.
    config = tmp_path / "config"
    env = {**_env(), "XDG_CONFIG_HOME": str(config), "QT_QPA_PLATFORM": "offscreen"}
    code = ("from app.gui.prefs import Prefs, default_path; p = Prefs(default_path()); p.engine = 'hip'; p.sync(); "
            "print(default_path())")
    saved = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0 and saved.stdout.startswith(str(config)), saved.stderr
    r = subprocess.run([sys.executable, "-m", "app", "--data-dir", str(tmp_path / "d"), "gui"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "hip engine is not installed" in r.stderr
    r = subprocess.run([sys.executable, "-m", "app", "--data-dir", str(tmp_path / "d"), "gui", "--engine", "metal"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2

"""The hardware panel on fixture machines, offscreen: each GPU's role and what Hearth hid for itself (issue 24)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QLabel  # noqa: E402

from app.gui.hardware_panel import HardwarePanel  # noqa: E402
from app.gui.hardware_source import snapshot  # noqa: E402
from inference import gpu_select  # noqa: E402
from inference.offload import LoadReport  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"


@pytest.fixture
def on(monkeypatch):
    """A fixture machine, and a process that has hidden nothing yet (undone after the test)."""
    for name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gpu_select, "_applied", None)

    def use(name: str) -> None:
        monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(FIXTURES / name))

    return use


def texts(panel: HardwarePanel) -> str:
    return "\n".join(label.text() for label in panel.findChildren(QLabel))


def test_panel_shows_the_card_used_and_the_igpu_hearth_hid(qtbot, on):
    on("granite-ridge-igpu-rx9070xt")
    snap = snapshot()
    assert snap["gpu_selection"]["hidden_by_hearth_in_effect"] is True  # the snapshot hid it before the probe
    assert os.environ["ROCR_VISIBLE_DEVICES"] == "0"
    panel = HardwarePanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.shown, timeout=10_000):  # the cards come one per turn of the event loop
        panel.set_snapshot(snap)
    assert panel.snapshot is snap
    shown = texts(panel)
    assert "Hearth hid GPU1 AMD Radeon Graphics (Granite Ridge) (gfx1036) from ROCm for its own process" in shown
    assert "<b>Used</b>: the model&#x27;s layers go here (ROCm (HIP))" in shown
    assert "<b>Hidden from ROCm</b>: gfx1036 is not supported by ROCm 6.4.1 as installed" in shown
    assert "ROCm device 1" in shown
    # The advice names the per-device variable literally, not as a tag a rich-text label would swallow.
    assert "→ To use it as well, ROCm 6.4.1 can override this GPU alone: HSA_OVERRIDE_GFX_VERSION_2=10.3.0" in shown
    assert panel.device_names[:2] == ["AMD Radeon RX 9070 XT", "AMD Radeon Graphics (Granite Ridge)"]


def test_panel_with_one_gpu_shows_no_selection_summary(qtbot, on):
    on("rdna3-desktop")
    panel = HardwarePanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.shown, timeout=10_000):
        panel.set_snapshot(snapshot())
    shown = texts(panel)
    assert "<b>Used</b>" in shown and "Hearth hid" not in shown and "ROCR_VISIBLE_DEVICES" not in shown


def test_a_newer_snapshot_replaces_one_still_being_shown(qtbot, on):
    """Cards are added one per event-loop turn; a refresh in between starts over with the new snapshot only."""
    on("granite-ridge-igpu-rx9070xt")
    first = snapshot()
    second = {**first, "gpus": [], "gpu_selection": {}}  # the same machine with its GPUs gone
    panel = HardwarePanel()
    qtbot.addWidget(panel)
    panel.set_snapshot(first)
    assert panel.snapshot is None  # not fully shown yet
    with qtbot.waitSignal(panel.shown, timeout=10_000):
        panel.set_snapshot(second)
    qtbot.wait(50)
    assert panel.snapshot is second
    shown = texts(panel)
    assert "ROCm device" not in shown and "integrated GPU" not in shown and "No GPU found" in shown
    assert shown.count("Memory plan") == 1 and shown.count("Checks") == 1
    panel.show_error("lost the machine")
    assert panel.snapshot is None and "lost the machine" in texts(panel)


def test_panel_shows_the_answer_checker_beside_the_chat_model(qtbot, on, tmp_path):
    """The checker's plan (its own short context, what the chat model leaves) under the chat model's."""
    from tests.fixtures.ggufs import write_model

    on("rdna3-desktop")
    chat = write_model(tmp_path / "chat.gguf", "llama", n_embd=256, n_ff=512)
    checker = write_model(tmp_path / "checker.gguf", "qwen2", n_embd=256, n_ff=512)
    snap = snapshot(model_path=chat, n_ctx=2048, check_path=checker)
    assert snap["check_plan"]["n_ctx"] == 1024 and snap["checks"][-1]["name"] == "checker fits"
    panel = HardwarePanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.shown, timeout=10_000):
        panel.set_snapshot(snap)
    shown = texts(panel)
    assert f"Answer checker: {snap['check_plan']['model']}" in shown and "Fits beside the chat model" in shown
    assert "1024 tokens of context" in shown and "on the CPU; loaded with the first answer it checks" in shown
    # Once both are loaded, the free memory read is what the chat model left: nothing is taken off it again.
    loaded = snapshot(model_path=chat, n_ctx=2048, check_path=checker, load_report=LoadReport((), (), None, (), 2048,
                                                                                             512, None, ()))
    assert loaded["check_plan"]["cpu"]["available"] == loaded["plan"]["cpu"]["available"]
    assert snap["check_plan"]["cpu"]["available"] < loaded["check_plan"]["cpu"]["available"]
    # On a GPU, and once llama.cpp has loaded it: its layers there; and a checker that does not fit says so.
    on_gpu = {**snap, "check_plan": {**snap["check_plan"], "n_gpu_layers": 3, "fits": False,
                                     "gpu": {**snap["check_plan"]["gpu"], "need": 300 << 20}},
              "check_actual": {"n_gpu_layers": 3}}
    with qtbot.waitSignal(panel.shown, timeout=10_000):
        panel.set_snapshot(on_gpu)
    shown = texts(panel)
    assert "3 of 3 layers on the GPU (300.00 MiB); loaded, 3 layers on the GPU" in shown
    assert "Does not fit beside the chat model" in shown


def test_panel_shows_the_engine_and_the_vulkan_devices_the_loader_lists(qtbot, on, monkeypatch):
    # The real Vulkan loader's devices (lavapipe where mesa-vulkan-drivers is installed), and the engine chosen.
    from inference import engines
    from inference.vulkan import devices

    probe = devices()
    if not probe.devices:
        pytest.skip(f"no Vulkan device here ({probe.error}); .ci/run installs mesa-vulkan-drivers (lavapipe)")
    choice = engines.EngineChoice("vulkan", "asked for by name", ("cpu", "vulkan"), None, probe.devices[0])
    monkeypatch.setattr(engines, "_active", [choice])
    on("rdna3-desktop")
    snap = snapshot()
    assert snap["engine"]["chosen"] == "vulkan" and snap["vulkan_devices"] == [d.to_json() for d in probe.devices]
    panel = HardwarePanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.shown, timeout=10_000):
        panel.set_snapshot(snap)
    shown = texts(panel)
    assert "llama.cpp engine: Vulkan" in shown and "Installed: CPU, Vulkan" in shown
    first = probe.devices[0]
    assert f"<b>Vulkan 0</b> — {first.name}" in shown
    if first.software:
        assert "software, runs on the CPU" in shown

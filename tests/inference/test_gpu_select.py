"""Which GPUs Hearth uses, and the GPUs it hides from ROCm for its own process (issue 24), on fixture
trees of real machines: an iGPU ROCm has no kernels for next to a Radeon card it runs."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inference import gpu_select
from inference.gpu_select import HIP_ENV, ROCR_ENV, applied_hiding, hide_unusable_gpus, plan_hiding, select_gpus
from inference.hardware import detect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
REPO = Path(__file__).resolve().parents[2]
ROOT = (0, (0,))
IGPU_MACHINES = ("raphael-igpu-rx7900xt", "granite-ridge-igpu-rx9070xt", "laptop-780m-rx7600s")
NOTHING_TO_HIDE = ("rdna3-desktop", "rdna2-override", "phoenix-apu-npu", "strix-halo", "mi300x-server",
                   "two-gpu-workstation", "nvidia-no-amd", "container-missing-kfd")


@pytest.fixture(autouse=True)
def _clean_process(monkeypatch):
    """Each test starts as a fresh Hearth process would: no ROCm variables, nothing hidden yet."""
    for name in (ROCR_ENV, HIP_ENV, "HSA_OVERRIDE_GFX_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gpu_select, "_applied", None)


def machine(name, **kw):
    kw.setdefault("runtimes", False)
    kw.setdefault("identity", ROOT)
    kw.setdefault("env", {})
    return detect(name if isinstance(name, Path) else FIXTURES / name, **kw)


def swapped_copy(tmp_path: Path, name: str) -> Path:
    """The machine with its two GPU nodes in the other KFD order (the iGPU enumerated first)."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root, symlinks=True)
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "1").rename(nodes / "x")
    (nodes / "2").rename(nodes / "1")
    (nodes / "x").rename(nodes / "2")
    return root


# --- roles --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_the_card_is_used_and_the_igpu_hidden(name):
    m = machine(name)
    sel = select_gpus(m)
    card, igpu = sel.roles
    assert (card.role, card.reason) == ("used", "the model's layers go here (ROCm (HIP))")
    assert igpu.role == "hidden"
    assert f"{m.gpus[1].gfx_target} is not supported by ROCm {m.rocm.version} as installed" in igpu.reason
    assert "Hearth hides it when llama.cpp or ONNX Runtime start (ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0)" \
        in igpu.reason
    assert (sel.used, sel.split, sel.applied, sel.user_environment) == ((0,), False, False, ())
    assert sel.summary.startswith(f"The model's layers go to GPU0 {m.gpus[0].name}. Hearth hides GPU1 ")


def test_two_supported_cards_are_both_used_and_split():
    sel = select_gpus(machine("two-gpu-workstation"))
    assert [r.role for r in sel.roles] == ["used", "used"]
    assert sel.split and sel.hiding is None
    assert sel.roles[0].reason == "llama.cpp splits the model's layers across GPU0 and GPU1 by their free memory"


def test_roles_of_other_machines():
    intel = select_gpus(machine("rdna2-override"))
    assert [(r.role, r.reason) for r in intel.roles] == [
        ("unsupported", "gfx1031 is not supported by ROCm 6.1.2 as installed; once HSA_OVERRIDE_GFX_VERSION=10.3.0 "
                        "is set the model's layers go here"),
        ("unused", "Hearth's runtimes do not use Intel GPUs")]
    assert intel.summary.startswith("ROCm cannot run GPU0")
    missing = select_gpus(machine("nvidia-no-amd"))
    assert [r.role for r in missing.roles] == ["unused", "unused"]
    assert missing.summary == "No GPU the runtimes can use: the models run on the CPU."
    user = select_gpus(machine("raphael-igpu-rx7900xt", env={ROCR_ENV: "0"}))
    assert user.roles[1].role == "hidden" and user.roles[1].reason == "hidden from ROCm by ROCR_VISIBLE_DEVICES=0"
    assert user.hiding is None and user.user_environment == ((ROCR_ENV, "0"),)


# --- what Hearth hides -------------------------------------------------------------------------


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_plan_hides_the_igpu_by_rocm_index(name):
    hiding = plan_hiding(machine(name))
    assert hiding is not None and hiding.kept == (0,)
    assert hiding.variables == {ROCR_ENV: "0", HIP_ENV: "0"}
    (h,) = hiding.hidden
    assert (h.index, h.rocm_index) == (1, 1)


@pytest.mark.parametrize("name", NOTHING_TO_HIDE)
def test_nothing_is_hidden_where_rocm_runs_every_gpu_or_none(name):
    assert plan_hiding(machine(name)) is None
    env = {"PATH": "/usr/bin"}
    assert hide_unusable_gpus(env, root=FIXTURES / name) is None
    assert env == {"PATH": "/usr/bin"}


def test_when_the_igpu_enumerates_first_rocr_names_the_card_and_hip_counts_from_zero(tmp_path):
    env: dict[str, str] = {}
    hidden = hide_unusable_gpus(env, root=swapped_copy(tmp_path, "laptop-780m-rx7600s"))
    # ROCR_VISIBLE_DEVICES counts every GPU node; HIP_VISIBLE_DEVICES counts what ROCR left (the card alone).
    assert env == {ROCR_ENV: "1", HIP_ENV: "0"}
    assert hidden is not None and [(h.index, h.rocm_index, h.gfx_target) for h in hidden.hidden] == [(0, 0, "gfx1103")]


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_hide_unusable_gpus_sets_the_variables_and_says_so(name, caplog):
    env = {"PATH": "/usr/bin"}
    with caplog.at_level(logging.INFO, logger="inference.gpu_select"):
        hidden = hide_unusable_gpus(env, root=FIXTURES / name)
    assert env == {"PATH": "/usr/bin", ROCR_ENV: "0", HIP_ENV: "0"}
    assert hidden is not None and hidden.environment == ((ROCR_ENV, "0"), (HIP_ENV, "0"))
    assert hidden.describe(done=True).startswith("Hearth hid GPU1 ")
    assert any("Hearth hid GPU1" in r.getMessage() and "ROCR_VISIBLE_DEVICES=0" in r.getMessage() for r in caplog.records)
    # Read again with the variables set, the machine shows the iGPU hidden and the card alone in use.
    after = machine(name, env=env)
    assert [g.visible for g in after.gpus] == [True, False]
    sel = select_gpus(after, own=hidden)
    assert sel.applied and sel.user_environment == () and "Hearth hid it" in sel.roles[1].reason


@pytest.mark.parametrize("steer", [{ROCR_ENV: "0,1"}, {HIP_ENV: "1"}, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
                                   {"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}])
def test_what_the_user_set_wins(steer):
    env = dict(steer)
    assert hide_unusable_gpus(env, root=FIXTURES / "raphael-igpu-rx7900xt") is None
    assert env == steer


def test_blank_variables_count_as_unset():
    env = {ROCR_ENV: " ", HIP_ENV: ""}
    assert hide_unusable_gpus(env, root=FIXTURES / "raphael-igpu-rx7900xt") is not None
    assert env == {ROCR_ENV: "0", HIP_ENV: "0"}


def test_hearth_hides_for_its_own_process_once(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(FIXTURES / "granite-ridge-igpu-rx9070xt"))
    first = hide_unusable_gpus()
    assert first is not None and (os.environ[ROCR_ENV], os.environ[HIP_ENV]) == ("0", "0")
    assert hide_unusable_gpus() is first and applied_hiding() is first  # Hearth's own values are not the user's
    sel = select_gpus(detect(runtimes=False, identity=ROOT))
    assert sel.applied and sel.hiding is first and sel.roles[1].role == "hidden"
    assert sel.summary.endswith(first.describe(done=True))
    monkeypatch.setenv(ROCR_ENV, "0,1")  # the user changed it since: no longer Hearth's doing
    assert applied_hiding() is None
    assert hide_unusable_gpus() is None and os.environ[ROCR_ENV] == "0,1"


CHILD = """
import json, os, subprocess, sys
from inference.gpu_select import hide_unusable_gpus
hidden = hide_unusable_gpus()  # what Hearth does before llama.cpp or ONNX Runtime start
child = subprocess.run([sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
                       capture_output=True, text=True, check=True)
print(json.dumps({"hidden": hidden.to_json() if hidden else None, "launched": json.loads(child.stdout)}))
"""


@pytest.mark.parametrize("name", IGPU_MACHINES)
def test_processes_hearth_launches_carry_the_hiding(name):
    env = {k: v for k, v in os.environ.items() if k not in (ROCR_ENV, HIP_ENV) and not k.startswith("HSA_OVERRIDE")}
    env.update(HEARTH_SYSFS_ROOT=str(FIXTURES / name), PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["launched"][ROCR_ENV], out["launched"][HIP_ENV]) == ("0", "0")
    assert "HSA_OVERRIDE_GFX_VERSION" not in out["launched"]
    assert [h["rocm_index"] for h in out["hidden"]["hidden"]] == [1]


def test_a_launched_process_keeps_the_users_own_choice():
    env = {k: v for k, v in os.environ.items() if not k.startswith("HSA_OVERRIDE")}
    env.update(HEARTH_SYSFS_ROOT=str(FIXTURES / "raphael-igpu-rx7900xt"), PYTHONPATH=str(REPO), ROCR_VISIBLE_DEVICES="0,1")
    env.pop(HIP_ENV, None)
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["hidden"] is None and out["launched"][ROCR_ENV] == "0,1" and HIP_ENV not in out["launched"]

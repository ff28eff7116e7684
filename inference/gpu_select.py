"""Which GPUs Hearth's runtimes use, which are hidden from ROCm and why, and the hiding Hearth does for itself.

ROCm enumerates every GPU of the KFD topology, also one it has no kernels for: the small RDNA2 iGPU of a
Ryzen 7000/9000 (gfx1036) next to a Radeon card is the common case. llama.cpp's HIP build then splits the
model's layers onto it as well and fails there ("invalid device function", a memory fault), and ONNX
Runtime's ROCm and MIGraphX providers see it too. `HSA_OVERRIDE_GFX_VERSION=10.3.0` would give the iGPU gfx1030's kernels,
but the variable applies to every GPU: the card would run gfx1030 code too and break. The iGPU is to be
hidden instead: `ROCR_VISIBLE_DEVICES` lists the devices ROCm shows, by index in KFD node order (0 = the
first GPU node), and `HIP_VISIBLE_DEVICES` indexes what that leaves (so after ROCR_VISIBLE_DEVICES=1 the
card is HIP device 0).

`select_gpus(machine)` says per GPU whether it is used, hidden, unsupported or unused, and why.
`hide_unusable_gpus()` sets the variables for Hearth's own process, before llama.cpp or ONNX Runtime start,
when the user has not steered ROCm by hand (ROCR/HIP_VISIBLE_DEVICES or an override already set).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference import rocm
from inference.hardware import GpuInfo, Machine, detect

log = logging.getLogger(__name__)

ROCR_ENV = rocm.ROCR_VISIBLE_ENV
HIP_ENV = rocm.HIP_VISIBLE_ENV
_BACKENDS = {"rocm": "ROCm (HIP)", "cuda": "CUDA", "vulkan": "Vulkan"}

_lock = threading.Lock()
_applied: HiddenGpus | None = None  # what hide_unusable_gpus set in os.environ, this process


@dataclass(frozen=True)
class HiddenGpu:
    """One GPU hidden from ROCm: Hearth's GPU number, ROCm's device index, its name and target, and why."""

    index: int
    rocm_index: int
    name: str
    gfx_target: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "rocm_index": self.rocm_index, "name": self.name,
                "gfx_target": self.gfx_target, "reason": self.reason}


@dataclass(frozen=True)
class HiddenGpus:
    """What Hearth hides from ROCm for its own process: the GPUs, ROCm's indices left visible, the variables."""

    hidden: tuple[HiddenGpu, ...]
    kept: tuple[int, ...]
    environment: tuple[tuple[str, str], ...]

    @property
    def variables(self) -> dict[str, str]:
        return dict(self.environment)

    def assignments(self) -> str:
        """The variables as a shell would set them: 'ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0'."""
        return " ".join(f"{k}={v}" for k, v in self.environment)

    def describe(self, *, done: bool = False) -> str:
        """One sentence for the log and the hardware panel."""
        names = ", ".join(f"GPU{h.index} {h.name} ({h.gfx_target})" for h in self.hidden)
        return (f"Hearth {'hid' if done else 'hides'} {names} from ROCm for its own process ({self.assignments()}): "
                f"{self.hidden[0].reason}.")

    def to_json(self, *, done: bool = True) -> dict[str, Any]:
        return {"hidden": [h.to_json() for h in self.hidden], "kept_rocm_indices": list(self.kept),
                "environment": self.variables, "description": self.describe(done=done)}


@dataclass(frozen=True)
class GpuRole:
    """What one GPU does here: used (the model's layers go to it), hidden (from ROCm), unsupported (ROCm
    cannot run it), unused (another GPU gets the work); and why, in a sentence."""

    index: int
    role: str
    reason: str


@dataclass(frozen=True)
class GpuSelection:
    """The whole machine's answer: every GPU's role, where the layers go, and what Hearth hides for itself."""

    roles: tuple[GpuRole, ...]
    used: tuple[int, ...]
    split: bool  # llama.cpp splits the layers across the used GPUs (by their free memory)
    hiding: HiddenGpus | None  # what Hearth hides (or hid) for its own process
    applied: bool  # the hiding is in effect in the environment the machine was read with
    user_environment: tuple[tuple[str, str], ...]  # the ROCm variables the user set
    summary: str

    def role(self, index: int) -> GpuRole | None:
        return next((r for r in self.roles if r.index == index), None)

    def to_json(self) -> dict[str, Any]:
        return {"used": list(self.used), "split": self.split, "summary": self.summary,
                "hidden_by_hearth": self.hiding.to_json(done=self.applied) if self.hiding else None,
                "hidden_by_hearth_in_effect": self.applied, "user_environment": dict(self.user_environment)}


def select_gpus(machine: Machine, *, own: HiddenGpus | None = None) -> GpuSelection:
    """Every GPU's role on this machine; `own` is what Hearth already hid in the environment it was read
    with (default: what `hide_unusable_gpus` did in this process)."""
    own = own if own is not None else applied_hiding()
    applied = own is not None and all(dict(machine.rocm_env).get(k) == v for k, v in own.environment)
    user = tuple((k, v) for k, v in machine.rocm_env if not (applied and own and own.variables.get(k) == v))
    if machine.hsa_override_env:
        user += ((rocm.OVERRIDE_ENV, machine.hsa_override_env),)
    hiding = own if applied else (None if user else plan_hiding(machine))
    used = machine.offload_gpus()
    roles = tuple(_role(machine, g, used, hiding, applied, user) for g in machine.gpus)
    return GpuSelection(roles=roles, used=tuple(g.index for g in used), split=len(used) > 1, hiding=hiding,
                        applied=applied, user_environment=user, summary=_summary(machine, used, hiding, applied))


def _role(machine: Machine, g: GpuInfo, used: tuple[GpuInfo, ...], hiding: HiddenGpus | None, applied: bool,
          user: tuple[tuple[str, str], ...]) -> GpuRole:
    backend = machine.offload_backend()
    label = _BACKENDS.get(backend or "", "the GPU backend")
    hidden = {h.index: h for h in hiding.hidden} if hiding else {}
    if g in used and g.vendor == "AMD" and backend == "rocm" and not g.rocm_runs:
        fix = f"; once {rocm.OVERRIDE_ENV}={g.hsa_override} is set the model's layers go here" if g.hsa_override else ""
        return GpuRole(g.index, "unsupported", unsupported_reason(g) + fix)
    if g in used:
        names = " and ".join(f"GPU{u.index}" for u in used)
        reason = (f"llama.cpp splits the model's layers across {names} by their free memory" if len(used) > 1
                  else f"the model's layers go here ({label})")
        target = machine.offload_target()
        if target is not None and not target.usable:
            reason += ", once llama.cpp has a GPU backend (this build runs on the CPU)"
        return GpuRole(g.index, "used", reason)
    if hiding is not None and g.index in hidden:
        when = "hid it" if applied else "hides it when llama.cpp or ONNX Runtime start"
        return GpuRole(g.index, "hidden", f"{hidden[g.index].reason}; Hearth {when} ({hiding.assignments()})")
    if g.visible is False:
        by = " ".join(f"{k}={v}" for k, v in user if k in (ROCR_ENV, HIP_ENV)) or "the environment"
        return GpuRole(g.index, "hidden", f"hidden from ROCm by {by}")
    if g.vendor == "AMD" and g.gfx_target is None:
        return GpuRole(g.index, "unsupported", "ROCm cannot see it: it is not in the KFD topology")
    if g.vendor == "AMD" and not g.rocm_runs:
        return GpuRole(g.index, "unsupported", unsupported_reason(g))
    if g.vendor not in ("AMD", "NVIDIA"):
        return GpuRole(g.index, "unused", f"Hearth's runtimes do not use {g.vendor} GPUs")
    where = ", ".join(f"GPU{u.index}" for u in used) or "the CPU"
    return GpuRole(g.index, "unused", f"the model's layers go to {where} ({label})")


def plan_hiding(machine: Machine) -> HiddenGpus | None:
    """The GPUs to hide from ROCm so only those it has kernels for remain, when both kinds are present."""
    gpus = machine.rocm_gpus
    runs = [g for g in gpus if g.rocm_runs]
    unusable = [g for g in gpus if not g.rocm_runs]
    if not runs or not unusable:
        return None
    kept = tuple(g.rocm_index or 0 for g in runs)
    others = " and ".join(f"GPU{g.index} {g.name}" for g in runs)
    hidden = tuple(HiddenGpu(g.index, g.rocm_index or 0, g.name, g.gfx_target or "?",
                             f"{unsupported_reason(g)}; next to {others}, which ROCm runs, it would only get in "
                             "the way") for g in unusable)
    # HIP numbers what ROCR_VISIBLE_DEVICES leaves: after it, the kept GPUs are HIP devices 0, 1, ...
    environment = ((ROCR_ENV, ",".join(str(i) for i in kept)), (HIP_ENV, ",".join(str(i) for i in range(len(kept)))))
    return HiddenGpus(hidden=hidden, kept=kept, environment=environment)


def unsupported_reason(g: GpuInfo) -> str:
    """Why ROCm cannot run this GPU as the environment has it."""
    if g.runs_as and g.runs_as != g.gfx_target:
        return f"an override makes this {g.gfx_target} run {g.runs_as}'s kernels, which do not work on it"
    return f"{g.gfx_target} is not supported by {g.rocm_basis}"


def steered_by_user(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The variables by which the user already chose what ROCm shows or runs (Hearth then changes nothing)."""
    return tuple(sorted(k for k, v in environ.items()
                        if (k in (ROCR_ENV, HIP_ENV) or k.startswith(rocm.OVERRIDE_ENV)) and v.strip()))


def hide_unusable_gpus(environ: MutableMapping[str, str] | None = None, *, root: Path | None = None
                       ) -> HiddenGpus | None:
    """Hide from ROCm, in `environ` (default os.environ), the GPUs it has no kernels for when one it can run
    sits next to them; call before llama.cpp or ONNX Runtime load in this process (they read the variables
    once). Changes nothing, and returns None, when the user set ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or
    an HSA_OVERRIDE_GFX_VERSION variable, or when there is nothing to hide. `root` is the sysfs root
    (default HEARTH_SYSFS_ROOT, else /)."""
    global _applied
    env = os.environ if environ is None else environ
    with _lock:
        own = _applied if env is os.environ else None
        if own is not None and all(env.get(k) == v for k, v in own.environment):
            return own  # already done in this process
        steered = steered_by_user(env)
        if steered:
            log.debug("ROCm's GPUs are left as set by %s", ", ".join(steered))
            return None
        hiding = plan_hiding(detect(root, runtimes=False, env=env))
        if hiding is None:
            return None
        for key, value in hiding.environment:
            env[key] = value
        log.info("%s", hiding.describe(done=True))
        if env is os.environ:
            _applied = hiding
        return hiding


def applied_hiding() -> HiddenGpus | None:
    """What `hide_unusable_gpus` set in this process's environment, while the variables still hold it."""
    own = _applied
    if own is None or any(os.environ.get(k) != v for k, v in own.environment):
        return None
    return own


def _summary(machine: Machine, used: tuple[GpuInfo, ...], hiding: HiddenGpus | None, applied: bool) -> str:
    if not machine.gpus:
        return "No GPU: the models run on the CPU."
    if not used:
        text = "No GPU the runtimes can use: the models run on the CPU."
    elif machine.offload_backend() == "rocm" and not any(g.rocm_runs for g in used if g.vendor == "AMD"):
        text = f"ROCm cannot run GPU{used[0].index} {used[0].name} as it is set up: see its advice."
    else:
        names = " and ".join(f"GPU{g.index} {g.name}" for g in used)
        text = f"The model's layers go to {names}" + (" (llama.cpp splits them by free memory)." if len(used) > 1
                                                      else ".")
    if hiding is not None:
        text += " " + hiding.describe(done=applied)
    return text

"""What `hearth hw` and the hardware panel say about the machine: the checklist (each thing that decides
whether the GPU is used, in the order a person would go through them: GPU seen, driver, ROCm, each GPU's
gfx target, which GPUs are used, /dev/kfd, llama.cpp's backend, ONNX Runtime's provider, NPU) with a
verdict (ok, warn, fail, info) and advice per line, each device's advice, and `report`, the JSON of
`hearth hw --json`. The facts come from `inference.hardware`, the choice of GPUs from `inference.gpu_select`.

The advice looks at the whole machine: a process-wide `HSA_OVERRIDE_GFX_VERSION` is proposed only when
every GPU ROCm shows wants the same one; a GPU ROCm cannot run next to one it can is to be hidden
(`ROCR_VISIBLE_DEVICES`), or given its own override where the installed ROCm reads the per-device form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference import rocm
from inference.budget import MemoryPlan, format_bytes
from inference.gpu_select import HIP_ENV, ROCR_ENV, GpuSelection, select_gpus
from inference.hardware import OVERRIDE_ENV, UNIFIED_MEMORY_ENV, DeviceAccess, DriverInfo, GpuInfo, Machine, NpuInfo

HIP_BUILD = 'CMAKE_ARGS="-DGGML_HIP=on -DAMDGPU_TARGETS={gfx}" pip install --force-reinstall --no-cache-dir llama-cpp-python'
# Hearth's own Vulkan engine, built beside the CPU one and run in its tests on lavapipe (inference/engines.py).
VULKAN_BUILD = ("`make vulkan` in Hearth's folder (Debian: glslc, libvulkan-dev, mesa-vulkan-drivers), "
                "then Hearth picks it (or: --engine vulkan)")


@dataclass(frozen=True)
class Check:
    """One line of the checklist: what was checked, the verdict (ok, warn, fail, info) and advice."""

    name: str
    verdict: str
    detail: str
    advice: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "verdict": self.verdict, "detail": self.detail, "advice": list(self.advice)}


def report(m: Machine, selection: GpuSelection | None = None) -> dict[str, Any]:
    """The machine as `hearth hw --json` prints it: the facts, and per GPU its role (used, hidden,
    unsupported, unused) with the reason and advice, the GPU selection, and the checklist."""
    sel = selection or select_gpus(m)
    out = m.to_json()
    for gj, g in zip(out["gpus"], m.gpus):
        role = sel.role(g.index)
        gj["role"] = role.role if role else None
        gj["role_reason"] = role.reason if role else None
        gj["advice"] = list(gpu_advice(m, g, sel))
    for nj, n in zip(out["npus"], m.npus):
        nj["advice"] = list(npu_advice(n, m.driver))
    out["gpu_selection"] = sel.to_json()
    out["checks"] = [c.to_json() for c in checklist(m, sel)]
    return out


def checklist(m: Machine, selection: GpuSelection | None = None) -> list[Check]:
    """The checks that decide whether the GPU is used, in the order a person would go through them."""
    sel = selection or select_gpus(m)
    checks: list[Check] = []
    amd = m.amd_gpus
    others = [g for g in m.gpus if g.vendor != "AMD"]
    if amd:
        seen: dict[str, int] = {}
        for g in amd:
            line = (f"{g.name} ({g.pci_id}, {g.gfx_target or 'no gfx target'}, {g.kind}"
                    + (f", {format_bytes(g.model_memory_total)} {g.memory_pool.upper()}" if g.model_memory_total else "")
                    + ")")
            seen[line] = seen.get(line, 0) + 1
        checks.append(Check("AMD GPU seen", "ok", "; ".join(f"{n} × {line}" if n > 1 else line for line, n in seen.items())))
    elif others:
        checks.append(Check("AMD GPU seen", "info", "No AMD GPU; found " + ", ".join(f"{g.name} ({g.pci_id})" for g in others)))
    else:
        checks.append(Check("AMD GPU seen", "warn", "No GPU found in /sys/class/drm or the KFD topology; models run on the CPU."))

    if amd:
        checks += _driver_checks(m)
        for g in amd:
            checks.append(_gpu_check(m, g, sel))
        if len(m.rocm_gpus) > 1 or sel.hiding is not None:
            checks.append(_selection_check(m, sel))
        if m.kfd.usable:
            checks.append(Check("/dev/kfd access", "ok", "read-write"))
        else:
            checks.append(Check("/dev/kfd access", "fail", "missing" if not m.kfd.exists else "permission denied",
                                (access_advice(m.kfd),)))
        blocked = [r for r in m.render_nodes if r.exists and not r.usable]
        if blocked:
            checks.append(Check("render node access", "fail", ", ".join(r.path for r in blocked) + ": permission denied",
                                (access_advice(blocked[0]),)))
    checks += _runtime_checks(m, sel)
    for n in m.npus:
        checks.append(Check(f"NPU {n.generation}", "ok" if n.usable else "warn",
                            f"{n.name} ({n.pci_id}, driver {n.driver or 'none'}"
                            + (f", {n.device_node}" if n.device_node else "") + ")", npu_advice(n, m.driver)))
    return checks


def plan_check(plan: MemoryPlan, name: str = "plan fits") -> Check:
    """The checklist line for a model's memory plan (`name`: "checker fits" for the answer checker's, planned beside
    the chat model's)."""
    where = (f"{plan.n_gpu_layers}/{plan.n_layers} layers on {plan.device}" if plan.n_gpu_layers
             else f"all {plan.n_layers} layers on the CPU")
    need = (f"GPU {format_bytes(plan.gpu_need)} of {format_bytes(plan.gpu_free)} free"
            f" (keeping {format_bytes(plan.margin)} spare), " if plan.n_gpu_layers else "")
    need += f"RAM {format_bytes(plan.ram_need)} of {format_bytes(plan.ram_available)} available"
    return Check(name, "ok" if plan.fits else "fail", f"{where}; {need}", plan.warnings)


def gpu_advice(m: Machine, g: GpuInfo, sel: GpuSelection) -> tuple[str, ...]:
    """What to do about one GPU, seen with the others: hide, override (the per-device form where a
    process-wide one would change another GPU), Vulkan, permissions, memory."""
    if g.vendor != "AMD":
        if g.vendor == "NVIDIA" and g.vram_total is None:
            return ("Its memory is unknown: NVML (libnvidia-ml, part of the NVIDIA driver) was not found.",)
        return ()
    advice: list[str] = []
    role = sel.role(g.index)
    hidden = role is not None and role.role == "hidden"
    if g.gfx_target is None:
        if not m.kfd_topology:
            advice.append("ROCm cannot see this GPU: there is no KFD topology (/sys/class/kfd). The kernel may lack "
                          "HSA support, or this is a container started without --device /dev/kfd --device /dev/dri. "
                          "llama.cpp's Vulkan backend does not need the KFD.")
        else:
            advice.append("This GPU is not in the KFD topology, so ROCm cannot use it; llama.cpp's Vulkan backend can.")
    else:
        advice += _override_advice(m, g)
        if sel.hiding is not None and any(h.index == g.index for h in sel.hiding.hidden):
            advice += _hide_advice(m, g, sel)
        elif hidden:
            by = " ".join(f"{k}={v}" for k, v in sel.user_environment if k in (ROCR_ENV, HIP_ENV))
            advice.append(f"Hidden from ROCm by your environment ({by or 'set before Hearth started'}).")
        elif not g.rocm_runs and g.runs_as == g.gfx_target:
            advice += _unsupported_advice(m, g)
    if not m.kfd.usable:
        advice.append(access_advice(m.kfd))
    else:
        node = next((r for r in m.render_nodes if r.path == g.render_node and not r.usable), None)
        if node is not None:
            advice.append(access_advice(node))
    if g.pci_slot is None and g.vram_total is None:
        advice.append("Its memory could not be read: no /sys/class/drm card matches it.")
    elif g.kind == "integrated" and not hidden and (g.index in sel.used or not sel.used):
        carve, gtt = format_bytes(g.vram_total), format_bytes(g.gtt_total)
        if g.memory_pool == "gtt":
            advice.append(f"Integrated GPU: {UNIFIED_MEMORY_ENV} is set, so llama.cpp loads models into shared "
                          f"system memory (GTT, {gtt}) rather than the {carve} carve-out.")
        else:
            advice.append(f"Integrated GPU: models go into its {carve} of dedicated memory (the firmware carve-out). "
                          f"To use the shared system memory (GTT, up to {gtt}) set {UNIFIED_MEMORY_ENV}=1, or raise "
                          "the UMA frame buffer size in the firmware setup.")
    return tuple(advice)


def npu_advice(n: NpuInfo, driver: DriverInfo) -> tuple[str, ...]:
    """What to do about the Ryzen AI NPU."""
    if n.driver != "amdxdna":
        return ("The Ryzen AI NPU is present but the amdxdna driver is not bound to it"
                + (" (the module is loaded but did not take the device; check dmesg for its firmware)."
                   if driver.amdxdna_loaded
                   else ": amdxdna is part of Linux 6.14 and later; on older kernels install AMD's XDNA driver package."),)
    if n.device_node is None:
        return ("amdxdna is bound but /dev/accel has no node for it; check udev rules and dmesg.",)
    return ("Ready. Hearth runs its models on the GPU or CPU; the NPU is listed for completeness.",)


def access_advice(access: DeviceAccess) -> str:
    """What to do when a device node is missing or not accessible."""
    if not access.exists:
        return (f"{access.path} is missing: the amdgpu driver's compute interface is not there (a kernel without "
                "HSA support, or a container started without --device /dev/kfd --device /dev/dri).")
    group = access.group if access.group and not access.group.isdigit() else "render"
    return (f"You cannot open {access.path} (it belongs to group '{group}'): run `sudo usermod -aG {group},video $USER`, "
            "then log out and back in.")


# --- the lines and the advice behind them ------------------------------------------------------


def _driver_checks(m: Machine) -> list[Check]:
    checks = []
    if m.driver.amdgpu_loaded:
        how = f"AMD's DKMS driver {m.driver.amdgpu_version}" if m.driver.amdgpu_version else "in-kernel driver"
        checks.append(Check("amdgpu driver", "ok", f"loaded ({how}, Linux {m.driver.kernel or 'unknown'})"))
    else:
        checks.append(Check("amdgpu driver", "fail", "the amdgpu kernel module is not loaded",
                            ("Load it with `sudo modprobe amdgpu`; check dmesg if it fails.",)))
    if m.rocm is not None:
        targets = ", ".join(m.rocm.targets) or "none found"
        checks.append(Check("ROCm", "ok", f"ROCm {m.rocm.version or '(unknown version)'} at {m.rocm.path}; "
                                          f"rocBLAS kernels for {targets}"))
    else:
        checks.append(Check("ROCm", "warn", "not installed",
                            ("llama.cpp's HIP build needs ROCm's runtime (AMD's ROCm installer, 'rocm' use case); "
                             "its Vulkan build needs only the Mesa RADV driver.",)))
    return checks


def _gpu_check(m: Machine, g: GpuInfo, sel: GpuSelection) -> Check:
    advice = gpu_advice(m, g, sel)
    role = sel.role(g.index)
    if g.gfx_target is None:
        return Check(f"GPU{g.index} target", "fail", f"{g.name}: not visible to ROCm", advice)
    name = f"GPU{g.index} {g.gfx_target} supported"
    if g.rocm_supported and g.rocm_runs and g.runs_as != g.gfx_target:
        return Check(name, "warn", f"{g.name}: yes, by {g.rocm_basis}, but an override makes it run {g.runs_as}",
                     advice)
    if g.rocm_supported and g.rocm_runs:
        return Check(name, "ok", f"{g.name}: yes, by {g.rocm_basis}", tuple(a for a in advice if a.startswith("Integrated")))
    if g.rocm_supported:
        return Check(name, "fail", f"{g.name}: yes, by {g.rocm_basis}, but an override makes it run {g.runs_as}'s "
                                   "kernels, which do not work on it", advice)
    if role is not None and role.role == "hidden":
        kept = ", ".join(f"GPU{i}" for i in sel.used) or "the CPU"
        return Check(name, "info", f"{g.name}: not by {g.rocm_basis}; hidden from ROCm, so {kept} does the work", advice)
    verdict = "fail" if _changed_by_override(m, g) or not (g.hsa_override or g.rocm_runs) else "warn"
    return Check(name, verdict, f"{g.name}: not by {g.rocm_basis}"
                 + (f"; try {OVERRIDE_ENV}={g.hsa_override}" if g.hsa_override and not g.rocm_runs else ""), advice)


def _selection_check(m: Machine, sel: GpuSelection) -> Check:
    """Which GPUs the work goes to, and what is hidden; a failure when ROCm shows a GPU it cannot run next
    to one it can (the user's own variables keep it visible, so Hearth does not hide it)."""
    planned = {h.index for h in sel.hiding.hidden} if sel.hiding else set()
    stuck = [g for g in m.rocm_gpus if g.visible and not g.rocm_runs and g.index not in planned]
    verdict = "fail" if stuck and any(g.rocm_runs and g.visible for g in m.rocm_gpus) else "warn" if stuck else "ok"
    advice: list[str] = []
    if sel.hiding is not None:
        kept = sel.hiding.variables[ROCR_ENV]
        advice.append(f"Other ROCm programs on this machine need the same: start them with {ROCR_ENV}={kept} "
                      f"(HIP programs also honour {HIP_ENV}={kept} on its own).")
    elif verdict == "fail":
        kept = ",".join(str(g.rocm_index) for g in m.rocm_gpus if g.rocm_supported)
        names = ", ".join(f"GPU{g.index} {g.name} ({g.gfx_target})" for g in stuck)
        advice.append(f"ROCm shows {names}, which it cannot run, next to a GPU it can: set {ROCR_ENV}={kept} "
                      f"instead of your {', '.join(k for k, _ in sel.user_environment)}.")
    return Check("GPUs used", verdict, sel.summary, tuple(advice))


def _runtime_checks(m: Machine, sel: GpuSelection) -> list[Check]:
    checks = []
    amd = m.amd_gpus
    lc = m.runtimes.llama_cpp if m.runtimes else None
    if lc is not None:
        targets = sorted({g.gfx_target for g in m.gpus if g.index in sel.used and g.gfx_target})
        gfx = ";".join(targets) or next((g.gfx_target for g in amd if g.gfx_target), None) or "gfx1100"
        if lc.version is None:
            checks.append(Check("llama.cpp GPU backend", "fail", lc.error or "llama-cpp-python is not installed",
                                ("pip install llama-cpp-python",)))
        elif lc.gpu_offload and lc.gpu_backends:
            devs = ", ".join(f"{d.name}: {d.description}" for d in lc.devices if d.kind in ("gpu", "igpu"))
            checks.append(Check("llama.cpp GPU backend", "ok", f"llama-cpp-python {lc.version} with {devs}"))
        elif lc.gpu_offload:
            checks.append(Check("llama.cpp GPU backend", "warn",
                                f"llama-cpp-python {lc.version} has a GPU backend but found no GPU device",
                                ("Check the driver and device permissions above; for ROCm also the gfx target.",)))
        else:
            advice = ((f"Rebuild it with ROCm (HIP): {HIP_BUILD.format(gfx=gfx)}", f"or with Vulkan: {VULKAN_BUILD}")
                      if amd else ((f"Rebuild it with Vulkan: {VULKAN_BUILD}",) if m.gpus else ()))
            checks.append(Check("llama.cpp GPU backend", "warn" if m.gpus else "info",
                                f"llama-cpp-python {lc.version} is a CPU-only build", advice))
    ort = m.runtimes.onnxruntime if m.runtimes else None
    if ort is not None:
        if ort.version is None:
            checks.append(Check("ONNX Runtime GPU provider", "fail", ort.error or "onnxruntime is not installed"))
        elif ort.gpu_working:
            checks.append(Check("ONNX Runtime GPU provider", "ok", ", ".join(ort.gpu_working)))
        else:
            listed = [p for p in ort.available if p not in ("CPUExecutionProvider", "AzureExecutionProvider")]
            detail = f"onnxruntime {ort.version}: CPU only" + (f" ({', '.join(listed)} listed but did not load)" if listed else "")
            checks.append(Check("ONNX Runtime GPU provider", "info", detail,
                                ("The embedder is small and fast on the CPU; a GPU needs AMD's onnxruntime build "
                                 "with the MIGraphX provider for your ROCm version.",) if amd else ()))
    return checks


def _override_advice(m: Machine, g: GpuInfo) -> list[str]:
    """What an override variable already set does to this GPU, and to the others when it is process-wide."""
    if not g.runs_as or g.runs_as == g.gfx_target:
        return []
    env = dict(m.rocm_env)
    own = rocm.per_device_variable(g.kfd_node or 0)
    variable = own if own in env else OVERRIDE_ENV
    text = f"{variable}={env.get(own) or m.hsa_override_env} is set: ROCm runs this {g.gfx_target} as {g.runs_as}"
    fix = _hide_value(m)
    hide = f" and hide the GPUs ROCm cannot run instead: {ROCR_ENV}={fix}" if fix and variable == OVERRIDE_ENV else ""
    if not rocm.compatible(g.gfx_target or "", g.runs_as):
        return [text + f", whose kernels do not work on it. Unset {variable}{hide}."]
    if not g.rocm_runs:
        return [text + f", which {g.rocm_basis} does not support either."]
    if g.rocm_supported:
        return [text + f", although {g.rocm_basis} supports it as it is. Unset {variable}{hide}."]
    changed = _changed_by_override(m, g) if variable == OVERRIDE_ENV else []
    if not changed:
        return [text + "."]
    names = ", ".join(f"GPU{x.index} ({x.gfx_target} → {x.runs_as})" for x in changed)
    alone = (f"; {own}={m.hsa_override_env} would change this GPU alone (ROCm {m.rocm.version if m.rocm else ''})"
             if rocm.per_device_override(m.rocm) else "")
    return [text + f", but the variable applies to every GPU and also changes {names}, which ROCm supports "
            f"without it. Unset it{hide}{alone}."]


def _changed_by_override(m: Machine, g: GpuInfo) -> list[GpuInfo]:
    """The other visible GPUs, supported as they are, that a process-wide override makes run another target."""
    return [x for x in m.rocm_gpus if x.index != g.index and x.visible and x.rocm_supported
            and x.runs_as != x.gfx_target]


def _hide_advice(m: Machine, g: GpuInfo, sel: GpuSelection) -> list[str]:
    """For a GPU ROCm cannot run next to one it can: hide it, how, and the override that would use it too
    (process-wide only when no other GPU would change, else the per-device form where ROCm has it)."""
    hiding = sel.hiding
    assert hiding is not None
    kept = hiding.variables[ROCR_ENV]
    others = " and ".join(f"GPU{i}" for i in sel.used) or "the other GPU"
    hide = (f"Hearth hides it for itself; start other ROCm programs with {ROCR_ENV}={kept} (HIP programs also "
            f"honour {HIP_ENV}={kept} on its own).")
    if g.hsa_override:  # every GPU ROCm shows runs this target's kernels: the override changes no other
        return [f"{g.gfx_target} is not supported by {g.rocm_basis}. {hide}",
                f"To use it as well, start Hearth with {OVERRIDE_ENV}={g.hsa_override}: every GPU here can run "
                f"{rocm.target_from_override(g.hsa_override)}'s kernels, so it changes no other."]
    advice = [f"{g.gfx_target} is not supported by {g.rocm_basis}. Next to {others}, hide it rather than override "
              f"it ({OVERRIDE_ENV} applies to every GPU and would change {others} too): {hide}"]
    near = rocm.nearest_supported(g.gfx_target or "", m.rocm)
    if near is None:
        return advice
    small = f"; its {format_bytes(g.vram_total)} carve-out would take only a few layers" if g.kind == "integrated" else ""
    if rocm.per_device_override(m.rocm) and g.kfd_node is not None:
        variable = rocm.per_device_variable(g.kfd_node)
        advice.append(f"To use it as well, ROCm {m.rocm.version if m.rocm else ''} can override this GPU alone: "
                      f"{variable}={rocm.override_value(near)} (KFD node {g.kfd_node}) and no {ROCR_ENV}{small}.")
    elif m.rocm is not None and m.rocm.version:
        advice.append(f"ROCm {m.rocm.version} has no per-device override (HSA_OVERRIDE_GFX_VERSION_<node> came with "
                      "ROCm 6.2), so hiding it is the only way to keep ROCm working here.")
    else:
        advice.append("ROCm 6.2 and later can also override this GPU alone (HSA_OVERRIDE_GFX_VERSION_<node>); no "
                      "ROCm version was found here, so hide it.")
    return advice


def _unsupported_advice(m: Machine, g: GpuInfo) -> list[str]:
    """For a GPU ROCm cannot run with no GPU it can run beside it (or the user's variables keep both visible)."""
    gfx, basis = g.gfx_target or "", g.rocm_basis
    advice = []
    if m.rocm is not None and gfx in rocm.OFFICIAL:
        advice.append(f"ROCm {m.rocm.version or ''} has no kernels for {gfx}, but newer ROCm releases support it: "
                      "update ROCm.".replace("  ", " "))
    cards = [x for x in m.rocm_gpus if x.index != g.index and x.kind == "discrete" and x.visible is not False]
    near = rocm.nearest_supported(gfx, m.rocm)
    if g.kind == "integrated" and cards:  # the card is the GPU to use, whatever ROCm makes of it today
        keep = ",".join(str(x.rocm_index) for x in cards)
        names = " and ".join(f"GPU{x.index}" for x in cards)
        advice.append(f"{gfx} is not supported by {basis}. Next to {names}, hide this integrated GPU rather than "
                      f"override it ({OVERRIDE_ENV} applies to every GPU): start Hearth and other ROCm programs with "
                      f"{ROCR_ENV}={keep} (HIP programs also honour {HIP_ENV}={keep} on its own).")
    elif near is None:
        return advice + [f"{gfx} is not supported by {basis} and has no close supported target to borrow kernels "
                         f"from; use llama.cpp's Vulkan backend instead: {VULKAN_BUILD}"]
    elif g.hsa_override:
        advice.append(f"{gfx} is not supported by {basis}, but it can run {near}'s kernels: start Hearth with "
                      f"{OVERRIDE_ENV}={g.hsa_override} (for example `{OVERRIDE_ENV}={g.hsa_override} hearth ask ...`).")
    elif rocm.per_device_override(m.rocm) and g.kfd_node is not None:
        advice.append(f"{gfx} is not supported by {basis}, but it can run {near}'s kernels. The other GPUs need "
                      f"other targets, so override this one alone: {rocm.per_device_variable(g.kfd_node)}="
                      f"{rocm.override_value(near)} (KFD node {g.kfd_node}).")
    else:
        fix = _hide_value(m)
        advice.append(f"{gfx} is not supported by {basis}, and the GPUs here would need different overrides, which "
                      "this ROCm cannot give one GPU alone (HSA_OVERRIDE_GFX_VERSION_<node> came with ROCm 6.2)"
                      + (f": hide it with {ROCR_ENV}={fix}." if fix else "."))
    advice.append(f"Or use llama.cpp's Vulkan backend, which needs no ROCm support for {gfx}: {VULKAN_BUILD}")
    return advice


def _hide_value(m: Machine) -> str | None:
    """ROCR_VISIBLE_DEVICES that keeps the GPUs ROCm supports as they are, when some it does not are present."""
    kept = [g for g in m.rocm_gpus if g.rocm_supported]
    if not kept or len(kept) == len(m.rocm_gpus):
        return None
    return ",".join(str(g.rocm_index) for g in kept)

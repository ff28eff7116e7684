"""The checklist `hearth hw` prints: each thing that decides whether the GPU is used, in the order a
person would go through them (GPU seen, driver, ROCm, gfx target, /dev/kfd, llama.cpp's backend,
ONNX Runtime's provider, NPU), with a verdict (ok, warn, fail, info) and the advice for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inference.budget import format_bytes
from inference.hardware import OVERRIDE_ENV, VULKAN_BUILD, access_advice

if TYPE_CHECKING:
    from inference.hardware import Machine

HIP_BUILD = 'CMAKE_ARGS="-DGGML_HIP=on -DAMDGPU_TARGETS={gfx}" pip install --force-reinstall --no-cache-dir llama-cpp-python'


@dataclass(frozen=True)
class Check:
    """One line of the checklist: what was checked, the verdict (ok, warn, fail, info) and advice."""

    name: str
    verdict: str
    detail: str
    advice: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "verdict": self.verdict, "detail": self.detail, "advice": list(self.advice)}


def checklist(m: Machine) -> list[Check]:
    """The checks that decide whether the GPU is used, in the order a person would go through them."""
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
        for g in amd:
            if g.gfx_target is None:
                checks.append(Check(f"GPU{g.index} target", "fail", f"{g.name}: not visible to ROCm", g.advice))
            elif g.rocm_supported:
                checks.append(Check(f"GPU{g.index} {g.gfx_target} supported", "ok", f"{g.name}: yes, by {g.rocm_basis}",
                                    tuple(a for a in g.advice if a.startswith("Integrated"))))
            else:
                verdict = "warn" if g.hsa_override or m.hsa_override_env else "fail"
                checks.append(Check(f"GPU{g.index} {g.gfx_target} supported", verdict,
                                    f"{g.name}: not by {g.rocm_basis}"
                                    + (f"; try {OVERRIDE_ENV}={g.hsa_override}" if g.hsa_override else ""), g.advice))
        if m.kfd.usable:
            checks.append(Check("/dev/kfd access", "ok", "read-write"))
        else:
            checks.append(Check("/dev/kfd access", "fail", "missing" if not m.kfd.exists else "permission denied",
                                (access_advice(m.kfd),)))
        blocked = [r for r in m.render_nodes if r.exists and not r.usable]
        if blocked:
            checks.append(Check("render node access", "fail", ", ".join(r.path for r in blocked) + ": permission denied",
                                (access_advice(blocked[0]),)))

    lc = m.runtimes.llama_cpp if m.runtimes else None
    if lc is not None:
        gfx = next((g.gfx_target for g in amd if g.gfx_target), None) or "gfx1100"
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
    for n in m.npus:
        checks.append(Check(f"NPU {n.generation}", "ok" if n.usable else "warn",
                            f"{n.name} ({n.pci_id}, driver {n.driver or 'none'}"
                            + (f", {n.device_node}" if n.device_node else "") + ")", n.advice))
    return checks

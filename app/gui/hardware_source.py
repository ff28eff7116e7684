"""What the hardware panel shows: the JSON of `hearth hw --json`, made by the same functions (no Qt here).

    inference.checklist.report()      gpus (each with role, role_reason, advice), npus, cpu, ram, runtimes,
                                      driver, rocm, gpu_selection (what Hearth hid for itself), checks, ...
    + "plan":  MemoryPlan.to_json()   the chat model's memory plan on this machine (None without a model)
    + "plan_error": str | None        why there is no plan
    + "check_plan": MemoryPlan.to_json()   the answer checker's plan, beside the chat model's (None without a
                                      checker of its own, or one not prepared yet)
    + "check_actual": LoadReport.to_json()  what llama.cpp allocated for the checker, once it is loaded (else None)
    + "actual": LoadReport.to_json()  what llama.cpp really allocated, once the model is loaded (else None)
    + "engine": EngineChoice.to_json()  the llama.cpp engine this process runs and why (None: not chosen)
    + "vulkan_devices": [VulkanDevice.to_json()]  the Vulkan devices the loader lists
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inference.errors import HearthError


def snapshot(
    *,
    model_path: Path | None = None,
    n_ctx: int = 4096,
    n_gpu_layers: int | None = None,
    load_report: Any = None,
    check_path: Path | None = None,
    check_report: Any = None,
) -> dict[str, Any]:
    """Detect the machine (HEARTH_SYSFS_ROOT is honoured) and plan the model on it, and the answer checker
    (`check_path`, with what llama.cpp allocated for it once loaded: `check_report`) beside it."""
    from inference.checklist import plan_check, report
    from inference.gpu_select import hide_unusable_gpus
    from inference.hardware import detect

    from app.hw import checker_plan

    hide_unusable_gpus()  # as Hearth does before its runtimes start: the probe below loads llama.cpp
    machine = detect()
    out = report(machine)
    out["plan"] = out["check_plan"] = None
    out["plan_error"] = None
    out["actual"] = load_report.to_json() if load_report is not None else None
    out["check_actual"] = check_report.to_json() if check_report is not None else None
    from app.hw import engine_facts

    choice, vulkan = engine_facts()
    out["engine"] = choice.to_json() if choice is not None else None
    out["vulkan_devices"] = [d.to_json() for d in vulkan.devices]
    if model_path is not None:
        try:
            plan = machine.plan(model_path, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers)
        except (HearthError, OSError, ValueError) as exc:
            out["plan_error"] = str(exc)
        else:
            out["plan"] = plan.to_json()
            out["checks"].append(plan_check(plan).to_json())
            checker = None if check_path is None else checker_plan(
                machine, check_path, plan, n_gpu_layers=n_gpu_layers, chat_loaded=load_report is not None)
            if checker is not None:
                out["check_plan"] = checker.to_json()
                out["checks"].append(plan_check(checker, "checker fits").to_json())
    return out

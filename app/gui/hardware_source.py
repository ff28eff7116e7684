"""What the hardware panel shows: the JSON of `hearth hw --json`, made by the same functions (no Qt here).

    machine.to_json()                 gpus, npus, cpu, ram, runtimes, driver, rocm, checks, ...
    + "plan":  MemoryPlan.to_json()   the chat model's memory plan on this machine (None without a model)
    + "plan_error": str | None        why there is no plan
    + "actual": LoadReport.to_json()  what llama.cpp really allocated, once the model is loaded (else None)
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
) -> dict[str, Any]:
    """Detect the machine (HEARTH_SYSFS_ROOT is honoured) and plan the model on it."""
    from app import hw
    from inference.hardware import detect

    machine = detect()
    out = machine.to_json()
    out["plan"] = None
    out["plan_error"] = None
    out["actual"] = load_report.to_json() if load_report is not None else None
    if model_path is not None:
        try:
            plan = machine.plan(model_path, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers)
        except (HearthError, OSError, ValueError) as exc:
            out["plan_error"] = str(exc)
        else:
            out["plan"] = plan.to_json()
            out["checks"].append(hw.plan_check(plan).to_json())
    return out

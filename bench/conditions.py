"""What every benchmark records about the machine it ran on, and when a run is too noisy to quote.

A ratio measured on a loaded machine does not hold (a baseline slowed by other programs makes Hearth look
faster than it is), so each benchmark prints `machine()` with its figures and checks its baseline's rounds
with `noisy()`: a run whose baseline rounds vary by more than 15 % is marked noisy and its ratio not quoted.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Any

NOISE_LIMIT = 0.15  # the spread of a baseline's rounds (max/min - 1) beyond which a run is noisy
QUIET_LOAD = 1.5  # on 2 cores: a load average above this means other work shares the CPUs


def load_average() -> float | None:
    """The 1-minute load average, or None where the system has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine() -> dict[str, Any]:
    """The conditions of a run: CPUs this process may use, the CPU model, and the load before and after."""
    return {
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_average": load_average(),
    }


def spread(times: Sequence[float]) -> float:
    """How far apart a series of round times is: slowest / fastest - 1 (0 for fewer than two rounds)."""
    values = [t for t in times if t > 0]
    if len(values) < 2:
        return 0.0
    return max(values) / min(values) - 1.0


def noisy(baseline_times: Sequence[float], *, load: float | None = None, limit: float = NOISE_LIMIT) -> bool:
    """Whether a run must not be quoted: its baseline rounds spread more than `limit`, or the machine was busy."""
    return spread(baseline_times) > limit or (load is not None and load > QUIET_LOAD)


def verdict(baseline_times: Sequence[float], *, load_before: float | None, load_after: float | None) -> dict[str, Any]:
    """The fields a benchmark's JSON carries about its own reliability."""
    loads = [x for x in (load_before, load_after) if x is not None]
    worst = max(loads) if loads else None
    return {
        "baseline_spread": round(spread(baseline_times), 3),
        "load_before": load_before,
        "load_after": load_after,
        "noisy": noisy(baseline_times, load=worst),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()

"""What every benchmark records about the machine it ran on, and when a run is too noisy to quote.

A ratio measured on a loaded machine does not hold (a baseline slowed by other programs makes Hearth look
faster than it is), so each benchmark prints `machine()` with its figures and checks its baseline's rounds
with `noisy()`: a run whose baseline rounds vary by more than 15 % is marked noisy and its ratio not quoted.

Other programs are judged by the load average before a run and by `OthersCpu` during it: the CPU time the
whole machine used less the benchmark's own (its process and the workers it names). The load average after
a run counts the benchmark's own threads, so it is recorded but never judged.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable, Sequence
from typing import Any

NOISE_LIMIT = 0.15  # the spread of a baseline's rounds (max/min - 1) beyond which a run is noisy
QUIET_LOAD = 1.5  # on 2 cores: a load average above this means other work shares the CPUs
OTHERS_LIMIT = 0.5  # CPUs other programs may keep busy, on average during the rounds, in a run that is quoted


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


def process_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds a running process has used so far (/proc/PID/stat), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        tick = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / tick  # utime and stime: fields 14 and 15 of stat
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class OthersCpu:
    """How many CPUs other programs kept busy, on average, from its creation to `read()` (Linux; None elsewhere).

    The machine's busy time comes from /proc/stat (`inference.cpus.CpuMeter`, which leaves this process's
    own CPU time out); the workers named here (a baseline run in a process of its own) are left out too, so
    the benchmark's own threads never count as other programs.
    """

    def __init__(self, *, workers: Iterable[int] = ()) -> None:
        from inference.cpus import CpuMeter

        self._meter = CpuMeter()
        self._started = time.monotonic()
        self._workers = {pid: process_cpu_seconds(pid) for pid in workers}

    @property
    def cpus(self) -> int:
        """The CPUs this process may use."""
        return self._meter.cpus

    def read(self) -> float | None:
        """CPUs other programs used on average since the meter was made (rounded to 0.01), or None."""
        free = self._meter.free_cpus(min_window=0.0)
        wall = time.monotonic() - self._started
        if free is None or wall <= 0:
            return None
        workers = 0.0
        for pid, before in self._workers.items():
            now = process_cpu_seconds(pid)
            if before is not None and now is not None:
                workers += max(0.0, now - before)
        return others_cpu(self._meter.cpus, free, workers / wall)


def others_cpu(cpus: float, free: float, workers: float = 0.0) -> float:
    """CPUs other programs used: those not left free, less the benchmark's own workers' share (never below 0)."""
    return round(max(0.0, cpus - free - workers), 2)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()

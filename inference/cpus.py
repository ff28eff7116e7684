"""How many CPUs and how much memory a model may use: `default_threads`, `CpuMeter` (CPUs other programs leave
free, followed by `LlamaCppModel`'s threads) and `available_memory`."""

from __future__ import annotations

import os
import time


def default_threads() -> int:
    """Threads for generation: one per physical core, guessed as half the CPUs this process may use.

    Generation threads wait on each other at every step; more threads than free cores (hyperthreads,
    or cores other programs are busy on) make every step wait for the slowest, so fewer is safer.
    """
    return max(1, _usable_cpus() // 2)


class CpuMeter:
    """How many CPUs other programs left free since the last reading (Linux /proc/stat; None elsewhere).

    llama.cpp's threads wait for each other at every step of generation; when other programs occupy the
    cores, a descheduled thread stalls all the others, and two threads on two busy cores can be ten times
    slower than one. The meter subtracts this process's own CPU time, so Hearth's earlier answers do not
    count as load.
    """

    def __init__(self) -> None:
        self.cpus = _usable_cpus()
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last = self._snapshot()

    def _snapshot(self) -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat", encoding="ascii") as fh:
                fields = [int(x) for x in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        busy = (sum(fields[:8]) - idle) / self._tick  # user..steal, without guest (already in user)
        own = sum(os.times()[:2])
        return time.monotonic(), busy, own

    def free_cpus(self, *, min_window: float = 0.25) -> float | None:
        """CPUs not used by other programs since the previous call (at least `min_window` seconds ago)."""
        now = self._snapshot()
        last = self._last
        if now is None or last is None:
            return None
        wall = now[0] - last[0]
        if wall < min_window:
            return None
        self._last = now
        others = max(0.0, (now[1] - last[1]) - (now[2] - last[2])) / wall
        return max(0.0, self.cpus - others)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory the system can still give out (Linux MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None

"""The host around the GPUs, read under a root like everything in `inference.hardware`: the CPU, RAM,
kernel drivers, whether this user may open a device node, and the small readers of sysfs files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CpuInfo:
    """The CPU: model name, physical cores, threads, and the instruction-set features llama.cpp uses."""

    model: str
    cores: int
    threads: int
    features: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "cores": self.cores, "threads": self.threads, "features": list(self.features)}


@dataclass(frozen=True)
class RamInfo:
    """RAM in bytes: total, and what the kernel calls available."""

    total: int | None
    available: int | None

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "available": self.available}


@dataclass(frozen=True)
class DriverInfo:
    """Kernel drivers: amdgpu (in-kernel, or AMD's DKMS package with a version), amdxdna, the kernel release."""

    amdgpu_loaded: bool
    amdgpu_version: str | None
    amdxdna_loaded: bool
    kernel: str | None

    def to_json(self) -> dict[str, Any]:
        return {"amdgpu_loaded": self.amdgpu_loaded, "amdgpu_version": self.amdgpu_version,
                "amdxdna_loaded": self.amdxdna_loaded, "kernel": self.kernel}


@dataclass(frozen=True)
class DeviceAccess:
    """Whether this user can open a device node read-write, and why not."""

    path: str
    exists: bool
    usable: bool
    group: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "exists": self.exists, "usable": self.usable, "group": self.group}


def read_cpu(root: Path, real: bool) -> CpuInfo:
    """The CPU from /proc/cpuinfo: model, physical cores, threads and the instruction sets llama.cpp uses."""
    text = read_text(root / "proc/cpuinfo") or ""
    model = ""
    threads = 0
    cores: set[tuple[str, str]] = set()
    phys = core = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "processor":
            threads += 1
        elif key in ("model name", "Model", "Hardware", "cpu model") and not model:
            model = value
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
            cores.add((phys, core))
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    if real:
        threads = threads or (os.cpu_count() or 1)
        if not model:
            import platform

            model = platform.processor() or platform.machine()
    interesting = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "asimddp", "i8mm", "sve")
    return CpuInfo(model=model or "unknown", cores=len(cores) or threads, threads=threads,
                   features=tuple(f for f in interesting if f in flags))


def read_ram(root: Path) -> RamInfo:
    """Total and available RAM from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in (read_text(root / "proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return RamInfo(total=values.get("MemTotal"), available=values.get("MemAvailable", values.get("MemFree")))


def read_driver(root: Path) -> DriverInfo:
    """Which kernel modules are loaded (amdgpu, amdxdna) and the kernel release."""
    module = root / "sys/module/amdgpu"
    return DriverInfo(
        amdgpu_loaded=module.is_dir(),
        amdgpu_version=read_text(module / "version"),  # only AMD's DKMS driver has one
        amdxdna_loaded=(root / "sys/module/amdxdna").is_dir(),
        kernel=read_text(root / "proc/sys/kernel/osrelease"),
    )


class AccessCheck:
    """Read-write checks on device nodes: os.access on the real root, mode bits on a fixture tree."""

    def __init__(self, root: Path, real: bool, identity: tuple[int, Sequence[int]] | None) -> None:
        self.root = root
        self.real = real and identity is None
        if identity is None:
            identity = (os.geteuid(), tuple(set(os.getgroups()) | {os.getegid()})) if hasattr(os, "geteuid") else (0, ())
        self.uid, self.gids = identity[0], set(identity[1])

    def check(self, rel: str) -> DeviceAccess:
        """Whether the node at `rel` (under the root) exists and this user can open it read-write."""
        path = self.root / rel
        shown = "/" + rel
        try:
            st = path.stat()
        except OSError:
            return DeviceAccess(shown, False, False)
        group = self._group(st.st_gid)
        if self.real:
            ok = os.access(path, os.R_OK | os.W_OK)
        elif self.uid == 0:
            ok = True
        elif st.st_uid == self.uid:
            ok = st.st_mode & 0o600 == 0o600
        elif st.st_gid in self.gids:
            ok = st.st_mode & 0o060 == 0o060
        else:
            ok = st.st_mode & 0o006 == 0o006
        return DeviceAccess(shown, True, ok, group)

    def _group(self, gid: int) -> str | None:
        if self.real:
            try:
                import grp

                return grp.getgrgid(gid).gr_name
            except (ImportError, KeyError):
                return str(gid)
        for line in (read_text(self.root / "etc/group") or "").splitlines():
            parts = line.split(":")
            if len(parts) >= 3 and parts[2] == str(gid):
                return parts[0]
        return str(gid)


# --- small readers ---------------------------------------------------------------------------


def read_text(path: Path) -> str | None:
    """A sysfs file's text, stripped; None when it is missing, unreadable or empty."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    """A file holding a decimal number, or None."""
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_hex(path: Path) -> int | None:
    """A file holding a hex number (0x1002), or None."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def link_name(path: Path) -> str | None:
    """The last part of where a symlink points (a PCI slot, a driver name), or None."""
    try:
        if path.is_symlink():
            name = Path(os.readlink(path)).name
            if name not in ("", ".", ".."):
                return name
        return path.resolve().name if path.exists() else None
    except OSError:
        return None

"""What ROCm supports: gfx target names, the official list, and the override that makes a near chip work.

ROCm's math libraries (rocBLAS, hipBLASLt) ship precompiled kernels for a fixed set of gfx targets.
A chip outside that set loads no kernels and llama.cpp falls back to the CPU, usually with a
bare "no kernel image" or "offloaded 0/N layers". A chip of the same family as a supported one can
run that one's kernels when the HSA runtime is told to pretend: `HSA_OVERRIDE_GFX_VERSION=10.3.0`
makes an RX 6700 XT (gfx1031) use gfx1030's kernels, `11.0.0` does the same for RDNA3 APUs
(gfx1103). Where no close target exists (RDNA1, Polaris), llama.cpp's Vulkan backend is the way.

The override applies to every GPU of the process; from ROCm 6.2 `HSA_OVERRIDE_GFX_VERSION_<node>` names
one GPU by its KFD topology node. `ROCR_VISIBLE_DEVICES` (indices in KFD order, or `GPU-<unique id>`) and
then `HIP_VISIBLE_DEVICES` (indices into what ROCR left) decide which GPUs a process sees at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# ROCm's Linux support matrix (ROCm 6.4 – 7.x): Instinct, Radeon PRO and Radeon targets AMD lists.
OFFICIAL = frozenset({
    "gfx908", "gfx90a", "gfx942", "gfx950",  # MI100, MI200, MI300, MI350
    "gfx1030",  # Radeon PRO W6800 / V620, RX 6800–6950
    "gfx1100", "gfx1101",  # RX 7900 / 7800 / 7700, PRO W7900 / W7800 / W7700
    "gfx1151",  # Ryzen AI Max (Strix Halo), ROCm 6.4.1+
    "gfx1200", "gfx1201",  # RX 9060 / 9070, ROCm 6.4.1+
})
# Targets that have kernels in ROCm's libraries without being on the official list.
UNOFFICIAL = frozenset({"gfx900", "gfx906", "gfx1010", "gfx1012", "gfx1102"})

# For a chip without kernels: the supported target whose kernels it can run, in order of preference.
_NEAREST: dict[str, tuple[str, ...]] = {
    **{g: ("gfx1030",) for g in ("gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036")},
    **{g: ("gfx1100", "gfx1101", "gfx1102") for g in ("gfx1101", "gfx1102", "gfx1103")},
    **{g: ("gfx1151", "gfx1100") for g in ("gfx1150", "gfx1152", "gfx1153")},
    "gfx1151": ("gfx1100",),
    **{g: ("gfx1201", "gfx1200") for g in ("gfx1200", "gfx1201")},
    **{g: ("gfx900",) for g in ("gfx902", "gfx909", "gfx90c", "gfx912")},
    **{g: ("gfx942",) for g in ("gfx940", "gfx941")},
}
# Families where no override is known to work: Vulkan is the advice.
_NO_OVERRIDE = ("gfx6", "gfx7", "gfx8", "gfx101")

OVERRIDE_ENV = "HSA_OVERRIDE_GFX_VERSION"
ROCR_VISIBLE_ENV = "ROCR_VISIBLE_DEVICES"  # ROCm's runtime: indices in KFD order, or GPU-<unique id>
HIP_VISIBLE_ENV = "HIP_VISIBLE_DEVICES"  # HIP: indices into what ROCR_VISIBLE_DEVICES left visible
# ROCm 6.2 reads HSA_OVERRIDE_GFX_VERSION_<KFD node> first (libhsakmt's topology.c, "per-node override"):
# one GPU can borrow another target's kernels without changing the others.
PER_DEVICE_OVERRIDE_SINCE = (6, 2)

_GFX = re.compile(r"^gfx(\d+)([0-9a-f])([0-9a-f])$")


@dataclass(frozen=True)
class RocmInstall:
    """A ROCm installation found on disk: where, which version, and which gfx targets its rocBLAS has."""

    path: str
    version: str | None
    targets: tuple[str, ...]
    hip_runtime: bool


def gfx_name(target_version: int) -> str:
    """KFD's `gfx_target_version` (major·10000 + minor·100 + stepping) as a name: 110000 → gfx1100, 90010 → gfx90a."""
    major, minor, step = target_version // 10000, (target_version // 100) % 100, target_version % 100
    return f"gfx{major}{minor:x}{step:x}"


def override_value(gfx: str) -> str:
    """The `HSA_OVERRIDE_GFX_VERSION` value that names a target: gfx1030 → 10.3.0, gfx90a → 9.0.10."""
    m = _GFX.match(gfx)
    if not m:
        raise ValueError(f"not a gfx target name: {gfx!r}")
    return f"{int(m.group(1))}.{int(m.group(2), 16)}.{int(m.group(3), 16)}"


def target_from_override(value: str) -> str | None:
    """The gfx target an `HSA_OVERRIDE_GFX_VERSION` value selects (11.0.0 → gfx1100), or None."""
    parts = value.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    major, minor, step = (int(p) for p in parts)
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def per_device_variable(kfd_node: int) -> str:
    """The override variable of one GPU: HSA_OVERRIDE_GFX_VERSION_<its KFD topology node> (the CPU is node 0)."""
    return f"{OVERRIDE_ENV}_{kfd_node}"


def per_device_override(install: RocmInstall | None) -> bool:
    """Whether the installed ROCm reads the per-device override (6.2 and later); False when its version is unknown."""
    if install is None or not install.version:
        return False
    parts = re.findall(r"\d+", install.version)[:2]
    return len(parts) == 2 and (int(parts[0]), int(parts[1])) >= PER_DEVICE_OVERRIDE_SINCE


def compatible(gfx: str, target: str) -> bool:
    """Whether a `gfx` chip runs `target`'s kernels correctly: its own, its family's (same major and minor
    version from RDNA on: gfx1036 → gfx1030) or a target it is known to borrow from; gfx1100 → gfx1030 is not."""
    if target == gfx or target in _NEAREST.get(gfx, ()):
        return True
    a, b = _GFX.match(gfx), _GFX.match(target)  # RDNA families only: gfx9 chips of one "minor" differ a lot
    same_family = bool(a and b and int(a.group(1)) >= 10 and a.group(1, 2) == b.group(1, 2))
    return same_family and not gfx.startswith(_NO_OVERRIDE)


def visible_devices(count: int, rocr: str | None, hip: str | None,
                    uuids: tuple[str | None, ...] = ()) -> tuple[int, ...]:
    """ROCm's device indices (KFD order, 0 = first GPU) a process sees under ROCR_VISIBLE_DEVICES and then
    HIP_VISIBLE_DEVICES, in the order it sees them. Entries are indices or, for ROCR, `GPU-<unique id>`;
    unknown entries are skipped. Unset (or blank) variables hide nothing."""
    order = list(range(count))
    if rocr and rocr.strip():
        picked: list[int] = []
        for entry in (e.strip() for e in rocr.split(",")):
            index = _device_entry(entry, count, uuids)
            if index is not None and index not in picked:
                picked.append(index)
        order = picked
    if hip and hip.strip():
        picked = []
        for entry in (e.strip() for e in hip.split(",")):
            if entry.isdigit() and int(entry) < len(order) and order[int(entry)] not in picked:
                picked.append(order[int(entry)])
        order = picked
    return tuple(order)


def _device_entry(entry: str, count: int, uuids: tuple[str | None, ...]) -> int | None:
    if entry.isdigit():
        return int(entry) if int(entry) < count else None
    if entry.upper().startswith("GPU-"):
        want = entry[4:].lower()
        for i, uid in enumerate(uuids[:count]):
            if uid and uid.lower() == want:
                return i
    return None


def is_supported(gfx: str, install: RocmInstall | None) -> tuple[bool, str]:
    """Whether ROCm runs this target, and on what authority: the installed rocBLAS, else the official list."""
    if install is not None and install.targets:
        return gfx in install.targets, f"ROCm {install.version or ''} as installed".replace("  ", " ")
    return gfx in OFFICIAL, "the official ROCm support list"


def nearest_supported(gfx: str, install: RocmInstall | None) -> str | None:
    """The supported target whose kernels this chip can run with an override, or None."""
    if gfx.startswith(_NO_OVERRIDE):
        return None
    available = set(install.targets) if install is not None and install.targets else OFFICIAL | UNOFFICIAL
    for candidate in _NEAREST.get(gfx, ()):
        if candidate != gfx and candidate in available:
            return candidate
    return None


def find_rocm(root: Path, env_path: str | None = None) -> RocmInstall | None:
    """Find a ROCm installation under `root` (ROCM_PATH, /opt/rocm, the newest /opt/rocm-*)."""
    root = Path(root)
    candidates: list[Path] = []
    if env_path:
        candidates.append(root / env_path.lstrip("/"))
    candidates.append(root / "opt/rocm")
    candidates.extend(sorted((root / "opt").glob("rocm-*"), reverse=True))
    for base in candidates:
        if not base.is_dir():
            continue
        version = _read(base / ".info/version")
        if version is None:
            m = re.search(r"rocm-(\d+(?:\.\d+)*)", str(base.resolve()))
            version = m.group(1) if m else None
        lib = base / "lib"
        targets = sorted({
            m.group(0)
            for f in (lib / "rocblas/library").glob("TensileLibrary*gfx*")
            if (m := re.search(r"gfx[0-9a-f]+", f.name))
        }, key=lambda g: (len(g), g))
        hip = any(lib.glob("libamdhip64.so*"))
        if version or targets or hip:
            return RocmInstall(path="/" + str(base.relative_to(root)), version=version.split("-")[0] if version else None,
                               targets=tuple(targets), hip_runtime=hip)
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None

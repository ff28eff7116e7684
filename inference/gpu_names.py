"""Marketing names of PCI devices: libdrm's amdgpu.ids, then pci.ids, then a built-in table.

libdrm's `amdgpu.ids` names AMD GPUs by device *and* revision (the same device id 744C is an
RX 7900 XTX, XT or GRE depending on the revision), so it is asked first. `pci.ids` (pciutils/hwdata)
names every vendor's devices by device id. The built-in table covers common AMD chips and NPUs for
machines that have neither file; anything else is shown by its PCI id.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

AMD, AMD_CPU, NVIDIA, INTEL = 0x1002, 0x1022, 0x10DE, 0x8086

AMDGPU_IDS = ("usr/share/libdrm/amdgpu.ids", "opt/amdgpu/share/libdrm/amdgpu.ids")
PCI_IDS = ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids", "usr/share/pci.ids")

# (vendor, device) → name, for machines without amdgpu.ids / pci.ids. Family names where one id
# covers several products.
BUILTIN: dict[tuple[int, int], str] = {
    # RDNA 4
    (AMD, 0x7550): "AMD Radeon RX 9070 / 9070 XT",
    (AMD, 0x7590): "AMD Radeon RX 9060 XT",
    # RDNA 3
    (AMD, 0x744C): "AMD Radeon RX 7900 XTX / 7900 XT / 7900 GRE",
    (AMD, 0x7448): "AMD Radeon PRO W7900",
    (AMD, 0x745E): "AMD Radeon PRO W7800",
    (AMD, 0x747E): "AMD Radeon RX 7800 XT / 7700 XT",
    (AMD, 0x7480): "AMD Radeon RX 7600 / 7600 XT",
    # RDNA 2
    (AMD, 0x73BF): "AMD Radeon RX 6800 / 6800 XT / 6900 XT",
    (AMD, 0x73A5): "AMD Radeon RX 6950 XT",
    (AMD, 0x73DF): "AMD Radeon RX 6700 XT / 6750 XT",
    (AMD, 0x73FF): "AMD Radeon RX 6600 / 6600 XT",
    (AMD, 0x743F): "AMD Radeon RX 6500 XT / 6400",
    # RDNA 1
    (AMD, 0x731F): "AMD Radeon RX 5700 / 5700 XT",
    # Instinct
    (AMD, 0x74A1): "AMD Instinct MI300X",
    (AMD, 0x74A0): "AMD Instinct MI300A",
    (AMD, 0x74A5): "AMD Instinct MI325X",
    (AMD, 0x740F): "AMD Instinct MI210",
    (AMD, 0x740C): "AMD Instinct MI250X / MI250",
    (AMD, 0x738C): "AMD Instinct MI100",
    (AMD, 0x66A1): "AMD Instinct MI50 / MI60",
    # integrated (APU) graphics
    (AMD, 0x1586): "AMD Radeon 8060S / 8050S (Strix Halo)",
    (AMD, 0x150E): "AMD Radeon 890M / 880M (Strix Point)",
    (AMD, 0x1114): "AMD Radeon 860M / 840M (Krackan Point)",
    (AMD, 0x15BF): "AMD Radeon 780M / 760M (Phoenix)",
    (AMD, 0x15C8): "AMD Radeon 740M (Phoenix 2)",
    (AMD, 0x1900): "AMD Radeon 780M / 760M (Hawk Point)",
    (AMD, 0x1901): "AMD Radeon 740M (Hawk Point 2)",
    (AMD, 0x1681): "AMD Radeon 680M / 660M (Rembrandt)",
    (AMD, 0x164E): "AMD Radeon Graphics (Raphael)",
    (AMD, 0x13C0): "AMD Radeon Graphics (Granite Ridge)",
    (AMD, 0x1506): "AMD Radeon 610M (Mendocino)",
    (AMD, 0x163F): "AMD Custom GPU 0405 (Van Gogh)",
    (AMD, 0x1638): "AMD Radeon Vega (Cezanne)",
    (AMD, 0x1636): "AMD Radeon Vega (Renoir)",
    (AMD, 0x164C): "AMD Radeon Vega (Lucienne)",
    (AMD, 0x15E7): "AMD Radeon Vega (Barcelo)",
    (AMD, 0x15D8): "AMD Radeon Vega (Picasso)",
    (AMD, 0x15DD): "AMD Radeon Vega (Raven Ridge)",
    # Ryzen AI NPUs
    (AMD_CPU, 0x1502): "AMD Ryzen AI NPU (XDNA)",
    (AMD_CPU, 0x17F0): "AMD Ryzen AI NPU (XDNA2)",
}

# Device ids of integrated GPUs: one way to tell an APU whose firmware reserved a large carve-out.
INTEGRATED_IDS = frozenset({
    0x1586, 0x150E, 0x1114, 0x15BF, 0x15C8, 0x1900, 0x1901, 0x1681, 0x164E, 0x13C0, 0x1506,
    0x163F, 0x1638, 0x1636, 0x164C, 0x15E7, 0x15D8, 0x15DD, 0x74A0,
})

VENDORS = {AMD: "AMD", AMD_CPU: "AMD", NVIDIA: "NVIDIA", INTEL: "Intel"}


def device_name(root: Path, vendor: int, device: int, revision: int | None = None) -> tuple[str, str]:
    """The best name for a PCI device and where it came from ('amdgpu.ids', 'pci.ids', 'built-in', 'pci id')."""
    root = Path(root)
    if vendor == AMD and revision is not None:
        name = _amdgpu_ids(str(root)).get((device, revision))
        if name:
            return name, "amdgpu.ids"
    name = _pci_ids(str(root), vendor).get(device)
    if name:
        vendor_name = VENDORS.get(vendor, "")
        return (f"{vendor_name} {name}".strip() if vendor_name and not name.startswith(vendor_name) else name), "pci.ids"
    name = BUILTIN.get((vendor, device))
    if name:
        return name, "built-in"
    return f"{VENDORS.get(vendor, 'PCI device')} {vendor:04x}:{device:04x}", "pci id"


@lru_cache(maxsize=8)
def _amdgpu_ids(root: str) -> dict[tuple[int, int], str]:
    """Parse libdrm's amdgpu.ids: lines of `DEVICE,\\tREVISION,\\tNAME` in hex, after a version line."""
    for rel in AMDGPU_IDS:
        path = Path(root) / rel
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        table: dict[tuple[int, int], str] = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split(",", 2)]
            if len(parts) != 3:
                continue  # the version line
            try:
                table[(int(parts[0], 16), int(parts[1], 16))] = parts[2]
            except ValueError:
                continue
        return table
    return {}


@lru_cache(maxsize=16)
def _pci_ids(root: str, vendor: int) -> dict[int, str]:
    """Device names of one vendor from pci.ids; prefers the bracketed marketing name when present."""
    want = f"{vendor:04x}"
    for rel in PCI_IDS:
        path = Path(root) / rel
        try:
            fh = path.open(encoding="utf-8", errors="replace")
        except OSError:
            continue
        table: dict[int, str] = {}
        with fh:
            inside = False
            for line in fh:
                if not line.strip() or line.startswith("#"):
                    continue
                if not line.startswith("\t"):
                    if inside:
                        break  # the next vendor: done
                    inside = line[:4].lower() == want
                    continue
                if inside and not line.startswith("\t\t"):
                    code, _, name = line.strip().partition(" ")
                    try:
                        table[int(code, 16)] = _marketing(name.strip())
                    except ValueError:
                        continue
        return table
    return {}


def _marketing(name: str) -> str:
    """'Navi 31 [Radeon RX 7900 XT/7900 XTX]' → 'Radeon RX 7900 XT/7900 XTX (Navi 31)'."""
    if name.endswith("]") and "[" in name:
        chip, _, rest = name.partition("[")
        return f"{rest[:-1]} ({chip.strip()})" if chip.strip() else rest[:-1]
    return name

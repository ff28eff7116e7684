"""The machine, made visible: AMD (and other) GPUs, Ryzen AI NPUs, CPU, RAM, drivers and ROCm, with a
verdict and advice for each, all read without root and without ROCm installed.

GPUs come from the KFD topology (`/sys/class/kfd/kfd/topology/nodes/*/properties`, what ROCm itself
enumerates: gfx target, PCI vendor/device, unique id; CPU nodes have target 0) matched to the DRM
cards (`/sys/class/drm/card*/device`: the same ids in hex, plus VRAM/GTT totals and use) the way
Ollama's `discover/amd_linux.go` does, by vendor, device and unique id; the DRM render minor breaks
ties between identical cards. GPUs the KFD does not list (other vendors, or AMD without ROCm's kernel
side) still appear from DRM. NPUs are `/sys/class/accel/accel*` devices bound to `amdxdna`, plus
any Ryzen AI PCI function left without a driver.

Every path is read under a root (`HEARTH_SYSFS_ROOT`, default `/`), so tests run on fixture trees
that copy real machines' layouts, symlinks included.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference import gpu_names, rocm
from inference.budget import GIB, MemoryPlan, OffloadTarget, embedder_footprint, format_bytes, plan_memory
from inference.runtimes import Runtimes, probe_runtimes

if TYPE_CHECKING:
    from inference.checklist import Check

SYSFS_ENV = "HEARTH_SYSFS_ROOT"
UNIFIED_MEMORY_ENV = "GGML_CUDA_ENABLE_UNIFIED_MEMORY"
OVERRIDE_ENV = "HSA_OVERRIDE_GFX_VERSION"

# gfx targets that only exist as integrated GPUs (APUs).
APU_TARGETS = frozenset({
    "gfx902", "gfx909", "gfx90c", "gfx912", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
})
IGPU_VRAM_LIMIT = 1 * GIB  # below this an AMD GPU's "VRAM" is a firmware carve-out (Ollama's rule too)
NPU_GENERATIONS = {0x1502: "XDNA", 0x17F0: "XDNA2"}  # PCI 1022:xxxx: Phoenix/Hawk Point, Strix/Krackan
_CARD = re.compile(r"^card(\d+)$")
VULKAN_BUILD = 'CMAKE_ARGS="-DGGML_VULKAN=on" pip install --force-reinstall --no-cache-dir llama-cpp-python'




@dataclass(frozen=True)
class GpuInfo:
    """One GPU with its memory, its ROCm verdict and what to do about it (sizes in bytes)."""

    index: int
    vendor: str
    name: str
    name_source: str
    pci_id: str  # "1002:744c"
    pci_slot: str | None  # "0000:03:00.0"
    revision: str | None
    gfx_target: str | None
    kind: str  # discrete | integrated
    vram_total: int | None
    vram_used: int | None
    gtt_total: int | None
    gtt_used: int | None
    driver: str | None
    render_node: str | None
    rocm_supported: bool | None
    rocm_basis: str | None
    hsa_override: str | None  # the HSA_OVERRIDE_GFX_VERSION to try, when one helps
    memory_pool: str  # vram | gtt: where llama.cpp's allocations for this GPU come from
    advice: tuple[str, ...] = ()

    @property
    def model_memory_free(self) -> int | None:
        """Free bytes of the pool models are loaded into."""
        total, used = (self.gtt_total, self.gtt_used) if self.memory_pool == "gtt" else (self.vram_total, self.vram_used)
        if total is None:
            return None
        return max(total - (used or 0), 0)

    @property
    def model_memory_total(self) -> int | None:
        return self.gtt_total if self.memory_pool == "gtt" else self.vram_total

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index, "vendor": self.vendor, "name": self.name, "name_source": self.name_source,
            "pci_id": self.pci_id, "pci_slot": self.pci_slot, "revision": self.revision,
            "gfx_target": self.gfx_target, "kind": self.kind,
            "vram_total": self.vram_total, "vram_used": self.vram_used,
            "gtt_total": self.gtt_total, "gtt_used": self.gtt_used,
            "driver": self.driver, "render_node": self.render_node,
            "rocm_supported": self.rocm_supported, "rocm_basis": self.rocm_basis,
            "hsa_override": self.hsa_override, "memory_pool": self.memory_pool,
            "model_memory_free": self.model_memory_free, "advice": list(self.advice),
        }


@dataclass(frozen=True)
class NpuInfo:
    """A Ryzen AI NPU: its PCI identity, driver and device node."""

    name: str
    pci_id: str
    pci_slot: str | None
    driver: str | None
    generation: str
    device_node: str | None
    usable: bool
    advice: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pci_id": self.pci_id, "pci_slot": self.pci_slot, "driver": self.driver,
                "generation": self.generation, "device_node": self.device_node, "usable": self.usable,
                "advice": list(self.advice)}


@dataclass(frozen=True)
class CpuInfo:
    model: str
    cores: int
    threads: int
    features: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "cores": self.cores, "threads": self.threads, "features": list(self.features)}


@dataclass(frozen=True)
class RamInfo:
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


@dataclass(frozen=True)
class Machine:
    """Everything `detect` found."""

    root: str
    gpus: tuple[GpuInfo, ...]
    npus: tuple[NpuInfo, ...]
    cpu: CpuInfo
    ram: RamInfo
    driver: DriverInfo
    rocm: rocm.RocmInstall | None
    kfd: DeviceAccess
    kfd_topology: bool
    runtimes: Runtimes | None
    hsa_override_env: str | None = None
    unified_memory_env: bool = False
    render_nodes: tuple[DeviceAccess, ...] = field(default=())

    @property
    def amd_gpus(self) -> tuple[GpuInfo, ...]:
        return tuple(g for g in self.gpus if g.vendor == "AMD")

    def best_gpu(self) -> GpuInfo | None:
        """The GPU a model should go to: AMD or NVIDIA with known memory, discrete first, then most free memory."""
        candidates = [g for g in self.gpus if g.vendor in ("AMD", "NVIDIA") and g.model_memory_free is not None]
        if not candidates:
            return None
        return max(candidates, key=lambda g: (g.kind == "discrete", g.model_memory_free or 0))

    def plan(self, path: Path, *, n_ctx: int = 4096, n_gpu_layers: int | None = None) -> MemoryPlan:
        """The memory plan of a model here: the best GPU as target, free RAM, the default embedder's share."""
        ort = self.runtimes.onnxruntime if self.runtimes else None
        on_gpu = bool(ort and ort.gpu_working)  # the embedder then takes its share of the same GPU
        return plan_memory(
            path,
            n_ctx=n_ctx,
            target=self.offload_target(),
            n_gpu_layers=n_gpu_layers,
            embedder=embedder_footprint(device="gpu" if on_gpu else "cpu"),
            ram_available=self.ram.available,
        )

    def offload_target(self) -> OffloadTarget | None:
        """The best GPU as a budget target, marked unusable when the installed llama.cpp has no backend for it."""
        gpu = self.best_gpu()
        if gpu is None:
            return None
        free = gpu.model_memory_free or 0
        backend = "cuda" if gpu.vendor == "NVIDIA" else "rocm"
        usable = True
        lc = self.runtimes.llama_cpp if self.runtimes else None
        if lc is not None:
            backends = [b.lower() for b in lc.gpu_backends]
            if "vulkan" in backends and not any(b in backends for b in ("rocm", "hip", "cuda")):
                backend = "vulkan"
            usable = lc.gpu_offload and bool(backends)
            gpu_devices = [d for d in lc.devices if d.kind in ("gpu", "igpu") and d.free]
            if len(gpu_devices) == 1 and gpu_devices[0].free:
                free = gpu_devices[0].free  # what llama.cpp itself will see
        return OffloadTarget(name=f"GPU{gpu.index} {gpu.name}", free=free, total=gpu.model_memory_total or free,
                             backend=backend, usable=usable, memory=gpu.memory_pool)

    def checks(self) -> list[Check]:
        """The readable checklist: each thing that decides whether the GPU is used, with a verdict."""
        from inference.checklist import checklist

        return checklist(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "npus": [n.to_json() for n in self.npus],
            "cpu": self.cpu.to_json(),
            "ram": self.ram.to_json(),
            "runtimes": self.runtimes.to_json() if self.runtimes else None,
            "driver": self.driver.to_json(),
            "rocm": None if self.rocm is None else {
                "path": self.rocm.path, "version": self.rocm.version, "gfx_targets": list(self.rocm.targets),
                "hip_runtime": self.rocm.hip_runtime},
            "device_access": [self.kfd.to_json(), *[r.to_json() for r in self.render_nodes]],
            "environment": {OVERRIDE_ENV: self.hsa_override_env, UNIFIED_MEMORY_ENV: self.unified_memory_env},
            "checks": [c.to_json() for c in self.checks()],
        }


def sysfs_root() -> Path:
    """The root all system paths are read under: HEARTH_SYSFS_ROOT, default `/`."""
    return Path(os.environ.get(SYSFS_ENV) or "/")


def detect(
    root: Path | str | None = None,
    *,
    runtimes: Runtimes | bool = True,
    identity: tuple[int, Sequence[int]] | None = None,
    env: Mapping[str, str] | None = None,
) -> Machine:
    """Describe this machine (or the fixture tree at `root`).

    `runtimes=True` probes llama.cpp and ONNX Runtime (and, on the real root, amdsmi and NVML);
    pass False to skip, or a `Runtimes` to use. `identity` is (uid, gids) for permission checks,
    default this process; `env` replaces os.environ for the variables that change the advice.
    """
    root = Path(root) if root is not None else sysfs_root()
    real = root.resolve() == Path("/")
    env = os.environ if env is None else env
    if runtimes is True:
        probed: Runtimes | None = probe_runtimes(vendor_libraries=real)
    elif runtimes is False:
        probed = None
    else:
        probed = runtimes
    override = (env.get(OVERRIDE_ENV) or "").strip() or None
    unified = (env.get(UNIFIED_MEMORY_ENV) or "").strip() not in ("", "0")

    driver = _driver(root)
    install = rocm.find_rocm(root, env.get("ROCM_PATH") if real else None)
    access = _Access(root, real, identity)
    kfd = access.check("dev/kfd")
    nodes = _kfd_nodes(root)
    cards = _drm_cards(root)
    nvml = {g.pci_slot: g for g in (probed.nvml if probed else ())}

    gpus: list[GpuInfo] = []
    used_cards: set[str] = set()
    render_nodes: list[DeviceAccess] = []
    for node in (n for n in nodes if n.get("gfx_target_version", 0)):
        card = _match(node, cards, used_cards)
        if card is not None:
            used_cards.add(card.name)
        gpus.append(_amd_gpu(len(gpus), root, node, card, install, override, unified, kfd, access, render_nodes))
    for card in cards:
        if card.name in used_cards or card.vendor not in gpu_names.VENDORS:
            continue  # matched already, or a display-only chip (a server BMC's ASPEED VGA)
        if card.vendor == gpu_names.AMD:
            gpus.append(_amd_gpu(len(gpus), root, None, card, install, override, unified, kfd, access, render_nodes,
                                 kfd_present=bool(nodes)))
        else:
            gpus.append(_other_gpu(len(gpus), root, card, nvml.pop(card.slot, None) if card.slot else None))
    for g in nvml.values():  # NVIDIA GPUs NVML knows but DRM does not show (nvidia-drm not loaded)
        gpus.append(GpuInfo(len(gpus), "NVIDIA", g.name, "nvml", g.pci_id, g.pci_slot, None, None, "discrete",
                            g.total, g.used, None, None, "nvidia", None, None, None, None, "vram"))

    return Machine(
        root=str(root),
        gpus=tuple(gpus),
        npus=tuple(_npus(root, driver)),
        cpu=_cpu(root, real),
        ram=_ram(root),
        driver=driver,
        rocm=install,
        kfd=kfd,
        kfd_topology=bool(nodes),
        runtimes=probed,
        hsa_override_env=override,
        unified_memory_env=unified,
        render_nodes=tuple(render_nodes),
    )


# --- GPUs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Card:
    name: str
    dev: Path
    slot: str | None
    vendor: int
    device: int
    revision: int | None
    unique_id: int | None
    render_minor: int | None
    driver: str | None


def _drm_cards(root: Path) -> list[_Card]:
    base = root / "sys/class/drm"
    cards = []
    try:
        entries = sorted(base.iterdir(), key=lambda p: int(m.group(1)) if (m := _CARD.match(p.name)) else -1)
    except OSError:
        return []
    for entry in entries:
        if not _CARD.match(entry.name):
            continue  # connectors (card0-DP-1), render nodes
        dev = entry / "device"
        vendor, device = _hex(dev / "vendor"), _hex(dev / "device")
        if vendor is None or device is None:
            continue
        minors = sorted(int(p.name[7:]) for p in (dev / "drm").glob("renderD*") if p.name[7:].isdigit())
        cards.append(_Card(
            name=entry.name,
            dev=dev,
            slot=_link_name(dev),
            vendor=vendor,
            device=device,
            revision=_hex(dev / "revision"),
            unique_id=_hex(dev / "unique_id"),
            render_minor=minors[0] if minors else None,
            driver=_link_name(dev / "driver"),
        ))
    return cards


def _kfd_nodes(root: Path) -> list[dict[str, int]]:
    base = root / "sys/class/kfd/kfd/topology/nodes"
    try:
        dirs = sorted((p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return []
    nodes = []
    for d in dirs:
        props: dict[str, int] = {"node": int(d.name)}
        text = _read(d / "properties") or ""
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2:
                try:
                    props[parts[0]] = int(parts[1])
                except ValueError:
                    continue
        nodes.append(props)
    return nodes


def _match(node: dict[str, int], cards: list[_Card], used: set[str]) -> _Card | None:
    """Ollama's matching: same vendor and device (KFD decimal, DRM hex), and unique id when KFD has one."""
    vendor, device, unique = node.get("vendor_id", 0), node.get("device_id", 0), node.get("unique_id", 0)
    found = [
        c for c in cards
        if c.name not in used
        and (not vendor or c.vendor == vendor)
        and (not device or c.device == device)
        and (not unique or c.unique_id is None or c.unique_id == unique)
    ]
    minor = node.get("drm_render_minor")
    for c in found:
        if minor and c.render_minor == minor:
            return c
    return found[0] if found else None


def _amd_gpu(index: int, root: Path, node: dict[str, int] | None, card: _Card | None,
             install: rocm.RocmInstall | None, override: str | None, unified: bool, kfd: DeviceAccess,
             access: _Access, render_nodes: list[DeviceAccess], *, kfd_present: bool = True) -> GpuInfo:
    vendor = card.vendor if card else node.get("vendor_id", gpu_names.AMD) if node else gpu_names.AMD
    device = card.device if card else (node or {}).get("device_id", 0)
    revision = card.revision if card else None
    name, source = _product_name(card) or gpu_names.device_name(root, vendor, device, revision)
    gfx = rocm.gfx_name(node["gfx_target_version"]) if node else None
    mem = {k: _int(card.dev / f"mem_info_{k}") if card else None for k in ("vram_total", "vram_used", "gtt_total", "gtt_used")}
    integrated = (gfx in APU_TARGETS) or device in gpu_names.INTEGRATED_IDS or (
        mem["vram_total"] is not None and mem["vram_total"] < IGPU_VRAM_LIMIT)
    kind = "integrated" if integrated else "discrete"
    pool = "gtt" if integrated and unified and mem["gtt_total"] else "vram"
    minor = (card.render_minor if card else None) or ((node or {}).get("drm_render_minor") or None)
    render = f"/dev/dri/renderD{minor}" if minor else None
    render_access = access.check(render.lstrip("/")) if render else None
    if render_access is not None:
        render_nodes.append(render_access)

    advice: list[str] = []
    supported: bool | None = None
    basis: str | None = None
    hsa: str | None = None
    if gfx is None:
        if not kfd_present:
            advice.append("ROCm cannot see this GPU: there is no KFD topology (/sys/class/kfd). The kernel may lack "
                          "HSA support, or this is a container started without --device /dev/kfd --device /dev/dri. "
                          "llama.cpp's Vulkan backend does not need the KFD.")
        else:
            advice.append("This GPU is not in the KFD topology, so ROCm cannot use it; llama.cpp's Vulkan backend can.")
    else:
        supported, basis = rocm.is_supported(gfx, install)
        effective = rocm.target_from_override(override) if override else None
        if effective:
            ok, _ = rocm.is_supported(effective, install)
            advice.append(f"{OVERRIDE_ENV}={override} is set: ROCm runs this {gfx} as {effective}"
                          + ("." if ok else f", which {basis} does not support either."))
        if not supported:
            near = rocm.nearest_supported(gfx, install)
            if near:
                hsa = rocm.override_value(near)
                if effective != near:
                    advice.append(f"{gfx} is not supported by {basis}, but it can run {near}'s kernels: start Hearth "
                                  f"with {OVERRIDE_ENV}={hsa} (for example `{OVERRIDE_ENV}={hsa} hearth ask ...`).")
                advice.append(f"Or use llama.cpp's Vulkan backend, which needs no ROCm support for {gfx}: {VULKAN_BUILD}")
            else:
                advice.append(f"{gfx} is not supported by {basis} and has no close supported target to borrow "
                              f"kernels from; use llama.cpp's Vulkan backend instead: {VULKAN_BUILD}")
    if not kfd.usable:
        advice.append(access_advice(kfd))
    elif render_access is not None and not render_access.usable:
        advice.append(access_advice(render_access))
    if card is None:
        advice.append("Its memory could not be read: no /sys/class/drm card matches it.")
    elif kind == "integrated":
        carve, gtt = format_bytes(mem["vram_total"]), format_bytes(mem["gtt_total"])
        if pool == "gtt":
            advice.append(f"Integrated GPU: {UNIFIED_MEMORY_ENV} is set, so llama.cpp loads models into shared "
                          f"system memory (GTT, {gtt}) rather than the {carve} carve-out.")
        else:
            advice.append(f"Integrated GPU: models go into its {carve} of dedicated memory (the firmware carve-out). "
                          f"To use the shared system memory (GTT, up to {gtt}) set {UNIFIED_MEMORY_ENV}=1, or raise "
                          "the UMA frame buffer size in the firmware setup.")
    return GpuInfo(
        index=index, vendor="AMD", name=name, name_source=source, pci_id=f"{vendor:04x}:{device:04x}",
        pci_slot=card.slot if card else None, revision=f"{revision:02x}" if revision is not None else None,
        gfx_target=gfx, kind=kind, vram_total=mem["vram_total"], vram_used=mem["vram_used"],
        gtt_total=mem["gtt_total"], gtt_used=mem["gtt_used"], driver=card.driver if card else None,
        render_node=render, rocm_supported=supported, rocm_basis=basis, hsa_override=hsa, memory_pool=pool,
        advice=tuple(advice),
    )


def _other_gpu(index: int, root: Path, card: _Card, nvml: Any) -> GpuInfo:
    vendor = gpu_names.VENDORS.get(card.vendor, f"{card.vendor:04x}")
    name, source = _product_name(card) or gpu_names.device_name(root, card.vendor, card.device, card.revision)
    if nvml is not None:
        name, source = nvml.name, "nvml"
    kind = "discrete" if card.vendor == gpu_names.NVIDIA or "Arc" in name else "integrated"
    advice: list[str] = []
    total = used = None
    if card.vendor == gpu_names.NVIDIA:
        if nvml is not None:
            total, used = nvml.total, nvml.used
        else:
            advice.append("Its memory is unknown: NVML (libnvidia-ml, part of the NVIDIA driver) was not found.")
    else:
        total, used = _int(card.dev / "mem_info_vram_total"), _int(card.dev / "mem_info_vram_used")
    return GpuInfo(
        index=index, vendor=vendor, name=name, name_source=source, pci_id=f"{card.vendor:04x}:{card.device:04x}",
        pci_slot=card.slot, revision=f"{card.revision:02x}" if card.revision is not None else None, gfx_target=None,
        kind=kind, vram_total=total, vram_used=used, gtt_total=None, gtt_used=None, driver=card.driver,
        render_node=f"/dev/dri/renderD{card.render_minor}" if card.render_minor else None, rocm_supported=None,
        rocm_basis=None, hsa_override=None, memory_pool="vram", advice=tuple(advice),
    )


def _product_name(card: _Card | None) -> tuple[str, str] | None:
    if card is None:
        return None
    name = _read(card.dev / "product_name")
    return (name, "product_name") if name else None


# --- NPUs, CPU, RAM, drivers -------------------------------------------------------------------


def _npus(root: Path, driver: DriverInfo) -> list[NpuInfo]:
    found: dict[str, NpuInfo] = {}
    for accel in sorted((root / "sys/class/accel").glob("accel*")):
        dev = accel / "device"
        vendor, device = _hex(dev / "vendor"), _hex(dev / "device")
        if vendor != gpu_names.AMD_CPU or device not in NPU_GENERATIONS:
            continue
        slot = _link_name(dev) or accel.name
        node = root / "dev/accel" / accel.name
        found[slot] = _npu(root, vendor, device, slot, _link_name(dev / "driver"),
                           f"/dev/accel/{accel.name}" if node.exists() else None, driver)
    for dev in sorted((root / "sys/bus/pci/devices").glob("*")):
        if dev.name in found or _hex(dev / "vendor") != gpu_names.AMD_CPU:
            continue
        device = _hex(dev / "device")
        if device in NPU_GENERATIONS:
            found[dev.name] = _npu(root, gpu_names.AMD_CPU, device, dev.name, _link_name(dev / "driver"), None, driver)
    return list(found.values())


def _npu(root: Path, vendor: int, device: int, slot: str, bound: str | None, node: str | None,
         driver: DriverInfo) -> NpuInfo:
    name, _ = gpu_names.device_name(root, vendor, device)
    if (vendor, device) in gpu_names.BUILTIN:
        name = gpu_names.BUILTIN[(vendor, device)]  # pci.ids calls these "Signal Processing Controller"
    advice: list[str] = []
    if bound != "amdxdna":
        advice.append(
            "The Ryzen AI NPU is present but the amdxdna driver is not bound to it"
            + (" (the module is loaded but did not take the device; check dmesg for its firmware)." if driver.amdxdna_loaded
               else ": amdxdna is part of Linux 6.14 and later; on older kernels install AMD's XDNA driver package.")
        )
    elif node is None:
        advice.append("amdxdna is bound but /dev/accel has no node for it; check udev rules and dmesg.")
    else:
        advice.append("Ready. Hearth runs its models on the GPU or CPU; the NPU is listed for completeness.")
    return NpuInfo(name=name, pci_id=f"{vendor:04x}:{device:04x}", pci_slot=slot, driver=bound,
                   generation=NPU_GENERATIONS[device], device_node=node, usable=bound == "amdxdna" and node is not None,
                   advice=tuple(advice))


def _cpu(root: Path, real: bool) -> CpuInfo:
    text = _read(root / "proc/cpuinfo") or ""
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


def _ram(root: Path) -> RamInfo:
    values: dict[str, int] = {}
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return RamInfo(total=values.get("MemTotal"), available=values.get("MemAvailable", values.get("MemFree")))


def _driver(root: Path) -> DriverInfo:
    module = root / "sys/module/amdgpu"
    return DriverInfo(
        amdgpu_loaded=module.is_dir(),
        amdgpu_version=_read(module / "version"),  # only AMD's DKMS driver has one
        amdxdna_loaded=(root / "sys/module/amdxdna").is_dir(),
        kernel=_read(root / "proc/sys/kernel/osrelease"),
    )


class _Access:
    """Read-write checks on device nodes: os.access on the real root, mode bits on a fixture tree."""

    def __init__(self, root: Path, real: bool, identity: tuple[int, Sequence[int]] | None) -> None:
        self.root = root
        self.real = real and identity is None
        if identity is None:
            identity = (os.geteuid(), tuple(set(os.getgroups()) | {os.getegid()})) if hasattr(os, "geteuid") else (0, ())
        self.uid, self.gids = identity[0], set(identity[1])

    def check(self, rel: str) -> DeviceAccess:
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
        for line in (_read(self.root / "etc/group") or "").splitlines():
            parts = line.split(":")
            if len(parts) >= 3 and parts[2] == str(gid):
                return parts[0]
        return str(gid)


def access_advice(access: DeviceAccess) -> str:
    """What to do when a device node is missing or not accessible."""
    if not access.exists:
        return (f"{access.path} is missing: the amdgpu driver's compute interface is not there (a kernel without "
                "HSA support, or a container started without --device /dev/kfd --device /dev/dri).")
    group = access.group if access.group and not access.group.isdigit() else "render"
    return (f"You cannot open {access.path} (it belongs to group '{group}'): run `sudo usermod -aG {group},video $USER`, "
            "then log out and back in.")


# --- small readers ---------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _hex(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def _link_name(path: Path) -> str | None:
    """The last part of where a symlink points (a PCI slot, a driver name), or None."""
    try:
        if path.is_symlink():
            name = Path(os.readlink(path)).name
            if name not in ("", ".", ".."):
                return name
        return path.resolve().name if path.exists() else None
    except OSError:
        return None

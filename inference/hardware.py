"""The machine, made visible: AMD (and other) GPUs, Ryzen AI NPUs, CPU, RAM, drivers and ROCm, all read
without root and without ROCm installed. Facts only: the verdicts and advice are `inference.checklist`'s,
which GPUs Hearth uses or hides (and why) `inference.gpu_select`'s.

GPUs come from the KFD topology (`/sys/class/kfd/kfd/topology/nodes/*/properties`, what ROCm itself
enumerates: gfx target, PCI vendor/device, unique id; CPU nodes have target 0) matched to the DRM
cards (`/sys/class/drm/card*/device`: the same ids in hex, plus VRAM/GTT totals and use) the way
Ollama's `discover/amd_linux.go` does, by vendor, device and unique id; the DRM render minor breaks
ties between identical cards. The KFD node order is ROCm's device order: ROCR_VISIBLE_DEVICES=1 names the
second GPU node, and HSA_OVERRIDE_GFX_VERSION_<n> the GPU on node n. GPUs the KFD does not list (other
vendors, or AMD without ROCm's kernel side) still appear from DRM. NPUs are `/sys/class/accel/accel*`
devices bound to `amdxdna`, plus any Ryzen AI PCI function left without a driver.

Every path is read under a root (`HEARTH_SYSFS_ROOT`, default `/`), so tests run on fixture trees
that copy real machines' layouts, symlinks included.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inference import gpu_names, rocm
from inference.budget import GIB, EmbedderFootprint, MemoryPlan, OffloadTarget, embedder_footprint, plan_memory
from inference.host import (
    AccessCheck,
    CpuInfo,
    DeviceAccess,
    DriverInfo,
    RamInfo,
    link_name,
    read_cpu,
    read_driver,
    read_hex,
    read_int,
    read_ram,
    read_text,
)
from inference.runtimes import Runtimes, probe_runtimes

__all__ = ["CpuInfo", "DeviceAccess", "DriverInfo", "GpuInfo", "Machine", "NpuInfo", "RamInfo", "detect", "sysfs_root"]

SYSFS_ENV = "HEARTH_SYSFS_ROOT"
UNIFIED_MEMORY_ENV = "GGML_CUDA_ENABLE_UNIFIED_MEMORY"
OVERRIDE_ENV = rocm.OVERRIDE_ENV

# gfx targets that only exist as integrated GPUs (APUs).
APU_TARGETS = frozenset({
    "gfx902", "gfx909", "gfx90c", "gfx912", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
})
IGPU_VRAM_LIMIT = 1 * GIB  # below this an AMD GPU's "VRAM" is a firmware carve-out (Ollama's rule too)
NPU_GENERATIONS = {0x1502: "XDNA", 0x17F0: "XDNA2"}  # PCI 1022:xxxx: Phoenix/Hawk Point, Strix/Krackan
_CARD = re.compile(r"^card(\d+)$")


@dataclass(frozen=True)
class GpuInfo:
    """One GPU: identity, memory (bytes), and how ROCm sees it in this process's environment."""

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
    rocm_supported: bool | None  # ROCm has kernels for its own target
    rocm_basis: str | None
    hsa_override: str | None  # the process-wide HSA_OVERRIDE_GFX_VERSION that makes it run, when one does so
    #                           without changing another GPU ROCm shows; else None
    memory_pool: str  # vram | gtt: where llama.cpp's allocations for this GPU come from
    kfd_node: int | None = None  # its KFD topology node (CPUs come first): HSA_OVERRIDE_GFX_VERSION_<node>
    rocm_index: int | None = None  # ROCm's device index (order among the KFD's GPU nodes): ROCR_VISIBLE_DEVICES
    unique_id: str | None = None  # the KFD unique id in hex (ROCR_VISIBLE_DEVICES=GPU-<id>), when it has one
    visible: bool | None = None  # whether ROCm shows it to this process (ROCR/HIP_VISIBLE_DEVICES); None: no KFD
    runs_as: str | None = None  # the target ROCm runs it as: its own, or one an override variable names
    rocm_runs: bool | None = None  # ROCm has kernels it can really run (a supported target of its own family)

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
            "model_memory_free": self.model_memory_free, "kfd_node": self.kfd_node, "rocm_index": self.rocm_index,
            "rocm_visible": self.visible, "runs_as": self.runs_as, "rocm_runs": self.rocm_runs,
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

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "pci_id": self.pci_id, "pci_slot": self.pci_slot, "driver": self.driver,
                "generation": self.generation, "device_node": self.device_node, "usable": self.usable}


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
    rocm_env: tuple[tuple[str, str], ...] = ()  # ROCR/HIP_VISIBLE_DEVICES and per-GPU overrides, as set

    @property
    def amd_gpus(self) -> tuple[GpuInfo, ...]:
        return tuple(g for g in self.gpus if g.vendor == "AMD")

    @property
    def rocm_gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs ROCm enumerates (the KFD topology's GPU nodes), in ROCm's device order."""
        return tuple(sorted((g for g in self.gpus if g.rocm_index is not None), key=lambda g: g.rocm_index or 0))

    def best_gpu(self) -> GpuInfo | None:
        """The one GPU a model goes to when only one does: AMD or NVIDIA with known memory, visible to this
        process, one ROCm has kernels for before one it has none for, discrete first, then most free memory."""
        candidates = [g for g in self.gpus if g.vendor in ("AMD", "NVIDIA") and g.model_memory_free is not None]
        return max(candidates, key=_rank) if candidates else None

    def offload_backend(self) -> str | None:
        """The GPU backend llama.cpp will use: what the installed build has, else the best GPU's vendor's."""
        lc = self.runtimes.llama_cpp if self.runtimes else None
        backends = [b.lower() for b in lc.gpu_backends] if lc is not None else []
        if "vulkan" in backends and not any(b in backends for b in ("rocm", "hip", "cuda")):
            return "vulkan"
        if "cuda" in backends:
            return "cuda"
        if "rocm" in backends or "hip" in backends:
            return "rocm"
        best = self.best_gpu()
        return None if best is None else "cuda" if best.vendor == "NVIDIA" else "rocm"

    def offload_gpus(self) -> tuple[GpuInfo, ...]:
        """The GPUs llama.cpp puts layers on, as it chooses by default (several: it splits the layers by
        free memory). ROCm: every GPU this process sees that it has kernels for (Hearth hides the others,
        see inference.gpu_select), or those it supports as they are when an override breaks one. Vulkan:
        the discrete GPUs, an integrated one only when there is none. Else the best GPU alone. Never a GPU
        the environment hides."""
        backend = self.offload_backend()
        shown = [g for g in self.gpus if g.model_memory_free is not None and g.visible is not False]
        pool = [g for g in shown if g.vendor == ("NVIDIA" if backend == "cuda" else "AMD")]
        native = [g for g in pool if g.rocm_supported]
        if backend == "rocm" and any(not g.rocm_runs for g in native):
            return tuple(native)  # an override breaks a GPU ROCm supports: plan for the fix the checklist asks for
        if backend == "rocm" and any(g.rocm_runs for g in pool):
            return tuple(g for g in pool if g.rocm_runs)
        if backend == "vulkan":
            pool = [g for g in shown if g.vendor in ("AMD", "NVIDIA")]
            discrete = [g for g in pool if g.kind == "discrete"]
            if discrete:
                return tuple(discrete)
        candidates = pool or [g for g in shown if g.vendor in ("AMD", "NVIDIA")]
        return (max(candidates, key=_rank),) if candidates else ()

    def plan(self, path: Path, *, n_ctx: int = 4096, n_gpu_layers: int | None = None,
             beside: MemoryPlan | None = None, beside_loaded: bool = False) -> MemoryPlan:
        """The memory plan of a model here: the GPU(s) llama.cpp uses as target, free RAM, the embedder's share.

        With `beside` (the chat model's plan), the plan of a second model loaded next to it (the answer checker,
        rag/confirm.py): what that one takes comes off the free GPU memory and RAM first (unless it is loaded
        already, `beside_loaded`: then the free memory read here is what it left), and the embedder, in its plan
        already, is not counted again."""
        ort = self.runtimes.onnxruntime if self.runtimes else None
        on_gpu = bool(ort and ort.gpu_working)  # the embedder then takes its share of the same GPU
        target, ram = self.offload_target(), self.ram.available
        embedder: EmbedderFootprint | None = embedder_footprint(device="gpu" if on_gpu else "cpu")
        if beside is not None and not beside_loaded:
            taken = beside.gpu_need + (beside.embedder.total if beside.embedder and beside.embedder.device != "cpu"
                                       else 0)
            if target is not None:
                target = replace(target, free=max(0, target.free - taken))
            ram = None if ram is None else max(0, ram - beside.ram_need)
        if beside is not None:
            embedder = None
        return plan_memory(path, n_ctx=n_ctx, target=target, n_gpu_layers=n_gpu_layers, embedder=embedder,
                           ram_available=ram)

    def offload_target(self) -> OffloadTarget | None:
        """The GPU(s) of `offload_gpus` as one budget target (several: their memory added up), marked unusable
        when the installed llama.cpp has no GPU backend. With the Vulkan engine, the Vulkan devices llama.cpp
        itself lists (`vulkan_target`)."""
        if self.offload_backend() == "vulkan":
            return self.vulkan_target()
        gpus = self.offload_gpus()
        if not gpus:
            return None
        free = sum(g.model_memory_free or 0 for g in gpus)
        total = sum(g.model_memory_total or g.model_memory_free or 0 for g in gpus)
        usable = True
        lc = self.runtimes.llama_cpp if self.runtimes else None
        if lc is not None:
            usable = lc.gpu_offload and bool(lc.gpu_backends)
            devices = [d for d in lc.devices if d.kind in ("gpu", "igpu") and d.free]
            if devices and len(devices) == len(gpus):
                free = sum(d.free or 0 for d in devices)  # what llama.cpp itself will see
        return OffloadTarget(name=" + ".join(f"GPU{g.index} {g.name}" for g in gpus), free=free, total=total or free,
                             backend=self.offload_backend() or "rocm", usable=usable,
                             memory=gpus[0].memory_pool if len(gpus) == 1 else "vram")

    def vulkan_target(self) -> OffloadTarget | None:
        """The Vulkan devices llama.cpp puts layers on, as one target: their free memory as llama.cpp reads it
        (the driver's budget where it has VK_EXT_memory_budget, else the device-local heap), capped by
        HEARTH_VULKAN_HEAP (tests: a small heap forces a partial offload)."""
        from inference.vulkan import heap_cap

        lc = self.runtimes.llama_cpp if self.runtimes else None
        devices = [d for d in (lc.devices if lc else ()) if d.kind in ("gpu", "igpu") and d.free
                   and d.name.lower().startswith("vulkan")]
        if not devices:
            return None
        limit = heap_cap()

        def capped(size: int) -> int:
            return size if limit is None else min(size, limit)

        free = sum(capped(d.free or 0) for d in devices)
        total = sum(capped(d.total or d.free or 0) for d in devices)
        return OffloadTarget(name=" + ".join(f"{d.name} {d.description}" for d in devices), free=free,
                             total=total or free, backend="vulkan", usable=bool(lc and lc.gpu_offload),
                             memory="gtt" if all(d.kind == "igpu" for d in devices) else "vram")

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON-ready values; `inference.checklist.report` adds the verdicts and advice."""
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
            "environment": {OVERRIDE_ENV: self.hsa_override_env, UNIFIED_MEMORY_ENV: self.unified_memory_env,
                            **dict(self.rocm_env)},
        }


def _rank(g: GpuInfo) -> tuple[bool, bool, bool, int]:
    return (g.visible is not False, g.vendor != "AMD" or bool(g.rocm_runs), g.kind == "discrete",
            g.model_memory_free or 0)


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
    default this process; `env` replaces os.environ for the variables that change what ROCm shows and runs.
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

    driver = read_driver(root)
    install = rocm.find_rocm(root, env.get("ROCM_PATH") if real else None)
    access = AccessCheck(root, real, identity)
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
        gpus.append(_amd_gpu(len(gpus), root, node, card, install, unified, access, render_nodes,
                             rocm_index=len(gpus)))
    for card in cards:
        if card.name in used_cards or card.vendor not in gpu_names.VENDORS:
            continue  # matched already, or a display-only chip (a server BMC's ASPEED VGA)
        if card.vendor == gpu_names.AMD:
            gpus.append(_amd_gpu(len(gpus), root, None, card, install, unified, access, render_nodes))
        else:
            gpus.append(_other_gpu(len(gpus), root, card, nvml.pop(card.slot, None) if card.slot else None))
    for g in nvml.values():  # NVIDIA GPUs NVML knows but DRM does not show (nvidia-drm not loaded)
        gpus.append(GpuInfo(len(gpus), "NVIDIA", g.name, "nvml", g.pci_id, g.pci_slot, None, None, "discrete",
                            g.total, g.used, None, None, "nvidia", None, None, None, None, "vram"))

    gpus = _rocm_view(gpus, env, install)
    steering = [rocm.ROCR_VISIBLE_ENV, rocm.HIP_VISIBLE_ENV,
                *(rocm.per_device_variable(g.kfd_node) for g in gpus if g.kfd_node is not None)]
    return Machine(
        root=str(root),
        gpus=tuple(gpus),
        npus=tuple(_npus(root)),
        cpu=read_cpu(root, real),
        ram=read_ram(root),
        driver=driver,
        rocm=install,
        kfd=kfd,
        kfd_topology=bool(nodes),
        runtimes=probed,
        hsa_override_env=override,
        unified_memory_env=unified,
        render_nodes=tuple(render_nodes),
        rocm_env=tuple((k, env[k]) for k in steering if (env.get(k) or "").strip()),
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
        vendor, device = read_hex(dev / "vendor"), read_hex(dev / "device")
        if vendor is None or device is None:
            continue
        minors = sorted(int(p.name[7:]) for p in (dev / "drm").glob("renderD*") if p.name[7:].isdigit())
        cards.append(_Card(
            name=entry.name,
            dev=dev,
            slot=link_name(dev),
            vendor=vendor,
            device=device,
            revision=read_hex(dev / "revision"),
            unique_id=read_hex(dev / "unique_id"),
            render_minor=minors[0] if minors else None,
            driver=link_name(dev / "driver"),
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
        text = read_text(d / "properties") or ""
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
             install: rocm.RocmInstall | None, unified: bool, access: AccessCheck,
             render_nodes: list[DeviceAccess], rocm_index: int | None = None) -> GpuInfo:
    vendor = card.vendor if card else node.get("vendor_id", gpu_names.AMD) if node else gpu_names.AMD
    device = card.device if card else (node or {}).get("device_id", 0)
    revision = card.revision if card else None
    name, source = _product_name(card) or gpu_names.device_name(root, vendor, device, revision)
    gfx = rocm.gfx_name(node["gfx_target_version"]) if node else None
    mem = {k: read_int(card.dev / f"mem_info_{k}") if card else None
           for k in ("vram_total", "vram_used", "gtt_total", "gtt_used")}
    integrated = (gfx in APU_TARGETS) or device in gpu_names.INTEGRATED_IDS or (
        mem["vram_total"] is not None and mem["vram_total"] < IGPU_VRAM_LIMIT)
    kind = "integrated" if integrated else "discrete"
    pool = "gtt" if integrated and unified and mem["gtt_total"] else "vram"
    minor = (card.render_minor if card else None) or ((node or {}).get("drm_render_minor") or None)
    render = f"/dev/dri/renderD{minor}" if minor else None
    if render:
        render_nodes.append(access.check(render.lstrip("/")))
    supported, basis = rocm.is_supported(gfx, install) if gfx else (None, None)
    unique = (node or {}).get("unique_id") or (card.unique_id if card else None)
    return GpuInfo(
        index=index, vendor="AMD", name=name, name_source=source, pci_id=f"{vendor:04x}:{device:04x}",
        pci_slot=card.slot if card else None, revision=f"{revision:02x}" if revision is not None else None,
        gfx_target=gfx, kind=kind, vram_total=mem["vram_total"], vram_used=mem["vram_used"],
        gtt_total=mem["gtt_total"], gtt_used=mem["gtt_used"], driver=card.driver if card else None,
        render_node=render, rocm_supported=supported, rocm_basis=basis, hsa_override=None, memory_pool=pool,
        kfd_node=node["node"] if node else None, rocm_index=rocm_index,
        unique_id=f"{unique:016x}" if unique else None,
    )


def _rocm_view(gpus: list[GpuInfo], env: Mapping[str, str], install: rocm.RocmInstall | None) -> list[GpuInfo]:
    """The ROCm devices as this process's environment shows them: which are visible, the target each runs
    as (HSA_OVERRIDE_GFX_VERSION_<node>, else HSA_OVERRIDE_GFX_VERSION), whether its kernels fit it, and
    the process-wide override each may take: only one that every visible GPU wants (a supported GPU
    wants its own target), since the variable changes them all."""
    kfd = sorted((g for g in gpus if g.rocm_index is not None), key=lambda g: g.rocm_index or 0)
    if not kfd:
        return gpus
    shown = set(rocm.visible_devices(len(kfd), env.get(rocm.ROCR_VISIBLE_ENV), env.get(rocm.HIP_VISIBLE_ENV),
                                     tuple(g.unique_id for g in kfd)))
    common = (env.get(OVERRIDE_ENV) or "").strip() or None
    updated: dict[int, GpuInfo] = {}
    wants: set[str | None] = set()
    for g in kfd:
        gfx = g.gfx_target or ""
        value = (env.get(rocm.per_device_variable(g.kfd_node or 0)) or "").strip() or common
        runs_as = (rocm.target_from_override(value) if value else None) or gfx
        runs = rocm.is_supported(runs_as, install)[0] and rocm.compatible(gfx, runs_as)
        near = gfx if g.rocm_supported else rocm.nearest_supported(gfx, install)
        if g.rocm_index in shown:
            wants.add(rocm.override_value(near) if near else None)
        updated[g.index] = replace(g, visible=g.rocm_index in shown, runs_as=runs_as, rocm_runs=runs)
    agreed = next(iter(wants)) if len(wants) == 1 else None
    for i, g in updated.items():
        if g.visible and not g.rocm_supported and agreed:
            updated[i] = replace(g, hsa_override=agreed)
    return [updated.get(g.index, g) for g in gpus]


def _other_gpu(index: int, root: Path, card: _Card, nvml: Any) -> GpuInfo:
    vendor = gpu_names.VENDORS.get(card.vendor, f"{card.vendor:04x}")
    name, source = _product_name(card) or gpu_names.device_name(root, card.vendor, card.device, card.revision)
    if nvml is not None:
        name, source = nvml.name, "nvml"
    kind = "discrete" if card.vendor == gpu_names.NVIDIA or "Arc" in name else "integrated"
    total = used = None
    if card.vendor == gpu_names.NVIDIA:
        if nvml is not None:
            total, used = nvml.total, nvml.used
    else:
        total, used = read_int(card.dev / "mem_info_vram_total"), read_int(card.dev / "mem_info_vram_used")
    return GpuInfo(
        index=index, vendor=vendor, name=name, name_source=source, pci_id=f"{card.vendor:04x}:{card.device:04x}",
        pci_slot=card.slot, revision=f"{card.revision:02x}" if card.revision is not None else None, gfx_target=None,
        kind=kind, vram_total=total, vram_used=used, gtt_total=None, gtt_used=None, driver=card.driver,
        render_node=f"/dev/dri/renderD{card.render_minor}" if card.render_minor else None, rocm_supported=None,
        rocm_basis=None, hsa_override=None, memory_pool="vram",
    )


def _product_name(card: _Card | None) -> tuple[str, str] | None:
    if card is None:
        return None
    name = read_text(card.dev / "product_name")
    return (name, "product_name") if name else None


# --- NPUs, CPU, RAM, drivers -------------------------------------------------------------------


def _npus(root: Path) -> list[NpuInfo]:
    found: dict[str, NpuInfo] = {}
    for accel in sorted((root / "sys/class/accel").glob("accel*")):
        dev = accel / "device"
        vendor, device = read_hex(dev / "vendor"), read_hex(dev / "device")
        if vendor != gpu_names.AMD_CPU or device not in NPU_GENERATIONS:
            continue
        slot = link_name(dev) or accel.name
        node = root / "dev/accel" / accel.name
        found[slot] = _npu(root, vendor, device, slot, link_name(dev / "driver"),
                           f"/dev/accel/{accel.name}" if node.exists() else None)
    for dev in sorted((root / "sys/bus/pci/devices").glob("*")):
        if dev.name in found or read_hex(dev / "vendor") != gpu_names.AMD_CPU:
            continue
        device = read_hex(dev / "device")
        if device in NPU_GENERATIONS:
            found[dev.name] = _npu(root, gpu_names.AMD_CPU, device, dev.name, link_name(dev / "driver"), None)
    return list(found.values())


def _npu(root: Path, vendor: int, device: int, slot: str, bound: str | None, node: str | None) -> NpuInfo:
    name, _ = gpu_names.device_name(root, vendor, device)
    if (vendor, device) in gpu_names.BUILTIN:
        name = gpu_names.BUILTIN[(vendor, device)]  # pci.ids calls these "Signal Processing Controller"
    return NpuInfo(name=name, pci_id=f"{vendor:04x}:{device:04x}", pci_slot=slot, driver=bound,
                   generation=NPU_GENERATIONS[device], device_node=node, usable=bound == "amdxdna" and node is not None)

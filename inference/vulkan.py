"""The Vulkan devices of this machine, as the Vulkan loader lists them: name, driver, type and memory heaps.

    python -m inference.vulkan        # one JSON list, what `devices()` returns

Read through the loader's C API (libvulkan.so.1) with no Vulkan SDK or vulkan-tools: an instance, its physical
devices, their properties (with the driver's name, Vulkan 1.2's driver properties) and memory heaps (with
VK_EXT_memory_budget's budget where the driver has it). A Vulkan driver runs in the process that asks, and a
broken one can crash it, so Hearth asks in a child process (`devices()`) with a time limit; a machine without
the loader, or whose loader finds no device, has none.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any

TYPES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
VENDORS = {0x1002: "AMD", 0x10DE: "NVIDIA", 0x8086: "Intel", 0x10005: "Mesa"}
PROBE_TIMEOUT = 20.0  # seconds; a driver that hangs is reported, not waited for
HEAP_ENV = "HEARTH_VULKAN_HEAP"  # tests: cap each device's memory as if its heap were this many bytes

_API_1_2 = (1 << 22) | (2 << 12)
_PROPERTIES_2, _MEMORY_PROPERTIES_2 = 1000059001, 1000059006
_DRIVER_PROPERTIES, _MEMORY_BUDGET = 1000196000, 1000237000
_DEVICE_LOCAL = 1


@dataclass(frozen=True)
class VulkanDevice:
    """One physical device: what it is, its driver, and its device-local memory (heap size and budget)."""

    index: int  # the loader's order, which GGML_VK_VISIBLE_DEVICES counts in
    name: str
    driver: str  # radv, amdvlk, llvmpipe (lavapipe), NVIDIA...
    type: str  # discrete | integrated | virtual | cpu | other
    vendor_id: int
    device_id: int
    api_version: str
    heap_bytes: int  # the largest device-local heap
    budget_bytes: int | None  # what the driver says this process may use of it (VK_EXT_memory_budget), if it says

    @property
    def software(self) -> bool:
        """A device that runs on the CPU (lavapipe, SwiftShader): it proves the path, it does not speed it up."""
        return self.type == "cpu"

    @property
    def pci_id(self) -> str:
        return f"{self.vendor_id:04x}:{self.device_id:04x}"

    @property
    def vendor(self) -> str:
        return VENDORS.get(self.vendor_id, f"0x{self.vendor_id:04x}")

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "driver": self.driver, "type": self.type,
                "vendor": self.vendor, "pci_id": self.pci_id, "api_version": self.api_version,
                "heap_bytes": self.heap_bytes, "budget_bytes": self.budget_bytes, "software": self.software}


@dataclass(frozen=True)
class VulkanProbe:
    """The devices found, or why there are none."""

    devices: tuple[VulkanDevice, ...] = ()
    error: str | None = None


_seen: dict[str, VulkanProbe] = {}
_seen_lock = threading.Lock()


def devices(*, timeout: float = PROBE_TIMEOUT, fresh: bool = False) -> VulkanProbe:
    """The Vulkan devices, asked of a child process once per process (the hardware panel refreshes while the model
    works; the devices do not change) unless `fresh`; HEARTH_VULKAN_HEAP's cap applied."""
    with _seen_lock:
        if fresh or "probe" not in _seen:
            _seen["probe"] = _probe_child(timeout)
        probe = _seen["probe"]
    return VulkanProbe(devices=tuple(_capped(d) for d in probe.devices), error=probe.error)


def _probe_child(timeout: float) -> VulkanProbe:
    """Ask a child process for the devices: a driver that crashes or hangs takes only the child with it."""
    try:
        r = subprocess.run([sys.executable, "-m", "inference.vulkan"], capture_output=True, text=True,
                           timeout=timeout, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return VulkanProbe(error=f"the Vulkan driver did not answer within {timeout:.0f} s")
    except OSError as exc:
        return VulkanProbe(error=f"cannot start the Vulkan probe: {exc}")
    try:
        found = json.loads(r.stdout)
    except json.JSONDecodeError:
        last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        return VulkanProbe(error=f"the Vulkan probe failed: {last}")
    if isinstance(found, dict):
        return VulkanProbe(error=str(found.get("error")))
    return VulkanProbe(devices=tuple(VulkanDevice(**d) for d in found))


def heap_cap() -> int | None:
    """HEARTH_VULKAN_HEAP in bytes, when set: each device's memory as tests want to see it."""
    cap = os.environ.get(HEAP_ENV, "").strip()
    return int(cap) if cap.isdigit() else None


def _capped(device: VulkanDevice) -> VulkanDevice:
    limit = heap_cap()
    if limit is None:
        return device
    budget = None if device.budget_bytes is None else min(device.budget_bytes, limit)
    return VulkanDevice(**{**asdict(device), "heap_bytes": min(device.heap_bytes, limit), "budget_bytes": budget})


def _text(buf: ctypes.Array, offset: int, size: int = 256) -> str:
    return bytes(buf[offset:offset + size]).split(b"\0", 1)[0].decode("utf-8", "replace")


def _u32(buf: ctypes.Array, offset: int) -> int:
    return struct.unpack_from("<I", buf, offset)[0]


def _chain(*parts: tuple[int, ctypes.Array]) -> None:
    """Set each struct's sType and point its pNext at the next one."""
    for i, (stype, buf) in enumerate(parts):
        following = ctypes.addressof(parts[i + 1][1]) if i + 1 < len(parts) else 0
        struct.pack_into("<IxxxxQ", buf, 0, stype, following)


class _Loader:
    """The few loader calls the probe makes, on one instance."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libvulkan.so.1")
        app = ctypes.create_string_buffer(48)  # VkApplicationInfo: only sType (0) and apiVersion are set
        struct.pack_into("<I", app, 0, 0)
        struct.pack_into("<I", app, 44, _API_1_2)
        info = ctypes.create_string_buffer(64)  # VkInstanceCreateInfo
        struct.pack_into("<IxxxxQIxxxxQ", info, 0, 1, 0, 0, ctypes.addressof(app))
        self.instance = ctypes.c_void_p()
        result = self.lib.vkCreateInstance(info, None, ctypes.byref(self.instance))
        if result != 0:
            raise OSError(f"vkCreateInstance returned {result}")

    def physical_devices(self) -> list[ctypes.c_void_p]:
        count = ctypes.c_uint32()
        self.lib.vkEnumeratePhysicalDevices(self.instance, ctypes.byref(count), None)
        handles = (ctypes.c_void_p * count.value)()
        self.lib.vkEnumeratePhysicalDevices(self.instance, ctypes.byref(count), handles)
        return [ctypes.c_void_p(h) for h in handles[:count.value]]

    def extensions(self, device: ctypes.c_void_p) -> set[str]:
        count = ctypes.c_uint32()
        self.lib.vkEnumerateDeviceExtensionProperties(device, None, ctypes.byref(count), None)
        buf = ctypes.create_string_buffer(260 * max(1, count.value))
        self.lib.vkEnumerateDeviceExtensionProperties(device, None, ctypes.byref(count), buf)
        return {_text(buf, 260 * i) for i in range(count.value)}

    def describe(self, index: int, device: ctypes.c_void_p) -> VulkanDevice:
        props, driver = ctypes.create_string_buffer(1024), ctypes.create_string_buffer(1024)
        _chain((_PROPERTIES_2, props), (_DRIVER_PROPERTIES, driver))
        self.lib.vkGetPhysicalDeviceProperties2(device, props)
        api = _u32(props, 16)
        memory, budget = ctypes.create_string_buffer(1024), ctypes.create_string_buffer(512)
        has_budget = "VK_EXT_memory_budget" in self.extensions(device)
        _chain(*((_MEMORY_PROPERTIES_2, memory), *(((_MEMORY_BUDGET, budget),) if has_budget else ())))
        self.lib.vkGetPhysicalDeviceMemoryProperties2(device, memory)
        heaps = [(struct.unpack_from("<QI", memory, 280 + 16 * i), i) for i in range(_u32(memory, 276))]
        local = [(size, i) for (size, flags), i in heaps if flags & _DEVICE_LOCAL] or \
                [(size, i) for (size, _), i in heaps]
        size, heap = max(local) if local else (0, None)
        spend = struct.unpack_from("<Q", budget, 16 + 8 * heap)[0] if has_budget and heap is not None else None
        return VulkanDevice(
            index=index, name=_text(props, 36), driver=_text(driver, 20) or "unknown",
            type=TYPES.get(_u32(props, 32), "other"), vendor_id=_u32(props, 24), device_id=_u32(props, 28),
            api_version=f"{api >> 22}.{(api >> 12) & 0x3FF}.{api & 0xFFF}", heap_bytes=size,
            budget_bytes=spend or None)

    def close(self) -> None:
        self.lib.vkDestroyInstance(self.instance, None)


def probe_here() -> list[VulkanDevice]:
    """The devices, read in this process (the child `devices()` starts)."""
    loader = _Loader()
    try:
        return [loader.describe(i, d) for i, d in enumerate(loader.physical_devices())]
    finally:
        loader.close()


def main() -> int:
    try:
        found: Any = [asdict(d) for d in probe_here()]
    except (OSError, AttributeError) as exc:
        found = {"error": f"no Vulkan loader or instance: {exc}"}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())

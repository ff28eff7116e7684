"""What the installed runtimes can do: llama.cpp's backends and devices, ONNX Runtime's providers
that really load, and the vendor libraries (amdsmi, NVML) when present.

Every probe is read-only and fails soft: a missing or broken library is reported as such, never
raised, because `hearth hw` exists to explain machines where things are broken.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GPU_PROVIDERS = ("MIGraphXExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider",
                 "DmlExecutionProvider", "OpenVINOExecutionProvider")
_DEV_TYPES = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
_probe_lock = threading.Lock()
_read_once: dict[str, str] = {}


@dataclass(frozen=True)
class RuntimeDevice:
    """A device as a runtime sees it (llama.cpp's ggml backend devices), with its free/total memory."""

    name: str
    description: str
    kind: str  # cpu | gpu | igpu | accel
    free: int | None = None
    total: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "kind": self.kind,
                "free": self.free, "total": self.total}


@dataclass(frozen=True)
class LlamaCppInfo:
    """The installed llama-cpp-python: version, whether it can offload, its devices and build flags."""

    version: str | None
    gpu_offload: bool
    devices: tuple[RuntimeDevice, ...] = ()
    system_info: str = ""
    error: str | None = None

    @property
    def gpu_backends(self) -> tuple[str, ...]:
        """Backend names of the GPU devices (ROCm, CUDA, Vulkan, ...), without the device number."""
        names = []
        for d in self.devices:
            if d.kind in ("gpu", "igpu"):
                base = d.name.rstrip("0123456789")
                if base not in names:
                    names.append(base)
        return tuple(names)

    def to_json(self) -> dict[str, Any]:
        return {"installed": self.version is not None, "version": self.version, "gpu_offload": self.gpu_offload,
                "gpu_backends": list(self.gpu_backends), "devices": [d.to_json() for d in self.devices],
                "system_info": self.system_info, "error": self.error}


@dataclass(frozen=True)
class OnnxRuntimeInfo:
    """ONNX Runtime: the providers it lists and those a session really gets when asked for them."""

    version: str | None
    available: tuple[str, ...] = ()
    working: tuple[str, ...] = ()
    error: str | None = None

    @property
    def gpu_working(self) -> tuple[str, ...]:
        return tuple(p for p in self.working if p in GPU_PROVIDERS)

    def to_json(self) -> dict[str, Any]:
        return {"installed": self.version is not None, "version": self.version, "available": list(self.available),
                "working": list(self.working), "error": self.error}


@dataclass(frozen=True)
class NvmlGpu:
    """An NVIDIA GPU as NVML reports it."""

    name: str
    pci_slot: str  # 0000:01:00.0
    pci_id: str  # 10de:2684
    total: int
    used: int
    driver: str | None


@dataclass(frozen=True)
class Runtimes:
    """Everything the runtime probes found."""

    llama_cpp: LlamaCppInfo | None = None
    onnxruntime: OnnxRuntimeInfo | None = None
    amdsmi: dict[str, Any] | None = None
    nvml: tuple[NvmlGpu, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "llama_cpp": self.llama_cpp.to_json() if self.llama_cpp else None,
            "onnxruntime": self.onnxruntime.to_json() if self.onnxruntime else None,
            "amdsmi": self.amdsmi,
            "nvml": [{"name": g.name, "pci_slot": g.pci_slot, "pci_id": g.pci_id, "total": g.total, "used": g.used,
                      "driver": g.driver} for g in self.nvml],
        }


def probe_runtimes(*, vendor_libraries: bool = True) -> Runtimes:
    """Probe llama.cpp and ONNX Runtime, and (unless `vendor_libraries` is False) amdsmi and NVML."""
    return Runtimes(
        llama_cpp=probe_llama_cpp(),
        onnxruntime=probe_onnxruntime(),
        amdsmi=probe_amdsmi() if vendor_libraries else None,
        nvml=probe_nvml() if vendor_libraries else (),
    )


def probe_llama_cpp() -> LlamaCppInfo:
    """Ask llama-cpp-python whether it can offload, and ggml for its devices and their memory.

    One probe at a time in a process: llama_print_system_info fills one static string, and two threads in it at
    once (the window's hardware panel and its model loader both probe at start) freed its buffer twice, which
    aborted the app ("munmap_chunk(): invalid pointer", once in CI). The string cannot change while the process
    runs, so it is read once."""
    try:
        import llama_cpp
    except Exception as exc:  # ImportError, or OSError when the shared library cannot load
        return LlamaCppInfo(version=None, gpu_offload=False, error=f"llama-cpp-python cannot be imported: {exc}")
    version = getattr(llama_cpp, "__version__", None)
    with _probe_lock:
        try:
            offload = bool(llama_cpp.llama_supports_gpu_offload())
            if "system_info" not in _read_once:
                info = llama_cpp.llama_print_system_info()
                _read_once["system_info"] = (info.decode("utf-8", "replace") if isinstance(info, bytes)
                                             else str(info)).strip()
        except Exception as exc:
            return LlamaCppInfo(version=version, gpu_offload=False, error=f"llama.cpp does not answer: {exc}")
        devices = _ggml_devices(llama_cpp)
    return LlamaCppInfo(version=version, gpu_offload=offload, devices=devices, system_info=_read_once["system_info"])


def loaded_lib_dir() -> Path | None:
    """The folder llama_cpp loaded its libraries from, once it is imported (an engine's, inference/engines.py)."""
    module = sys.modules.get("llama_cpp.llama_cpp")
    base = getattr(module, "_base_path", None)
    return Path(base) if base is not None else None


def _ggml_devices(llama_cpp: Any) -> tuple[RuntimeDevice, ...]:
    """The ggml backend registry's devices, read through the C API of the libggml that llama_cpp loaded."""
    loaded = loaded_lib_dir()  # the engine's libraries (inference/engines.py), else the package's own
    lib_dir = str(loaded) if loaded is not None else os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    path = next((os.path.join(lib_dir, n) for n in ("libggml.so", "libggml.dylib", "ggml.dll")
                 if os.path.exists(os.path.join(lib_dir, n))), None)
    if path is None:
        return ()
    try:
        lib = ctypes.CDLL(path)
        lib.ggml_backend_dev_count.restype = ctypes.c_size_t
        lib.ggml_backend_dev_get.restype = ctypes.c_void_p
        lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
        for fn in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
            getattr(lib, fn).restype = ctypes.c_char_p
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
        lib.ggml_backend_dev_type.restype = ctypes.c_int
        lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
        lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                                ctypes.POINTER(ctypes.c_size_t)]
        devices = []
        for i in range(lib.ggml_backend_dev_count()):
            dev = lib.ggml_backend_dev_get(i)
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
            devices.append(RuntimeDevice(
                name=(lib.ggml_backend_dev_name(dev) or b"").decode("utf-8", "replace"),
                description=(lib.ggml_backend_dev_description(dev) or b"").decode("utf-8", "replace"),
                kind=_DEV_TYPES.get(lib.ggml_backend_dev_type(dev), "other"),
                free=free.value or None,
                total=total.value or None,
            ))
        return tuple(devices)
    except (OSError, AttributeError):
        return ()


def probe_onnxruntime() -> OnnxRuntimeInfo:
    """List ONNX Runtime's providers and check which GPU ones really take a session (they fall back silently)."""
    try:
        import onnxruntime as ort
    except Exception as exc:
        return OnnxRuntimeInfo(version=None, error=f"onnxruntime cannot be imported: {exc}")
    available = tuple(ort.get_available_providers())
    cpu = ["CPUExecutionProvider"] if "CPUExecutionProvider" in available else []
    gpu: list[str] = []
    candidates = [p for p in GPU_PROVIDERS if p in available]
    if candidates:
        try:
            model = _identity_model()
        except Exception as exc:
            return OnnxRuntimeInfo(version=ort.__version__, available=available, working=tuple(cpu),
                                   error=f"cannot build a test graph: {exc}")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        for provider in candidates:
            try:
                session = ort.InferenceSession(model, sess_options=options,
                                               providers=[provider, "CPUExecutionProvider"])
                if session.get_providers()[0] == provider:
                    gpu.append(provider)
            except Exception:  # a provider whose libraries are missing raises here, or falls back
                continue
    return OnnxRuntimeInfo(version=ort.__version__, available=available, working=tuple(gpu + cpu))


def _identity_model() -> bytes:
    """The smallest ONNX graph (one Identity node), to see which provider a session ends up on."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def probe_amdsmi() -> dict[str, Any] | None:
    """AMD SMI's library version and GPU names when the `amdsmi` package (ROCm's) imports; else None."""
    try:
        import amdsmi  # type: ignore[import-not-found]
    except Exception:
        return None
    result: dict[str, Any] = {"version": None, "gpus": []}
    try:
        amdsmi.amdsmi_init()
    except Exception as exc:
        return {"version": None, "gpus": [], "error": str(exc)}
    try:
        try:
            v = amdsmi.amdsmi_get_lib_version()
            result["version"] = ".".join(str(v[k]) for k in ("year", "major", "minor", "release") if k in v) or str(v)
        except Exception:
            pass
        for handle in amdsmi.amdsmi_get_processor_handles():
            try:
                asic = amdsmi.amdsmi_get_gpu_asic_info(handle)
                result["gpus"].append({"name": asic.get("market_name"),
                                       "gfx_target": asic.get("target_graphics_version"),
                                       "device_id": asic.get("device_id")})
            except Exception:
                continue
    finally:
        try:
            amdsmi.amdsmi_shut_down()
        except Exception:
            pass
    return result


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _NvmlPci(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


def probe_nvml(library: Any = None) -> tuple[NvmlGpu, ...]:
    """NVIDIA GPUs through NVML (libnvidia-ml, installed with the driver); () when it is absent."""
    try:
        lib = library if library is not None else ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return ()
    try:
        if lib.nvmlInit_v2() != 0:
            return ()
    except AttributeError:
        return ()
    gpus: list[NvmlGpu] = []
    try:
        buf = ctypes.create_string_buffer(96)
        driver = buf.value.decode() if lib.nvmlSystemGetDriverVersion(buf, 96) == 0 else None
        count = ctypes.c_uint()
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return ()
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                continue
            name = ctypes.create_string_buffer(96)
            lib.nvmlDeviceGetName(handle, name, 96)
            mem = _NvmlMemory()
            lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem))
            pci = _NvmlPci()
            lib.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci))
            bus = pci.busId.decode(errors="replace").lower()
            slot = bus[-12:] if len(bus) >= 12 else bus  # 00000000:01:00.0 → 0000:01:00.0
            gpus.append(NvmlGpu(
                name=name.value.decode(errors="replace"),
                pci_slot=slot,
                pci_id=f"{pci.pciDeviceId & 0xFFFF:04x}:{pci.pciDeviceId >> 16:04x}",
                total=int(mem.total),
                used=int(mem.used),
                driver=driver,
            ))
    finally:
        try:
            lib.nvmlShutdown()
        except Exception:
            pass
    return tuple(gpus)

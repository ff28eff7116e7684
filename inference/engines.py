"""llama.cpp engines: the build llama-cpp-python installed (CPU, or HIP for ROCm) and the Vulkan build beside it.

One Hearth install can carry several engines. llama-cpp-python's own `lib/` folder holds the build pip installed;
`make vulkan` (packaging/build_vulkan.py) puts a Vulkan build of the same version in
`<environment>/hearth-engines/vulkan/`. Both are sets of shared libraries behind the same Python bindings, and
llama_cpp loads the set LLAMA_CPP_LIB_PATH names when it is first imported, so a process runs one engine,
chosen before anything imports llama_cpp (`start`).

The choice (`choose`), for `--engine` / HEARTH_ENGINE:
- auto: HIP where it is installed and ROCm runs a GPU here; else Vulkan where it is installed and a hardware
  Vulkan device is present (a GPU ROCm does not support: RDNA1, Polaris, a GPU outside the KFD); else the CPU.
  A software Vulkan device (lavapipe) is never chosen for speed: on the CPU it is slower than the CPU engine.
- cpu, vulkan, hip: that engine, or an error saying what is missing (exit 1). Asked for by name, Vulkan runs
  on a software device when there is no other, so the path can be proved on a machine without a GPU.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import HearthError, UsageError
from inference.runtimes import loaded_lib_dir

if TYPE_CHECKING:
    from inference.vulkan import VulkanDevice, VulkanProbe

ENGINES_DIR = "hearth-engines"  # under the environment's prefix: one folder of shared libraries per extra engine
LIBRARY = "libllama.so"
ENGINE_RECORD = "ENGINE.json"  # {"llama_cpp_python": version, "backend": name}, beside an extra engine's libraries
ENV_ENGINE = "HEARTH_ENGINE"
CHOICES = ("auto", "cpu", "vulkan", "hip")
LIB_PATH_ENV = "LLAMA_CPP_LIB_PATH"  # read by llama_cpp when it is imported
VISIBLE_ENV = "GGML_VK_VISIBLE_DEVICES"  # llama.cpp skips CPU-type Vulkan devices unless this names them
_BACKEND_LIBS = {"hip": "libggml-hip.so", "vulkan": "libggml-vulkan.so", "cuda": "libggml-cuda.so"}
BUILD_HINT = "make vulkan builds it (about 9 minutes on 2 cores; docs/models-and-gpus.md)"


@dataclass(frozen=True)
class EngineChoice:
    """The engine a process runs, why, the engines installed, and (Vulkan) the device it runs on."""

    chosen: str
    reason: str
    available: tuple[str, ...]
    lib_dir: Path | None = None
    device: VulkanDevice | None = None

    def to_json(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "reason": self.reason, "available": list(self.available),
                "lib_dir": str(self.lib_dir) if self.lib_dir else None,
                "device": self.device.to_json() if self.device else None}


# A llama.cpp build of the user's own, named before Hearth started, stands for the installed package's.
_USER_LIB_PATH = os.environ.get(LIB_PATH_ENV)


def package_lib_dir() -> Path | None:
    """The libraries llama-cpp-python loads by default: its own `lib/` folder, found without importing it
    (importing loads an engine), or the folder the user's LLAMA_CPP_LIB_PATH named."""
    if _USER_LIB_PATH and (Path(_USER_LIB_PATH) / LIBRARY).exists():
        return Path(_USER_LIB_PATH)
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    return lib if (lib / LIBRARY).exists() else None


def backend_of(lib_dir: Path) -> str:
    """The GPU backend a folder of llama.cpp libraries was built with (hip, vulkan, cuda), else cpu."""
    return next((name for name, lib in _BACKEND_LIBS.items() if (lib_dir / lib).exists()), "cpu")


def installed(prefix: Path | None = None) -> dict[str, Path]:
    """Engine name -> its libraries: the package's build (which also runs on the CPU alone) and the extra
    engines under `prefix`/hearth-engines (default: this environment's)."""
    found: dict[str, Path] = {}
    package = package_lib_dir()
    if package is not None:
        found[backend_of(package)] = package
        found.setdefault("cpu", package)
    extra = (Path(sys.prefix) if prefix is None else prefix) / ENGINES_DIR
    if extra.is_dir():
        for folder in sorted(extra.iterdir()):
            if folder.name in CHOICES and (folder / LIBRARY).exists() and backend_of(folder) == folder.name \
                    and built_for_this(folder):
                found.setdefault(folder.name, folder)
    return found


def built_for_this(folder: Path) -> bool:
    """Whether an engine's libraries were built for the installed llama-cpp-python (ENGINE.json, written by
    `make vulkan`): the bindings of one version over another's libraries would call functions that changed. A
    folder without the record is taken as it is."""
    record = folder / ENGINE_RECORD
    if not record.exists():
        return True
    try:
        built = json.loads(record.read_text(encoding="utf-8")).get("llama_cpp_python")
        return built == importlib.metadata.version("llama_cpp_python")
    except (OSError, ValueError, AttributeError, importlib.metadata.PackageNotFoundError):
        return False


def requested_engine(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """The engine asked for: the flag, else HEARTH_ENGINE, else auto; UsageError for a name not in CHOICES."""
    env = os.environ if env is None else env
    name = (flag or env.get(ENV_ENGINE, "") or "auto").strip().lower()
    _check_choice(name, "--engine" if flag else ENV_ENGINE)
    return name


def _check_choice(name: str, source: str) -> None:
    if name not in CHOICES:
        raise UsageError(f"{source} must be one of {', '.join(CHOICES)}, not {name!r}.")


def choose(requested: str, *, engines: Mapping[str, Path] | None = None, vulkan: VulkanProbe | None = None,
           rocm_runs: bool | None = None) -> EngineChoice:
    """The engine for `requested` (see the module's docstring); HearthError when a named one cannot run here.
    `vulkan` and `rocm_runs` are probed when needed and not given (tests pass them)."""
    engines = installed() if engines is None else engines
    available = tuple(e for e in ("cpu", "vulkan", "hip") if e in engines)
    _check_choice(requested, "--engine")
    if "vulkan" in engines or requested == "vulkan":
        vulkan = _probe_vulkan() if vulkan is None else vulkan
    if requested == "auto":
        return _auto(engines, available, vulkan, rocm_runs)
    if requested not in engines:
        hint = BUILD_HINT if requested == "vulkan" else (
            "install llama-cpp-python built with ROCm (docs/models-and-gpus.md)" if requested == "hip" else "")
        raise HearthError(f"The {requested} engine is not installed (installed: {', '.join(available) or 'none'}).",
                          hint=hint or None)
    if requested == "vulkan":
        return _vulkan(engines, available, vulkan, "asked for by name")
    if requested == "hip" and not _rocm_runs(rocm_runs):
        raise HearthError("The HIP engine is installed, but ROCm runs no GPU on this machine.",
                          hint="hearth hw says why; the Vulkan engine needs no ROCm.")
    reason = "asked for by name" + ("" if requested == "hip" else ": no layer goes to a GPU")
    return EngineChoice(requested, reason, available, engines[requested])


def _auto(engines: Mapping[str, Path], available: tuple[str, ...], vulkan: VulkanProbe | None,
          rocm_runs: bool | None) -> EngineChoice:
    if "hip" in engines and _rocm_runs(rocm_runs):
        return EngineChoice("hip", "ROCm runs a GPU here and the HIP engine is installed", available,
                            engines["hip"])
    hardware = [d for d in _found(vulkan) if not d.software]
    if "vulkan" in engines and hardware:
        why = "ROCm runs no GPU here" if "hip" in engines else "the HIP engine is not installed"
        return _vulkan(engines, available, vulkan, f"{why}; Vulkan runs {hardware[0].name}")
    if "vulkan" in engines:
        why = ("only a software Vulkan device here (" + _found(vulkan)[0].name + "), slower than the CPU engine; "
               "--engine vulkan uses it anyway") if _found(vulkan) else "no Vulkan device here"
    elif hardware:
        why = f"Vulkan sees {hardware[0].name}, but the Vulkan engine is not installed: {BUILD_HINT}"
    else:
        why = "no GPU engine can run here"
    return EngineChoice("cpu", why, available, engines.get("cpu"))


def _vulkan(engines: Mapping[str, Path], available: tuple[str, ...], vulkan: VulkanProbe | None,
            reason: str) -> EngineChoice:
    found = _found(vulkan)
    if not found:
        error = vulkan.error if vulkan is not None and vulkan.error else "the Vulkan loader lists none"
        raise HearthError(f"The Vulkan engine has no device to run on: {error}.",
                          hint="apt-get install mesa-vulkan-drivers (RADV for AMD GPUs; lavapipe runs on the CPU)")
    hardware = [d for d in found if not d.software]
    device = max(hardware, key=lambda d: (d.type == "discrete", d.heap_bytes)) if hardware else found[0]
    if device.software:
        reason += f"; only a software device here ({device.name}): it proves the path, it is not faster"
    return EngineChoice("vulkan", reason, available, engines["vulkan"], device)


def _found(vulkan: VulkanProbe | None) -> tuple[VulkanDevice, ...]:
    return vulkan.devices if vulkan is not None else ()


def _probe_vulkan() -> VulkanProbe:
    from inference.vulkan import devices

    return devices()


def _rocm_runs(known: bool | None) -> bool:
    if known is not None:
        return known
    from inference.hardware import detect

    return any(g.rocm_runs for g in detect(runtimes=False).gpus)


_active: list[EngineChoice] = []


def start(choice: EngineChoice, env: dict[str, str] | None = None) -> EngineChoice:
    """Make `choice` the engine llama_cpp loads in this process (before it is imported); returns it. HearthError
    when llama_cpp is loaded already with other libraries."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    loaded = loaded_lib_dir()
    if loaded is not None and choice.lib_dir is not None and loaded.resolve() != choice.lib_dir.resolve():
        raise HearthError(f"llama.cpp is loaded already from {loaded}; the {choice.chosen} engine needs a new "
                          "process (restart Hearth).")
    if choice.lib_dir is not None:
        env[LIB_PATH_ENV] = str(choice.lib_dir)
    if choice.device is not None and choice.device.software and not env.get(VISIBLE_ENV):
        env[VISIBLE_ENV] = str(choice.device.index)
    _active[:] = [choice]
    return choice


def active() -> EngineChoice | None:
    """The engine `start` chose in this process, if it did."""
    return _active[0] if _active else None


def engine_name() -> str:
    """The engine running in this process: the one started, else what the loaded (or installed) libraries are."""
    if _active:
        return _active[0].chosen
    lib = loaded_lib_dir() or package_lib_dir()
    return backend_of(lib) if lib is not None else "cpu"

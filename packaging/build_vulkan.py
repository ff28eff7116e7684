"""Build llama.cpp's Vulkan engine for the installed llama-cpp-python and put it beside the CPU one.

    python packaging/build_vulkan.py [--dest DIR] [--jobs N] [--rebuild]

`make vulkan` runs it with the virtual environment's Python. The result is a folder of shared libraries
(libllama.so, libggml*.so with libggml-vulkan.so) at .venv/hearth-engines/vulkan: the same llama-cpp-python
version as the installed package, so its Python bindings load either set (Hearth points LLAMA_CPP_LIB_PATH at
the chosen engine before llama_cpp is imported, inference/engines.py). The package itself is not touched.

Steps:
- Debian packages it needs: glslc (compiles the shaders), libvulkan-dev (the loader to link), cmake and a
  C++ compiler; mesa-vulkan-drivers gives a device to run on even without a GPU (lavapipe). Missing ones are
  named, and the script stops (exit 1).
- Vulkan headers: that llama.cpp's Vulkan backend needs headers newer than Debian 12's (1.3.239 lacks
  vk::LayerSettingEXT). When the system's are too old, Debian 13's libvulkan-dev and spirv-headers are
  downloaded with `apt-get download` through the system's own Debian mirror, verified by the archive keyring
  apt already trusts, and unpacked with `dpkg -x` into the build cache: nothing is installed system-wide.
- The build: `pip wheel` of the same version from source, forced past pip's wheel cache (it would hand back
  the CPU wheel of that version) with -DGGML_VULKAN=on. About 9 minutes on 2 cores (8 min 31 s measured).
- The libraries are kept in the machine's build cache (HEARTH_CACHE_DIR/engines, keyed by the version), so a
  second environment or a rebuilt .venv copies them in seconds.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.config import default_cache_dir  # noqa: E402
from inference.engines import ENGINE_RECORD, ENGINES_DIR, LIBRARY  # noqa: E402

DEBIAN_PACKAGES = {"glslc": "glslc", "cmake": "cmake", "c++": "build-essential"}
NEWER_HEADERS = ("libvulkan-dev", "spirv-headers")  # from the next Debian release when the system's are older
NEWER_SUITE = "trixie"
HEADER_MARK = "VkLayerSettingEXT"  # what llama.cpp's Vulkan backend uses that Debian 12's headers lack


def missing_tools() -> list[str]:
    """The Debian packages whose tools or libraries the build needs and cannot find."""
    missing = [pkg for tool, pkg in DEBIAN_PACKAGES.items() if shutil.which(tool) is None]
    if not Path("/usr/include/vulkan/vulkan_core.h").exists() or not _has_loader():
        missing.append("libvulkan-dev")
    return missing


def _has_loader() -> bool:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    return bool(re.search(r"\blibvulkan\.so\b", out))


def system_headers_new_enough(include: Path = Path("/usr/include")) -> bool:
    core = include / "vulkan" / "vulkan_core.h"
    return core.exists() and HEADER_MARK in core.read_text(errors="replace")


def debian_archive() -> tuple[str, str]:
    """(the system's Debian mirror, its keyring) from apt's own sources, not a host written here."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        text = path.read_text(errors="replace")
        for block in text.split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", block, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", block, re.M)
            if uris and suites and not any(s.endswith("-security") for s in suites.group(1).split()):
                keyring = re.search(r"^Signed-By:\s*(\S+)", block, re.M)
                return uris.group(1), keyring.group(1) if keyring else ""
    listed = Path("/etc/apt/sources.list")
    if listed.exists():
        for line in listed.read_text(errors="replace").splitlines():
            m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and not m.group(2).endswith("-security"):
                return m.group(1), ""
    raise SystemExit("No Debian mirror in apt's sources: install Vulkan headers 1.3.261 or newer "
                     "(libvulkan-dev, spirv-headers) and run again.")


def newer_headers(cache: Path) -> Path:
    """Debian 13's Vulkan and SPIR-V headers unpacked under `cache`; returns the include folder."""
    root = cache / f"headers-{NEWER_SUITE}"
    include = root / "usr" / "include"
    if system_headers_new_enough(include):
        return include
    uri, keyring = debian_archive()
    state = cache / "apt"
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    sources = state / "sources.list"
    signed = f"[signed-by={keyring}] " if keyring else ""
    sources.write_text(f"deb {signed}{uri} {NEWER_SUITE} main\n")
    options = ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state}", "-qq"]
    if os.geteuid() == 0:
        options += ["-o", "APT::Sandbox::User=root"]  # the private folders are root's, not _apt's
    subprocess.run(["apt-get", *options, "update"], check=True)
    debs = state / "debs"
    debs.mkdir(exist_ok=True)
    subprocess.run(["apt-get", *options, "download", *NEWER_HEADERS], check=True, cwd=debs)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    if not system_headers_new_enough(include):
        raise SystemExit(f"The headers downloaded from Debian {NEWER_SUITE} still lack {HEADER_MARK}.")
    return include


def build_wheel(version: str, include: Path | None, out: Path, jobs: int) -> Path:
    """`pip wheel` llama-cpp-python==version from source with the Vulkan backend; the wheel's path."""
    args = ["-DGGML_VULKAN=on", "-DGGML_NATIVE=OFF"]
    if include is not None:
        args.append(f"-DVulkan_INCLUDE_DIR={include}")
        # The SPIR-V headers' CMake package sits beside them.
        args.append(f"-DSPIRV-Headers_DIR={include.parent / 'share' / 'cmake' / 'SPIRV-Headers'}")
        args.append(f"-DCMAKE_CXX_FLAGS=-I{include}")
    env = dict(os.environ, CMAKE_ARGS=" ".join(args), CMAKE_BUILD_PARALLEL_LEVEL=str(jobs))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-cache-dir",
                    "--no-binary", "llama-cpp-python", f"llama-cpp-python=={version}", "-w", str(out)],
                   check=True, env=env)
    return next(out.glob("llama_cpp_python-*.whl"))


def unpack_libraries(wheel: Path, dest: Path) -> list[str]:
    """The wheel's llama_cpp/lib/* into `dest` (a fresh folder), symlinks as the wheel lists them."""
    staging = Path(tempfile.mkdtemp(prefix="vulkan-libs-", dir=dest.parent))
    staging.chmod(0o755)
    names: list[str] = []
    with zipfile.ZipFile(wheel) as z:
        libs = [i for i in z.infolist() if i.filename.startswith("llama_cpp/lib/") and not i.is_dir()]
        # A wheel holds libllama.so, .so.0 and .so.0.5.0 as three copies: the longest name is kept, the others
        # link to it, as a system install has them (a third of the size).
        for info in sorted(libs, key=lambda i: -len(i.filename)):
            name = info.filename.rsplit("/", 1)[1]
            same = next((n for n in names if n.startswith(name) and z.getinfo(f"llama_cpp/lib/{n}").CRC == info.CRC
                         and z.getinfo(f"llama_cpp/lib/{n}").file_size == info.file_size), None)
            if same is not None:
                (staging / name).symlink_to(same)
            else:
                (staging / name).write_bytes(z.read(info))
            names.append(name)
    if LIBRARY not in names or not any("vulkan" in n for n in names):
        shutil.rmtree(staging)
        raise SystemExit(f"The wheel built has no Vulkan backend (libraries: {', '.join(sorted(names))}).")
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=Path(sys.prefix) / ENGINES_DIR / "vulkan",
                        help="where the engine's libraries go (default: this environment's hearth-engines/vulkan)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rebuild", action="store_true", help="build again even if the build cache has it")
    args = parser.parse_args(argv)
    missing = missing_tools()
    if missing:
        print(f"Install these Debian packages first: {' '.join(missing)} (and mesa-vulkan-drivers for a device "
              "to run on without a GPU).", file=sys.stderr)
        return 1
    version = md.version("llama_cpp_python")
    cache = default_cache_dir() / "engines"
    built = cache / f"llama-cpp-python-{version}-vulkan"
    if args.rebuild or not (built / LIBRARY).exists():
        cache.mkdir(parents=True, exist_ok=True)
        include = None if system_headers_new_enough() else newer_headers(cache)
        with tempfile.TemporaryDirectory(prefix="vulkan-wheel-", dir=cache) as tmp:
            print(f"Building llama-cpp-python {version} with Vulkan (about 9 minutes on 2 cores)…", flush=True)
            unpack_libraries(build_wheel(version, include, Path(tmp), args.jobs), built)
    # Which bindings these libraries are for (inference.engines.built_for_this): an upgraded llama-cpp-python
    # leaves this engine out until `make vulkan` builds its own version.
    (built / ENGINE_RECORD).write_text(json.dumps({"llama_cpp_python": version, "backend": "vulkan"}) + "\n")
    args.dest.parent.mkdir(parents=True, exist_ok=True)
    if args.dest.exists():
        shutil.rmtree(args.dest)
    shutil.copytree(built, args.dest, symlinks=True)
    print(f"Vulkan engine for llama-cpp-python {version}: {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

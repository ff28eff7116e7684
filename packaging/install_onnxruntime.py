"""Install exactly one ONNX Runtime build (CPU, ROCm, MIGraphX or CUDA) into an environment, and prove it.

    python packaging/install_onnxruntime.py rocm|migraphx|cuda|cpu [--python PY] [--pip-arg=ARG]...

Why a script: every ONNX Runtime build is a separate PyPI distribution (onnxruntime, onnxruntime-rocm,
onnxruntime-migraphx, onnxruntime-gpu) that installs the same `onnxruntime` module, and chromadb
requires plain `onnxruntime`. `pip install chromadb onnxruntime-rocm` therefore leaves two
distributions writing one folder, and whichever unpacked last wins, silently (measured: the CPU
binary). chromadb imports onnxruntime only for its own default embedder, which Hearth never uses, so
the repair is safe: remove every build, install the wanted one alone, and check.

Steps: uninstall every distribution that ships the `onnxruntime` module; install the variant's
distribution (with its own dependencies, none of which is another onnxruntime); then, in a fresh
interpreter, check that exactly one such distribution is installed, that `onnxruntime` lists the
variant's execution provider, and that chromadb still imports. Exit 0 only if all hold.

Listing a provider is not the same as it working (the ROCm and MIGraphX builds list theirs even
when the ROCm libraries they need are missing): `hearth embedder check` tries it on the real model.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

# Keep in step with inference.embedder.ONNXRUNTIME_DISTRIBUTIONS (a test checks it).
DISTRIBUTIONS = (
    "onnxruntime", "onnxruntime-rocm", "onnxruntime-migraphx", "onnxruntime-gpu", "onnxruntime-directml",
    "onnxruntime-openvino", "onnxruntime-training",
)
# variant -> (requirement, the provider that build must list)
VARIANTS = {
    "cpu": ("onnxruntime>=1.18", "CPUExecutionProvider"),
    # ROCm's own EP is deprecated from ROCm 7.1 on; 1.22 is the last series on PyPI (cp311 wheels).
    "rocm": ("onnxruntime-rocm>=1.22,<1.23", "ROCMExecutionProvider"),
    "migraphx": ("onnxruntime-migraphx>=1.22", "MIGraphXExecutionProvider"),
    "cuda": ("onnxruntime-gpu>=1.20", "CUDAExecutionProvider"),
}

_PROBE = """
import importlib.metadata as md, json
names = %r
found = []
for n in names:
    try:
        md.distribution(n)
    except md.PackageNotFoundError:
        continue
    found.append(n)
result = {"distributions": found}
try:
    import onnxruntime
    result["providers"] = onnxruntime.get_available_providers()
    result["version"] = onnxruntime.__version__
except Exception as exc:
    result["error"] = "onnxruntime: %%s" %% exc
try:
    import chromadb  # noqa: F401
    result["chromadb"] = True
except ModuleNotFoundError:
    result["chromadb"] = None
except Exception as exc:
    result["chromadb"] = "%%s: %%s" %% (type(exc).__name__, exc)
print(json.dumps(result))
""" % (DISTRIBUTIONS,)


def installed(python: str) -> dict:
    """What a fresh interpreter sees: onnxruntime distributions, providers, and whether chromadb imports."""
    # -I everywhere: this runs as root during a ROCm install, from whatever folder the admin stands in, and
    # `python -c`/`-m` would import a `json.py` or `pip/` found there before anything else.
    out = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def install(variant: str, *, python: str, pip_args: list[str], lock: str | None = None) -> dict:
    """Replace whatever ONNX Runtime builds `python` has by the one of `variant`; return the final state.

    Wheels only (a source package would run its build code as the installing user); with `lock`, a
    requirements file pinning the wheel by SHA-256 (an offline bundle's gpu.lock), that very wheel alone.
    """
    requirement, _ = VARIANTS[variant]
    target = ["--require-hashes", "--no-deps", "-r", lock] if lock else [requirement]
    pip = [python, "-I", "-m", "pip"]
    before = installed(python)["distributions"]
    if before:
        print(f"removing: {' '.join(before)}", file=sys.stderr)
        subprocess.run([*pip, "uninstall", "-y", *before], check=True, stdout=sys.stderr)
    print(f"installing: {lock or requirement}", file=sys.stderr)
    subprocess.run([*pip, "install", "--only-binary", ":all:", *pip_args, *target], check=True, stdout=sys.stderr)
    return installed(python)


def problems(variant: str, state: dict) -> list[str]:
    """What is wrong with the final state, in sentences; empty when the install is clean."""
    requirement, provider = VARIANTS[variant]
    wanted = requirement.split(">")[0].split("=")[0].split("<")[0]
    found = []
    if state["distributions"] != [wanted]:
        found.append(f"expected exactly {wanted} installed, found: {', '.join(state['distributions']) or 'none'}")
    if "error" in state:
        found.append(state["error"])
    elif provider not in state.get("providers", []):
        found.append(f"onnxruntime lists {', '.join(state.get('providers', []))}, not {provider}")
    if state.get("chromadb") not in (True, None):
        found.append(f"chromadb no longer imports ({state['chromadb']})")
    return found


def main(argv: list[str] | None = None) -> int:
    """Install one variant and report; exit 1 if the result is not clean."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("--python", default=sys.executable, help="the environment's interpreter (default: this one)")
    parser.add_argument("--pip-arg", action="append", default=[], help="passed to pip install (repeatable; write --pip-arg=--no-index)")
    parser.add_argument("--lock", help="a requirements file pinning the variant's wheel by --hash (offline bundles)")
    args = parser.parse_args(argv)
    state = install(args.variant, python=args.python, pip_args=args.pip_arg, lock=args.lock)
    wrong = problems(args.variant, state)
    print(json.dumps({"variant": args.variant, **state, "ok": not wrong}))
    for line in wrong:
        print(f"install_onnxruntime: {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())

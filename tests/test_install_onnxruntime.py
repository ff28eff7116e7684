"""packaging/install_onnxruntime.py on a real throwaway environment with stand-in wheels (no network).

The stand-ins reproduce the conflict: `onnxruntime` and `onnxruntime-rocm` both install the
`onnxruntime` module, and a `chromadb` that requires `onnxruntime`. After `pip install chromadb
onnxruntime-rocm` both distributions are present; the script must leave exactly the ROCm one, with
chromadb still importing.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "packaging" / "install_onnxruntime.py"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")]


def _wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> None:
    """Write a minimal valid wheel (METADATA, WHEEL, RECORD) holding `files`."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    entries = {**files, f"{dist}.dist-info/METADATA": meta,
               f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hearth-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as zf:
        for path, text in entries.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")


def _onnxruntime(providers: list[str]) -> dict[str, str]:
    return {"onnxruntime/__init__.py": f"__version__ = '1.0'\ndef get_available_providers():\n    return {providers!r}\n"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("variant")
    wheels = root / "wheels"
    wheels.mkdir()
    _wheel(wheels, "onnxruntime", "1.22.0", _onnxruntime(["CPUExecutionProvider"]))
    _wheel(wheels, "onnxruntime-rocm", "1.22.2", _onnxruntime(["ROCMExecutionProvider", "CPUExecutionProvider"]))
    _wheel(wheels, "chromadb", "1.0.0", {"chromadb/__init__.py": "# imports onnxruntime only for its own embedder\n"},
           requires=("onnxruntime>=1.14",))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return venv / "bin" / "python", wheels


def _pip_offline(wheels: Path) -> list[str]:
    return ["--no-index", "--find-links", str(wheels)]


def test_the_conflict_is_real_and_the_script_repairs_it(env: tuple[Path, Path]) -> None:
    python, wheels = env
    subprocess.run([python, "-m", "pip", "install", "-q", *_pip_offline(wheels), "chromadb", "onnxruntime-rocm"],
                   check=True)
    probe = "import importlib.metadata as m; print(sorted(d.metadata['Name'] for d in m.distributions() if d.metadata['Name'].startswith('onnxruntime')))"
    both = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "'onnxruntime'" in both and "'onnxruntime-rocm'" in both, "pip leaves both builds installed"

    args = [str(python), str(SCRIPT), "rocm", "--python", str(python)]
    args += [f"--pip-arg={a}" for a in _pip_offline(wheels)]
    # The script's requirement pins 1.22.x for ROCm; the stand-in is 1.22.2.
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout.strip().splitlines()[-1])
    assert state["ok"] and state["distributions"] == ["onnxruntime-rocm"]
    assert state["providers"][0] == "ROCMExecutionProvider"
    assert state["chromadb"] is True


def test_switching_back_to_cpu(env: tuple[Path, Path]) -> None:
    python, wheels = env
    args = [str(python), str(SCRIPT), "cpu", "--python", str(python)]
    args += [f"--pip-arg={a}" for a in _pip_offline(wheels)]
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["distributions"] == ["onnxruntime"]


def test_a_missing_provider_is_reported(env: tuple[Path, Path], tmp_path: Path) -> None:
    python, wheels = env
    _wheel(tmp_path, "onnxruntime-gpu", "1.22.0", _onnxruntime(["CPUExecutionProvider"]))  # lists no CUDA
    args = [str(python), str(SCRIPT), "cuda", "--python", str(python), "--pip-arg=--no-index",
            "--pip-arg=--find-links", f"--pip-arg={tmp_path}"]
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 1
    assert "not CUDAExecutionProvider" in result.stderr


def _sdist(folder: Path, name: str, version: str, marker: Path) -> None:
    """A source package whose build step (setup.py) leaves `marker` behind: building it runs its code."""
    base = f"{name}-{version}"
    setup = (f"import pathlib; pathlib.Path({str(marker)!r}).write_text('built')\n"
             f"from setuptools import setup; setup(name={name!r}, version={version!r})\n")
    files = {"setup.py": setup, "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"}
    with tarfile.open(folder / f"{base}.tar.gz", "w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_a_source_package_is_never_built(env: tuple[Path, Path], tmp_path: Path) -> None:
    """A newer source package of the ROCm build beside the wheel (injected into a mirror) is not built: the
    script installs wheels only, so the setup.py never runs (#65)."""
    python, wheels = env
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for wheel in wheels.glob("*.whl"):
        (mirror / wheel.name).write_bytes(wheel.read_bytes())
    marker = tmp_path / "setup-py-ran"
    _sdist(mirror, "onnxruntime-rocm", "1.22.9", marker)
    # (No build isolation, so that a build would really run the setup.py here, with no index to fetch from.)
    args = [str(python), str(SCRIPT), "rocm", "--python", str(python), "--pip-arg=--no-index",
            f"--pip-arg=--find-links={mirror}", "--pip-arg=--no-build-isolation"]
    result = subprocess.run(args, capture_output=True, text=True)
    assert not marker.exists(), "the source package's setup.py ran"
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["distributions"] == ["onnxruntime-rocm"]


def test_with_a_lock_only_the_pinned_wheel_installs(env: tuple[Path, Path], tmp_path: Path) -> None:
    """An offline bundle's gpu.lock names the wheel by its SHA-256: a wheel of the same name and version with
    other content (swapped into the bundle's gpu/ folder) is refused, the pinned one installs (#65)."""
    python, wheels = env
    good = next(wheels.glob("onnxruntime_rocm-*.whl"))
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    lock = tmp_path / "gpu.lock"
    lock.write_text(f"onnxruntime-rocm==1.22.2 --hash=sha256:{digest}\n")
    args = [str(python), str(SCRIPT), "rocm", "--python", str(python), f"--lock={lock}", "--pip-arg=--no-index"]
    result = subprocess.run([*args, f"--pip-arg=--find-links={wheels}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["distributions"] == ["onnxruntime-rocm"]

    swapped = tmp_path / "swapped"
    swapped.mkdir()
    _wheel(swapped, "onnxruntime-rocm", "1.22.2", _onnxruntime(["ROCMExecutionProvider", "Injected"]))
    result = subprocess.run([*args, f"--pip-arg=--find-links={swapped}"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "hash" in result.stderr.lower()

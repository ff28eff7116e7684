"""pyproject.toml lists Hearth's packages by hand (discovery never ends on the sysfs fixtures' loops)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("app", "rag", "inference")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert listed == found

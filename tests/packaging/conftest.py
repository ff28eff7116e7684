"""Load the packaging scripts (a folder of scripts, not a package: `packaging` is also a PyPI name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str):
    """Import packaging/NAME.py as the module `hearth_packaging_NAME`."""
    module_name = "hearth_packaging_" + name.replace("/", "_")
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "packaging" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bundle_mod():
    return load_script("bundle")


@pytest.fixture(scope="session")
def install_mod():
    return load_script("install")

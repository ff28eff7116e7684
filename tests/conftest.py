"""Shared fixtures."""

from __future__ import annotations

import os

import pytest

# Tests never touch the network or the user's real data folder.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "hearth-data"))

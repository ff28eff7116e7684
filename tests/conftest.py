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
    yield
    # The window freezes its long-lived heap (app.gui.operations.settle_heap); one test's window must not
    # stay frozen, uncollectable, through the rest of the run.
    import gc

    gc.unfreeze()


_exit_status: list[int] = []


def pytest_sessionfinish(session, exitstatus):
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config):
    """End the test process as the app ends its own (app/gui/launch.py `_exit`) once Qt was loaded.

    After the Qt tests, collecting third-party extension objects during interpreter shutdown has crashed
    (a refcount error while finalizing, exit 134) after every test had passed and the summary was
    printed; the results are final by now, so the interpreter's own teardown is skipped.
    """
    import sys

    if "PySide6.QtWidgets" in sys.modules and _exit_status:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[-1])

"""Shared fixtures."""

from __future__ import annotations

import os
import shutil

import pytest

# Tests never touch the network or the user's real data folder.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"


@pytest.fixture(scope="session", autouse=True)
def _machine_cache(tmp_path_factory):
    """The models' cache (HEARTH_CACHE_DIR): one for the run, as a machine has one, never the user's own. The
    embedder is converted once for every `hearth` the tests start, not once per data folder."""
    os.environ["HEARTH_CACHE_DIR"] = str(tmp_path_factory.mktemp("machine-cache"))
    yield


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HEARTH_DATA_DIR", str(tmp_path / "hearth-data"))
    yield
    # The window freezes its long-lived heap (app.gui.operations.settle_heap); one test's window must not
    # stay frozen, uncollectable, through the rest of the run.
    import gc

    gc.unfreeze()


@pytest.fixture(scope="module", autouse=True)
def _module_folders_removed(tmp_path_factory):
    """Remove the folders a test module's fixtures made (tmp_path_factory.mktemp) once the module is done.

    Many hold a joined copy of a built-in chat model (0.5–1.1 GB each); kept to the end of the run they
    added up to some 9 GB, and the disk is shared. A test's own tmp_path is removed when it passes
    (tmp_path_retention_policy in pyproject.toml) and kept when it fails. As an autouse module fixture it
    is set up before the module's other module fixtures and torn down after them; session fixtures are set
    up before it, so their folders (shared across modules) stay to the end of the run.
    """
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    yield
    for path in set(base.iterdir()) - before:
        # Tests' own folders are named after the test (test_…); pytest keeps those of failed tests.
        if path.is_dir() and not path.is_symlink() and not path.name.startswith("test"):
            shutil.rmtree(path, ignore_errors=True)


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

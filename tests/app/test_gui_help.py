"""Help › User guide opens the local copy of the guide (docs/), never a web page."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QUrl  # noqa: E402

from app.gui import main_window  # noqa: E402
from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


class _Desktop:
    """Stands in for QDesktopServices: records the URLs the window asks the desktop to open."""

    opened: list[QUrl] = []

    @staticmethod
    def openUrl(url: QUrl) -> bool:  # noqa: N802 - Qt's name
        _Desktop.opened.append(QUrl(url))
        return True


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """The real window with the default opener (the desktop's), whose QDesktopServices is recorded."""
    _Desktop.opened = []
    monkeypatch.setattr(main_window, "QDesktopServices", _Desktop)
    w = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    return w


def test_the_help_menu_opens_the_local_guide(window):
    titles = [a.text() for a in window.menuBar().actions()]
    help_menu = window.menuBar().actions()[titles.index("&Help")].menu()
    assert window.act_guide in help_menu.actions()

    window.act_guide.trigger()

    assert len(_Desktop.opened) == 1
    url = _Desktop.opened[0]
    assert url.isLocalFile() and url.scheme() == "file", url.toString()
    page = Path(url.toLocalFile())
    assert page.is_file() and page.suffix == ".md"
    assert page == ROOT / "docs" / "README.md"  # the checkout's own docs/ when run from the source


def test_the_guide_is_looked_for_in_the_frozen_app_first(tmp_path, monkeypatch):
    bundled = tmp_path / "_internal"
    (bundled / "docs").mkdir(parents=True)
    (bundled / "docs" / "README.md").write_text("# Hearth's guide\n", encoding="utf-8")
    monkeypatch.setattr(main_window.sys, "_MEIPASS", str(bundled), raising=False)
    assert main_window.guide_index() == bundled / "docs" / "README.md"


def test_a_missing_guide_is_said_in_the_banner_and_nothing_opens(window, monkeypatch, tmp_path):
    monkeypatch.setattr(main_window, "guide_folders", lambda: [tmp_path / "nowhere"])
    window.act_guide.trigger()
    assert _Desktop.opened == []
    assert "user guide is not installed" in window.chat.banner.message

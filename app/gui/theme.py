"""Look and feel: the app icon, light and dark palettes that follow the system, a few shared colours."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

ICON_PATH = Path(__file__).resolve().parents[2] / "assets" / "icons" / "hearth.svg"

# Status colours, readable on both palettes.
OK = QColor("#2f9e44")
WARN = QColor("#e8590c")
ERROR = QColor("#e03131")
ACCENT = QColor("#f76707")
# The memory plan's parts, in the order they stack.
PLAN_COLOURS = {
    "weights": QColor("#4263eb"),
    "kv_cache": QColor("#ae3ec9"),
    "compute": QColor("#f59f00"),
    "embedder": QColor("#12b886"),
}


def app_icon() -> QIcon:
    """Hearth's icon (an SVG; Qt's SVG icon engine is in the essentials wheel)."""
    return QIcon(str(ICON_PATH))


def is_dark() -> bool:
    """True when the system asks for a dark look (HEARTH_THEME=dark|light overrides it)."""
    forced = os.environ.get("HEARTH_THEME", "").lower()
    if forced in ("dark", "light"):
        return forced == "dark"
    hints = QGuiApplication.styleHints()
    scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else Qt.ColorScheme.Unknown
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def apply(app: QApplication) -> None:
    """Fusion with a palette for the system's colour scheme; re-applied when the system switches."""
    app.setStyle("Fusion")
    _apply_palette(app)
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(lambda _scheme: _apply_palette(app))


def _apply_palette(app: QApplication) -> None:
    pal = QPalette()
    if is_dark():
        base, window, text = QColor("#1e1e22"), QColor("#26262b"), QColor("#e9ecef")
        pal.setColor(QPalette.ColorRole.Window, window)
        pal.setColor(QPalette.ColorRole.WindowText, text)
        pal.setColor(QPalette.ColorRole.Base, base)
        pal.setColor(QPalette.ColorRole.AlternateBase, QColor("#2c2c32"))
        pal.setColor(QPalette.ColorRole.Text, text)
        pal.setColor(QPalette.ColorRole.Button, QColor("#303036"))
        pal.setColor(QPalette.ColorRole.ButtonText, text)
        pal.setColor(QPalette.ColorRole.ToolTipBase, QColor("#303036"))
        pal.setColor(QPalette.ColorRole.ToolTipText, text)
        pal.setColor(QPalette.ColorRole.PlaceholderText, QColor("#868e96"))
        pal.setColor(QPalette.ColorRole.Link, QColor("#ffa94d"))
        pal.setColor(QPalette.ColorRole.Mid, QColor("#3a3a41"))
        pal.setColor(QPalette.ColorRole.Midlight, QColor("#34343a"))
        for group in (QPalette.ColorGroup.Disabled,):
            pal.setColor(group, QPalette.ColorRole.Text, QColor("#6c6c74"))
            pal.setColor(group, QPalette.ColorRole.ButtonText, QColor("#6c6c74"))
            pal.setColor(group, QPalette.ColorRole.WindowText, QColor("#6c6c74"))
    else:
        pal.setColor(QPalette.ColorRole.Window, QColor("#f4f3f1"))
        pal.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
        pal.setColor(QPalette.ColorRole.AlternateBase, QColor("#f8f7f5"))
        pal.setColor(QPalette.ColorRole.Button, QColor("#ecebe8"))
        pal.setColor(QPalette.ColorRole.Link, QColor("#d9480f"))
        pal.setColor(QPalette.ColorRole.PlaceholderText, QColor("#868e96"))
    pal.setColor(QPalette.ColorRole.Highlight, ACCENT)
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    app.setPalette(pal)

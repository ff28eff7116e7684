"""Render the app icon set for desktop integration from assets/icons/hearth.svg (needs PySide6's QtSvg).

    python packaging/make_icons.py

Writes assets/icons/hicolor/{16,24,32,48,64,128,256,512}x…/apps/io.hearth.Hearth.png and
scalable/apps/io.hearth.Hearth.svg: the freedesktop icon theme layout the installer copies into
/usr/share/icons/hicolor (or ~/.local/share/icons/hicolor). Software centres show the 64 and 128 px
icons that AppStream asks for; panels and menus pick the size they draw at. Rerun after changing the SVG.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "assets" / "icons" / "hearth.svg"
TARGET = ROOT / "assets" / "icons" / "hicolor"
APP_ID = "io.hearth.Hearth"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(source: Path = SOURCE, target: Path = TARGET, sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """Render `source` at every size into a hicolor tree under `target`; returns the files written."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(source))
    if not renderer.isValid():
        raise SystemExit(f"make_icons: {source} is not a valid SVG")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        path = target / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(path), "PNG"):
            raise SystemExit(f"make_icons: cannot write {path}")
        written.append(path)
    scalable = target / "scalable" / "apps" / f"{APP_ID}.svg"
    scalable.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, scalable)
    written.append(scalable)
    return written


if __name__ == "__main__":
    for p in render():
        print(p.relative_to(ROOT))

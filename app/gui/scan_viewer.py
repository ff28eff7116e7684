"""A scanned page as its picture, with the lines of a cited passage marked where they are on it.

For documents OCR read (pictures, and PDF pages without a text layer), whose text the PDF viewer cannot
search and whose text view loses the page's look. The page is a PDF page rendered by QtPdf or a picture
(a TIFF's frame) read by QImageReader, scaled to the window's width; the boxes come from
`Hearth.page_boxes`, as fractions of the page, so they fit any scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QImageReader, QKeySequence, QPainter, QPaintEvent, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from app.gui import theme

Box = tuple[float, float, float, float]
_PDF_DPI = 150  # a PDF page is rendered at this resolution: sharp on screen, small in memory


def page_image(path: Path, page: int) -> QImage:
    """The picture of `page` (1-based): a PDF page rendered, or a picture file's frame; a null image when it
    cannot be had."""
    if path.suffix.lower() == ".pdf":
        from PySide6.QtPdf import QPdfDocument

        document = QPdfDocument()
        try:
            if document.load(str(path)) != QPdfDocument.Error.None_ or not 1 <= page <= document.pageCount():
                return QImage()
            points = document.pagePointSize(page - 1)
            size = QSize(max(1, round(points.width() * _PDF_DPI / 72)), max(1, round(points.height() * _PDF_DPI / 72)))
            return document.render(page - 1, size)
        finally:
            document.close()
    reader = QImageReader(str(path))
    reader.setAutoTransform(True)  # as the OCR read it: EXIF orientation applied
    if page > 1 and not reader.jumpToImage(page - 1):
        return QImage()
    return reader.read()


class _Page(QWidget):
    """The page picture scaled to the widget, boxes filled with a translucent highlight."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = QImage()
        self.boxes: list[Box] = []

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.fillRect(self.rect(), Qt.GlobalColor.white)
        if not self.image.isNull():
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            painter.drawImage(QRectF(self.rect()), self.image)
        colour = QColor(theme.WARN)
        colour.setAlpha(90)
        for rect in self.box_rects():
            painter.fillRect(rect, colour)
        painter.end()

    def box_rects(self) -> list[QRectF]:
        """The boxes in this widget's pixels, with a little room around each line."""
        w, h = self.width(), self.height()
        pad = 0.004 * h
        return [QRectF(x0 * w - pad, y0 * h - pad, (x1 - x0) * w + 2 * pad, (y1 - y0) * h + 2 * pad)
                for x0, y0, x1, y1 in self.boxes]  # fmt: skip


class ScanViewer(QWidget):
    """One window per scanned document; `show_page` shows a page with the cited lines marked."""

    open_original = Signal(Path)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowIcon(theme.app_icon())
        self.resize(820, 1000)
        self.path: Path | None = None
        self.page = 1

        bar = QHBoxLayout()
        bar.setContentsMargins(8, 6, 8, 6)
        self.page_label = QLabel()
        bar.addWidget(self.page_label)
        bar.addStretch(1)
        self.found = QLabel()
        bar.addWidget(self.found)
        self.original = QPushButton(self.tr("Open in its application"))
        self.original.setToolTip(self.tr("Open the original file in the application your system uses for it"))
        self.original.clicked.connect(lambda: self.path is not None and self.open_original.emit(self.path))
        bar.addWidget(self.original)
        self.canvas = _Page()
        self.scroll = QScrollArea(self)
        self.scroll.setWidget(self.canvas)
        self.scroll.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.scroll.viewport().installEventFilter(self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
        lay.addWidget(self.scroll, 1)
        QShortcut(QKeySequence.StandardKey.Close, self, self.close)

    def show_page(self, path: Path, page: int, boxes: Sequence[Box]) -> bool:
        """Show `page` (1-based) of `path` with `boxes` marked; False when its picture cannot be had."""
        image = page_image(path, page)  # read again each time: the file may have changed
        if image.isNull():
            return False
        self.canvas.image = image
        self.path, self.page = path, page
        self.canvas.boxes = list(boxes)
        self.setWindowTitle(self.tr("{name} — Hearth").format(name=path.name))
        self.page_label.setText(self.tr("Page {n}").format(n=page))
        self.found.setText(self.tr("Passage highlighted") if boxes else "")
        self._fit()
        # Scroll once the window is laid out (it is shown right after this), else it stays at the top.
        QTimer.singleShot(0, self._scroll_to_first)
        return True

    def highlighted(self) -> list[tuple[float, float, float, float]]:
        """The marked boxes in the page picture's pixels (x0, y0, x1, y1): for tests and accessibility."""
        w, h = self.canvas.image.width(), self.canvas.image.height()
        return [(x0 * w, y0 * h, x1 * w, y1 * h) for x0, y0, x1, y1 in self.canvas.boxes]

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.scroll.viewport() and event.type() == event.Type.Resize:
            self._fit()
        return super().eventFilter(watched, event)

    def _fit(self) -> None:
        """The page as wide as the window (never wider than twice its pixels), as tall as its shape says."""
        image = self.canvas.image
        if image.isNull():
            return
        width = max(50, min(self.scroll.viewport().width(), 2 * image.width()))
        self.canvas.setFixedSize(width, max(1, round(width * image.height() / image.width())))
        self.canvas.update()

    def _scroll_to_first(self) -> None:
        rects = self.canvas.box_rects()
        if rects:
            top = rects[0].center()
            self.scroll.ensureVisible(round(top.x()), round(top.y()), 20, self.scroll.viewport().height() // 3)

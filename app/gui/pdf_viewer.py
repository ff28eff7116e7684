"""A PDF viewer inside the app (QtPdf): opens a cited document at its page and highlights the passage."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QPointF, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtPdf import QPdfDocument, QPdfSearchModel
from PySide6.QtPdfWidgets import QPdfView
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from app.gui import theme


def search_phrase(passage: str) -> str:
    """A short run of the passage's first words, likely to appear verbatim in the PDF's text layer."""
    words = re.findall(r"\S+", passage)
    phrase = ""
    for w in words:
        if len(phrase) + len(w) + 1 > 40:
            break
        phrase = f"{phrase} {w}".strip()
    return phrase


class PdfViewer(QWidget):
    """One window per document; `show_page` jumps to a page and highlights a phrase on it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowIcon(theme.app_icon())
        self.resize(820, 1000)
        self.document = QPdfDocument(self)
        self.search = QPdfSearchModel(self)
        self.search.setDocument(self.document)
        self.view = QPdfView(self)
        self.view.setDocument(self.document)
        self.view.setPageMode(QPdfView.PageMode.MultiPage)
        self.view.setZoomMode(QPdfView.ZoomMode.FitToWidth)
        self.view.setSearchModel(self.search)
        self.path: Path | None = None
        self.page = 1
        self._want_page: int | None = None

        bar = QHBoxLayout()
        bar.setContentsMargins(8, 6, 8, 6)
        bar.addWidget(QLabel(self.tr("Page")))
        self.page_box = QSpinBox()
        self.page_box.setMinimum(1)
        self.page_box.valueChanged.connect(lambda n: self._jump(n))
        bar.addWidget(self.page_box)
        self.of_pages = QLabel()
        bar.addWidget(self.of_pages)
        bar.addStretch(1)
        self.found = QLabel()
        bar.addWidget(self.found)
        for text, tip, step in (("−", self.tr("Zoom out"), 1 / 1.2), ("+", self.tr("Zoom in"), 1.2)):
            b = QPushButton(text)
            b.setToolTip(tip)
            b.setFixedWidth(32)
            b.clicked.connect(lambda _=False, s=step: self._zoom(s))
            bar.addWidget(b)
        fit = QPushButton(self.tr("Fit width"))
        fit.clicked.connect(lambda: self.view.setZoomMode(QPdfView.ZoomMode.FitToWidth))
        bar.addWidget(fit)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
        lay.addWidget(self.view, 1)
        self.search.countChanged.connect(self._on_results)
        self.view.pageNavigator().currentPageChanged.connect(self._on_page_changed)
        QShortcut(QKeySequence.StandardKey.Close, self, self.close)

    def show_page(self, path: Path, page: int | None, passage: str = "") -> bool:
        """Open `path` (if not open) at `page` (1-based), highlighting the passage's opening words."""
        if self.path != path:
            self.document.close()
            if self.document.load(str(path)) != QPdfDocument.Error.None_:
                return False
            self.path = path
            self.setWindowTitle(self.tr("{name} — Hearth").format(name=path.name))
            self.page_box.setMaximum(max(1, self.document.pageCount()))
            self.of_pages.setText(self.tr("of {n}").format(n=self.document.pageCount()))
        self._want_page = page or 1
        self.page = self._want_page
        # Jump once the view is laid out (it is shown right after this), else it starts at the top.
        QTimer.singleShot(0, lambda p=self._want_page: self._jump(p))
        phrase = search_phrase(passage)
        self.found.setText("")
        self.search.setSearchString(phrase)
        self._on_results()
        return True

    def _jump(self, page: int) -> None:
        page = max(1, min(page, max(1, self.document.pageCount())))
        self.page = page
        if self.view.pageNavigator().currentPage() != page - 1:
            self.view.pageNavigator().jump(page - 1, QPointF(), self.view.pageNavigator().currentZoom())
        if self.page_box.value() != page:
            self.page_box.setValue(page)

    def _on_page_changed(self, index: int) -> None:
        self.page = index + 1
        if self.page_box.value() != self.page:
            self.page_box.blockSignals(True)
            self.page_box.setValue(self.page)
            self.page_box.blockSignals(False)

    def _on_results(self) -> None:
        want = self._want_page
        if want is None:
            return
        pages = [self.search.resultAtIndex(i).page() for i in range(self.search.count())]
        if want - 1 not in pages:
            return  # the search goes on in the background; more results may come
        self._want_page = None  # before acting: selecting a result makes the model signal again
        self.view.setCurrentSearchResultIndex(pages.index(want - 1))
        self.found.setText(self.tr("Passage highlighted"))

    def _zoom(self, factor: float) -> None:
        self.view.setZoomMode(QPdfView.ZoomMode.Custom)
        self.view.setZoomFactor(max(0.2, min(6.0, self.view.zoomFactor() * factor)))

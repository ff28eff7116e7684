"""Opening what an answer points at: cited passages and quotes (a scanned page as its picture with the
passage's lines marked, a PDF in the app at its page, any other document as the text Hearth read from it),
documents from the library, and links, which open outside the app only once the user has seen where they lead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl

from app.gui.controllers.base import Controller
from app.gui.widgets import confirm
from app.gui.worker import Failure, Job

LINK_SCHEMES = ("http", "https", "mailto")  # never file: an answer must not open local files
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")  # always read by OCR


class SourceController(Controller):
    """The document viewers (one window per document) and what is handed to other applications."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.pdf_viewers: dict[Path, Any] = {}
        self.text_viewers: dict[Path, Any] = {}
        self.scan_viewers: dict[Path, Any] = {}

    def open_hit(self, hit: Any) -> Job | None:
        """Open a cited passage or quote (anything with source, page, text, start, end): a page OCR read as its
        picture with the passage's lines marked, a PDF in the app at its page, any other document as the text
        Hearth read from it, scrolled to the passage, highlighted. A section a summary cites (`section` true,
        no text of its own) is highlighted from start to end."""
        path = Path(hit.source)
        scanned = getattr(hit, "ocr_confidence", None) is not None or path.suffix.lower() in PICTURE_SUFFIXES
        if scanned and hit.page is not None and path.exists():
            job = self.ops.page_boxes(path, hit.page)
            job.finished.connect(lambda page: self._show_scan(path, page, hit))
            job.failed.connect(lambda _failure: self._open_as_read(hit))  # says why, if it cannot be read
            return job
        return self._open_as_read(hit)

    def _show_scan(self, path: Path, page: Any, hit: Any) -> None:
        """The page's picture with the passage's lines marked; where that cannot be, as if it were not a scan."""
        from app.gui.scan_viewer import ScanViewer

        snippet = "" if getattr(hit, "section", False) else hit.text
        boxes = page.covering(hit.start, hit.end, snippet) if page is not None else []
        if not boxes:
            self._open_as_read(hit)
            return
        viewer = self._viewer(self.scan_viewers, path, ScanViewer)
        if viewer.show_page(path, page.page, boxes):
            _present(viewer)
            return
        viewer.close()
        self._open_as_read(hit)

    def _viewer(self, viewers: dict[Path, Any], path: Path, kind: Any) -> Any:
        """The open viewer window of `kind` for a document, or a new one (one window per document)."""
        viewer = viewers.get(path)
        if viewer is None:
            viewer = kind(self.window)
            viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            viewer.destroyed.connect(lambda _=None, p=path: viewers.pop(p, None))
            if hasattr(viewer, "open_original"):
                viewer.open_original.connect(self.window.open_external)
            viewers[path] = viewer
        return viewer

    def _open_as_read(self, hit: Any) -> Job | None:
        """A PDF at the hit's page, any other document as its text with the passage highlighted."""
        path = Path(hit.source)
        if path.suffix.lower() == ".pdf" or not path.exists():
            self.open_path(path, hit.page, hit.text)
            return None
        stamp = _file_stamp(path)
        viewer = self.text_viewers.get(path)
        if viewer is not None and stamp is not None and viewer.stamp == stamp:
            self._show_text(path, viewer.text, hit, stamp)  # unchanged since it was read: not read again
            return None
        job = self.ops.document_text(path)
        job.finished.connect(lambda text: self._show_text(path, text, hit, stamp))

        def failed(failure: Failure) -> None:
            self.show_failure(failure)
            self.open_unreadable(path)  # still offer the document, without the place

        job.failed.connect(failed)
        return job

    def _show_text(self, path: Path, text: str, hit: Any, stamp: tuple[int, int] | None) -> None:
        from app.gui.text_viewer import TextViewer

        viewer = self._viewer(self.text_viewers, path, TextViewer)
        viewer.stamp = stamp
        snippet = hit.text
        if getattr(hit, "section", False):
            snippet = text[hit.start:hit.end] if 0 <= hit.start < hit.end <= len(text) else ""
        viewer.show_text(path, text, hit.start, hit.end, snippet)
        _present(viewer)

    def open_document(self, source: str) -> None:
        """Open a document of the library (or a watched folder); one Hearth could not read only after asking."""
        path = Path(source)
        if self.window.library.status_of(source) == "failed":
            if path.exists():
                self.open_unreadable(path)
            else:
                self.open_path(path, None, "")  # says it is gone
            return
        self.open_path(path, None, "")

    def open_path(self, path: Path, page: int | None, passage: str) -> None:
        """Open a document, at a page where it has pages."""
        if not path.exists():
            self.show_failure(Failure(self.tr("{name} is no longer at {folder}.").format(
                name=path.name, folder=path.parent), self.tr("Re-index it from its new place, or remove it.")))
            return
        if path.suffix.lower() == ".pdf":
            from app.gui.pdf_viewer import PdfViewer

            viewer = self._viewer(self.pdf_viewers, path, PdfViewer)
            if viewer.show_page(path, page, passage):
                _present(viewer)
                return
            viewer.close()
            self.open_unreadable(path)  # the PDF viewer cannot show it either
            return
        self.window.open_external(path)

    def open_unreadable(self, path: Path) -> bool:
        """Offer a document Hearth could not read to its default application: only once the user agrees,
        having seen its full path (a file that broke the readers may be built to harm another program)."""
        if not confirm(self.window, self.tr("Open in another application?"),
                       self.tr("Hearth could not read this document:\n\n{path}\n\nOpen it in the application "
                               "your system uses for it?").format(path=path)):
            return False
        self.window.open_external(path)
        return True

    def open_link(self, url: QUrl) -> bool:
        """Open a link from an answer in the system's application, after showing where it leads and asking.

        Only web and mail links are followed; a mail link loses its query (?subject=, ?body=…), which a
        document could use to fill a message with what it wants sent.
        """
        if url.scheme().lower() not in LINK_SCHEMES:
            return False
        if url.scheme().lower() == "mailto":
            url = QUrl(url)
            url.setQuery(None)  # None: no query at all ("" would leave a bare "?")
            url.setFragment(None)
        target = url.toString()
        if not confirm(self.window, self.tr("Open link?"),
                       self.tr("The answer links to:\n\n{url}\n\nOpen it outside Hearth?").format(url=target)):
            return False
        self.window.open_external(url)
        return True

    def close_all(self) -> None:
        """Close the PDF and scan viewers (the window is closing)."""
        for viewer in [*self.pdf_viewers.values(), *self.scan_viewers.values()]:
            viewer.close()


def _present(viewer: Any) -> None:
    viewer.show()
    viewer.raise_()
    viewer.activateWindow()


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size, to tell whether it changed; None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size

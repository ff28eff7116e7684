"""Markdown shown safely: an answer (model output that may repeat a document) in a read-only view that
never shows an image or HTML and never loads anything, whatever URL the text names.

Showing is enough to read a file in Qt: an image in a rich-text document is loaded when it is laid out,
and when the document gives no data for it, Qt's image handler opens the file by its name itself
(`/dev/zero` exhausts memory, a FIFO freezes the window). So: image syntax is escaped before parsing,
any image the parser still makes is turned back into text after it, HTML stays text, neither the view
nor its document loads a resource, and images are laid out as nothing.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QSize, QSizeF, Qt, QUrl, Signal
from PySide6.QtGui import QPyTextObject, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat, QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

# Code spans and fenced blocks, where Markdown syntax is text already.
CODE_SPANS = re.compile(r"(```.*?(?:```|$)|`[^`\n]*`)", re.S)
# An image opener `![` that Markdown would read as one: its `!` is not already escaped by an odd number of
# backslashes (`\![` is a literal "!" and a link; `\\![` is a literal backslash and an image).
_IMAGE_OPENER = re.compile(r"(?<!\\)((?:\\\\)*)!\[")


def no_images(markdown: str) -> str:
    """Markdown whose image syntax (`![alt](url)`, `![alt][ref]`) is text: its `!` escaped, outside code."""
    parts = CODE_SPANS.split(markdown)
    return "".join(p if i % 2 else _IMAGE_OPENER.sub(r"\1\\![", p) for i, p in enumerate(parts))


class _NoResourceDocument(QTextDocument):
    """A text document that loads nothing: no image, style sheet or file, whatever URL it is asked for.

    (QTextDocument's own fallback reads any local file a resource names, even when the view refuses it.)
    """

    def loadResource(self, type: int, name: QUrl) -> None:  # noqa: A002, N802 - Qt API
        return None


class _BlankImages(QPyTextObject):
    """Lays out any image as nothing: Qt's own image handler, given no resource, reads the file itself."""

    def intrinsicSize(self, doc: QTextDocument, pos: int, fmt: QTextFormat) -> QSizeF:  # noqa: N802 - Qt API
        return QSizeF(0, 0)

    def drawObject(self, painter, rect, doc, pos, fmt) -> None:  # noqa: N802 - Qt API
        return None


class MarkdownView(QTextBrowser):
    """Read-only Markdown that is as tall as its text; links are reported, not followed, and nothing is loaded."""

    link_clicked = Signal(QUrl)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDocument(_NoResourceDocument(self))
        self._blank_images = _BlankImages(self)
        self.document().documentLayout().registerHandler(QTextFormat.ObjectTypes.ImageObject, self._blank_images)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self.link_clicked)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.document().setDocumentMargin(2)
        self.document().contentsChanged.connect(self._fit)

    def set_markdown(self, text: str) -> None:
        """Show Markdown text, never raw HTML and never an image.

        An answer is model output and may repeat what a document says: an image (`![x](/etc/passwd)`) or
        an HTML tag would make the view read a local file just by showing it. Image syntax is escaped
        before parsing, any image the parser still made is turned back into text after it, HTML stays
        text, and neither the view nor its document loads a resource for any URL.
        """
        features = QTextDocument.MarkdownFeature
        self.document().setMarkdown(no_images(text), features.MarkdownDialectGitHub | features.MarkdownNoHTML)
        _images_to_text(self.document())
        self._fit()

    def loadResource(self, type: int, name: QUrl) -> None:  # noqa: A002, N802 - Qt API
        """Nothing, for any URL: an answer never shows a file, an image or a page."""
        return None

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        doc = self.document()
        doc.setTextWidth(max(50, self.viewport().width()))
        h = int(doc.size().height()) + 4
        if h != self.height():
            self.setFixedHeight(h)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(400, self.height())


def _images_to_text(doc: QTextDocument) -> None:
    """Replace every image in `doc` by its URL as plain text."""
    found: list[tuple[int, int, str]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            if fmt.isImageFormat():
                found.append((fragment.position(), fragment.length(), fmt.toImageFormat().name()))
            it += 1
        block = block.next()
    for position, length, name in reversed(found):
        cursor = QTextCursor(doc)
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(name, QTextCharFormat())

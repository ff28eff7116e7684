"""The text of a document as Hearth read it, with a cited passage or quote highlighted.

For every document but PDF (which has its own viewer): Word, HTML, Markdown, e-mail… open in their own
application, which cannot be told where a quote is. This window shows the text the loaders extracted,
the one that passage and quote offsets point into, scrolled to the quote and highlighted; a button opens
the original.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeySequence, QShortcut, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QTextEdit, QVBoxLayout, QWidget

from app.gui import theme

_WORDS_MATCHED = 12  # words of the quote matched when its exact text is not in the document any more


def locate(text: str, start: int, end: int, snippet: str) -> tuple[int, int] | None:
    """Where `snippet` is in `text`: at start..end when it is still there, else where it (or its first
    words, whatever the spacing) is found; None when the document no longer holds it."""
    if snippet and 0 <= start < end <= len(text) and text[start:end] == snippet:
        return start, end
    if not snippet.strip():
        return None
    at = text.find(snippet)
    if at >= 0:
        return at, at + len(snippet)
    words = re.findall(r"\S+", snippet)[:_WORDS_MATCHED]
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (m.start(), m.end()) if m else None


def _utf16(text: str, index: int) -> int:
    """A Python string index as a Qt text position (UTF-16 code units)."""
    return index + sum(1 for c in text[:index] if ord(c) > 0xFFFF)


class TextViewer(QWidget):
    """One window per document; `show_text` shows its text and highlights a span of it."""

    open_original = Signal(Path)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowIcon(theme.app_icon())
        self.resize(820, 900)
        self.path: Path | None = None
        self.span: tuple[int, int] | None = None  # the highlighted span, in Python string indices
        self.stamp: tuple[int, int] | None = None  # the file's (mtime_ns, size) when its text was read
        self._text = ""

        bar = QHBoxLayout()
        bar.setContentsMargins(8, 6, 8, 6)
        self.note = QLabel(self.tr("The text Hearth read from this document"))
        bar.addWidget(self.note)
        bar.addStretch(1)
        self.found = QLabel()
        bar.addWidget(self.found)
        self.original = QPushButton(self.tr("Open in its application"))
        self.original.setToolTip(self.tr("Open the original file in the application your system uses for it"))
        self.original.clicked.connect(lambda: self.path is not None and self.open_original.emit(self.path))
        bar.addWidget(self.original)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
        lay.addWidget(self.view, 1)
        QShortcut(QKeySequence.StandardKey.Close, self, self.close)

    def show_text(self, path: Path, text: str, start: int, end: int, snippet: str) -> bool:
        """Show `text` (the document's, as read now) with `snippet` highlighted; False when it is not there."""
        if self.path != path or self._text != text:
            self.path = path
            self._text = text
            self.setWindowTitle(self.tr("{name} — Hearth").format(name=path.name))
            # A carriage return would end a line in Qt and shift every position after it: shown as a space.
            self.view.setPlainText(text.replace("\r", " "))
        self.span = locate(text, start, end, snippet)
        if self.span is None:
            self.view.setExtraSelections([])
            self.found.setText(self.tr("The document changed since it was indexed: the passage is not in it now"))
            return False
        a, b = (_utf16(text, i) for i in self.span)
        cursor = QTextCursor(self.view.document())
        cursor.setPosition(a)
        cursor.setPosition(b, QTextCursor.MoveMode.KeepAnchor)
        mark = QTextEdit.ExtraSelection()
        mark.cursor = cursor
        fmt = QTextCharFormat()
        colour = QColor(theme.WARN)
        colour.setAlpha(90)
        fmt.setBackground(colour)
        mark.format = fmt
        self.view.setExtraSelections([mark])
        place = QTextCursor(self.view.document())
        place.setPosition(a)
        self.view.setTextCursor(place)
        # Centre once the window is laid out (it is shown right after this), else it stays at the top.
        QTimer.singleShot(0, self.view.centerCursor)
        self.found.setText(self.tr("Quote highlighted"))
        return True

    @property
    def text(self) -> str:
        """The document's text shown."""
        return self._text

    @property
    def highlighted(self) -> str:
        """The text highlighted now ('' when none): for tests and accessibility."""
        marks = self.view.extraSelections()
        return marks[0].cursor.selectedText().replace("\u2029", "\n") if marks else ""

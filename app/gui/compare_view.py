"""The comparison window: what changed between two documents or versions, side by side, one change at a time.

A list of the changes (added, removed, changed, moved, each with its section and pages) to step through; the
selected change's old and new text side by side, words removed marked on the old side and words added on the
new side; and below, both documents whole, side by side, every change highlighted where it stands and the
selected one scrolled into view. The comparison itself is the core's (`Hearth.compare`); this only shows it.
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QDialog, QHBoxLayout, QLabel, QListWidget, QPlainTextEdit, QPushButton, QSplitter, QTextBrowser, QTextEdit,
    QVBoxLayout, QWidget,
)

from app.gui.widgets import muted
from rag.compare import Change, Comparison, Side, find_in, word_changes

REMOVED_STYLE = "background-color:#ffd8d8;color:#000;text-decoration:line-through"
ADDED_STYLE = "background-color:#d3f9d8;color:#000"
MOVED_STYLE = "background-color:#d0ebff;color:#000"
# Where each kind of change is highlighted in the whole documents: (old side, new side); the selected one darker.
MARKS = {"removed": ("#ffd8d8", None), "added": (None, "#d3f9d8"), "changed": ("#fff3bf", "#fff3bf"),
         "moved": ("#d0ebff", "#d0ebff")}
SELECTED = "#ffd43b"


class CompareView(QDialog):
    """Two documents or versions compared: the changes listed, the selected one shown old | new."""

    def __init__(self, comparison: Comparison, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.comparison = comparison
        self.setWindowTitle(self.tr("What changed: {old} → {new}").format(
            old=Path(comparison.old.source).name, new=Path(comparison.new.source).name))
        self.resize(1000, 640)
        lay = QVBoxLayout(self)
        self.summary = QLabel(comparison.summary)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.summary)

        self.changes = QListWidget()
        for n, change in enumerate(comparison.changes, 1):
            self.changes.addItem(f"{n}. {self._kind(change)}" + (f" — {_section(change.heading)}" if change.heading
                                                                  else "") + _pages(change))
        self.changes.currentRowChanged.connect(self._show)
        self.old_label, self.new_label = muted(self._side(comparison.old)), muted(self._side(comparison.new))
        self.old_text, self.new_text = QTextBrowser(), QTextBrowser()
        panes = QSplitter(Qt.Orientation.Horizontal)
        for label, text in ((self.old_label, self.old_text), (self.new_label, self.new_text)):
            box = QWidget()
            col = QVBoxLayout(box)
            col.setContentsMargins(0, 0, 0, 0)
            col.addWidget(label)
            col.addWidget(text, 1)
            panes.addWidget(box)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.changes)
        top.addWidget(panes)
        self.old_doc, self.new_doc = _document(comparison.texts[0]), _document(comparison.texts[1])
        whole = QSplitter(Qt.Orientation.Horizontal)
        whole.addWidget(self.old_doc)
        whole.addWidget(self.new_doc)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(whole)
        split.setStretchFactor(1, 2)
        lay.addWidget(split, 1)
        self.spans = places(comparison)  # each change's (old span, new span) in the whole texts

        bar = QHBoxLayout()
        self.position = muted()
        bar.addWidget(self.position, 1)
        self.previous = QPushButton(self.tr("Previous change"))
        self.previous.setShortcut("Alt+Up")
        self.previous.clicked.connect(lambda: self.step(-1))
        self.next = QPushButton(self.tr("Next change"))
        self.next.setShortcut("Alt+Down")
        self.next.clicked.connect(lambda: self.step(1))
        close = QPushButton(self.tr("Close"))
        close.clicked.connect(self.close)
        for button in (self.previous, self.next, close):
            bar.addWidget(button)
        lay.addLayout(bar)
        if comparison.changes:
            self.changes.setCurrentRow(0)
        else:
            self._show(-1)

    def current(self) -> int:
        """The index of the change shown (-1 when there are none)."""
        return self.changes.currentRow()

    def step(self, by: int) -> None:
        """Show the next (1) or previous (-1) change."""
        row = self.current() + by
        if 0 <= row < self.changes.count():
            self.changes.setCurrentRow(row)

    def _show(self, row: int) -> None:
        count = len(self.comparison.changes)
        self.previous.setEnabled(row > 0)
        self.next.setEnabled(0 <= row < count - 1)
        if not 0 <= row < count:
            self.position.setText(self.tr("No changes in the text (formatting and spacing aside)."))
            self.old_text.clear()
            self.new_text.clear()
            return
        self.position.setText(self.tr("Change {n} of {count}").format(n=row + 1, count=count))
        self._mark(row)
        old, new = change_html(self.comparison.changes[row])
        self.old_text.setHtml(old or f"<i>{html.escape(self.tr('Not in the old version.'))}</i>")
        self.new_text.setHtml(new or f"<i>{html.escape(self.tr('Not in the new version.'))}</i>")

    def _mark(self, row: int) -> None:
        """Highlight every change in the whole documents, the selected one darker, and scroll to it."""
        for side, doc in enumerate((self.old_doc, self.new_doc)):
            marks = []
            for n, (change, spans) in enumerate(zip(self.comparison.changes, self.spans, strict=True)):
                colour = SELECTED if n == row else MARKS[change.kind][side]
                if spans[side] is not None and colour is not None:
                    marks.append(_selection(doc, spans[side], colour))
            doc.setExtraSelections(marks)
            span = self.spans[row][side]
            if span is not None:
                cursor = doc.textCursor()
                cursor.setPosition(span[0])
                doc.setTextCursor(cursor)
                doc.centerCursor()

    def _kind(self, change: Change) -> str:
        if change.renamed:
            return self.tr("renamed")
        return {"added": self.tr("added"), "removed": self.tr("removed"), "changed": self.tr("changed"),
                "moved": self.tr("moved")}[change.kind]

    def _side(self, side: Side) -> str:
        text = side.source
        if side.version:
            text += " · " + self.tr("version {n}").format(n=side.version)
        if side.indexed_at:
            text += " · " + self.tr("indexed {when}").format(
                when=dt.datetime.fromtimestamp(side.indexed_at).strftime("%Y-%m-%d %H:%M"))
        return text


def change_html(change: Change) -> tuple[str, str]:
    """The old and new sides of a change as HTML, the words that differ marked ("" for a side without text)."""
    if change.kind == "changed":
        pieces = word_changes(change.old_text or "", change.new_text or "")
        old = " ".join(_span(t, REMOVED_STYLE) if op == "-" else html.escape(t) for op, t in pieces if op != "+")
        new = " ".join(_span(t, ADDED_STYLE) if op == "+" else html.escape(t) for op, t in pieces if op != "-")
        return _block(old), _block(new)
    style = {"added": ADDED_STYLE, "removed": REMOVED_STYLE, "moved": MOVED_STYLE}[change.kind]
    old = _block(_span(change.old_text, style)) if change.old_text else ""
    new = _block(_span(change.new_text, style)) if change.new_text else ""
    return old, new


def places(comparison: Comparison) -> list[tuple[tuple[int, int] | None, tuple[int, int] | None]]:
    """Where each change stands in the old and the new full text (None where it has no text on that side, or its
    text cannot be found there); on the new side, searched on from the change before (they come in its order)."""
    out = []
    after = 0
    for change in comparison.changes:
        old = find_in(comparison.texts[0], change.old_text) if change.old_text else None
        new = None
        if change.new_text:
            new = find_in(comparison.texts[1], change.new_text, after) or find_in(comparison.texts[1], change.new_text)
            after = new[1] if new else after
        out.append((old, new))
    return out


def _document(text: str) -> QPlainTextEdit:
    view = QPlainTextEdit(text)
    view.setReadOnly(True)
    return view


def _selection(view: QPlainTextEdit, span: tuple[int, int], colour: str) -> QTextEdit.ExtraSelection:
    selection = QTextEdit.ExtraSelection()
    cursor = QTextCursor(view.document())
    cursor.setPosition(span[0])
    cursor.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
    fmt = QTextCharFormat()
    fmt.setBackground(QColor(colour))
    fmt.setForeground(QColor("#000"))
    selection.cursor, selection.format = cursor, fmt
    return selection


def _span(text: str, style: str) -> str:
    return f'<span style="{style}">{html.escape(text)}</span>'


def _block(inner: str) -> str:
    return f'<p style="white-space:pre-wrap">{inner}</p>'


def _section(heading: str) -> str:
    return heading.split(" › ")[-1]


def _pages(change: Change) -> str:
    pages = [f"old p. {change.old_page}" if change.old_page else "", f"new p. {change.new_page}" if change.new_page
             else ""]
    shown = " → ".join(p for p in pages if p)
    return f"  ({shown})" if shown else ""

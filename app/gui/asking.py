"""What a question is asked of, and what was searched for it: the scope chip above the question box, the
"Searched for" line under a question (editable, to search again), and how a summary shows its progress and
opens its sections.

File names, queries and headings come from documents and users: every label here is plain text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLineEdit, QToolButton, QWidget

from app.gui.operations import SUMMARY_OF
from app.gui.widgets import muted, plain_label, plain_tooltip
from rag.answer import Answer
from rag.loaders import HEADING_SEPARATOR
from rag.summary import SummaryProgress

_NAMES_SHOWN = 3  # file names spelled out in the scope chip; the tooltip lists them all


def scope_text(sources: Sequence[str]) -> str:
    """The chip's words for the chosen documents: "2 documents: a.pdf, b.docx"."""
    names = ", ".join(Path(s).name for s in sources[:_NAMES_SHOWN])
    if len(sources) > _NAMES_SHOWN:
        names += ", …"
    if len(sources) == 1:
        return QCoreApplication.translate("ScopeChip", "1 document: {names}").format(names=names)
    return QCoreApplication.translate("ScopeChip", "{n} documents: {names}").format(n=len(sources), names=names)


class ScopeChip(QFrame):
    """Above the question box while questions are limited to chosen documents; × (or Esc in an empty
    question box) clears it, and questions go to the whole workspace again."""

    cleared = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scopeChip")
        self.setStyleSheet("#scopeChip { border: 1px solid palette(highlight); border-radius: 11px;"
                           " background: palette(alternate-base); }")
        self.sources: list[str] = []
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 2, 4, 2)
        lay.setSpacing(4)
        self.label = plain_label()
        self.label.setMinimumWidth(60)  # a long file name is cut here (the tooltip has them all), never widens the chat
        lay.addWidget(self.label, 1)
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip(self.tr("Ask about the whole workspace again (Esc)"))
        self.close_button.clicked.connect(self.clear)
        lay.addWidget(self.close_button)
        self.hide()

    def set_sources(self, sources: Sequence[str]) -> None:
        """Limit questions to these indexed documents (none: the whole workspace)."""
        self.sources = list(dict.fromkeys(sources))
        if not self.sources:
            self.clear()
            return
        self.label.setText(scope_text(self.sources))
        self.setToolTip(plain_tooltip(self.tr("Questions are answered from these documents only:") + "\n"
                                      + "\n".join(self.sources)))
        self.show()

    def clear(self) -> None:
        """Back to the whole workspace."""
        had = bool(self.sources)
        self.sources = []
        self.label.setText("")
        self.setToolTip("")
        self.hide()
        if had:
            self.cleared.emit()


class SearchedFor(QWidget):
    """Under a question: the query actually searched, when it differs from the question (a follow-up made
    standalone). "Edit" or a double-click opens it in a line edit; Enter searches the correction."""

    edited = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.query = ""
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.label = muted()  # wraps across the card's width, under the question on the right
        self.label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.label.setToolTip(self.tr("What was searched in your documents. Double-click to correct it."))
        lay.addWidget(self.label, 1)
        self.line = QLineEdit()
        self.line.setMinimumWidth(260)
        self.line.setToolTip(self.tr("Enter searches again with this text; Esc leaves it as it was"))
        self.line.returnPressed.connect(self._submit)
        self.line.hide()
        lay.addWidget(self.line, 1)
        self.edit_button = QToolButton()
        self.edit_button.setText(self.tr("Edit"))
        self.edit_button.setAutoRaise(True)
        self.edit_button.setToolTip(self.tr("Correct what is searched and ask again"))
        self.edit_button.clicked.connect(self.start_editing)
        lay.addWidget(self.edit_button)
        self.label.installEventFilter(self)
        self.line.installEventFilter(self)
        self.hide()

    def set_query(self, question: str, query: str | None) -> None:
        """Show `query` if it differs from the question; hide otherwise."""
        self.query = " ".join((query or "").split())
        self.label.setText(self.tr("Searched for: {query}").format(query=self.query))
        self.cancel_editing()
        self.setVisible(bool(self.query) and self.query != " ".join(question.split()))

    def set_editable(self, on: bool) -> None:
        """Allow a correction (not while another answer is being written)."""
        self.edit_button.setEnabled(on)
        if not on:
            self.cancel_editing()

    @property
    def editing(self) -> bool:
        """Whether the line edit is open."""
        return not self.line.isHidden()

    def start_editing(self) -> None:
        """Open the query in the line edit."""
        if not self.edit_button.isEnabled():
            return
        self.line.setText(self.query)
        self.label.hide()
        self.edit_button.hide()
        self.line.show()
        self.line.setFocus()
        self.line.selectAll()

    def cancel_editing(self) -> None:
        """Close the line edit without searching."""
        self.line.hide()
        self.label.show()
        self.edit_button.show()

    def _submit(self) -> None:
        text = " ".join(self.line.text().split())
        self.cancel_editing()
        if text and text != self.query:
            self.edited.emit(text)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if not hasattr(self, "line"):  # events of a label being built
            return False
        kind = event.type()
        if obj is self.label and kind == QEvent.Type.MouseButtonDblClick:
            self.start_editing()
            return True
        if obj is self.line and kind in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) \
                and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape:
            event.accept()  # Esc closes the edit here, it does not stop an answer
            if kind == QEvent.Type.KeyPress:
                self.cancel_editing()
            return True
        return super().eventFilter(obj, event)


def is_summary(answer: Answer | None) -> bool:
    """Whether an answer is a document's summary (its sources are that document's sections, in order)."""
    if answer is None or not answer.sources or not answer.searched_for:
        return False
    source = answer.sources[0].source
    return all(h.source == source for h in answer.sources) and \
        answer.searched_for == SUMMARY_OF + Path(source).name


@dataclass(frozen=True)
class SectionPlace:
    """A section a summary cites, to open: the document at start..end (the section's own text is read from
    the document when it opens, so `text` is empty)."""

    source: str
    page: int | None
    heading: str | None
    start: int
    end: int
    text: str = ""
    section: bool = True


def section_place(hit: object) -> SectionPlace:
    """The section a summary's source stands for (its `text` is the part's summary, not the section)."""
    return SectionPlace(hit.source, hit.page, hit.heading, hit.start, hit.end)  # type: ignore[attr-defined]


def summary_status(progress: SummaryProgress, *, overview: bool) -> str:
    """The status line of a summary being written: parts done of the total, time left, the section read."""
    if overview:
        return QCoreApplication.translate("Summary", "Summarizing: putting the parts together…")
    text = QCoreApplication.translate("Summary", "Summarizing: {done} of {total} parts").format(
        done=progress.done, total=progress.total)
    if progress.seconds_left is not None:
        text += " · " + QCoreApplication.translate("Summary", "about {eta} left").format(
            eta=duration(progress.seconds_left))
    if progress.heading:
        text += " · " + QCoreApplication.translate("Summary", "reading “{section}”").format(
            section=progress.heading.split(HEADING_SEPARATOR)[-1].strip())
    return text


def duration(seconds: float) -> str:
    """Seconds as people read them: "40 s", "2 min 05 s"."""
    seconds = int(round(max(0.0, seconds)))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"

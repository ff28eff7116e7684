"""Small widgets shared by the panels: the inline error banner, a bar with parts, section titles, and the
plain-text helpers for anything that shows a document's or a model's words.

Qt reads a label's or tooltip's text as HTML when it looks like HTML, and then loads the images it names
(`<img src="/dev/zero">` in a heading would read that file): text from documents, answers, file names or
models is always set as plain text (`plain_label`, `muted`, `plain_tooltip`, `confirm`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPalette
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QSizePolicy, QToolButton,
                               QWidget)

from app.gui import theme


class Banner(QFrame):
    """An inline message with its hint: red for errors, amber for warnings, with a close button."""

    log_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 8, 8)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.text.linkActivated.connect(lambda _link: self.log_requested.emit())
        lay.addWidget(self.text, 1)
        self.action = QPushButton()  # what the message offers to do, when it offers something
        self.action.hide()
        self.action.clicked.connect(self._act)
        self._on_action: Callable[[], None] | None = None
        lay.addWidget(self.action, 0, Qt.AlignmentFlag.AlignTop)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip(self.tr("Dismiss"))
        close.clicked.connect(self.hide)
        lay.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, message: str, hint: str | None = None, *, level: str = "error",
                     log_link: bool = False, action: tuple[str, Callable[[], None]] | None = None) -> None:
        """Show a message; `level` is 'error', 'warning' or 'info'; `action` is a button (label, what it
        does) beside it, which also closes the banner."""
        self._on_action = action[1] if action else None
        self.action.setText(action[0] if action else "")
        self.action.setVisible(action is not None)
        colour = {"error": theme.ERROR, "warning": theme.WARN}.get(level, theme.OK)
        bg = QColor(colour)
        bg.setAlpha(40)
        self.setStyleSheet(
            f"#banner {{ background: rgba({bg.red()},{bg.green()},{bg.blue()},{bg.alpha()});"
            f" border: 1px solid {colour.name()}; border-radius: 6px; }}"
        )
        html = f"<b>{_esc(message)}</b>"
        if hint:
            html += f"<br>{_esc(hint)}"
        if log_link:
            link = self.tr("Open the log file")
            html += f" <a href='log'>{_esc(link)}</a>"
        self.text.setText(html)
        self.show()

    def _act(self) -> None:
        act, self._on_action = self._on_action, None
        self.hide()
        if act is not None:
            act()

    @property
    def message(self) -> str:
        """The plain text shown (for tests and accessibility)."""
        from PySide6.QtGui import QTextDocumentFragment

        return QTextDocumentFragment.fromHtml(self.text.text()).toPlainText()


class PartsBar(QWidget):
    """A horizontal bar of coloured parts over a total, with an optional marker (e.g. the margin)."""

    def __init__(self, parent: QWidget | None = None, *, height: int = 14) -> None:
        super().__init__(parent)
        self._parts: list[tuple[float, QColor, str]] = []
        self._total = 1.0
        self._height = height
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(60)

    def set_parts(self, parts: Sequence[tuple[float, QColor, str]], total: float) -> None:
        """Parts as (value, colour, label); `total` is the full width (the rest is drawn as free)."""
        self._parts = [(max(0.0, v), c, label) for v, c, label in parts]
        self._total = max(total, sum(v for v, _, _ in self._parts), 1.0)
        self.setToolTip("\n".join(label for _, _, label in self._parts if label))
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(200, self._height)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        clip = QPainterPath()
        clip.addRoundedRect(r, 4, 4)
        p.setClipPath(clip)
        p.fillRect(r, self.palette().color(QPalette.ColorRole.Mid))
        x = r.left()
        for value, colour, _ in self._parts:
            w = r.width() * value / self._total
            p.fillRect(QRectF(x, r.top(), w, r.height()), colour)
            x += w
        p.end()


def plain_label(text: str = "") -> QLabel:
    """A label that shows its text as it is, never as HTML."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    return label


def plain_tooltip(text: str) -> str:
    """A tooltip that shows `text` as it is (tooltips have no text format: HTML in it is escaped)."""
    if not text:
        return ""
    return "<qt>" + _esc(text).replace("\n", "<br>") + "</qt>"


def confirm(parent: QWidget | None, title_text: str, text: str, *, default_yes: bool = False) -> bool:
    """Ask a yes/no question whose text is shown as it is (it may hold a path or a link); True on Yes."""
    yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
    box = QMessageBox(QMessageBox.Icon.Question, title_text, text, yes | no, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(yes if default_yes else no)
    return box.exec() == yes


def title(text: str) -> QLabel:
    """A small bold section title."""
    label = plain_label(text)
    f = label.font()
    f.setBold(True)
    label.setFont(f)
    return label


def muted(text: str = "", *, rich: bool = False) -> QLabel:
    """A label in the placeholder colour, wrapping; plain text unless `rich` (then its caller escapes)."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setText(text)
    label.setWordWrap(True)
    pal = label.palette()
    pal.setColor(QPalette.ColorRole.WindowText, pal.color(QPalette.ColorRole.PlaceholderText))
    label.setPalette(pal)
    return label


def dot(colour: QColor, size: int = 10) -> QLabel:
    """A round status light."""
    label = QLabel()
    label.setFixedSize(size, size)
    label.setStyleSheet(f"background: {colour.name()}; border-radius: {size // 2}px;")
    return label


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


esc = _esc  # for the few labels that mix markup of ours with text of others

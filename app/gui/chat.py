"""The chat: questions and streamed Markdown answers with clickable citations and their sources."""

from __future__ import annotations

import re
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QGuiApplication, QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.gui import theme
from app.gui.asking import ScopeChip, SearchedFor, is_summary, section_place, summary_status
from app.gui.markdown_view import CODE_SPANS, MarkdownView
from app.gui.widgets import Banner, muted, plain_label, plain_tooltip
from rag.answer import Answer
from rag.conversations import Conversation, Turn
from rag.quotes import Quote, annotated
from rag.store import Hit
from rag.summary import SummaryProgress

_CITATION = re.compile(r"\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]")


def linkify_citations(markdown: str, n_sources: int) -> str:
    """Turn [n] into links `cite:n` (outside code), for the n that name a source."""

    def sub(m: re.Match[str]) -> str:
        numbers = [int(x) for x in m.group(1).split(",")]
        if not all(1 <= n <= n_sources for n in numbers):
            return m.group(0)
        return "\\[" + ", ".join(f"[{n}](cite:{n})" for n in numbers) + "\\]"

    parts = CODE_SPANS.split(markdown)
    return "".join(p if i % 2 else _CITATION.sub(sub, p) for i, p in enumerate(parts))


def place(hit: Hit, *, low_confidence: bool = False) -> str:
    """File name, page and heading of a passage, for people; "scanned, low confidence" for a page OCR read
    poorly (the hit's own confidence, or `low_confidence` for a quote from such a passage)."""
    text = Path(hit.source).name
    if hit.page is not None:
        text += " · " + QCoreApplication.translate("Chat", "page {n}").format(n=hit.page)
    if hit.heading:
        text += " · " + hit.heading
    if low_confidence or hit.low_confidence:
        text += " · " + QCoreApplication.translate("Chat", "scanned, low confidence")
    return text


def _low_confidence_tip() -> str:
    return QCoreApplication.translate("Chat", "OCR read this page poorly: check the passage against the original.")


class _PassageRow(QFrame):
    """A clickable row under an answer that stands for a place in a document (`hit`)."""

    clicked = Signal(object)

    def __init__(self, name: str, tooltip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(plain_tooltip(tooltip))
        self.lay = QVBoxLayout(self)
        self.lay.setContentsMargins(8, 4, 8, 4)
        self.lay.setSpacing(0)

    @property
    def hit(self) -> Hit:
        raise NotImplementedError

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.hit)
        super().mouseReleaseEvent(event)


class SourceRow(_PassageRow):
    """One source under an answer: number, file, page, heading and a snippet; clicking opens it."""

    def __init__(self, number: int, hit: Hit, *, cited: bool, parent: QWidget | None = None) -> None:
        tip = self.tr("Open {file}").format(file=hit.source)
        super().__init__("sourceRow", f"{tip}\n{_low_confidence_tip()}" if hit.low_confidence else tip, parent)
        self._hit = hit
        self.number = number
        head = plain_label(f"[{number}] {place(hit)}")
        f = head.font()
        f.setBold(cited)
        head.setFont(f)
        if cited:
            pal = head.palette()
            pal.setColor(QPalette.ColorRole.WindowText, pal.color(QPalette.ColorRole.Link))
            head.setPalette(pal)
        self.lay.addWidget(head)
        snippet = " ".join(hit.text.split())
        snip = muted(snippet[:220] + ("…" if len(snippet) > 220 else ""))
        self.lay.addWidget(snip)
        self.setStyleSheet("#sourceRow { border-radius: 6px; } #sourceRow:hover { background: palette(midlight); }")

    @property
    def hit(self) -> Hit:
        """The passage."""
        return self._hit


_QUOTE_SHOWN = 700  # characters of a quote shown under an answer


class QuoteRow(_PassageRow):
    """A supporting quote under an answer: the document's own words and where they are; clicking opens the
    document there with the quote highlighted (a PDF at its page, any other document as its text)."""

    def __init__(self, quote: Quote, parent: QWidget | None = None, *, low_confidence: bool = False) -> None:
        tooltip = QCoreApplication.translate("QuoteRow", "Open {file} at this quote").format(file=quote.source)
        if low_confidence:  # from a passage OCR read poorly
            tooltip += "\n" + _low_confidence_tip()
        super().__init__("quoteRow", tooltip, parent)
        self.quote = quote
        self.lay.setContentsMargins(10, 4, 8, 4)
        text = " ".join(quote.text.split())
        # Whole, up to the longest quote the aligner makes of a line and its neighbours (600 characters);
        # only an overlong line (a table row, a wrapped code line) is cut, and its tooltip has it all.
        self.text = plain_label(f"“{text[:_QUOTE_SHOWN]}{'…' if len(text) > _QUOTE_SHOWN else ''}”")
        if len(text) > _QUOTE_SHOWN:
            self.setToolTip(plain_tooltip(f"{text[:4000]}\n\n{tooltip}"))
        self.text.setWordWrap(True)
        f = self.text.font()
        f.setItalic(True)
        self.text.setFont(f)
        self.lay.addWidget(self.text)
        where = place(self.hit, low_confidence=low_confidence)
        self.lay.addWidget(muted(f"[{quote.passage}] {where}" if quote.passage else where))
        self.setStyleSheet("#quoteRow { border-left: 3px solid palette(highlight); border-radius: 2px; }"
                           " #quoteRow:hover { background: palette(midlight); }")

    @property
    def hit(self) -> Hit:
        """The quote as a passage to open: same document, page and place."""
        q = self.quote
        return Hit(q.source, q.page, q.heading, q.score, q.text, q.start, q.end, "")


class TurnCard(QWidget):
    """A question, what was searched for it, its answer as it streams, a status line and the sources."""

    source_clicked = Signal(object)
    link_clicked = Signal(QUrl)  # a web or mail link in the answer (the window asks before opening it)
    research_requested = Signal(str, str)  # the question, and the corrected query to search for it

    def __init__(self, turn: Turn, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.turn = turn
        self._pending = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 6, 0, 6)
        lay.setSpacing(4)
        q = plain_label(turn.question)
        q.setWordWrap(True)
        q.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        q.setObjectName("question")
        q.setStyleSheet("#question { background: palette(alternate-base); border: 1px solid palette(mid);"
                        " border-radius: 10px; padding: 8px 12px; }")
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(q, 0)
        q.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        q.setMinimumWidth(min(q.fontMetrics().horizontalAdvance(turn.question) + 34, 520))
        q.setMaximumWidth(640)
        lay.addLayout(row)
        self.searched = SearchedFor()
        self.searched.edited.connect(lambda query: self.research_requested.emit(self.turn.question, query))
        lay.addWidget(self.searched)
        self.body = MarkdownView()
        self.body.link_clicked.connect(self._on_link)
        lay.addWidget(self.body)
        foot = QHBoxLayout()
        self.status = muted()  # plain text: a failure's reason may name a file
        self.status.hide()
        foot.addWidget(self.status, 1)
        self.copy = QToolButton()
        self.copy.setText(self.tr("Copy"))
        self.copy.setToolTip(self.tr("Copy the answer as Markdown"))
        self.copy.setAutoRaise(True)
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.shown))
        self.copy.hide()
        foot.addWidget(self.copy)
        # When the documents do not seem to answer, the model's reply is only shown on request.
        self.guess = QToolButton()
        self.guess.setText(self.tr("Show the model's guess"))
        self.guess.setToolTip(self.tr("What the model replied, though nothing in the documents bears it out"))
        self.guess.setAutoRaise(True)
        self.guess.setCheckable(True)
        self.guess.toggled.connect(lambda _on: self._render())
        self.guess.hide()
        foot.addWidget(self.guess)
        lay.addLayout(foot)
        self.bar = QProgressBar()  # a summary's parts done
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(6)
        self.bar.hide()
        lay.addWidget(self.bar)
        self.sources_box = QVBoxLayout()
        self.sources_box.setSpacing(2)
        lay.addLayout(self.sources_box)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(50)  # re-render at most 20 times a second while tokens stream
        self._timer.timeout.connect(self._render)
        # While nothing has come yet (a search, a model loading, a summary read in full): seconds waited.
        self._waiting = ("", 0.0)
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)
        self._summary_total: int | None = None
        self.shown = ""  # the answer as displayed, in Markdown (what Copy copies)
        self._render()
        if turn.answer is not None:
            self.finish(turn.answer)
        elif turn.error:
            self.fail(turn.error)
        self._show_searched()

    def append(self, piece: str) -> None:
        """Add a streamed piece; the view catches up within 50 ms."""
        if self._ticker.isActive():
            self._stop_waiting()
            self.status.hide()
        self.turn.text += piece
        if not self._timer.isActive():
            self._timer.start()

    def _render(self) -> None:
        answer = self.turn.answer
        n = len(answer.sources) if answer else 0
        text = self.turn.text or ("…" if answer is None and not self.turn.error else "")
        if answer is not None and answer.support is not None and not self.turn.error:
            support = answer.support
            # Shown with the citations the alignment found, and unsupported sentences flagged; a reply the
            # passages do not bear out (or none at all) gives way to what the documents themselves say.
            if support.abstained:
                text = support.text
                if self.guess.isChecked() and answer.text.strip():
                    text += "\n\n" + self.tr("**The model's guess, not found in your documents:**") + " " + answer.text
            else:
                text = support.text if support.fallback else annotated(
                    answer.text, support, unsupported=" " + self.tr("*(not found in your documents)*"))
        self.shown = text
        self.body.set_markdown(linkify_citations(text, n))

    def wait(self, text: str) -> None:
        """Say what is awaited until the first words come, with the seconds waited so far."""
        self._waiting = (text, time.monotonic())
        self.set_status(text)
        self._ticker.start()

    def _tick(self) -> None:
        text, since = self._waiting
        self.status.setText(f"{text} {time.monotonic() - since:.0f} s")

    def _stop_waiting(self) -> None:
        self._ticker.stop()
        self.bar.hide()

    def summary_progress(self, progress: SummaryProgress) -> None:
        """A summary being written: parts done of the total, time left, the section being read."""
        self._ticker.stop()
        if self._summary_total is None:
            self._summary_total = progress.total
        overview = progress.total > self._summary_total  # the parts are done; the overview is written
        self.bar.setRange(0, max(progress.total, 1))
        self.bar.setValue(progress.done)
        self.bar.show()
        self.set_status(summary_status(progress, overview=overview))

    def _show_searched(self) -> None:
        answer = self.turn.answer
        if is_summary(answer):
            self.searched.hide()  # a summary reads the whole document: nothing was searched
            return
        self.searched.set_query(self.turn.question, answer.searched_for if answer else self.turn.searched_for)

    def _open(self, hit: object) -> None:
        # A summary's sources are its parts; what opens is the section each one summarises.
        self.source_clicked.emit(section_place(hit) if is_summary(self.turn.answer) else hit)

    def finish(self, answer: Answer) -> None:
        """Show the final text and the sources."""
        self._timer.stop()
        self._stop_waiting()
        self.turn.answer = answer
        self.turn.text = answer.text
        if answer.searched_for is not None:
            self.turn.searched_for = answer.searched_for
        self._show_searched()
        self._render()
        while self.sources_box.count():
            item = self.sources_box.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        if answer.table is not None and answer.table.rows:
            from app.gui.table_view import RowsTable

            self.sources_box.addWidget(muted(self.tr("Rows used ({n}); click a header to sort, a row to open it")
                                             .format(n=len(answer.table.rows))))
            rows = RowsTable(answer.table)
            rows.row_opened.connect(self._open)
            self.sources_box.addWidget(rows)
        support = answer.support
        if support is not None and support.quotes:
            header = (self.tr("Closest passages") if support.abstained else
                      self.tr("What the documents say") if support.fallback else self.tr("Supporting quotes"))
            self.sources_box.addWidget(muted(header))
            for quote in support.quotes:
                passage = answer.sources[quote.passage - 1] if 0 < quote.passage <= len(answer.sources) else None
                qrow = QuoteRow(quote, low_confidence=passage is not None and passage.low_confidence)
                qrow.clicked.connect(self._open)
                self.sources_box.addWidget(qrow)
        if answer.sources:
            self.sources_box.addWidget(muted(self.tr("Sources")))
            for i, hit in enumerate(answer.sources, 1):
                row = SourceRow(i, hit, cited=i in answer.cited)
                row.clicked.connect(self._open)
                self.sources_box.addWidget(row)
        self.copy.setVisible(bool(self.shown.strip()))
        total = answer.timings.get("total")
        self.guess.setVisible(support is not None and support.abstained and bool(answer.text.strip()))
        if support is not None and support.abstained:
            status = self.tr("Not found in your documents; the closest passages are shown.")
            self.set_status(f"{status} {support.why}" if support.why else status)  # why, in one sentence
        elif support is not None and support.fallback:
            self.set_status(self.tr("The model's reply was not borne out by the documents; "
                                    "their own words are shown instead."))
        elif total is not None:
            self.set_status(self.tr("{seconds:.1f} s").format(seconds=total + answer.timings.get("retrieval", 0.0)))

    def stopped(self) -> None:
        """The user stopped the answer: keep what came, say so."""
        self._timer.stop()
        self._stop_waiting()
        self._render()
        self.turn.error = self.tr("Stopped.")
        self.set_status(self.tr("Stopped."))

    def fail(self, message: str) -> None:
        """The answer failed; the banner above the chat has the details."""
        self._timer.stop()
        self._stop_waiting()
        self.turn.error = message
        self._render()
        self.set_status(self.tr("No answer: {reason}").format(reason=message), error=True)

    def set_status(self, text: str, *, error: bool = False) -> None:
        """The small line under the answer."""
        self.status.setText(text)
        pal = self.status.palette()
        pal.setColor(QPalette.ColorRole.WindowText, theme.ERROR if error else
                     self.palette().color(QPalette.ColorRole.PlaceholderText))
        self.status.setPalette(pal)
        self.status.show()

    def _on_link(self, url: QUrl) -> None:
        if url.scheme() == "cite" and self.turn.answer is not None:
            try:
                n = int(url.path() or url.toString().split(":", 1)[1])
            except ValueError:
                return
            if 1 <= n <= len(self.turn.answer.sources):
                self._open(self.turn.answer.sources[n - 1])
        elif url.scheme().lower() in ("http", "https", "mailto"):  # never file: no local files from an answer
            self.link_clicked.emit(url)


class PromptEdit(QPlainTextEdit):
    """The question box: Enter sends, Shift+Enter starts a new line; grows up to six lines."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.document().contentsChanged.connect(self._fit)
        self._fit()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            self.submitted.emit()
            return
        super().keyPressEvent(event)

    def _fit(self) -> None:
        lines = max(1, min(6, self.document().blockCount()))
        # Wrapped lines count too: use the layout's height when it is known.
        h = self.fontMetrics().lineSpacing() * lines + 18
        self.setFixedHeight(max(h, 40))


class ChatView(QWidget):
    """The conversation on top, the question box below; emits what the user asks for."""

    send_requested = Signal(str)
    stop_requested = Signal()
    source_clicked = Signal(object)
    link_clicked = Signal(QUrl)
    research_requested = Signal(str, str)  # a question to ask again, searching the corrected query

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cards: list[TurnCard] = []
        self.conversation: Conversation | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        self.banner = Banner()
        lay.addWidget(self.banner)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        self.column = QVBoxLayout(inner)
        self.column.setContentsMargins(16, 8, 16, 8)
        self.empty = self._empty_state()
        self.column.addWidget(self.empty)
        self.column.addStretch(1)
        self.scroll.setWidget(inner)
        lay.addWidget(self.scroll, 1)
        self.scroll.verticalScrollBar().rangeChanged.connect(self._follow)
        self._follow_tail = True
        self.scroll.verticalScrollBar().valueChanged.connect(self._on_scrolled)

        box = QFrame()
        box.setObjectName("promptBox")
        box.setStyleSheet("#promptBox { border: 1px solid palette(mid); border-radius: 10px;"
                          " background: palette(base); }")
        row = QHBoxLayout(box)
        row.setContentsMargins(8, 6, 6, 6)
        self.prompt = PromptEdit()
        self.prompt.setFrameShape(QFrame.Shape.NoFrame)
        self.prompt.setPlaceholderText(self.tr("Ask about your documents…  (Enter sends, Shift+Enter: new line)"))
        self.prompt.submitted.connect(self._send)
        row.addWidget(self.prompt, 1)
        self.send = QPushButton(self.tr("Send"))
        self.send.setDefault(False)
        self.send.clicked.connect(self._send_or_stop)
        self.send.setMinimumWidth(80)
        row.addWidget(self.send, 0, Qt.AlignmentFlag.AlignBottom)
        self.scope = ScopeChip()  # questions limited to chosen documents, until cleared
        chip = QHBoxLayout()
        chip.setContentsMargins(16, 0, 16, 0)
        chip.addWidget(self.scope, 0)
        chip.addStretch(1)
        lay.addLayout(chip)
        outer = QHBoxLayout()
        outer.setContentsMargins(16, 0, 16, 10)
        outer.addWidget(box)
        lay.addLayout(outer)
        self._generating = False

    def _empty_state(self) -> QWidget:
        w = QWidget()
        v = QVBoxLayout(w)
        v.setContentsMargins(0, 60, 0, 0)
        icon = QLabel()
        icon.setPixmap(theme.app_icon().pixmap(72, 72))
        icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        v.addWidget(icon)
        self.empty_title = plain_label()  # names the workspace as the user typed it
        self.empty_title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        f = self.empty_title.font()
        f.setPointSizeF(f.pointSizeF() * 1.3)
        self.empty_title.setFont(f)
        v.addWidget(self.empty_title)
        self.empty_hint = muted(self.tr("Answers come only from the documents in this workspace, with their "
                                        "sources. Drop files or folders anywhere on the window to add them."))
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        v.addWidget(self.empty_hint)
        return w

    def set_workspace_label(self, name: str, n_documents: int) -> None:
        """The empty state's text for the workspace at hand."""
        if n_documents:
            self.empty_title.setText(self.tr("Ask anything about the {n} documents in “{ws}”").format(
                n=n_documents, ws=name))
        else:
            self.empty_title.setText(self.tr("“{ws}” has no documents yet").format(ws=name))

    def show_conversation(self, conv: Conversation | None) -> None:
        """Replace the view with a conversation (None: empty)."""
        for card in self.cards:
            card.deleteLater()
        self.cards = []
        self.conversation = conv
        self.banner.hide()
        for turn in conv.turns if conv else []:
            self._add_card(turn)
        self.empty.setVisible(not self.cards)

    def start_turn(self, turn: Turn) -> TurnCard:
        """Show a new question whose answer will stream into the returned card."""
        self.banner.hide()
        self._follow_tail = True
        card = self._add_card(turn)
        self.empty.hide()
        self.set_generating(True)
        return card

    def _add_card(self, turn: Turn) -> TurnCard:
        card = TurnCard(turn)
        card.source_clicked.connect(self.source_clicked)
        card.link_clicked.connect(self.link_clicked)
        card.research_requested.connect(self.research_requested)
        card.searched.set_editable(not self._generating)
        self.column.insertWidget(self.column.count() - 1, card)
        self.cards.append(card)
        return card

    def set_generating(self, on: bool) -> None:
        """Switch the Send button to Stop while an answer streams."""
        self._generating = on
        for card in self.cards:
            card.searched.set_editable(not on)
        self.send.setText(self.tr("Stop") if on else self.tr("Send"))
        self.send.setToolTip(self.tr("Stop the answer (Esc)") if on else self.tr("Send (Enter)"))

    def _send_or_stop(self) -> None:
        if self._generating:
            self.stop_requested.emit()
        else:
            self._send()

    def _send(self) -> None:
        text = self.prompt.toPlainText().strip()
        if not text or self._generating:
            return
        self.prompt.clear()
        self.send_requested.emit(text)

    def _on_scrolled(self, value: int) -> None:
        bar = self.scroll.verticalScrollBar()
        self._follow_tail = value >= bar.maximum() - 24

    def _follow(self, _lo: int, hi: int) -> None:
        if self._follow_tail:
            self.scroll.verticalScrollBar().setValue(hi)


"""Document and model text is never drawn as rich text (issue 16, item 1).

A heading `<img src="…">` in a label, or an image in an answer's Markdown, makes Qt read the file it names
just by showing it (/dev/zero exhausts memory, a FIFO freezes the window). Here the file is a FIFO watched
by a thread that notices any reader (and lets it go, so a failing test fails instead of hanging).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtWidgets import QApplication, QLabel, QToolTip  # noqa: E402

from app.gui import markdown_view  # noqa: E402
from app.gui.chat import QuoteRow, SourceRow, TurnCard  # noqa: E402
from app.gui.markdown_view import MarkdownView, no_images  # noqa: E402
from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from app.gui.widgets import muted, plain_tooltip  # noqa: E402
from rag.conversations import Turn  # noqa: E402
from rag.quotes import Quote  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from rag.store import Hit  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

WAIT = 20_000


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(Path(__file__).resolve().parents[1] / "fixtures" / "sysfs" / "strix-halo"))


_WATCH = """
import errno, os, sys, time
fifo, count, stop = sys.argv[1:]
n = 0
while not os.path.exists(stop):
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only while a reader waits
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        time.sleep(0.002)
        continue
    n += 1
    with open(count, "w") as f:
        f.write(str(n))
    os.close(fd)  # the reader gets end-of-file and goes on
"""


class TrapFile:
    """A FIFO that records whether anything opened it for reading.

    The watcher is another process: a reader blocked in open() may hold this process's GIL.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / "trap"
        os.mkfifo(self.path)
        self._count = folder / "trap-count"
        self._stop = folder / "trap-stop"
        self._proc = subprocess.Popen([sys.executable, "-c", _WATCH, str(self.path), str(self._count), str(self._stop)])

    @property
    def opened(self) -> int:
        """How many times it was opened for reading so far."""
        time.sleep(0.05)  # the watcher's last turn
        return int(self._count.read_text()) if self._count.exists() else 0

    def close(self) -> None:
        self._stop.touch()
        self._proc.wait(10)


@pytest.fixture
def trap(tmp_path):
    t = TrapFile(tmp_path)
    yield t
    t.close()


def _settle(qtbot, widget) -> None:
    """Show, lay out and paint a widget, as the window would."""
    widget.resize(700, 400)
    widget.show()
    qtbot.waitExposed(widget)
    widget.repaint()
    QApplication.processEvents()
    qtbot.wait(100)


def _labels(widget) -> list[QLabel]:
    return widget.findChildren(QLabel)


def test_source_and_quote_rows_show_headings_and_passages_as_plain_text(qtbot, trap):
    tag = f'<img src="{trap.path}">'
    hit = Hit(f"/docs/{tag}.md", 3, f"Allowance {tag}", 0.9, f"{tag} The daily allowance is EUR 60.", 0, 40, "x")
    quote = Quote(text=f"{tag} EUR 60 " + "word " * 200, source=hit.source, page=3, heading=hit.heading,
                  start=0, end=10, score=0.9, passage=1)
    rows = [SourceRow(1, hit, cited=True), QuoteRow(quote)]
    for row in rows:
        qtbot.addWidget(row)
        _settle(qtbot, row)
        labels = _labels(row)
        assert labels and all(label.textFormat() == Qt.TextFormat.PlainText for label in labels)
        assert any(tag in label.text() for label in labels)  # shown as the characters it is
        assert "<img" not in row.toolTip() and "&lt;img" in row.toolTip()
        QToolTip.showText(row.mapToGlobal(QPoint(5, 5)), row.toolTip(), row)  # drawn as a tooltip is drawn
        QApplication.processEvents()
        qtbot.wait(50)
    QToolTip.hideText()
    assert muted(tag).textFormat() == Qt.TextFormat.PlainText
    assert trap.opened == 0


def test_the_searched_query_the_scope_chip_and_a_summarys_section_are_plain_text(qtbot, trap):
    from app.gui.asking import ScopeChip, SearchedFor
    from rag.summary import SummaryProgress

    tag = f'<img src="{trap.path}">'
    searched, chip = SearchedFor(), ScopeChip()
    searched.set_query("Who leads it?", f"Who leads {tag}?")
    chip.set_sources([f"/docs/{tag}.md"])
    card = TurnCard(Turn("Summarize it"))
    card.summary_progress(SummaryProgress(1, 3, 20.0, f"Handbook › {tag}"))
    for widget in (searched, chip, card):
        qtbot.addWidget(widget)
        _settle(qtbot, widget)
        assert all(label.textFormat() == Qt.TextFormat.PlainText for label in _labels(widget) if "trap" in label.text())
    assert tag in searched.label.text() and tag in card.status.text() and 'trap">.md' in chip.label.text()
    assert "<img" not in chip.toolTip() and "&lt;img" in chip.toolTip()  # the full path, escaped
    assert trap.opened == 0


def test_plain_tooltip_escapes_markup():
    assert plain_tooltip('<img src="/dev/zero">\nnext') == "<qt>&lt;img src=&quot;/dev/zero&quot;&gt;<br>next</qt>"
    assert plain_tooltip("") == ""


def test_an_answer_requests_no_resource_for_any_image_syntax(qtbot, trap, monkeypatch):
    requested: list[str] = []
    view_load = MarkdownView.loadResource
    doc_load = markdown_view._NoResourceDocument.loadResource

    def spy_view(self, kind, url):
        requested.append(url.toString())
        return view_load(self, kind, url)

    def spy_doc(self, kind, url):
        requested.append(url.toString())
        return doc_load(self, kind, url)

    monkeypatch.setattr(MarkdownView, "loadResource", spy_view)
    monkeypatch.setattr(markdown_view._NoResourceDocument, "loadResource", spy_doc)
    reply = (f"EUR 60 [1]. \\![x]({trap.path}) and ![y](file://{trap.path}) and ![z]({trap.path}) "
             f"and \\\\![w]({trap.path}) and ![ref][r] and `![code]({trap.path})`.\n\n[r]: {trap.path}\n")
    card = TurnCard(Turn("What is the allowance?", text=reply))
    qtbot.addWidget(card)
    _settle(qtbot, card)
    doc = card.body.document()
    images = 0
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            images += it.fragment().charFormat().isImageFormat()
            it += 1
        block = block.next()
    assert images == 0
    assert requested == [] and trap.opened == 0
    assert "EUR 60" in card.body.toPlainText() and "![code]" in card.body.toPlainText()  # code stays as written


def test_the_answer_view_and_its_document_load_nothing_for_any_url(qtbot, trap):
    view = MarkdownView()
    qtbot.addWidget(view)
    kind = int(QTextDocument.ResourceType.ImageResource.value)
    for url in (QUrl.fromLocalFile(str(trap.path)), QUrl("file:///etc/passwd"), QUrl("https://example.com/x.png"),
                QUrl("qrc:/icon.png"), QUrl(str(trap.path))):
        assert view.loadResource(kind, url) is None
        assert view.document().loadResource(kind, url) is None
    # Even an image put into the document behind the Markdown's back is never read.
    view.document().setHtml(f'<p>x <img src="{trap.path}"> y</p>')
    _settle(qtbot, view)
    assert trap.opened == 0


def test_escaping_image_syntax_cannot_be_undone_by_a_backslash():
    assert no_images("![a](b)") == "\\![a](b)"
    assert no_images("\\![a](b)") == "\\![a](b)"  # already a literal "!": left alone
    assert no_images("\\\\![a](b)") == "\\\\\\![a](b)"  # a literal backslash, then an escaped "!"
    assert no_images("`![a](b)`") == "`![a](b)`"
    doc = QTextDocument()
    features = QTextDocument.MarkdownFeature
    for text in ("\\![x](/dev/zero)", "\\\\![x](/dev/zero)", "![x](file:///etc/passwd)", "\\\\\\\\![x](/dev/zero)"):
        doc.setMarkdown(no_images(text), features.MarkdownDialectGitHub | features.MarkdownNoHTML)
        assert "<img" not in doc.toHtml(), text


def test_a_stored_conversation_with_a_hostile_document_reopens_without_reading_anything(qtbot, tmp_path, trap):
    docs = tmp_path / "docs"
    docs.mkdir()
    tag = f'<img src="{trap.path}">'
    (docs / "allowance.md").write_text(
        f"# Travel {tag}\n\nThe daily meal allowance for travel abroad is EUR 60 {tag}.\n", encoding="utf-8")
    reply = f"The daily meal allowance for travel abroad is EUR 60 [1]. \\![x]({trap.path}) ![y](file://{trap.path})"
    model, embedder, opened = ScriptedModel(reply), HashEmbedder(), []
    window = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                          open_external=opened.append,
                          factory=lambda cfg: Hearth(cfg, embedder=embedder, chat_model=model))
    qtbot.addWidget(window)
    window.show()
    window.start()
    window.ingest([docs])
    qtbot.waitUntil(lambda: not window.ops.busy, timeout=WAIT)
    window.ask("What is the daily meal allowance for travel abroad?")
    qtbot.waitUntil(lambda: window.ask_job is None, timeout=WAIT)
    card = window.chat.cards[-1]
    assert card.findChildren(SourceRow) and tag in " ".join(label.text() for label in _labels(card))
    qtbot.waitUntil(lambda: window.sidebar.chats.count() == 1, timeout=WAIT)
    window.new_chat()
    window.sidebar.chats.setCurrentRow(0)  # reopened from the store
    qtbot.waitUntil(lambda: len(window.chat.cards) == 1, timeout=WAIT)
    _settle(qtbot, window)
    for label in _labels(window.chat.cards[0]):
        if tag in label.text():
            assert label.textFormat() == Qt.TextFormat.PlainText
    assert trap.opened == 0 and opened == []
    window.close()


def test_a_source_and_a_quote_from_a_page_ocr_read_poorly_say_so(qtbot):
    from rag.answer import Answer
    from rag.quotes import Support

    scanned = Hit("/docs/receipt.png", 1, None, 0.8, "Paid on 3 May.", 0, 14, "a", ocr_confidence=0.61)
    typed = Hit("/docs/notes.md", None, "Notes", 0.7, "Keep receipts.", 0, 14, "b")
    quote = Quote(text="Paid on 3 May.", source=scanned.source, page=1, heading=None, start=0, end=14, score=0.9,
                  passage=1)
    card = TurnCard(Turn("When was it paid?"))
    qtbot.addWidget(card)
    card.finish(Answer("On 3 May [1].", [scanned, typed], [1], support=Support("On 3 May [1].", quotes=[quote])))
    first, second = card.findChildren(SourceRow)
    assert any("page 1 · scanned, low confidence" in label.text() for label in _labels(first))
    assert "OCR read this page poorly" in first.toolTip()
    assert not any("scanned" in label.text() for label in _labels(second)) and "OCR" not in second.toolTip()
    (row,) = card.findChildren(QuoteRow)
    assert any("[1] receipt.png · page 1 · scanned, low confidence" == label.text() for label in _labels(row))

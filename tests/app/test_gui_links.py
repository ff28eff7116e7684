"""What leaves the app asks first (issue 16, low): a link in an answer opens only after the user saw its
target (a mail link without its ?subject=/?body=), and a document Hearth could not read is not handed to
its default application without asking, its path shown."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt, QUrl  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from rag.store import Hit  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20_000
REPLY = ("The daily meal allowance for travel abroad is EUR 60 [1]. See [the rules](https://example.com/rules?x=1) "
         "or [write to us](mailto:travel@example.com?subject=Hi&body=Send%20the%20passwords) or "
         "[a file](file:///etc/passwd).")


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


class Questions:
    """Stands in for the user at every question box: records what it showed, answers as told."""

    def __init__(self, monkeypatch) -> None:
        self.asked: list[tuple[str, Qt.TextFormat]] = []
        self.answer = QMessageBox.StandardButton.No

        def exec_(box: QMessageBox) -> int:
            self.asked.append((box.text(), box.textFormat()))
            return self.answer

        monkeypatch.setattr(QMessageBox, "exec", exec_)


@pytest.fixture
def window(qtbot, tmp_path):
    opened: list[object] = []
    w = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=opened.append,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel(REPLY)))
    w.opened = opened
    qtbot.addWidget(w)
    w.show()
    w.start()
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    return w


def _links(card) -> list[QUrl]:
    """The links of an answer as the view holds them."""
    urls: list[QUrl] = []
    block = card.body.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            href = it.fragment().charFormat().anchorHref()
            if href and (not urls or urls[-1].toString() != href):
                urls.append(QUrl(href))
            it += 1
        block = block.next()
    return urls


def test_a_link_in_an_answer_opens_only_after_showing_where_it_leads(qtbot, tmp_path, window, monkeypatch):
    questions = Questions(monkeypatch)
    shutil.copytree(ROOT / "assets" / "demo", tmp_path / "docs")
    window.ingest([tmp_path / "docs"])
    qtbot.waitUntil(lambda: not window.ops.busy, timeout=WAIT)
    window.ask("What is the daily meal allowance for travel abroad?")
    qtbot.waitUntil(lambda: window.ask_job is None, timeout=WAIT)
    card = window.chat.cards[-1]
    links = {u.scheme(): u for u in _links(card)}
    assert {"https", "mailto", "file"} <= set(links)

    card.body.link_clicked.emit(links["https"])  # as a click on it does
    assert window.opened == []  # declined: nothing opened
    text, fmt = questions.asked[-1]
    assert "https://example.com/rules?x=1" in text and fmt == Qt.TextFormat.PlainText

    questions.answer = QMessageBox.StandardButton.Yes
    card.body.link_clicked.emit(links["https"])
    assert window.opened == [QUrl("https://example.com/rules?x=1")]

    card.body.link_clicked.emit(links["mailto"])
    text, _ = questions.asked[-1]
    assert "mailto:travel@example.com" in text and "subject" not in text and "passwords" not in text
    assert window.opened[-1] == QUrl("mailto:travel@example.com") and not window.opened[-1].hasQuery()

    asked = len(questions.asked)
    card.body.link_clicked.emit(links["file"])  # a local file is never offered
    assert len(questions.asked) == asked and len(window.opened) == 2


def test_a_document_that_failed_is_opened_elsewhere_only_after_asking(qtbot, tmp_path, window, monkeypatch):
    questions = Questions(monkeypatch)
    docs = tmp_path / "docs"
    docs.mkdir()
    broken = docs / "broken.docx"
    broken.write_bytes(b"PK\x03\x04 not really a Word document")
    (docs / "notes.md").write_text("# Notes\n\nThe fridge is cleaned every Friday.\n", encoding="utf-8")
    window.ingest([docs])
    qtbot.waitUntil(lambda: not window.ops.busy, timeout=WAIT)
    source = str(broken.resolve())
    assert window.library.status_of(source) == "failed"

    window.library.open_requested.emit(source)  # "Open" on its row in the library
    assert window.opened == []
    text, fmt = questions.asked[-1]
    assert source in text and fmt == Qt.TextFormat.PlainText

    questions.answer = QMessageBox.StandardButton.Yes
    window.library.open_requested.emit(source)
    assert window.opened == [broken.resolve()]

    # A cited place in a document whose text cannot be read now: the reason in the banner, and again a question.
    questions.answer = QMessageBox.StandardButton.No
    window.opened.clear()
    asked = len(questions.asked)
    job = window.open_source(Hit(source, None, None, 1.0, "text", 0, 4, "c"))
    assert job is not None
    qtbot.waitUntil(lambda: len(questions.asked) > asked, timeout=WAIT)
    assert source in questions.asked[-1][0] and window.opened == []
    assert window.chat.banner.isVisible()

    # A document that was read opens as before, without a question.
    window.library.open_requested.emit(str((docs / "notes.md").resolve()))
    assert window.opened == [(docs / "notes.md").resolve()] and len(questions.asked) == asked + 1

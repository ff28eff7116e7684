"""Issue 18 in the desktop app: what was searched for a follow-up (shown, corrected, searched again), questions
limited to chosen documents (the scope chip), and whole-document summaries in the chat (progress, Stop,
sections that open where they are); and issue 19's table answers (the rows used, sortable, opening the
sheet at a row). The real window, service and index; fast fakes for the two models."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt, QUrl  # noqa: E402

from app.gui.asking import is_summary  # noqa: E402
from app.gui.chat import SourceRow  # noqa: E402
from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from app.gui.table_view import RowsTable  # noqa: E402
from inference.errors import Cancelled  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from rag.summary import SummaryProgress  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20_000
SHEETS = {
    "falcon": ("Falcon", "Maria Lind", "EUR 1.2 million", "30 June 2026"),
    "heron": ("Heron", "Tomas Berg", "EUR 640,000", "19 December 2025"),
    "kestrel": ("Kestrel", "Ana Ruiz", "EUR 2.35 million", "31 March 2027"),
}
SECTIONS = {  # the handbook's sections and the one rule each states
    "Leave": "Every employee has 28 days of paid annual leave, booked two weeks ahead.",
    "Travel": "Train tickets are booked in second class; the daily meal allowance abroad is EUR 60.",
    "Security": "Passwords are at least 14 characters long and are never shared by e-mail.",
    "Expenses": "Receipts are filed within 30 days of the purchase in the expenses tool.",
}


@pytest.fixture(autouse=True)
def _collect_on_the_gui_thread(qapp):
    from app.gui import gcguard  # as the app does: no cyclic collection in worker threads

    gcguard.install(qapp)
    yield
    gcguard.uninstall(qapp)


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


class SectionModel(ScriptedModel):
    """Summarises a section by naming what it rules (its heading), the overview by listing the parts; any
    other question gets the scripted reply. `delay` seconds per word make a summary last long enough to stop."""

    def __init__(self, reply: str = "As the passages say [1].", *, delay: float = 0.0) -> None:
        super().__init__(reply)
        self.delay = delay

    def stream(self, messages, *, max_tokens=512, temperature=0.0, cancel=None):
        self.prompts.append(list(messages))
        user = messages[-1]["content"]
        section = re.search(r"^Section: (?:.* › )?(.+?)(?: \(page \d+\))?$", user, re.MULTILINE)
        if section:
            text = f"This part rules {section.group(1).lower()} for every employee."
        elif user.startswith("Document:"):
            text = "The handbook sets the office rules of the company."
        else:
            text = self.reply
        for i, word in enumerate(text.split(" ")):
            if self.delay:
                time.sleep(self.delay)
            if cancel is not None and cancel():
                raise Cancelled()
            yield word if i == 0 else " " + word


def _window(qtbot, tmp_path: Path, model=None):
    w = build_window(HearthConfig(data_dir=tmp_path / "data", min_score=0.0), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=model or SectionModel()))
    qtbot.addWidget(w)
    w.show()
    w.start()
    return w


def _idle(qtbot, w) -> None:
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)


def _answer(qtbot, w, question: str):
    assert w.ask(question) is not None
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    return w.chat.cards[-1]


def _sheets(tmp_path: Path) -> Path:
    folder = tmp_path / "projects"
    folder.mkdir()
    for key, (name, lead, budget, end) in SHEETS.items():
        (folder / f"project-{key}.md").write_text(
            f"# Project {name}\n\n## Ownership\n\nThe project lead is {lead}.\n\n## Budget\n\nThe approved budget "
            f"is {budget}.\n\n## Schedule\n\nThe project ends on {end}.\n", encoding="utf-8")
    return folder


def _handbook(tmp_path: Path) -> Path:
    folder = tmp_path / "handbook"
    folder.mkdir()
    body = "\n\n".join(f"## {title}\n\n{rule}" for title, rule in SECTIONS.items())
    (folder / "handbook.md").write_text(f"# Handbook\n\n{body}\n", encoding="utf-8")
    return folder / "handbook.md"


def _names(card) -> set[str]:
    return {Path(h.source).name for h in card.turn.answer.sources}


def test_a_follow_up_shows_what_was_searched_and_a_correction_is_searched_again(qtbot, tmp_path, monkeypatch):
    w = _window(qtbot, tmp_path)
    w.ingest([_sheets(tmp_path)])
    _idle(qtbot, w)
    first = _answer(qtbot, w, "What is Project Falcon's budget?")
    assert first.searched.isHidden()  # searched as it was asked: nothing to show
    follow = _answer(qtbot, w, "Who leads it?")
    searched = follow.searched
    assert searched.isVisible() and searched.label.text() == "Searched for: Who leads Project Falcon?"
    assert searched.label.textFormat() == Qt.TextFormat.PlainText
    assert _names(follow) == {"project-falcon.md"}
    # A double-click opens it for editing; Esc leaves it as it was, and stops nothing.
    qtbot.mouseDClick(searched.label, Qt.MouseButton.LeftButton)
    assert searched.editing and searched.line.text() == "Who leads Project Falcon?"
    qtbot.keyClick(searched.line, Qt.Key.Key_Escape)
    assert not searched.editing and len(w.chat.cards) == 2
    # The correction is asked again in the same conversation, searching the corrected text (`query=`).
    calls: list[dict] = []
    ask = w.ops.hearth.ask
    monkeypatch.setattr(w.ops.hearth, "ask", lambda *a, **k: (calls.append(k), ask(*a, **k))[1])
    conv_id = w.conversation.id
    qtbot.mouseClick(searched.edit_button, Qt.MouseButton.LeftButton)
    searched.line.setText("Who leads Project Heron?")
    qtbot.keyClick(searched.line, Qt.Key.Key_Return)
    assert w.ask_job is not None and not searched.edit_button.isEnabled()  # one answer at a time
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    again = w.chat.cards[-1]
    assert len(w.chat.cards) == 3 and again.turn.question == "Who leads it?"
    assert calls[-1]["query"] == "Who leads Project Heron?" and calls[-1]["conversation"] == conv_id
    assert again.searched.label.text() == "Searched for: Who leads Project Heron?"
    assert Path(again.turn.answer.sources[0].source).name == "project-heron.md"
    assert searched.edit_button.isEnabled()
    # Reopened from the store, each turn shows what it searched.
    qtbot.waitUntil(lambda: w.sidebar.chats.count() == 1, timeout=WAIT)
    w.new_chat()
    w.sidebar.chats.setCurrentRow(0)
    qtbot.waitUntil(lambda: len(w.chat.cards) == 3, timeout=WAIT)
    shown = [None if c.searched.isHidden() else c.searched.label.text() for c in w.chat.cards]
    assert shown == [None, "Searched for: Who leads Project Falcon?", "Searched for: Who leads Project Heron?"]


def test_ask_about_these_limits_answers_to_the_chosen_documents_until_the_chip_is_cleared(qtbot, tmp_path):
    folder = _sheets(tmp_path)
    odd = folder / "notes <b>bold<b>.md"  # a file name is the document's text: shown as it is
    odd.write_text("# Notes\n\nThe project lead of Falcon is Maria Lind.\n", encoding="utf-8")
    w = _window(qtbot, tmp_path)
    w.ingest([folder])
    _idle(qtbot, w)
    lib, chip = w.library, w.chat.scope
    heron, kestrel = (str((folder / f"project-{k}.md").resolve()) for k in ("heron", "kestrel"))
    assert not lib.ask_about.isEnabled() and chip.isHidden()
    for source in (heron, kestrel):
        lib.rows[source].setSelected(True)
    assert lib.ask_about.isEnabled()
    qtbot.mouseClick(lib.ask_about, Qt.MouseButton.LeftButton)
    assert chip.isVisible() and chip.label.textFormat() == Qt.TextFormat.PlainText
    assert chip.label.text().startswith("2 documents: ") and "project-heron.md" in chip.label.text()
    assert "project-kestrel.md" in chip.label.text()
    card = _answer(qtbot, w, "What is Project Falcon's budget?")  # Falcon's sheet is not among them
    assert card.turn.answer.sources and _names(card) <= {"project-heron.md", "project-kestrel.md"}
    # The context menu offers it too (the odd file name stays plain text in the chip).
    lib.tree.clearSelection()
    lib.rows[str(odd.resolve())].setSelected(True)
    menu = lib._menu()
    menu.aboutToShow.emit()
    action = next(a for a in menu.actions() if a.text() == "Ask about these")
    assert action.isEnabled()
    action.trigger()
    assert chip.label.text() == "1 document: notes <b>bold<b>.md" and chip.sources == [str(odd.resolve())]
    # ×: the whole workspace again.
    qtbot.mouseClick(chip.close_button, Qt.MouseButton.LeftButton)
    assert chip.isHidden() and not chip.sources
    card = _answer(qtbot, w, "What is Project Falcon's budget?")
    assert Path(card.turn.answer.sources[0].source).name == "project-falcon.md"
    # Esc clears it too, but only in an empty question box (and never while an answer is written).
    w.ask_about([heron])
    w.chat.prompt.setPlainText("What is the budget")
    qtbot.keyClick(w.chat.prompt, Qt.Key.Key_Escape)
    assert chip.isVisible()
    w.chat.prompt.clear()
    qtbot.keyClick(w.chat.prompt, Qt.Key.Key_Escape)
    assert chip.isHidden()
    # Another workspace has other documents: the chip goes.
    w.ask_about([heron])
    w.switch_workspace("other")
    assert chip.isHidden()


def test_a_summary_reports_its_progress_and_cites_its_sections_which_open_where_they_are(qtbot, tmp_path):
    handbook = _handbook(tmp_path)
    w = _window(qtbot, tmp_path)
    w.ingest([handbook])
    _idle(qtbot, w)
    source = str(handbook.resolve())
    lib = w.library
    lib.rows[source].setSelected(True)
    menu = lib._menu()
    menu.aboutToShow.emit()
    action = next(a for a in menu.actions() if a.text() == "Summarize")
    assert action.isEnabled()
    events: list[object] = []
    action.trigger()
    job = w.ask_job
    assert job is not None and w.ops.model.busy and w.chat.send.text() == "Stop"
    job.progress.connect(events.append)
    card = w.chat.cards[-1]
    assert card.turn.question == "Summarize handbook.md" and card.status.text().startswith("Summarizing handbook.md")
    statuses: list[str] = []
    card.status.setText = lambda text, f=card.status.setText: (statuses.append(text), f(text))[1]
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    steps = [(e.done, e.total) for e in events if isinstance(e, SummaryProgress)]
    assert steps and steps[-1][0] == steps[-1][1] and [d for d, _ in steps] == sorted(d for d, _ in steps)
    assert any(s.startswith("Summarizing: 1 of 4 parts") and "left" in s and "reading" in s for s in statuses)
    text = card.body.toPlainText()
    for title in SECTIONS:
        assert f"rules {title.lower()}" in text
    assert card.searched.isHidden() and card.bar.isHidden() and is_summary(card.turn.answer)
    html = card.body.toHtml()
    assert all(f"cite:{n}" in html for n in range(1, 5))
    # [2] opens the document's text at the section it summarises, the section highlighted.
    travel = list(SECTIONS).index("Travel") + 1
    card.body.link_clicked.emit(QUrl(f"cite:{travel}"))
    qtbot.waitUntil(lambda: handbook.resolve() in w.sources.text_viewers, timeout=WAIT)
    viewer = w.sources.text_viewers[handbook.resolve()]
    qtbot.waitUntil(lambda: SECTIONS["Travel"] in viewer.highlighted, timeout=WAIT)
    assert SECTIONS["Leave"] not in viewer.highlighted
    rows = card.findChildren(SourceRow)
    assert len(rows) == 4
    qtbot.mouseClick(rows[-1], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: SECTIONS["Expenses"] in viewer.highlighted, timeout=WAIT)
    # Stored in the conversation: reopened, its sections still open where they are.
    qtbot.waitUntil(lambda: w.sidebar.chats.count() == 1, timeout=WAIT)
    w.new_chat()
    w.sidebar.chats.setCurrentRow(0)
    qtbot.waitUntil(lambda: len(w.chat.cards) == 1, timeout=WAIT)
    again = w.chat.cards[0]
    assert is_summary(again.turn.answer) and "rules security" in again.body.toPlainText()
    again.body.link_clicked.emit(QUrl("cite:1"))
    qtbot.waitUntil(lambda: SECTIONS["Leave"] in viewer.highlighted, timeout=WAIT)


def test_a_summary_is_stopped_with_esc_like_an_answer(qtbot, tmp_path):
    handbook = _handbook(tmp_path)
    w = _window(qtbot, tmp_path, model=SectionModel(delay=0.08))
    w.ingest([handbook])
    _idle(qtbot, w)
    job = w.summarize(str(handbook.resolve()))
    card = w.chat.cards[-1]
    qtbot.waitUntil(lambda: card.status.text().startswith("Summarizing: 1 of 4 parts"), timeout=WAIT)
    assert card.bar.isVisible() and card.bar.value() == 1 and card.bar.maximum() == 4
    assert w.summarize(str(handbook.resolve())) is None  # one at a time
    qtbot.keyClick(w, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    assert job.cancel_requested and card.status.text() == "Stopped." and card.bar.isHidden()
    assert w.chat.send.text() == "Send" and not w.chat.banner.isVisible()
    stored = w.ops.hearth.conversations.get(w.conversation.id)
    assert stored.turns[-1].question == "Summarize handbook.md" and stored.turns[-1].error


def test_summarize_typed_in_the_chat_shows_it_is_working_and_links_its_sections(qtbot, tmp_path):
    handbook = _handbook(tmp_path)
    w = _window(qtbot, tmp_path)
    w.ingest([handbook])
    _idle(qtbot, w)
    w.ask("Summarize the handbook")
    card = w.chat.cards[-1]
    assert not card.status.isHidden() and card.status.text() == "Reading your documents…"
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    assert is_summary(card.turn.answer) and card.searched.isHidden()  # the core's summary road
    assert "rules travel" in card.body.toPlainText() and card.status.text().endswith(" s")
    card.body.link_clicked.emit(QUrl("cite:3"))
    qtbot.waitUntil(lambda: handbook.resolve() in w.sources.text_viewers, timeout=WAIT)
    viewer = w.sources.text_viewers[handbook.resolve()]
    qtbot.waitUntil(lambda: SECTIONS["Security"] in viewer.highlighted, timeout=WAIT)


def test_the_new_words_are_in_russian(qapp):
    from PySide6.QtCore import QCoreApplication

    from app.gui.launch import install_translations

    assert install_translations(qapp, "ru") == "ru"
    tr = QCoreApplication.translate
    try:
        assert tr("LibraryPanel", "Ask about these") == "Спросить об этих"
        assert tr("LibraryPanel", "Summarize") == "Краткое содержание"
        assert tr("SearchedFor", "Searched for: {query}") == "Искали: {query}"
        assert tr("ScopeChip", "{n} documents: {names}") == "Документов: {n} — {names}"
        assert tr("Summary", "Summarizing: {done} of {total} parts") == "Краткое содержание: частей {done} из {total}"
    finally:
        for t in getattr(qapp, "_hearth_translators", ()):
            qapp.removeTranslator(t)


def test_a_table_answer_shows_its_rows_sortable_and_a_row_opens_the_sheet(qtbot, tmp_path):
    sheet = tmp_path / "invoices.csv"
    sheet.write_text("Invoice;Client;Amount;Status\nINV-1;Acme;1.200,00;Unpaid\nINV-2;Globex;80,50;Paid\n"
                     "INV-3;Acme;950,00;Unpaid\nINV-4;Initech;10.000,00;Unpaid\n", encoding="utf-8")
    model = SectionModel("A guess [1].")
    w = _window(qtbot, tmp_path, model)
    w.ingest([sheet])
    _idle(qtbot, w)
    card = _answer(qtbot, w, "What is the total amount of unpaid invoices?")
    assert model.prompts == []  # computed from the table, not asked of the model
    assert "Total Amount: 12150" in card.body.toPlainText()
    (rows,) = card.findChildren(RowsTable)
    assert rows.rowCount() == 3 and rows.columnCount() == 4
    assert [rows.horizontalHeaderItem(j).text() for j in range(4)] == ["Invoice", "Client", "Amount", "Status"]
    # Amounts sort as numbers (10.000,00 above 1.200,00), not as text.
    rows.sortItems(2, Qt.SortOrder.DescendingOrder)
    assert [rows.item(i, 0).text() for i in range(3)] == ["INV-4", "INV-1", "INV-3"]
    # Double-clicking a row opens the sheet's text with that row highlighted.
    rows.cellDoubleClicked.emit(0, 0)
    qtbot.waitUntil(lambda: sheet.resolve() in w.sources.text_viewers, timeout=WAIT)
    viewer = w.sources.text_viewers[sheet.resolve()]
    qtbot.waitUntil(lambda: "INV-4" in viewer.highlighted, timeout=WAIT)
    assert "INV-1" not in viewer.highlighted


def test_not_found_shows_the_closest_passages_and_the_guess_only_on_request(qtbot):
    """An abstaining answer: the card says the documents do not seem to answer, lists the closest passages,
    and shows the model's reply only when asked, marked as a guess."""
    from app.gui.chat import TurnCard
    from rag.abstain import abstain_text
    from rag.answer import Answer
    from rag.conversations import Turn
    from rag.quotes import Quote, Support
    from rag.store import Hit

    hit = Hit("/notes/server-room.md", None, "Server room", 0.41, "Only the IT team may enter the server room.",
              0, 44, "s#0")
    quote = Quote(hit.source, None, hit.heading, hit.text, 0, 44, 1, 0.4)
    guess = "The door code of the server room is 1200."
    card = TurnCard(Turn("What is the door code of the server room?"))
    qtbot.addWidget(card)
    card.show()
    card.finish(Answer(guess, [hit], [], support=Support(abstain_text("en"), [], [quote], abstained=True)))
    text = card.body.toPlainText()
    assert "do not seem to answer" in text and "1200" not in text
    labels = [w.text() for w in card.findChildren(type(card.status))]
    assert "Closest passages" in labels and "Supporting quotes" not in labels
    assert card.guess.isVisible() and "Not found in your documents" in card.status.text()
    card.guess.click()
    qtbot.waitUntil(lambda: "1200" in card.body.toPlainText(), timeout=2000)
    assert "The model's guess, not found in your documents:" in card.body.toPlainText()
    card.guess.click()
    qtbot.waitUntil(lambda: "1200" not in card.body.toPlainText(), timeout=2000)

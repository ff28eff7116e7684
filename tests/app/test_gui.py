"""The desktop app, driven offscreen with pytest-qt: the real window, the real service and index,
fast fakes for the two models (tests/fakes.py)."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl  # noqa: E402
from PySide6.QtGui import QDragEnterEvent, QDropEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.gui.launch import ScreenshotPlan, Shooter, build_window  # noqa: E402
from app.gui.chat import QuoteRow, SourceRow, linkify_citations  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from inference.errors import Cancelled  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from rag.ingest import IngestOptions  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo"
SYSFS = ROOT / "tests" / "fixtures" / "sysfs"
REPLY = "The daily meal allowance for travel abroad is **EUR 60** [1]."
WAIT = 20_000  # ms; generous for a busy 2-core machine


class SlowModel(ScriptedModel):
    """Streams one word every 50 ms, stopping when asked."""

    def stream(self, messages, *, max_tokens=512, temperature=0.0, cancel=None):
        for piece in super().stream(messages, max_tokens=max_tokens, cancel=cancel):
            time.sleep(0.05)
            if cancel is not None and cancel():
                raise Cancelled()
            yield piece


class SlowEmbedder(HashEmbedder):
    """Takes 60 ms per batch, so that indexing lasts long enough to be cancelled."""

    def embed(self, texts):
        time.sleep(0.06)
        return super().embed(texts)


@pytest.fixture(autouse=True)
def _collect_on_the_gui_thread(qapp):
    """As the app does (app/gui/gcguard.py): no cyclic collection in worker threads while windows live.

    Set up before qtbot, so torn down after it closed the test's window: the last collection runs here,
    on the GUI thread, and the collector is Python's again for the tests that follow.
    """
    from app.gui import gcguard

    gcguard.install(qapp)
    yield
    gcguard.uninstall(qapp)


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    # The hardware panel reads a fixture copy of a real machine, never this one's /sys.
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(SYSFS / "strix-halo"))


@pytest.fixture
def docs(tmp_path) -> Path:
    """The demo documents plus a broken PDF, in a folder of their own."""
    folder = tmp_path / "docs"
    shutil.copytree(DEMO, folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a PDF")
    return folder


class App:
    """A window over a fresh data folder, with what it opened outside the app recorded."""

    def __init__(self, qtbot, tmp_path: Path, *, model=None, embedder=None, workspace: str | None = None,
                 prefs_path: Path | None = None, ingest: IngestOptions | None = None) -> None:
        self.qtbot = qtbot
        self.model = model or ScriptedModel(REPLY)
        self.embedder = embedder or HashEmbedder()
        self.opened: list[Path] = []
        self.prefs = Prefs(prefs_path or tmp_path / "gui.ini")
        config = HearthConfig(data_dir=tmp_path / "data", ingest=ingest or IngestOptions())
        self.window = build_window(
            config, prefs=self.prefs, workspace=workspace, open_external=self.opened.append,
            factory=lambda cfg: Hearth(cfg, embedder=self.embedder, chat_model=self.model))
        qtbot.addWidget(self.window)
        self.window.show()
        self.window.start()

    def idle(self) -> None:
        """Wait until no job is queued or running."""
        self.qtbot.waitUntil(lambda: not self.window.ops.busy, timeout=WAIT)

    def drop(self, *paths: Path, on=None) -> None:
        """Drop paths on a widget of the window (default: the question box)."""
        target = on or self.window.chat.prompt.viewport()
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
        pos = QPointF(10, 10)
        enter = QDragEnterEvent(pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(target, enter)
        assert enter.isAccepted()
        drop = QDropEvent(pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                          Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(target, drop)

    def ingest_demo(self, folder: Path) -> None:
        self.window.ingest([folder])
        self.idle()

    def settings(self):
        """The settings dialog over this window, as its menu opens it."""
        from app.gui.settings_dialog import SettingsDialog

        w = self.window
        dialog = SettingsDialog(w.prefs, w.ops, data_dir=w.ops.config.data_dir, parent=w)
        self.qtbot.addWidget(dialog)
        return dialog

    def answer(self, question: str):
        """Ask and wait for the answer; returns its card."""
        self.window.ask(question)
        self.qtbot.waitUntil(lambda: self.window.ask_job is None, timeout=WAIT)
        return self.window.chat.cards[-1]


def test_dropped_files_appear_with_status_done(qtbot, tmp_path, docs):
    app = App(qtbot, tmp_path)
    app.idle()
    app.drop(docs / "travel-policy.pdf", docs / "onboarding.md", docs / "broken.pdf")
    lib = app.window.library
    # While it runs, the files are listed with a live status and the progress bar shows.
    qtbot.waitUntil(lambda: len(lib.rows) == 3, timeout=WAIT)
    app.idle()
    assert lib.status_of(str((docs / "travel-policy.pdf").resolve())) == "done"
    assert lib.status_of(str((docs / "onboarding.md").resolve())) == "done"
    broken = lib.rows[str((docs / "broken.pdf").resolve())]
    assert lib.status_of(str((docs / "broken.pdf").resolve())) == "failed"
    assert "failed" in broken.text(1) and broken.toolTip(1)  # the reason, readable
    assert lib.progress_box.isHidden()
    assert "could not be read" in lib.banner.message
    assert "2 documents" in lib.summary.text()
    # A folder dropped on another widget (the document list) is taken too.
    app.drop(docs, on=lib.tree.viewport())
    app.idle()
    assert lib.status_of(str((docs / "it-handbook.html").resolve())) == "done"


def test_ask_streams_markdown_answer_with_clickable_sources(qtbot, tmp_path, docs):
    app = App(qtbot, tmp_path)
    app.ingest_demo(docs)
    w = app.window
    pieces: list[str] = []
    w.chat.prompt.setPlainText("What is the daily meal allowance for travel abroad?")
    qtbot.keyClick(w.chat.prompt, Qt.Key.Key_Return)  # Enter sends
    assert w.ask_job is not None
    w.ask_job.progress.connect(lambda e: pieces.append(getattr(e, "text", "")))
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    assert len([p for p in pieces if p]) > 5  # streamed piece by piece
    card = w.chat.cards[-1]
    assert card.turn.answer is not None
    assert "EUR 60" in card.body.toPlainText() and "**" not in card.body.toPlainText()  # Markdown rendered
    qtbot.mouseClick(card.copy, Qt.MouseButton.LeftButton)
    assert "**EUR 60**" in QApplication.clipboard().text()
    assert "cite:1" in card.body.toHtml()  # the citation is a link
    rows = card.findChildren(SourceRow)
    assert rows and rows[0].number == 1
    first = card.turn.answer.sources[0]
    assert first.source.endswith("travel-policy.pdf") and first.page is not None
    # Clicking the citation opens the PDF inside the app at the cited page.
    card.body.link_clicked.emit(QUrl("cite:1"))
    viewer = w.sources.pdf_viewers[Path(first.source)]
    assert viewer.isVisible()
    qtbot.waitUntil(lambda: viewer.page == first.page and viewer.page_box.value() == first.page, timeout=WAIT)
    qtbot.waitUntil(lambda: viewer.search.count() > 0, timeout=WAIT)  # the passage is found to highlight
    # A source in another format opens as the text Hearth read from it, the passage highlighted; the
    # original opens in the system's application from there.
    other = next((r for r in rows if not r.hit.source.endswith(".pdf")), None)
    if other is not None:
        qtbot.mouseClick(other, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: Path(other.hit.source) in w.sources.text_viewers, timeout=WAIT)
        text_viewer = w.sources.text_viewers[Path(other.hit.source)]
        assert text_viewer.isVisible() and text_viewer.highlighted == other.hit.text
        qtbot.mouseClick(text_viewer.original, Qt.MouseButton.LeftButton)
        assert app.opened == [Path(other.hit.source)]
        text_viewer.close()
    # Under the answer, the documents' own words that support it; a click opens the PDF at that quote.
    quotes = card.findChildren(QuoteRow)
    quoted = [q.quote.text for q in quotes]
    assert quotes and "EUR 60" in quotes[0].text.text() and quotes[0].quote.source.endswith("travel-policy.pdf")
    viewer.hide()
    qtbot.mouseClick(quotes[0], Qt.MouseButton.LeftButton)
    assert viewer.isVisible() and viewer.search.searchString() in " ".join(quotes[0].quote.text.split())
    qtbot.waitUntil(lambda: viewer.page == quotes[0].quote.page, timeout=WAIT)
    # The conversation is stored: listed, and it reopens with its sources.
    qtbot.waitUntil(lambda: w.sidebar.chats.count() == 1, timeout=WAIT)
    w.new_chat()
    assert not w.chat.cards
    w.sidebar.chats.setCurrentRow(0)
    qtbot.waitUntil(lambda: len(w.chat.cards) == 1, timeout=WAIT)
    assert w.chat.cards[0].findChildren(SourceRow)
    assert [q.quote.text for q in w.chat.cards[0].findChildren(QuoteRow)] == quoted  # stored with the turn
    out = tmp_path / "chat.md"
    job = w.export_chat(w.conversation.id, out)
    qtbot.waitSignal(job.ended, timeout=WAIT) if not job.done else None
    qtbot.waitUntil(out.exists, timeout=WAIT)
    assert "EUR 60" in out.read_text()


def test_unsupported_sentences_are_flagged_and_a_failed_reply_gives_way_to_the_documents(qtbot, tmp_path, docs):
    model = ScriptedModel("The daily meal allowance abroad is **EUR 60** [1]. Staff may also fly first class on"
                          " every trip.")
    app = App(qtbot, tmp_path, model=model)
    app.ingest_demo(docs)
    text = app.answer("What is the daily meal allowance for travel abroad?").body.toPlainText()
    assert "fly first class on every trip. (not found in your documents)" in text
    assert "EUR 60 [1]." in text and "EUR 60 [1]. (not found" not in text
    model.reply = "I don't know."
    card = app.answer("How many days of annual leave do I get?")
    assert card.body.toPlainText().startswith("The documents say:") and "28 days" in card.body.toPlainText()
    assert "not borne out" in card.status.text()
    assert any("28 days" in q.quote.text for q in card.findChildren(QuoteRow))


def test_an_answer_never_shows_images_or_html_and_never_opens_local_files(qtbot, tmp_path, docs):
    from PySide6.QtGui import QImage

    secret = tmp_path / "secret.png"
    image = QImage(4, 4, QImage.Format.Format_RGB32)
    image.fill(0)
    assert image.save(str(secret))
    reply = (f"The daily meal allowance for travel abroad is EUR 60 [1]. Look: ![x]({secret}) and "
             f"<img src=\"{secret}\"> and [open]({QUrl.fromLocalFile(str(secret)).toString()}).")
    app = App(qtbot, tmp_path, model=ScriptedModel(reply))
    app.ingest_demo(docs)
    w = app.window
    card = app.answer("What is the daily meal allowance for travel abroad?")
    html = card.body.toHtml()
    assert "<img" not in html and "&lt;img" in html  # the tag is shown as text, nothing is loaded
    assert "EUR 60" in card.body.toPlainText() and "Look:" in card.body.toPlainText()  # the reply, not quotes
    block, images = card.body.document().begin(), 0
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            images += it.fragment().charFormat().isImageFormat()
            it += 1
        block = block.next()
    assert images == 0
    card.body.link_clicked.emit(QUrl.fromLocalFile(str(secret)))  # a file: link in an answer opens nothing
    assert app.opened == [] and not w.sources.pdf_viewers


def test_stop_keeps_the_partial_answer(qtbot, tmp_path, docs):
    app = App(qtbot, tmp_path, model=SlowModel(" ".join(["word"] * 200)))
    app.ingest_demo(docs)
    w = app.window
    w.ask("What is the daily meal allowance for travel abroad?")
    card = w.chat.cards[-1]
    assert w.chat.send.text() == "Stop"
    qtbot.waitUntil(lambda: "word" in card.turn.text, timeout=WAIT)
    qtbot.keyClick(w, Qt.Key.Key_Escape)  # Esc stops
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    assert card.status.text() == "Stopped."
    assert 0 < card.turn.text.count("word") < 200
    assert w.chat.send.text() == "Send"
    assert not w.chat.banner.isVisible()  # a cancellation is no error


def test_cancel_indexing(qtbot, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        (folder / f"note-{i:02d}.md").write_text(f"# Note {i}\n\nSome text about topic {i}.\n")
    # Small embedding and writing batches: the pipeline stores documents as they are embedded, a few at a
    # time, so some are done while others still wait when Stop is pressed.
    app = App(qtbot, tmp_path, embedder=SlowEmbedder(), ingest=IngestOptions(embed_batch=4, write_batch=8))
    app.idle()
    w = app.window
    w.ingest([folder])
    lib = w.library
    qtbot.waitUntil(lambda: any(lib.status_of(s) == "done" for s in lib.rows), timeout=WAIT)
    assert lib.progress_box.isVisible() and "files" in lib.progress_text.text()
    qtbot.mouseClick(lib.cancel, Qt.MouseButton.LeftButton)
    app.idle()
    statuses = [lib.status_of(s) for s in lib.rows]
    assert "stopped" in statuses and "done" in statuses
    assert "queued" not in statuses and "reading" not in statuses
    assert "stopped" in lib.banner.message.lower()


def test_watched_folder_stays_in_sync(qtbot, tmp_path):
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "first.md").write_text("# First\n\nThe first note.\n")
    app = App(qtbot, tmp_path)
    app.idle()
    w = app.window
    w.watch_folder(folder)
    lib = w.library
    qtbot.waitUntil(lambda: lib.watch_state().startswith("in sync"), timeout=WAIT)
    qtbot.waitUntil(lambda: lib.status_of(str((folder / "first.md").resolve())) == "done", timeout=WAIT)
    (folder / "second.md").write_text("# Second\n\nA note added while Hearth watches.\n")
    qtbot.waitUntil(lambda: lib.status_of(str((folder / "second.md").resolve())) == "done", timeout=WAIT)
    assert w.prefs.watched == {"default": [str(folder.resolve())]}
    w.unwatch_folder(str(folder.resolve()))
    assert lib.watched.topLevelItemCount() == 0 and w.watch_job is None


def test_hardware_panel_shows_the_fixture_machine(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(SYSFS / "phoenix-apu-npu"))
    app = App(qtbot, tmp_path)
    w = app.window
    w.show_side_tab(1)
    qtbot.waitUntil(lambda: w.hardware.snapshot is not None, timeout=WAIT)
    names = w.hardware.device_names
    assert any("780M" in n or "Phoenix" in n for n in names), names
    assert any("NPU" in n for n in names), names
    text = " ".join(label.text() for label in w.hardware.findChildren(type(w.model_label)))
    assert "llama.cpp" in text and "ONNX Runtime" in text and "VRAM" in text


def test_event_loop_is_never_blocked_for_100_ms(qtbot, tmp_path, docs):
    """A 10 ms timer on the GUI thread measures every gap while the window indexes, plans and answers.

    The GUI thread's own CPU time per gap is what our code spends there, and must stay under 100 ms
    always. The wall-clock gap also includes waiting for a CPU; on a machine loaded beyond its cores
    (CI shares two) that is the scheduler's doing, so the wall-clock bound is checked only when the
    machine is not overloaded.
    """
    app = App(qtbot, tmp_path, model=SlowModel(REPLY * 3))
    w = app.window
    wall: list[float] = []
    cpu: list[float] = []
    last = [time.perf_counter(), time.thread_time()]

    def tick() -> None:
        now, now_cpu = time.perf_counter(), time.thread_time()
        wall.append((now - last[0]) * 1000)
        cpu.append((now_cpu - last[1]) * 1000)
        last[:] = [now, now_cpu]

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()
    qtbot.wait(50)
    w.show_side_tab(1)  # hardware detection and the memory plan, then the model loads
    w.ingest([docs])
    app.idle()
    w.show_side_tab(0)
    w.ask("What is the daily meal allowance for travel abroad?")
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    w.refresh_documents()
    app.idle()
    timer.stop()
    assert len(wall) > 20
    assert max(cpu) < 100, f"a call on the GUI thread ran for {max(cpu):.0f} ms"
    # Waiting for a CPU, or for the GIL while the indexing and model workers run, is not a call blocking
    # the GUI thread (that is the CPU-time bound above, held at 100 ms): on two cores those waits reached
    # 104 ms on an idle machine, so the wall-clock bound is 250 ms, wider when other processes load the cores.
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    limit = 250 if load < 1.5 else 1000
    assert max(wall) < limit, f"the event loop stalled for {max(wall):.0f} ms (load {os.getloadavg()[0]:.1f})"


def test_workspaces_create_rename_delete_and_remembered(qtbot, tmp_path, docs, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    app = App(qtbot, tmp_path)
    w = app.window
    app.idle()
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("Projects", True)))
    w.new_workspace()
    assert w.workspace == "Projects"
    w.ingest([docs / "onboarding.md"])
    app.idle()
    assert len(w.library.rows) == 1
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("Client work", True)))
    w.rename_workspace("Projects")
    assert "Client work" in [w.sidebar.workspaces.item(i).text() for i in range(w.sidebar.workspaces.count())]
    assert w.windowTitle().startswith("Client work")
    w.switch_workspace("default")
    assert not w.library.rows
    w.switch_workspace("Projects")
    app.idle()
    assert len(w.library.rows) == 1
    w.close()
    # The next start opens the last workspace.
    again = App(qtbot, tmp_path, prefs_path=tmp_path / "gui.ini")
    assert again.window.workspace == "Projects"
    again.idle()
    again.window.delete_workspace("Projects", confirm=False)
    again.idle()
    assert again.window.workspace == "default"
    assert "Projects" not in again.window.workspaces.known


def test_dropping_a_gguf_adds_it_to_the_model_library(qtbot, tmp_path):
    from tests.tinygguf import write_tiny_llama

    model = write_tiny_llama(tmp_path / "tiny-chat.gguf")
    not_a_model = tmp_path / "fake.gguf"
    not_a_model.write_bytes(b"nope" * 10)
    app = App(qtbot, tmp_path)
    app.idle()
    app.drop(model)
    app.idle()
    assert (tmp_path / "data" / "models" / "tiny-chat.gguf").is_file()
    assert "model library" in app.window.library.banner.message
    app.drop(not_a_model)
    app.idle()
    assert app.window.chat.banner.isVisible() and "fake.gguf" in app.window.chat.banner.message
    assert not (tmp_path / "data" / "models" / "fake.gguf").exists()


def test_settings_preview_the_fit_and_apply(qtbot, tmp_path):
    from tests.tinygguf import write_tiny_llama

    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    write_tiny_llama(models / "tiny-chat.gguf")
    app = App(qtbot, tmp_path)
    app.idle()
    w = app.window
    dialog = app.settings()
    qtbot.waitUntil(lambda: dialog.model.findData("tiny-chat.gguf") >= 0, timeout=WAIT)
    dialog.model.setCurrentIndex(dialog.model.findData("tiny-chat.gguf"))
    dialog.ctx.setCurrentIndex(dialog.ctx.findData(2048))
    dialog.manual.setChecked(True)
    dialog.layers.setValue(0)
    qtbot.waitUntil(lambda: "layers on the GPU" in dialog.preview.text(), timeout=WAIT)
    assert "fits" in dialog.preview.text()
    assert not dialog.ranking.isChecked() and not w.ops.config.model_ranking  # off until switched on
    dialog.ranking.setChecked(True)
    assert dialog.not_found.currentData() == "balanced" == w.ops.config.not_found  # "Say so when unsure"
    assert [dialog.not_found.itemData(i) for i in range(dialog.not_found.count())] == ["strict", "balanced", "off"]
    dialog.not_found.setCurrentIndex(dialog.not_found.findData("off"))  # "Always show the model's answer"
    # The engine: the engines not installed here are listed, greyed out; the choice applies at the next start.
    from inference.engines import installed

    engines = [dialog.engine.itemData(i) for i in range(dialog.engine.count())]
    assert engines == ["auto", "cpu", "vulkan", "hip"] and dialog.engine.currentData() == "auto"
    enabled = {e for i, e in enumerate(engines) if dialog.engine.model().item(i).isEnabled()}
    assert enabled == {"auto", *installed()}
    dialog.engine.setCurrentIndex(dialog.engine.findData("cpu"))
    dialog.save()
    assert app.window.prefs.engine == "cpu" and app.settings().engine.currentData() == "cpu"
    w.apply_prefs()
    config = w.ops.config
    assert (config.chat_model, config.n_ctx, config.n_gpu_layers) == ("tiny-chat.gguf", 2048, 0)
    assert config.model_ranking is True and app.settings().ranking.isChecked() is True
    assert config.not_found == "off" and app.settings().not_found.currentData() == "off"
    app.idle()  # the new service loads its model in the background


def test_errors_show_as_a_banner_with_the_hint(qtbot, tmp_path, docs):
    class Broken(ScriptedModel):
        def stream(self, *a, **k):
            raise RuntimeError("boom")

    app = App(qtbot, tmp_path, model=Broken(""))
    app.ingest_demo(docs)
    w = app.window
    w.ask("What is the daily meal allowance for travel abroad?")
    qtbot.waitUntil(lambda: w.ask_job is None, timeout=WAIT)
    assert w.chat.banner.isVisible()
    assert "Something went wrong: boom" in w.chat.banner.message
    assert "Traceback" not in w.chat.banner.message


def test_screenshot_waits_until_idle_and_saves_a_png(qtbot, tmp_path, docs):
    app = App(qtbot, tmp_path)
    out = tmp_path / "shots" / "chat.png"
    shooter = Shooter(app.window, ScreenshotPlan(out, add=[docs], ask="What is the daily meal allowance?",
                                                 size=(1000, 700)))
    shooter.start()
    qtbot.waitUntil(out.exists, timeout=WAIT * 2)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shooter.exit_code == 0
    assert app.window.library.rows and app.window.chat.cards


def test_russian_translation_is_shipped_and_loads(qapp):
    from PySide6.QtCore import QCoreApplication

    from app.gui.launch import I18N_DIR, install_translations

    assert (I18N_DIR / "hearth_ru.qm").is_file()
    assert install_translations(qapp, "ru") == "ru"
    try:
        assert QCoreApplication.translate("LibraryPanel", "Add files…") == "Добавить файлы…"
        assert QCoreApplication.translate("ChatView", "Send") == "Отправить"
        assert QCoreApplication.translate("TurnCard", "Supporting quotes") == "Подтверждающие цитаты"
    finally:
        for t in getattr(qapp, "_hearth_translators", ()):
            qapp.removeTranslator(t)


def test_every_gui_string_has_a_russian_translation(tmp_path):
    """lupdate over the GUI's sources finds no string the Russian file lacks or leaves untranslated, and the
    shipped .qm is the compiled .ts (rebuilt here and compared)."""
    import subprocess
    import sys

    from app.gui.launch import I18N_DIR

    bin_dir = Path(sys.executable).parent
    ts = tmp_path / "hearth_ru.ts"
    shutil.copy(I18N_DIR / "hearth_ru.ts", ts)
    sources = sorted(str(p) for p in (ROOT / "app" / "gui").glob("*.py")) + sorted(
        str(p) for p in (ROOT / "app" / "gui" / "controllers").glob("*.py"))
    out = subprocess.run([str(bin_dir / "pyside6-lupdate"), "-no-obsolete", *sources, "-ts", str(ts)],
                         capture_output=True, text=True, check=True).stdout
    assert "(0 new and" in out, out
    text = ts.read_text(encoding="utf-8")
    assert 'type="unfinished"' not in text
    qm = tmp_path / "hearth_ru.qm"
    subprocess.run([str(bin_dir / "pyside6-lrelease"), str(I18N_DIR / "hearth_ru.ts"), "-qm", str(qm)],
                   capture_output=True, check=True)
    assert qm.read_bytes() == (I18N_DIR / "hearth_ru.qm").read_bytes()


def test_cli_gui_usage(monkeypatch, capsys):
    from app.cli import main

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    assert main([]) == 2  # `hearth` alone with no screen: the help, as before
    assert main(["gui"]) == 2 and "no display" in capsys.readouterr().err
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert main(["gui", "--ask", "x"]) == 2 and "--screenshot" in capsys.readouterr().err
    assert main(["gui", "--screenshot", "x.png", "--size", "big"]) == 2


def test_cycles_are_collected_on_the_gui_thread_not_in_workers(qapp):
    import gc
    import threading
    import weakref

    from app.gui import gcguard

    collector = gcguard.install(qapp)
    assert not gc.isenabled()

    class Node:
        pass

    gone_in: list[str] = []

    def make_cycles() -> weakref.ref:
        first = None
        for _ in range(5000):  # far past the young generation's threshold
            a, b = Node(), Node()
            a.other, b.other = b, a
            first = first or a
        weakref.finalize(first, lambda: gone_in.append(threading.current_thread().name))
        return weakref.ref(first)

    ref: list[weakref.ref] = []
    worker = threading.Thread(target=lambda: ref.append(make_cycles()), name="worker")
    worker.start()
    worker.join()
    assert ref[0]() is not None and gone_in == []  # the worker allocated plenty and collected nothing
    assert collector.tick() is not None
    assert ref[0]() is None and gone_in == [threading.current_thread().name]


def test_citations_become_links_outside_code():
    md = linkify_citations("EUR 60 [1], see [2, 3] and `x[1]` but not [9].", 3)
    assert "[1](cite:1)" in md and "[2](cite:2), [3](cite:3)" in md
    assert "`x[1]`" in md and "[9]" in md and "cite:9" not in md


def test_settings_locked_by_the_administrator_are_read_only(qtbot, tmp_path, monkeypatch):
    from tests.tinygguf import write_tiny_llama

    policy = tmp_path / "policy.toml"
    policy.write_text(
        f'version = 1\n[data]\nfolder = "{tmp_path / "data"}"\n'
        '[models]\nallowed = ["tiny-chat.gguf"]\n[api]\nserver = "forbidden"\n'
    )
    monkeypatch.setenv("HEARTH_POLICY", str(policy))
    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    write_tiny_llama(models / "tiny-chat.gguf")
    write_tiny_llama(models / "other.gguf")
    app = App(qtbot, tmp_path)
    app.idle()
    dialog = app.settings()
    assert not dialog.data_dir.isEnabled() and str(policy) in dialog.data_dir.toolTip()
    assert not dialog.server.isEnabled() and not dialog.server.isChecked()
    qtbot.waitUntil(lambda: dialog.model.findData("tiny-chat.gguf") >= 0, timeout=WAIT)
    assert dialog.model.findData("other.gguf") < 0  # not allowed: not offered


def test_the_api_switch_follows_the_administrators_key_policy(qtbot, tmp_path, monkeypatch):
    import httpx

    policy = tmp_path / "policy.toml"
    policy.write_text('version = 1\n[api]\nserver = "key-only"\n')
    monkeypatch.setenv("HEARTH_POLICY", str(policy))
    app = App(qtbot, tmp_path)
    app.idle()
    w = app.window
    states = []
    job = w.ops.set_api_server(True, port=0)  # the window's switch uses 8642; a free port here
    job.finished.connect(states.append)
    job.finished.connect(w.settings.on_api_server)
    qtbot.waitUntil(lambda: bool(states), timeout=WAIT)
    state = states[0]
    try:
        assert state.key_required and state.new_key  # loopback too, and the key is made now
        assert w.api_label.text().endswith("(key required)")
        assert w.chat.banner.isVisible() and state.new_key in w.chat.banner.message  # shown once, selectable
        assert httpx.get(state.url + "/models", timeout=10).status_code == 401
        ok = httpx.get(state.url + "/models", headers={"Authorization": f"Bearer {state.new_key}"}, timeout=10)
        assert ok.status_code == 200
    finally:
        w.ops.set_api_server(False)
        app.idle()
    policy.write_text('version = 1\n[api]\nserver = "forbidden"\n')
    failures = []
    job = w.ops.set_api_server(True, port=0)
    job.failed.connect(failures.append)
    qtbot.waitUntil(lambda: bool(failures), timeout=WAIT)
    assert "polic" in failures[0].message.lower()


def test_a_quote_from_a_document_without_pages_opens_its_text_at_the_quote_highlighted(qtbot, tmp_path):
    from app.gui.text_viewer import TextViewer

    folder = tmp_path / "notes"
    folder.mkdir()
    doc = folder / "kitchen.md"
    filler = "\n\n".join(f"Paragraph {i} 🍲 about nothing in particular, kept for length." for i in range(80))
    doc.write_text(f"# Kitchen\n\n{filler}\n\n## Fridge\n\nThe fridge is cleaned out every Friday at 16:00.\n",
                   encoding="utf-8")
    app = App(qtbot, tmp_path, model=ScriptedModel("The fridge is cleaned out every Friday at 16:00 [1]."))
    app.ingest_demo(folder)
    card = app.answer("When is the fridge cleaned out?")
    row = next(q for q in card.findChildren(QuoteRow) if "every Friday" in q.quote.text)
    qtbot.mouseClick(row, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: doc.resolve() in app.window.sources.text_viewers
                    or doc in app.window.sources.text_viewers, timeout=WAIT)
    viewer = next(iter(app.window.sources.text_viewers.values()))
    assert isinstance(viewer, TextViewer) and viewer.isVisible() and not app.opened
    # Exactly the quote, though 80 emoji (two UTF-16 units each in Qt) come before it.
    assert viewer.highlighted == row.quote.text and "Quote highlighted" in viewer.found.text()
    qtbot.waitUntil(lambda: viewer.view.textCursor().position() > 0, timeout=WAIT)
    shown = viewer.view.cursorRect()
    assert viewer.view.viewport().rect().contains(shown.center())  # scrolled to it
    assert app.window.open_source(row.hit) is None and viewer.highlighted == row.quote.text  # unchanged: not re-read
    # Edited since it was indexed: the quote is found where it is now, or the viewer says it is gone.
    doc.write_text("# Kitchen\n\nNew rules.\n\nThe fridge is cleaned out every Friday at 16:00.\n", encoding="utf-8")
    qtbot.mouseClick(row, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: viewer.highlighted == row.quote.text and "New rules" in viewer.view.toPlainText(),
                    timeout=WAIT)
    doc.write_text("# Kitchen\n\nThe fridge rota was dropped.\n", encoding="utf-8")
    qtbot.mouseClick(row, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "dropped" in viewer.view.toPlainText(), timeout=WAIT)
    assert viewer.highlighted == "" and "changed since it was indexed" in viewer.found.text()
    # Gone altogether: said in the banner, nothing opened.
    doc.unlink()
    qtbot.mouseClick(row, Qt.MouseButton.LeftButton)
    assert "no longer at" in app.window.chat.banner.message and not app.opened


def test_indexing_leaves_the_long_lived_heap_frozen_and_settings_free_it(qtbot, tmp_path, docs):
    """After an ingest the survivors are out of the collector's reach (no full rescan on the GUI thread);
    new settings replace the service, and the old one is still freed."""
    import gc
    import weakref

    gc.unfreeze()
    app = App(qtbot, tmp_path)
    app.ingest_demo(docs)
    assert gc.get_freeze_count() > 10_000
    ops = app.window.ops
    old = weakref.ref(ops.hearth)
    ops.reconfigure(replace(ops.config, n_ctx=ops.config.n_ctx * 2))
    app.idle()
    gc.collect()
    assert old() is None  # not kept by the freeze

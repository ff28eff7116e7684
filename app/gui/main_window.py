"""The main window: workspaces and chats on the left, the chat in the middle, library and hardware on the right."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QDateTime, QEvent, QObject, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QWidget,
)

from app.gui import theme
from app.gui.backend import Backend, ConversationStarted, FileResult, Token
from app.gui.chat import ChatView, TurnCard
from app.gui.hardware_panel import HardwarePanel
from app.gui.library import LibraryPanel
from app.gui.prefs import AUTO, Prefs
from app.gui.sidebar import Sidebar
from app.gui.worker import Failure, Job
from inference.errors import UsageError
from rag.conversations import Conversation, Turn
from rag.service import DEFAULT_WORKSPACE, check_workspace

log = logging.getLogger(__name__)
Opener = Callable[[Path], None]


def open_with_system(path: Path) -> None:
    """Open a file in the desktop's default application."""
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


class MainWindow(QMainWindow):
    """The window; all work goes through `backend` (executors), results come back by signals."""

    def __init__(self, backend: Backend, prefs: Prefs, *, workspace: str | None = None,
                 log_path: Path | None = None, open_external: Opener = open_with_system) -> None:
        super().__init__()
        self.backend = backend
        self.prefs = prefs
        self.log_path = log_path
        self.open_external = open_external
        self.workspace = workspace or prefs.last_workspace or DEFAULT_WORKSPACE
        self.conversation: Conversation | None = None
        self.ask_job: Job | None = None
        self.ingest_jobs: list[Job] = []
        self._live: tuple[Turn, TurnCard | None] | None = None
        self._hw_job: Job | None = None
        self._hw_again = False
        self.watch_job: Job | None = None
        self._known_workspaces: list[str] = []
        self._pdf_viewers: dict[Path, Any] = {}
        self._text_viewers: dict[Path, Any] = {}
        self.model_state = "idle"  # idle | loading | ready | failed
        self.setWindowTitle("Hearth")
        self.setWindowIcon(theme.app_icon())
        self.setAcceptDrops(True)
        self.resize(1360, 860)

        self.sidebar = Sidebar()
        self.chat = ChatView()
        self.library = LibraryPanel()
        self.hardware = HardwarePanel()
        self.side = QTabWidget()
        self.side.addTab(self.library, self.tr("Library"))
        self.side.addTab(self.hardware, self.tr("Hardware"))
        self.side.setDocumentMode(True)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(self.chat)
        self.splitter.addWidget(self.side)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setStretchFactor(2, 0)
        self.splitter.setSizes([220, 720, 420])
        self.splitter.setCollapsible(1, False)
        self.setCentralWidget(self.splitter)
        self._build_menus()
        self.api_label = QLabel()
        self.api_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addPermanentWidget(self.api_label)
        self.model_label = QLabel()
        self.statusBar().addPermanentWidget(self.model_label)
        self._restore()

        self.sidebar.workspace_selected.connect(self.switch_workspace)
        self.sidebar.new_workspace_requested.connect(self.new_workspace)
        self.sidebar.rename_workspace_requested.connect(self.rename_workspace)
        self.sidebar.delete_workspace_requested.connect(self.delete_workspace)
        self.sidebar.new_chat_requested.connect(self.new_chat)
        self.sidebar.chat_selected.connect(self.open_chat)
        self.sidebar.delete_chat_requested.connect(self.delete_chat)
        self.sidebar.export_chat_requested.connect(self.export_chat)
        self.chat.send_requested.connect(self.ask)
        self.chat.stop_requested.connect(self.stop)
        self.chat.source_clicked.connect(self.open_source)
        self.chat.banner.log_requested.connect(self.open_log)
        self.library.add_files_requested.connect(self.choose_files)
        self.library.add_folder_requested.connect(self.choose_folder)
        self.library.cancel_requested.connect(self.cancel_ingest)
        self.library.remove_requested.connect(self.remove_documents)
        self.library.reindex_requested.connect(self.reindex_documents)
        self.library.open_requested.connect(lambda s: self.open_source_path(Path(s), None, ""))
        self.library.banner.log_requested.connect(self.open_log)
        self.library.watch_requested.connect(self.choose_watch_folder)
        self.library.unwatch_requested.connect(self.unwatch_folder)
        self.hardware.refresh_requested.connect(self.refresh_hardware)
        self.side.currentChanged.connect(self._on_side_tab)
        backend.model.busy_changed.connect(self._on_model_busy)
        backend.config_changed.connect(self._on_config_changed)

        # While a model works, the hardware panel follows its memory use.
        self._hw_timer = QTimer(self)
        self._hw_timer.setInterval(2000)
        self._hw_timer.timeout.connect(self._tick_hardware)
        # Drops are taken anywhere on the window, even over widgets that take text drops themselves.
        QApplication.instance().installEventFilter(self)

    # Start-up.
    def start(self) -> None:
        """Load the lists and the model in the background (call once, after show)."""
        self._set_model_state("idle")
        self.refresh_workspaces()
        self.refresh_documents()
        self._refresh_chats()
        self.restart_watch()
        if self.prefs.api_server:
            self.apply_api_server()
        job = self.refresh_hardware()
        # The automatic GPU layer count comes from the first memory plan, so load the model after it.
        job.ended.connect(self.load_model)

    def load_model(self) -> None:
        """Load the chat model in the background."""
        if self.model_state in ("loading", "ready"):
            return
        self._set_model_state("loading")
        job = self.backend.load_model()
        job.finished.connect(lambda _m: (self._set_model_state("ready"), self.refresh_hardware()))
        job.failed.connect(self._on_model_failed)

    def _on_model_failed(self, failure: Failure) -> None:
        if failure.cancelled:
            self._set_model_state("idle")
            return
        self._set_model_state("failed", failure.message)
        self.chat.banner.show_message(failure.message, failure.hint, log_link=self.log_path is not None)

    def _set_model_state(self, state: str, detail: str = "") -> None:
        self.model_state = state
        from inference.models import DEFAULT_CHAT_MODEL

        name = Path(self.backend.config.chat_model or DEFAULT_CHAT_MODEL).name
        text = {
            "idle": self.tr("Model: {name}").format(name=name),
            "loading": self.tr("Loading {name}…").format(name=name),
            "ready": self.tr("Model: {name} · ready").format(name=name),
            "failed": self.tr("Model: {name} · failed to load").format(name=name),
        }[state]
        self.model_label.setText(text)
        self.model_label.setToolTip(detail)
        colour = {"ready": theme.OK, "failed": theme.ERROR, "loading": theme.WARN}.get(state)
        self.model_label.setStyleSheet(f"color: {colour.name()};" if colour else "")

    # Menus and shortcuts.
    def _build_menus(self) -> None:
        file = self.menuBar().addMenu(self.tr("&File"))
        self.act_add_files = self._action(file, self.tr("Add files…"), self.choose_files, QKeySequence.StandardKey.Open)
        self._action(file, self.tr("Add folder…"), self.choose_folder, "Ctrl+Shift+O")
        self._action(file, self.tr("Watch a folder…"), self.choose_watch_folder)
        file.addSeparator()
        self._action(file, self.tr("New workspace…"), self.new_workspace)
        file.addSeparator()
        self._action(file, self.tr("Settings…"), self.open_settings, QKeySequence.StandardKey.Preferences)
        file.addSeparator()
        self._action(file, self.tr("Quit"), self.close, QKeySequence.StandardKey.Quit)
        chat = self.menuBar().addMenu(self.tr("&Chat"))
        self.act_new_chat = self._action(chat, self.tr("New chat"), self.new_chat, QKeySequence.StandardKey.New)
        self.act_stop = self._action(chat, self.tr("Stop"), self.stop, "Esc")
        self.act_stop.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self._action(chat, self.tr("Export chat…"),
                     lambda: self.conversation and self.conversation.id and self.export_chat(self.conversation.id))
        view = self.menuBar().addMenu(self.tr("&View"))
        self.act_side = self._action(view, self.tr("Side panel"), self.toggle_side_panel, "Ctrl+B")
        self.act_side.setCheckable(True)
        self.act_side.setChecked(True)
        self._action(view, self.tr("Library"), lambda: self.show_side_tab(0), "Ctrl+L")
        self._action(view, self.tr("Hardware"), lambda: self.show_side_tab(1), "Ctrl+H")
        help_ = self.menuBar().addMenu(self.tr("&Help"))
        self._action(help_, self.tr("Open log file"), self.open_log)
        self._action(help_, self.tr("Open data folder"),
                     lambda: self.open_external(self.backend.config.data_dir))
        self._action(help_, self.tr("About Hearth"), self.about)
        QShortcut(QKeySequence("Ctrl+Return"), self, self.chat._send)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut) if isinstance(shortcut, str) else shortcut)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        self.addAction(action)
        return action

    # Workspaces.
    def refresh_workspaces(self) -> None:
        """Reload the workspace list."""
        job = self.backend.list_workspaces()
        job.finished.connect(self._set_workspaces)
        job.failed.connect(self._show_failure)

    def _set_workspaces(self, names: Sequence[str]) -> None:
        hidden = set(self.prefs.hidden_workspaces)
        known = (set(names) | set(self.prefs.extra_workspaces)) - hidden
        known.add(self.workspace)
        if not known:
            known.add(DEFAULT_WORKSPACE)
        self._known_workspaces = sorted(known, key=lambda n: (n != DEFAULT_WORKSPACE, n.lower()))
        self.sidebar.set_workspaces(self._known_workspaces, self.prefs.labels, self.workspace)
        self._update_title()

    def switch_workspace(self, name: str) -> None:
        """Show another workspace: its documents and chats."""
        if name == self.workspace:
            return
        self.workspace = name
        self.prefs.last_workspace = name
        self.conversation = None
        self._detach_live_card()
        self.chat.show_conversation(None)
        self.library.clear()
        self.refresh_documents()
        self._refresh_chats()
        self.restart_watch()
        self._update_title()

    def new_workspace(self) -> None:
        """Ask for a name and create an empty workspace."""
        name, ok = QInputDialog.getText(self, self.tr("New workspace"), self.tr("Name:"))
        if not ok:
            return
        try:
            name = check_workspace(name)
        except UsageError as exc:
            self._show_failure(Failure(str(exc), exc.hint))
            return
        self.prefs.extra_workspaces = [*self.prefs.extra_workspaces, name]
        self.prefs.hidden_workspaces = [n for n in self.prefs.hidden_workspaces if n != name]
        self._set_workspaces([*self._known_workspaces, name])
        self.sidebar.set_workspaces(self._known_workspaces, self.prefs.labels, name)
        self.switch_workspace(name)

    def rename_workspace(self, name: str) -> None:
        """Give a workspace another display name (the index keeps its name, which the CLI uses)."""
        labels = dict(self.prefs.labels)
        label, ok = QInputDialog.getText(self, self.tr("Rename workspace"), self.tr("Name shown:"),
                                         text=labels.get(name, name))
        if not ok or not label.strip():
            return
        if label.strip() == name:
            labels.pop(name, None)
        else:
            labels[name] = label.strip()
        self.prefs.labels = labels
        self.sidebar.set_workspaces(self._known_workspaces, labels, self.workspace)
        self._update_title()

    def delete_workspace(self, name: str, *, confirm: bool = True) -> None:
        """Remove a workspace's documents from the index and its chats."""
        if confirm:
            answer = QMessageBox.question(
                self, self.tr("Delete workspace"),
                self.tr("Delete “{ws}”? Its documents leave the index (the files themselves stay where they are) "
                        "and its chats are deleted.").format(ws=self.prefs.labels.get(name, name)))
            if answer != QMessageBox.StandardButton.Yes:
                return
        job = self.backend.delete_workspace(name)
        job.failed.connect(self._show_failure)
        self.prefs.extra_workspaces = [n for n in self.prefs.extra_workspaces if n != name]
        self.prefs.watched = {ws: f for ws, f in self.prefs.watched.items() if ws != name}
        if self.workspace == name:
            self.restart_watch()
        if name != DEFAULT_WORKSPACE:  # the default workspace is only emptied
            self.prefs.hidden_workspaces = [*self.prefs.hidden_workspaces, name]
            self._known_workspaces = [n for n in self._known_workspaces if n != name] or [DEFAULT_WORKSPACE]
        if self.workspace == name and name != DEFAULT_WORKSPACE:
            target = self._known_workspaces[0]
            self.sidebar.set_workspaces(self._known_workspaces, self.prefs.labels, target)
            self.switch_workspace(target)
        else:
            self.sidebar.set_workspaces(self._known_workspaces, self.prefs.labels, self.workspace)
            if self.workspace == name:
                self.conversation = None
                self.chat.show_conversation(None)
                self._refresh_chats()
                job.ended.connect(self.refresh_documents)

    def _update_title(self) -> None:
        label = self.prefs.labels.get(self.workspace, self.workspace)
        self.setWindowTitle(self.tr("{ws} — Hearth").format(ws=label))

    # Documents.
    def refresh_documents(self) -> None:
        """Reload the current workspace's document list."""
        ws = self.workspace
        job = self.backend.list_documents(ws)
        job.finished.connect(lambda docs: self._set_documents(ws, docs))
        job.failed.connect(self._show_failure)

    def _set_documents(self, ws: str, docs: Sequence[Any]) -> None:
        if ws != self.workspace:
            return
        self.library.set_documents(docs)
        label = self.prefs.labels.get(ws, ws)
        self.chat.set_workspace_label(label, sum(1 for d in docs if d.status == "done"))

    def choose_files(self) -> None:
        """Pick files to add (for those who do not drag)."""
        paths, _ = QFileDialog.getOpenFileNames(self, self.tr("Add documents"), str(Path.home()))
        if paths:
            self.add_paths([Path(p) for p in paths])

    def choose_folder(self) -> None:
        """Pick a folder to add."""
        folder = QFileDialog.getExistingDirectory(self, self.tr("Add a folder"), str(Path.home()))
        if folder:
            self.add_paths([Path(folder)])

    def add_paths(self, paths: Sequence[Path]) -> None:
        """Add dropped or chosen paths: .gguf files to the model library, the rest to the workspace."""
        models = [p for p in paths if p.suffix.lower() == ".gguf" and p.is_file()]
        docs = [p for p in paths if p not in models]
        for m in models:
            self.add_model(m)
        if docs:
            self.ingest(docs)

    def ingest(self, paths: Sequence[Path]) -> Job:
        """Index paths into the current workspace."""
        ws = self.workspace
        if ws not in self.prefs.extra_workspaces and ws not in self._known_workspaces:
            self.prefs.extra_workspaces = [*self.prefs.extra_workspaces, ws]
        job = self.backend.ingest(list(paths), ws)
        self._track_ingest(job, ws)
        return job

    def _track_ingest(self, job: Job, ws: str) -> None:
        self.ingest_jobs.append(job)
        if ws == self.workspace:
            self.library.begin()
        self.show_side_tab(0)
        job.progress.connect(lambda e: ws == self.workspace and self._on_ingest_progress(e))
        job.finished.connect(lambda report: self._on_ingested(ws, report))
        job.failed.connect(lambda f: self._on_ingest_failed(ws, f))
        job.ended.connect(lambda: self.ingest_jobs.remove(job) if job in self.ingest_jobs else None)

    def _on_ingest_progress(self, event: object) -> None:
        self.library.on_progress(event)
        if isinstance(event, FileResult) and event.ok:
            self.chat.set_workspace_label(self.prefs.labels.get(self.workspace, self.workspace),
                                          self.library.done_count())

    def _on_ingested(self, ws: str, report: Any) -> None:
        if ws == self.workspace:
            self.library.finish(report)
            self.refresh_documents()
        done = report.added + report.updated
        self.statusBar().showMessage(
            self.tr("Indexed {n} documents ({chunks} passages) in {s:.1f} s; {u} unchanged, {f} failed.").format(
                n=done, chunks=report.chunks, s=report.seconds, u=report.unchanged, f=len(report.failed)), 8000)

    def _on_ingest_failed(self, ws: str, failure: Failure) -> None:
        if ws == self.workspace:
            self.library.finish(None, stopped=failure.cancelled)
            if not failure.cancelled:
                self.library.banner.show_message(failure.message, failure.hint, log_link=self.log_path is not None)
            self.refresh_documents()

    def cancel_ingest(self) -> None:
        """Stop indexing (every queued batch too)."""
        for job in self.ingest_jobs:
            job.cancel()
        self.library.cancel.setEnabled(False)
        self.library.progress_text.setText(self.tr("Stopping after the current document…"))

    # Watched folders.
    def choose_watch_folder(self) -> None:
        """Pick a folder to keep in sync with the current workspace."""
        folder = QFileDialog.getExistingDirectory(self, self.tr("Watch a folder"), str(Path.home()))
        if folder:
            self.watch_folder(Path(folder))

    def watch_folder(self, folder: Path) -> None:
        """Keep a folder in sync with the current workspace (remembered across starts)."""
        watched = dict(self.prefs.watched)
        folders = watched.get(self.workspace, [])
        if str(folder.resolve()) not in folders:
            watched[self.workspace] = [*folders, str(folder.resolve())]
            self.prefs.watched = watched
        self.restart_watch()

    def unwatch_folder(self, folder: str) -> None:
        """Stop keeping a folder in sync (its documents stay in the library)."""
        watched = dict(self.prefs.watched)
        watched[self.workspace] = [f for f in watched.get(self.workspace, []) if f != folder]
        self.prefs.watched = watched
        self.restart_watch()

    def restart_watch(self) -> None:
        """Watch the current workspace's folders (stopping the watcher of the previous set)."""
        if self.watch_job is not None:
            self.watch_job.cancel()
            self.watch_job = None
        folders = self.prefs.watched.get(self.workspace, [])
        self.library.set_watched(folders)
        if not folders:
            return
        ws = self.workspace
        job = self.backend.watch([Path(f) for f in folders], ws)
        self.watch_job = job
        job.progress.connect(lambda e: self._on_watch_event(job, ws, e))
        job.failed.connect(lambda f: job is self.watch_job and not f.cancelled and self.library.set_watch_state(
            self.tr("stopped: {reason}").format(reason=f.message), level="error", tooltip=f.hint or ""))

    def _on_watch_event(self, job: Job, ws: str, event: object) -> None:
        if job is not self.watch_job or ws != self.workspace:
            return
        from rag.ingest import Progress
        from rag.watch import WatchUpdate

        if isinstance(event, Progress):
            if event.files_total:
                self.library.set_watch_state(self.tr("syncing… {done} of {total}").format(
                    done=event.files_done, total=event.files_total))
        elif isinstance(event, WatchUpdate):
            failed = len(event.report.failed)
            text = self.tr("in sync · {time}").format(time=QDateTime.currentDateTime().toString("HH:mm"))
            if failed:
                text += " · " + self.tr("{n} failed").format(n=failed)
            self.library.set_watch_state(text, level="warning" if failed else "ok",
                                         tooltip="\n".join(f.error for f in event.report.failed))
            if event.changed:
                self.refresh_documents()

    def remove_documents(self, sources: list[str]) -> None:
        """Remove documents from the workspace after asking."""
        names = ", ".join(Path(s).name for s in sources[:3]) + (" …" if len(sources) > 3 else "")
        answer = QMessageBox.question(
            self, self.tr("Remove documents"),
            self.tr("Remove {names} from the library? The files themselves are not deleted.").format(names=names))
        if answer != QMessageBox.StandardButton.Yes:
            return
        job = self.backend.forget(sources, self.workspace)
        job.finished.connect(lambda _r: self.refresh_documents())
        job.failed.connect(self._show_failure)

    def reindex_documents(self, sources: list[str]) -> None:
        """Read documents again from scratch."""
        self._track_ingest(self.backend.reindex(sources, self.workspace), self.workspace)

    def add_model(self, path: Path) -> Job:
        """Put a dropped .gguf into the models folder."""
        self.statusBar().showMessage(self.tr("Adding the model {name}…").format(name=path.name))
        job = self.backend.add_model(path)
        job.progress.connect(lambda f: self.statusBar().showMessage(
            self.tr("Adding the model {name}… {pct:.0f}%").format(name=path.name, pct=f * 100)))
        job.finished.connect(lambda target: (
            self.statusBar().clearMessage(),
            self.library.banner.show_message(
                self.tr("{name} is now in the model library.").format(name=target.name),
                self.tr("Choose it as the chat model in Settings (Ctrl+,)."), level="info")))
        job.failed.connect(lambda f: (self.statusBar().clearMessage(), self._show_failure(f)))
        return job

    # Chat.
    def new_chat(self) -> None:
        """Start an empty conversation (stored once its first question is asked)."""
        self._detach_live_card()
        self.conversation = None
        self.chat.show_conversation(None)
        self.chat.set_generating(self.ask_job is not None)
        self.sidebar.clear_chat_selection()
        self._refresh_chats()
        self.chat.prompt.setFocus()

    def open_chat(self, conv_id: int) -> None:
        """Reopen a stored conversation."""
        if self._live is not None and self.conversation is not None and self.conversation.id == conv_id:
            return  # the one being answered is on screen already
        job = self.backend.get_conversation(conv_id)
        job.finished.connect(self._show_chat)
        job.failed.connect(self._show_failure)

    def _show_chat(self, conv: Conversation | None) -> None:
        if conv is None or conv.workspace != self.workspace:
            self._refresh_chats()
            return
        self._detach_live_card()
        self.conversation = conv
        self.chat.show_conversation(conv)
        self.chat.set_generating(self.ask_job is not None)

    def delete_chat(self, conv_id: int) -> None:
        """Delete a stored conversation."""
        if self.conversation is not None and self.conversation.id == conv_id:
            if self.ask_job is not None:
                self.ask_job.cancel()
            self.new_chat()
        job = self.backend.delete_conversation(conv_id)
        job.ended.connect(self._refresh_chats)
        job.failed.connect(self._show_failure)

    def export_chat(self, conv_id: int, path: Path | None = None) -> Job | None:
        """Save a conversation as Markdown."""
        if path is None:
            title = self.conversation.title if self.conversation and self.conversation.id == conv_id else "chat"
            safe = "".join(c if c.isalnum() or c in " -_" else "_" for c in title)[:40].strip() or "chat"
            chosen, _ = QFileDialog.getSaveFileName(self, self.tr("Export chat"), str(Path.home() / f"{safe}.md"),
                                                    self.tr("Markdown (*.md)"))
            if not chosen:
                return None
            path = Path(chosen)
        job = self.backend.export_conversation(conv_id, path)
        job.finished.connect(lambda p: self.statusBar().showMessage(self.tr("Saved {path}").format(path=p), 6000))
        job.failed.connect(self._show_failure)
        return job

    def _refresh_chats(self) -> None:
        ws = self.workspace
        job = self.backend.list_conversations(ws)
        job.finished.connect(lambda chats: ws == self.workspace and self.sidebar.set_chats(
            chats, self.conversation.id if self.conversation else None))
        job.failed.connect(self._show_failure)

    def ask(self, question: str) -> Job | None:
        """Ask a question in the current conversation; the answer streams in."""
        if self.ask_job is not None:
            return None
        if self.conversation is None:
            self.conversation = Conversation(0, self.workspace, question)  # stored by the job; id follows
        conv_id = self.conversation.id or None
        turn = Turn(question)
        self.conversation.turns.append(turn)
        card = self.chat.start_turn(turn)
        if self.model_state == "loading":
            card.set_status(self.tr("Waiting for the model to load…"))
        self._live = (turn, card)
        job = self.backend.ask(question, self.workspace, conv_id)
        self.ask_job = job
        conv = self.conversation
        job.progress.connect(lambda e: self._on_ask_progress(conv, e))
        job.finished.connect(self._on_answer)
        job.failed.connect(self._on_answer_failed)
        job.ended.connect(self._on_ask_ended)
        return job

    def stop(self) -> None:
        """Stop the answer being written (Esc)."""
        if self.ask_job is not None:
            self.ask_job.cancel()

    def _on_ask_progress(self, conv: Conversation, event: object) -> None:
        if isinstance(event, ConversationStarted):
            if not conv.id:
                conv.id = event.id
                self._refresh_chats()
            return
        if not isinstance(event, Token) or self._live is None:
            return
        turn, card = self._live
        if card is not None:
            if card.status.isVisible() and card.status.text():
                card.status.hide()
            card.append(event.text)
        else:
            turn.text += event.text

    def _on_answer(self, answer: Any) -> None:
        if self._live is None:
            return
        turn, card = self._live
        turn.answer, turn.text = answer, answer.text
        if card is not None:
            card.finish(answer)
        if self.model_state != "ready" and answer.sources:
            self._set_model_state("ready")

    def _on_answer_failed(self, failure: Failure) -> None:
        if self._live is None:
            return
        turn, card = self._live
        if failure.cancelled:
            turn.error = self.tr("Stopped.")
            if card is not None:
                card.stopped()
            return
        turn.error = failure.message
        if card is not None:
            card.fail(failure.message)
            self.chat.banner.show_message(failure.message, failure.hint, log_link=self.log_path is not None)

    def _on_ask_ended(self) -> None:
        self.ask_job = None
        self._live = None
        self.chat.set_generating(False)
        self.chat.prompt.setFocus()

    def _detach_live_card(self) -> None:
        if self._live is not None:
            self._live = (self._live[0], None)

    # Sources.
    def open_source(self, hit: Any) -> Job | None:
        """Open a cited passage or quote (anything with source, page, text, start, end): a PDF in the app at
        its page, any other document as the text Hearth read from it, scrolled to the passage, highlighted."""
        path = Path(hit.source)
        if path.suffix.lower() == ".pdf" or not path.exists():
            self.open_source_path(path, hit.page, hit.text)
            return None
        stamp = _file_stamp(path)
        viewer = self._text_viewers.get(path)
        if viewer is not None and stamp is not None and viewer.stamp == stamp:
            self._show_text(path, viewer.text, hit, stamp)  # unchanged since it was read: not read again
            return None
        job = self.backend.document_text(path)
        job.finished.connect(lambda text: self._show_text(path, text, hit, stamp))

        def failed(failure: Failure) -> None:
            self._show_failure(failure)
            self.open_external(path)  # still show the document, without the place

        job.failed.connect(failed)
        return job

    def _show_text(self, path: Path, text: str, hit: Any, stamp: tuple[int, int] | None) -> None:
        from app.gui.text_viewer import TextViewer

        viewer = self._text_viewers.get(path)
        if viewer is None:
            viewer = TextViewer(self)
            viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            viewer.destroyed.connect(lambda _=None, p=path: self._text_viewers.pop(p, None))
            viewer.open_original.connect(self.open_external)
            self._text_viewers[path] = viewer
        viewer.stamp = stamp
        viewer.show_text(path, text, hit.start, hit.end, hit.text)
        viewer.show()
        viewer.raise_()
        viewer.activateWindow()

    def open_source_path(self, path: Path, page: int | None, passage: str) -> None:
        """Open a document, at a page where it has pages."""
        if not path.exists():
            self._show_failure(Failure(self.tr("{name} is no longer at {folder}.").format(
                name=path.name, folder=path.parent), self.tr("Re-index it from its new place, or remove it.")))
            return
        if path.suffix.lower() == ".pdf":
            from app.gui.pdf_viewer import PdfViewer

            viewer = self._pdf_viewers.get(path)
            if viewer is None:
                viewer = PdfViewer(self)
                viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
                viewer.destroyed.connect(lambda _=None, p=path: self._pdf_viewers.pop(p, None))
                self._pdf_viewers[path] = viewer
            if viewer.show_page(path, page, passage):
                viewer.show()
                viewer.raise_()
                viewer.activateWindow()
                return
            viewer.close()
        self.open_external(path)

    # Hardware.
    def refresh_hardware(self) -> Job:
        """Take a new hardware snapshot (one at a time; a request made meanwhile runs right after it)."""
        if self._hw_job is not None:
            self._hw_again = True
            return self._hw_job
        gpu_layers = self.prefs.gpu_layers
        job = self.backend.hardware(n_gpu_layers=None if gpu_layers == AUTO else gpu_layers)
        self._hw_job = job
        job.finished.connect(self._on_hardware)
        job.failed.connect(lambda f: self.hardware.show_error(f.message))
        job.ended.connect(self._on_hardware_ended)
        return job

    def _on_hardware_ended(self) -> None:
        self._hw_job = None
        if self._hw_again:
            self._hw_again = False
            self.refresh_hardware()

    def _on_hardware(self, snap: dict[str, Any]) -> None:
        self.hardware.set_snapshot(snap)
        plan = snap.get("plan")
        if plan and self.prefs.gpu_layers == AUTO and self.model_state in ("idle", "failed"):
            n = int(plan.get("n_gpu_layers") or 0)
            if n != self.backend.config.n_gpu_layers:
                self.backend.reconfigure(replace(self.backend.config, n_gpu_layers=n))

    def _on_model_busy(self, busy: bool) -> None:
        if busy and self.side.currentWidget() is self.hardware:
            self._hw_timer.start()
        elif not busy:
            self._hw_timer.stop()
            if self.side.currentWidget() is self.hardware:
                self.refresh_hardware()

    def _tick_hardware(self) -> None:
        if self.side.isVisible() and self.side.currentWidget() is self.hardware:
            self.refresh_hardware()

    def _on_side_tab(self, index: int) -> None:
        self.prefs.side_tab = index
        if self.side.widget(index) is self.hardware:
            self.refresh_hardware()
            if self.backend.model.busy:
                self._hw_timer.start()

    def show_side_tab(self, index: int) -> None:
        """Show the side panel on the library (0) or the hardware (1)."""
        if not self.side.isVisible():
            self.toggle_side_panel()
        self.side.setCurrentIndex(index)

    def toggle_side_panel(self) -> None:
        """Collapse or show the side panel."""
        visible = not self.side.isVisible()
        self.side.setVisible(visible)
        self.act_side.setChecked(visible)
        self.prefs.side_panel = visible

    # Settings.
    def open_settings(self) -> None:
        """Edit the settings; a changed model, context or data folder takes effect at once."""
        from app.gui.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self.prefs, self.backend, data_dir=self.backend.config.data_dir, parent=self)
        if dialog.exec() != SettingsDialog.DialogCode.Accepted:
            return
        api_before = bool(self.api_label.text())
        dialog.save()
        self.apply_prefs()
        if self.prefs.api_server != api_before:
            self.apply_api_server()

    def apply_prefs(self) -> None:
        """Rebuild the service from the prefs (a new model is loaded in the background)."""
        config = self.backend.config
        ngl = self.prefs.gpu_layers
        new = replace(
            config,
            chat_model=self.prefs.chat_model or None,
            n_ctx=self.prefs.n_ctx,
            n_gpu_layers=config.n_gpu_layers if ngl == AUTO else ngl,
            data_dir=Path(self.prefs.data_dir).expanduser() if self.prefs.data_dir else config.data_dir,
            ingest=replace(config.ingest, chunk_tokens=self.prefs.chunk_tokens),
        )
        self.backend.reconfigure(new)

    def apply_api_server(self) -> Job:
        """Start or stop the local API as the settings say."""
        job = self.backend.set_api_server(self.prefs.api_server)
        job.finished.connect(self._on_api_server)
        job.failed.connect(lambda f: (self.api_label.setText(""), self._show_failure(f)))
        return job

    def _on_api_server(self, state: Any) -> None:
        if state is None:
            self.api_label.setText("")
            return
        label = self.tr("API: {url}").format(url=state.url)
        self.api_label.setText(label + (self.tr(" (key required)") if state.key_required else ""))
        if state.new_key:
            self.chat.banner.show_message(
                self.tr("Your administrator requires a key for the local API, also on this computer."),
                self.tr("Your key, shown only this once (apps send it as 'Authorization: Bearer KEY'): {key}")
                .format(key=state.new_key),
                level="info")

    def _on_config_changed(self) -> None:
        self._set_model_state("idle")
        self.refresh_workspaces()
        self.refresh_documents()
        self.restart_watch()
        if self.prefs.api_server or self.api_label.text():
            self.apply_api_server()
        job = self.refresh_hardware()
        job.ended.connect(self.load_model)

    # Help.
    def open_log(self) -> None:
        """Open the log file."""
        if self.log_path is not None:
            self.open_external(self.log_path)

    def about(self) -> None:
        """The About box."""
        QMessageBox.about(self, self.tr("About Hearth"), self.tr(
            "<b>Hearth</b><br>Private, offline answers from your own documents.<br>"
            "Nothing leaves this computer."))

    def _show_failure(self, failure: Failure) -> None:
        if failure.cancelled:
            return
        self.chat.banner.show_message(failure.message, failure.hint, log_link=self.log_path is not None)

    # Drag and drop, anywhere on the window.
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop) and isinstance(obj, QWidget) \
                and obj.window() is self and _local_paths(event.mimeData()):
            if kind == QEvent.Type.Drop:
                event.acceptProposedAction()
                self.add_paths(_local_paths(event.mimeData()))
            else:
                event.acceptProposedAction()
            return True
        return super().eventFilter(obj, event)

    # Window state.
    def _restore(self) -> None:
        geometry = self.prefs.geometry
        if geometry:
            self.restoreGeometry(geometry)
        splitter = self.prefs.splitter
        if splitter:
            self.splitter.restoreState(splitter)
        self.side.setCurrentIndex(self.prefs.side_tab if 0 <= self.prefs.side_tab < self.side.count() else 0)
        if not self.prefs.side_panel:
            self.side.hide()
            self.act_side.setChecked(False)

    def save_state(self) -> None:
        """Remember size, layout and workspace."""
        self.prefs.geometry = self.saveGeometry()
        self.prefs.splitter = self.splitter.saveState()
        self.prefs.last_workspace = self.workspace
        self.prefs.sync()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        self.save_state()
        QApplication.instance().removeEventFilter(self)
        for viewer in list(self._pdf_viewers.values()):
            viewer.close()
        self.hide()
        self.backend.shutdown()
        event.accept()


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size, to tell whether it changed; None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _local_paths(mime: Any) -> list[Path]:
    if mime is None or not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]

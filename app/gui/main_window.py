"""The main window: workspaces and chats on the left, the chat in the middle, library and hardware on the right.

The window holds the layout, the menus and the wiring; each area's work is done by its controller
(app/gui/controllers/): `workspaces`, `documents`, `watch`, `conversations`, `sources`, `hw`, `model`
and `settings`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QMessageBox, QSplitter, QTabWidget, QWidget

from app.config import Requested
from app.gui import theme
from app.gui.chat import ChatView
from app.gui.controllers.conversations import ConversationController
from app.gui.controllers.documents import DocumentController
from app.gui.controllers.hardware import HardwareController
from app.gui.controllers.model import ModelController
from app.gui.controllers.settings import SettingsController
from app.gui.controllers.sources import SourceController
from app.gui.controllers.watch import WatchController
from app.gui.controllers.workspaces import WorkspaceController
from app.gui.hardware_panel import HardwarePanel
from app.gui.library import LibraryPanel
from app.gui.gcguard import settle_heap
from app.gui.operations import Operations
from app.gui.prefs import Prefs
from app.gui.sidebar import Sidebar
from app.gui.worker import Failure, Job
from rag.conversations import Conversation
from rag.service import DEFAULT_WORKSPACE

log = logging.getLogger(__name__)
Opener = Callable[[Path | QUrl], None]  # hands a file, a folder or a link to the desktop


def open_with_system(target: Path | QUrl) -> None:
    """Open a file, folder or link in the desktop's default application."""
    QDesktopServices.openUrl(target if isinstance(target, QUrl) else QUrl.fromLocalFile(str(target)))


def guide_folders() -> list[Path]:
    """Where the user guide (docs/) may be, first found first: the frozen app's folder, the source checkout,
    then the installed data folder (share/doc/hearth, from the wheel)."""
    folders = []
    bundled = getattr(sys, "_MEIPASS", None)  # PyInstaller's one-folder app (packaging/pyinstaller/hearth.spec)
    if bundled:
        folders.append(Path(bundled) / "docs")
    folders.append(Path(__file__).resolve().parents[2] / "docs")
    folders.append(Path(sys.prefix) / "share" / "doc" / "hearth")
    return folders


def guide_index() -> Path | None:
    """The user guide's index page (docs/README.md) shipped with Hearth, or None when it is not there."""
    for folder in guide_folders():
        index = folder / "README.md"
        if index.is_file():
            return index
    return None


class MainWindow(QMainWindow):
    """The window; all work goes through `ops` (executors), results come back by signals."""

    def __init__(self, ops: Operations, prefs: Prefs, *, workspace: str | None = None,
                 log_path: Path | None = None, open_external: Opener = open_with_system,
                 flags: Requested | None = None) -> None:
        super().__init__()
        self.ops = ops
        self.prefs = prefs
        self.log_path = log_path
        self.open_external = open_external
        self.flags = flags or Requested()  # what the window was started with (settings are applied over it)
        self.workspace = workspace or prefs.last_workspace or DEFAULT_WORKSPACE
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
        self.api_label = QLabel()
        self.api_label.setTextFormat(Qt.TextFormat.PlainText)
        self.api_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addPermanentWidget(self.api_label)
        self.model_label = QLabel()
        self.model_label.setTextFormat(Qt.TextFormat.PlainText)  # names the model's file
        self.statusBar().addPermanentWidget(self.model_label)

        self.workspaces = WorkspaceController(self)
        self.documents = DocumentController(self)
        self.watch = WatchController(self)
        self.conversations = ConversationController(self)
        self.sources = SourceController(self)
        self.hw = HardwareController(self)
        self.model = ModelController(self)
        self.settings = SettingsController(self)
        self._build_menus()
        self._restore()
        self._wire()
        # Drops are taken anywhere on the window, even over widgets that take text drops themselves.
        QApplication.instance().installEventFilter(self)

    def _wire(self) -> None:
        ws, docs, conv, src = self.workspaces, self.documents, self.conversations, self.sources
        self.sidebar.workspace_selected.connect(ws.switch)
        self.sidebar.new_workspace_requested.connect(ws.new)
        self.sidebar.rename_workspace_requested.connect(ws.rename)
        self.sidebar.delete_workspace_requested.connect(ws.delete)
        ws.switched.connect(conv.reset)
        ws.switched.connect(docs.reload)
        ws.switched.connect(conv.refresh_list)
        ws.switched.connect(self.watch.restart)
        ws.emptied.connect(conv.reset)
        ws.emptied.connect(conv.refresh_list)
        self.sidebar.new_chat_requested.connect(conv.new_chat)
        self.sidebar.chat_selected.connect(conv.open)
        self.sidebar.delete_chat_requested.connect(conv.delete)
        self.sidebar.export_chat_requested.connect(conv.export)
        self.chat.send_requested.connect(conv.ask)
        self.chat.stop_requested.connect(conv.stop)
        self.chat.research_requested.connect(conv.research)
        ws.switched.connect(conv.clear_scope)
        self.chat.source_clicked.connect(src.open_hit)
        self.chat.link_clicked.connect(src.open_link)
        self.chat.banner.log_requested.connect(self.open_log)
        self.library.add_files_requested.connect(docs.choose_files)
        self.library.add_folder_requested.connect(docs.choose_folder)
        self.library.cancel_requested.connect(docs.cancel)
        self.library.remove_requested.connect(docs.remove)
        self.library.reindex_requested.connect(docs.reindex)
        self.library.open_requested.connect(src.open_document)
        self.library.ask_about_requested.connect(conv.ask_about)
        self.library.summarize_requested.connect(conv.summarize)
        self.library.compare_with_requested.connect(docs.compare_with)
        self.library.compare_previous_requested.connect(docs.compare)
        self.library.banner.log_requested.connect(self.open_log)
        self.library.watch_requested.connect(self.watch.choose)
        self.library.unwatch_requested.connect(self.watch.remove)
        self.hardware.refresh_requested.connect(self.hw.refresh)
        self.side.currentChanged.connect(self._on_side_tab)
        self.ops.model.busy_changed.connect(self.hw.on_model_busy)
        self.ops.config_changed.connect(self.settings.on_config_changed)

    # Start-up.
    def start(self) -> None:
        """Load the lists and the model in the background (call once, after show)."""
        settle_heap()  # what the window and its imports made lives as long as the window: no rescans of it
        self.model.set_state("idle")
        self.workspaces.refresh()
        self.documents.refresh()
        self.conversations.refresh_list()
        self.watch.restart()
        if self.prefs.api_server:
            self.settings.apply_api_server()
        self.hw.refresh()
        self.model.load()  # automatic GPU layers are planned by the core as the model loads

    # Menus and shortcuts.
    def _build_menus(self) -> None:
        file = self.menuBar().addMenu(self.tr("&File"))
        self.act_add_files = self._action(file, self.tr("Add files…"), self.documents.choose_files,
                                          QKeySequence.StandardKey.Open)
        self._action(file, self.tr("Add folder…"), self.documents.choose_folder, "Ctrl+Shift+O")
        self._action(file, self.tr("Watch a folder…"), self.watch.choose)
        file.addSeparator()
        self._action(file, self.tr("New workspace…"), self.workspaces.new)
        file.addSeparator()
        self._action(file, self.tr("Settings…"), self.settings.open_dialog, QKeySequence.StandardKey.Preferences)
        file.addSeparator()
        self._action(file, self.tr("Quit"), self.close, QKeySequence.StandardKey.Quit)
        chat = self.menuBar().addMenu(self.tr("&Chat"))
        self.act_new_chat = self._action(chat, self.tr("New chat"), self.conversations.new_chat,
                                         QKeySequence.StandardKey.New)
        self.act_stop = self._action(chat, self.tr("Stop"), self.conversations.stop, "Esc")
        self.act_stop.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self._action(chat, self.tr("Export chat…"), self.conversations.export_current)
        view = self.menuBar().addMenu(self.tr("&View"))
        self.act_side = self._action(view, self.tr("Side panel"), self.toggle_side_panel, "Ctrl+B")
        self.act_side.setCheckable(True)
        self.act_side.setChecked(True)
        self._action(view, self.tr("Library"), lambda: self.show_side_tab(0), "Ctrl+L")
        self._action(view, self.tr("Hardware"), lambda: self.show_side_tab(1), "Ctrl+H")
        help_ = self.menuBar().addMenu(self.tr("&Help"))
        self.act_guide = self._action(help_, self.tr("User guide"), self.open_guide,
                                      QKeySequence.StandardKey.HelpContents)
        self._action(help_, self.tr("Open log file"), self.open_log)
        self._action(help_, self.tr("Open data folder"), lambda: self.open_external(self.ops.config.data_dir))
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

    # What scripts (--screenshot) and tests drive: the controllers' actions under the window's names.
    @property
    def model_state(self) -> str:
        """The chat model's state: idle, loading, ready or failed."""
        return self.model.state

    @property
    def conversation(self) -> Conversation | None:
        """The conversation shown."""
        return self.conversations.conversation

    @property
    def ask_job(self) -> Job | None:
        """The answer being written, if any."""
        return self.conversations.ask_job

    @property
    def watch_job(self) -> Job | None:
        """The watcher of the workspace's folders, if any."""
        return self.watch.job

    def ask(self, question: str) -> Job | None:
        """Ask a question in the current conversation; the answer streams in."""
        return self.conversations.ask(question)

    def ask_about(self, sources: Sequence[str]) -> None:
        """Limit the next questions to these documents (a chip above the question box, until cleared)."""
        self.conversations.ask_about(sources)

    def summarize(self, source: str) -> Job | None:
        """Summarize a whole document into the current conversation."""
        return self.conversations.summarize(source)

    def new_chat(self) -> None:
        """Start an empty conversation."""
        self.conversations.new_chat()

    def export_chat(self, conv_id: int, path: Path | None = None) -> Job | None:
        """Save a conversation as Markdown."""
        return self.conversations.export(conv_id, path)

    def ingest(self, paths: Sequence[Path]) -> Job:
        """Index paths into the current workspace."""
        return self.documents.ingest(paths)

    def refresh_documents(self) -> None:
        """Reload the current workspace's document list."""
        self.documents.refresh()

    def watch_folder(self, folder: Path) -> None:
        """Keep a folder in sync with the current workspace."""
        self.watch.add(folder)

    def unwatch_folder(self, folder: str) -> None:
        """Stop keeping a folder in sync."""
        self.watch.remove(folder)

    def switch_workspace(self, name: str) -> None:
        """Show another workspace."""
        self.workspaces.switch(name)

    def new_workspace(self) -> None:
        """Ask for a name and create an empty workspace."""
        self.workspaces.new()

    def rename_workspace(self, name: str) -> None:
        """Give a workspace another display name."""
        self.workspaces.rename(name)

    def delete_workspace(self, name: str, *, confirm: bool = True) -> None:
        """Remove a workspace's documents from the index and its chats."""
        self.workspaces.delete(name, confirmed=not confirm)

    def open_source(self, hit: Any) -> Job | None:
        """Open a cited passage or quote."""
        return self.sources.open_hit(hit)

    def apply_prefs(self) -> None:
        """Rebuild the service from the saved choices."""
        self.settings.apply_prefs()

    # The side panel.
    def _on_side_tab(self, index: int) -> None:
        self.prefs.side_tab = index
        if self.side.widget(index) is self.hardware:
            self.hw.on_tab_shown()

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

    # Help.
    def open_guide(self) -> None:
        """Open the user guide's index, the copy shipped with Hearth (never a web page)."""
        index = guide_index()
        if index is None:
            self.chat.banner.show_message(
                self.tr("The user guide is not installed with this copy of Hearth."),
                self.tr("It is the docs/ folder of Hearth's source, starting at docs/README.md."), level="warning")
            return
        self.open_external(index)

    def open_log(self) -> None:
        """Open the log file."""
        if self.log_path is not None:
            self.open_external(self.log_path)

    def about(self) -> None:
        """The About box."""
        QMessageBox.about(self, self.tr("About Hearth"), self.tr(
            "<b>Hearth</b><br>Private, offline answers from your own documents.<br>"
            "Nothing leaves this computer."))

    def show_failure(self, failure: Failure) -> None:
        """Show a failure in the chat's banner (a cancellation shows nothing)."""
        if failure.cancelled:
            return
        self.chat.banner.show_message(failure.message, failure.hint, log_link=self.log_path is not None)

    # Drag and drop, anywhere on the window.
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop) and isinstance(obj, QWidget) \
                and obj.window() is self and _local_paths(event.mimeData()):
            event.acceptProposedAction()
            if kind == QEvent.Type.Drop:
                self.documents.add_paths(_local_paths(event.mimeData()))
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
        self.sources.close_all()
        self.hide()
        self.ops.shutdown()
        event.accept()


def _local_paths(mime: Any) -> list[Path]:
    if mime is None or not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]

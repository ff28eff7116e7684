"""The left column: workspaces (create, rename, delete, switch) and the chats of the current one."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.gui.widgets import plain_tooltip, title
from rag.conversations import Conversation


class Sidebar(QWidget):
    """Emits what the user picks; the main window does the work."""

    workspace_selected = Signal(str)
    new_workspace_requested = Signal()
    rename_workspace_requested = Signal(str)
    delete_workspace_requested = Signal(str)
    chat_selected = Signal(int)
    new_chat_requested = Signal()
    delete_chat_requested = Signal(int)
    export_chat_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 4, 8)
        lay.setSpacing(6)
        head = QHBoxLayout()
        head.addWidget(title(self.tr("Workspaces")))
        head.addStretch(1)
        add = QToolButton()
        add.setText("+")
        add.setAutoRaise(True)
        add.setToolTip(self.tr("New workspace"))
        add.clicked.connect(self.new_workspace_requested)
        head.addWidget(add)
        lay.addLayout(head)
        self.workspaces = QListWidget()
        self.workspaces.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.workspaces.customContextMenuRequested.connect(self._workspace_menu)
        self.workspaces.currentItemChanged.connect(self._on_workspace)
        self.workspaces.setMaximumHeight(200)
        lay.addWidget(self.workspaces)

        head = QHBoxLayout()
        head.addWidget(title(self.tr("Chats")))
        head.addStretch(1)
        lay.addLayout(head)
        self.new_chat = QPushButton(self.tr("New chat"))
        self.new_chat.setToolTip(self.tr("Start a new conversation (Ctrl+N)"))
        self.new_chat.clicked.connect(self.new_chat_requested)
        lay.addWidget(self.new_chat)
        self.chats = QListWidget()
        self.chats.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.chats.customContextMenuRequested.connect(self._chat_menu)
        self.chats.currentItemChanged.connect(self._on_chat)
        self.chats.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.chats.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.workspaces.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.workspaces.setTextElideMode(Qt.TextElideMode.ElideRight)
        lay.addWidget(self.chats, 1)
        self._quiet = False

    def set_workspaces(self, names: Sequence[str], labels: dict[str, str], current: str) -> None:
        """Show the workspaces (by display label) and select `current` without emitting."""
        self._quiet = True
        self.workspaces.clear()
        for name in names:
            item = QListWidgetItem(labels.get(name, name))
            item.setData(Qt.ItemDataRole.UserRole, name)
            if labels.get(name, name) != name:
                item.setToolTip(plain_tooltip(self.tr("Command-line name: {name}").format(name=name)))
            self.workspaces.addItem(item)
            if name == current:
                self.workspaces.setCurrentItem(item)
        self._quiet = False

    def set_chats(self, chats: Sequence[Conversation], current: int | None) -> None:
        """Show the workspace's conversations, newest first."""
        self._quiet = True
        self.chats.clear()
        for conv in chats:
            item = QListWidgetItem(conv.title)
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            item.setToolTip(plain_tooltip(conv.title))  # a question asked, maybe pasted from a document
            self.chats.addItem(item)
            if conv.id == current:
                self.chats.setCurrentItem(item)
        self._quiet = False

    def clear_chat_selection(self) -> None:
        """No conversation selected (a new chat)."""
        self._quiet = True
        self.chats.setCurrentItem(None)
        self.chats.clearSelection()
        self._quiet = False

    def _on_workspace(self, item: QListWidgetItem | None, _prev: object) -> None:
        if item is not None and not self._quiet:
            self.workspace_selected.emit(item.data(Qt.ItemDataRole.UserRole))

    def _on_chat(self, item: QListWidgetItem | None, _prev: object) -> None:
        if item is not None and not self._quiet:
            self.chat_selected.emit(item.data(Qt.ItemDataRole.UserRole))

    def _workspace_menu(self, pos) -> None:
        item = self.workspaces.itemAt(pos)
        menu = QMenu(self)
        menu.addAction(self.tr("New workspace…"), self.new_workspace_requested)
        if item is not None:
            name = item.data(Qt.ItemDataRole.UserRole)
            menu.addAction(self.tr("Rename…"), lambda: self.rename_workspace_requested.emit(name))
            delete = QAction(self.tr("Delete…"), menu)
            delete.triggered.connect(lambda: self.delete_workspace_requested.emit(name))
            menu.addAction(delete)
        menu.exec(self.workspaces.viewport().mapToGlobal(pos))

    def _chat_menu(self, pos) -> None:
        item = self.chats.itemAt(pos)
        if item is None:
            return
        conv_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction(self.tr("Export as Markdown…"), lambda: self.export_chat_requested.emit(conv_id))
        menu.addAction(self.tr("Delete"), lambda: self.delete_chat_requested.emit(conv_id))
        menu.exec(self.chats.viewport().mapToGlobal(pos))

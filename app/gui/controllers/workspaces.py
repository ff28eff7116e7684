"""Workspaces: the list in the sidebar, switching, creating, renaming (display names) and deleting."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QInputDialog

from app.gui.controllers.base import Controller
from app.gui.widgets import confirm
from app.gui.worker import Failure
from inference.errors import UsageError
from rag.service import DEFAULT_WORKSPACE, check_workspace


class WorkspaceController(Controller):
    """Which workspaces exist and which one is shown (`window.workspace`); `switched` says it changed."""

    switched = Signal(str)
    emptied = Signal()  # the workspace shown lost its documents and chats (it was the default one, deleted)

    def __init__(self, window) -> None:
        super().__init__(window)
        self.known: list[str] = []

    def refresh(self) -> None:
        """Reload the workspace list."""
        job = self.ops.list_workspaces()
        job.finished.connect(self._set_workspaces)
        job.failed.connect(self.show_failure)

    def _set_workspaces(self, names: Sequence[str]) -> None:
        hidden = set(self.prefs.hidden_workspaces)
        known = (set(names) | set(self.prefs.extra_workspaces)) - hidden
        known.add(self.workspace)
        if not known:
            known.add(DEFAULT_WORKSPACE)
        self.known = sorted(known, key=lambda n: (n != DEFAULT_WORKSPACE, n.lower()))
        self._show(self.workspace)
        self.update_title()

    def _show(self, current: str) -> None:
        self.window.sidebar.set_workspaces(self.known, self.prefs.labels, current)

    def label(self, name: str | None = None) -> str:
        """A workspace's display name (default: the one shown)."""
        name = name or self.workspace
        return self.prefs.labels.get(name, name)

    def switch(self, name: str) -> None:
        """Show another workspace: its documents and chats."""
        if name == self.workspace:
            return
        self.window.workspace = name
        self.prefs.last_workspace = name
        self.switched.emit(name)
        self.update_title()

    def remember(self, name: str) -> None:
        """Keep a workspace in the list even before the index knows it (documents are being added to it)."""
        if name not in self.prefs.extra_workspaces and name not in self.known:
            self.prefs.extra_workspaces = [*self.prefs.extra_workspaces, name]

    def new(self) -> None:
        """Ask for a name and create an empty workspace."""
        name, ok = QInputDialog.getText(self.window, self.tr("New workspace"), self.tr("Name:"))
        if not ok:
            return
        try:
            name = check_workspace(name)
        except UsageError as exc:
            self.show_failure(Failure(str(exc), exc.hint))
            return
        self.prefs.extra_workspaces = [*self.prefs.extra_workspaces, name]
        self.prefs.hidden_workspaces = [n for n in self.prefs.hidden_workspaces if n != name]
        self._set_workspaces([*self.known, name])
        self._show(name)
        self.switch(name)

    def rename(self, name: str) -> None:
        """Give a workspace another display name (the index keeps its name, which the CLI uses)."""
        labels = dict(self.prefs.labels)
        label, ok = QInputDialog.getText(self.window, self.tr("Rename workspace"), self.tr("Name shown:"),
                                         text=labels.get(name, name))
        if not ok or not label.strip():
            return
        if label.strip() == name:
            labels.pop(name, None)
        else:
            labels[name] = label.strip()
        self.prefs.labels = labels
        self._show(self.workspace)
        self.update_title()

    def delete(self, name: str, *, confirmed: bool = False) -> None:
        """Remove a workspace's documents from the index and its chats (after asking, unless `confirmed`)."""
        if not confirmed and not confirm(
                self.window, self.tr("Delete workspace"),
                self.tr("Delete “{ws}”? Its documents leave the index (the files themselves stay where they are) "
                        "and its chats are deleted.").format(ws=self.label(name)), default_yes=True):
            return
        job = self.ops.delete_workspace(name)
        job.failed.connect(self.show_failure)
        self.prefs.extra_workspaces = [n for n in self.prefs.extra_workspaces if n != name]
        self.prefs.watched = {ws: f for ws, f in self.prefs.watched.items() if ws != name}
        if self.workspace == name:
            self.window.watch.restart()
        if name != DEFAULT_WORKSPACE:  # the default workspace is only emptied
            self.prefs.hidden_workspaces = [*self.prefs.hidden_workspaces, name]
            self.known = [n for n in self.known if n != name] or [DEFAULT_WORKSPACE]
        if self.workspace == name and name != DEFAULT_WORKSPACE:
            target = self.known[0]
            self._show(target)
            self.switch(target)
        else:
            self._show(self.workspace)
            if self.workspace == name:
                self.emptied.emit()
                job.ended.connect(self.window.documents.refresh)

    def update_title(self) -> None:
        """The window's title names the workspace."""
        self.window.setWindowTitle(self.tr("{ws} — Hearth").format(ws=self.label()))

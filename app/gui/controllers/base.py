"""What every controller of the main window shares: the window, its operations and prefs, and how it
shows a failure."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMainWindow

from app.gui.operations import Operations
from app.gui.prefs import Prefs
from app.gui.worker import Failure


class Controller(QObject):
    """One area of the window; lives as long as the window (its Qt parent)."""

    def __init__(self, window: QMainWindow) -> None:  # the MainWindow (not imported: it imports us)
        super().__init__(window)
        self.window = window

    @property
    def ops(self) -> Operations:
        """The window's operations (the core service and its executors)."""
        return self.window.ops

    @property
    def prefs(self) -> Prefs:
        """The app's saved choices."""
        return self.window.prefs

    @property
    def workspace(self) -> str:
        """The workspace shown now."""
        return self.window.workspace

    def show_failure(self, failure: Failure) -> None:
        """Show a failure in the chat's banner (a cancellation shows nothing)."""
        self.window.show_failure(failure)

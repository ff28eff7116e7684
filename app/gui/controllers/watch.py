"""Watched folders: the current workspace's folders kept in sync by one watcher job, and its state."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QDateTime
from PySide6.QtWidgets import QFileDialog

from app.gui.controllers.base import Controller
from app.gui.worker import Job


class WatchController(Controller):
    """One watcher (`job`) for the folders of the workspace shown; the folders are remembered in the prefs."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.job: Job | None = None

    def choose(self) -> None:
        """Pick a folder to keep in sync with the current workspace."""
        folder = QFileDialog.getExistingDirectory(self.window, self.tr("Watch a folder"), str(Path.home()))
        if folder:
            self.add(Path(folder))

    def add(self, folder: Path) -> None:
        """Keep a folder in sync with the current workspace (remembered across starts)."""
        watched = dict(self.prefs.watched)
        folders = watched.get(self.workspace, [])
        if str(folder.resolve()) not in folders:
            watched[self.workspace] = [*folders, str(folder.resolve())]
            self.prefs.watched = watched
        self.restart()

    def remove(self, folder: str) -> None:
        """Stop keeping a folder in sync (its documents stay in the library)."""
        watched = dict(self.prefs.watched)
        watched[self.workspace] = [f for f in watched.get(self.workspace, []) if f != folder]
        self.prefs.watched = watched
        self.restart()

    def restart(self) -> None:
        """Watch the current workspace's folders (stopping the watcher of the previous set)."""
        if self.job is not None:
            self.job.cancel()
            self.job = None
        library = self.window.library
        folders = self.prefs.watched.get(self.workspace, [])
        library.set_watched(folders)
        if not folders:
            return
        ws = self.workspace
        job = self.ops.watch([Path(f) for f in folders], ws)
        self.job = job
        job.progress.connect(lambda e: self._on_event(job, ws, e))
        job.failed.connect(lambda f: job is self.job and not f.cancelled and library.set_watch_state(
            self.tr("stopped: {reason}").format(reason=f.message), level="error", tooltip=f.hint or ""))

    def _on_event(self, job: Job, ws: str, event: object) -> None:
        if job is not self.job or ws != self.workspace:
            return
        from rag.ingest import Progress
        from rag.watch import WatchUpdate

        library = self.window.library
        if isinstance(event, Progress):
            if event.files_total:
                library.set_watch_state(self.tr("syncing… {done} of {total}").format(
                    done=event.files_done, total=event.files_total))
        elif isinstance(event, WatchUpdate):
            failed = len(event.report.failed)
            text = self.tr("in sync · {time}").format(time=QDateTime.currentDateTime().toString("HH:mm"))
            if failed:
                text += " · " + self.tr("{n} failed").format(n=failed)
            library.set_watch_state(text, level="warning" if failed else "ok",
                                    tooltip="\n".join(f.error for f in event.report.failed))
            if event.changed:
                self.window.documents.refresh()

"""The hardware tab: one snapshot at a time, refreshed while a model works and the tab is shown."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer

from app.gui.controllers.base import Controller
from app.gui.prefs import AUTO
from app.gui.worker import Job


class HardwareController(Controller):
    """Takes hardware snapshots (with the chat model's memory plan) for the hardware panel.

    It only shows them: the GPU layers of an automatic choice are planned by the core when the model loads.
    """

    def __init__(self, window) -> None:
        super().__init__(window)
        self.job: Job | None = None
        self._again = False
        # While a model works, the hardware panel follows its memory use.
        self._timer = QTimer(self)
        self._timer.setInterval(2000)
        self._timer.timeout.connect(self._tick)

    @property
    def panel(self):
        """The hardware panel."""
        return self.window.hardware

    def _shown(self) -> bool:
        return self.window.side.currentWidget() is self.panel

    def refresh(self) -> Job:
        """Take a new hardware snapshot (one at a time; a request made meanwhile runs right after it)."""
        if self.job is not None:
            self._again = True
            return self.job
        gpu_layers = self.prefs.gpu_layers
        job = self.ops.hardware(n_gpu_layers=None if gpu_layers == AUTO else gpu_layers)
        self.job = job
        job.finished.connect(self._on_snapshot)
        job.failed.connect(lambda f: self.panel.show_error(f.message))
        job.ended.connect(self._on_ended)
        return job

    def _on_snapshot(self, snap: dict[str, Any]) -> None:
        self.panel.set_snapshot(snap)

    def _on_ended(self) -> None:
        self.job = None
        if self._again:
            self._again = False
            self.refresh()

    def on_model_busy(self, busy: bool) -> None:
        """The chat model started or stopped working."""
        if busy and self._shown():
            self._timer.start()
        elif not busy:
            self._timer.stop()
            if self._shown():
                self.refresh()

    def _tick(self) -> None:
        if self.window.side.isVisible() and self._shown():
            self.refresh()

    def on_tab_shown(self) -> None:
        """The hardware tab came to the front."""
        self.refresh()
        if self.ops.model.busy:
            self._timer.start()

"""The chat model: loading it in the background and its state in the status bar."""

from __future__ import annotations

from pathlib import Path

from app.gui import theme
from app.gui.controllers.base import Controller
from app.gui.widgets import plain_tooltip
from app.gui.worker import Failure

IDLE, LOADING, READY, FAILED = "idle", "loading", "ready", "failed"


class ModelController(Controller):
    """Whether the chat model is `idle` (not loaded), `loading`, `ready` or `failed`, shown in `window.model_label`."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.state = IDLE

    def load(self) -> None:
        """Load the chat model in the background (GPU layers: the settings' number, or the core's plan)."""
        if self.state in (LOADING, READY):
            return
        self.set_state(LOADING)
        job = self.ops.load_model()
        job.finished.connect(lambda _m: (self.set_state(READY), self.window.hw.refresh()))
        job.failed.connect(self._on_failed)

    def _on_failed(self, failure: Failure) -> None:
        if failure.cancelled:
            self.set_state(IDLE)
            return
        self.set_state(FAILED, failure.message)
        self.window.chat.banner.show_message(failure.message, failure.hint, log_link=self.window.log_path is not None)

    def set_state(self, state: str, detail: str = "") -> None:
        """Show the model's state."""
        from inference.models import DEFAULT_CHAT_MODEL

        self.state = state
        name = Path(self.ops.config.chat_model or DEFAULT_CHAT_MODEL).name
        text = {
            IDLE: self.tr("Model: {name}").format(name=name),
            LOADING: self.tr("Loading {name}…").format(name=name),
            READY: self.tr("Model: {name} · ready").format(name=name),
            FAILED: self.tr("Model: {name} · failed to load").format(name=name),
        }[state]
        label = self.window.model_label
        label.setText(text)
        label.setToolTip(plain_tooltip(detail))
        colour = {READY: theme.OK, FAILED: theme.ERROR, LOADING: theme.WARN}.get(state)
        label.setStyleSheet(f"color: {colour.name()};" if colour else "")

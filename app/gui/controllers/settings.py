"""Settings: the dialog, rebuilding the service from the saved choices, and the local API switch."""

from __future__ import annotations

from typing import Any

from app.gui.controllers.base import Controller
from app.gui.prefs import hearth_config_for
from app.gui.worker import Failure, Job
from inference.errors import HearthError


class SettingsController(Controller):
    """Applies the saved choices: a changed model, context, GPU layers or data folder takes effect at once."""

    def open_dialog(self) -> None:
        """Edit the settings; what changed takes effect at once."""
        from app.gui.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self.prefs, self.ops, data_dir=self.ops.config.data_dir, parent=self.window)
        if dialog.exec() != SettingsDialog.DialogCode.Accepted:
            return
        api_before = bool(self.window.api_label.text())
        dialog.save()
        self.apply_prefs()
        if self.prefs.api_server != api_before:
            self.apply_api_server()

    def apply_prefs(self) -> None:
        """Rebuild the service from the saved choices (a new model is loaded in the background).

        Chosen just now, they win over the flags the window was started with; the administrator's policy and
        the HEARTH_* variables apply as at start (app.config).
        """
        try:
            config = hearth_config_for(self.prefs, self.window.flags, chosen_now=True)
        except HearthError as exc:
            self.show_failure(Failure(str(exc), exc.hint))
            return
        self.ops.reconfigure(config)

    def apply_api_server(self) -> Job:
        """Start or stop the local API as the settings say."""
        job = self.ops.set_api_server(self.prefs.api_server)
        job.finished.connect(self.on_api_server)
        job.failed.connect(lambda f: (self.window.api_label.setText(""), self.show_failure(f)))
        return job

    def on_api_server(self, state: Any) -> None:
        """Show the local API's address, and a key made just now (once)."""
        label = self.window.api_label
        if state is None:
            label.setText("")
            return
        text = self.tr("API: {url}").format(url=state.url)
        label.setText(text + (self.tr(" (key required)") if state.key_required else ""))
        if state.new_key:
            self.window.chat.banner.show_message(
                self.tr("The local API requires a key, also on this computer."),
                self.tr("Your key, shown only this once (apps send it as 'Authorization: Bearer KEY'): {key}")
                .format(key=state.new_key),
                level="info")

    def on_config_changed(self) -> None:
        """The service was rebuilt: reload everything from it and load its model."""
        w = self.window
        w.model.set_state("idle")
        w.workspaces.refresh()
        w.documents.refresh()
        w.watch.restart()
        if self.prefs.api_server or w.api_label.text():
            self.apply_api_server()
        w.hw.refresh()
        w.model.load()

"""Settings: chat model (with its fit verdict), context, GPU layers with a live fit preview, indexing,
passage order, data folder, local API server, language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QWidget,
)

from app.gui import theme
from app.gui.operations import Operations
from app.gui.prefs import AUTO, Prefs
from app.gui.widgets import Banner, esc, muted, plain_tooltip
from inference.budget import format_bytes

CONTEXT_SIZES = (2048, 4096, 8192, 16384, 32768)
LANGUAGES = (("", "System"), ("en", "English"), ("ru", "Русский"))


class SettingsDialog(QDialog):
    """Edits Prefs; the caller applies them (a new service object) when the dialog is accepted."""

    def __init__(self, prefs: Prefs, ops: Operations, *, data_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Settings"))
        self.prefs = prefs
        self.ops = ops
        self._models: list[Any] = []
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.banner = Banner()
        form.addRow(self.banner)

        self.model = QComboBox()
        self.model.addItem(self.tr("Loading the model library…"), None)
        self.model.currentIndexChanged.connect(self._schedule_preview)
        form.addRow(self.tr("Chat model"), self.model)

        self.ctx = QComboBox()
        for n in CONTEXT_SIZES:
            self.ctx.addItem(self.tr("{n} tokens").format(n=n), n)
        index = self.ctx.findData(prefs.n_ctx)
        if index < 0:
            self.ctx.addItem(self.tr("{n} tokens").format(n=prefs.n_ctx), prefs.n_ctx)
            index = self.ctx.count() - 1
        self.ctx.setCurrentIndex(index)
        self.ctx.currentIndexChanged.connect(self._schedule_preview)
        form.addRow(self.tr("Context size"), self.ctx)

        layers = QWidget()
        row = QHBoxLayout(layers)
        row.setContentsMargins(0, 0, 0, 0)
        self.auto = QRadioButton(self.tr("Automatic"))
        self.manual = QRadioButton(self.tr("Manual:"))
        group = QButtonGroup(self)
        group.addButton(self.auto)
        group.addButton(self.manual)
        self.layers = QSpinBox()
        self.layers.setRange(0, 999)
        self.layers.setValue(max(0, prefs.gpu_layers))
        (self.auto if prefs.gpu_layers == AUTO else self.manual).setChecked(True)
        self.layers.setEnabled(prefs.gpu_layers != AUTO)
        self.manual.toggled.connect(self.layers.setEnabled)
        self.manual.toggled.connect(self._schedule_preview)
        self.layers.valueChanged.connect(self._schedule_preview)
        row.addWidget(self.auto)
        row.addWidget(self.manual)
        row.addWidget(self.layers)
        row.addStretch(1)
        form.addRow(self.tr("GPU layers"), layers)
        form.addRow(self.tr("llama.cpp engine"), self._engine_choice(prefs))
        self.preview = muted(self.tr("Working out the memory plan…"), rich=True)  # every text set in it is escaped
        form.addRow("", self.preview)

        self.embedder = QComboBox()
        self.embedder.addItem("all-MiniLM-L6-v2 (384)")
        self.embedder.setEnabled(False)
        self.embedder.setToolTip(self.tr("The embedding model of new workspaces. A workspace whose documents it does not read "
                                         "can switch to a multilingual model from the library's notice, or with "
                                         "`hearth embedder use NAME --workspace W`."))
        form.addRow(self.tr("Embedding model"), self.embedder)

        self.chunk = QSpinBox()
        self.chunk.setRange(64, 240)
        self.chunk.setSingleStep(16)
        self.chunk.setSuffix(self.tr(" tokens"))
        self.chunk.setValue(prefs.chunk_tokens)
        self.chunk.setToolTip(self.tr("Passage size for documents indexed from now on; re-index to apply it "
                                      "to documents already indexed."))
        form.addRow(self.tr("Passage size"), self.chunk)

        self.ranking = QCheckBox(self.tr("The chat model reads the best passages before answering"))
        self.ranking.setChecked(ops.config.model_ranking)  # as it is now: the flags, Settings or HEARTH_*
        self.ranking.setToolTip(self.tr("It puts the passage that answers first, which makes answers more often "
                                        "right. Without a GPU this takes some seconds a question; switch it off "
                                        "for faster answers."))
        form.addRow(self.tr("Passage order"), self.ranking)

        self.not_found = QComboBox()
        for mode, label in (("strict", self.tr("Say so")), ("balanced", self.tr("Say so when unsure")),
                            ("off", self.tr("Always show the model's answer"))):
            self.not_found.addItem(label, mode)
        self.not_found.setCurrentIndex(max(0, self.not_found.findData(ops.config.not_found)))
        self.not_found.setToolTip(self.tr("What Hearth does when your documents don't seem to answer a question: "
                                          "say so, and show the closest passages instead of the model's reply "
                                          "(which stays one click away)."))
        form.addRow(self.tr("When the documents don't answer"), self.not_found)

        folder = QWidget()
        frow = QHBoxLayout(folder)
        frow.setContentsMargins(0, 0, 0, 0)
        self.data_dir = QLineEdit(str(data_dir))
        frow.addWidget(self.data_dir, 1)
        browse = QPushButton(self.tr("Choose…"))
        browse.clicked.connect(self._browse)
        frow.addWidget(browse)
        form.addRow(self.tr("Data folder"), folder)

        self.server = QCheckBox(self.tr("Serve the local API on 127.0.0.1:8642"))
        self.server.setChecked(prefs.api_server)
        self.server.setToolTip(self.tr("OpenAI-compatible: other programs on this computer can ask your documents. "
                                       "Only this computer can connect."))
        form.addRow(self.tr("API server"), self.server)

        self.language = QComboBox()
        for code, name in LANGUAGES:
            self.language.addItem(self.tr("System") if not code else name, code)
        self.language.setCurrentIndex(max(0, self.language.findData(prefs.language)))
        self.language.setToolTip(self.tr("Takes effect the next time Hearth starts."))
        form.addRow(self.tr("Language"), self.language)

        self.policy = _policy()
        self._lock(self.policy, browse)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._preview)
        self._preview_job = None
        job = ops.list_models()
        job.finished.connect(self._set_models)
        job.failed.connect(lambda f: self.banner.show_message(f.message, f.hint))

    def _lock(self, policy: Any, browse: QWidget) -> None:
        """Show what the administrator's policy locks as read-only, saying who locked it."""
        if policy is None or not policy.active:
            return
        note = policy.note()
        locked = []
        from app.policy import API_FORBIDDEN, API_SERVER, DATA_DIR

        if policy.is_locked(DATA_DIR):
            locked += [self.data_dir, browse]
        if policy.is_locked(API_SERVER) and policy.api_server == API_FORBIDDEN:
            self.server.setChecked(False)
            locked.append(self.server)
        for widget in locked:
            widget.setEnabled(False)
            widget.setToolTip(note)

    def _set_models(self, models: list[Any]) -> None:
        if self.policy is not None:  # only the models the administrator allows are offered
            models = [m for m in models if self.policy.allows_model(m.key)]
        self._models = models
        self.model.blockSignals(True)
        self.model.clear()
        for m in models:
            label = m.key
            card = getattr(m, "card", None)
            if card is not None:
                label += f" — {card.quantisation}, {format_bytes(card.file_size)}"
            if m.default:
                label += " " + self.tr("(default)")
            if m.error:
                label += " " + self.tr("(unavailable)")
            self.model.addItem(label, m.key)
            if m.error:
                self.model.setItemData(self.model.count() - 1, plain_tooltip(m.error), Qt.ItemDataRole.ToolTipRole)
        current = self.prefs.chat_model or next((m.key for m in models if m.default), None)
        self.model.setCurrentIndex(max(0, self.model.findData(current)))
        self.model.blockSignals(False)
        self._preview()

    def _schedule_preview(self, *_args: object) -> None:
        self._timer.start()

    def _preview(self) -> None:
        key = self.model.currentData()
        if key is None:
            return
        self.preview.setText(esc(self.tr("Working out the memory plan…")))
        job = self.ops.hardware(model=key, n_ctx=self.ctx.currentData(),
                                    n_gpu_layers=self.layers.value() if self.manual.isChecked() else None)
        self._preview_job = job
        job.finished.connect(lambda snap, j=job: self._show_preview(j, snap))
        job.failed.connect(lambda f: self.preview.setText(esc(f.message)))

    def _show_preview(self, job: Any, snap: dict[str, Any]) -> None:
        if job is not self._preview_job:
            return  # an older preview
        plan = snap.get("plan")
        if not plan:
            self.preview.setText(esc(snap.get("plan_error") or self.tr("No plan for this model.")))
            return
        gpu = plan.get("gpu") or {}
        cpu = plan.get("cpu") or {}
        text = self.tr("{layers} of {total} layers on the GPU · GPU {gpu} · RAM {ram}").format(
            layers=plan.get("n_gpu_layers", 0), total=plan.get("n_layers", "?"),
            gpu=format_bytes(gpu.get("need", 0)), ram=format_bytes(cpu.get("need", 0)))
        verdict = self.tr("fits") if plan.get("fits") else self.tr("does not fit")
        colour = theme.OK if plan.get("fits") else theme.ERROR
        self.preview.setText(f"{esc(text)} — <span style='color:{colour.name()}'><b>{esc(verdict)}</b></span>")
        if self.auto.isChecked():
            self.layers.blockSignals(True)
            self.layers.setValue(int(plan.get("n_gpu_layers", 0)))
            self.layers.blockSignals(False)

    def _engine_choice(self, prefs: Any) -> QComboBox:
        """The llama.cpp engine the app starts with: those not installed are listed, greyed out."""
        from inference.engines import active, installed, requested_engine
        from inference.errors import UsageError

        self.engine = QComboBox()
        present = installed()
        for name, label in (("auto", self.tr("Automatic")), ("cpu", self.tr("CPU")),
                            ("vulkan", self.tr("Vulkan")), ("hip", self.tr("HIP (ROCm)"))):
            self.engine.addItem(label if name == "auto" or name in present else
                                self.tr("{engine} (not installed)").format(engine=label), name)
            if name != "auto" and name not in present:
                self.engine.model().item(self.engine.count() - 1).setEnabled(False)
        try:
            current = prefs.engine or requested_engine(None)  # as saved, else HEARTH_ENGINE, else automatic
        except UsageError:
            current = "auto"
        self.engine.setCurrentIndex(max(0, self.engine.findData(current)))
        running = active()
        now = self.tr(" Now running: {engine} ({reason}).").format(engine=running.chosen, reason=running.reason) \
            if running is not None else ""
        self.engine.setToolTip(self.tr("Which llama.cpp build runs the chat model: Automatic takes HIP where ROCm "
                                       "runs the GPU, else Vulkan on a GPU, else the CPU. Applies when Hearth "
                                       "starts again.") + now)
        return self.engine

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Data folder"), self.data_dir.text())
        if folder:
            self.data_dir.setText(folder)

    def save(self) -> None:
        """Write the choices to Prefs."""
        self.prefs.chat_model = self.model.currentData()
        self.prefs.n_ctx = int(self.ctx.currentData())
        self.prefs.gpu_layers = self.layers.value() if self.manual.isChecked() else AUTO
        self.prefs.chunk_tokens = self.chunk.value()
        self.prefs.model_ranking = self.ranking.isChecked()
        self.prefs.not_found = self.not_found.currentData()
        self.prefs.engine = self.engine.currentData()
        self.prefs.data_dir = self.data_dir.text().strip() or None
        self.prefs.api_server = self.server.isChecked()
        self.prefs.language = self.language.currentData() or ""
        self.prefs.sync()


def _policy() -> Any:
    """The administrator's policy, or None when it cannot be read (Hearth reports that at start)."""
    from app.policy import PolicyError, load_policy

    try:
        return load_policy()
    except PolicyError:
        return None

"""The hardware panel: devices with their memory and role (used, hidden, unsupported, unused, and why), what
Hearth hid from ROCm for itself, the chat model's memory plan, runtime status."""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.gui import theme
from app.gui.widgets import PartsBar, dot, muted, title
from inference.budget import format_bytes

_STATUS_COLOUR = {"ok": theme.OK, "info": theme.OK, "warn": theme.WARN, "fail": theme.ERROR, "error": theme.ERROR}
_GREY = QColor("#868e96")
# One style sheet on the panel's body for every card: a style sheet set on each card made Qt restyle each
# card's children separately, and a refresh of the panel blocked the window for over 100 ms.
_CARD_STYLE = "#card { border: 1px solid palette(mid); border-radius: 8px; background: palette(base); }"
_ROLE_COLOUR = {"used": theme.OK, "hidden": _GREY, "unsupported": theme.ERROR, "unused": _GREY}


class HardwarePanel(QScrollArea):
    """Renders one hardware snapshot (the `hearth hw --json` shape, see app.gui.hardware_source)."""

    refresh_requested = Signal()
    shown = Signal()  # a snapshot is fully shown

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.snapshot: dict[str, Any] | None = None
        self._pending: dict[str, Any] | None = None
        self._steps: list[Callable[[], QWidget]] = []
        self._step_timer = QTimer(self)  # the next card, on the next turn of the event loop
        self._step_timer.setSingleShot(True)
        self._step_timer.setInterval(0)
        self._step_timer.timeout.connect(self._next_step)
        self._body = QWidget()
        self._body.setStyleSheet(_CARD_STYLE)
        self._lay = QVBoxLayout(self._body)
        self._lay.setContentsMargins(10, 8, 10, 8)
        self._lay.setSpacing(10)
        self.setWidget(self._body)
        self.device_names: list[str] = []
        self.show_loading()

    def show_loading(self) -> None:
        """A placeholder until the first snapshot comes."""
        self._clear()
        self._lay.addWidget(self._header())
        self._lay.addWidget(muted(self.tr("Looking at this machine…")))
        self._lay.addStretch(1)

    def show_error(self, message: str) -> None:
        """The snapshot could not be taken."""
        self._clear()
        self._lay.addWidget(self._header())
        label = muted(message)
        self._lay.addWidget(label)
        self._lay.addStretch(1)

    def set_snapshot(self, snap: dict[str, Any]) -> None:
        """Show a snapshot (a repeat of the one shown or being shown costs nothing).

        The cards are added one per turn of the event loop: laid out at once, the word-wrapped rows of a
        machine with two GPUs held the window for over 100 ms. `snapshot` is the one fully shown.
        """
        if snap == self.snapshot or snap == self._pending:
            return
        self._clear()
        self._pending = snap
        self._lay.addWidget(self._header(time.strftime("%H:%M:%S")))
        gpus, npus = snap.get("gpus") or [], snap.get("npus") or []
        self.device_names = [g.get("name") or "?" for g in gpus] + [n.get("name") or "?" for n in npus]
        steps: list[Callable[[], QWidget]] = []
        selection = snap.get("gpu_selection") or {}
        if len(gpus) > 1 or selection.get("hidden_by_hearth"):
            steps.append(lambda: self._selection(selection))
        steps += [partial(self._gpu, g) for g in gpus] + [partial(self._npu, n) for n in npus]
        if not gpus and (snap.get("engine") or {}).get("chosen") == "vulkan":
            steps.append(lambda: muted(self.tr("No GPU found in the system files: the chat model runs on the "
                                               "Vulkan device below.")))
        elif not gpus:
            steps.append(lambda: muted(self.tr("No GPU found: the models run on the CPU.")))
        steps += [partial(step, snap) for step in (self._cpu, self._plan, self._runtimes, self._engine, self._checks)]
        self._steps = steps
        self._lay.addStretch(1)
        self._next_step()

    def _next_step(self) -> None:
        if self._pending is None:
            return  # cleared
        if not self._steps:
            self.snapshot, self._pending = self._pending, None
            self.shown.emit()
            return
        self._lay.insertWidget(self._lay.count() - 1, self._steps.pop(0)())
        self._step_timer.start()

    def _selection(self, selection: dict[str, Any]) -> QWidget:
        summary = muted(selection.get("summary") or "")
        summary.setWordWrap(True)
        summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return summary

    def _header(self, stamp: str | None = None) -> QWidget:
        w = QWidget()
        row = QHBoxLayout(w)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(title(self.tr("Hardware")))
        row.addStretch(1)
        if stamp:
            row.addWidget(muted(self.tr("updated {time}").format(time=stamp)))
        b = QToolButton()
        b.setText("⟳")
        b.setToolTip(self.tr("Refresh"))
        b.setAutoRaise(True)
        b.clicked.connect(self.refresh_requested)
        row.addWidget(b)
        return w

    def _gpu(self, g: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        lay.addWidget(_bold(g.get("name") or "?"))
        facts = [self.tr("integrated GPU") if g.get("kind") == "integrated" else self.tr("discrete GPU")]
        facts += [x for x in (g.get("gfx_target"), g.get("pci_id")) if x]
        facts.append(self.tr("driver {name}").format(name=g.get("driver") or self.tr("none")))
        if g.get("rocm_supported") is not None:
            facts.append(self.tr("ROCm: yes") if g["rocm_supported"] else self.tr("ROCm: no"))
        if g.get("rocm_index") is not None:
            facts.append(self.tr("ROCm device {n}").format(n=g["rocm_index"]))
        lay.addWidget(muted(" · ".join(facts)))
        if g.get("role"):  # used / hidden / unsupported / unused, and why (inference.gpu_select)
            role_row = QHBoxLayout()
            role_row.addWidget(dot(_ROLE_COLOUR.get(g["role"], _GREY)), 0, Qt.AlignmentFlag.AlignTop)
            names = {"used": self.tr("Used"), "hidden": self.tr("Hidden from ROCm"),
                     "unsupported": self.tr("Not usable by ROCm"), "unused": self.tr("Not used")}
            role = html.escape(names.get(g["role"], g["role"]))
            text = QLabel(f"<b>{role}</b>: {html.escape(g.get('role_reason') or '')}")
            text.setWordWrap(True)
            role_row.addWidget(text, 1)
            lay.addLayout(role_row)
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        row = 0
        pool = g.get("memory_pool")
        for key, label in (("vram", self.tr("VRAM")), ("gtt", self.tr("GTT"))):
            used, total = g.get(f"{key}_used"), g.get(f"{key}_total")
            if not total:
                continue
            bar = PartsBar()
            bar.set_parts([(used or 0, theme.ACCENT, "")], total)
            name = QLabel(label + (" ●" if pool == key else ""))
            if pool == key:
                name.setToolTip(self.tr("Models are loaded into this memory"))
            grid.addWidget(name, row, 0)
            grid.addWidget(bar, row, 1)
            grid.addWidget(muted(f"{format_bytes(used)} / {format_bytes(total)}"), row, 2)
            row += 1
        if row:
            grid.setColumnStretch(1, 1)
            lay.addLayout(grid)
        for advice in g.get("advice") or []:  # notes on how memory is used; problems are in the checks below
            note = muted("→ " + advice)
            note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            lay.addWidget(note)
        return box

    def _npu(self, n: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        row = QHBoxLayout()
        row.addWidget(dot(theme.OK if n.get("usable") else theme.WARN))
        row.addWidget(_bold(n.get("name") or "NPU"), 1)
        lay.addLayout(row)
        lay.addWidget(muted(" · ".join(x for x in (
            self.tr("NPU"), n.get("generation"), n.get("pci_id"),
            self.tr("driver {name}").format(name=n.get("driver") or self.tr("none"))) if x)))
        for advice in n.get("advice") or []:
            lay.addWidget(_advice(advice, theme.WARN))
        return box

    def _cpu(self, snap: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        cpu = snap.get("cpu") or {}
        lay.addWidget(_bold(cpu.get("model") or self.tr("CPU")))
        facts = [self.tr("{cores} cores, {threads} threads").format(cores=cpu.get("cores", "?"),
                                                                    threads=cpu.get("threads", "?"))]
        if cpu.get("features"):
            facts.append(" ".join(cpu["features"]))
        lay.addWidget(muted(" · ".join(facts)))
        ram = snap.get("ram") or {}
        if ram.get("total"):
            used = ram["total"] - (ram.get("available") or 0)
            row = QHBoxLayout()
            row.addWidget(QLabel(self.tr("RAM")))
            bar = PartsBar()
            bar.set_parts([(used, theme.ACCENT, "")], ram["total"])
            row.addWidget(bar, 1)
            row.addWidget(muted(f"{format_bytes(used)} / {format_bytes(ram['total'])}"))
            lay.addLayout(row)
        return box

    def _plan(self, snap: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        plan = snap.get("plan")
        if not plan:
            lay.addWidget(title(self.tr("Memory plan")))
            lay.addWidget(muted(snap.get("plan_error") or self.tr("No chat model chosen yet.")))
            return box
        lay.addWidget(title(self.tr("Memory plan: {model}").format(model=plan.get("model", "?"))))
        lay.addWidget(muted(self.tr("{ctx} tokens of context").format(ctx=plan.get("n_ctx", "?"))))
        gpu, cpu = plan.get("gpu") or {}, plan.get("cpu") or {}
        if plan.get("n_gpu_layers"):
            lay.addWidget(self._stack(self.tr("GPU"), [
                ("weights", gpu.get("weights", 0)), ("kv_cache", gpu.get("kv_cache", 0)),
                ("compute", gpu.get("compute", 0))], gpu.get("free")))
        lay.addWidget(self._stack(self.tr("RAM"), [
            ("weights", cpu.get("weights_mapped", 0) + cpu.get("weights_repacked", 0)),
            ("kv_cache", cpu.get("kv_cache", 0)), ("compute", cpu.get("compute", 0) + cpu.get("output", 0)),
            ("embedder", cpu.get("embedder", 0))], cpu.get("available")))
        legend = QHBoxLayout()
        names = {"weights": self.tr("weights"), "kv_cache": self.tr("KV cache"), "compute": self.tr("compute"),
                 "embedder": self.tr("embedder")}
        for key, colour in theme.PLAN_COLOURS.items():
            legend.addWidget(dot(colour, 9))
            legend.addWidget(muted(f"{names[key]} {format_bytes(plan.get(key))}"))
        legend.addStretch(1)
        lay.addLayout(legend)
        actual = (snap.get("actual") or {}).get("n_gpu_layers")
        layers = self.tr("Layers on the GPU: {planned} of {total} planned").format(
            planned=plan.get("n_gpu_layers", 0), total=plan.get("n_layers", "?"))
        layers += ", " + (self.tr("{n} in use").format(n=actual) if actual is not None
                          else self.tr("model not loaded yet"))
        if 0 < plan.get("n_gpu_layers", 0) < plan.get("n_layers", 0):
            layers += " " + self.tr("(a partial offload: the other layers run on the CPU)")
        lay.addWidget(wrapped(QLabel(layers)))
        fits = plan.get("fits")
        verdict = QLabel(self.tr("Fits in memory") if fits else self.tr("Does not fit in memory"))
        _colour(verdict, theme.OK if fits else theme.ERROR)
        lay.addWidget(verdict)
        _warnings(lay, plan.get("warnings"))
        checker = snap.get("check_plan")
        if checker:
            self._checker(lay, checker, snap.get("check_actual"))
        return box

    def _checker(self, lay: QVBoxLayout, plan: dict[str, Any], actual: dict[str, Any] | None) -> None:
        """The answer checker's plan (rag/confirm.py), loaded beside the chat model: what it adds, whether both
        fit, and how many of its layers llama.cpp put on the GPU once it is loaded (`actual`)."""
        lay.addWidget(title(self.tr("Answer checker: {model}").format(model=plan.get("model", "?"))))
        gpu, cpu = plan.get("gpu") or {}, plan.get("cpu") or {}
        where = (self.tr("{n} of {total} layers on the GPU ({gpu})").format(
                     n=plan.get("n_gpu_layers"), total=plan.get("n_layers", "?"), gpu=format_bytes(gpu.get("need")))
                 if plan.get("n_gpu_layers") else self.tr("on the CPU"))
        loaded = (self.tr("loaded, {n} layers on the GPU").format(n=actual.get("n_gpu_layers", 0)) if actual
                  else self.tr("loaded with the first answer it checks"))
        line = QLabel(self.tr("{ctx} tokens of context, {ram} of RAM, {where}; {loaded}").format(
            ctx=plan.get("n_ctx", "?"), ram=format_bytes(cpu.get("need")), where=where, loaded=loaded))
        line.setWordWrap(True)
        lay.addWidget(line)
        fits = plan.get("fits")
        text = self.tr("Fits beside the chat model") if fits else self.tr("Does not fit beside the chat model")
        verdict = QLabel(text)
        _colour(verdict, theme.OK if fits else theme.ERROR)
        lay.addWidget(verdict)
        _warnings(lay, plan.get("warnings"))

    def _stack(self, label: str, parts: list[tuple[str, int]], capacity: int | None) -> QWidget:
        w = QWidget()
        row = QHBoxLayout(w)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel(label))
        bar = PartsBar(height=18)
        need = sum(v for _, v in parts)
        bar.set_parts([(v, theme.PLAN_COLOURS[k], f"{k}: {format_bytes(v)}") for k, v in parts], capacity or need)
        row.addWidget(bar, 1)
        text = format_bytes(need)
        if capacity:
            text = self.tr("{need} of {free} free").format(need=format_bytes(need), free=format_bytes(capacity))
        row.addWidget(muted(text))
        return w

    def _runtimes(self, snap: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        lay.addWidget(title(self.tr("Runtimes")))
        rt = snap.get("runtimes") or {}
        checks = snap.get("checks") or []
        llama = rt.get("llama_cpp") or {}
        if llama:
            if not llama.get("installed"):
                detail = self.tr("not installed")
            else:
                backends = ", ".join(llama.get("gpu_backends") or []) or self.tr("CPU only")
                detail = f"{llama.get('version', '?')} · {backends}"
            self._runtime_row(lay, "llama.cpp", detail, _check(checks, "llama.cpp"))
        ort = rt.get("onnxruntime") or {}
        if ort:
            if not ort.get("installed"):
                detail = self.tr("not installed")
            else:
                working = [p.replace("ExecutionProvider", "") for p in ort.get("working") or []]
                detail = f"{ort.get('version', '?')} · " + (", ".join(working) or self.tr("no working provider"))
            self._runtime_row(lay, "ONNX Runtime", detail, _check(checks, "ONNX Runtime"))
        return box

    def _engine(self, snap: dict[str, Any]) -> QWidget:
        """The llama.cpp engine running (and why), the engines installed, and the Vulkan devices."""
        box = _card()
        lay = QVBoxLayout(box)
        engine = snap.get("engine") or {}
        chosen = engine.get("chosen") or "cpu"
        lay.addWidget(title(self.tr("llama.cpp engine: {engine}").format(engine=_ENGINE_NAMES.get(chosen, chosen))))
        if engine.get("reason"):
            lay.addWidget(wrapped(muted(engine["reason"])))
        if engine.get("available"):
            lay.addWidget(muted(self.tr("Installed: {engines}").format(
                engines=", ".join(_ENGINE_NAMES.get(e, e) for e in engine["available"]))))
        devices = snap.get("vulkan_devices") or []
        if not devices:
            lay.addWidget(muted(self.tr("No Vulkan device.")))
        running = (engine.get("device") or {}).get("index") if chosen == "vulkan" else None
        for d in devices:
            kind = self.tr("software, runs on the CPU") if d.get("software") else d.get("type", "?")
            memory = self.tr("heap {heap}").format(heap=format_bytes(d.get("heap_bytes")))
            if d.get("budget_bytes"):
                memory += ", " + self.tr("budget {budget}").format(budget=format_bytes(d["budget_bytes"]))
            row = QHBoxLayout()
            row.addWidget(dot(theme.OK if d.get("index") == running else QColor("#868e96")))
            text = f"<b>Vulkan {d.get('index')}</b> — {html.escape(str(d.get('name')))} " \
                   f"({html.escape(str(d.get('driver')))}, {html.escape(kind)}; {html.escape(memory)})"
            row.addWidget(wrapped(QLabel(text)), 1)
            lay.addLayout(row)
        return box

    def _runtime_row(self, lay: QVBoxLayout, name: str, detail: str, check: dict[str, Any] | None) -> None:
        verdict = (check or {}).get("verdict", "ok")
        row = QHBoxLayout()
        row.addWidget(dot(_STATUS_COLOUR.get(verdict, theme.OK)))
        row.addWidget(QLabel(f"<b>{html.escape(name)}</b> — {html.escape(detail)}"), 1)
        lay.addLayout(row)
        if check and verdict != "ok":
            lay.addWidget(muted(check.get("detail", "")))
            for advice in check.get("advice") or []:
                if verdict == "info":
                    lay.addWidget(muted("→ " + advice))
                else:
                    lay.addWidget(_advice(advice, _STATUS_COLOUR.get(verdict, theme.WARN)))

    def _checks(self, snap: dict[str, Any]) -> QWidget:
        box = _card()
        lay = QVBoxLayout(box)
        lay.addWidget(title(self.tr("Checks")))
        for c in snap.get("checks") or []:
            row = QHBoxLayout()
            row.addWidget(dot(_STATUS_COLOUR.get(c.get("verdict"), theme.OK)), 0, Qt.AlignmentFlag.AlignTop)
            text = QLabel(f"<b>{html.escape(c.get('name', ''))}</b>: {html.escape(c.get('detail', ''))}")
            text.setWordWrap(True)
            row.addWidget(text, 1)
            lay.addLayout(row)
            if c.get("verdict") in ("warn", "fail"):
                for advice in c.get("advice") or []:
                    lay.addWidget(_advice(advice, _STATUS_COLOUR.get(c.get("verdict"), theme.WARN)))
        return box

    def _clear(self) -> None:
        self.snapshot, self._pending, self._steps = None, None, []
        self._step_timer.stop()
        while self._lay.count():
            item = self._lay.takeAt(0)
            widget = item.widget()
            if widget is not None:  # out of the panel now (findChildren sees the shown cards only), freed later
                widget.hide()
                widget.setParent(None)
                widget.deleteLater()


_ENGINE_NAMES = {"cpu": "CPU", "vulkan": "Vulkan", "hip": "HIP (ROCm)"}


def wrapped(label: QLabel) -> QLabel:
    label.setWordWrap(True)
    return label


def _card() -> QFrame:
    box = QFrame()
    box.setObjectName("card")  # styled by the panel's one style sheet (_CARD_STYLE)
    return box


def _colour(label: QLabel, colour: QColor) -> None:
    pal = label.palette()
    pal.setColor(QPalette.ColorRole.WindowText, colour)
    label.setPalette(pal)


def _bold(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    f = label.font()
    f.setBold(True)
    label.setFont(f)
    return label


def _advice(text: str, colour: QColor) -> QLabel:
    label = QLabel("→ " + text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # advice names variables like HSA_OVERRIDE_GFX_VERSION_<node>
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    _colour(label, colour)
    return label


def _check(checks: list[dict[str, Any]], prefix: str) -> dict[str, Any] | None:
    return next((c for c in checks if str(c.get("name", "")).startswith(prefix)), None)


def _warnings(lay: QVBoxLayout, warnings: list[str] | None) -> None:
    """A plan's warnings, one wrapped line each in the warning colour."""
    for w in warnings or []:
        warn = QLabel(w)
        warn.setWordWrap(True)
        _colour(warn, theme.WARN)
        lay.addWidget(warn)

"""Starting the desktop app: `run()` is what `hearth gui` calls; `build_window()` makes the same window for
tests; `Shooter` drives `hearth gui --screenshot`.

The window's configuration comes from the flags and the choices saved in Settings, through app/config.py
(`app.gui.prefs.hearth_config_for`): the HEARTH_* variables and the administrator's policy apply there.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from app.config import Requested

I18N_DIR = Path(__file__).resolve().parent / "i18n"
log = logging.getLogger(__name__)


@dataclass
class ScreenshotPlan:
    """What `--screenshot` does before taking the picture."""

    path: Path
    add: list[Path] = field(default_factory=list)  # index these first
    ask: str | None = None  # then ask this
    panel: str | None = None  # 'library' or 'hardware'
    during_ingest: bool = False  # take it half-way through indexing instead of when idle
    size: tuple[int, int] = (1360, 860)
    timeout: float = 600.0


def run(
    requested: Requested = Requested(),
    *,
    workspace: str | None = None,
    screenshot: ScreenshotPlan | None = None,
) -> int:
    """Open the window with the choices `requested` by flags (over those saved in Settings); the exit code."""
    from PySide6.QtWidgets import QApplication

    from app.gui.prefs import Prefs, default_path, hearth_config_for

    prefs_path = Path(tempfile.mkdtemp(prefix="hearth-shot-")) / "gui.ini" if screenshot else default_path()
    prefs = Prefs(prefs_path)
    config = hearth_config_for(prefs, requested)
    log_path = setup_logging(config.data_dir)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Hearth")
    app.setOrganizationName("Hearth")
    app.setDesktopFileName("hearth")
    install_translations(app, prefs.language or os.environ.get("HEARTH_LANG"))
    from app.gui import theme

    theme.apply(app)
    from app.gui import gcguard

    gcguard.install(app)  # cycles are collected on this thread, never in an indexing/answering worker
    app.setWindowIcon(theme.app_icon())
    window = build_window(config, prefs=prefs, workspace=workspace, log_path=log_path, flags=requested)
    install_excepthook(window)
    if screenshot is not None:
        window.resize(*screenshot.size)
    window.show()
    window.start()
    if screenshot is not None:
        shooter = Shooter(window, screenshot)
        shooter.start()
        app.exec()
        code = shooter.exit_code
        # A screenshot's throwaway settings go with it (os._exit below skips any cleanup at exit).
        shutil.rmtree(prefs_path.parent, ignore_errors=True)
    else:
        code = app.exec()
    return _exit(code)


def _exit(code: int) -> NoReturn:
    """End the process now that the window is closed and every worker has stopped.

    The interpreter's own shutdown is skipped: garbage-collecting third-party extension objects after Qt
    is gone has crashed there (a refcount error while finalizing), which would turn a clean exit into an
    abort. Everything Hearth writes is already on disk: settings sync on close, SQLite commits per
    change, and the log is flushed here.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def build_window(config, *, prefs, workspace: str | None = None, log_path: Path | None = None,
                 factory: Callable | None = None, open_external: Callable | None = None,
                 flags: Requested | None = None):
    """The main window over new operations on `config` (tests pass `factory` to build Hearth with fakes);
    `flags` are the choices the window was started with, which Settings are applied over later."""
    from app.gui.main_window import MainWindow, open_with_system
    from app.gui.operations import Operations

    ops = Operations(config, factory=factory)
    return MainWindow(ops, prefs, workspace=workspace, log_path=log_path,
                      open_external=open_external or open_with_system, flags=flags)


def setup_logging(data_dir: Path) -> Path | None:
    """Log to DATA_DIR/logs/hearth-gui.log (rotated); returns its path, or None if it cannot be written."""
    path = data_dir / "logs" / "hearth-gui.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=2 << 20, backupCount=3, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    return path


def install_translations(app, language: str | None) -> str:
    """Load Hearth's and Qt's translations for `language` (default: the system's); returns the code used."""
    from PySide6.QtCore import QLibraryInfo, QLocale, QTranslator

    code = (language or QLocale.system().name()).split("_")[0].lower()
    if code == "en" or not code:
        return "en"
    own = QTranslator(app)
    if own.load(str(I18N_DIR / f"hearth_{code}.qm")):
        app.installTranslator(own)
    else:
        return "en"
    qt = QTranslator(app)
    if qt.load(f"qtbase_{code}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        app.installTranslator(qt)
    app._hearth_translators = (own, qt)  # keep them alive
    return code


def install_excepthook(window) -> None:
    """An error escaping a slot is logged in full and shown as one readable sentence, not a traceback."""
    from app.gui.worker import Failure

    def hook(kind, exc, tb) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, exc, tb)
            return
        log.error("Unexpected error", exc_info=(kind, exc, tb))
        try:
            window.show_failure(Failure.from_exception(exc))
        except Exception:  # noqa: BLE001 - the window may be gone; the log has it
            pass

    sys.excepthook = hook


class Shooter:
    """Drives `--screenshot`: waits for the window to be idle (after optional steps), saves a PNG, quits."""

    def __init__(self, window, plan: ScreenshotPlan) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer

        self.window = window
        self.plan = plan
        self.exit_code = 1
        self._steps: list[Callable[[], None]] = []
        if plan.add:
            self._steps.append(self._add)
        if plan.ask:
            self._steps.append(lambda: self.window.ask(plan.ask))
        self._idle_ticks = 0
        self._clock = QElapsedTimer()
        self._timer = QTimer(window)
        self._timer.setInterval(200)
        self._timer.timeout.connect(self._tick)
        self._shot = False

    def start(self) -> None:
        """Begin polling."""
        if self.plan.panel:
            self.window.show_side_tab(1 if self.plan.panel == "hardware" else 0)
        self._clock.start()
        self._timer.start()

    def _add(self) -> None:
        job = self.window.ingest(self.plan.add)
        if self.plan.during_ingest:
            from rag.ingest import Progress

            def on_progress(event: object) -> None:
                if isinstance(event, Progress) and event.files_total and \
                        event.files_done >= max(1, event.files_total // 2) and event.files_done < event.files_total:
                    self._shoot()

            job.progress.connect(on_progress)

    def _idle(self) -> bool:
        w = self.window
        return not w.ops.busy and w.model_state in ("ready", "failed") and w.hw.job is None

    def _tick(self) -> None:
        if self._clock.elapsed() > self.plan.timeout * 1000:
            print(f"hearth: the window did not become idle within {self.plan.timeout:.0f} s; saving it as it is.",
                  file=sys.stderr)
            self._shoot(ok=False)
            return
        self._idle_ticks = self._idle_ticks + 1 if self._idle() else 0
        if self._idle_ticks < 3:
            return
        if self._steps:
            self._idle_ticks = 0
            self._steps.pop(0)()
            return
        self._shoot()

    def _shoot(self, *, ok: bool = True) -> None:
        from PySide6.QtWidgets import QApplication

        if self._shot:
            return
        self._shot = True
        self._timer.stop()
        if self.plan.panel:
            self.window.show_side_tab(1 if self.plan.panel == "hardware" else 0)
        QApplication.processEvents()
        pixmap = self.window.grab()
        self.plan.path.parent.mkdir(parents=True, exist_ok=True)
        saved = pixmap.save(str(self.plan.path), "PNG")
        if saved:
            print(f"saved {self.plan.path} ({pixmap.width()}×{pixmap.height()})", file=sys.stderr)
        else:
            print(f"hearth: cannot write {self.plan.path}", file=sys.stderr)
        self.exit_code = 0 if (saved and ok) else 1
        self.window.close()
        QApplication.instance().quit()


def parse_size(text: str) -> tuple[int, int]:
    """'1360x860' → (1360, 860)."""
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


__all__ = ("run", "build_window", "ScreenshotPlan", "Shooter", "parse_size")

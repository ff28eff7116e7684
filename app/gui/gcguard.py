"""Cyclic garbage collection on the GUI thread only.

Python's collector runs in whichever thread happens to allocate when a generation's threshold is
crossed. With Qt that is a hazard: a worker thread (indexing, answering) can end up collecting a cycle
that holds a widget or another QObject wrapper, and destroying a QObject outside the thread that owns it
crashes the process (a segfault inside "Garbage-collecting", seen during indexing). The guard switches
the automatic collector off and runs the same generational collection from a timer on the GUI thread, so
cycles are still freed, always in the right thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class MainThreadCollector(QObject):
    """Runs `gc.collect(generation)` on the GUI thread when the allocation counts call for it."""

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self.collections = 0
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.tick)

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect once more here, then give the collector back to Python as it was."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def tick(self) -> int | None:
        """Collect the oldest generation whose count passed its threshold; returns it (None: none did)."""
        counts = gc.get_count()
        thresholds = gc.get_threshold()
        generation = None
        for g in range(len(counts) - 1, -1, -1):
            if thresholds[g] and counts[g] > thresholds[g]:
                generation = g
                break
        if generation is not None:
            gc.collect(generation)
            self.collections += 1
        return generation


def install(app: QObject) -> MainThreadCollector:
    """Attach one collector to the application object (idempotent) and start it."""
    existing = getattr(app, "_hearth_collector", None)
    if isinstance(existing, MainThreadCollector):
        return existing
    collector = MainThreadCollector(app)
    collector.start()
    app._hearth_collector = collector
    return collector


def uninstall(app: QObject) -> None:
    """Stop the collector `install` attached, if any (tests hand the collector back to Python)."""
    collector = getattr(app, "_hearth_collector", None)
    if isinstance(collector, MainThreadCollector):
        collector.stop()
        app._hearth_collector = None


def settle_heap() -> None:
    """Leave the long-lived objects out of later garbage collections (`gc.freeze`); on the GUI thread.

    Loading the parts and indexing leave some hundred thousand long-lived objects (modules, the embedder's
    vocabulary, the index's clients). Python's collector rescans them all whenever a full collection comes
    due, on whichever thread allocates at that moment: on the window's thread that was a 136 ms stall in the
    middle of an answer. Frozen, they are not scanned again. Nothing is collected here: a collection holds
    the interpreter lock as long as the stall it avoids, and run from a worker it freed Qt objects off the
    GUI thread (a crash). Cycles that are garbage already stay until `Operations.reconfigure` unfreezes
    everything for a new service.
    """
    gc.freeze()

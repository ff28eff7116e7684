"""The one bridge between Hearth's core and Qt's event loop: serial executors whose jobs report by signals.

Core calls are plain functions that take `progress` and `cancel` callables (see STYLE §2). A `Job`
carries those two callables into a worker thread and carries progress, the result or the error back to
the GUI thread as queued signals, so no widget is ever touched off the GUI thread. Each stateful
resource (the document index, the loaded chat model) gets its own `SerialExecutor`: one thread, jobs run
in the order they were submitted, so two jobs never use the same resource at once.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Signal

from inference.errors import Cancelled, HearthError

log = logging.getLogger(__name__)


class Failure:
    """An error ready to show: the sentence, the hint, and whether it is only a cancellation."""

    def __init__(self, message: str, hint: str | None = None, *, cancelled: bool = False) -> None:
        self.message = message
        self.hint = hint
        self.cancelled = cancelled

    @classmethod
    def from_exception(cls, exc: BaseException) -> Failure:
        """Translate any exception into what a user may read; unexpected ones go to the log in full."""
        if isinstance(exc, Cancelled):
            return cls(str(exc), cancelled=True)
        if isinstance(exc, HearthError):
            return cls(str(exc), exc.hint)
        log.error("Unexpected error in a background job", exc_info=exc)
        text = str(exc).strip() or type(exc).__name__
        return cls(
            f"Something went wrong: {text}",
            "The details are in the log file (Help › Open log file).",
        )

    def __repr__(self) -> str:
        return f"Failure({self.message!r}, hint={self.hint!r}, cancelled={self.cancelled})"


class JobState:
    """What a running job's function receives: `cancel()` to poll, `progress(value)` to report."""

    def __init__(self, job: Job) -> None:
        self._job = job

    def cancel(self) -> bool:
        """True once the user asked the job to stop."""
        return self._job._cancel.is_set()

    @property
    def cancel_event(self) -> threading.Event:
        """The cancel flag as an Event, for core calls that wait on one (e.g. watching folders)."""
        return self._job._cancel

    def progress(self, value: Any) -> None:
        """Send a progress value to the GUI thread."""
        self._job._progress.emit(value)


class Job(QObject):
    """One piece of work on an executor; exactly one of finished / failed is emitted, then `ended`."""

    progress = Signal(object)
    finished = Signal(object)  # the function's result
    failed = Signal(object)  # a Failure (cancellations included; check `.cancelled`)
    ended = Signal()
    # Emitted on the worker thread; queued to this object's (the GUI) thread, re-emitted there publicly,
    # so that plain Python callables connected to the public signals always run on the GUI thread.
    _progress = Signal(object)
    _finished = Signal(object)
    _failed = Signal(object)

    _ids = itertools.count(1)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._progress.connect(self._relay_progress)
        self._finished.connect(self._relay_finished)
        self._failed.connect(self._relay_failed)
        self.name = name
        self.id = next(self._ids)
        self._cancel = threading.Event()
        self.done = False

    def cancel(self) -> None:
        """Ask the job to stop at its next check (a job not started yet never starts)."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        """Whether cancel() was called."""
        return self._cancel.is_set()

    def _relay_progress(self, value: object) -> None:
        self.progress.emit(value)

    def _relay_finished(self, value: object) -> None:
        self.finished.emit(value)

    def _relay_failed(self, value: object) -> None:
        self.failed.emit(value)


class SerialExecutor(QObject):
    """One worker thread for one stateful resource; `busy_changed` tells the GUI when it works."""

    busy_changed = Signal(bool)
    _job_ended = Signal(object)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"hearth-{name}")
        self._pending: list[Job] = []
        self._job_ended.connect(self._on_job_ended)
        self._closed = False

    @property
    def busy(self) -> bool:
        """True while a job is queued or running."""
        return bool(self._pending)

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The one-thread pool itself, for a component that must share this resource's thread (the API)."""
        return self._pool

    def submit(self, name: str, fn: Callable[[JobState], Any]) -> Job:
        """Queue `fn(state)`; connect to the returned job's signals (they arrive on the GUI thread)."""
        job = Job(name, self)
        if self._closed:
            job.done = True
            return job
        self._pending.append(job)
        if len(self._pending) == 1:
            self.busy_changed.emit(True)
        self._pool.submit(self._run, job, fn)
        return job

    def cancel_all(self) -> None:
        """Ask every queued and running job to stop."""
        for job in self._pending:
            job.cancel()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop accepting jobs, cancel the queued ones and (optionally) wait for the running one."""
        self._closed = True
        self.cancel_all()
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def _run(self, job: Job, fn: Callable[[JobState], Any]) -> None:
        # Runs on the worker thread: only signals leave it.
        try:
            if job.cancel_requested:
                raise Cancelled()
            result = fn(JobState(job))
        except BaseException as exc:  # noqa: BLE001 - every error becomes a Failure the GUI can show
            job._failed.emit(Failure.from_exception(exc))
        else:
            job._finished.emit(result)
        finally:
            self._job_ended.emit(job)

    def _on_job_ended(self, job: Job) -> None:
        job.done = True
        if job in self._pending:
            self._pending.remove(job)
        job.ended.emit()
        if not self._pending:
            self.busy_changed.emit(False)
        job.deleteLater()

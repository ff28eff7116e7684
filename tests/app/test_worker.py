"""The one bridge between the core and Qt (app/gui/worker.py): serial executors whose jobs report by signals."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from app.gui.worker import Failure, JobState, SerialExecutor  # noqa: E402
from inference.errors import Cancelled, HearthError, UsageError  # noqa: E402

WAIT = 10_000  # ms


@pytest.fixture
def executor(qapp):
    ex = SerialExecutor("test")
    yield ex
    ex.shutdown(wait=True)


class Recorder:
    """Everything a job emits, in order, with the thread each signal arrived on."""

    def __init__(self, job) -> None:
        self.events: list[tuple[str, object]] = []
        self.threads: set[str] = set()
        self.ended = False
        job.progress.connect(lambda v: self._add("progress", v))
        job.finished.connect(lambda v: self._add("finished", v))
        job.failed.connect(lambda f: self._add("failed", f))
        job.ended.connect(self._end)

    def _add(self, kind: str, value: object) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append((kind, value))

    def _end(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.ended = True

    @property
    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]

    def failure(self) -> Failure:
        return next(v for k, v in self.events if k == "failed")


def test_progress_then_the_result_arrive_on_the_gui_thread(qtbot, executor):
    ran_on: list[str] = []

    def work(state: JobState) -> str:
        ran_on.append(threading.current_thread().name)
        for i in range(3):
            state.progress(i)
        return "done"

    busy: list[bool] = []
    executor.busy_changed.connect(busy.append)
    job = executor.submit("work", work)
    assert executor.busy and not job.done
    seen = Recorder(job)
    qtbot.waitUntil(lambda: seen.ended, timeout=WAIT)
    assert seen.events == [("progress", 0), ("progress", 1), ("progress", 2), ("finished", "done")]
    assert ran_on[0].startswith("hearth-test")  # the work ran on the executor's thread ...
    assert seen.threads == {threading.main_thread().name}  # ... every signal arrived on the GUI thread
    assert busy == [True, False] and not executor.busy


def test_errors_become_failures_a_user_can_read(qtbot, executor, caplog):
    def usage(state: JobState) -> None:
        raise UsageError("That file is gone.", hint="Add it again.")

    def unexpected(state: JobState) -> None:
        raise RuntimeError("boom")

    first = Recorder(executor.submit("usage", usage))
    second = Recorder(executor.submit("unexpected", unexpected))
    with caplog.at_level(logging.ERROR, logger="app.gui.worker"):
        qtbot.waitUntil(lambda: first.ended and second.ended, timeout=WAIT)
    assert first.kinds == ["failed"] and second.kinds == ["failed"]
    f = first.failure()
    assert (f.message, f.hint, f.cancelled) == ("That file is gone.", "Add it again.", False)
    g = second.failure()
    assert g.message == "Something went wrong: boom" and "log file" in g.hint and not g.cancelled
    assert "Traceback" not in g.message
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)  # the details go to the log


def test_a_core_error_keeps_its_sentence_and_hint():
    f = Failure.from_exception(HearthError("The model could not be loaded.", hint="Pick another one."))
    assert (f.message, f.hint, f.cancelled) == ("The model could not be loaded.", "Pick another one.", False)
    assert Failure.from_exception(Cancelled("Stopped.")).cancelled


def test_cancel_stops_the_running_job_and_a_queued_one_never_starts(qtbot, executor):
    started = threading.Event()
    steps: list[int] = []
    never: list[bool] = []

    def long(state: JobState) -> None:
        started.set()
        for i in range(500):
            if state.cancel():
                raise Cancelled("Stopped.")
            steps.append(i)
            time.sleep(0.01)

    running = executor.submit("long", long)
    queued = executor.submit("queued", lambda s: never.append(True))
    first, second = Recorder(running), Recorder(queued)
    assert started.wait(5)
    assert not running.cancel_requested
    queued.cancel()
    running.cancel()
    assert running.cancel_requested
    qtbot.waitUntil(lambda: first.ended and second.ended, timeout=WAIT)
    assert first.kinds == ["failed"] and first.failure().cancelled
    assert second.kinds == ["failed"] and second.failure().cancelled
    assert never == [] and len(steps) < 500


def test_the_cancel_event_is_the_flag_core_calls_wait_on(qtbot, executor):
    waited: list[bool] = []

    def wait_for_stop(state: JobState) -> None:
        waited.append(state.cancel_event.wait(5))

    job = executor.submit("watch", wait_for_stop)
    seen = Recorder(job)
    qtbot.wait(50)
    job.cancel()
    qtbot.waitUntil(lambda: seen.ended, timeout=WAIT)
    assert waited == [True] and seen.kinds == ["finished"]


def test_jobs_run_one_at_a_time_in_the_order_submitted(qtbot, executor):
    order: list[int] = []
    active = [0]
    overlap: list[int] = []
    lock = threading.Lock()

    def make(i: int):
        def work(state: JobState) -> int:
            with lock:
                active[0] += 1
                overlap.append(active[0])
            time.sleep(0.02)
            order.append(i)
            with lock:
                active[0] -= 1
            return i

        return work

    jobs = [executor.submit(f"job-{i}", make(i)) for i in range(6)]
    seen = [Recorder(j) for j in jobs]
    results: list[int] = []
    for j in jobs:
        j.finished.connect(results.append)
    qtbot.waitUntil(lambda: all(s.ended for s in seen), timeout=WAIT)
    assert order == list(range(6)) and results == list(range(6))
    assert max(overlap) == 1  # never two at once


def test_cancel_all_and_shutdown(qtbot, qapp):
    ex = SerialExecutor("closing")
    gate = threading.Event()
    ran: list[str] = []

    def first(state: JobState) -> None:
        gate.wait(5)
        ran.append("first")
        if state.cancel():
            raise Cancelled()

    a = Recorder(ex.submit("first", first))
    b = Recorder(ex.submit("second", lambda s: ran.append("second")))
    ex.cancel_all()
    gate.set()
    ex.shutdown(wait=True)
    qtbot.waitUntil(lambda: a.ended, timeout=WAIT)
    assert ran == ["first"] and a.failure().cancelled  # the running job stopped at its next check
    assert "second" not in ran and b.kinds in ([], ["failed"])  # the queued one never ran
    late = ex.submit("late", lambda s: ran.append("late"))
    assert late.done and ran == ["first"]  # a closed executor takes no more work

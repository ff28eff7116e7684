"""Reading files in worker processes, so that a slow, hanging or crashing reader costs only its own file;
and the writer thread at the other end of ingestion's pipeline.

    parse_file(job)          the work for one file: stat, size cap, SHA-256, skip if unchanged, load
    ParsePool(workers, ...)  runs parse_file in processes; results in completion order, with backpressure
    parse_inline(jobs)       the same in this process (no timeout, no crash protection): tests, tiny jobs
    BatchThread(write, ...)  a thread that writes what it is given in batches (by size or age), in order

Each worker is a plain process with one pipe; a file that takes longer than the timeout has its worker
killed and replaced, and a worker that dies (a reader crashing in C code) is reported against its file.
A worker's address space is capped (RLIMIT_AS, `memory_limit`): a file whose reading needs more fails
as `too_large` instead of swapping the machine to a halt. The cap is on address space rather than a
watch on resident memory because it acts at the allocation that crosses it, before the memory is used;
the readers' libraries reserve little beyond what they touch (under 200 MiB with every reader loaded,
once numpy's OpenBLAS is held to one thread, which the workers are).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Generic, TypeVar

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, load, ocr_note
from rag.pinned import pinned

T = TypeVar("T")

# Address space one reader process may use: room for a 200 MB file decoded to text several times over.
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
# Worker environment: no thread pools (their stacks and buffers are address space, and readers never use them).
_WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True)
class ParseJob:
    """One file to read; `known_sha256` is the hash of the version indexed now, if any; `within` is the
    (resolved) folder the file was found in, which it must still lie inside when it is read."""

    path: Path
    known_sha256: str | None = None
    limits: Limits = DEFAULT_LIMITS
    max_file_bytes: int = 200 * 1024 * 1024
    within: str | None = None


@dataclass(frozen=True)
class Parsed:
    """What reading one file gave: its sections, or None when unchanged or failed (then `error` says why)."""

    path: Path
    sha256: str | None
    size: int
    mtime_ns: int
    sections: list[Section] | None
    error: tuple[str, str] | None = None  # (kind, message) of a LoadError
    seconds: float = 0.0
    peak_rss: int = 0  # bytes: the worker process's peak resident memory so far (0 when read in this process)

    @property
    def unchanged(self) -> bool:
        """The content hash equals the indexed version's: nothing to do."""
        return self.sections is None and self.error is None

    @property
    def last_page(self) -> int | None:
        """The highest page (or slide) number among the sections, None for formats without pages."""
        numbered = [s.page for s in self.sections or () if s.page is not None]
        return max(numbered) if numbered else None

    @property
    def note(self) -> str | None:
        """What OCR read, if anything: "scanned", or "scanned, low confidence (page …)" for pages read poorly."""
        return ocr_note(self.sections or ())

    @property
    def pages(self) -> int:
        """Pages (or slides) read, or sections for formats without pages."""
        if not self.sections:
            return 0
        numbered = [s.page for s in self.sections if s.page is not None]
        return max(numbered) if numbered else len(self.sections)


def parse_file(job: ParseJob, *, memory_limit: int | None = None) -> Parsed:
    """Hash and read one file; never raises (failures come back as `error`).

    `memory_limit` is the cap this process runs under, named in the error when reading hits it.
    """
    t0 = time.perf_counter()
    path = job.path
    size, mtime_ns, sha = 0, 0, None
    try:
        # Opened once: the checks, the hash and the readers all see the one file opened, never a file
        # swapped in under the same name after the check (rag/pinned.py).
        with pinned(path, within=job.within) as opened:
            size, mtime_ns = opened.size, opened.mtime_ns
            if size > job.max_file_bytes:
                raise LoadError(
                    f"{path.name} is too large ({size / 2**20:.0f} MiB; "
                    f"the limit is {job.max_file_bytes / 2**20:.0f} MiB).",
                    kind="too_large",
                )
            sha = opened.sha256()
            if sha == job.known_sha256:
                return Parsed(path, sha, size, mtime_ns, None, None, time.perf_counter() - t0)
            sections = load(opened.view, job.limits)
    except LoadError as exc:
        return Parsed(path, sha, size, mtime_ns, None, (exc.kind, str(exc)), time.perf_counter() - t0)
    except OSError as exc:
        error = ("unreadable", f"{path.name} cannot be opened ({exc.strerror or type(exc).__name__}).")
        return Parsed(path, sha, size, mtime_ns, None, error, time.perf_counter() - t0)
    except MemoryError:
        if memory_limit:
            why = f"reading it exceeded the memory limit of {memory_limit / 2**20:.0f} MiB"
        else:
            why = "it is too large to read in the memory available"
        error = ("too_large", f"{path.name} is too large: {why}.")
        return Parsed(path, sha, size, mtime_ns, None, error, time.perf_counter() - t0)
    except Exception as exc:  # a reader bug must cost one file, not the batch
        error = ("corrupt", f"{path.name} could not be read ({type(exc).__name__}: {exc}).")
        return Parsed(path, sha, size, mtime_ns, None, error, time.perf_counter() - t0)
    return Parsed(path, sha, size, mtime_ns, sections, None, time.perf_counter() - t0)


def parse_inline(jobs: Iterable[ParseJob]) -> Iterator[Parsed]:
    """parse_file over jobs in this process, in order."""
    for job in jobs:
        yield parse_file(job)


def _child_main(read_fd: int, write_fd: int, memory_limit: int | None = None) -> None:
    """A worker process: read jobs from one pipe, send results on the other, until told to stop."""
    if memory_limit:
        limit_address_space(memory_limit)
    jobs, results = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    while True:
        try:
            job = jobs.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        result = parse_file(job, memory_limit=memory_limit)
        peak = _peak_rss()
        try:
            results.send(replace(result, peak_rss=peak))
        except MemoryError:  # the sections themselves do not fit in memory a second time, pickled
            kind, message = "too_large", f"{job.path.name} is too large: its text exceeded the memory limit."
            results.send(Parsed(job.path, result.sha256, result.size, result.mtime_ns, None, (kind, message),
                                result.seconds, peak))  # fmt: skip


def _peak_rss() -> int:
    """This process's peak resident memory in bytes.

    VmHWM, where there is /proc: it starts afresh at exec, whereas ru_maxrss keeps the high-water mark of
    the parent this process was forked from (a worker of a 300 MB app would report 300 MB).
    """
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def limit_address_space(limit: int) -> None:
    """Cap this process's address space at `limit` bytes (or the hard limit, if that is lower)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


class _Worker:
    """One reader process: a plain subprocess, not multiprocessing, so that it never re-imports the
    caller's __main__ and never inherits the threads (ONNX Runtime, Chroma) of the process starting it."""

    def __init__(self, memory_limit: int | None = None) -> None:
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        code = (
            "import json, os, sys; sys.path[:0] = json.loads(os.environ['HEARTH_PARSE_PATH']); "
            f"from rag.parse_pool import _child_main; _child_main({job_r}, {res_w}, {memory_limit!r})"
        )
        env = dict(os.environ, HEARTH_PARSE_PATH=json.dumps([p for p in sys.path if p]), **_WORKER_ENV)
        try:
            # -I (isolated): `python -c` would put the working folder first on sys.path, and a `json.py`
            # planted in the folder being indexed (`cd share && hearth ingest .`) would run before the first
            # line. The reader imports exactly what this process can (its sys.path, passed above), no more.
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", code], pass_fds=(job_r, res_w), env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        except BaseException:
            for fd in (job_w, res_r):
                os.close(fd)
            raise
        finally:
            os.close(job_r)
            os.close(res_w)
        self.jobs = Connection(job_w, readable=False)
        self.conn = Connection(res_r, writable=False)
        self.job: ParseJob | None = None
        self.deadline = 0.0

    def send(self, job: ParseJob) -> None:
        self.job = job
        self.jobs.send(job)

    def stop(self, *, kill: bool = False) -> None:
        if not kill:
            try:
                self.jobs.send(None)
            except (OSError, ValueError):
                kill = True
        if kill:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.jobs.close()
        self.conn.close()


class ParsePool:
    """Worker processes that read files while the caller embeds; results in completion order."""

    def __init__(
        self,
        workers: int,
        *,
        timeout: float | None = 300.0,
        prefetch: int | None = None,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.timeout = timeout
        self.memory_limit = memory_limit  # bytes of address space per worker; None: no cap
        # Results read but not yet taken: bounds the memory of parsed documents waiting for the embedder.
        self.prefetch = prefetch or workers + 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._results: queue.Queue[Parsed | BaseException | None] = queue.Queue(maxsize=self.prefetch)

    def run(self, jobs: Iterable[ParseJob]) -> Iterator[Parsed]:
        """Parse every job; yields results as they finish. Close the iterator (or the pool) to stop early."""
        self._thread = threading.Thread(target=self._serve, args=(list(jobs),), daemon=True, name="hearth-parse-pool")
        self._thread.start()
        try:
            while True:
                item = self._results.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the workers (killing any mid-file) and wait for the pool thread."""
        self._stop.set()
        while True:  # unblock a pool thread waiting to put a result
            try:
                self._results.get_nowait()
            except queue.Empty:
                break
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _put(self, item: Parsed | BaseException | None) -> bool:
        while not self._stop.is_set():
            try:
                self._results.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _serve(self, jobs: list[ParseJob]) -> None:
        pending = deque(jobs)
        workers: list[_Worker] = []
        try:
            idle: list[_Worker] = []
            busy: dict[Connection, _Worker] = {}
            while (pending or busy) and not self._stop.is_set():
                while pending and (idle or len(workers) < min(self.workers, len(pending) + len(busy))):
                    if not idle:
                        try:
                            worker = _Worker(self.memory_limit)
                        except OSError:
                            if workers:  # go on with the workers there are
                                self.workers = len(workers)
                                break
                            # No process can be started (limits, a locked-down system): read here instead.
                            while pending and not self._stop.is_set():
                                if not self._put(parse_file(pending.popleft())):
                                    return
                            break
                        workers.append(worker)
                        idle.append(worker)
                    worker = idle.pop()
                    worker.deadline = time.monotonic() + self.timeout if self.timeout else float("inf")
                    worker.send(pending.popleft())
                    busy[worker.conn] = worker
                if not busy:
                    continue
                soonest = min(w.deadline for w in busy.values())
                wait_for = max(0.0, min(soonest - time.monotonic(), 0.5))
                for conn in wait(list(busy), timeout=wait_for):
                    worker = busy.pop(conn)  # type: ignore[arg-type]
                    job = worker.job
                    assert job is not None
                    try:
                        result = conn.recv()  # type: ignore[union-attr]
                    except (EOFError, OSError):
                        workers.remove(worker)
                        worker.stop(kill=True)
                        result = _crashed(job, worker.process.returncode, self.memory_limit)
                    else:
                        worker.job = None
                        idle.append(worker)
                    if not self._put(result):
                        return
                now = time.monotonic()
                for conn, worker in list(busy.items()):
                    if worker.deadline <= now:
                        del busy[conn]
                        workers.remove(worker)
                        worker.stop(kill=True)
                        assert worker.job is not None
                        if not self._put(_timed_out(worker.job, self.timeout or 0)):
                            return
            self._put(None)
        except BaseException as exc:  # the pool itself failed (cannot start processes): tell the caller
            self._put(exc)
        finally:
            for worker in workers:
                worker.stop(kill=worker.job is not None)


def _crashed(job: ParseJob, exitcode: int | None, memory_limit: int | None = None) -> Parsed:
    how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
    if memory_limit and exitcode == -signal.SIGABRT:
        # C++ readers (PDFium) abort when an allocation fails, and under the cap that is what fails.
        return Parsed(
            job.path, None, 0, 0, None,
            ("too_large", f"{job.path.name} is too large: the reader ran out of memory on it ({how}); "
                          f"reading it needs more than the memory limit of {memory_limit / 2**20:.0f} MiB."),
        )  # fmt: skip
    return Parsed(
        job.path, None, 0, 0, None,
        ("corrupt", f"{job.path.name} could not be read: the reader crashed on it ({how})."),
    )  # fmt: skip


def _timed_out(job: ParseJob, timeout: float) -> Parsed:
    return Parsed(
        job.path, None, 0, 0, None,
        ("timeout", f"{job.path.name} took longer than {timeout:.0f} s to read and was given up on."),
    )  # fmt: skip


def default_workers() -> int:
    """Parse processes to use: the cores left after the embedder's main thread, at most four."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


class BatchThread(Generic[T]):
    """A thread that takes items through a bounded queue and hands them to `write` in batches, in order.

    A batch goes when the `size` of its items reaches `limit`, when its oldest item has waited `wait`
    seconds, on `sync` and on `close`. Calls queued with `call` run on the thread in order with the items.
    An exception in the thread stops it and is raised in the caller's thread at its next put, sync or close;
    `abort` stops it without writing what waits (a batch being written is finished first); so does
    `stopped` turning true (a user's stop, seen before each batch: the caller may not have aborted yet).
    Ingestion writes its documents this way (rag.ingest): the store's writes overlap reading and embedding.
    """

    def __init__(self, write: Callable[[list[T]], None], *, limit: int, size: Callable[[T], int],
                 wait: float = 2.0, maxsize: int = 64, name: str = "hearth-batch-writer",
                 stopped: Callable[[], bool] | None = None) -> None:
        self._write, self._limit, self._size, self._wait = write, max(1, limit), size, wait
        self._stopped = stopped or (lambda: False)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        self.error: BaseException | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise what stopped the thread, if anything did."""
        if self.error is not None:
            raise self.error

    def put(self, item: T) -> None:
        """Queue an item (waits while the queue is full)."""
        self._put(("item", item))

    def call(self, fn: Callable[[], None]) -> None:
        """Queue a call, run on the thread after the items queued before it (their batch may still wait)."""
        self._put(("call", fn))

    def _put(self, entry: tuple[str, Any]) -> None:
        while True:
            self.check()
            try:
                self._queue.put(entry, timeout=0.2)
                return
            except queue.Full:
                continue

    def sync(self) -> None:
        """Wait until everything queued so far is written."""
        done = threading.Event()
        self._put(("sync", done))
        while not done.wait(0.2):
            self.check()
        self.check()

    def close(self) -> None:
        """Write what is left, stop the thread, and raise what stopped it, if anything did."""
        self._put(("end", None))
        self._thread.join()
        self.check()

    def abort(self) -> None:
        """Stop without writing what waits."""
        self._stop = True
        while self._thread.is_alive():
            try:
                self._queue.put(("end", None), timeout=0.2)
                break
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()
        self._thread.join()

    def _serve(self) -> None:
        batch: list[T] = []
        size, deadline = 0, 0.0
        try:
            while not self._stop:
                try:
                    kind, value = self._queue.get(timeout=max(0.0, deadline - time.monotonic()) if batch else None)
                except queue.Empty:
                    kind, value = "due", None  # the oldest item has waited long enough
                if kind == "item":
                    batch.append(value)
                    size += self._size(value)
                    deadline = deadline if len(batch) > 1 else time.monotonic() + self._wait
                    if size < self._limit:
                        continue
                elif kind == "call":
                    value()
                    continue
                if batch and not self._stop and not self._stopped():
                    self._write(batch)
                batch, size = [], 0
                if kind == "sync":
                    value.set()
                elif kind == "end":
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.error = exc

"""The reader pool: results from worker processes; a crashing or hanging reader costs only its own file."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rag.parse_pool import ParseJob, ParsePool, parse_file


class CrashingPath(type(Path())):  # type: ignore[misc]
    """A path whose unpickling kills the worker that receives it, as a reader crashing in C code would."""

    def __reduce__(self):
        return (os._exit, (3,))


class HangingPath(type(Path())):  # type: ignore[misc]
    """A path whose unpickling blocks the worker, as a reader stuck in a loop would."""

    def __reduce__(self):
        return (time.sleep, (60,))


def test_results_unchanged_and_errors(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_text("alpha text")
    first = parse_file(ParseJob(a))
    assert first.sections and first.sha256 and first.error is None and not first.unchanged
    assert parse_file(ParseJob(a, known_sha256=first.sha256)).unchanged
    assert parse_file(ParseJob(tmp_path / "gone.txt")).error[0] == "unreadable"
    assert parse_file(ParseJob(a, max_file_bytes=3)).error[0] == "too_large"


def test_pool_reads_many_files_in_workers(tmp_path: Path) -> None:
    paths = []
    for i in range(12):
        p = tmp_path / f"f{i}.md"
        p.write_text(f"# Title {i}\n\nBody {i}.")
        paths.append(p)
    results = list(ParsePool(2, prefetch=1).run(ParseJob(p) for p in paths))
    assert sorted(r.path.name for r in results) == sorted(p.name for p in paths)
    assert all(r.sections and r.sections[0].heading.startswith("Title") for r in results)


def test_a_crashing_or_hanging_reader_costs_only_its_file(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("still read")
    jobs = [
        ParseJob(CrashingPath(tmp_path / "crash.pdf")),
        ParseJob(good),
        ParseJob(HangingPath(tmp_path / "hang.pdf")),
        ParseJob(good),
    ]
    t0 = time.monotonic()
    results = {r.path.name + str(i): r for i, r in enumerate(ParsePool(2, timeout=1.5).run(jobs))}
    assert time.monotonic() - t0 < 20
    by_kind = sorted((r.path.name, r.error[0] if r.error else "ok") for r in results.values())
    assert by_kind == [("crash.pdf", "corrupt"), ("good.txt", "ok"), ("good.txt", "ok"), ("hang.pdf", "timeout")]
    crash = next(r for r in results.values() if r.path.name == "crash.pdf")
    assert "crashed" in crash.error[1] and "exit code 3" in crash.error[1]


def test_closing_early_stops_the_workers(tmp_path: Path) -> None:
    paths = []
    for i in range(6):
        p = tmp_path / f"f{i}.txt"
        p.write_text("x")
        paths.append(p)
    pool = ParsePool(2)
    it = pool.run(ParseJob(p) for p in paths)
    next(it)
    it.close()  # what a Cancelled ingest does
    assert pool._thread is not None and not pool._thread.is_alive()


def test_without_worker_processes_files_are_read_in_the_pool_thread(tmp_path: Path, monkeypatch) -> None:
    import rag.parse_pool as pp

    def refuse(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(pp.subprocess, "Popen", refuse)
    paths = []
    for i in range(3):
        p = tmp_path / f"f{i}.txt"
        p.write_text(f"text {i}")
        paths.append(p)
    results = list(ParsePool(2).run(ParseJob(p) for p in paths))
    assert sorted(r.path.name for r in results) == ["f0.txt", "f1.txt", "f2.txt"]
    assert all(r.sections for r in results)


def _long_line(path: Path, megabytes: int) -> Path:
    """One line of `megabytes` MB ending in an astral character, so its str takes 4 bytes a character."""
    path.write_bytes(b"word " * (megabytes * 1024 * 1024 // 5) + "\U0001f525".encode())
    return path


def test_a_file_that_needs_more_memory_than_the_cap_is_too_large(tmp_path: Path) -> None:
    big = _long_line(tmp_path / "line.txt", 48)  # 48 MB of bytes, about 200 MB once decoded
    good = tmp_path / "good.txt"
    good.write_text("read after the big one")
    cap = 160 << 20
    results = {r.path.name: r for r in ParsePool(1, memory_limit=cap).run([ParseJob(big), ParseJob(good)])}
    assert results["line.txt"].error == (
        "too_large", "line.txt is too large: reading it exceeded the memory limit of 160 MiB."
    )
    # The same worker goes on to the next file, and never held more than the cap.
    assert results["good.txt"].sections and results["good.txt"].sections[0].text == "read after the big one"
    assert 0 < results["good.txt"].peak_rss <= cap


def test_without_a_cap_the_same_file_is_read(tmp_path: Path) -> None:
    big = _long_line(tmp_path / "line.txt", 48)
    (result,) = ParsePool(1, memory_limit=None).run([ParseJob(big)])
    assert result.error is None and result.sections[0].text.endswith("\U0001f525")
    assert result.peak_rss > 160 << 20


def test_a_reader_aborting_for_memory_is_reported_as_too_large(tmp_path: Path) -> None:
    from tests.hostile_corpus import deflate_bomb, one_page_pdf

    blob = deflate_bomb(256 << 20, b"(A) Tj ")  # a content stream PDFium must inflate whole, in C++
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(one_page_pdf(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(blob) + blob + b"\nendstream"))
    (result,) = ParsePool(1, memory_limit=192 << 20).run([ParseJob(bomb)])
    assert result.error is not None
    kind, message = result.error
    assert kind == "too_large" and "memory limit of 192 MiB" in message


def test_workers_run_with_one_thread_for_numeric_libraries(tmp_path: Path) -> None:
    # OpenBLAS would otherwise reserve a buffer per core in every worker that imports numpy (openpyxl does).
    from rag.parse_pool import _WORKER_ENV

    assert _WORKER_ENV["OPENBLAS_NUM_THREADS"] == "1"


# The writer thread at the other end of ingestion's pipeline.
def test_batch_thread_writes_in_batches_by_size_and_age_in_order_with_calls() -> None:
    from rag.parse_pool import BatchThread

    batches: list[list[int]] = []
    order: list[str] = []

    def write(batch: list[int]) -> None:
        batches.append(list(batch))
        order.append(f"batch{batch}")

    t = BatchThread(write, limit=10, size=lambda n: n, wait=0.3)
    for n in (4, 5, 1):  # 4 + 5 + 1 reaches the limit: one batch
        t.put(n)
    t.call(lambda: order.append("call"))  # runs in order, after what came before it
    t.put(2)  # alone: written once it has waited `wait` seconds
    deadline = time.monotonic() + 10
    while len(batches) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert batches == [[4, 5, 1], [2]] and order == ["batch[4, 5, 1]", "call", "batch[2]"]
    t.put(3)
    t.sync()  # written now, not after the wait
    assert batches[-1] == [3]
    t.close()
    assert not t._thread.is_alive()


def test_batch_thread_raises_its_failure_in_the_caller_and_abort_drops_what_waits() -> None:
    import pytest

    from rag.parse_pool import BatchThread

    def fail(batch: list[int]) -> None:
        raise RuntimeError(f"cannot write {batch}")

    t = BatchThread(fail, limit=1, size=lambda n: 1)
    t.put(1)
    with pytest.raises(RuntimeError, match="cannot write"):
        for _ in range(100):  # the next put (or sync, or close) raises what stopped the thread
            t.put(2)
            time.sleep(0.02)
    written: list[list[int]] = []
    t = BatchThread(written.append, limit=100, size=lambda n: 1, wait=60)
    t.put(1)
    t.abort()
    assert written == [] and not t._thread.is_alive()

"""Serial lanes for the API's model work, and the plumbing that carries a job's text back to its request.

The chat model and the embedder are single stateful resources: each has one lane, a one-worker queue, so
concurrent requests wait their turn in arrival order and never share a generation. A request's job runs
on the lane's thread and reports text pieces and its outcome to the event loop; a client that leaves
cancels its job within a token.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from app.openai_format import ApiError
from inference.errors import Cancelled


class Job:
    """One request's model work: it runs on a lane thread and reports text pieces and its outcome to the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.cancelled = threading.Event()
        self._loop = loop

    def emit(self, kind: str, value: Any = None) -> None:
        """Hand an event to the request's coroutine ("token", "done" or "error")."""
        try:
            self._loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self.cancelled.set()

    async def outcome(self) -> Any:
        """The result, skipping text pieces; raises the job's error."""
        while True:
            kind, value = await self.events.get()
            if kind == "done":
                return value
            if kind == "error":
                raise value


class SerialLane:
    """One worker thread that runs jobs in arrival order, with a bound on how many may wait."""

    def __init__(self, name: str, *, max_waiting: int, executor: Executor | None = None) -> None:
        self.name = name
        self.max_waiting = max_waiting
        # An executor passed in is someone else's one-worker queue (the GUI's model worker): share it, never shut it.
        self._own = executor is None
        self._pool = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"hearth-api-{name}")
        self._lock = threading.Lock()
        self._jobs: set[Job] = set()
        self._closed = False

    def start(self, job: Job, work: Callable[[], Any]) -> None:
        """Queue `work` for `job`; its result or error arrives as the job's last event."""
        with self._lock:
            if self._closed:
                raise ApiError(503, "Hearth's API is shutting down.", type="server_error")
            if len(self._jobs) >= self.max_waiting:
                raise ApiError(503, f"Hearth is busy: {len(self._jobs)} requests are waiting for the {self.name}. "
                                    "Try again shortly.", type="server_error", code="server_busy")
            self._jobs.add(job)

        def run() -> None:
            try:
                if job.cancelled.is_set():
                    raise Cancelled("The client left before its turn.")
                job.emit("done", work())
            except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the request
                job.emit("error", exc)
            finally:
                with self._lock:
                    self._jobs.discard(job)

        self._pool.submit(run)

    def cancel_all(self) -> None:
        """Stop the running job within a token and skip the waiting ones."""
        with self._lock:
            self._closed = True
            for job in self._jobs:
                job.cancelled.set()

    def close(self) -> None:
        """Cancel everything and wait for the worker to finish."""
        self.cancel_all()
        if self._own:
            self._pool.shutdown(wait=True)


async def watch_disconnect(receive: Callable[[], Awaitable[dict[str, Any]]], job: Job) -> None:
    """Cancel the job when the client goes away (the body has been read, so only disconnects arrive)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            job.cancelled.set()
            return


class EventStream:
    """An ASGI response that sends server-sent events and always runs `on_close`."""

    def __init__(self, chunks: AsyncIterator[bytes], *, on_close: Callable[[], None]) -> None:
        self.chunks = chunks
        self.on_close = on_close

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]})
        try:
            async for data in self.chunks:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the client went away mid-stream
            pass
        finally:
            self.on_close()
            await self.chunks.aclose()  # type: ignore[attr-defined]

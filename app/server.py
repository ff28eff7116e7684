"""Hearth's local HTTP API: OpenAI-compatible chat, embeddings and model list over the office's documents.

    GET  /v1/models                 the chat models, one `hearth-rag:<workspace>` model per workspace
                                    (`hearth-rag` alone is the served workspace) and `hearth-embed`
    GET  /v1/models/{id}            one of them
    POST /v1/chat/completions       a plain chat model, or, for a `hearth-rag` model, an answer grounded in
                                    the workspace's documents with its sources in an extra `sources` field;
                                    `stream: true` sends server-sent events as OpenAI does
    POST /v1/embeddings             the workspace's embedder (float or base64 vectors)
    GET  /health                    {"status": "ok"}

Errors use OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, and its status codes.
Every request that runs a model is a job on one serial lane (the chat model is a single stateful
resource; the embedder has its own lane), so concurrent requests wait their turn in arrival order and
never share a generation. Model ids are looked up in the listing only: no request names a file.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import socket
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.api_keys import KEY_FILE_NAME, ApiKeyFile, is_loopback, key_digest, key_matches, needs_api_key
from app.openai_format import (
    ApiError, ChatRequest, Reply, StopFilter, completion_json, embeddings_json, error_response, is_int, model_json,
    not_found, parse_chat_request, read_json, sse_event, translate, usage_json,
)
from inference.errors import Cancelled, UsageError
from rag.service import DEFAULT_WORKSPACE, Hearth, check_workspace

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8642
RAG_MODEL = "hearth-rag"  # `hearth-rag` is the served workspace, `hearth-rag:NAME` any workspace
EMBED_MODEL = "hearth-embed"
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class ServerConfig:
    """How the API listens and what it accepts."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workspace: str = DEFAULT_WORKSPACE  # what `hearth-rag` and the embeddings answer from
    api_key_sha256: str | None = None  # when set, every request must carry the key; required off loopback
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the API; none by default
    max_body_bytes: int = 1 << 20
    max_waiting: int = 64  # requests queued or running per lane before new ones get 503
    max_messages: int = 256
    max_embedding_inputs: int = 256
    default_max_tokens: int = 512  # reply length for plain chat when the request names none


# Models ---------------------------------------------------------------------------------------------


class ModelCatalog:
    """The chat models the API offers: Hearth's own plus the model library's; loads one other on demand."""

    def __init__(self, hearth: Hearth) -> None:
        self.hearth = hearth
        self._other: tuple[str, Any] | None = None  # (id, loaded model): at most one besides Hearth's own
        try:
            self._library = hearth.library  # the service's model library, shared with the GUI
        except (AttributeError, ImportError):  # pragma: no cover - a service without a library
            self._library = None

    @property
    def default_id(self) -> str:
        """The id of the model Hearth answers with."""
        from inference.models import DEFAULT_CHAT_MODEL

        return self.hearth.config.chat_model or DEFAULT_CHAT_MODEL

    def chat_models(self) -> list[tuple[str, int]]:
        """(id, created) of every usable chat model, Hearth's own first."""
        out: dict[str, int] = {self.default_id: 0}
        if self._library is not None:
            for m in self._library.models():
                if m.error is None and m.key not in out:
                    out[m.key] = _mtime(m.path)
        else:  # pragma: no cover
            from inference.models import CHAT_MODELS

            for name in CHAT_MODELS:
                out.setdefault(name, 0)
            folder = self.hearth.config.models_dir
            for path in sorted(folder.glob("*.gguf")) if folder.is_dir() else []:
                out.setdefault(path.name, _mtime(path))
        return list(out.items())

    def load(self, model_id: str) -> Any:
        """The loaded chat model for a listed id; call on the model lane only."""
        if model_id == self.default_id:
            return self.hearth.chat_model
        if self._other is not None and self._other[0] == model_id:
            return self._other[1]
        if model_id not in dict(self.chat_models()):
            raise not_found(model_id)
        if self._other is not None:  # free the previous model's memory before loading the next
            old, self._other = self._other[1], None
            close = getattr(old, "close", None)
            if close is not None:
                close()
            del old
            gc.collect()
        from inference.llm import LlamaCppModel

        cfg = self.hearth.config
        path = self.hearth.resolve_model_path(model_id)
        layers = cfg.n_gpu_layers if cfg.n_gpu_layers is not None else self.hearth.plan_gpu_layers(path)
        model = LlamaCppModel(path, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, n_gpu_layers=layers)
        self._other = (model_id, model)
        return model


def _mtime(path: Path | None) -> int:
    try:
        return int(path.stat().st_mtime) if path is not None else 0
    except OSError:
        return 0


# Jobs on a serial lane ------------------------------------------------------------------------------


class _Job:
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
        self._jobs: set[_Job] = set()
        self._closed = False

    def start(self, job: _Job, work: Callable[[], Any]) -> None:
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


# The API --------------------------------------------------------------------------------------------


class HearthApi:
    """The endpoints, bound to one Hearth service."""

    def __init__(self, hearth: Hearth, config: ServerConfig, *, chat_executor: Executor | None = None) -> None:
        self.hearth = hearth
        self.config = config
        self.catalog = ModelCatalog(hearth)
        self.chat_lane = SerialLane("chat model", max_waiting=config.max_waiting, executor=chat_executor)
        self.embed_lane = SerialLane("embedder", max_waiting=config.max_waiting)

    def cancel_all(self) -> None:
        """Stop every running and waiting job (on shutdown)."""
        self.chat_lane.cancel_all()
        self.embed_lane.cancel_all()

    def close(self) -> None:
        """Stop and wait for both lanes."""
        self.chat_lane.close()
        self.embed_lane.close()

    # Model ids
    async def _workspaces(self) -> list[str]:
        names = await asyncio.to_thread(self.hearth.manifest.workspaces)
        return sorted(set(names) | {self.config.workspace})

    async def _rag_workspace(self, model: str) -> str | None:
        """The workspace a `hearth-rag` id names; None for other ids; 404 for an unknown workspace."""
        if model == RAG_MODEL:
            return self.config.workspace
        if not model.startswith(RAG_MODEL + ":"):
            return None
        name = model[len(RAG_MODEL) + 1 :]
        if name not in await self._workspaces():
            raise not_found(model)
        return name

    async def _model_list(self) -> list[dict[str, Any]]:
        chat = await asyncio.to_thread(self.catalog.chat_models)
        out = [model_json(mid, created, "chat") for mid, created in chat]
        out.append(model_json(RAG_MODEL, 0, "rag", workspace=self.config.workspace))
        out += [model_json(f"{RAG_MODEL}:{ws}", 0, "rag", workspace=ws) for ws in await self._workspaces()]
        out.append(model_json(EMBED_MODEL, 0, "embedding"))
        return out

    # Endpoints
    async def models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": await self._model_list()})

    async def model(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        wanted = request.path_params["model_id"]
        for m in await self._model_list():
            if m["id"] == wanted:
                return JSONResponse(m)
        raise not_found(wanted)

    async def health(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok"})

    async def chat_completions(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        req = parse_chat_request(await read_json(request, self.config.max_body_bytes),
                                 max_messages=self.config.max_messages)
        if req.model == EMBED_MODEL:
            raise ApiError(400, f"`{EMBED_MODEL}` is an embedding model; use /v1/embeddings.", param="model")
        workspace = await self._rag_workspace(req.model)
        if workspace is None and req.model not in dict(await asyncio.to_thread(self.catalog.chat_models)):
            raise not_found(req.model)
        if workspace is not None and req.messages[-1]["role"] != "user":
            raise ApiError(400, "The last message must be the user's question.", param="messages")
        job = _Job(asyncio.get_running_loop())
        if workspace is not None:
            work = functools.partial(self._grounded, req, workspace, job)
        else:
            work = functools.partial(self._plain, req, job)
        watcher = asyncio.ensure_future(_watch_disconnect(request.receive, job))
        try:
            self.chat_lane.start(job, work)
            cid, created = "chatcmpl-" + uuid.uuid4().hex, int(time.time())
            if not req.stream:
                reply = await job.outcome()
                watcher.cancel()
                return JSONResponse(completion_json(req, cid, created, reply))
            # The first event decides: an error before any text is a plain HTTP error response.
            first = await job.events.get()
            if first[0] == "error":
                raise first[1]
        except BaseException:
            watcher.cancel()
            job.cancelled.set()
            raise

        def close() -> None:
            watcher.cancel()
            job.cancelled.set()

        return _EventStream(_chat_chunks(req, cid, created, job, first), on_close=close)

    async def embeddings(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await read_json(request, self.config.max_body_bytes)
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ApiError(400, "You must provide a model parameter.", param="model")
        for_workspace = await self._rag_workspace(model) is not None  # 404 for an unknown workspace
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            raise ApiError(400, "'input' must be a string or a non-empty array of strings.", param="input")
        if not all(isinstance(t, str) for t in texts):
            raise ApiError(400, "'input' must hold text; token arrays are not supported.", param="input")
        if len(texts) > self.config.max_embedding_inputs:
            raise ApiError(400, f"At most {self.config.max_embedding_inputs} inputs are accepted.", param="input")
        if any(not t.strip() for t in texts):
            raise ApiError(400, "'input' cannot contain empty strings.", param="input")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise ApiError(400, "'encoding_format' must be float or base64.", param="encoding_format")
        dims = body.get("dimensions")
        if dims is not None and not is_int(dims):
            raise ApiError(400, "'dimensions' must be an integer.", param="dimensions")

        def work() -> dict[str, Any]:
            embedder = self.hearth.embedder
            if model not in (EMBED_MODEL, embedder.name) and not for_workspace:
                raise not_found(model)
            vectors = embedder.embed(texts)
            if dims is not None and dims != vectors.shape[1]:
                raise ApiError(400, f"This embedder makes {vectors.shape[1]}-dimensional vectors only.",
                               param="dimensions")
            tokens = sum(embedder.count_tokens(t) for t in texts)
            return embeddings_json(model, vectors, fmt, tokens)

        job = _Job(asyncio.get_running_loop())
        self.embed_lane.start(job, work)
        return JSONResponse(await job.outcome())

    # Work on the chat lane
    def _plain(self, req: ChatRequest, job: _Job) -> Reply:
        model = self.catalog.load(req.model)
        prompt_tokens = sum(model.count_tokens(m["content"]) + 4 for m in req.messages)
        room = model.n_ctx - prompt_tokens
        max_tokens = req.max_tokens or min(self.config.default_max_tokens, room)
        if max_tokens > room or max_tokens < 1:
            raise ApiError(
                400,
                f"This model's maximum context length is {model.n_ctx} tokens. However, you requested about "
                f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
                "completion). Please reduce the length of the messages or completion.",
                code="context_length_exceeded", param="messages",
            )
        stopper = StopFilter(req.stop)
        pieces = 0
        stream = model.stream(req.messages, max_tokens=max_tokens, temperature=req.temperature,
                              cancel=job.cancelled.is_set)
        try:
            for piece in stream:
                pieces += 1
                out = stopper.feed(piece)
                if out and req.stream:
                    job.emit("token", out)
                if stopper.hit:
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # stops llama.cpp's generator at a stop sequence
        tail = stopper.flush()
        if tail and req.stream:
            job.emit("token", tail)
        completion = model.count_tokens(stopper.text) if stopper.text else 0
        counted = getattr(model, "last_usage", None)  # llama.cpp's own counts, when the model keeps them
        if isinstance(counted, dict) and "completion_tokens" in counted:
            prompt_tokens = int(counted.get("prompt_tokens", prompt_tokens))
            completion = int(counted["completion_tokens"])
        # The protocol yields text, not tokens: pieces can join several tokens, so count both ways.
        finish = "length" if max(pieces, completion) >= max_tokens and not stopper.hit else "stop"
        return Reply(stopper.text, finish, prompt_tokens, completion)

    def _grounded(self, req: ChatRequest, workspace: str, job: _Job) -> Reply:
        from rag.answer import Turn

        question = req.messages[-1]["content"]
        history = [m["content"] for m in req.messages[:-1] if m["role"] == "user"]
        turns = [Turn(q["content"], a["content"]) for q, a in zip(req.messages[:-1], req.messages[1:-1])
                 if q["role"] == "user" and a["role"] == "assistant"]
        on_token = (lambda piece: job.emit("token", piece)) if req.stream else None
        result = self.hearth.ask(question, k=req.k, workspace=workspace, on_token=on_token,
                                 cancel=job.cancelled.is_set, history=history, turns=turns)
        full = result.to_json()
        sources = full["sources"]
        # The supporting quotes, the answer with citations from them, and which sentences they support.
        support = {k: full[k] for k in ("answer", "quotes", "sentences", "fallback") if k in full}
        usage = getattr(result, "usage", None) or {}
        if "prompt_tokens" in usage and "completion_tokens" in usage:
            prompt, completion = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
        else:  # a model that does not count: estimate with its tokenizer, or words when none was needed
            count = self.hearth.chat_model.count_tokens if result.sources else (lambda t: len(t.split()))
            prompt = count(question) + sum(count(s["text"]) for s in sources)
            completion = count(result.text)
        return Reply(result.text, "stop", prompt, completion, sources, workspace, support or None)


async def _chat_chunks(
    req: ChatRequest, cid: str, created: int, job: _Job, first: tuple[str, Any]
) -> AsyncIterator[bytes]:
    """The server-sent events of a streamed completion, as OpenAI sends them."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        obj: dict[str, Any] = {
            "id": cid, "object": "chat.completion.chunk", "created": created, "model": req.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if req.include_usage:
            obj["usage"] = None
        obj.update(extra)
        return sse_event(obj)

    yield chunk({"role": "assistant", "content": ""})
    kind, value = first
    while True:
        if kind == "token":
            yield chunk({"content": value})
        elif kind == "done":
            yield chunk({}, value.finish, **value.extra())
            if req.include_usage:
                yield sse_event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": req.model,
                              "system_fingerprint": None, "choices": [], "usage": usage_json(value)})
            yield b"data: [DONE]\n\n"
            return
        else:
            if not job.cancelled.is_set():
                yield sse_event(translate(value).body())
            return
        kind, value = await job.events.get()


async def _watch_disconnect(receive: Callable[[], Awaitable[dict[str, Any]]], job: _Job) -> None:
    """Cancel the job when the client goes away (the body has been read, so only disconnects arrive)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            job.cancelled.set()
            return


class _EventStream:
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


class _Guard:
    """ASGI middleware: the API key when one is configured, and loopback host names when on loopback."""

    def __init__(self, app: Any, *, key_sha256: str | None, host: str) -> None:
        self.app = app
        self.key_sha256 = key_sha256
        self.loopback = is_loopback(host)
        self.hosts = _LOOPBACK_NAMES | {host.strip("[]").lower()}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        error = None
        host = headers.get("host")
        if self.loopback and host is not None and _host_name(host) not in self.hosts:
            # A web page that rebinds its own name to 127.0.0.1 still sends its name here.
            error = ApiError(403, "This server only answers requests addressed to localhost.", code="invalid_host")
        elif self.key_sha256 is not None:
            scheme, _, presented = headers.get("authorization", "").partition(" ")
            if not presented.strip():
                error = ApiError(401, "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'.",
                                 code="invalid_api_key")
            elif scheme.lower() != "bearer" or not key_matches(presented.strip(), self.key_sha256):
                error = ApiError(401, "Incorrect API key provided.", code="invalid_api_key")
        if error is None:
            await self.app(scope, receive, send)
        else:
            await error_response(error)(scope, receive, send)


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def create_app(hearth: Hearth, config: ServerConfig = ServerConfig(), *, chat_executor: Executor | None = None) -> Any:
    """The ASGI application serving `hearth`; raises UsageError if the config breaks the key policy.

    `chat_executor`: a one-worker executor that already runs this Hearth's model calls (the GUI's), so
    answers asked in the window and through the API take turns on the one model; None makes its own.
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.routing import Route

    check_workspace(config.workspace)
    if needs_api_key(config.host) and config.api_key_sha256 is None:
        raise UsageError(f"Listening on {config.host} makes the API reachable from other machines, so it needs "
                         "an API key.", hint="Use `hearth serve --host ...`, which makes one, or listen on 127.0.0.1.")
    api = HearthApi(hearth, config, chat_executor=chat_executor)

    def endpoint(fn: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        @functools.wraps(fn)
        async def wrapper(request: Any) -> Any:
            try:
                return await fn(request)
            except Exception as exc:  # noqa: BLE001 - every failure becomes an OpenAI-shaped error
                return error_response(translate(exc))
        return wrapper

    async def http_error(request: Any, exc: Any) -> Any:
        status = exc.status_code
        message = {404: f"Unknown path {request.url.path}.", 405: f"{request.method} is not allowed here."}
        response = error_response(ApiError(status, message.get(status, str(exc.detail)),
                                            code="not_found" if status == 404 else None))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(api.close)

    middleware = []
    if config.cors_origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(config.cors_origins),
                                     allow_methods=["GET", "POST"], allow_headers=["authorization", "content-type"]))
    middleware.append(Middleware(_Guard, key_sha256=config.api_key_sha256, host=config.host))
    app = Starlette(
        routes=[
            Route("/v1/models", endpoint(api.models), methods=["GET"]),
            Route("/v1/models/{model_id:path}", endpoint(api.model), methods=["GET"]),
            Route("/v1/chat/completions", endpoint(api.chat_completions), methods=["POST"]),
            Route("/v1/embeddings", endpoint(api.embeddings), methods=["POST"]),
            Route("/health", endpoint(api.health), methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.hearth_api = api
    return app


# Running it -----------------------------------------------------------------------------------------


def secure_config(
    data_dir: Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workspace: str = DEFAULT_WORKSPACE,
    new_key: bool = False,
    cors_origins: Sequence[str] = (),
) -> tuple[ServerConfig, str | None]:
    """A config that follows the key policy, and the new API key when one was made (show it once)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"{port} is not a port number.")
    digest, key = None, None
    if needs_api_key(host) or new_key:
        keys = ApiKeyFile(Path(data_dir) / KEY_FILE_NAME)
        if new_key:
            key = keys.create()
            digest = key_digest(key)
        else:
            digest, key = keys.ensure()
    config = ServerConfig(host=host, port=port, workspace=check_workspace(workspace),
                          api_key_sha256=digest if needs_api_key(host) else None,
                          cors_origins=tuple(cors_origins))
    return config, key


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port (0 picks a free port); UsageError when the address is taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)  # connections made before the server runs wait in the backlog, not refused
    except OSError as exc:
        raise UsageError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}.",
                         hint="Another program may use this port; choose another with --port.") from exc
    return sock


def base_url(host: str, port: int) -> str:
    """The OpenAI base URL for an address, e.g. http://127.0.0.1:8642/v1."""
    return f"http://[{host}]:{port}/v1" if ":" in host else f"http://{host}:{port}/v1"


class ApiServer:
    """The API served by uvicorn on a background thread (the GUI's toggle and the tests use it)."""

    def __init__(self, app: Any, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 log_level: str = "warning") -> None:
        self.app = app
        self.host = host
        self.port = port
        self.log_level = log_level
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @classmethod
    def for_hearth(cls, hearth: Hearth, config: ServerConfig, *, chat_executor: Executor | None = None,
                   **kwargs: Any) -> ApiServer:
        """A server for `hearth` that listens where `config` says (see create_app for `chat_executor`)."""
        return cls(create_app(hearth, config, chat_executor=chat_executor), host=config.host, port=config.port,
                   **kwargs)

    @property
    def url(self) -> str:
        """The OpenAI base URL, e.g. http://127.0.0.1:8642/v1."""
        return base_url(self.host, self.port)

    def start(self, *, timeout: float = 15.0) -> ApiServer:
        """Listen and serve on a thread; returns once requests are accepted."""
        import uvicorn

        sock = bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(_uvicorn_config(self.app, self.log_level))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="hearth-api", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise UsageError(f"The API server did not start on {self.host}:{self.port}.")
            time.sleep(0.02)
        return self

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop answering (running generations are cancelled) and wait for the thread."""
        api = getattr(getattr(self.app, "state", None), "hearth_api", None)
        if api is not None:
            api.cancel_all()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = self._thread = None

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _uvicorn_config(app: Any, log_level: str) -> Any:
    import uvicorn

    return uvicorn.Config(app, log_level=log_level, lifespan="on", timeout_graceful_shutdown=5,
                          limit_concurrency=512, server_header=False, date_header=False)


def serve_forever(hearth: Hearth, config: ServerConfig, *, log_level: str = "info") -> None:
    """Serve in the foreground until Ctrl-C (`hearth serve`)."""
    import uvicorn

    app = create_app(hearth, config)
    sock = bind(config.host, config.port)
    print(f"Hearth API on {base_url(config.host, sock.getsockname()[1])} (workspace {config.workspace!r}; "
          f"{'API key required' if config.api_key_sha256 else 'loopback only, no key'}). Ctrl-C stops it.",
          file=sys.stderr)
    uvicorn.Server(_uvicorn_config(app, log_level)).run(sockets=[sock])


def serve_command(hearth: Hearth, args: Any) -> int:
    """`hearth serve`: make a key if the address needs one, show it once, then serve until Ctrl-C."""
    config, key = secure_config(hearth.config.data_dir, host=args.host, port=args.port, workspace=args.workspace,
                                new_key=args.new_key, cors_origins=args.cors_origin)
    if key is not None:
        print(f"New API key (shown only this once; clients send it as 'Authorization: Bearer KEY'):\n{key}",
              file=sys.stderr)
    elif config.api_key_sha256 is not None:
        print("Clients must send the API key made earlier (lost it? `hearth serve --new-key` replaces it).",
              file=sys.stderr)
    serve_forever(hearth, config)
    return 0

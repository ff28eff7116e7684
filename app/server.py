"""Hearth's local HTTP API: OpenAI-compatible chat, embeddings and model list over the office's documents.

    GET  /v1/models                 the chat models, one `hearth-rag:<workspace>` model per workspace
                                    (`hearth-rag` alone is the served workspace) and `hearth-embed`
    GET  /v1/models/{id}            one of them
    POST /v1/chat/completions       a plain chat model, or, for a `hearth-rag` model, an answer grounded in
                                    the workspace's documents with its sources in an extra `sources` field;
                                    `stream: true` sends server-sent events as OpenAI does
    POST /v1/embeddings             the workspace's embedder (float or base64 vectors)
    POST /v1/compare                what changed: {"old", "new"} (two indexed documents) or {"old", "previous":
                                    true, "version"?}, optional "workspace"; answers as `hearth compare --json`
    GET  /health                    {"status": "ok"}

Errors use OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, and its status codes, and
never carry a local path. Every request needs the API key (`Authorization: Bearer KEY`) unless the server
was started with `--no-key` on loopback. This module builds the application and runs it; the parts live in

    app.api_auth        the key, the key rules, the Host allow-list guard, ServerConfig
    app.api_models      the model ids and the chat models behind them
    app.api_lanes       the serial lanes every model request queues on
    app.api_endpoints   the endpoints
    app.openai_format   OpenAI's wire format and errors
"""

from __future__ import annotations

import asyncio
import functools
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from app.api_auth import DEFAULT_HOST, DEFAULT_PORT, RequestGuard, ServerConfig, check_config, secure_config
from app.api_endpoints import HearthApi
from app.api_lanes import Job, SerialLane
from app.api_models import EMBED_MODEL, RAG_MODEL
from app.openai_format import ApiError, error_response, translate
from inference.errors import UsageError

if TYPE_CHECKING:
    from rag.service import Hearth

# Importable from here as before: the GUI, the benchmarks and the tests build servers with these.
__all__ = [
    "DEFAULT_HOST", "DEFAULT_PORT", "EMBED_MODEL", "RAG_MODEL", "ApiServer", "Job", "SerialLane", "ServerConfig",
    "base_url", "bind", "create_app", "secure_config", "serve_command", "serve_forever",
]


def create_app(hearth: Hearth, config: ServerConfig = ServerConfig(), *, chat_executor: Executor | None = None) -> Any:
    """The ASGI application serving `hearth`; UsageError if the config breaks the key rules (see api_auth).

    A config without a key is served as it is (on loopback only): `secure_config` is what requires one.

    `chat_executor`: a one-worker executor that already runs this Hearth's model calls (the GUI's), so
    answers asked in the window and through the API take turns on the one model; None makes its own.
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.routing import Route

    check_config(config)
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
    middleware.append(Middleware(RequestGuard, key_sha256=config.api_key_sha256, host=config.host))
    app = Starlette(
        routes=[
            Route("/v1/models", endpoint(api.models), methods=["GET"]),
            Route("/v1/models/{model_id:path}", endpoint(api.model), methods=["GET"]),
            Route("/v1/chat/completions", endpoint(api.chat_completions), methods=["POST"]),
            Route("/v1/embeddings", endpoint(api.embeddings), methods=["POST"]),
            Route("/v1/compare", endpoint(api.compare), methods=["POST"]),
            Route("/health", endpoint(api.health), methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.hearth_api = api
    return app


# Running it -----------------------------------------------------------------------------------------


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
    """`hearth serve`: apply the administrator's policy and the key rules, show a new key once, serve until Ctrl-C.

    A key is required on every address; the first run makes one. `--no-key` serves without one on
    loopback only, and never where the policy says "key-only"; "forbidden" refuses to serve at all.
    """
    from app.policy import api_server_config, load_policy

    policy = getattr(args, "policy", None) or load_policy()
    config, key = api_server_config(policy, hearth.config.data_dir, host=args.host, port=args.port,
                                    workspace=args.workspace, new_key=args.new_key, no_key=args.no_key,
                                    cors_origins=args.cors_origin)
    if key is not None:
        print("New API key (shown only this once; clients send it as 'Authorization: Bearer KEY', or as the "
              f"api_key of an OpenAI client):\n{key}", file=sys.stderr)
    elif config.api_key_sha256 is not None:
        print("Clients must send the API key made earlier (lost it? `hearth serve --new-key` replaces it).",
              file=sys.stderr)
    else:
        print("No API key: every program and account on this computer can ask about your documents.",
              file=sys.stderr)
    serve_forever(hearth, config)
    return 0

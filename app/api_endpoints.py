"""The API's endpoints, bound to one Hearth service: the model list, chat completions, embeddings, compare, health.

Validation and response shapes come from `app.openai_format`; model ids from `app.api_models`; every
request that runs a model is a job on a serial lane (`app.api_lanes`).
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from app.api_lanes import EventStream, Job, SerialLane, watch_disconnect
from app.api_models import EMBED_MODEL, ModelCatalog
from app.openai_format import (
    ApiError, ChatRequest, Reply, StopFilter, completion_json, embeddings_json, is_int, not_found,
    parse_chat_request, read_json, sse_event, translate, usage_json,
)

if TYPE_CHECKING:
    from app.api_auth import ServerConfig
    from rag.service import Hearth


class HearthApi:
    """The endpoints, bound to one Hearth service."""

    def __init__(self, hearth: Hearth, config: ServerConfig, *, chat_executor: Executor | None = None) -> None:
        self.hearth = hearth
        self.config = config
        self.catalog = ModelCatalog(hearth, workspace=config.workspace)
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

    # Endpoints
    async def models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": await asyncio.to_thread(self.catalog.listing)})

    async def model(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        wanted = request.path_params["model_id"]
        for m in await asyncio.to_thread(self.catalog.listing):
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
        workspace = await asyncio.to_thread(self.catalog.rag_workspace, req.model)
        if workspace is None and req.model not in dict(await asyncio.to_thread(self.catalog.chat_models)):
            raise not_found(req.model)
        if workspace is not None and req.messages[-1]["role"] != "user":
            raise ApiError(400, "The last message must be the user's question.", param="messages")
        job = Job(asyncio.get_running_loop())
        if workspace is not None:
            work = functools.partial(self._grounded, req, workspace, job)
        else:
            work = functools.partial(self._plain, req, job)
        watcher = asyncio.ensure_future(watch_disconnect(request.receive, job))
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

        return EventStream(_chat_chunks(req, cid, created, job, first), on_close=close)

    async def embeddings(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await read_json(request, self.config.max_body_bytes)
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ApiError(400, "You must provide a model parameter.", param="model")
        # A `hearth-rag` id embeds with that workspace's embedder; an unknown workspace is a 404 here.
        for_workspace = await asyncio.to_thread(self.catalog.rag_workspace, model) is not None
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

        job = Job(asyncio.get_running_loop())
        self.embed_lane.start(job, work)
        return JSONResponse(await job.outcome())

    async def compare(self, request: Any) -> Any:
        """What changed between two indexed documents, or one and its earlier version (no model involved)."""
        from starlette.responses import JSONResponse

        from rag.errors import CompareError

        body = await read_json(request, self.config.max_body_bytes)
        old, new, previous = body.get("old"), body.get("new"), body.get("previous", False)
        version, workspace = body.get("version"), body.get("workspace", self.config.workspace)
        for name, value in (("old", old), ("new", new), ("workspace", workspace)):
            if value is not None and (not isinstance(value, str) or not value or len(value) > 4096):
                raise ApiError(400, f"'{name}' must be a non-empty string.", param=name)
        if old is None:
            raise ApiError(400, "You must give 'old' (and 'new', or 'previous': true).", param="old")
        if not isinstance(previous, bool):
            raise ApiError(400, "'previous' must be true or false.", param="previous")
        if version is not None and not is_int(version):
            raise ApiError(400, "'version' must be an integer.", param="version")
        try:
            result = await asyncio.to_thread(self.hearth.compare, old, new, previous=previous, version=version,
                                             workspace=workspace)
        except CompareError as exc:
            raise ApiError(422, translate(exc).message, code="unrelated_documents") from exc
        return JSONResponse(result.to_json())

    # Work on the chat lane
    def _plain(self, req: ChatRequest, job: Job) -> Reply:
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
            close = getattr(stream, "close", None)  # an iterator, not a chat model: a generator has close()
            if close is not None:
                close()  # stops llama.cpp's generator at a stop sequence
        tail = stopper.flush()
        if tail and req.stream:
            job.emit("token", tail)
        completion = model.count_tokens(stopper.text) if stopper.text else 0
        counted = model.last_usage  # llama.cpp's own counts, when the model keeps them ({} when it does not)
        if "completion_tokens" in counted:
            prompt_tokens = int(counted.get("prompt_tokens", prompt_tokens))
            completion = int(counted["completion_tokens"])
        # The protocol yields text, not tokens: pieces can join several tokens, so count both ways.
        finish = "length" if max(pieces, completion) >= max_tokens and not stopper.hit else "stop"
        return Reply(stopper.text, finish, prompt_tokens, completion)

    def _grounded(self, req: ChatRequest, workspace: str, job: Job) -> Reply:
        from rag.answer import Turn

        question = req.messages[-1]["content"]
        history = [m["content"] for m in req.messages[:-1] if m["role"] == "user"]
        turns = [Turn(q["content"], a["content"]) for q, a in zip(req.messages[:-1], req.messages[1:-1])
                 if q["role"] == "user" and a["role"] == "assistant"]
        on_token = (lambda piece: job.emit("token", piece)) if req.stream else None
        result = self.hearth.ask(question, k=req.k, workspace=workspace, on_token=on_token,
                                 cancel=job.cancelled.is_set, history=history, turns=turns, scope=req.scope,
                                 not_found=req.not_found)
        full = result.to_json()
        sources = full["sources"]
        # The supporting quotes, the answer with citations from them, and which sentences they support.
        # With `table` when a table computed the answer (its filters, the rows used and the result), `comparison` when
        # a comparison did ("what changed in X?").
        support = {k: full[k] for k in ("answer", "quotes", "sentences", "fallback", "abstained", "why", "reply",
                                        "searched_for", "table", "comparison") if k in full}
        usage = result.usage
        if "prompt_tokens" in usage and "completion_tokens" in usage:
            prompt, completion = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
        else:  # a model that does not count: estimate with its tokenizer, or words when none was needed
            count = self.hearth.chat_model.count_tokens if result.sources else (lambda t: len(t.split()))
            prompt = count(question) + sum(count(s["text"]) for s in sources)
            completion = count(result.text)
        # Not found (rag/abstain.py): the reply is not presented as the answer; it stays in "reply". A stream
        # has sent it already, and its last chunk says "abstained" with the answer as shown.
        content = full["answer"] if full.get("abstained") and not req.stream else result.text
        return Reply(content, "stop", prompt, completion, sources, workspace, support or None)


async def _chat_chunks(
    req: ChatRequest, cid: str, created: int, job: Job, first: tuple[str, Any]
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



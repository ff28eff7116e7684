"""OpenAI's wire format for Hearth's API: request validation, response and event bodies, errors.

Shapes follow OpenAI's API reference for chat completions, embeddings and models, so its clients work
unmodified; Hearth's additions (`sources`, `workspace`, `kind`, the request's `k`) are extra fields those
clients keep and ignore.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inference.errors import Cancelled, HearthError, UsageError
from rag.answer import NOT_FOUND_MODES

log = logging.getLogger(__name__)

_DRAIN_LIMIT = 64 << 20  # an oversized body up to this size is read and dropped so the client sees the 413


class ApiError(Exception):
    """An error response in OpenAI's shape."""

    def __init__(
        self, status: int, message: str, *, type: str = "invalid_request_error",
        code: str | None = None, param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type, code, param

    def body(self) -> dict[str, Any]:
        """The JSON body OpenAI's clients parse."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def translate(exc: BaseException) -> ApiError:
    """The API error for any exception raised while serving a request; its message names no local path."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, Cancelled):
        return ApiError(499, "The request was cancelled.", type="server_error", code="cancelled")
    if isinstance(exc, UsageError):
        return ApiError(400, _with_hint(exc))
    if isinstance(exc, HearthError):
        return ApiError(500, _with_hint(exc), type="server_error")
    log.exception("unexpected error in the API", exc_info=exc)
    return ApiError(500, f"Hearth failed while serving the request ({type(exc).__name__}).", type="server_error")


def _with_hint(exc: HearthError) -> str:
    """The sentence and its hint, with every local path cut to its last part (the API's callers need not
    learn the machine's folders or user names; the server's own log keeps the full message)."""
    text = f"{exc} {exc.hint}" if exc.hint else str(exc)
    scrubbed = scrub_paths(text)
    if scrubbed != text:
        log.info("API error (paths hidden from the client): %s", text)
    return scrubbed


# A path in quotes may hold spaces; a bare one ends at a space. Either starts at `/`, `~/` or `C:\`, right
# after the start of the text, a space or an opening quote or bracket (so URLs and "and/or" are left alone).
_QUOTED_PATH = re.compile(r"""(['"`])((?:~|[A-Za-z]:)?[/\\][^'"`\n]*)\1""")
_BARE_PATH = re.compile(r"""(?:(?<=^)|(?<=[\s(\[<=]))(?:~|[A-Za-z]:)?[/\\][^\s'"`)\]>]*""")


def scrub_paths(text: str) -> str:
    """`text` with every absolute path (POSIX, `~/…` or Windows) replaced by its last part, e.g. `model.gguf`."""

    def last(path: str) -> str:
        trailing = len(path) - len(path.rstrip(".,;:!?"))  # a sentence's own punctuation stays after the name
        core, tail = path[: len(path) - trailing], path[len(path) - trailing :]
        name = re.split(r"[/\\]", core.rstrip("/\\"))[-1]
        return (name or "…") + tail

    text = _QUOTED_PATH.sub(lambda m: m.group(1) + last(m.group(2)) + m.group(1), text)
    return _BARE_PATH.sub(lambda m: last(m.group(0)), text)


def error_response(exc: ApiError) -> Any:
    """The JSON response for an error."""
    from starlette.responses import JSONResponse

    return JSONResponse(exc.body(), status_code=exc.status)


def not_found(model: str) -> ApiError:
    """The 404 OpenAI sends for a model it does not have."""
    return ApiError(404, f"The model `{model}` does not exist or you do not have access to it.",
                    code="model_not_found", param="model")


# Requests -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat-completion request."""

    model: str
    messages: list[dict[str, str]]
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    k: int = 5  # passages for a grounded answer (a Hearth extension; OpenAI clients send it in extra_body)
    scope: tuple[str, ...] = ()  # "in": indexed files or folders a grounded answer is limited to (an extension)
    not_found: str | None = None  # "strict", "balanced" or "off" (an extension; None: the server's setting)


def parse_chat_request(body: dict[str, Any], *, max_messages: int) -> ChatRequest:
    """Validate a chat-completion body; ApiError(400) names the offending parameter."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "You must provide a model parameter.", param="model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "'messages' must be a non-empty array.", param="messages")
    if len(raw) > max_messages:
        raise ApiError(400, f"At most {max_messages} messages are accepted.", param="messages")
    messages = [_message(m, i) for i, m in enumerate(raw)]
    for name in ("tools", "functions"):
        if body.get(name):
            raise ApiError(400, "Hearth's API does not call tools.", param=name)
    if body.get("n") not in (None, 1):
        raise ApiError(400, "Only n=1 is supported.", param="n")
    if body.get("logprobs"):
        raise ApiError(400, "logprobs are not supported.", param="logprobs")
    fmt = body.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise ApiError(400, "Only the text response format is supported.", param="response_format")
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be a boolean.", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise ApiError(400, "'stream_options' must be an object.", param="stream_options")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (not is_int(max_tokens) or max_tokens < 1):
        raise ApiError(400, "'max_tokens' must be a positive integer.", param="max_tokens")
    temperature = body.get("temperature")
    if temperature is None:
        temperature = 0.0  # a documents assistant answers the same way twice unless asked otherwise
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
        raise ApiError(400, "'temperature' must be a number between 0 and 2.", param="temperature")
    stop = body.get("stop")
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if len(stops) > 4 or not all(isinstance(s, str) for s in stops):
        raise ApiError(400, "'stop' must be a string or up to 4 strings.", param="stop")
    k = body.get("k", 5)
    if not is_int(k) or not 1 <= k <= 20:
        raise ApiError(400, "'k' must be an integer between 1 and 20.", param="k")
    scope = body.get("in", [])
    if isinstance(scope, str):
        scope = [scope]
    if (not isinstance(scope, list) or len(scope) > 50
            or not all(isinstance(x, str) and 0 < len(x) <= 4096 for x in scope)):
        raise ApiError(400, "'in' must be a path or a list of up to 50 paths of indexed files or folders.",
                       param="in")
    not_found = body.get("not_found")
    if not_found is not None and not_found not in NOT_FOUND_MODES:
        raise ApiError(400, "'not_found' must be one of: " + ", ".join(NOT_FOUND_MODES) + ".", param="not_found")
    return ChatRequest(model, messages, stream, bool(options.get("include_usage")), max_tokens,
                       float(temperature), tuple(s for s in stops if s), k, tuple(scope), not_found)


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _message(raw: Any, i: int) -> dict[str, str]:
    param = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise ApiError(400, f"{param} must be an object.", param=param)
    role = raw.get("role")
    if role == "developer":
        role = "system"
    if role not in ("system", "user", "assistant"):
        raise ApiError(400, f"{param}.role must be system, developer, user or assistant.", param=f"{param}.role")
    content = raw.get("content")
    if content is None and role == "assistant":
        content = ""
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(400, "Only text content parts are supported.", param=f"{param}.content")
            texts.append(part["text"])
        content = "\n".join(texts)
    if not isinstance(content, str):
        raise ApiError(400, f"{param}.content must be a string or text parts.", param=f"{param}.content")
    return {"role": role, "content": content}


async def read_json(request: Any, limit: int) -> dict[str, Any]:
    """The request's JSON object; 415 unless declared as JSON, 413 over `limit` bytes, 400 if malformed."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        # Also keeps browsers from posting here without a CORS preflight, which the API does not answer.
        raise ApiError(415, "The request body must be JSON (Content-Type: application/json).")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > _DRAIN_LIMIT:
        raise ApiError(413, f"The request is larger than the {limit}-byte limit.", code="request_too_large")
    body = bytearray()
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= limit:
            body += chunk
        elif size > _DRAIN_LIMIT:
            break
    if size > limit:
        raise ApiError(413, f"The request is larger than the {limit}-byte limit.", code="request_too_large")
    try:
        data = json.loads(bytes(body))
    except ValueError:
        raise ApiError(400, "The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    return data


@dataclass
class Reply:
    """What a completion produced, whichever model made it."""

    text: str
    finish: str  # "stop" or "length"
    prompt_tokens: int
    completion_tokens: int
    sources: list[dict[str, Any]] | None = None  # for grounded answers
    workspace: str | None = None
    support: dict[str, Any] | None = None  # grounded answers: "answer", "quotes", "sentences", "fallback"

    def extra(self) -> dict[str, Any]:
        """Hearth's fields added to a completion (OpenAI clients keep them and ignore them)."""
        if self.sources is None:
            return {}
        return {"sources": self.sources, "workspace": self.workspace, **(self.support or {})}


class StopFilter:
    """Cuts a reply at the first stop sequence, holding back text that could be the start of one."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = list(stops)
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.text = ""
        self.hit = False
        self._sent = 0

    def feed(self, piece: str) -> str:
        """Add a piece of the reply; returns the text that is now safe to send."""
        self.text += piece
        cuts = [i for i in (self.text.find(s) for s in self.stops) if i >= 0]
        if cuts:
            self.text = self.text[: min(cuts)]
            self.hit = True
            return self.flush()
        return self._release(len(self.text) - self.hold)

    def flush(self) -> str:
        """The text held back, once the reply has ended."""
        return self._release(len(self.text))

    def _release(self, upto: int) -> str:
        out = self.text[self._sent : max(self._sent, upto)]
        self._sent += len(out)
        return out


def model_json(model_id: str, created: int, kind: str, **extra: Any) -> dict[str, Any]:
    """A model object; `kind` (chat, rag, embedding) is Hearth's extra field."""
    return {"id": model_id, "object": "model", "created": created, "owned_by": "hearth", "kind": kind, **extra}


def usage_json(reply: Reply) -> dict[str, int]:
    """The usage object of a completion."""
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}


def completion_json(req: ChatRequest, cid: str, created: int, reply: Reply) -> dict[str, Any]:
    """A non-streamed chat completion, with the sources of a grounded answer as extra fields."""
    out: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": req.model,
        "system_fingerprint": None,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.text, "refusal": None},
            "logprobs": None,
            "finish_reason": reply.finish,
        }],
        "usage": usage_json(reply),
    }
    out.update(reply.extra())
    return out


def sse_event(obj: dict[str, Any]) -> bytes:
    """One server-sent event carrying a JSON object."""
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def embeddings_json(model: str, vectors: Any, fmt: str, tokens: int) -> dict[str, Any]:
    """The embeddings list, float arrays or base64 of little-endian float32."""
    import numpy as np

    data = []
    for i, vec in enumerate(vectors):
        vec = np.asarray(vec, dtype="<f4")
        value: Any = base64.b64encode(vec.tobytes()).decode("ascii") if fmt == "base64" else vec.tolist()
        data.append({"object": "embedding", "index": i, "embedding": value})
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


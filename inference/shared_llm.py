"""A chat model on an OpenAI-compatible server: llama.cpp's llama-server, vLLM, Lemonade, llama-cpp-python's.

Shared-office mode: one machine with a big GPU serves the model, the others ask it. `OpenAIChatModel`
implements the ChatModel protocol (inference.llm) over `POST /v1/chat/completions` with `stream: true`,
reading the server-sent events as they come.

- The context size is asked of the server where it says (llama-server's `/props`, vLLM's
  `max_model_len` in `/v1/models`), else the size given (a server that is smaller answers a too long
  prompt with an error, which becomes ContextOverflow and a tighter retry in rag.answer).
- Tokens are counted by the server's own tokenizer where it offers one (`/tokenize` of llama-server and
  vLLM, `/extras/tokenize/count` of llama-cpp-python), else estimated on the high side (a UTF-8 byte
  count / 3), which only makes the passages budget tighter.
- Cancel closes the connection, which stops the generation on the server; it takes effect within a
  tenth of a second, also while the server is still reading the prompt.
- Document text never becomes a turn: the server renders the template and tokenizes the prompt with
  special tokens on, so every message (and every text counted) goes out with the control-token text of
  every model family removed (`templates.neutralise_control_text`); a passage holding
  `<|im_start|>system` reaches the server as plain words.
- Every httpx error and every error status is translated into ModelError (ContextOverflow for a prompt
  that does not fit) with the server's address and what to check.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from inference.chat import ChatModelDefaults
from inference.errors import Cancelled, ModelError
from inference.chat import Message
from inference.llm import ContextOverflow, _safe
from inference.templates import neutralise_control_text

_CONTEXT_WORDS = ("context", "too long", "exceed", "maximum", "n_ctx")
_ENGINES = {"llamacpp": "llama.cpp server", "vllm": "vLLM", "me": "llama-cpp-python server"}


class OpenAIChatModel(ChatModelDefaults):
    """A chat model answered by an OpenAI-compatible HTTP server; thread-safe."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        n_ctx: int = 4096,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        transport: Any = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - a dependency of chromadb and mcp
            raise ModelError("httpx is not installed.", hint="pip install httpx") from exc
        self._httpx = httpx
        self.base_url = base_url.strip().rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ModelError(f"{base_url!r} is not an inference server address.",
                             hint="Use the server's OpenAI base URL, e.g. http://10.0.0.5:8080/v1.")
        # Tokenizer and props endpoints sit beside /v1, at the server's root.
        self.root_url = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout), headers=headers,
                                    transport=transport, trust_env=False)
        self._model = model
        self._default_ctx = n_ctx
        self._n_ctx: int | None = None
        self._engine: str | None = None
        self._tokenizer: str | None = None  # "tokenize", "extras" or "estimate", found on first use
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.last_usage: dict[str, int] = {}

    # What the server is.
    @property
    def model(self) -> str:
        """The model id requests name: the one given, else the first the server lists."""
        if self._model is None:
            data = self._get_json(f"{self.base_url}/models").get("data") or []
            ids = [m.get("id") for m in data if isinstance(m, dict) and m.get("id")]
            if not ids:
                raise ModelError(f"The inference server at {self.base_url} lists no model.",
                                 hint="Start it with a model loaded, or name one with --llm-model.")
            self._model = str(ids[0])
        return self._model

    @property
    def name(self) -> str:
        """The model's id on the server (the address, when the server cannot be asked)."""
        try:
            return self.model
        except ModelError:
            return f"model at {self.base_url}"

    @property
    def n_ctx(self) -> int:
        """Tokens of context one request may use, as the server reports it (else the size given)."""
        if self._n_ctx is None:
            self._probe()
        assert self._n_ctx is not None
        return self._n_ctx

    def server_info(self) -> dict[str, Any]:
        """What a hardware panel shows for a remote engine: address, engine, model, context."""
        info: dict[str, Any] = {"kind": "remote", "url": self.base_url}
        try:
            info.update(model=self.model, n_ctx=self.n_ctx, engine=self._engine or "OpenAI-compatible server",
                        reachable=True)
        except ModelError as exc:
            info.update(reachable=False, error=str(exc))
        return info

    def _probe(self) -> None:
        """Find the context size and the engine's name from what the server publishes."""
        n_ctx = None
        props = self._try_json("GET", f"{self.root_url}/props")
        if isinstance(props, dict):
            settings = props.get("default_generation_settings") or {}
            n_ctx = settings.get("n_ctx") or props.get("n_ctx")
            self._engine = "llama.cpp server"
        models = self._try_json("GET", f"{self.base_url}/models")
        listed = (models.get("data") or []) if isinstance(models, dict) else []
        for m in listed:
            if not isinstance(m, dict):
                continue
            if self._model is None and m.get("id"):
                self._model = str(m["id"])
            if m.get("id") == self._model:
                n_ctx = n_ctx or m.get("max_model_len") or (m.get("meta") or {}).get("n_ctx_train")
                self._engine = self._engine or _ENGINES.get(str(m.get("owned_by")))
        self._n_ctx = int(n_ctx) if isinstance(n_ctx, int | float) and n_ctx > 0 else self._default_ctx

    # Tokens.
    def count_tokens(self, text: str) -> int:
        """Tokens the server's tokenizer makes of a text (an over-estimate when it offers none)."""
        with self._lock:
            if text in self._counts:
                self._counts.move_to_end(text)
                return self._counts[text]
        n = self._count_remote(text)
        if n is None:
            n = len(text.encode("utf-8")) // 3 + 1
        with self._lock:
            self._counts[text] = n
            while len(self._counts) > 4096:
                self._counts.popitem(last=False)
        return n

    def _count_remote(self, text: str) -> int | None:
        text = neutralise_control_text(text)  # counted as it will be sent
        if self._tokenizer in (None, "tokenize"):
            # llama-server reads "content", vLLM "prompt" and "model"; each ignores the other's keys.
            body = {"content": text, "prompt": text, "add_special": False, "add_special_tokens": False}
            if self._model is not None or self._tokenizer is None:
                try:
                    body["model"] = self.model
                except ModelError:
                    pass
            found = _token_count(self._try_json("POST", f"{self.root_url}/tokenize", json=body))
            if found is not None:
                self._tokenizer = "tokenize"
                return found
        if self._tokenizer in (None, "extras"):
            found = _token_count(self._try_json("POST", f"{self.root_url}/extras/tokenize/count", json={"input": text}))
            if found is not None:
                self._tokenizer = "extras"
                return found
        self._tokenizer = "estimate"
        return None

    # Answering.
    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        """Yield the reply's text pieces as the server streams them; stops when `cancel()` turns true.

        The request is sent here, so an error status (a prompt too long: ContextOverflow) is raised by
        this call, before any piece.
        """
        if cancel is not None and cancel():
            raise Cancelled("Answer stopped.")
        sent = [{"role": m["role"], "content": neutralise_control_text(m["content"])} for m in messages]
        body = {"model": self.model, "messages": sent,
                "max_tokens": max_tokens, "temperature": temperature, "stream": True}
        httpx = self._httpx
        request = self._client.build_request("POST", f"{self.base_url}/chat/completions", json=body)
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code >= 400:
            try:
                response.read()
            except httpx.HTTPError:
                pass
            finally:
                response.close()
            raise self._status_error(response)
        self.last_usage = {"completion_tokens": 0}
        return self._pieces(response, cancel)

    def _pieces(self, response: Any, cancel: Callable[[], bool] | None) -> Iterator[str]:
        httpx = self._httpx
        stopped = threading.Event()
        done = threading.Event()
        watcher = None
        if cancel is not None:
            watcher = threading.Thread(target=_watch_cancel, args=(response, cancel, stopped, done),
                                       name="hearth-remote-cancel", daemon=True)
            watcher.start()
        finished = answered = False
        try:
            for event in _sse_events(response.iter_lines()):
                if cancel is not None and (stopped.is_set() or _safe(cancel)):
                    raise Cancelled("Answer stopped.")
                if event == "[DONE]":
                    finished = True
                    break
                try:
                    obj = json.loads(event)
                except ValueError:
                    continue  # a keep-alive or a line another server adds: not a chunk
                if not isinstance(obj, dict):
                    continue
                if obj.get("error"):
                    raise ModelError(f"The inference server at {self.base_url} failed while answering: "
                                     f"{_error_text(obj)}")
                usage = obj.get("usage")
                if isinstance(usage, dict):
                    self.last_usage.update({k: int(v) for k, v in usage.items()
                                            if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)})
                for choice in obj.get("choices") or []:
                    finished = finished or bool(choice.get("finish_reason"))
                    delta = choice.get("delta") or {}
                    piece = delta.get("content") if isinstance(delta, dict) else None
                    if piece is None:
                        piece = choice.get("text")
                    if piece:
                        if "usage" not in obj:
                            self.last_usage["completion_tokens"] = self.last_usage.get("completion_tokens", 0) + 1
                        answered = True
                        yield piece
            if not finished and not answered:
                # llama-cpp-python's server, for one, ends the stream this way when the prompt is too long.
                raise ModelError(f"The inference server at {self.base_url} ended the reply without an answer.",
                                 hint="A prompt longer than its context does this on some servers: give its "
                                      "context size with --ctx, or ask with fewer passages (-k).")
        except httpx.HTTPError as exc:
            if stopped.is_set() or (cancel is not None and _safe(cancel)):
                raise Cancelled("Answer stopped.") from None
            raise ModelError(f"The connection to the inference server at {self.base_url} broke while answering: "
                             f"{exc}.", hint="Check the server's log; it may have stopped or run out of memory.") from exc
        finally:
            done.set()
            response.close()
            if watcher is not None:
                watcher.join(1.0)

    def close(self) -> None:
        """Close the connections; the object cannot answer afterwards."""
        self._client.close()

    # HTTP helpers.
    def _get_json(self, url: str) -> dict[str, Any]:
        httpx = self._httpx
        try:
            response = self._client.get(url)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            data = response.json()
        except ValueError as exc:
            raise ModelError(f"The inference server at {self.base_url} did not answer {url} with JSON.",
                             hint="Is this the server's OpenAI base URL (usually ending in /v1)?") from exc
        return data if isinstance(data, dict) else {}

    def _try_json(self, method: str, url: str, **kwargs: Any) -> Any:
        """The JSON of a request that may well not exist on this server; None on any failure."""
        try:
            response = self._client.request(method, url, timeout=10.0, **kwargs)
            return response.json() if response.status_code < 400 else None
        except (self._httpx.HTTPError, ValueError):
            return None

    def _unreachable(self, exc: Exception) -> ModelError:
        if isinstance(exc, self._httpx.TimeoutException):
            return ModelError(f"The inference server at {self.base_url} did not answer in time.",
                              hint="It may be busy or stuck; check its log.")
        return ModelError(f"Cannot reach the inference server at {self.base_url}: {exc}.",
                          hint="Check that it runs (llama-server, vLLM, Lemonade, python -m llama_cpp.server) "
                               "and that this machine may reach it.")

    def _status_error(self, response: Any) -> ModelError:
        status = response.status_code
        try:
            detail = _error_text(response.json())
        except ValueError:
            detail = response.text[:300].strip()
        where = f"The inference server at {self.base_url}"
        if status in (401, 403):
            return ModelError(f"{where} refused the request ({status}): {detail or 'no or wrong API key'}.",
                              hint="Set its API key in HEARTH_LLM_API_KEY.")
        if status == 404:
            return ModelError(f"{where} has no such model or endpoint ({detail or 'not found'}).",
                              hint="Check the URL (usually ending in /v1) and --llm-model.")
        if status in (400, 413, 422) and any(w in detail.lower() for w in _CONTEXT_WORDS):
            return ContextOverflow(f"{where} says the prompt does not fit its context: {detail}",
                                   hint="Ask with fewer passages (-k), or give the server a larger context.")
        return ModelError(f"{where} answered {status}: {detail or response.reason_phrase}.")


def _watch_cancel(response: Any, cancel: Callable[[], bool], stopped: threading.Event, done: threading.Event) -> None:
    """Poll `cancel` while a reply streams; when it turns true, shut the socket so a blocked read returns."""
    while not done.wait(0.1):
        if _safe(cancel):
            stopped.set()
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            return


def _sse_events(lines: Iterator[str]) -> Iterator[str]:
    """The data of each server-sent event (multi-line data joined by newlines); comments skipped."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _token_count(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("count"), int):
        return int(data["count"])
    if isinstance(data.get("tokens"), list):
        return len(data["tokens"])
    return None


def _error_text(data: Any) -> str:
    """The message inside an OpenAI-style (or FastAPI-style) error body."""
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data))
        if isinstance(err, dict):
            return str(err.get("message") or err.get("msg") or err)[:500]
        if isinstance(err, list) and err:
            return "; ".join(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in err)[:500]
        return str(err)[:500]
    return str(data)[:500]

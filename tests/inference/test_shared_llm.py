"""The remote chat model: OpenAI-compatible streaming, server probing and error translation.

Unit tests run against httpx.MockTransport servers that answer as llama-server, vLLM and llama-cpp-python's
server do; the last tests talk to a real `python -m llama_cpp.server` on loopback with the tiny model.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from inference.errors import Cancelled, ModelError
from inference.llm import ContextOverflow
from inference.shared_llm import OpenAIChatModel, _sse_events
from tests.tinygguf import write_tiny_llama

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi?"}]


def sse(*chunks: object, done: bool = True) -> bytes:
    out = [": ping\n\n"]
    for c in chunks:
        out.append(f"data: {json.dumps(c)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def delta(text: str | None, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": {} if text is None else {"content": text}, "finish_reason": finish}]}


class FakeServer:
    """An OpenAI-compatible server in a handler: routes → (status, JSON or SSE bytes); records requests."""

    def __init__(self, routes: dict[str, Callable[[httpx.Request], httpx.Response]]) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        handler = self.routes.get(f"{request.method} {request.url.path}")
        return handler(request) if handler else httpx.Response(404, json={"detail": "Not Found"})

    def model(self, **kwargs) -> OpenAIChatModel:
        return OpenAIChatModel("http://gpu.lan:8080/v1", transport=httpx.MockTransport(self), **kwargs)

    def paths(self) -> list[str]:
        return [r.url.path for r in self.requests]


def models_route(*ids: str, **extra) -> Callable[[httpx.Request], httpx.Response]:
    return lambda r: httpx.Response(200, json={"object": "list", "data": [{"id": i, "object": "model", **extra}
                                                                          for i in ids]})


def test_sse_parser_joins_multiline_data_and_skips_comments():
    lines = iter([": keep-alive", "data: a", "data: b", "", "event: x", "data:c", "", "data: [DONE]", ""])
    assert list(_sse_events(lines)) == ["a\nb", "c", "[DONE]"]


def test_streams_pieces_and_sends_an_openai_request():
    server = FakeServer({
        "GET /v1/models": models_route("qwen2.5-7b"),
        "POST /v1/chat/completions": lambda r: httpx.Response(
            200, content=sse({"choices": [{"delta": {"role": "assistant"}}]}, delta("Hello"), delta(" world"),
                             delta(None, "stop")), headers={"content-type": "text/event-stream"}),
    })
    model = server.model(api_key="sk-office")
    assert "".join(model.stream(MESSAGES, max_tokens=64, temperature=0.2)) == "Hello world"
    sent = json.loads(server.requests[-1].content)
    assert sent == {"model": "qwen2.5-7b", "messages": MESSAGES, "max_tokens": 64, "temperature": 0.2, "stream": True}
    assert server.requests[-1].headers["authorization"] == "Bearer sk-office"
    assert model.last_usage["completion_tokens"] == 2
    assert model.name == "qwen2.5-7b"


def test_context_size_comes_from_llama_server_props_or_vllm_models():
    llama_server = FakeServer({
        "GET /props": lambda r: httpx.Response(200, json={"default_generation_settings": {"n_ctx": 8192}}),
        "GET /v1/models": models_route("gemma", owned_by="llamacpp"),
    })
    model = llama_server.model()
    assert model.n_ctx == 8192 and model.server_info()["engine"] == "llama.cpp server"
    vllm = FakeServer({"GET /v1/models": models_route("Qwen/Qwen2.5-7B", owned_by="vllm", max_model_len=32768)})
    assert vllm.model().n_ctx == 32768 and vllm.model().server_info()["engine"] == "vLLM"
    silent = FakeServer({"GET /v1/models": models_route("x", owned_by="me")})
    assert silent.model(n_ctx=1536).n_ctx == 1536  # llama-cpp-python's server does not say: the size given


def test_tokens_are_counted_by_the_servers_tokenizer_once_per_text():
    server = FakeServer({
        "GET /v1/models": models_route("m"),
        "POST /tokenize": lambda r: httpx.Response(200, json={"tokens": [1] * len(json.loads(r.content)["content"].split())}),
    })
    model = server.model()
    assert model.count_tokens("one two three") == 3
    assert model.count_tokens("one two three") == 3
    assert server.paths().count("/tokenize") == 1
    extras = FakeServer({
        "GET /v1/models": models_route("m"),
        "POST /extras/tokenize/count": lambda r: httpx.Response(200, json={"count": 7}),
    })
    assert extras.model().count_tokens("whatever") == 7
    none = FakeServer({"GET /v1/models": models_route("m")})
    text = "Сколько стоит обед? " * 10
    assert none.model().count_tokens(text) >= len(text) // 3  # an over-estimate, never an under-estimate


@pytest.mark.parametrize(("status", "body", "error", "words"), [
    (401, {"error": {"message": "Invalid API key"}}, ModelError, "HEARTH_LLM_API_KEY"),
    (404, {"error": {"message": "model 'x' not found"}}, ModelError, "--llm-model"),
    (400, {"error": {"message": "This model's maximum context length is 2048 tokens"}}, ContextOverflow, "-k"),
    (500, {"error": {"message": "CUDA out of memory"}}, ModelError, None),
])
def test_error_statuses_become_hearth_errors(status, body, error, words):
    server = FakeServer({"POST /v1/chat/completions": lambda r: httpx.Response(status, json=body)})
    with pytest.raises(error) as caught:
        server.model(model="x").stream(MESSAGES)  # raised by the call itself, before any piece
    assert "gpu.lan:8080" in str(caught.value)
    assert body["error"]["message"] in str(caught.value)
    if words:
        assert words in caught.value.hint


def test_unreachable_server_says_what_to_check():
    def refuse(request):
        raise httpx.ConnectError("Connection refused", request=request)

    with pytest.raises(ModelError, match="Cannot reach the inference server") as caught:
        OpenAIChatModel("http://gpu.lan:8080/v1", model="x", transport=httpx.MockTransport(refuse)).stream(MESSAGES)
    assert "llama-server" in caught.value.hint
    with pytest.raises(ModelError, match="not an inference server address"):
        OpenAIChatModel("gpu.lan:8080")


def test_errors_inside_the_stream_and_empty_streams():
    failing = FakeServer({"POST /v1/chat/completions": lambda r: httpx.Response(
        200, content=sse(delta("Hal"), {"error": {"message": "slot crashed"}}, done=False))})
    with pytest.raises(ModelError, match="slot crashed"):
        list(failing.model(model="x").stream(MESSAGES))
    empty = FakeServer({"POST /v1/chat/completions": lambda r: httpx.Response(200, content=b"", headers={
        "content-type": "text/event-stream"})})
    with pytest.raises(ModelError, match="without an answer") as caught:
        list(empty.model(model="x").stream(MESSAGES))
    assert "--ctx" in caught.value.hint


def test_cancel_stops_between_pieces():
    server = FakeServer({"POST /v1/chat/completions": lambda r: httpx.Response(
        200, content=sse(*[delta(f"w{i} ") for i in range(50)]))})
    seen: list[str] = []
    with pytest.raises(Cancelled):
        for piece in server.model(model="x").stream(MESSAGES, cancel=lambda: len(seen) >= 3):
            seen.append(piece)
    assert len(seen) == 3
    with pytest.raises(Cancelled):
        server.model(model="x").stream(MESSAGES, cancel=lambda: True)


# A real OpenAI-compatible server: llama-cpp-python's own, on loopback with the tiny model -------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    """`python -m llama_cpp.server` with the tiny random model; yields its OpenAI base URL."""
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")
    model = write_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny.gguf")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "1024", "--n_threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def test_real_server_streams_a_reply_and_counts_tokens(llama_server):
    model = OpenAIChatModel(llama_server, n_ctx=1024)
    assert model.name.endswith("tiny.gguf")
    assert model.server_info() == {"kind": "remote", "url": llama_server, "model": model.name, "n_ctx": 1024,
                                   "engine": "llama-cpp-python server", "reachable": True}
    pieces = list(model.stream(MESSAGES, max_tokens=12))
    assert all(isinstance(p, str) for p in pieces)  # random weights: the text is gibberish, its shape is not
    assert 0 < model.last_usage["completion_tokens"] <= 12
    n = model.count_tokens("the cat is in the hat")
    assert 1 < n < 40 and model._tokenizer == "extras"


def test_real_server_stops_when_cancelled(llama_server):
    model = OpenAIChatModel(llama_server, n_ctx=1024)
    stop = threading.Event()
    got: list[str] = []
    t0 = time.monotonic()
    # (llama-cpp-python's server finishes a generation whose client left before it takes the next request,
    # so the reply asked for is short: the tests after this one would wait for it.)
    with pytest.raises(Cancelled):
        for piece in model.stream(MESSAGES, max_tokens=48, cancel=stop.is_set):
            got.append(piece)
            stop.set()
    assert time.monotonic() - t0 < 30 and len(got) <= 2


def test_hearth_answers_through_the_real_server(llama_server, tmp_path):
    """The service with an inference server configured: ingest, then ask, the reply streamed from the server."""
    from rag.ingest import IngestOptions
    from rag.service import Hearth, HearthConfig
    from tests.fakes import HashEmbedder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "travel.md").write_text("# Travel\n\nThe daily meal allowance abroad is 60 euros per day.\n")
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", llm_url=llama_server, n_ctx=1024,
                                 ingest=IngestOptions(workers=0)), embedder=HashEmbedder())
    assert hearth.ingest([docs]).added == 1
    streamed: list[str] = []
    result = hearth.ask("What is the daily meal allowance abroad?", on_token=streamed.append)
    assert result.sources and result.sources[0].source.endswith("travel.md")
    assert result.text == "".join(streamed).strip() or streamed  # gibberish, but streamed
    assert "retrieval" in result.timings
    assert hearth.chat_model.server_info()["engine"] == "llama-cpp-python server"

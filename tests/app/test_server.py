"""The local API on a real uvicorn server on a free loopback port, driven by the unmodified `openai` client.

The shared server requires its key, as every `hearth serve` does by default; the key rules themselves, the
CLI's flags and a real `hearth serve` process are tested in test_api_auth.py.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from app.api_auth import ServerConfig, secure_config  # noqa: E402
from app.api_lanes import Job, SerialLane  # noqa: E402
from app.openai_format import ApiError, StopFilter  # noqa: E402
from app.server import ApiServer, create_app  # noqa: E402
from inference.chat import ChatModelDefaults  # noqa: E402
from inference.errors import Cancelled  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder  # noqa: E402

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"  # the id of Hearth's own model when none is configured


class EchoModel(ChatModelDefaults):
    """Replies "echo: " + the last message, one word per piece, so a reply shows which request it answers."""

    name = "echo"

    def __init__(self, *, n_ctx: int = 512, delay: float = 0.0) -> None:
        self.n_ctx = n_ctx
        self.delay = delay
        self.cancelled = 0
        self.running = 0
        self.overlaps = 0  # times two generations ran at once (must stay 0)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        self.running += 1
        self.overlaps += self.running > 1
        try:
            words = ("echo: " + messages[-1]["content"]).split(" ")[:max_tokens]
            for i, word in enumerate(words):
                if cancel is not None and cancel():
                    self.cancelled += 1
                    raise Cancelled()
                if self.delay:
                    time.sleep(self.delay)
                yield word if i == 0 else " " + word
        finally:
            self.running -= 1


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("api")
    leave, it = base / "docs" / "leave", base / "docs" / "it"
    leave.mkdir(parents=True)
    it.mkdir(parents=True)
    (leave / "leave-policy.txt").write_text(
        "Annual leave: every employee gets 25 days of annual leave per year. Up to 5 unused days carry over.")
    (it / "laptops.txt").write_text(
        "Stolen laptop: report a stolen laptop to the IT desk on extension 4400 within one hour.")
    data = base / "data"
    model = EchoModel(n_ctx=512)
    hearth = Hearth(HearthConfig(data_dir=data), embedder=HashEmbedder(), chat_model=model)
    assert not hearth.ingest([leave]).failed
    assert not hearth.ingest([it], workspace="it").failed
    pytest.importorskip("gguf")
    from tests.tinygguf import write_tiny_llama

    (data / "models").mkdir()
    write_tiny_llama(data / "models" / "tiny.gguf", n_ctx=512)
    config, key = secure_config(data, port=0)  # the default: a key, made now, on loopback too
    assert key is not None
    server = ApiServer.for_hearth(hearth, dataclasses.replace(config, max_body_bytes=64 * 1024)).start()
    yield server, model, leave, it, key
    server.stop()


@pytest.fixture
def client(setup):
    return openai.OpenAI(base_url=setup[0].url, api_key=setup[4], max_retries=0, timeout=60)


@pytest.fixture
def auth(setup) -> dict[str, str]:
    """The header raw HTTP requests carry the key in."""
    return {"authorization": f"Bearer {setup[4]}"}


def ask(client, content: str, model: str = DEFAULT_MODEL, **kwargs):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}], **kwargs)


def test_lists_the_chat_models_a_rag_model_per_workspace_and_the_embedder(client):
    ids = [m.id for m in client.models.list()]
    assert ids[0] == DEFAULT_MODEL
    assert {"tiny.gguf", "hearth-rag", "hearth-rag:default", "hearth-rag:it", "hearth-embed"} <= set(ids)
    assert client.models.retrieve("hearth-rag:it").workspace == "it"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("hearth-rag:nowhere")


def test_plain_chat(client):
    r = ask(client, "hello there")
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-") and r.model == DEFAULT_MODEL
    assert r.choices[0].message.content == "echo: hello there"
    assert r.choices[0].message.role == "assistant" and r.choices[0].finish_reason == "stop"
    assert r.usage.completion_tokens == 3 and r.usage.total_tokens == r.usage.prompt_tokens + 3
    assert ask(client, "one two three four", max_tokens=2).choices[0].finish_reason == "length"


def test_plain_chat_streams_server_sent_events_like_openai(client, auth):
    chunks = list(ask(client, "stream me please", stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({c.id for c in chunks}) == 1 and all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream me please"
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1 and finals[0].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 4
    # The raw stream ends with [DONE], as OpenAI's does.
    with httpx.stream("POST", str(client.base_url) + "chat/completions", json={
        "model": DEFAULT_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True,
    }, headers=auth) as raw:
        assert raw.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in raw.iter_lines() if line]
    assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)


def test_stop_sequences_cut_the_reply(client):
    assert ask(client, "keep this STOP drop that", stop=["STOP"]).choices[0].message.content == "echo: keep this "
    chunks = ask(client, "keep this STOP drop that", stop="STOP", stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "echo: keep this "
    f = StopFilter(["<end>"])
    assert f.feed("a <e") == "" and f.feed("nd> b") == "a " and f.hit and f.text == "a "


def test_grounded_answer_carries_its_sources(client, setup):
    r = ask(client, "How many days of annual leave does an employee get?", model="hearth-rag")
    assert r.choices[0].message.content.startswith("echo: ")
    assert r.workspace == "default"
    assert r.sources and Path(r.sources[0]["source"]).name == "leave-policy.txt"
    assert set(r.sources[0]) >= {"source", "page", "heading", "score", "text", "cited"}
    # The supporting quotes come as in `hearth ask --json`: the document's words with their offsets.
    assert r.quotes and set(r.quotes[0]) == {"source", "page", "heading", "text", "start", "end"}
    assert r.abstained is False and isinstance(r.reply, str)  # the answer was not withheld; the model's own words
    leave = Path(r.quotes[0]["source"]).read_text()
    assert Path(r.quotes[0]["source"]).name == "leave-policy.txt" and "25 days" in r.quotes[0]["text"]
    assert leave[r.quotes[0]["start"]:r.quotes[0]["end"]] == r.quotes[0]["text"]
    assert r.sentences and all(s["support"] is None or 0 <= s["support"] < len(r.quotes) for s in r.sentences)
    assert isinstance(r.fallback, bool) and isinstance(r.answer, str)
    r = ask(client, "What do I do about a stolen laptop?", model="hearth-rag:it", extra_body={"k": 1})
    assert [Path(s["source"]).name for s in r.sources] == ["laptops.txt"]


def test_grounded_follow_up_uses_the_conversation(client):
    r = client.chat.completions.create(model="hearth-rag:it", messages=[
        {"role": "system", "content": "ignored: Hearth writes its own instructions"},
        {"role": "user", "content": "What if my laptop is stolen?"},
        {"role": "assistant", "content": "Call the IT desk [1]."},
        {"role": "user", "content": "Which extension?"},
    ])
    assert Path(r.sources[0]["source"]).name == "laptops.txt"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="hearth-rag", messages=[
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])


def test_grounded_stream_sends_the_sources_in_its_last_chunk(client):
    chunks = list(ask(client, "stolen laptop extension", model="hearth-rag:it", stream=True))
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason][0]
    assert Path(final.sources[0]["source"]).name == "laptops.txt"
    assert final.quotes and all(Path(q["source"]).name == "laptops.txt" for q in final.quotes)
    assert "".join(c.choices[0].delta.content or "" for c in chunks).startswith("echo: ")


def test_grounded_answer_with_nothing_relevant_cites_nothing(client):
    r = ask(client, "zebra xylophone quantum", model="hearth-rag")
    assert r.sources == [] and r.choices[0].message.content


def test_embeddings_float_and_base64(client, auth):
    texts = ["annual leave days", "stolen laptop"]
    expected = HashEmbedder().embed(texts)
    r = client.embeddings.create(model="hearth-embed", input=texts, encoding_format="float")
    assert [d.index for d in r.data] == [0, 1]
    assert np.allclose([d.embedding for d in r.data], expected, atol=1e-6)
    r = client.embeddings.create(model="hearth-rag:it", input="stolen laptop")  # the client asks for base64
    assert np.allclose(r.data[0].embedding, expected[1], atol=1e-6) and r.usage.prompt_tokens == 2
    raw = httpx.post(str(client.base_url) + "embeddings", json={
        "model": "hearth-embed", "input": "x", "encoding_format": "base64"}, headers=auth).json()
    assert len(np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), "<f4")) == HashEmbedder.dim


def test_unknown_models_are_404_and_never_read_as_paths(client):
    for model in ("gpt-4o", "/etc/passwd", "../../etc/hosts", "hearth-rag:nowhere"):
        with pytest.raises(openai.NotFoundError) as info:
            ask(client, "hi", model=model)
        assert info.value.code == "model_not_found" and info.value.body["param"] == "model"
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="text-embedding-3-small", input="x")


def test_oversize_request_is_413(client):
    with pytest.raises(openai.APIStatusError) as info:
        ask(client, "word " * 20_000)
    assert info.value.status_code == 413 and "limit" in info.value.message


def test_invalid_requests_are_400_in_openais_shape(client):
    bad = [
        dict(messages=[]),
        dict(messages=[{"role": "user", "content": "hi"}], n=2),
        dict(messages=[{"role": "user", "content": "hi"}], temperature=5),
        dict(messages=[{"role": "wizard", "content": "hi"}]),
        dict(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]),
    ]
    for kwargs in bad:
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model=DEFAULT_MODEL, **kwargs)
        assert info.value.body["type"] == "invalid_request_error" and info.value.body["message"]
    with pytest.raises(openai.BadRequestError):
        ask(client, "hi", model="hearth-embed")
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="hearth-embed", input=["fine", ""])
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="hearth-embed", input=[[1, 2, 3]])


def test_context_overflow_is_reported_like_openai(client):
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, "word " * 600)
    assert info.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):
        ask(client, "short", max_tokens=10_000, stream=True)  # before any event: a plain HTTP error


def test_non_json_unknown_paths_and_methods(setup, auth):
    url = setup[0].url
    r = httpx.post(f"{url}/chat/completions", content=b"model=x", headers={"content-type": "text/plain", **auth})
    assert r.status_code == 415 and r.json()["error"]["message"]
    r = httpx.post(f"{url}/chat/completions", content=b"{not json",
                   headers={"content-type": "application/json", **auth})
    assert r.status_code == 400
    r = httpx.get(f"{url}/files/etc/passwd", headers=auth)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = httpx.get(f"{url}/chat/completions", headers=auth)
    assert r.status_code == 405 and "error" in r.json()
    assert httpx.get(url.removesuffix("/v1") + "/health", headers=auth).json() == {"status": "ok"}
    assert httpx.get(url.removesuffix("/v1") + "/health").status_code == 401  # even health needs the key


def test_concurrent_streams_queue_on_the_model_and_never_mix(setup):
    server, model, _, _, key = setup
    model.delay = 0.002
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def user(n: int) -> None:
        c = openai.OpenAI(base_url=server.url, api_key=key, max_retries=0, timeout=60)
        try:
            for j in range(3):
                prompt = f"client {n} request {j} " + " ".join(f"w{n}_{j}_{i}" for i in range(12))
                chunks = ask(c, prompt, stream=True)
                results[prompt] = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=user, args=(n,)) for n in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        model.delay = 0.0
    assert not errors and len(results) == 24
    assert all(reply == "echo: " + prompt for prompt, reply in results.items())
    assert model.overlaps == 0


def test_a_client_that_leaves_mid_stream_cancels_its_generation(client, setup):
    model = setup[1]
    model.delay = 0.02
    before = model.cancelled
    try:
        stream = ask(client, " ".join(["word"] * 100), stream=True, max_tokens=200)
        next(iter(stream))
        stream.close()
        deadline = time.monotonic() + 10
        while model.cancelled == before and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        model.delay = 0.0
    assert model.cancelled == before + 1
    assert ask(client, "still here").choices[0].message.content == "echo: still here"


def test_a_full_queue_answers_503():
    loop = asyncio.new_event_loop()
    try:
        lane = SerialLane("chat model", max_waiting=1)
        gate = threading.Event()
        lane.start(Job(loop), gate.wait)
        with pytest.raises(ApiError) as info:
            lane.start(Job(loop), lambda: None)
        assert info.value.status == 503
        gate.set()
        lane.close()
    finally:
        loop.close()


def test_a_gguf_model_from_the_library_through_llama_cpp(client):
    pytest.importorskip("llama_cpp")
    chunks = list(ask(client, "Say hello.", model="tiny.gguf", stream=True, max_tokens=6))
    assert chunks[-1].choices[0].finish_reason == "length"
    r = ask(client, "Say hello.", model="tiny.gguf", max_tokens=6)
    assert r.choices[0].finish_reason == "length" and r.usage.prompt_tokens > 0
    assert ask(client, "back to the default").choices[0].message.content == "echo: back to the default"


# Security ------------------------------------------------------------------------------------------
# (the key rules, the CLI's flags and a real `hearth serve` are in test_api_auth.py)


def test_the_shared_server_refuses_requests_without_its_key(setup, auth):
    url = setup[0].url
    for headers in ({}, {"authorization": "Bearer hearth-wrong"}, {"authorization": "Basic " + setup[4]}):
        r = httpx.get(f"{url}/models", headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = httpx.post(f"{url}/chat/completions", json={"model": DEFAULT_MODEL, "messages": [
        {"role": "user", "content": "hi"}]})
    assert r.status_code == 401
    assert httpx.get(f"{url}/models", headers=auth).status_code == 200


def test_loopback_server_refuses_other_host_names(setup, auth):
    # A web page that rebinds its own name to 127.0.0.1 still sends that name in Host, key or no key.
    r = httpx.get(f"{setup[0].url}/models", headers={"host": "attacker.example:8642", **auth})
    assert r.status_code == 403 and r.json()["error"]["code"] == "invalid_host"
    assert httpx.get(f"{setup[0].url}/models", headers={"host": "localhost:8642", **auth}).status_code == 200


def test_cors_is_off_unless_an_origin_is_allowed(tmp_path, setup, auth):
    preflight = {"origin": "https://example.com", "access-control-request-method": "POST",
                 "access-control-request-headers": "content-type"}
    r = httpx.options(f"{setup[0].url}/chat/completions", headers=preflight)
    assert "access-control-allow-origin" not in r.headers
    r = httpx.get(f"{setup[0].url}/models", headers={"origin": "https://example.com", **auth})
    assert "access-control-allow-origin" not in r.headers
    from starlette.testclient import TestClient

    hearth = Hearth(HearthConfig(data_dir=tmp_path), embedder=HashEmbedder(), chat_model=EchoModel())
    app = create_app(hearth, ServerConfig(cors_origins=("https://example.com",)))
    with TestClient(app, base_url="http://127.0.0.1") as tc:
        r = tc.options("/v1/chat/completions", headers=preflight)
        assert r.headers["access-control-allow-origin"] == "https://example.com"


def test_cli_parses_serve_and_mcp():
    from app.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.workspace, args.cors_origin) == ("127.0.0.1", 8642, "default", [])
    assert (args.no_key, args.new_key) == (False, False)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "9000", "--workspace", "hr"])
    assert (args.host, args.port, args.workspace) == ("0.0.0.0", 9000, "hr")
    assert build_parser().parse_args(["serve", "--no-key"]).no_key
    assert build_parser().parse_args(["mcp", "--workspace", "hr"]).workspace == "hr"

"""The API's model ids: usable names only (none the policy forbids, no paths), other models loaded by the
service and never built by the API, and error bodies that never carry a local path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
pytest.importorskip("gguf")

from starlette.testclient import TestClient  # noqa: E402

from app.api_auth import ServerConfig  # noqa: E402
from app.openai_format import scrub_paths  # noqa: E402
from app.policy import Policy  # noqa: E402
from app.server import create_app  # noqa: E402
from inference.chat import ChatModelDefaults  # noqa: E402
from inference.errors import ModelError  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder  # noqa: E402
from tests.tinygguf import write_tiny_llama  # noqa: E402


class SayModel(ChatModelDefaults):
    """Replies with its label, then (when told to) fails with an error that names a file."""

    n_ctx = 512

    def __init__(self, label: str, *, fail_with: str | None = None) -> None:
        self.name = label
        self.fail_with = fail_with
        self.closed = False

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages, *, max_tokens=512, temperature=0.0, cancel=None):
        yield self.name
        if self.fail_with:
            raise ModelError(self.fail_with)

    def close(self) -> None:
        self.closed = True


class ServiceLoads(Hearth):
    """A Hearth whose other chat models are fakes: the API must ask the service for them, by their library name."""

    def __init__(self, config: HearthConfig) -> None:
        super().__init__(config, embedder=HashEmbedder(), chat_model=SayModel("own"))
        self.loaded: list[str] = []
        self.models_made: list[SayModel] = []

    def load_chat_model(self, name: str) -> SayModel:
        self.loaded.append(name)
        self.models_made.append(SayModel("loaded " + Path(name).name))
        return self.models_made[-1]


@pytest.fixture
def library(tmp_path) -> tuple[Path, Path]:
    """DATA/models with tiny.gguf and other.gguf, and kept.gguf in a private folder elsewhere."""
    data = tmp_path / "data"
    (data / "models").mkdir(parents=True)
    for name in ("tiny.gguf", "other.gguf"):
        write_tiny_llama(data / "models" / name, n_ctx=512)
    kept = tmp_path / "private folder" / "kept.gguf"
    kept.parent.mkdir()
    write_tiny_llama(kept, n_ctx=512)
    return data, kept


def _chat(client: TestClient, model: str, **extra):
    return client.post("/v1/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "hi"}],
                                                     **extra})


def test_models_added_by_path_are_listed_by_file_name_and_loaded_by_the_service(tmp_path, library):
    data, kept = library
    hearth = ServiceLoads(HearthConfig(data_dir=data))
    hearth.library.add(kept)
    with TestClient(create_app(hearth, ServerConfig()), base_url="http://127.0.0.1") as client:
        r = client.get("/v1/models")
        ids = [m["id"] for m in r.json()["data"]]
        assert {"tiny.gguf", "other.gguf", "kept.gguf"} <= set(ids)
        assert str(tmp_path) not in r.text and not any("/" in i or "\\" in i for i in ids)
        assert client.get("/v1/models/kept.gguf").json()["kind"] == "chat"
        assert client.get(f"/v1/models/{kept}").status_code == 404  # its path is no id
        r = _chat(client, "kept.gguf")
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "loaded kept.gguf"
        assert hearth.loaded == [str(kept)]  # the library's own name for it, handed to the service
        r = _chat(client, "tiny.gguf")
        assert r.json()["choices"][0]["message"]["content"] == "loaded tiny.gguf"
        assert hearth.loaded == [str(kept), "tiny.gguf"] and hearth.models_made[0].closed  # one other at a time
        assert _chat(client, "kept.gguf").json()["choices"][0]["message"]["content"] == "loaded kept.gguf"
        assert _chat(client, ids[0]).json()["choices"][0]["message"]["content"] == "own"  # Hearth's own model


def test_models_the_policy_forbids_are_not_listed_nor_served(tmp_path, library):
    data, kept = library
    config = Policy(source=tmp_path / "policy.toml", allowed_models=("tiny.gguf",)).apply(HearthConfig(data_dir=data))
    hearth = ServiceLoads(config)
    hearth.library.add(kept)
    with TestClient(create_app(hearth, ServerConfig()), base_url="http://127.0.0.1") as client:
        chat = [m["id"] for m in client.get("/v1/models").json()["data"] if m["kind"] == "chat"]
        assert chat == ["tiny.gguf"]
        for forbidden in ("other.gguf", "kept.gguf", str(kept), "qwen2.5-coder-0.5b-instruct-q4_k_m"):
            r = _chat(client, forbidden)
            assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
            assert client.get(f"/v1/models/{forbidden}").status_code == 404
    assert hearth.loaded == []


def test_a_model_given_by_path_is_listed_by_its_file_name(tmp_path, library):
    _, kept = library
    hearth = ServiceLoads(HearthConfig(data_dir=tmp_path / "other-data", chat_model=str(kept)))
    with TestClient(create_app(hearth, ServerConfig()), base_url="http://127.0.0.1") as client:
        r = client.get("/v1/models")
        assert r.json()["data"][0]["id"] == "kept.gguf" and str(tmp_path) not in r.text
        assert _chat(client, "kept.gguf").json()["choices"][0]["message"]["content"] == "own"


def test_errors_never_carry_local_paths(tmp_path):
    # Hearth's own model is a path that is not there: the service's error names it and the models folder.
    missing = tmp_path / "private folder" / "secret-model.gguf"
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data", chat_model=str(missing)), embedder=HashEmbedder())
    with TestClient(create_app(hearth, ServerConfig()), base_url="http://127.0.0.1") as client:
        for stream in (False, True):
            r = _chat(client, "secret-model.gguf", stream=stream)
            assert r.status_code == 400, r.text
            message = r.json()["error"]["message"]
            assert "secret-model.gguf" in message and str(tmp_path) not in r.text and "private folder" not in r.text
    # A model that fails mid-reply with a path in its error: the 500 and the stream's error event alike.
    failing = SayModel("partial", fail_with=f"llama.cpp stopped reading '{missing}' at /home/ann/.cache/x.bin.")
    hearth = Hearth(HearthConfig(data_dir=tmp_path / "data2"), embedder=HashEmbedder(), chat_model=failing)
    with TestClient(create_app(hearth, ServerConfig()), base_url="http://127.0.0.1") as client:
        model = client.get("/v1/models").json()["data"][0]["id"]
        r = _chat(client, model)
        assert r.status_code == 500
        assert r.json()["error"]["message"] == "llama.cpp stopped reading 'secret-model.gguf' at x.bin."
        r = _chat(client, model, stream=True)
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
        assert events[-1]["error"]["message"] == "llama.cpp stopped reading 'secret-model.gguf' at x.bin."
        assert str(tmp_path) not in r.text and "/home/ann" not in r.text


def test_scrub_paths_keeps_urls_and_words():
    assert scrub_paths("Model file not found: /home/ann/models/x.gguf.") == "Model file not found: x.gguf."
    assert scrub_paths("Cannot load '/home/ann/My Models/x y.gguf': bad") == "Cannot load 'x y.gguf': bad"
    assert scrub_paths("in ~/.config/hearth/policy.toml") == "in policy.toml"
    assert scrub_paths(r"C:\Users\ann\m.gguf failed") == "m.gguf failed"
    assert scrub_paths("/srv/hearth/ann is not yours") == "ann is not yours"
    kept = "Cannot reach http://gpu.office.lan:8080/v1/models: and/or refused (HTTP 404)."
    assert scrub_paths(kept) == kept

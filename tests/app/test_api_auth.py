"""Who may call the local API: a key on every address by default (made once, shown once, stored as a 0600
digest), `--no-key` on loopback only, CORS `*` only with a key, and a real `hearth serve` process that
answers 401 without the key it showed and 200 with it."""

from __future__ import annotations

import os
import queue
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

from app import policy as policy_mod  # noqa: E402
from app.api_auth import (  # noqa: E402
    KEY_FILE_NAME, ApiKeyFile, ServerConfig, check_config, is_loopback, key_digest, secure_config,
)
from app.server import ApiServer, create_app  # noqa: E402
from inference.chat import ChatModelDefaults  # noqa: E402
from inference.errors import UsageError  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"^(hearth-[\w-]{40,})$", re.M)


class HelloModel(ChatModelDefaults):
    name = "hello"
    n_ctx = 512

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages, *, max_tokens=512, temperature=0.0, cancel=None):
        yield "hello"


@pytest.fixture(autouse=True)
def _no_policy(tmp_path, monkeypatch):
    """No administrator's policy here: the machine's own file and HEARTH_POLICY are out of reach."""
    monkeypatch.setattr(policy_mod, "SYSTEM_POLICY", tmp_path / "no-such-system-policy.toml")
    monkeypatch.delenv("HEARTH_POLICY", raising=False)


def _hearth(data: Path) -> Hearth:
    return Hearth(HearthConfig(data_dir=data), embedder=HashEmbedder(), chat_model=HelloModel())


# The rules -----------------------------------------------------------------------------------------


def test_loopback_addresses():
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"):
        assert is_loopback(host)
    for host in ("0.0.0.0", "::", "192.168.1.20", "hearth.local", "example.com"):
        assert not is_loopback(host)
    with pytest.raises(UsageError, match="API key"):
        create_app(_hearth(Path("unused")), ServerConfig(host="0.0.0.0"))


def test_a_key_is_required_on_loopback_by_default_made_once_and_stored_as_a_private_digest(tmp_path):
    config, key = secure_config(tmp_path, host="127.0.0.1")
    path = tmp_path / KEY_FILE_NAME
    assert key and key.startswith("hearth-") and config.api_key_sha256 == key_digest(key)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and key not in path.read_text()
    again, shown = secure_config(tmp_path, host="127.0.0.1")
    assert shown is None and again.api_key_sha256 == config.api_key_sha256  # shown once, then only its digest
    beyond, shown = secure_config(tmp_path, host="0.0.0.0")
    assert shown is None and beyond.api_key_sha256 == config.api_key_sha256  # one key for every address
    renewed, new = secure_config(tmp_path, new_key=True)
    assert new and new != key and renewed.api_key_sha256 == key_digest(new)
    path.chmod(0o644)
    assert ApiKeyFile(path).digest() == key_digest(new) and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_no_key_is_for_loopback_only_and_never_with_a_new_key(tmp_path):
    config, key = secure_config(tmp_path, host="127.0.0.1", no_key=True)
    assert key is None and config.api_key_sha256 is None and not any(tmp_path.iterdir())
    with pytest.raises(UsageError, match="loopback"):
        secure_config(tmp_path, host="0.0.0.0", no_key=True)
    with pytest.raises(UsageError, match="--new-key"):
        secure_config(tmp_path, no_key=True, new_key=True)
    assert not any(tmp_path.iterdir())  # refused before any key was made


def test_cors_star_needs_a_key(tmp_path):
    from starlette.testclient import TestClient

    with pytest.raises(UsageError, match=r"'\*'"):
        check_config(ServerConfig(cors_origins=("*",)))
    with pytest.raises(UsageError, match=r"'\*'"):
        create_app(_hearth(tmp_path), ServerConfig(cors_origins=("*",)))
    with pytest.raises(UsageError, match=r"'\*'"):
        secure_config(tmp_path, no_key=True, cors_origins=("*",))
    config, key = secure_config(tmp_path, cors_origins=("*",))  # with the key, any page may ask, if it has the key
    preflight = {"origin": "https://example.com", "access-control-request-method": "POST",
                 "access-control-request-headers": "authorization"}
    with TestClient(create_app(_hearth(tmp_path), config), base_url="http://127.0.0.1") as client:
        assert client.options("/v1/chat/completions", headers=preflight).headers["access-control-allow-origin"] == "*"
        assert client.get("/v1/models", headers={"origin": "https://example.com"}).status_code == 401


def test_every_request_needs_the_key_when_bound_beyond_loopback(tmp_path):
    config, key = secure_config(tmp_path, host="0.0.0.0", port=0)
    # Configured as if bound to every interface, but served on loopback for the test.
    with ApiServer(create_app(_hearth(tmp_path), config), host="127.0.0.1", port=0) as server:
        with pytest.raises(openai.AuthenticationError) as info:
            openai.OpenAI(base_url=server.url, api_key="hearth-wrong", max_retries=0).models.list()
        assert info.value.code == "invalid_api_key"
        for headers in ({}, {"authorization": "Basic " + key}, {"authorization": "Bearer"}):
            r = httpx.get(f"{server.url}/models", headers=headers)
            assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = httpx.post(f"{server.url}/embeddings", json={"model": "hearth-embed", "input": "x"})
        assert r.status_code == 401
        good = openai.OpenAI(base_url=server.url, api_key=key, max_retries=0)
        assert "hearth-embed" in [m.id for m in good.models.list()]
        # Off loopback the host name is not checked: the key is what protects the API.
        assert httpx.get(f"{server.url}/models", headers={"authorization": f"Bearer {key}",
                                                          "host": "office-pc.lan:8642"}).status_code == 200


# `hearth serve`, in this process (the server itself is replaced) ------------------------------------


@pytest.fixture
def served(monkeypatch) -> list[ServerConfig]:
    import app.server

    configs: list[ServerConfig] = []
    monkeypatch.setattr(app.server, "serve_forever", lambda hearth, config: configs.append(config))
    return configs


def test_hearth_serve_makes_a_key_shows_it_once_and_requires_it_on_every_address(tmp_path, served, capsys):
    from app.cli import main

    data = ["--data-dir", str(tmp_path)]
    assert main([*data, "serve"]) == 0
    key = KEY.search(capsys.readouterr().err).group(1)
    assert served[0].host == "127.0.0.1" and served[0].api_key_sha256 == key_digest(key)
    assert main([*data, "serve", "--host", "0.0.0.0", "--workspace", "hr"]) == 0
    err = capsys.readouterr().err
    assert "hearth-" not in err and "made earlier" in err
    assert served[1].api_key_sha256 == key_digest(key) and served[1].workspace == "hr"
    assert main([*data, "serve", "--no-key"]) == 0
    assert served[2].api_key_sha256 is None and "No API key" in capsys.readouterr().err
    assert main([*data, "serve", "--new-key"]) == 0
    new = KEY.search(capsys.readouterr().err).group(1)
    assert new != key and served[3].api_key_sha256 == key_digest(new)


def test_hearth_serve_refuses_no_key_off_loopback_and_with_new_key(tmp_path, served, capsys):
    from app.cli import main

    data = ["--data-dir", str(tmp_path)]
    assert main([*data, "serve", "--host", "0.0.0.0", "--no-key"]) == 2
    assert "--no-key is for the loopback address only" in capsys.readouterr().err
    assert main([*data, "serve", "--no-key", "--new-key"]) == 2
    assert "use one or the other" in capsys.readouterr().err
    assert main([*data, "serve", "--no-key", "--cors-origin", "*"]) == 2
    assert "needs an API key" in capsys.readouterr().err
    assert served == [] and not (tmp_path / KEY_FILE_NAME).exists()


# A real `hearth serve` process ---------------------------------------------------------------------


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def test_real_hearth_serve_on_loopback_answers_401_without_its_key_and_200_with_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HEARTH_POLICY"}
    env.update(PYTHONUNBUFFERED="1", HEARTH_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "app", "--data-dir", str(tmp_path / "data"), "serve",
                             "--host", "127.0.0.1", "--port", "0"],
                            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stderr, lines), daemon=True).start()
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 90
        while not any("Hearth API on" in line for line in seen) and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            seen.append(line)
        text = "".join(seen)
        url, key = re.search(r"Hearth API on (http://127\.0\.0\.1:\d+/v1)", text), KEY.search(text)
        assert url and key, text
        url, key = url.group(1), key.group(1)
        assert "API key required" in text
        r = httpx.get(f"{url}/models", timeout=30)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = httpx.get(f"{url}/models", headers={"Authorization": "Bearer hearth-not-the-key"}, timeout=30)
        assert r.status_code == 401
        r = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 200 and "hearth-rag:default" in [m["id"] for m in r.json()["data"]]
        client = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=30)
        assert "hearth-embed" in [m.id for m in client.models.list()]
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
    stored = tmp_path / "data" / KEY_FILE_NAME
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stored.read_text().strip() == key_digest(key)

"""The administrator's policy: parsing, refusing what it forbids, and being honoured by the CLI, the server and
the API the GUI reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app import policy as policy_mod
from app.cli import main
from inference.errors import UsageError
from app.policy import (
    API_FORBIDDEN,
    API_KEY_ONLY,
    CHAT_MODEL,
    DATA_DIR,
    MAX_FILE_SIZE,
    Policy,
    PolicyError,
    api_server_config,
    load_policy,
    parse_policy,
)
from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
QWEN = "qwen2.5-coder-0.5b-instruct-q4_k_m"
SMOL = "smollm2-135m-instruct-q4_1"


@pytest.fixture(autouse=True)
def _no_system_policy(tmp_path, monkeypatch):
    """Tests never read the machine's own /etc/hearth/policy.toml."""
    monkeypatch.setattr(policy_mod, "SYSTEM_POLICY", tmp_path / "no-such-system-policy.toml")
    monkeypatch.delenv("HEARTH_POLICY", raising=False)


def write_policy(tmp_path: Path, text: str, monkeypatch=None) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    if monkeypatch is not None:
        monkeypatch.setenv("HEARTH_POLICY", str(path))
    return path


# Reading the file ---------------------------------------------------------------------------------


def test_no_file_means_no_policy():
    p = load_policy()
    assert p == Policy() and not p.active and p.locked() == {} and p.note() == ""


def test_the_shipped_example_parses_to_what_its_comments_say():
    p = load_policy(ROOT / "packaging" / "policy.example.toml", user=lambda: "anna")
    assert p.data_dir == Path("/srv/hearth/anna")
    assert p.max_file_bytes == 50_000_000
    assert p.models_dir == Path("/srv/hearth/models")
    assert p.allowed_models == (QWEN, SMOL)
    assert p.api_server == API_KEY_ONLY and p.remote == "allowed"
    assert set(p.locked()) == {DATA_DIR, MAX_FILE_SIZE, "models_dir", CHAT_MODEL, "api_server"}
    assert p.is_locked(DATA_DIR) and not p.is_locked("llm_url")
    assert "policy.example.toml" in p.note()


def test_hearth_policy_names_a_file_only_when_there_is_no_system_policy(tmp_path):
    own = write_policy(tmp_path, '[api]\nserver = "forbidden"\n')
    system = tmp_path / "etc-policy.toml"
    assert load_policy(env={"HEARTH_POLICY": str(own)}, system=system).api_server == API_FORBIDDEN
    system.write_text('[api]\nserver = "key-only"\n')
    # A user cannot swap the administrator's file for their own.
    assert load_policy(env={"HEARTH_POLICY": str(own)}, system=system).api_server == API_KEY_ONLY
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(env={"HEARTH_POLICY": str(tmp_path / "missing.toml")}, system=tmp_path / "absent")


@pytest.mark.parametrize(("text", "message"), [
    ("[data]\nfolder = '/x'\nmax_size = 3\n", "unknown key data.max_size"),
    ("[network]\nallow = false\n", "unknown section or key 'network'"),
    ("[api]\nserver = 'sometimes'\n", "api.server must be one of"),
    ("[data]\nfolder = 'relative/path'\n", "absolute path"),
    ("[data]\nmax_file_size = 'huge'\n", "max_file_size"),
    ("[data]\nkeep_versions = -1\n", "data.keep_versions must be a whole number"),
    ("[data]\nkeep_versions = 'all'\n", "data.keep_versions must be a whole number"),
    ("[models]\nallowed = []\n", "non-empty list"),
    ("[models]\nallowed = ['/tmp/x.gguf']\n", "not paths"),
    ("[shared]\nllm_url = 'gpu-box:8080'\n", "http:// or https://"),
    ("version = 2\n", "version 2"),
    ("[api\nserver=", "not valid TOML"),
])
def test_a_broken_policy_stops_hearth_instead_of_unlocking_anything(tmp_path, text, message):
    with pytest.raises(PolicyError, match=re.escape(message)):
        load_policy(write_policy(tmp_path, text))


def test_sizes_and_user_folders(tmp_path):
    def size(value) -> int:
        return parse_policy({"data": {"max_file_size": value}}, source=tmp_path).max_file_bytes

    assert size(1024) == 1024 and size("2 GiB") == 2 << 30 and size("1.5 MB") == 1_500_000 and size("10kb") == 10_000
    p = parse_policy({"data": {"folder": "~/hearth-{user}"}}, source=tmp_path, user=lambda: "bo")
    assert p.data_dir == Path("~/hearth-bo").expanduser()


def test_keeping_earlier_versions_can_be_turned_off(tmp_path):
    p = parse_policy({"data": {"keep_versions": 0, "max_file_size": "1 MB"}}, source=tmp_path)
    assert p.locked()["keep_versions"] == 0 and p.is_locked("keep_versions")
    config = p.apply(HearthConfig(data_dir=tmp_path, ingest=IngestOptions(keep_versions=5)))
    assert (config.ingest.keep_versions, config.ingest.max_file_bytes) == (0, 1_000_000)
    assert parse_policy({}, source=tmp_path).apply(HearthConfig(data_dir=tmp_path)).ingest.keep_versions == 5
    from app.config import Requested, hearth_config

    env = {"HEARTH_DATA_DIR": str(tmp_path), "HEARTH_KEEP_VERSIONS": "2"}
    assert hearth_config(Requested(), policy=Policy(), env=env).ingest.keep_versions == 2
    assert hearth_config(Requested(), policy=p, env=env).ingest.keep_versions == 0  # the policy wins
    with pytest.raises(UsageError, match="HEARTH_KEEP_VERSIONS must be a whole number"):
        hearth_config(Requested(), policy=Policy(), env={**env, "HEARTH_KEEP_VERSIONS": "all"})


# What it allows -----------------------------------------------------------------------------------


def test_models_are_allowed_by_name_never_by_path():
    p = Policy(source=Path("/etc/hearth/policy.toml"), allowed_models=(QWEN, "mistral-7b.Q4_K_M.gguf", "phi"))
    assert p.allows_model(QWEN) and p.allows_model("mistral-7b.Q4_K_M.gguf") and p.allows_model("mistral-7b.Q4_K_M")
    assert p.allows_model("phi.gguf")
    assert not p.allows_model(SMOL)
    assert not p.allows_model("/tmp/mistral-7b.Q4_K_M.gguf") and not p.allows_model("../phi.gguf")
    assert Policy().allows_model("/any/path.gguf")


def test_apply_puts_every_locked_value_into_the_config(tmp_path):
    p = Policy(source=tmp_path / "p.toml", data_dir=tmp_path / "locked", models_dir=tmp_path / "models",
               allowed_models=(SMOL,), max_file_bytes=1000, chroma_url="http://index.lan:8000")
    config = p.apply(HearthConfig(data_dir=tmp_path / "mine", ingest=IngestOptions(chunk_tokens=150)))
    assert config.data_dir == tmp_path / "locked" and config.models_dir == tmp_path / "models"
    assert config.allowed_models == (SMOL,)
    assert config.chat_model == SMOL  # the built-in default is not allowed, so the first allowed one is
    assert config.ingest.max_file_bytes == 1000 and config.ingest.chunk_tokens == 150
    assert config.chroma_url == "http://index.lan:8000" and config.llm_url is None
    with pytest.raises(PolicyError, match="not allowed"):
        p.apply(HearthConfig(data_dir=tmp_path, chat_model=QWEN))
    with pytest.raises(PolicyError, match="Chroma server is set to"):
        p.apply(HearthConfig(data_dir=tmp_path, chroma_url="http://elsewhere:8000"))


def test_remote_engines_can_be_forbidden(tmp_path):
    p = Policy(source=tmp_path / "p.toml", remote="forbidden")
    with pytest.raises(PolicyError, match="an inference server cannot be used"):
        p.apply(HearthConfig(data_dir=tmp_path, llm_url="http://gpu:8080/v1"))
    assert p.apply(HearthConfig(data_dir=tmp_path)).llm_url is None


def test_the_service_refuses_models_outside_the_list(tmp_path):
    gguf = tmp_path / "models" / "other.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    hearth = Hearth(HearthConfig(data_dir=tmp_path, allowed_models=("other",)), embedder=HashEmbedder())
    assert hearth.resolve_model_path("other.gguf") == gguf
    with pytest.raises(UsageError, match="not allowed"):
        hearth.resolve_model_path(str(gguf))  # the same file by path: paths are not on the list
    with pytest.raises(UsageError, match="not allowed"):
        hearth.resolve_model_path(None)  # the built-in default is not on the list either
    assert [m.key for m in hearth.models()] == ["other.gguf"]


def test_max_file_size_is_enforced_when_indexing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "small.txt").write_text("The meal allowance abroad is sixty euros. " * 5)
    (docs / "big.txt").write_text("A long report about travel. " * 200)
    config = Policy(source=tmp_path / "p.toml", max_file_bytes=1000).apply(
        HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)))
    report = Hearth(config, embedder=HashEmbedder()).ingest([docs])
    assert report.added == 1
    assert [Path(f.source).name for f in report.failed] == ["big.txt"] and "too large" in report.failed[0].error


# The command line ---------------------------------------------------------------------------------


def test_cli_refuses_another_data_folder_and_uses_the_locked_one(tmp_path, monkeypatch, capsys):
    locked = tmp_path / "locked"
    write_policy(tmp_path, f'[data]\nfolder = "{locked}"\n', monkeypatch)
    assert main(["--data-dir", str(tmp_path / "mine"), "sources"]) == 2
    err = capsys.readouterr().err
    assert "set to" in err and str(locked) in err and "policy" in err
    monkeypatch.delenv("HEARTH_DATA_DIR")  # the test suite sets it; a user's own setting would conflict too
    assert main(["sources", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"sources": []}
    assert (locked / "manifest.sqlite").is_file()
    assert main(["--data-dir", str(locked), "sources"]) == 0  # the same folder is fine


def test_cli_offers_and_accepts_only_allowed_models(tmp_path, monkeypatch, capsys):
    write_policy(tmp_path, f'[models]\nallowed = ["{SMOL}"]\n', monkeypatch)
    assert main(["models", "--json"]) == 0
    assert [m["key"] for m in json.loads(capsys.readouterr().out)["models"]] == [SMOL]
    assert main(["ask", "What is the meal allowance?", "--model", QWEN]) == 2
    assert "not allowed" in capsys.readouterr().err


def test_cli_refuses_remote_engines_the_policy_forbids(tmp_path, monkeypatch, capsys):
    write_policy(tmp_path, '[shared]\nremote = "forbidden"\n', monkeypatch)
    assert main(["--chroma-url", "http://127.0.0.1:9", "sources"]) == 2
    assert "keeps everything on this machine" in capsys.readouterr().err
    monkeypatch.setenv("HEARTH_LLM_URL", "http://127.0.0.1:9/v1")
    assert main(["sources"]) == 2


def test_a_broken_policy_stops_the_cli_with_the_reason(tmp_path, monkeypatch, capsys):
    write_policy(tmp_path, '[api]\nserver = "maybe"\n', monkeypatch)
    assert main(["sources"]) == 2
    err = capsys.readouterr().err
    assert "policy.toml" in err and "api.server" in err


# The API server -----------------------------------------------------------------------------------


def test_serve_is_refused_when_the_api_is_forbidden(tmp_path, monkeypatch, capsys):
    write_policy(tmp_path, '[api]\nserver = "forbidden"\n', monkeypatch)
    assert main(["--data-dir", str(tmp_path / "data"), "serve", "--port", "0"]) == 2
    assert "does not allow the API server" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path / "data"), "serve", "--port", "0", "--no-key"]) == 2


def test_mcp_is_refused_when_the_api_is_forbidden(tmp_path, monkeypatch, capsys):
    write_policy(tmp_path, '[api]\nserver = "forbidden"\n', monkeypatch)
    assert main(["--data-dir", str(tmp_path / "data"), "mcp"]) == 2
    err = capsys.readouterr().err
    assert "`hearth mcp` cannot run" in err and str(tmp_path / "policy.toml") in err


def test_serve_no_key_is_refused_under_key_only(tmp_path, monkeypatch, capsys):
    import app.server

    served = []
    monkeypatch.setattr(app.server, "serve_forever", lambda hearth, config: served.append(config))
    write_policy(tmp_path, '[api]\nserver = "key-only"\n', monkeypatch)
    assert main(["--data-dir", str(tmp_path / "data"), "serve", "--no-key"]) == 2
    assert "requires the API key on every address" in capsys.readouterr().err and served == []
    assert main(["--data-dir", str(tmp_path / "data"), "serve"]) == 0
    assert served[0].api_key_sha256 is not None


def test_the_api_switch_requires_a_key_on_loopback_by_default_and_key_only_refuses_going_without(tmp_path):
    from starlette.testclient import TestClient

    from app.server import create_app

    hearth = Hearth(HearthConfig(data_dir=tmp_path), embedder=HashEmbedder(), chat_model=ScriptedModel("hi"))
    # No policy: what the GUI's API switch gets is the same as `hearth serve`'s: a key, made now, shown once.
    config, key = api_server_config(Policy(), tmp_path, port=0)
    assert key and key.startswith("hearth-") and config.api_key_sha256 and config.host == "127.0.0.1"
    with TestClient(create_app(hearth, config), base_url="http://127.0.0.1") as client:
        assert client.get("/v1/models").status_code == 401
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    again, none = api_server_config(Policy(), tmp_path)
    assert none is None and again.api_key_sha256 == config.api_key_sha256  # the stored key stays
    open_config, none = api_server_config(Policy(), tmp_path, no_key=True)
    assert none is None and open_config.api_key_sha256 is None  # going without is asked for, on loopback
    key_only = Policy(source=tmp_path / "p", api_server=API_KEY_ONLY)
    same, none = api_server_config(key_only, tmp_path)
    assert none is None and same.api_key_sha256 == config.api_key_sha256
    with pytest.raises(PolicyError, match="--no-key"):
        api_server_config(key_only, tmp_path, no_key=True)
    with pytest.raises(PolicyError):
        api_server_config(Policy(source=tmp_path / "p", api_server=API_FORBIDDEN), tmp_path)


def test_hearth_serve_under_key_only_policy_rejects_requests_without_the_key(tmp_path):
    """The real `hearth serve` process on a loopback port."""
    import httpx

    policy = write_policy(tmp_path, '[api]\nserver = "key-only"\n')
    env = dict(os.environ, HEARTH_POLICY=str(policy), HEARTH_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", "0"], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any("Hearth API on" in line for line in lines):
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
        text = "".join(lines)
        url = re.search(r"Hearth API on (http://\S+/v1)", text)
        key = re.search(r"^(hearth-\S+)$", text, re.M)
        assert url and key, text
        assert "API key required" in text
        assert httpx.get(f"{url.group(1)}/models", timeout=30).status_code == 401
        r = httpx.get(f"{url.group(1)}/models", headers={"Authorization": f"Bearer {key.group(1)}"}, timeout=30)
        assert r.status_code == 200 and r.json()["data"]
    finally:
        proc.terminate()
        proc.wait(30)


# What the GUI reads -------------------------------------------------------------------------------


def test_hearth_gui_refuses_another_data_folder_before_opening_a_window(tmp_path, monkeypatch, capsys):
    pytest.importorskip("PySide6")
    write_policy(tmp_path, f'[data]\nfolder = "{tmp_path / "locked"}"\n', monkeypatch)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert main(["--data-dir", str(tmp_path / "mine"), "gui"]) == 2
    assert "administrator's policy" in capsys.readouterr().err


def test_the_gui_api_reports_every_locked_setting_with_its_reason(tmp_path):
    path = write_policy(tmp_path, f"""
[data]
folder = "{tmp_path / 'data'}"
max_file_size = "20 MB"
[models]
folder = "{tmp_path / 'models'}"
allowed = ["{SMOL}"]
[api]
server = "forbidden"
[shared]
llm_url = "http://gpu.office.lan:8080/v1"
llm_model = "qwen2.5-7b"
""")
    p = load_policy(path)
    assert p.active and p.source == path
    assert p.locked() == {
        "data_dir": tmp_path / "data", "max_file_size": 20_000_000, "models_dir": tmp_path / "models",
        "chat_model": (SMOL,), "api_server": "forbidden", "llm_url": "http://gpu.office.lan:8080/v1",
        "llm_model": "qwen2.5-7b",
    }
    assert p.note() == f"Set by your administrator in {path}."
    with pytest.raises(PolicyError):
        p.check_api_server()  # the GUI's API switch: disabled
    config = p.apply(HearthConfig(data_dir=Path("/home/u/.local/share/hearth")))
    assert (config.data_dir, config.models_dir, config.chat_model) == (tmp_path / "data", tmp_path / "models", SMOL)
    assert (config.llm_url, config.llm_model) == ("http://gpu.office.lan:8080/v1", "qwen2.5-7b")

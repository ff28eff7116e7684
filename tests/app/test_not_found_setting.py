"""The user's strictness for "not found" (#63): one setting, the same from the command line, the environment,
the API and MCP; an unknown value is a usage error everywhere."""

from __future__ import annotations

import pytest

from app.cli import main
from app.config import Requested, hearth_config
from app.openai_format import ApiError, parse_chat_request
from inference.errors import UsageError

BODY = {"model": "hearth-rag", "messages": [{"role": "user", "content": "What is the door code?"}]}


def test_the_flag_takes_three_values_and_refuses_others(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--data-dir", str(tmp_path / "data"), "ask", "What is the door code?", "--not-found", "sometimes"])
    assert exited.value.code == 2
    assert "--not-found" in capsys.readouterr().err


def test_the_variable_the_flag_and_the_default(tmp_path):
    base = Requested(data_dir=tmp_path / "data")
    assert hearth_config(base, env={}).not_found == "balanced"
    assert hearth_config(base, env={"HEARTH_NOT_FOUND": "strict"}).not_found == "strict"
    assert hearth_config(Requested(data_dir=tmp_path / "data", not_found="off"),
                         env={"HEARTH_NOT_FOUND": "strict"}).not_found == "off"  # the flag wins
    with pytest.raises(UsageError, match="strict, balanced, off"):
        hearth_config(base, env={"HEARTH_NOT_FOUND": "never"})


def test_a_bad_environment_value_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEARTH_NOT_FOUND", "never")
    assert main(["--data-dir", str(tmp_path / "data"), "sources"]) == 2
    assert "not-found mode" in capsys.readouterr().err


def test_the_api_takes_it_per_request():
    assert parse_chat_request(BODY, max_messages=50).not_found is None  # the server's setting
    assert parse_chat_request({**BODY, "not_found": "off"}, max_messages=50).not_found == "off"
    with pytest.raises(ApiError) as refused:
        parse_chat_request({**BODY, "not_found": "never"}, max_messages=50)
    assert refused.value.status == 400 and refused.value.param == "not_found"

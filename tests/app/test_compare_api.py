"""The compare call of the local API (POST /v1/compare) and of MCP (compare_documents), in process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.api_auth import ServerConfig
from rag.config import HearthConfig
from rag.ingest import IngestOptions
from rag.service import Hearth
from tests.fakes import HashEmbedder, ScriptedModel

OLD = "# Leave\n\n## Days\n\nStaff get 25 days of leave a year. Unused days lapse at year end.\n"
MENU = "# Canteen\n\n## Monday\n\nSoup of the day with fresh bread. Garden salad with goat cheese.\n"


@pytest.fixture
def hearth(tmp_path) -> tuple[Hearth, Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    leave, menu = docs / "leave.md", docs / "menu.md"
    leave.write_text(OLD)
    menu.write_text(MENU)
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder(),
               chat_model=ScriptedModel("ok"))
    h.ingest([docs])
    leave.write_text(OLD.replace("25 days", "27 days"))
    st = leave.stat()
    os.utime(leave, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    h.ingest([docs])
    return h, leave, menu


def test_the_api_compares_a_document_with_its_previous_version(hearth):
    from starlette.testclient import TestClient

    from app.server import create_app

    h, leave, menu = hearth
    with TestClient(create_app(h, ServerConfig()), base_url="http://127.0.0.1") as tc:
        r = tc.post("/v1/compare", json={"old": str(leave), "previous": True})
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"old", "new", "changes", "summary"}
        assert [(c["kind"], c["old_text"], c["new_text"]) for c in body["changes"]] == [
            ("changed", "Staff get 25 days of leave a year.", "Staff get 27 days of leave a year.")]
        r = tc.post("/v1/compare", json={"old": str(leave), "new": str(menu)})
        assert r.status_code == 422 and "share no sections" in r.json()["error"]["message"]
        r = tc.post("/v1/compare", json={"old": str(leave), "previous": True, "version": 5})
        assert r.status_code == 400 and "no earlier version 5" in r.json()["error"]["message"]
        assert str(leave.parent) not in r.text  # errors name no local path
        r = tc.post("/v1/compare", json={"previous": True})
        assert r.status_code == 400 and r.json()["error"]["param"] == "old"


def test_mcp_has_a_compare_tool(hearth):
    import anyio

    pytest.importorskip("mcp")
    from app.mcp_server import build_mcp

    h, leave, _ = hearth
    server = build_mcp(h)

    async def call():
        return await server.call_tool("compare_documents", {"old": str(leave), "previous": True})

    result = anyio.run(call)
    payload = result.structured_content if getattr(result, "structured_content", None) else json.loads(
        result.content[0].text)
    payload = payload.get("result", payload)
    assert payload["workspace"] == "default" and payload["old"]["version"] == 1 and payload["new"]["version"] == 2
    assert payload["changes"][0]["new_text"] == "Staff get 27 days of leave a year."


def test_a_grounded_chat_completion_carries_the_comparison(hearth):
    from starlette.testclient import TestClient

    from app.server import create_app

    h, leave, _ = hearth
    with TestClient(create_app(h, ServerConfig()), base_url="http://127.0.0.1") as tc:
        r = tc.post("/v1/chat/completions", json={"model": "hearth-rag", "messages": [
            {"role": "user", "content": "What changed in leave?"}]})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["comparison"]["changes"][0]["new_text"] == "Staff get 27 days of leave a year."
        assert "~~25~~ **27**" in body["choices"][0]["message"]["content"]

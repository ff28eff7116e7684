"""`hearth mcp` as a subprocess, driven over stdio by the official `mcp` SDK's client.

The data folder is indexed here with the real default embedder (the subprocess uses the same one, from
the cache this leaves); answers come from a tiny random-weight GGUF through llama.cpp, so their text is
noise but their sources are real.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")
pytest.importorskip("llama_cpp")
anyio = pytest.importorskip("anyio")

from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.tinygguf import write_tiny_llama  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("mcp")
    docs = base / "docs"
    docs.mkdir()
    (docs / "leave-policy.md").write_text(
        "# Annual leave\n\nEvery employee gets 25 days of paid annual leave per calendar year. "
        "Up to five unused days may be carried over to the next year.\n")
    (docs / "it-handbook.txt").write_text(
        "If your laptop is stolen, call the IT service desk on extension 4400 within one hour "
        "and report the theft to the police.\n")
    data = base / "data"
    hearth = Hearth(HearthConfig(data_dir=data, embed_threads=2))
    report = hearth.ingest([docs])
    assert report.added == 2 and not report.failed
    (data / "models").mkdir()
    write_tiny_llama(data / "models" / "tiny.gguf", n_ctx=2048)
    return data


def test_mcp_server_tools_over_stdio(data):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app", "--threads", "2", "mcp", "--model", "tiny.gguf", "--ctx", "2048"],
        env=dict(os.environ, HEARTH_DATA_DIR=str(data)),
        cwd=str(ROOT),
    )

    async def session() -> dict:
        out = {}
        async with Client(params, read_timeout_seconds=120) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["search"] = await client.call_tool("search_documents", {"query": "annual leave days", "k": 2})
            out["ask"] = await client.call_tool("ask", {"question": "How many days of annual leave do I get?"})
            out["sources"] = await client.call_tool("list_sources", {})
            it = next(x["source"] for x in _result(out["sources"])["sources"] if x["source"].endswith(".txt"))
            out["scoped"] = await client.call_tool("search_documents", {"query": "annual leave days", "k": 2,
                                                                        "documents": [it]})
            out["outside"] = await client.call_tool("search_documents", {"query": "leave", "documents": ["/nope"]})
            out["bad"] = await client.call_tool("search_documents", {"query": "leave", "k": 0})
        return out

    out = anyio.run(session)
    assert set(out["tools"]) == {"search_documents", "ask", "list_sources", "summarize_document",
                                 "compare_documents"}
    assert out["tools"]["search_documents"].description and "k" in out["tools"]["search_documents"].input_schema[
        "properties"]

    search = _result(out["search"])
    assert len(search["passages"]) == 2
    assert Path(search["passages"][0]["source"]).name == "leave-policy.md"
    assert {"source", "page", "heading", "score", "text"} <= set(search["passages"][0])

    answer = _result(out["ask"])
    assert isinstance(answer["answer"], str) and answer["answer"]
    assert Path(answer["sources"][0]["source"]).name == "leave-policy.md" and "cited" in answer["sources"][0]
    assert answer["quotes"] and set(answer["quotes"][0]) == {"source", "page", "heading", "text", "start", "end"}
    assert answer["abstained"] is False  # the documents answer it; "not found" would say so here

    names = sorted(Path(s["source"]).name for s in _result(out["sources"])["sources"])
    assert names == ["it-handbook.txt", "leave-policy.md"]

    assert out["bad"].is_error and "between 1 and 20" in out["bad"].content[0].text
    # Limited to one document, the search answers from it alone; a path that is not indexed is an error.
    scoped = _result(out["scoped"])["passages"]
    assert scoped and all(Path(p["source"]).name == "it-handbook.txt" for p in scoped)
    assert out["outside"].is_error and "not an indexed document" in out["outside"].content[0].text


def _result(result) -> dict:
    """A tool's structured result, checked against the JSON text it also sends for older clients."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content

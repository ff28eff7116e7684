"""Shared-office mode's index on a real Chroma server (`chroma run` on loopback), used by two "machines".

Each machine is a Hearth with its own data folder pointed at the same server, as two office PCs would be.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.errors import StoreError
from rag.ingest import IngestOptions
from rag.shared_store import SharedHybridStore, connect_chroma, shared_folder_name
from rag.service import Hearth, HearthConfig
from rag.store import ChromaStore, collection_name
from tests.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
CHROMA = Path(sys.executable).with_name("chroma")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory) -> Iterator[str]:
    """A real Chroma server on a loopback port, its data in a temporary folder."""
    if not CHROMA.exists():
        pytest.skip("the `chroma` command (chromadb) is not installed")
    path = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    proc = subprocess.Popen([str(CHROMA), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connect_chroma(url)
                break
            except StoreError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma run did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def machine(root: Path, url: str, *, refresh: float = 2.0) -> Hearth:
    """One office PC: its own data folder, the shared index (the server's document list re-read after `refresh` s)."""
    config = HearthConfig(data_dir=root, chroma_url=url, ingest=IngestOptions(workers=0), shared_refresh_seconds=refresh)
    return Hearth(config, embedder=HashEmbedder())


def write_docs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "travel.md").write_text("# Travel\n\nThe daily meal allowance abroad is 60 euros.\n")
    (folder / "laptops.md").write_text("# Laptops\n\nA stolen laptop is reported to the IT desk within one hour.\n")
    return folder


def test_ingest_and_search_live_on_the_server(chroma_url, tmp_path):
    a = machine(tmp_path / "pc-a", chroma_url)
    report = a.ingest([write_docs(tmp_path / "docs")], workspace="ws-basic")
    assert report.added == 2 and not report.failed
    hits = a.search("meal allowance abroad", k=2, workspace="ws-basic")
    assert hits[0].source.endswith("travel.md")
    assert isinstance(a.store, SharedHybridStore)
    # The vectors are on the server, not in a local Chroma folder.
    assert not (tmp_path / "pc-a" / "index").exists()
    server = connect_chroma(chroma_url)
    assert server.get_collection(collection_name("ws-basic")).count() == report.chunks
    # This machine's own bookkeeping is kept apart per server, beside any local index.
    assert (tmp_path / "pc-a" / "shared" / shared_folder_name(chroma_url) / "manifest.sqlite").is_file()


def test_a_second_machine_finds_what_the_first_indexed(chroma_url, tmp_path):
    docs = write_docs(tmp_path / "docs")
    a, b = machine(tmp_path / "pc-a", chroma_url), machine(tmp_path / "pc-b", chroma_url, refresh=0.0)
    a.ingest([docs], workspace="ws-share")
    hits = b.search("stolen laptop", k=1, workspace="ws-share")
    assert hits and hits[0].source.endswith("laptops.md")
    assert "IT desk" in hits[0].text
    assert b.search("stolen laptop", k=1, workspace="ws-share", mode="lexical")[0].source.endswith("laptops.md")

    # A changes a document: B sees the new text, not the old, in both rankings.
    (docs / "travel.md").write_text("# Travel\n\nThe daily meal allowance abroad is 75 euros since June.\n")
    assert a.ingest([docs], workspace="ws-share").updated == 1
    for mode in ("hybrid", "lexical", "dense"):
        texts = [h.text for h in b.search("meal allowance abroad", k=3, workspace="ws-share", mode=mode)]
        assert any("75 euros" in t for t in texts) and not any("60 euros" in t for t in texts), (mode, texts)

    # A forgets a document: B stops finding it.
    a.forget([docs / "laptops.md"], workspace="ws-share")
    assert all(not h.source.endswith("laptops.md") for h in b.search("stolen laptop", k=3, workspace="ws-share"))


def test_a_document_half_written_by_another_machine_is_not_shown(chroma_url, tmp_path):
    docs = write_docs(tmp_path / "docs")
    a, b = machine(tmp_path / "pc-a", chroma_url), machine(tmp_path / "pc-b", chroma_url, refresh=0.0)
    a.ingest([docs], workspace="ws-crash")
    source = str((docs / "travel.md").resolve())
    # Another machine wrote chunks of a new version and died before recording it (no document record).
    from rag.chunking import Chunk

    chunk = Chunk(text="The daily meal allowance abroad is 99 euros.", page=None, heading="Travel", start=0, end=44,
                  index=0)
    vectors = HashEmbedder().embed([chunk.text])
    ChromaStore.replace_document(a.store.vectors, "ws-crash", source, [chunk], vectors, version="f" * 64)
    query = HashEmbedder().embed(["meal allowance abroad"])[0]
    assert any("99 euros" in h.text for h in ChromaStore.query(b.store.vectors, "ws-crash", query, k=5))  # on the server
    texts = [h.text for h in b.search("meal allowance abroad", k=5, workspace="ws-crash", mode="dense")]
    assert texts and not any("99 euros" in t for t in texts)


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    port = free_port()  # nothing listens there
    with pytest.raises(StoreError, match="Cannot reach the shared Chroma server") as caught:
        connect_chroma(f"http://127.0.0.1:{port}")
    assert "chroma run" in caught.value.hint
    with pytest.raises(StoreError, match="not a Chroma server address"):
        connect_chroma("chroma.lan:8000")
    hearth = machine(tmp_path, f"http://127.0.0.1:{port}")
    with pytest.raises(StoreError):
        hearth.ingest([write_docs(tmp_path / "docs")], workspace="ws-down")


@pytest.mark.slow
def test_cli_shared_office_ingest_search_ask(chroma_url, tmp_path):
    """`hearth --chroma-url … --llm-url …`: the real embedder, the demo documents, an inference server."""
    import httpx

    from tests.tinygguf import write_tiny_llama

    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")
    model = write_tiny_llama(tmp_path / "tiny.gguf")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "2048"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        env = dict(os.environ, HEARTH_DATA_DIR=str(tmp_path / "data"), HEARTH_CHROMA_URL=chroma_url)
        llm = f"http://127.0.0.1:{port}/v1"

        def hearth(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "app", "--threads", "2", *args], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=900)

        r = hearth("ingest", str(ROOT / "assets" / "demo"), "--workspace", "ws-cli", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["added"] == 3
        r = hearth("search", "meal allowance abroad", "--workspace", "ws-cli", "--json")
        assert json.loads(r.stdout)["hits"][0]["source"].endswith("travel-policy.pdf")
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{llm}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "llama_cpp.server did not start"
            time.sleep(0.3)
        r = hearth("--llm-url", llm, "ask", "What is the daily meal allowance abroad?", "--workspace", "ws-cli",
                   "--ctx", "2048", "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert isinstance(out["answer"], str) and out["sources"][0]["source"].endswith("travel-policy.pdf")
    finally:
        proc.terminate()
        proc.wait(30)

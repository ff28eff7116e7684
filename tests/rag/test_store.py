from __future__ import annotations

import numpy as np
import pytest

from rag.chunking import Chunk
from rag.store import ChromaStore
from tests.fakes import HashEmbedder


def _chunks(texts: list[str], page: int | None = 1) -> list[Chunk]:
    out, pos = [], 0
    for i, t in enumerate(texts):
        out.append(Chunk(t, page, "Head" if i % 2 else None, pos, pos + len(t), i))
        pos += len(t) + 2
    return out


@pytest.fixture
def store(tmp_path):
    return ChromaStore(tmp_path / "index")


def test_replace_query_and_delete(store):
    emb = HashEmbedder()
    a = _chunks(["cats purr softly", "dogs bark loudly"])
    b = _chunks(["ships sail the sea"], page=None)
    store.replace_document("ws", "/a.pdf", a, emb.embed([c.text for c in a]), version="v1")
    store.replace_document("ws", "/b.md", b, emb.embed([c.text for c in b]), version="v1")
    hits = store.query("ws", emb.embed(["dogs bark"])[0], k=3)
    assert hits[0].source == "/a.pdf" and hits[0].text == "dogs bark loudly"
    assert hits[0].heading == "Head" and hits[0].page == 1
    assert hits[0].score == pytest.approx(1 - 0.18, abs=0.2) and hits[0].score > hits[-1].score
    ship = [h for h in hits if h.source == "/b.md"][0]
    assert ship.page is None and ship.heading is None

    # Replacing a document with a new version leaves only the new chunks.
    a2 = _chunks(["cats sleep all day"])
    store.replace_document("ws", "/a.pdf", a2, emb.embed([c.text for c in a2]), version="v2")
    assert store.count("ws") == 2
    texts = {h.text for h in store.query("ws", emb.embed(["cats"])[0], k=10)}
    assert texts == {"cats sleep all day", "ships sail the sea"}

    store.delete_document("ws", "/a.pdf")
    assert store.count("ws") == 1


def test_workspaces_are_separate_and_names_are_free_form(store):
    emb = HashEmbedder()
    c = _chunks(["alpha beta"])
    store.replace_document("Büro 1 / Finanzen", "/x.txt", c, emb.embed(["alpha beta"]), version="v")
    assert store.count("Büro 1 / Finanzen") == 1
    assert store.count("other") == 0
    assert store.query("other", emb.embed(["alpha"])[0], k=5) == []


def test_store_persists_across_clients(tmp_path):
    emb = HashEmbedder()
    c = _chunks(["persistent words here"])
    ChromaStore(tmp_path / "idx").replace_document("ws", "/p.txt", c, emb.embed([c[0].text]), version="v")
    again = ChromaStore(tmp_path / "idx")
    assert again.count("ws") == 1

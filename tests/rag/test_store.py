from __future__ import annotations

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


class _NoCount:
    """A Chroma collection whose count() fails, and that can refuse more results than it holds."""

    def __init__(self, collection, *, refuse_beyond: bool = False) -> None:
        self._collection = collection
        self._refuse_beyond = refuse_beyond
        self.counted = 0

    def count(self) -> int:
        self.counted += 1
        if not self._refuse_beyond:
            raise AssertionError("count() is not asked per query")
        return self._collection.count()

    def query(self, **kwargs):
        if self._refuse_beyond and kwargs["n_results"] > self._collection.count():
            raise ValueError("Number of requested results 10 is greater than number of elements in index 2")
        return self._collection.query(**kwargs)


def test_a_passage_ocr_read_keeps_its_confidence_and_others_have_none(store):
    from rag.store import Hit

    emb = HashEmbedder()
    scanned = [Chunk("server room code 5821", 1, None, 0, 21, 0, ocr_confidence=0.62)]
    typed = _chunks(["ships sail the sea"], page=None)
    store.replace_document("ws", "/scan.png", scanned, emb.embed([c.text for c in scanned]), version="v1")
    store.replace_document("ws", "/b.md", typed, emb.embed([c.text for c in typed]), version="v1")
    hits = {h.source: h for h in store.query("ws", emb.embed(["server room code"])[0], k=2)}
    assert hits["/scan.png"].ocr_confidence == pytest.approx(0.62) and hits["/scan.png"].low_confidence
    assert hits["/b.md"].ocr_confidence is None and not hits["/b.md"].low_confidence
    as_json = hits["/scan.png"].to_json()
    assert as_json["ocr_confidence"] == 0.62 and hits["/b.md"].to_json()["ocr_confidence"] is None
    assert Hit.from_json({**as_json, "start": 0, "end": 21}).low_confidence  # as conversations keep it
    assert Hit.from_json({"source": "/old.md"}).ocr_confidence is None  # stored before OCR


def test_query_asks_for_no_count_and_takes_what_the_collection_holds(store):
    """count() cost more than the query itself at 100,000 passages; Chroma answers with what it holds."""
    emb = HashEmbedder()
    assert store.query("ws", emb.embed(["anything"])[0], k=10) == []  # an empty collection
    c = _chunks(["cats purr softly", "dogs bark loudly"])
    store.replace_document("ws", "/a.pdf", c, emb.embed([x.text for x in c]), version="v1")
    real = store._collection("ws")
    store._collections["ws"] = _NoCount(real)
    assert [h.text for h in store.query("ws", emb.embed(["dogs bark"])[0], k=10)] == ["dogs bark loudly",
                                                                                         "cats purr softly"]
    # A Chroma that refuses more results than it holds is asked again within its size.
    store._collections["ws"] = refusing = _NoCount(real, refuse_beyond=True)
    assert len(store.query("ws", emb.embed(["dogs bark"])[0], k=10)) == 2 and refusing.counted == 1


def test_hybrid_store_reads_passages_from_the_keyword_index_as_chroma_would_give_them(tmp_path):
    from rag.lexical import LexicalIndex
    from rag.store import HybridStore

    emb = HashEmbedder()
    store = HybridStore(ChromaStore(tmp_path / "index"), LexicalIndex(tmp_path / "lexical.sqlite"))
    docs = {"/a.pdf": ["cats purr softly", "dogs bark loudly", "birds sing at dawn"], "/b.md": ["ships sail the sea"]}
    for source, texts in docs.items():
        chunks = _chunks(texts, page=None if source.endswith(".md") else 3)
        store.replace_document("ws", source, chunks, emb.embed(texts), version="v1")
    vector = emb.embed(["dogs bark at ships"])[0]
    want = store.vectors.query("ws", vector, k=10)  # everything from Chroma
    got = store.query("ws", vector, k=10)
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
    for g, w in zip(got, want, strict=True):
        assert (g.source, g.page, g.heading, g.text, g.start, g.end) == (w.source, w.page, w.heading, w.text, w.start, w.end)
        assert g.score == pytest.approx(w.score, abs=1e-5)
    ids = [h.chunk_id for h in want[1:3]]
    assert store.hits_by_id("ws", ids, vector) == store.vectors.hits_by_id("ws", ids, vector)
    # A passage the keyword index lacks (it was not filled yet) is read from Chroma instead.
    store.lexical.delete_document("ws", "/b.md")
    assert [h.chunk_id for h in store.query("ws", vector, k=10)] == [h.chunk_id for h in want]
    ship = next(h for h in store.query("ws", vector, k=10) if h.source == "/b.md")
    assert ship.text == "ships sail the sea" and ship.page is None

"""A vector index that ChromaDB can no longer read is rebuilt from the keyword index, on real ChromaDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.errors import IndexDamaged
from rag.ingest import IngestOptions
from rag.repair import _forget_open_clients
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder

QUESTION = "Which room does item 7 of note 12 go to?"
FILES = 70  # over ChromaDB's 1,000-vector sync threshold, so that the HNSW files are really written


def _config(data: Path) -> HearthConfig:
    return HearthConfig(data_dir=data, ingest=IngestOptions(chunk_tokens=32, overlap_tokens=0, workers=0))


def _damage(data: Path) -> None:
    """What a kill in the middle of a write can leave: an HNSW segment ChromaDB cannot load."""
    headers = list((data / "index").glob("*-*/header.bin"))
    assert headers, "the index has no HNSW segment to damage"
    for header in headers:
        header.write_bytes(b"\xff" * header.stat().st_size)
    _forget_open_clients()  # as a new process would, read the files again


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(FILES):
        (folder / f"note{i}.txt").write_text("\n\n".join(
            f"Note {i}, paragraph {j}: item {j} of note {i} goes to room {100 * i + j}." for j in range(40)))
    return folder


@pytest.fixture
def damaged(tmp_path, docs):
    data = tmp_path / "data"
    h = Hearth(_config(data), embedder=HashEmbedder())
    assert h.ingest([docs]).added == FILES
    before = [(x.chunk_id, round(x.score, 5)) for x in h.search(QUESTION, k=5)]
    chunks = h.store.count("default")
    h.close()
    _damage(data)
    return data, before, chunks


def test_chroma_reports_the_damage_as_index_damaged(damaged):
    data, _, _ = damaged
    from rag.store import ChromaStore

    with pytest.raises(IndexDamaged) as err:
        ChromaStore(data / "index").count("default")
    assert "damaged" in str(err.value) and err.value.hint


def test_search_rebuilds_the_index_and_finds_the_same_passages(damaged):
    data, before, chunks = damaged
    h = Hearth(_config(data), embedder=HashEmbedder())
    assert [(x.chunk_id, round(x.score, 5)) for x in h.search(QUESTION, k=5)] == before
    report = h.last_repair
    assert report is not None and report.chunks == chunks and report.documents == FILES and not report.to_reread
    assert report.damaged.is_dir() and report.damaged.name.startswith("index.damaged-")
    assert h.store.count("default") == chunks
    h.close()


def test_ingest_after_damage_rebuilds_first_and_rereads_what_the_keyword_index_lacks(damaged, docs):
    data, _, chunks = damaged
    h = Hearth(_config(data), embedder=HashEmbedder())
    lost = str((docs / "note3.txt").resolve())
    h.store.lexical.delete_document("default", lost)  # its passages are nowhere else: it must be read again
    report = h.ingest([docs])
    assert h.last_repair is not None and h.last_repair.to_reread == [lost]
    assert not report.failed and report.added + report.updated == 1 and report.unchanged == FILES - 1
    assert {d.status for d in h.manifest.documents("default")} == {"done"}
    assert h.store.count("default") == chunks
    assert h.store.lexical.count("default") == chunks
    h.close()

"""Incremental ingest: idempotent re-ingest, changed files re-embed only changed chunks, rescans drop
deleted files, moved files reuse their vectors, and a file that breaks loses its stale chunks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rag.ingest import IngestOptions
from rag.service import Hearth, HearthConfig
from tests.fakes import CountingEmbedder
from tests.rag.make_docs import write_docx


def chapters(n: int, changed: int | None = None) -> str:
    return "\n\n".join(
        f"# Chapter {i}\n\n" + ("Revised text. " if i == changed else "") + f"Chapter {i} explains topic {i} in depth. " * 12
        for i in range(n)
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text(chapters(8))
    (root / "sub" / "note.txt").write_text("The printer needs a badge.")
    (root / "sub" / "page.html").write_text("<h1>VPN</h1><p>Connect first.</p>")
    write_docx(root / "handbook.docx")
    return root


@pytest.fixture
def hearth(tmp_path: Path) -> Hearth:
    options = IngestOptions(chunk_tokens=60, overlap_tokens=0)
    return Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=options), embedder=CountingEmbedder())


def state(h: Hearth) -> dict[str, int]:
    """source name -> chunks in the store, checked against the manifest."""
    docs = {d.source: d for d in h.sources()}
    assert all(d.status == "done" for d in docs.values())
    stored = {}
    for source, d in docs.items():
        n = len(h.store.embeddings_of("default", source))
        assert n == d.chunks
        stored[Path(source).name] = n
    assert h.store.count("default") == sum(stored.values())
    return stored


def test_reingest_adds_nothing_and_embeds_nothing(hearth: Hearth, folder: Path) -> None:
    first = hearth.ingest([folder])
    assert (first.added, first.failed) == (4, [])
    before = state(hearth)
    embedded = len(hearth.embedder.texts)
    for _ in range(2):
        again = hearth.ingest([folder])
        assert (again.added, again.updated, again.removed, again.chunks, again.unchanged) == (0, 0, 0, 0, 4)
    assert len(hearth.embedder.texts) == embedded
    assert state(hearth) == before
    # A touched file (same bytes, new time) is hashed once, found unchanged, and not touched again.
    os.utime(folder / "guide.md", ns=(10**18, 10**18))
    assert hearth.ingest([folder]).unchanged == 4
    assert hearth.manifest.get("default", str((folder / "guide.md").resolve())).mtime_ns == 10**18
    assert len(hearth.embedder.texts) == embedded


def test_changed_file_replaces_its_chunks_and_reembeds_only_changed_ones(hearth: Hearth, folder: Path) -> None:
    hearth.ingest([folder])
    guide_chunks = state(hearth)["guide.md"]
    hearth.embedder.texts.clear()
    (folder / "guide.md").write_text(chapters(8, changed=5))
    r = hearth.ingest([folder])
    assert (r.added, r.updated, r.unchanged) == (0, 1, 3)
    assert r.chunks == guide_chunks and 0 < len(hearth.embedder.texts) < guide_chunks / 2
    assert r.reused == r.chunks - len(hearth.embedder.texts)
    assert all("Chapter 5" in t for t in hearth.embedder.texts)
    texts = [h.text for h in hearth.search("Revised text chapter 5", k=20)]
    assert any("Revised text." in t for t in texts)
    state(hearth)  # no stale chunk of the old version is left


def test_rescan_removes_deleted_files_and_forget_removes_folders(hearth: Hearth, folder: Path) -> None:
    hearth.ingest([folder])
    (folder / "sub" / "note.txt").unlink()
    r = hearth.ingest([folder])
    assert (r.removed, r.unchanged) == (1, 3)
    assert set(state(hearth)) == {"guide.md", "page.html", "handbook.docx"}
    assert [Path(s).name for s in hearth.forget([folder / "sub"])] == ["page.html"]
    assert set(state(hearth)) == {"guide.md", "handbook.docx"}
    # Ingesting one file never removes its neighbours.
    assert hearth.ingest([folder / "guide.md"]).removed == 0


def test_moved_file_reuses_its_vectors(hearth: Hearth, folder: Path) -> None:
    hearth.ingest([folder])
    hearth.embedder.texts.clear()
    (folder / "archive").mkdir()
    shutil.move(folder / "guide.md", folder / "archive" / "guide-2024.md")
    r = hearth.ingest([folder])
    assert (r.added, r.removed, r.unchanged) == (1, 1, 3)
    assert hearth.embedder.texts == [] and r.reused == r.chunks > 0
    assert "guide-2024.md" in state(hearth) and "guide.md" not in state(hearth)


def test_a_copy_in_the_same_run_reuses_the_vectors(hearth: Hearth, folder: Path) -> None:
    shutil.copy(folder / "guide.md", folder / "sub" / "guide-copy.md")
    r = hearth.ingest([folder])
    guide = state(hearth)["guide.md"]
    assert r.added == 5 and r.reused == guide and len(hearth.embedder.texts) == r.chunks - guide


def test_changed_file_that_breaks_loses_its_stale_chunks(hearth: Hearth, folder: Path) -> None:
    hearth.ingest([folder])
    (folder / "handbook.docx").write_bytes(b"PK\x03\x04 damaged on the share")
    r = hearth.ingest([folder])
    assert [(Path(f.source).name, f.kind) for f in r.failed] == [("handbook.docx", "corrupt")]
    assert r.removed == 1 and "handbook.docx" not in state(hearth)
    assert not any("EUR 60" in h.text for h in hearth.search("daily allowance abroad", k=10))


def test_hidden_files_are_skipped_and_kept_out(hearth: Hearth, folder: Path) -> None:
    (folder / ".cache").mkdir()
    (folder / ".cache" / "tmp.txt").write_text("secret")
    (folder / ".draft.md").write_text("draft")
    hearth.ingest([folder])
    assert not any(".cache" in s or ".draft" in s for s in state(hearth))

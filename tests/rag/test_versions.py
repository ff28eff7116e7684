"""Earlier versions kept at indexing (rag/versions.py through ingest and Hearth): kept, pruned, removed, crash-safe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inference.errors import UsageError
from rag.config import HearthConfig
from rag.errors import StoreError
from rag.ingest import IngestOptions
from rag.service import Hearth
from tests.fakes import HashEmbedder

TEXT = "# Leave\n\n## Days\n\nStaff get {days} days of leave a year. Unused leave lapses at year end.\n"


def hearth_at(tmp_path: Path, keep: int = 5) -> Hearth:
    config = HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(keep_versions=keep, workers=0))
    return Hearth(config, embedder=HashEmbedder())


def revise(path: Path, days: int) -> None:
    path.write_text(TEXT.format(days=days))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + days * 1_000_000_000))  # a new mtime, whatever the clock


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "docs" / "leave.md"
    path.parent.mkdir()
    return path


def test_each_indexed_version_is_kept_and_an_unchanged_one_adds_none(tmp_path, doc):
    h = hearth_at(tmp_path)
    revise(doc, 25)
    h.ingest([doc])
    h.ingest([doc])  # unchanged: no new version
    current, earlier = h.document_versions(doc)
    assert current is not None and current.version == 1 and earlier == []
    revise(doc, 27)
    assert h.ingest([doc]).updated == 1
    current, earlier = h.document_versions(doc)
    assert (current.version, [v.version for v in earlier]) == (2, [1])
    old = h.versions.load(earlier[0], str(doc.resolve()))
    assert "25 days" in old.sections[0].text and old.sections[0].heading == "Leave › Days"
    assert earlier[0].indexed_at <= current.indexed_at
    result = h.compare(doc, previous=True)
    assert [(c.kind, c.figures) for c in result.changes] == [("changed", (("25", "27"),))]
    assert (result.old.version, result.new.version) == (1, 2)


def test_only_the_last_few_earlier_versions_are_kept(tmp_path, doc):
    h = hearth_at(tmp_path, keep=2)
    for days in range(20, 25):
        revise(doc, days)
        h.ingest([doc])
    current, earlier = h.document_versions(doc)
    assert (current.version, [v.version for v in earlier]) == (5, [3, 4])
    assert len(list(h.versions.folder("default", str(doc.resolve())).glob("v*.json.z"))) == 3
    assert "22 days" in h.versions.load(earlier[0], str(doc)).sections[0].text
    result = h.compare(doc, previous=True, version=3)
    assert result.changes[0].figures == (("22", "24"),)
    with pytest.raises(UsageError, match=r"no earlier version 1: the versions kept are 3, 4; version 5"):
        h.compare(doc, previous=True, version=1)


def test_keeping_turned_off_keeps_nothing_and_says_so(tmp_path, doc):
    h = hearth_at(tmp_path, keep=0)
    revise(doc, 25)
    h.ingest([doc])
    revise(doc, 26)
    h.ingest([doc])
    assert not (tmp_path / "data" / "versions" / "default").exists() or not any(
        (tmp_path / "data" / "versions" / "default").iterdir())
    with pytest.raises(UsageError, match="no earlier version to compare with: its text was not kept"):
        h.compare(doc, previous=True)


def test_forget_and_workspace_deletion_remove_the_versions(tmp_path, doc):
    h = hearth_at(tmp_path)
    other = doc.with_name("other.md")
    for days in (25, 26):
        revise(doc, days)
        revise(other, days + 10)
        h.ingest([doc, other])
    folder = h.versions.folder("default", str(doc.resolve()))
    assert folder.is_dir() and h.earlier_versions() == {str(doc.resolve()): 1, str(other.resolve()): 1}
    h.forget([doc])
    assert not folder.exists() and h.earlier_versions() == {str(other.resolve()): 1}
    h.delete_workspace("default")
    assert not (tmp_path / "data" / "versions" / "default").exists()


def test_a_document_gone_from_a_rescanned_folder_loses_its_versions(tmp_path, doc):
    h = hearth_at(tmp_path)
    revise(doc, 25)
    h.ingest([doc.parent])
    folder = h.versions.folder("default", str(doc.resolve()))
    assert folder.is_dir()
    doc.unlink()
    assert h.ingest([doc.parent]).removed == 1
    assert not folder.exists()


def test_read_again_a_document_keeps_its_history(tmp_path, doc):
    h = hearth_at(tmp_path)
    revise(doc, 25)
    h.ingest([doc])
    revise(doc, 26)
    h.ingest([doc])
    h.reindex([str(doc.resolve())])
    current, earlier = h.document_versions(doc)
    assert (current.version, [v.version for v in earlier]) == (2, [1])


def test_a_write_that_fails_after_the_version_was_kept_is_redone_without_a_second_copy(tmp_path, doc, monkeypatch):
    h = hearth_at(tmp_path)
    revise(doc, 25)
    h.ingest([doc])
    revise(doc, 26)
    real = h.store.replace_document

    def broken(*args, **kwargs):
        raise StoreError("disk full")

    monkeypatch.setattr(h.store, "replace_document", broken)
    report = h.ingest([doc])
    assert report.failed and report.updated == 0
    with pytest.raises(UsageError):  # not done: it cannot be compared until it is indexed
        h.compare(doc, previous=True)
    monkeypatch.setattr(h.store, "replace_document", real)
    report = h.ingest([doc])
    assert not report.failed and report.added == 1  # redone: an interrupted document counts as new
    current, earlier = h.document_versions(doc)
    assert (current.version, [v.version for v in earlier]) == (2, [1])
    assert len(list(h.versions.folder("default", str(doc.resolve())).glob("v*.json.z"))) == 2


def test_a_torn_version_file_is_reported_not_read(tmp_path, doc):
    h = hearth_at(tmp_path)
    revise(doc, 25)
    h.ingest([doc])
    revise(doc, 26)
    h.ingest([doc])
    _, earlier = h.document_versions(doc)
    earlier[0].path.write_bytes(b"not zlib")
    with pytest.raises(StoreError, match="kept version 1 of leave.md cannot be read"):
        h.compare(doc, previous=True)


def test_a_document_indexed_before_versions_were_kept_keeps_its_text_from_the_index(tmp_path, doc):
    table = "\n\n| Grade | Days |\n|---|---|\n| Junior | 25 |\n| Senior | 28 |\n"
    revise(doc, 25)
    doc.write_text(doc.read_text() + table)
    hearth_at(tmp_path, keep=0).ingest([doc])  # as a Hearth before this one: nothing kept
    h = hearth_at(tmp_path)
    assert h.document_versions(doc) == (None, [])
    doc.write_text(TEXT.format(days=26) + table.replace("| Senior | 28 |", "| Senior | 30 |"))
    st = doc.stat()
    os.utime(doc, ns=(st.st_atime_ns, st.st_mtime_ns + 9_000_000_000))
    assert h.ingest([doc]).updated == 1
    current, earlier = h.document_versions(doc)
    assert (current.version, [v.version for v in earlier]) == (2, [1])
    result = h.compare(doc, previous=True)
    assert [(c.kind, c.figures) for c in result.changes] == [("changed", (("25", "26"),)), ("changed", (("28", "30"),))]
    assert result.changes[1].old_text == "Senior | 28"  # the table came back as rows

"""The manifest (rag/manifest.py): which documents are done, which were interrupted, with which embedder."""

from __future__ import annotations

import os
import stat

import pytest

from inference.errors import UsageError
from rag.manifest import Manifest


def test_manifest_states_and_embedder_guard(tmp_path):
    m = Manifest(tmp_path / "m.sqlite")
    m.bind_workspace("ws", embedder="e1", dim=384)
    m.bind_workspace("ws", embedder="e1", dim=384)
    with pytest.raises(UsageError, match="e1"):
        m.bind_workspace("ws", embedder="e2", dim=384)
    m.begin("ws", "/a", sha256="h", size=1, mtime_ns=2)
    assert m.done_sources("ws") == set()
    assert m.get("ws", "/a").status == "indexing"
    m.finish("ws", "/a", chunks=3, pages=2)
    assert m.done_sources("ws") == {"/a"}
    rec = m.get("ws", "/a")
    assert (rec.chunks, rec.pages, rec.sha256) == (3, 2, "h")
    m.remove("ws", "/a")
    assert m.get("ws", "/a") is None
    assert m.workspaces() == ["ws"]


def test_unfinish_touch_and_listing_by_status(tmp_path):
    m = Manifest(tmp_path / "m.sqlite")
    for source in ("/b", "/a"):
        m.begin("ws", source, sha256="h" + source, size=1, mtime_ns=1)
        m.finish("ws", source, chunks=1, pages=None)
    m.touch("ws", "/a", mtime_ns=99)
    assert m.get("ws", "/a").mtime_ns == 99 and m.get("ws", "/a").status == "done"
    m.unfinish("ws", "/b")  # about to be deleted: no longer counts as indexed
    assert [r.source for r in m.documents("ws")] == ["/a", "/b"]
    assert [r.source for r in m.documents("ws", status="indexing")] == ["/b"]
    assert m.done_sources("ws") == {"/a"}
    assert m.documents("other") == []


def test_rebind_only_an_emptied_workspace(tmp_path):
    m = Manifest(tmp_path / "m.sqlite")
    m.bind_workspace("ws", embedder="e1", dim=8)
    m.begin("ws", "/a", sha256="h", size=1, mtime_ns=1)
    with pytest.raises(UsageError, match="still holds 1 documents"):
        m.rebind_workspace("ws", embedder="e2", dim=16)
    m.remove("ws", "/a")
    m.rebind_workspace("ws", embedder="e2", dim=16)
    assert m.workspace_embedder("ws") == "e2"
    m.bind_workspace("ws", embedder="e2", dim=16)  # the new binding holds
    assert m.workspace_embedder("nowhere") is None


def test_the_manifest_files_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        m = Manifest(tmp_path / "new" / "m.sqlite")
        m.bind_workspace("ws", embedder="e1", dim=8)  # writes: the -wal and -shm files exist now
        files = sorted(tmp_path.joinpath("new").iterdir())
        assert {f.name for f in files} >= {"m.sqlite", "m.sqlite-wal", "m.sqlite-shm"}
        for f in files:
            assert stat.S_IMODE(f.stat().st_mode) & 0o077 == 0, f
        assert stat.S_IMODE(tmp_path.joinpath("new").stat().st_mode) == 0o700
        m.close()
    finally:
        os.umask(old)


def test_done_sources_follow_writes_from_this_and_other_connections(tmp_path):
    """The set is read once per state of the database (every search asks for it), never a stale one."""
    m, other = Manifest(tmp_path / "m.sqlite"), Manifest(tmp_path / "m.sqlite")
    m.begin_many("ws", [("/a", "h", 1, 1), ("/b", "h", 1, 1)])
    m.finish_many("ws", [("/a", 1, None), ("/b", 1, None)])
    assert m.done_sources("ws") == {"/a", "/b"}
    m.done_sources("ws").add("/mutated")  # a copy: the cached set is not changed by its callers
    assert m.done_sources("ws") == {"/a", "/b"}
    m.unfinish("ws", "/b")  # this connection's write
    assert m.done_sources("ws") == {"/a"}
    other.begin("ws", "/c", sha256="h", size=1, mtime_ns=1)
    other.finish("ws", "/c", chunks=1, pages=None)  # another connection's (another process's) write
    assert m.done_sources("ws") == {"/a", "/c"}
    other.remove("ws", "/a")
    assert m.done_sources("ws") == {"/c"} and m.done_sources("elsewhere") == set()

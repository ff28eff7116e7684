"""Watched folders: the batch logic on its own, then a real watcher thread keeping a workspace in sync."""

from __future__ import annotations

import queue
import shutil
import threading
from pathlib import Path

import pytest

from rag.ingest import IngestOptions, IngestReport
from rag.service import Hearth, HearthConfig
from rag.watch import WatchUpdate, apply_changes, relevant
from tests.fakes import HashEmbedder


def test_relevant_paths(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert relevant(tmp_path / "a.docx", [tmp_path])
    assert relevant(tmp_path / "sub", [tmp_path])
    assert not relevant(tmp_path / "a.gif", [tmp_path])
    assert not relevant(tmp_path / "~$a.docx", [tmp_path])  # Word's lock file
    assert not relevant(tmp_path / ".~lock.a.odt#", [tmp_path])
    assert not relevant(tmp_path / ".git" / "x.md", [tmp_path])
    assert relevant(tmp_path / ".git" / "x.md", [tmp_path], include_hidden=True)


def test_apply_changes_ingests_then_forgets(tmp_path: Path) -> None:
    root = tmp_path / "share"
    (root / "new").mkdir(parents=True)
    (root / "new" / "inner.md").write_text("x")
    (root / "kept.md").write_text("x")
    (root / "pic.gif").write_bytes(b"GIF89a")
    calls: list[tuple[str, list[Path]]] = []

    def ingest(paths: list[Path]) -> IngestReport:
        calls.append(("ingest", paths))
        return IngestReport(added=len(paths))

    def forget(paths: list[Path]) -> list[str]:
        calls.append(("forget", paths))
        return [str(p) for p in paths]

    changed = {root / "kept.md", root / "new", root / "new" / "inner.md", root / "gone.md", root / "pic.gif"}
    update = apply_changes(changed, [root], ingest=ingest, forget=forget)
    assert calls == [("ingest", [root / "kept.md", root / "new"]), ("forget", [root / "gone.md"])]
    assert update is not None and update.changed and update.forgotten == [str(root / "gone.md")]
    assert apply_changes({root / "pic.gif"}, [root], ingest=ingest, forget=forget) is None


def test_a_vanished_watched_folder_forgets_nothing(tmp_path: Path) -> None:
    root = tmp_path / "mounted-share"  # not there: unmounted, not emptied
    update = apply_changes({root / "a.md"}, [root], ingest=lambda p: IngestReport(), forget=lambda p: pytest.fail())
    assert update is None


def test_watcher_keeps_the_workspace_in_sync(tmp_path: Path) -> None:
    root = tmp_path / "share"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nThe printer needs a badge.")
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder())
    updates: queue.Queue[WatchUpdate] = queue.Queue()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            h.watch([root], stop=stop, on_update=updates.put)
        except BaseException as exc:  # surfaced by the asserts below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        initial = updates.get(timeout=30)
        assert initial.initial and initial.report.added == 1

        def names() -> set[str]:
            return {str(Path(d.source).relative_to(root.resolve())) for d in h.sources() if d.status == "done"}

        def wait_for(expected: set[str]) -> None:
            while names() != expected:
                updates.get(timeout=30)  # fails the test with queue.Empty if nothing happens

        (root / "second.md").write_text("# Second\n\nThe VPN must be on.")
        wait_for({"first.md", "second.md"})
        (root / "first.md").write_text("# First\n\nThe printer needs a PIN now.")
        while not any("PIN" in hit.text for hit in h.search("printer PIN", k=3)):
            updates.get(timeout=30)
        (root / "sub").mkdir()
        shutil.move(root / "second.md", root / "sub" / "second.md")
        wait_for({"first.md", "sub/second.md"})
        (root / "first.md").unlink()
        wait_for({"sub/second.md"})
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive() and errors == []
    assert h.store.count("default") == sum(d.chunks for d in h.sources())

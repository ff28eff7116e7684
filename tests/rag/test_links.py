"""Links inside an indexed folder: one that leads out of the folder is never read, only reported.

An unpacked archive or a cloned share can hold `readme.txt -> ~/.ssh/id_rsa`; indexing the folder must not
make the key searchable (nor serve it over the API, nor upload it to a shared index). A link that stays
inside the folder is fine, and a file the user names directly is read even when it is a link.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
from pathlib import Path

import pytest

from rag.ingest import IngestOptions
from rag.parse_pool import ParseJob, parse_file
from rag.service import Hearth, HearthConfig
from rag.watch import WatchUpdate, apply_changes
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links")

SECRET = "quokkazanzibar"  # a word found only in the files outside the folder
OTHER_SECRET = "marmotkilimanjaro"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """docs/ with a real document, links that stay inside, and links (a file, a folder) that lead out."""
    outside = tmp_path / "home"
    (outside / ".ssh").mkdir(parents=True)
    secret = outside / ".ssh" / "SECRET_OUTSIDE"
    secret.write_text(f"-----BEGIN KEY----- {SECRET} private key material -----END KEY-----")
    private = outside / "private"
    private.mkdir()
    (private / "salaries.md").write_text(f"# Salaries\n\nThe code word is {OTHER_SECRET}.")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "policy.md").write_text("# Leave\n\nStaff get 28 days of annual leave.")
    (docs / "sub" / "vpn.txt").write_text("Connect the VPN before opening the intranet.")
    (docs / "readme.txt").symlink_to(secret)  # leads out: a file
    (docs / "shared").symlink_to(private, target_is_directory=True)  # leads out: a folder
    (docs / "alias.md").symlink_to(docs / "policy.md")  # stays inside
    (docs / "again").symlink_to(Path("sub"), target_is_directory=True)  # stays inside (relative)
    return {"docs": docs, "secret": secret, "private": private}


@pytest.fixture
def hearth(tmp_path: Path) -> Hearth:
    return Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder())


def _found(hearth: Hearth, word: str) -> bool:
    return any(word in hit.text for hit in hearth.search(word, k=20))


def test_links_out_of_the_folder_are_not_read_and_are_reported(hearth, layout):
    docs = layout["docs"]
    report = hearth.ingest([docs])
    assert not _found(hearth, SECRET) and not _found(hearth, OTHER_SECRET)
    assert _found(hearth, "annual")  # the folder itself was indexed
    refused = {Path(f.source).name: f for f in report.failed}
    assert set(refused) == {"readme.txt", "shared"}
    for name, failure in refused.items():
        assert failure.kind == "outside_link"
        assert "link leads outside the folder" in failure.error
        assert failure.source == str(docs / name)  # the link inside the folder, not its target
    # The contract's shape is kept: failed [{source, error, ...}].
    entry = next(f for f in json.loads(json.dumps(report.to_json()))["failed"] if f["source"].endswith("readme.txt"))
    assert entry["source"] == str(docs / "readme.txt") and "link leads outside the folder" in entry["error"]
    # Links that stay inside are fine; every stored source is a path inside the folder.
    sources = {d.source for d in hearth.sources()}
    assert sources == {str((docs / "policy.md").resolve()), str((docs / "sub" / "vpn.txt").resolve())}
    assert all(Path(s).is_relative_to(docs.resolve()) for s in sources)
    assert (report.added, report.skipped) == (2, 0)


def test_a_file_named_directly_is_read_even_as_a_link(hearth, layout):
    report = hearth.ingest([layout["docs"] / "readme.txt"])
    assert report.added == 1 and report.failed == []
    assert _found(hearth, SECRET)  # the user chose it


def test_a_file_replaced_by_a_link_out_is_removed_on_the_next_scan(hearth, layout):
    docs = layout["docs"]
    (docs / "readme.txt").unlink()
    (docs / "readme.txt").write_text("The printer needs a badge.")
    assert hearth.ingest([docs]).added == 3
    (docs / "readme.txt").unlink()
    (docs / "readme.txt").symlink_to(layout["secret"])
    report = hearth.ingest([docs])
    assert report.removed == 1 and not _found(hearth, "badge") and not _found(hearth, SECRET)
    assert "readme.txt" in {Path(f.source).name for f in report.failed}


def test_a_file_that_becomes_a_link_after_the_listing_is_not_read(layout):
    docs = layout["docs"]
    target = docs / "late.txt"
    target.write_text("harmless at listing time")
    folder = str(docs.resolve())
    assert parse_file(ParseJob(target, within=folder)).error is None
    target.unlink()
    target.symlink_to(layout["secret"])  # swapped in between the listing and the reading
    parsed = parse_file(ParseJob(target, within=folder))
    assert parsed.sections is None and parsed.error is not None
    assert parsed.error[0] == "outside_link" and "link leads outside the folder" in parsed.error[1]
    assert parse_file(ParseJob(target)).sections is not None  # named directly: read


def test_the_watcher_reports_a_link_out_instead_of_reading_it(hearth, layout):
    docs = layout["docs"].resolve()
    seen: list[list[Path]] = []

    def ingest(paths: list[Path]):
        seen.append(paths)
        return hearth.ingest(paths)

    changed = {docs / "readme.txt", docs / "shared", docs / "shared" / "salaries.md", docs / "alias.md"}
    update = apply_changes(changed, [docs], ingest=ingest, forget=hearth.forget)
    assert update is not None
    assert seen == [[docs / "alias.md"]]  # the link that stays inside is ingested, the others are not
    assert {Path(f.source).relative_to(docs).as_posix() for f in update.report.failed} == {
        "readme.txt", "shared", "shared/salaries.md"}
    assert {f.kind for f in update.report.failed} == {"outside_link"}
    assert not _found(hearth, SECRET) and not _found(hearth, OTHER_SECRET)


def test_a_running_watcher_never_reads_a_link_out(tmp_path, hearth, layout):
    root = tmp_path / "watched"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nThe printer needs a badge.")
    updates: queue.Queue[WatchUpdate] = queue.Queue()
    stop = threading.Event()
    thread = threading.Thread(target=lambda: hearth.watch([root], stop=stop, on_update=updates.put), daemon=True)
    thread.start()
    try:
        assert updates.get(timeout=30).report.added == 1
        (root / "id_rsa.txt").symlink_to(layout["secret"])
        (root / "second.md").write_text("# Second\n\nThe VPN must be on.")
        failed: list[str] = []
        while "id_rsa.txt" not in failed or not _found(hearth, "VPN"):
            failed += [Path(f.source).name for f in updates.get(timeout=30).report.failed]
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert not _found(hearth, SECRET)
    assert {Path(d.source).name for d in hearth.sources()} == {"first.md", "second.md"}


def test_a_swap_after_the_check_changes_nothing_read(layout, monkeypatch):
    """The swap a second account can race (#65): the file passes the check, then becomes a link to the key
    before it is hashed and read. What is checked is the file already opened, so the key is never read."""
    import rag.pinned

    docs = layout["docs"]
    target = docs / "raced.txt"
    target.write_text("harmless meeting notes")
    checked = rag.pinned.inside

    def check_then_swap(path: str, folder: str) -> bool:
        result = checked(path, folder)
        if target.exists() and not target.is_symlink():
            target.unlink()
            target.symlink_to(layout["secret"])  # between the check and the read
        return result

    monkeypatch.setattr(rag.pinned, "inside", check_then_swap)
    parsed = parse_file(ParseJob(target, within=str(docs.resolve())))
    assert target.is_symlink()  # the swap happened
    assert parsed.error is None and parsed.sections is not None
    text = " ".join(s.text for s in parsed.sections)
    assert "harmless meeting notes" in text and SECRET not in text
    assert parsed.sha256 == hashlib.sha256(b"harmless meeting notes").hexdigest()  # hashed from the same handle


def test_a_pipe_or_device_in_a_folder_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "jam.txt"
    os.mkfifo(fifo)
    parsed = parse_file(ParseJob(fifo, within=str(tmp_path.resolve())))  # opening a FIFO to read would block
    assert parsed.sections is None and parsed.error == ("unreadable", "jam.txt is not a regular file (a pipe, socket or device).")


def test_the_watcher_checks_again_when_it_reads(tmp_path, hearth, layout, monkeypatch):
    """A file the watcher saw as harmless is swapped for a link out before the ingest it hands it to reads it:
    the file is checked against its watched folder again (#65), so the key is refused, never indexed."""
    import rag.watch

    root = tmp_path / "watched"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nThe printer needs a badge.")
    late = root / "late.md"
    seen = rag.watch.leads_outside

    def check_then_swap(path: Path, folder: str) -> bool:
        result = seen(path, folder)
        if path.name == "late.md" and not path.is_symlink():
            path.unlink()
            path.symlink_to(layout["secret"])
        return result

    monkeypatch.setattr(rag.watch, "leads_outside", check_then_swap)
    updates: queue.Queue[WatchUpdate] = queue.Queue()
    stop = threading.Event()
    thread = threading.Thread(target=lambda: hearth.watch([root], stop=stop, on_update=updates.put), daemon=True)
    thread.start()
    try:
        assert updates.get(timeout=30).report.added == 1
        (root / "probe.md").write_text("# Probe\n\nThe watcher is running.")  # seen once the watcher runs
        while not _found(hearth, "watcher is running"):
            updates.get(timeout=30)
        late.write_text("# Late\n\nA harmless note.")
        failed: list[str] = []
        while "late.md" not in failed:
            failed += [Path(f.source).name for f in updates.get(timeout=30).report.failed]
    finally:
        stop.set()
        thread.join(timeout=30)
    assert late.is_symlink()  # the swap happened
    assert not _found(hearth, SECRET)
    assert {Path(d.source).name for d in hearth.sources()} == {"first.md", "probe.md"}

"""The hostile corpus through the real ingest path: parse workers on, a real ChromaDB, a fast embedder.

Ingesting hundreds of bad files must not crash, hang or exceed the workers' memory cap; every file is
reported (indexed, failed with a reason, or counted as skipped) and the good files among them are found.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

import rag.ingest
from rag.ingest import IngestOptions, IngestReport
from rag.loaders import LOAD_ERROR_KINDS
from rag.parse_pool import ParsePool
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder
from tests.hostile_corpus import Expect, make_hostile_corpus, shown, unmet

MEMORY_CAP = 384 << 20  # per worker; the corpus's long line needs more, everything else far less
TIMEOUT = 20.0  # seconds per file; nothing in the corpus should need a tenth of it
WORKERS = 2
# parse_file's catch-all for an exception a reader failed to translate: "x could not be read (KeyError: ...)".
_UNTRANSLATED = re.compile(r"could not be read \(\w+: ")


class Run:
    def __init__(self, folder: Path, expect: dict[str, Expect], hearth: Hearth, report: IngestReport, seconds: float):
        self.folder, self.expect, self.hearth, self.report, self.seconds = folder, expect, hearth, report, seconds
        root = str(folder.resolve())
        self.failed = {os.path.relpath(f.source, root): f for f in report.failed}
        self.indexed = {os.path.relpath(d.source, root) for d in hearth.sources() if d.status == "done"}
        self.worker_peaks: list[int] = []  # each result's worker peak RSS (VmHWM), bytes


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("hostile")
    folder = base / "corpus"
    expect = make_hostile_corpus(folder, scale="ci")
    options = IngestOptions(workers=WORKERS, parse_timeout=TIMEOUT, parse_memory_bytes=MEMORY_CAP)
    hearth = Hearth(HearthConfig(data_dir=base / "data", ingest=options), embedder=HashEmbedder())
    peaks: list[int] = []

    class RecordingPool(ParsePool):  # the real pool; it only notes each worker's peak memory
        def run(self, jobs):  # type: ignore[no-untyped-def]
            for parsed in super().run(jobs):
                peaks.append(parsed.peak_rss)
                yield parsed

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rag.ingest, "ParsePool", RecordingPool)
        t0 = time.monotonic()
        report = hearth.ingest([folder])
        seconds = time.monotonic() - t0
    result = Run(folder, expect, hearth, report, seconds)
    result.worker_peaks = peaks
    yield result
    big = folder / "single-line.txt"
    big.unlink(missing_ok=True)  # the one big file: gone before the rest of the suite runs


def test_the_corpus_is_hundreds_of_files_of_every_kind(run: Run) -> None:
    categories = {e.category for e in run.expect.values()}
    assert len(run.expect) >= 300
    assert {"pdf-truncated", "pdf-encrypted", "pdf-pages", "zip-bomb", "xml-bomb", "xml-xxe", "junk", "empty",
            "utf16", "utf8", "single-line", "symlink", "permissions", "names", "good"} <= categories  # fmt: skip
    assert sum(e.outcome == "indexed" for e in run.expect.values()) >= 20


def test_every_file_is_indexed_or_reported_with_a_reason(run: Run) -> None:
    report = run.report
    assert report.skipped == sum(e.outcome == "skipped" for e in run.expect.values())
    wrong = unmet(run.expect, run.failed, run.indexed)
    assert not wrong
    # Nothing reported that is not in the corpus, and each file reported once.
    assert set(run.failed) | run.indexed <= {shown(n) for n in run.expect}
    assert len(run.failed) == len(report.failed)
    assert report.added == len(run.indexed)


def test_failures_name_a_kind_and_a_reason_and_no_reader_crashed(run: Run) -> None:
    assert run.report.failed
    for failure in run.report.failed:
        assert failure.kind in LOAD_ERROR_KINDS | {"timeout"}, failure
        assert failure.error.strip(), failure
        assert not _UNTRANSLATED.search(failure.error), failure  # a reader let a raw exception through
        assert "crashed" not in failure.error, failure
    # The newline name was read like any other file.
    assert any("\n" in name for name in run.indexed)


def test_good_files_are_searchable(run: Run) -> None:
    good = {name: e.sentence for name, e in run.expect.items() if e.outcome == "indexed" and e.sentence}
    assert len(good) >= 20
    missing = []
    for name, sentence in good.items():
        hits = run.hearth.search(sentence, k=5)
        if not any(sentence in h.text and Path(h.source).name == Path(name).name for h in hits):
            missing.append(name)
    assert not missing


def test_no_xml_entity_was_expanded_or_fetched(run: Run) -> None:
    for hit in run.hearth.search("lol lol lol lol root passwd bin bash", k=20):
        assert "lollollol" not in hit.text
        assert "root:x:0:0" not in hit.text


def test_time_and_memory_stay_bounded(run: Run) -> None:
    kinds = [f.kind for f in run.report.failed]
    # Every file was read within its time limit: none had to be given up on, and the whole run took
    # far less than one file's limit per worker slot.
    assert kinds.count("timeout") == 0
    assert run.seconds < 6 * TIMEOUT
    # The long line and the content-stream bomb hit the memory cap and said so.
    line = run.failed["single-line.txt"]
    assert line.kind == "too_large" and f"memory limit of {MEMORY_CAP >> 20} MiB" in line.error
    bomb = run.failed["pdf-content-bomb.pdf"]
    assert bomb.kind == "too_large" and "memory limit" in bomb.error
    # No worker ever held more than its cap: each result carries its worker's high-water mark.
    assert len(run.worker_peaks) >= 300
    assert 0 < max(run.worker_peaks) <= MEMORY_CAP

"""Kill -9 during ingestion, at random moments and at each step of a document's write, while the folder
changes; every restart must find an index that keeps the promise (tests/crash_driver.py `problems`), and
the last complete run must hold exactly what a fresh ingest of the same files into a clean folder holds.

The long version, hundreds of files and 50+ kills, is `python -m bench.crash_soak`.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
from pathlib import Path

import pytest

from tests.crash_driver import Driver, differences, problems
from tests.rag.make_docs import write_docx, write_pdf

WORDS = "leave badge printer travel invoice meal hotel vpn laptop budget policy office parking".split()

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs kill -9")


def note(rng: random.Random, title: str) -> str:
    paragraphs = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(5))
    return f"# {title}\n\n" + "\n\n".join(paragraphs)


def change_folder(docs: Path, rng: random.Random, round_: int) -> None:
    """Between interrupted runs the folder changes: notes rewritten, one deleted, one added, one renamed
    (same text: its vectors are reused), one touched (new time, same content)."""
    notes = sorted(docs.glob("note*.md"))
    for path in rng.sample(notes, 4):
        path.write_text(note(rng, path.stem + f" revised {round_}"))
    rng.choice(notes).unlink()
    (docs / f"added{round_}.md").write_text(note(rng, f"Added {round_}"))
    notes = sorted(docs.glob("note*.md"))
    moved = rng.choice(notes)
    moved.rename(docs / f"note-moved{round_}.md")
    touched = rng.choice(sorted(docs.glob("note*.md")))
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))


def fresh_state(docs: Path, tmp_path: Path) -> dict:
    """The index a single uninterrupted run builds from the same files, in a clean data folder."""
    clean = tmp_path / "clean"
    shutil.rmtree(clean, ignore_errors=True)
    _, state = Driver(clean, docs, "--ids", "--workers", "0").finish()
    return state


def test_kill_9_at_random_points_leaves_exactly_the_right_documents(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("HEARTH_CRASH_SEED", "20261129")))
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    for i in range(24):
        (docs / f"note{i:02d}.md").write_text(note(rng, f"Note {i}"))
    (docs / "plain.txt").write_text(note(rng, "Plain"))
    (docs / "page.html").write_text(f"<html><body><h1>Page</h1><p>{note(rng, 'Html')}</p></body></html>")
    write_pdf(docs / "manual.pdf", [f"Page {n} about the {rng.choice(WORDS)}." for n in range(10)])
    write_docx(docs / "handbook.docx")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 damaged")

    kills = mid_document = 0
    for round_ in range(8):
        if round_:
            change_folder(docs, rng, round_)
        run = Driver(data, docs, "--ids", "--trace")
        assert problems(run.found) == [], f"round {round_}"  # the index as the killed run left it
        end = run.kill_after_events(rng.randint(1, 40 if round_ == 0 else 14), rng.uniform(0.0, 0.03))
        kills += end.killed
        mid_document += end.in_document
    assert kills >= 6, "the runs ended before the kill: the test proved nothing"
    assert mid_document >= 1, "no kill landed inside a document's write"

    run = Driver(data, docs, "--ids")
    assert problems(run.found) == []
    report, state = run.finish()
    assert [Path(f["source"]).name for f in report["failed"]] == ["broken.pdf"]
    expected = {str(p.resolve()) for p in docs.iterdir() if p.name != "broken.pdf"}
    assert problems(state) == []
    assert set(state) == expected  # nothing interrupted, orphaned or deleted is left behind
    assert {s["status"] for s in state.values()} == {"done"}
    assert differences(state, fresh_state(docs, tmp_path)) == []

    # One more run finds everything unchanged and changes nothing.
    run = Driver(data, docs, "--ids")
    assert run.found == state
    again, after = run.finish()
    assert (again["added"], again["updated"], again["removed"], again["unchanged"]) == (0, 0, 0, len(expected))
    assert after == state


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of three notes, indexed."""
    rng = random.Random(7)
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    for i in range(3):
        (docs / f"note{i}.md").write_text(note(rng, f"Note {i}"))
    Driver(data, docs, "--workers", "0").finish()
    return docs, data


def test_a_kill_at_each_step_of_writing_or_removing_a_document(indexed, tmp_path):
    """The steps of rag/ingest.py: a document is written as manifest begin, keyword index, Chroma ("replace"
    is both), manifest finish, and only counts from then on; a gone one is removed from both indexes,
    then from the manifest ("remove")."""
    docs, data = indexed
    rng = random.Random(3)
    for n, point in enumerate(["begin", "lexical-replace", "vectors-replace", "replace", "remove"]):
        (docs / "note0.md").write_text(note(rng, f"Note 0, version {n}"))  # a new version over an old one
        (docs / f"new{n}.md").write_text(note(rng, f"New {n}"))  # and one never indexed
        if point == "remove":
            (docs / "note1.md").unlink()
        run = Driver(data, docs, "--ids", "--workers", "0", "--die-after", point)
        assert problems(run.found) == [], point  # as the kill before left it
        if n:  # killed inside a document's write: that document is hidden, to be redone
            assert "indexing" in {s["status"] for s in run.found.values()}, point
        assert run.died(), point
    run = Driver(data, docs, "--ids", "--workers", "0")
    assert problems(run.found) == []
    _, state = run.finish()
    assert problems(state) == [] and {s["status"] for s in state.values()} == {"done"}
    assert set(state) == {str(p.resolve()) for p in docs.iterdir()}
    assert differences(state, fresh_state(docs, tmp_path)) == []


def test_a_kill_between_removing_the_chunks_and_the_record(indexed, tmp_path):
    # The record stops counting as done before the chunks go, so the kill leaves it to redo, never "done".
    docs, data = indexed
    (docs / "note1.md").unlink()
    assert Driver(data, docs, "--workers", "0", "--die-after", "vectors-delete").died()
    assert problems(Driver(data, docs, "--ids", "--state-only").found) == []
    _, state = Driver(data, docs, "--ids", "--workers", "0").finish()
    assert problems(state) == [] and differences(state, fresh_state(docs, tmp_path)) == []

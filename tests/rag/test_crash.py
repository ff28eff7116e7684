"""Kill -9 at random moments of an ingest, again and again, while the folder changes; then the index must
hold exactly the right documents: none missing, none duplicated, none half-indexed while marked done."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rag.make_docs import write_docx, write_pdf

ROOT = Path(__file__).resolve().parents[2]
WORDS = "leave badge printer travel invoice meal hotel vpn laptop budget policy office parking".split()

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs kill -9")


class Run:
    """One driver process (tests/crash_driver.py), read line by line."""

    def __init__(self, data: Path, docs: Path) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_driver", str(data), str(docs)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        first = self.p.stdout.readline()
        assert first.startswith("state "), self.p.stderr.read()
        self.found = json.loads(first[6:])  # the index as this run found it, i.e. as the last run left it
        assert self.p.stdout.readline().strip() == "ready"

    def kill_after(self, events: int, rng: random.Random) -> bool:
        """Kill -9 after `events` progress reports (plus a moment, to land inside a write); False if it ended first."""
        for _ in range(events):
            if self.p.stdout.readline().strip() != "p":
                self.p.communicate(timeout=120)
                return False
        time.sleep(rng.uniform(0.0, 0.03))
        killed = self.p.poll() is None
        if killed:
            os.kill(self.p.pid, signal.SIGKILL)
        self.p.communicate(timeout=120)
        return killed

    def finish(self) -> tuple[dict, dict]:
        out, err = self.p.communicate(timeout=300)
        assert self.p.returncode == 0, err
        lines = out.splitlines()
        report = json.loads(next(x for x in lines if x.startswith("report "))[7:])
        return report, json.loads(lines[-1][6:])


def assert_consistent(state: dict[str, dict]) -> set[str]:
    """Every document marked done is complete and alone in both indexes; returns the done sources."""
    done = set()
    for source, s in state.items():
        if s["status"] == "done":
            done.add(source)
            assert s["stored"] == {s["sha256"]: s["chunks"]}, (source, s)  # complete, one version, no duplicates
            assert s["lexical"] == s["chunks"], (source, s)
        else:
            # Otherwise: an interrupted document (hidden from search, redone next run), or nothing at all.
            assert s["status"] == "indexing" or (s["status"] is None and not s["stored"] and not s["lexical"]), (
                source, s,
            )  # fmt: skip
    return done


def note(rng: random.Random, title: str) -> str:
    paragraphs = (" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(5))
    return f"# {title}\n\n" + "\n\n".join(paragraphs)


def test_kill_9_at_random_points_leaves_exactly_the_right_documents(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("HEARTH_CRASH_SEED", "20261129")))
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    for i in range(20):
        (docs / f"note{i:02d}.md").write_text(note(rng, f"Note {i}"))
    write_pdf(docs / "manual.pdf", [f"Page {n} about the {rng.choice(WORDS)}." for n in range(10)])
    write_docx(docs / "handbook.docx")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 damaged")

    kills = 0
    for round_ in range(5):
        if round_:
            # Between interrupted runs the folder changes: some notes are rewritten, one goes, one comes.
            for path in rng.sample(sorted(docs.glob("note*.md")), 5):
                path.write_text(note(rng, path.stem + " revised"))
            rng.choice(sorted(docs.glob("note*.md"))).unlink()
            (docs / f"added{round_}.md").write_text(note(rng, f"Added {round_}"))
        run = Run(data, docs)
        assert_consistent(run.found)
        kills += run.kill_after(rng.randint(1, 40 if round_ == 0 else 12), rng)
    assert kills >= 4, "the runs ended before the kill: the test proved nothing"

    report, state = Run(data, docs).finish()
    assert [Path(f["source"]).name for f in report["failed"]] == ["broken.pdf"]
    expected = {str(p.resolve()) for p in docs.iterdir() if p.name != "broken.pdf"}
    assert assert_consistent(state) == expected
    assert set(state) == expected  # nothing interrupted, orphaned or deleted is left behind

    # One more run finds everything unchanged and changes nothing.
    run = Run(data, docs)
    assert run.found == state
    again, after = run.finish()
    assert (again["added"], again["updated"], again["removed"], again["unchanged"]) == (0, 0, 0, len(expected))
    assert after == state

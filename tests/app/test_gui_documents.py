"""The library's re-index action, now the core's `Hearth.reindex` run on the index executor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20_000


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


def test_reindex_reads_documents_again_and_refuses_one_that_is_gone(qtbot, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    kept, gone = docs / "kept.md", docs / "gone.md"
    kept.write_text("# Kept\n\nThe fridge is cleaned every Friday.\n", encoding="utf-8")
    gone.write_text("# Gone\n\nThe printer is on the second floor.\n", encoding="utf-8")
    embedder = HashEmbedder()
    w = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=embedder, chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([docs])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    lib = w.library
    sources = [str(kept.resolve()), str(gone.resolve())]
    assert [lib.status_of(s) for s in sources] == ["done", "done"]

    kept.write_text("# Kept\n\nThe fridge is cleaned every Monday now.\n", encoding="utf-8")
    calls = embedder.calls
    w.documents.reindex([sources[0]])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    assert embedder.calls > calls and lib.status_of(sources[0]) == "done"
    hits = w.ops.hearth.search("fridge cleaned Monday", k=1)
    assert "Monday" in hits[0].text

    gone.unlink()
    w.documents.reindex(sources)
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    assert "gone.md no longer exists" in lib.banner.message
    assert lib.status_of(sources[0]) == "done"  # nothing was dropped, nothing left waiting
    assert w.ops.hearth.search("fridge cleaned Monday", k=1)
    w.close()


class CyrillicPiecesEmbedder(HashEmbedder):
    """Cuts a Cyrillic word into one piece a letter, as an English-only tokenizer does (more or less)."""

    def count_tokens(self, text: str) -> int:
        return sum(len(w) if any("а" <= c <= "я" for c in w.lower()) else 1 for w in text.split())


def test_a_workspace_mostly_in_a_language_the_embedder_cannot_read_says_so_with_the_numbers(qtbot, tmp_path):
    from tests.rag.russian_memos import MEMOS, write_memos

    w = build_window(HearthConfig(data_dir=tmp_path / "data"), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=CyrillicPiecesEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([write_memos(tmp_path / "memos")])
    qtbot.waitUntil(lambda: "in Russian" in w.library.banner.message, timeout=WAIT)
    passages = w.ops.hearth.store.languages("default")["ru"]
    assert passages >= len(MEMOS)
    assert f"{passages} of the {passages} passages here are in Russian" in w.library.banner.message
    assert "hearth embedder add" in w.library.banner.message  # the hint: how to switch to a multilingual model

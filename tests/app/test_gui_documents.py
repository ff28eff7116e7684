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
    assert "multilingual model" in w.library.banner.message  # the hint, and the button that switches
    assert w.library.banner.action.isVisible() and w.library.banner.action.text() == "Use a multilingual model…"


def test_the_language_notice_switches_the_workspace_to_a_chosen_model_in_one_step(qtbot, tmp_path, monkeypatch):
    """The banner's "Use a multilingual model…": pick a folder, confirm, the model is converted and every
    document embedded again with it, with the library's progress; a folder that is no model changes nothing."""
    from app.gui.controllers import documents
    from inference import models
    from rag.crosslingual import LanguageNotice
    from tests.inference.tinybert import unigram_tokenizer, wordpiece_tokenizer, write_folder
    from tests.rag.russian_memos import MEMOS, write_memos

    data = tmp_path / "data"
    english_only = write_folder(tmp_path / "model-a", tokenizer=wordpiece_tokenizer(), hidden=32)
    models.add_embedder(english_only, data / "cache", int8=False)
    memos = write_memos(tmp_path / "memos")
    first = Hearth(HearthConfig(data_dir=data, embedder="model-a", embed_threads=1))
    assert first.ingest([memos]).added == len(MEMOS)
    first.close()
    multilingual = write_folder(tmp_path / "e5-tiny", tokenizer=unigram_tokenizer(), hidden=48, seed=1,
                                prompts={"query": "query: ", "passage": "passage: "})

    chosen: list[Path] = [tmp_path / "memos"]  # not a model folder: refused, nothing changes
    asked: list[str] = []

    class Dialog:
        @staticmethod
        def getExistingDirectory(*_args):
            return str(chosen[0])

    monkeypatch.setattr(documents, "QFileDialog", Dialog)
    monkeypatch.setattr(documents, "confirm", lambda _w, _t, text, **_k: asked.append(text) or True)
    w = build_window(HearthConfig(data_dir=data, embed_threads=1), prefs=Prefs(tmp_path / "gui.ini"),
                     open_external=lambda p: None, factory=lambda cfg: Hearth(cfg, chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    qtbot.waitUntil(lambda: w.library.done_count() == len(MEMOS), timeout=WAIT)
    hearth = w.ops.hearth
    old_key = hearth.manifest.workspace_embedder("default")
    banner = w.library.banner

    # The tiny English model reads no Russian: the library says so by itself, with the button.
    qtbot.waitUntil(lambda: banner.action.isVisible(), timeout=WAIT)
    assert f"passages here are in Russian, which the embedding model {old_key} does not read" in banner.message
    assert banner.action.text() == "Use a multilingual model…"
    banner.action.click()
    qtbot.waitUntil(lambda: not w.ops.busy and banner.isVisible(), timeout=WAIT)
    assert "config.json" in banner.message and not banner.action.isVisible(), banner.message
    assert hearth.manifest.workspace_embedder("default") == old_key
    assert len(hearth.manifest.done_sources("default")) == len(MEMOS)

    chosen[0] = multilingual
    w.documents._show_language_notice("default", LanguageNotice("ru", 9, 10, old_key))  # shown once a session
    banner.action.click()
    assert f"embed the {len(MEMOS)} documents of this workspace again" in asked[-1]
    qtbot.waitUntil(lambda: not w.ops.busy and "now searched with the model in e5-tiny" in banner.message,
                    timeout=60_000)
    assert hearth.manifest.workspace_embedder("default").startswith("e5-tiny-")
    assert hearth.embedder_for("default").dim == 48
    assert len(hearth.manifest.done_sources("default")) == len(MEMOS)
    assert all(w.library.status_of(s) == "done" for s in hearth.manifest.done_sources("default"))
    assert hearth.search("Сколько дней отпуска", k=3)
    w.close()


def test_a_scan_read_poorly_is_flagged_in_the_library_with_its_pages(qtbot, tmp_path, monkeypatch):
    """A picture OCR reads badly (Cyrillic, tesseract off) shows "scanned, low confidence" naming the page; one
    read well shows "scanned"; a text file shows neither."""
    from bench.ocr import render_page
    from inference.ocr import OnnxOcr
    from rag.ingest import IngestOptions
    from rag.loaders import scan

    monkeypatch.setattr(scan, "_ENGINE", OnnxOcr(providers=["CPUExecutionProvider"], tesseract=False))
    docs = tmp_path / "docs"
    docs.mkdir()
    render_page(["Счёт оплачен третьего мая."], dpi=200, width_in=4.5).save(docs / "receipt.png")
    render_page(["Parking permits are renewed in January."], dpi=200, width_in=4.5).save(docs / "permit.png")
    (docs / "notes.md").write_text("# Notes\n\nThe fridge is cleaned every Friday.\n", encoding="utf-8")
    w = build_window(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)),
                     prefs=Prefs(tmp_path / "gui.ini"), open_external=lambda p: None,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([docs])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    lib = w.library
    receipt, permit, notes = (str((docs / n).resolve()) for n in ("receipt.png", "permit.png", "notes.md"))
    qtbot.waitUntil(lambda: "low confidence" in lib.status_text(receipt)[0], timeout=WAIT)
    label, tip = lib.status_text(receipt)
    assert lib.status_of(receipt) == "done" and label == "done · scanned, low confidence"
    assert "poorly on pages: 1." in tip
    label, tip = lib.status_text(permit)
    assert label == "done · scanned" and "Read by OCR from page images." in tip
    assert lib.status_text(notes)[0] == "done"
    w.close()


def test_indexing_progress_shows_pages_per_second(qtbot):
    from app.gui.library import LibraryPanel
    from rag.ingest import Progress

    lib = LibraryPanel()
    qtbot.addWidget(lib)
    lib.begin()
    lib.on_progress(Progress(files_done=1, files_total=3, chunks=6, current=None, elapsed=4.0, pages=10))
    assert "1 of 3 files · 6 passages · 10 pages, 2.5 pages/s" in lib.progress_text.text()

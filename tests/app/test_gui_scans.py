"""Citations of scans: the page's picture opens with the cited lines marked where they are (app/gui/scan_viewer.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6.QtWidgets")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.gui.launch import build_window  # noqa: E402
from app.gui.prefs import Prefs  # noqa: E402
from bench.ocr import render_page  # noqa: E402
from rag.errors import LoadError  # noqa: E402
from rag.ingest import IngestOptions  # noqa: E402
from rag.quotes import Quote  # noqa: E402
from rag.service import Hearth, HearthConfig  # noqa: E402
from tests.fakes import HashEmbedder, ScriptedModel  # noqa: E402
from tests.rag.test_loaders_image import FIRST, SECOND, image_pdf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30_000
# render_page at 200 dpi, 12 pt: lines are 33 px tall, the first drawn at y = 120, the next 50 px lower.
TOP, PITCH, TALL = 120, 50, 33


@pytest.fixture(autouse=True)
def _fixture_machine(monkeypatch):
    monkeypatch.setenv("HEARTH_SYSFS_ROOT", str(ROOT / "tests" / "fixtures" / "sysfs" / "strix-halo"))


def _window(qtbot, tmp_path: Path, docs: Path, opened: list[Path]):
    w = build_window(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)),
                     prefs=Prefs(tmp_path / "gui.ini"), open_external=opened.append,
                     factory=lambda cfg: Hearth(cfg, embedder=HashEmbedder(), chat_model=ScriptedModel("ok")))
    qtbot.addWidget(w)
    w.show()
    w.start()
    w.ingest([docs])
    qtbot.waitUntil(lambda: not w.ops.busy, timeout=WAIT)
    return w


def _line(index: int, height: int) -> tuple[float, float]:
    """Top and bottom of line `index` of a render_page picture `height` px tall, as fractions, with room."""
    return (TOP + index * PITCH - 8) / height, (TOP + index * PITCH + TALL + 12) / height


def test_a_cited_scan_opens_at_its_picture_with_the_line_marked(qtbot, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    picture = render_page(FIRST + SECOND[:1], dpi=200, width_in=4.5)
    picture.save(docs / "notice.png")
    opened: list[Path] = []
    w = _window(qtbot, tmp_path, docs, opened)
    hit = w.ops.hearth.search("server room code 5821", k=1)[0]
    path = Path(hit.source)
    assert path.name == "notice.png" and hit.ocr_confidence is not None
    # A quote of the third line (quotes carry no confidence: a picture is a scan all the same).
    at = hit.text.index("The server")
    line = hit.text[at:].split("\n")[0]
    quote = Quote(hit.source, hit.page, None, line, hit.start + at, hit.start + at + len(line), 1, 1.0)
    w.sources.open_hit(quote)
    qtbot.waitUntil(lambda: path in w.sources.scan_viewers, timeout=WAIT)
    viewer = w.sources.scan_viewers[path]
    assert viewer.isVisible() and viewer.page_label.text() == "Page 1" and viewer.found.text() == "Passage highlighted"
    assert viewer.canvas.image.size().toTuple() == picture.size
    (x0, y0, x1, y1), = viewer.highlighted()
    assert (TOP + 2 * PITCH - 8) < y0 < y1 < (TOP + 2 * PITCH + TALL + 12)  # on the third line
    assert y0 > TOP + PITCH + TALL and x0 < 0.2 * picture.width < 0.6 * picture.width < x1  # not on the second
    # The whole passage marks all its lines; the original opens outside.
    w.sources.open_hit(hit)
    qtbot.waitUntil(lambda: len(viewer.highlighted()) == 3, timeout=WAIT)
    qtbot.mouseClick(viewer.original, Qt.MouseButton.LeftButton)
    assert opened == [path]
    viewer.close()
    qtbot.waitUntil(lambda: path not in w.sources.scan_viewers, timeout=WAIT)
    # Boxes that cannot be had (the file is unreadable now, say): the text Hearth read, the quote highlighted.
    w.ops.hearth.page_boxes = lambda p, n: (_ for _ in ()).throw(LoadError("gone", kind="unreadable"))
    w.ops.hearth.document_text = lambda p: hit.text
    w.sources.open_hit(quote)
    qtbot.waitUntil(lambda: path in w.sources.text_viewers, timeout=WAIT)
    assert w.sources.text_viewers[path].highlighted == line and path not in w.sources.scan_viewers
    w.close()


def test_a_cited_page_of_a_scanned_pdf_opens_as_its_picture(qtbot, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    pdf = image_pdf(docs / "scan.pdf", [FIRST, SECOND])
    w = _window(qtbot, tmp_path, docs, [])
    hit = w.ops.hearth.search("server room code 5821", k=1)[0]
    assert (Path(hit.source).name, hit.page) == ("scan.pdf", 2) and hit.ocr_confidence is not None
    path = Path(hit.source)
    at = hit.text.index("Only")
    line = hit.text[at:].split("\n")[0]
    w.sources.open_hit(replace(hit, text=line, start=hit.start + at, end=hit.start + at + len(line)))
    qtbot.waitUntil(lambda: path in w.sources.scan_viewers, timeout=WAIT)
    viewer = w.sources.scan_viewers[path]
    assert viewer.page_label.text() == "Page 2" and not viewer.canvas.image.isNull()
    (_, y0, _, y1), = viewer.canvas.boxes
    height = render_page(SECOND, dpi=200, width_in=4.5).height  # the picture fills the page
    assert _line(1, height)[0] < y0 < y1 < _line(1, height)[1]
    viewer.close()
    # No boxes for the page (the document changed): the PDF viewer at the page, as for any PDF.
    w.ops.hearth.page_boxes = lambda p, n: None
    w.sources.open_hit(hit)
    qtbot.waitUntil(lambda: path in w.sources.pdf_viewers, timeout=WAIT)
    assert w.sources.pdf_viewers[path].page == 2 and path not in w.sources.scan_viewers and pdf.exists()
    w.close()

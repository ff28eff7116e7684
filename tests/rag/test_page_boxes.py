"""Where a cited passage lies on a scanned page (rag/page_boxes.py): the boxes of the lines it covers."""

from __future__ import annotations

from pathlib import Path

from bench.ocr import render_page
from rag.ingest import IngestOptions
from rag.page_boxes import PageBoxes
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder

LINES = ["Parking permits are renewed in January.", "The server room code changed to 5821."]


def test_a_hit_on_a_scan_maps_to_the_box_of_its_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    image = render_page(LINES, dpi=200, width_in=4.5)
    image.save(docs / "notice.png")
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder())
    h.ingest([docs])
    hit = next(x for x in h.search("server room code 5821", k=3) if Path(x.source).name == "notice.png")
    assert hit.ocr_confidence is not None
    boxes = h.page_boxes(Path(hit.source), hit.page)
    assert boxes is not None and boxes.page == 1 and len(boxes.lines) == 2
    start = hit.start + hit.text.index("The server")
    (x0, y0, x1, y1), = boxes.covering(start, hit.end, hit.text[hit.text.index("The server"):])
    # render_page draws line i at y = margin + i * pitch: 120 + 37 px at 200 dpi, 12 pt (about 33 px tall)
    margin, pitch = 120, 50
    assert (margin + pitch - 10) / image.height < y0 < y1 < (margin + pitch + 45) / image.height
    assert x0 < 0.3 < 0.6 < x1
    assert h.page_boxes(Path(hit.source), 2) is None  # no such page
    h.close()


def test_stale_offsets_are_found_again_by_the_passage_words() -> None:
    page = PageBoxes(1, 10, "Line one here.\nLine two there.", ((0, 14, .1, .1, .9, .2), (15, 30, .1, .3, .9, .4)))
    assert page.covering(25, 40, "Line two there.") == [(.1, .3, .9, .4)]
    assert page.covering(0, 5, "Line two there.") == [(.1, .3, .9, .4)]  # the page moved in the document
    assert page.covering(10, 40) == [(.1, .1, .9, .2), (.1, .3, .9, .4)]
    assert page.covering(10, 40, "Not on this page.") == []

"""Scans and pictures: the image reader and PDF pages without a text layer, read by OCR (small pages, seconds)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fpdf import FPDF

from bench.ocr import cer, render_page
from rag.errors import LoadError
from rag.ingest import IngestOptions
from rag.loaders import Limits, OcrNote, Section, load, ocr_note, read_ocr_note
from rag.loaders import scan
from rag.service import Hearth, HearthConfig
from tests.fakes import HashEmbedder

FIRST = ["Parking permits are renewed in January.", "Ask the front desk for a form."]
SECOND = ["The server room code changed to 5821.", "Only IT staff may enter."]


def image_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF whose pages are only pictures of text, as a scanner writes them."""
    pdf = FPDF(unit="pt", format=(324, 120))
    for lines in pages:
        pdf.add_page()
        buffer = io.BytesIO()
        render_page(lines, dpi=200, width_in=4.5).save(buffer, format="PNG")
        pdf.image(buffer, x=0, y=0, w=324, h=120)
    pdf.output(str(path))
    return path


def test_two_frame_tiff_gives_one_section_per_page(tmp_path: Path) -> None:
    path = tmp_path / "fax.tiff"
    first, second = (render_page(lines, dpi=200, width_in=4.5) for lines in (FIRST, SECOND))
    first.save(path, save_all=True, append_images=[second], compression="tiff_deflate")
    sections = load(path)
    assert [s.page for s in sections] == [1, 2]
    assert cer(sections[1].text, "\n".join(SECOND)) < 0.03
    assert all(s.ocr_confidence and s.ocr_confidence > 0.85 for s in sections) and ocr_note(sections) == "scanned"
    start, end, *box = sections[0].boxes[0]
    assert sections[0].text[start:end].startswith("Parking") and all(0 <= v <= 1 for v in box)


def test_image_only_pdf_is_searchable_at_the_right_page(tmp_path: Path) -> None:
    image_pdf(tmp_path / "scan.pdf", [FIRST, SECOND])
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder())
    seen = []
    report = h.ingest([tmp_path / "scan.pdf"], progress=seen.append)
    assert report.failed == [] and report.added == 1 and report.pages == 2  # OCR'd pages count as pages
    assert seen[-1].pages == 2
    top = h.search("server room code", k=1)[0]
    assert (Path(top.source).name, top.page) == ("scan.pdf", 2) and "5821" in top.text
    assert top.ocr_confidence is not None and not top.low_confidence
    assert [d.note for d in h.sources()] == ["scanned"]


def test_low_confidence_page_is_flagged_in_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inference.ocr import OnnxOcr

    # A script this engine cannot read (Cyrillic, without tesseract): read badly, and said so.
    monkeypatch.setattr(scan, "_ENGINE", OnnxOcr(providers=["CPUExecutionProvider"], tesseract=False))
    render_page(["Счёт оплачен третьего мая."], dpi=200, width_in=4.5).save(tmp_path / "receipt.png")
    h = Hearth(HearthConfig(data_dir=tmp_path / "data", ingest=IngestOptions(workers=0)), embedder=HashEmbedder())
    assert h.ingest([tmp_path / "receipt.png"]).failed == []
    assert [d.note for d in h.sources()] == ["scanned, low confidence (page 1)"]
    (tmp_path / "typed.md").write_text("# Receipts\n\nKeep every receipt for a year.\n", encoding="utf-8")
    assert h.ingest([tmp_path / "typed.md"]).failed == []
    hits = {Path(hit.source).name: hit for hit in h.search("receipt", k=5)}
    assert hits["receipt.png"].low_confidence and hits["receipt.png"].to_json()["ocr_confidence"] < 0.85
    assert hits["typed.md"].to_json()["ocr_confidence"] is None
    by_vector = h.store.vectors.chunks_of("default", [hits["receipt.png"].source])  # Chroma's copy too
    assert by_vector[0].ocr_confidence == pytest.approx(hits["receipt.png"].ocr_confidence, abs=1e-3)


def test_the_note_says_which_pages_were_scanned_and_which_read_poorly() -> None:
    def page(n: int, confidence: float | None) -> Section:
        return Section(text=f"page {n}", page=n, heading=None, offset=0, ocr_confidence=confidence)

    assert ocr_note([page(1, None), page(2, None)]) is None and read_ocr_note(None) is None
    assert ocr_note([page(1, 0.97), page(2, 0.96)]) == "scanned"
    assert ocr_note([page(1, None), page(2, 0.97), page(3, 0.98)]) == "scanned (page 2, 3)"  # a PDF, partly scanned
    assert ocr_note([page(1, 0.97), page(2, 0.6)]) == "scanned, low confidence (page 2)"
    many = ocr_note([page(n, 0.5) for n in range(1, 13)])
    assert many == "scanned, low confidence (page 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …)"
    assert read_ocr_note(many) == OcrNote(True, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …")
    assert read_ocr_note("scanned") == OcrNote(False, "")
    assert read_ocr_note("scanned (page 2, 3)") == OcrNote(False, "2, 3")
    assert read_ocr_note("something else") is None


def test_damaged_picture_is_a_clear_load_error(tmp_path: Path) -> None:
    good = io.BytesIO()
    render_page(FIRST, dpi=100, width_in=3).save(good, format="PNG")
    path = tmp_path / "broken.png"
    path.write_bytes(good.getvalue()[:300])
    with pytest.raises(LoadError) as caught:
        load(path)
    assert caught.value.kind == "corrupt" and "broken.png is not a picture" in str(caught.value)
    (tmp_path / "words.jpg").write_text("not a picture at all")
    assert pytest.raises(LoadError, load, tmp_path / "words.jpg").value.kind == "corrupt"


def test_picture_over_the_pixel_cap_is_too_large(tmp_path: Path) -> None:
    render_page(FIRST, dpi=100, width_in=3).save(tmp_path / "big.webp")
    with pytest.raises(LoadError) as caught:
        load(tmp_path / "big.webp", Limits(max_image_pixels=10_000))
    assert caught.value.kind == "too_large"


def test_blank_picture_is_empty(tmp_path: Path) -> None:
    render_page([""], dpi=100, width_in=3).save(tmp_path / "blank.jpg")
    assert pytest.raises(LoadError, load, tmp_path / "blank.jpg").value.kind == "empty"


def test_the_scan_make_offline_check_reads_says_what_it_expects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "packaging"))
    import offline_check

    (section,) = load(offline_check.SCAN)
    assert offline_check.SCAN_WORD in section.text and section.ocr_confidence and section.ocr_confidence >= 0.85


EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 120 60\n"
       b"/Helvetica findfont 12 scalefont setfont 10 20 moveto (PAID) show showpage\n%%EOF\n")


@pytest.fixture
def stand_in_gs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `gs` first on PATH that leaves a mark when started: Pillow hands PostScript to Ghostscript."""
    stub = tmp_path / "bin"
    stub.mkdir()
    mark = tmp_path / "gs-ran"
    (stub / "gs").write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    (stub / "gs").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub}:{__import__('os').environ['PATH']}")
    return mark


def test_postscript_named_as_a_picture_never_starts_ghostscript(tmp_path: Path, stand_in_gs: Path) -> None:
    """A PostScript file named invoice.png (#65): refused with the reason, Ghostscript never started."""
    path = tmp_path / "invoice.png"
    path.write_bytes(EPS)
    error = pytest.raises(LoadError, load, path).value
    assert not stand_in_gs.exists()
    assert error.kind == "unsupported" and "it holds PostScript" in str(error) and error.hint


def test_an_eps_inside_a_word_file_never_starts_ghostscript(stand_in_gs: Path) -> None:
    """Pictures embedded in a DOCX or PPTX are opened only as the formats Hearth reads: an EPS is skipped."""
    pictures = scan.Pictures(Path("contract.docx"), Limits())
    assert pictures.read(EPS) is None and pictures.count == 0
    assert not stand_in_gs.exists()
    png = io.BytesIO()
    render_page(FIRST, dpi=100, width_in=3).save(png, format="PNG")
    assert "Parking permits" in pictures.read(png.getvalue()).text  # a real picture is still read

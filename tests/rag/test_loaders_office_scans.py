"""Scanned pages pasted into Word and PowerPoint: pictures read by OCR when they are the only content."""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pptx
import pytest
from docx.shared import Inches as DocxInches
from pptx.util import Inches

from bench.ocr import cer, render_page
from rag.errors import LoadError
from rag.loaders import Limits, load, ocr_note, scan

LINES = ["The boiler is serviced every October.", "Call the caretaker first."]


def picture(lines: list[str] = LINES) -> io.BytesIO:
    buffer = io.BytesIO()
    render_page(lines, dpi=200, width_in=4.5).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def write_pptx(path: Path) -> Path:
    p = pptx.Presentation()
    s = p.slides.add_slide(p.slide_layouts[5])
    s.shapes.title.text = "Building notes"
    box = s.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
    box.text_frame.text = "Keys are at the front desk."
    s.shapes.add_picture(picture(["Ignored picture text."]), Inches(1), Inches(4), width=Inches(4))
    s = p.slides.add_slide(p.slide_layouts[6])  # blank: no placeholders, only the scan
    s.shapes.add_picture(picture(), Inches(0.5), Inches(0.5), width=Inches(8))
    p.save(str(path))
    return path


def test_pptx_slide_holding_only_a_picture_is_read_by_ocr(tmp_path: Path) -> None:
    sections = load(write_pptx(tmp_path / "deck.pptx"))
    assert [s.page for s in sections] == [1, 2]
    first, second = sections
    assert first.text == "Building notes\nKeys are at the front desk." and first.ocr_confidence is None
    assert cer(second.text, "\n".join(LINES)) < 0.05
    assert second.ocr_confidence is not None and second.ocr_confidence > 0.85 and second.boxes == ()
    assert ocr_note(sections) == "scanned (page 2)"


def test_docx_holding_only_a_picture_is_read_by_ocr(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_picture(picture(), width=DocxInches(6))
    document.add_paragraph("   ")
    document.save(str(tmp_path / "letter.docx"))
    sections = load(tmp_path / "letter.docx")
    assert len(sections) == 1 and sections[0].page is None
    assert cer(sections[0].text, "\n".join(LINES)) < 0.05
    assert sections[0].ocr_confidence is not None and ocr_note(sections) == "scanned"


def test_docx_with_text_ignores_its_pictures(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Rent is due on the first.")
    document.add_picture(picture(), width=DocxInches(6))
    document.save(str(tmp_path / "memo.docx"))
    sections = load(tmp_path / "memo.docx")
    assert [s.text for s in sections] == ["Rent is due on the first."] and sections[0].ocr_confidence is None


def test_pictures_past_the_caps_or_undecodable_are_skipped(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_picture(picture(), width=DocxInches(6))
    document.save(str(tmp_path / "big.docx"))
    with pytest.raises(LoadError) as caught:
        load(tmp_path / "big.docx", Limits(max_image_pixels=1000))
    assert caught.value.kind == "empty"
    with pytest.raises(LoadError) as caught:
        load(tmp_path / "big.docx", Limits(max_ocr_pages=0))
    assert caught.value.kind == "empty"
    pictures = scan.Pictures(tmp_path / "big.docx", Limits())
    assert pictures.read(b"\x89PNG not really") is None and pictures.count == 0 and pictures.error is None

"""OCR (inference/ocr.py, inference/ocr_layout.py) on small pages rendered here with known text."""

from __future__ import annotations

import numpy as np
import pytest

from bench.ocr import cer, render_page
from inference import ocr_layout
from inference.ocr import OnnxOcr, tesseract_languages
from rag.loaders import LOW_OCR_CONFIDENCE

ENGLISH = ["Invoice 4471 was paid on 3 May 2024.", "The balance due is zero."]
RUSSIAN = ["Счёт 4471 оплачен 3 мая 2024 года.", "Остаток к оплате равен нулю."]
needs_russian = pytest.mark.skipif(not {"rus", "eng"} <= set(tesseract_languages()),
                                   reason="tesseract with rus and eng is not installed")  # fmt: skip


@pytest.fixture(scope="module")
def ocr() -> OnnxOcr:
    return OnnxOcr(providers=["CPUExecutionProvider"])


def test_clean_english_page_at_300_dpi(ocr: OnnxOcr) -> None:
    page = ocr.read(render_page(ENGLISH, dpi=300, width_in=4.5))
    assert cer(page.text, "\n".join(ENGLISH)) < 0.03
    assert page.confidence >= LOW_OCR_CONFIDENCE and page.angle == 0
    assert [line.engine for line in page.lines] == ["pp-ocr", "pp-ocr"]
    first, second = (line.box for line in page.lines)
    assert 0 < first[0] < first[2] < 1 and first[3] <= second[1] + 0.02  # boxes as fractions, top to bottom


@needs_russian
def test_clean_russian_page_at_300_dpi_goes_to_tesseract(ocr: OnnxOcr) -> None:
    page = ocr.read(render_page(RUSSIAN, dpi=300, width_in=4.5))
    assert cer(page.text, "\n".join(RUSSIAN)) < 0.03
    assert {line.engine for line in page.lines} == {"tesseract"}
    assert page.confidence >= LOW_OCR_CONFIDENCE


def test_a_page_turned_two_degrees_is_levelled_and_read(ocr: OnnxOcr) -> None:
    page = ocr.read(render_page(ENGLISH, dpi=200, width_in=4.5, angle=2))
    assert page.angle == pytest.approx(-2, abs=0.3)
    assert cer(page.text, "\n".join(ENGLISH)) < 0.03


def test_russian_without_tesseract_is_read_with_low_confidence() -> None:
    ocr = OnnxOcr(providers=["CPUExecutionProvider"], tesseract=False)
    page = ocr.read(render_page(RUSSIAN[:1], width_in=4.5))
    assert page.confidence < LOW_OCR_CONFIDENCE  # PP-OCR's dictionary has no Cyrillic: letters go missing


def test_blocks_and_columns_come_in_reading_order() -> None:
    prob = np.zeros((200, 400), np.float32)
    for top in (10, 30, 50, 100):  # left column: three lines, a paragraph gap, one more
        prob[top : top + 8, 10:180] = 0.9
    for top in (12, 32):  # right column, lines not level with the left's
        prob[top : top + 8, 230:390] = 0.9
    boxes = ocr_layout.text_boxes(prob)
    assert [(b[0], b[1]) for b in boxes] == [(10, 10), (10, 30), (10, 50), (10, 100), (230, 12), (230, 32)]
    assert ocr_layout.block_starts(boxes) == [True, False, False, True, True, False]


def test_words_of_one_line_stay_together() -> None:
    prob = np.zeros((40, 300), np.float32)
    for left in (10, 70, 130):  # gaps of 10 px on a line 8 px high are spaces between words
        prob[10:18, left : left + 50] = 0.9
    assert ocr_layout.text_boxes(prob) == [(10.0, 10.0, 180.0, 18.0)]


def test_a_box_maps_back_through_the_turn() -> None:
    from PIL import Image

    original = Image.new("L", (300, 200), 255)
    original.paste(0, (100, 80, 110, 90))
    turned = original.rotate(5, expand=True, fillcolor=255)
    ys, xs = np.nonzero(np.asarray(turned) < 128)
    box = ocr_layout.unrotate_box((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1), 5, turned.size, original.size)
    assert box == pytest.approx((100, 80, 110, 90), abs=2)


def test_ocr_models_are_verified_against_their_pinned_hashes(tmp_path, monkeypatch) -> None:
    from inference import models
    from inference.errors import ModelError

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "PP-OCRv6_det_small.onnx").write_bytes(b"not the model")
    monkeypatch.setattr(models, "_module_dir", lambda module, package: tmp_path)
    models.ocr_model_files.cache_clear()
    try:
        with pytest.raises(ModelError) as caught:
            models.ocr_model_files()
    finally:
        models.ocr_model_files.cache_clear()
    assert "damaged or not the expected version" in str(caught.value)
    assert caught.value.hint == "pip install --no-deps --force-reinstall rapidocr==3.10.0"

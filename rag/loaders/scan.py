"""Page images to text through OCR (inference.ocr), for the image reader and PDF pages without a text layer.

    read(image)                  one page image -> OcrPage; the engine is loaded once per process, lazily
    attach(sections, pages)      Sections of OCR'd pages given their confidence and line boxes
    is_blank(image)              True for a page with no ink on it (nothing to read, so no OCR run)
    Pictures(path, limits)       pictures embedded in a DOCX or PPTX read one by one, within the caps
    unavailable(path, exc)       the LoadError for OCR that cannot run (models or runtime missing)
    open_picture(data, formats)  Pillow's Image.open limited to the formats Hearth reads

Not a format of its own: no suffix maps here.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image, ImageOps

from inference.errors import HearthError
from inference.ocr_layout import ink_mask
from rag.errors import LoadError
from rag.loaders import Limits, Section

if TYPE_CHECKING:
    from inference.ocr import OcrPage, OnnxOcr

# The picture formats Hearth decodes, by Pillow's names. Image.open would otherwise try every format Pillow
# knows, and some of those hand the file to another program: a PostScript file named `invoice.png`, or an EPS
# inside a DOCX, goes to Ghostscript. (Some cameras' JPEGs open as MPO: through the JPEG reader, so "JPEG" covers them.)
PICTURE_FORMATS = ("PNG", "JPEG", "TIFF", "WEBP")
# Pictures inside Word and PowerPoint files: those, and the older formats office programs still embed.
EMBEDDED_PICTURE_FORMATS = (*PICTURE_FORMATS, "GIF", "BMP")

_ENGINE: OnnxOcr | None = None
_BLANK_SHARE = 0.0002  # share of ink pixels under which a page is blank (specks of dust, a scanner's edge)


def read(image: Image.Image) -> OcrPage:
    """The text on one page image, in reading order (the OCR models load on the first call in a process)."""
    global _ENGINE
    if _ENGINE is None:
        from inference.ocr import OnnxOcr  # onnxruntime is loaded only by a process that meets a scan
        # Reader processes each hold one engine; a few threads each, since they also run side by side.
        _ENGINE = OnnxOcr(threads=min(4, os.cpu_count() or 1))
    return _ENGINE.read(image)


def attach(sections: list[Section], pages: Mapping[int, OcrPage]) -> list[Section]:
    """`sections` with those of OCR'd pages (by page number) carrying their confidence and line boxes.

    Each box is (start, end) of the line in the Section's text and (x0, y0, x1, y1) on the page as fractions
    of its width and height, so a viewer can mark a passage on the scan at any resolution.
    """
    out = []
    for section in sections:
        page = pages.get(section.page) if section.page is not None else None
        if page is None:
            out.append(section)
            continue
        boxes, at = [], 0
        for line in page.lines:
            start = section.text.find(line.text, at)
            if start < 0:
                continue
            at = start + len(line.text)
            boxes.append((start, at, *line.box))
        out.append(replace(section, ocr_confidence=page.confidence, boxes=tuple(boxes)))
    return out


def is_blank(image: Image.Image) -> bool:
    """True when the page has next to no ink: a blank page, or one holding only a faint background."""
    grey = image.convert("L")
    if max(grey.size) > 800:
        scale = 800 / max(grey.size)
        grey = grey.resize((max(1, round(grey.width * scale)), max(1, round(grey.height * scale))),
                           Image.Resampling.BOX)  # fmt: skip
    return float(ink_mask(grey).mean()) < _BLANK_SHARE


def unavailable(path: Path, exc: HearthError) -> LoadError:
    """The LoadError for a scan that cannot be read because OCR cannot run here."""
    hint = exc.hint or "Reinstall Hearth with its OCR models (packaging/requirements-models.txt)."
    return LoadError(f"{path.name} is a scan, and OCR cannot run here: {exc}", kind="unsupported", hint=hint)


class Pictures:
    """Pictures embedded in a document (a DOCX's, a PPTX slide's) read by OCR, at most `max_ocr_pages` of
    them; when OCR cannot run, `error` says so, for a document that turns out to hold no text at all."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self._path, self._limits = path, limits
        self.count = 0  # pictures OCR'd so far
        self.error: LoadError | None = None

    def read(self, data: bytes) -> OcrPage | None:
        """What OCR reads on the picture in `data`; None for one that is blank, undecodable, over the pixel
        cap or past the picture cap, or when OCR cannot run (a picture is skipped, never the document)."""
        if self.error is not None or self.count >= self._limits.max_ocr_pages:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own pixel cap decides
                image = open_picture(data, EMBEDDED_PICTURE_FORMATS)
                if image.width * image.height > self._limits.max_image_pixels:
                    return None
                image = ImageOps.exif_transpose(image)
                image.load()
            if is_blank(image):
                return None
            self.count += 1
            page = read(image)
        except HearthError as exc:  # the OCR models or runtime, not the picture
            self.error = unavailable(self._path, exc)
            return None
        except MemoryError:
            raise
        except Exception:  # Pillow raises OSError, ValueError, SyntaxError... on pictures it cannot decode (EMF)
            return None
        return page if page.text.strip() else None


def open_picture(data: bytes, formats: tuple[str, ...] = PICTURE_FORMATS) -> Image.Image:
    """The picture in `data`, opened only as one of `formats` (Pillow's UnidentifiedImageError otherwise)."""
    return Image.open(io.BytesIO(data), formats=list(formats))


def format_name(data: bytes) -> str | None:
    """What a file that is no picture Hearth reads seems to be, for the message: PostScript, or None."""
    if data.startswith((b"%!", b"\xc5\xd0\xd3\xc6")):  # PostScript and EPS, or EPS with a binary preview
        return "PostScript"
    return None

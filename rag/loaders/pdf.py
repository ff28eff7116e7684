"""PDF files through pypdfium2: one Section per page that has text, headed by the PDF's bookmarks; pages
without a text layer (scans) are rendered and read by OCR (rag/loaders/scan.py)."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pypdfium2
import pypdfium2.raw as pdfium_c
from PIL import Image

from inference.errors import HearthError
from rag.errors import LoadError
from rag.loaders import scan
from rag.loaders import (
    DEFAULT_LIMITS, HEADING_SEPARATOR, Limits, Section, build_sections, empty_error, too_many_pages, unreadable_error,
)
from rag.loaders.text import normalise

if TYPE_CHECKING:
    from inference.ocr import OcrPage


# PDFium marks soft hyphens and generated line ends with non-characters; they are not text.
_NON_TEXT = re.compile("[\ufffe\uffff\u00ad\x02]")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_SCAN_DPI = 300  # pages without a text layer are rendered at this resolution for OCR
_ROMAN = re.compile(r"m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")  # lower-case page numbers: iv, xii
_RUNNING_MIN_PAGES = 3  # a line that recurs in the same place on fewer pages is not told from text that repeats
_RUNNING_LINES = 2  # lines a running header or footer may take ("Acme Ltd - Confidential", then "Page 3 of 12")


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a PDF as one Section per page with text (OCR'd where it has no text layer); LoadError if it is
    encrypted, corrupt, or holds no text that even OCR finds."""
    # PDFium is not thread-safe: callers run all loading on one worker (see STYLE.md §2).
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise unreadable_error(path, exc) from exc
    with handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise empty_error(path)
        document = _open(path, handle)
        try:
            page_count = len(document)
            if page_count > limits.max_pages:
                raise too_many_pages(path, page_count, limits.max_pages)
            headings = _page_headings(document, page_count)
            texts: list[str] = []
            failed = 0
            for index in range(page_count):
                try:
                    texts.append(_page_text(document, index))
                except Exception:  # pypdfium2 raises PdfiumError, and ValueError/OSError on bad data
                    # One damaged page should not cost the reader the rest of the document.
                    texts.append(" ")
                    failed += 1
            texts = without_running_lines(texts)
            scans, why_not = _read_scans(path, document, [i for i, t in enumerate(texts) if not t.strip()], limits)
        finally:
            document.close()
    if page_count and failed == page_count:
        raise LoadError(
            f"{path.name} is damaged: none of its pages could be read.",
            kind="corrupt",
            hint="Open it in a PDF viewer and save or print it to a new PDF.",
        )
    if page_count == 0:
        raise empty_error(path)
    for index, page in scans.items():
        texts[index] = page.text
    sections = build_sections((text, i + 1, headings[i]) for i, text in enumerate(texts))
    if not sections:
        if why_not is not None:
            raise why_not
        raise LoadError(
            f"{path.name} has no text layer (scanned?): its {page_count} page(s) contain no text to read, "
            "and OCR found none on them.",
            kind="no_text_layer",
            hint="If it is a scan, scan it again more legibly (300 dpi, dark print) or run other OCR software on it.",
        )
    return scan.attach(sections, {index + 1: page for index, page in scans.items()})


def without_running_lines(texts: list[str]) -> list[str]:
    """The pages' texts without their running headers and footers ("Staff Handbook 3 / 57" atop every page): a
    first or last line that, page numbers aside, recurs in that place on at least half of the pages with text,
    and on three or more. They would otherwise open a passage in every page, where search, the model and the
    quotes take them for text. The first page with text, often a cover with the title, is kept as it is, and
    no page loses its only line."""
    pages = [text.split("\n") for text in texts]
    with_text = [i for i, lines in enumerate(pages) if any(line.strip() for line in lines)][1:]
    if len(with_text) < _RUNNING_MIN_PAGES:
        return texts
    floor = max(_RUNNING_MIN_PAGES, (len(with_text) + 1) // 2)
    for end in (0, -1):
        for _ in range(_RUNNING_LINES):
            edge = {}  # page index -> its first (last) line with text, on pages with another one
            for i in with_text:
                kept = [n for n, line in enumerate(pages[i]) if line.strip()]
                if len(kept) > 1:
                    edge[i] = kept[end]
            keys = {i: _page_line_key(pages[i][n], len(pages)) for i, n in edge.items()}
            running = {key for key, count in Counter(keys.values()).items() if count >= floor}
            if not running:
                break
            for i, n in edge.items():
                if keys[i] in running:
                    del pages[i][n]
    return ["\n".join(lines) for lines in pages]


def _page_line_key(line: str, page_count: int) -> str:
    """A line without its page numbers (figures up to the page count, roman numerals) and punctuation: "#" for
    a page number alone. Other figures stay, so lines that differ in them ("21 days", "22 days") differ."""
    words = [w for w in re.findall(r"\w+", line.casefold())
             if not (w.isdecimal() and len(w) < 7 and int(w) <= page_count) and not _ROMAN.fullmatch(w)]
    return " ".join(words) or "#"


def _read_scans(path: Path, document: pypdfium2.PdfDocument, indices: list[int],
                limits: Limits) -> tuple[dict[int, OcrPage], LoadError | None]:  # fmt: skip
    """OCR the pages (by index) that have no text layer; blank ones are skipped. When OCR cannot run, the
    reason comes back instead, for a document with no text at all to report."""
    pages: dict[int, OcrPage] = {}
    for index in indices:
        try:
            page = document[index]
        except Exception:  # a page PDFium cannot load has no text layer either; the others are still read
            continue
        try:
            width, height = page.get_size()
            # A scan is a picture on the page: a page with none is blank or holds only drawings. And a
            # thumbnail first, for a page whose picture is blank paper.
            if next(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]), None) is None or scan.is_blank(
                _render(page, width, height, dpi=36, max_pixels=1_000_000)
            ):
                continue
            if len(pages) >= limits.max_ocr_pages:
                raise too_many_pages(path, len(indices), limits.max_ocr_pages, "pages to read by OCR")
            pages[index] = scan.read(_render(page, width, height, dpi=_SCAN_DPI, max_pixels=limits.max_image_pixels))
        except LoadError:
            raise
        except HearthError as exc:  # the OCR models or runtime are missing: no page can be read
            return pages, scan.unavailable(path, exc)
        except MemoryError:
            raise
        except Exception:  # PDFium failing to render one page must not cost the others
            continue
        finally:
            page.close()
    return pages, None


def _render(page: pypdfium2.PdfPage, width: float, height: float, *, dpi: int, max_pixels: int) -> Image.Image:
    """The page as a picture at `dpi`, or at less when that would exceed `max_pixels`."""
    scale = min(dpi / 72, (max_pixels / max(1.0, width * height)) ** 0.5)
    return page.render(scale=scale).to_pil()


def _open(path: Path, handle: object) -> pypdfium2.PdfDocument:
    """Open the document, trying the empty password as PDFium does, and translate its failures."""
    try:
        return pypdfium2.PdfDocument(handle)
    except pypdfium2.PdfiumError as exc:
        code = exc.err_code
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise LoadError(
                f"{path.name} is encrypted: it needs a password to open.",
                kind="encrypted",
                hint="Save an unprotected copy of the PDF and add that instead.",
            ) from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise LoadError(
                f"{path.name} is encrypted with a protection scheme Hearth cannot open.",
                kind="encrypted",
                hint="Save an unprotected copy of the PDF and add that instead.",
            ) from exc
        if code == pdfium_c.FPDF_ERR_FILE:
            raise LoadError(f"{path.name} cannot be opened (the file could not be read).", kind="unreadable") from exc
        if code == pdfium_c.FPDF_ERR_SUCCESS:
            # PDFium parsed it but found no pages: damage far more often than a truly page-less PDF.
            raise LoadError(
                f"{path.name} has no pages; it is probably damaged.",
                kind="corrupt",
                hint="Open it in a PDF viewer and save or print it to a new PDF.",
            ) from exc
        raise LoadError(
            f"{path.name} is not a valid PDF or is damaged.",
            kind="corrupt",
            hint="Open it in a PDF viewer and save or print it to a new PDF.",
        ) from exc
    except OSError as exc:
        raise unreadable_error(path, exc) from exc
    except Exception as exc:  # anything else from the binding means PDFium could not parse the bytes
        raise LoadError(f"{path.name} is not a valid PDF or is damaged.", kind="corrupt") from exc


def _page_text(document: pypdfium2.PdfDocument, index: int) -> str:
    """The text of one page, with newlines normalised and PDFium's markers removed."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    text = _NON_TEXT.sub("", normalise(text))
    return _TRAILING_SPACE.sub("\n", text)


def _page_headings(document: pypdfium2.PdfDocument, page_count: int) -> list[str | None]:
    """For each page, the bookmark path that heads it: the first starting there, else the one in force."""
    first: dict[int, str | None] = {}  # page index -> path of the first bookmark pointing there
    last: dict[int, str | None] = {}  # page index -> path of the last one, in force on the next pages
    stack: list[str] = []
    try:
        for bookmark in document.get_toc():
            del stack[bookmark.level :]
            stack.append(" ".join((bookmark.get_title() or "").split()))
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            if index is None or not 0 <= index < page_count:
                continue
            path = HEADING_SEPARATOR.join(t for t in stack if t) or None
            first.setdefault(index, path)
            last[index] = path
    except Exception:
        # Bookmarks are a nicety; a broken outline must not cost the document its text.
        return [None] * page_count
    headings: list[str | None] = []
    in_force: str | None = None
    for index in range(page_count):
        headings.append(first[index] if index in first else in_force)
        in_force = last.get(index, in_force)
    return headings

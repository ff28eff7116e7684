"""Turn one document file into its text, as Sections that remember page, heading and position.

    load(path, limits=...)  -> list[Section]; raises LoadError (kind says why) and nothing else
    SUPPORTED_SUFFIXES      the file suffixes load() understands (lower case, with the dot)
    full_text(sections)     the document's full text: section texts joined by SEPARATOR
    Limits                  caps on pages and on decompressed size (zip bombs), with sane defaults
    ocr_note(sections)      "scanned" for a document read by OCR, "scanned, low confidence (page …)" if poorly
    read_ocr_note(note)     that note taken apart again (for a display in another language)

One module per format (`text`, `markdown`, `html`, `pdf`, `docx`, `pptx`, `xlsx`, `ods`, `csv`, `odt`, `eml`, `image`),
each with `load(path, limits) -> list[Section]`. They are imported only when a file of theirs is loaded,
so pypdfium2 or openpyxl cost nothing until such a file appears.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from rag.errors import LoadError

SEPARATOR = "\n\n"

LOAD_ERROR_KINDS = frozenset(
    {"unsupported", "empty", "corrupt", "encrypted", "no_text_layer", "unreadable", "too_large"}
)
CELL_SEPARATOR = " | "  # between the cells of a table row, in every format
HEADING_SEPARATOR = " › "  # between the titles of a heading path ("6. Travel › 6.2 Meals"), in every format


@dataclass(frozen=True)
class Section:
    """A contiguous piece of a document's text: one PDF page or slide, or one heading's part of a file."""

    text: str
    page: int | None  # 1-based page or slide number; None for formats without pages
    heading: str | None  # nearest heading, as a "Parent › Child" path where the format has levels
    offset: int  # where `text` starts in full_text() of the document's sections
    # (start, end) in `text` of each table: rows one per line, cells joined by CELL_SEPARATOR, the
    # first row its header. The chunker keeps a table with its header row.
    tables: tuple[tuple[int, int], ...] = ()
    # Pages read by OCR (scans, pictures): the mean confidence (0..1) of what was read, and each line's
    # (start, end) in `text` with its box (x0, y0, x1, y1) on the page, as fractions of its width and height.
    ocr_confidence: float | None = None
    boxes: tuple[tuple[int, int, float, float, float, float], ...] = ()


@dataclass(frozen=True)
class Limits:
    """Caps that keep one hostile or huge file from exhausting the machine; exceeding one is `too_large`."""

    max_pages: int = 5000  # PDF pages, slides, or worksheets
    max_unzipped_bytes: int = 256 * 1024 * 1024  # declared size of all members of a DOCX/XLSX/PPTX/ODT zip
    max_zip_ratio: int = 100  # declared size / compressed size above which a big zip is a bomb
    max_zip_members: int = 20000
    max_image_pixels: int = 50_000_000  # one picture or TIFF frame (a page at 300 dpi is 9 million)
    max_ocr_pages: int = 500  # pages read by OCR in one file: a few seconds each on a CPU


# Below this mean confidence a page read by OCR is marked "scanned, low confidence". Clean print at 150 to
# 300 dpi reads at 0.95 and up (bench/ocr.py); a blurred or noisy page, or one in a script no engine here
# reads, falls to 0.5 to 0.8.
LOW_OCR_CONFIDENCE = 0.85


DEFAULT_LIMITS = Limits()

# Terminal control characters: C0 but tab, newline and carriage return; DEL; C1. Text carrying them would drive
# the terminal it is printed on (OSC 8 links, a changed window title, a cleared screen), so no document's text
# keeps them. Each becomes a space, which keeps every offset into a section's text (tables, OCR boxes) true.
CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def without_controls(text: str, replacement: str = " ") -> str:
    """`text` with every terminal control character replaced (by a space: offsets stay as they were)."""
    return CONTROL_CHARACTERS.sub(replacement, text)


# Suffix -> name of the module in this package that reads it. A new format is one module and one line here.
_REGISTRY: dict[str, str] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".docm": "docx",
    ".pptx": "pptx",
    ".pptm": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".tsv": "csv",
    ".ods": "ods",
    ".odt": "odt",
    ".eml": "eml",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".webp": "image",
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_REGISTRY)


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read one document into Sections, or raise LoadError saying why it cannot be read."""
    path = Path(path)
    suffix = path.suffix.lower()
    module_name = _REGISTRY.get(suffix)
    if module_name is None:
        shown = suffix or "without a suffix"
        raise LoadError(
            f"{path.name} is not a supported document type ({shown}).",
            kind="unsupported",
            hint="Supported types: " + ", ".join(sorted(SUPPORTED_SUFFIXES)) + ".",
        )
    if not path.is_file():
        raise LoadError(f"{path.name} cannot be read: it is not a file or no longer exists.", kind="unreadable")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError as exc:
        # Only a missing third-party reader (pypdfium2, openpyxl...) gets here; the install is broken, not the file.
        raise LoadError(
            f"{path.name} cannot be read: the reader for {suffix} files is not installed.",
            kind="unsupported",
            hint=f"Reinstall Hearth with its dependencies (missing: {exc.name or 'a module'}).",
        ) from exc
    sections: list[Section] = module.load(path, limits)
    if not sections:
        raise empty_error(path)
    return sections


class OcrNote(NamedTuple):
    """What a document's OCR note says: whether some pages were read poorly, and which pages ("2, 5" or "")."""

    low_confidence: bool
    pages: str


def ocr_note(sections: Iterable[Section]) -> str | None:
    """The note for a document read (partly) by OCR: "scanned", "scanned (page 3)" where only some pages
    were, "scanned, low confidence (page 2, 5)" naming the pages OCR read poorly; None when nothing was OCR'd."""
    sections = list(sections)
    scanned = [s for s in sections if s.ocr_confidence is not None]
    if not scanned:
        return None
    low = [s.page for s in scanned if s.ocr_confidence < LOW_OCR_CONFIDENCE]  # type: ignore[operator]
    if low:
        shown = _page_list(low)
        return f"scanned, low confidence (page {shown})" if shown else "scanned, low confidence"
    if len(scanned) == len(sections):
        return "scanned"
    shown = _page_list([s.page for s in scanned])
    return f"scanned (page {shown})" if shown else "scanned"


def read_ocr_note(note: str | None) -> OcrNote | None:
    """The parts of a note `ocr_note` wrote; None for no note or another kind of note."""
    match = _OCR_NOTE.fullmatch(note or "")
    return None if match is None else OcrNote(bool(match.group(1)), match.group(2) or "")


_OCR_NOTE = re.compile(r"scanned(, low confidence)?(?: \(page (.+)\))?")


def _page_list(pages: Sequence[int | None]) -> str:
    return ", ".join(str(p) for p in pages[:10] if p is not None) + (", …" if len(pages) > 10 else "")


def full_text(sections: Iterable[Section]) -> str:
    """The document's full extracted text, in which every Section's offset points at its text."""
    return SEPARATOR.join(s.text for s in sections)


Part = tuple[str, int | None, str | None] | tuple[str, int | None, str | None, Sequence[tuple[int, int]]]


def build_sections(parts: Iterable[Part]) -> list[Section]:
    """Make Sections from (text, page, heading[, table spans]) parts, dropping blank ones, computing offsets."""
    sections: list[Section] = []
    offset = 0
    for part in parts:
        # No document's text keeps terminal control characters (see CONTROL_CHARACTERS); replaced before
        # stripping, so that the table spans, counted in `raw`, stay true.
        raw, page, heading = without_controls(part[0]), part[1], part[2]
        if heading is not None and CONTROL_CHARACTERS.search(heading):
            heading = " ".join(without_controls(heading).split()) or None
        text = raw.strip()
        if not text:
            continue
        lead = len(raw) - len(raw.lstrip())
        tables = tuple(
            (max(0, a - lead), min(len(text), b - lead))
            for a, b in (part[3] if len(part) > 3 else ())  # type: ignore[misc]
            if min(len(text), b - lead) > max(0, a - lead)
        )
        if sections:
            offset += len(SEPARATOR)
        sections.append(Section(text=text, page=page, heading=heading, offset=offset, tables=tables))
        offset += len(text)
    return sections


class TextBuilder:
    """Assembles one section's text from paragraphs, lines (list items) and tables, noting where tables are."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._last = ""  # kind of the last block: "", "heading", "paragraph", "line", "table"
        self.tables: list[tuple[int, int]] = []

    def heading(self, text: str) -> None:
        """A heading line; the block after it follows on the next line."""
        text = " ".join(text.split())
        if text:
            self._add(text, "heading")

    def paragraph(self, text: str) -> None:
        """A block of its own, set off by a blank line."""
        text = text.strip()
        if text:
            self._add(text, "paragraph")

    def line(self, text: str) -> None:
        """A line that follows the line before it directly (list items, a heading's first line)."""
        text = text.rstrip()
        if text.strip():
            self._add(text, "line")

    def table(self, rows: Iterable[Sequence[object]]) -> None:
        """A table: one line per row, cells joined by CELL_SEPARATOR; the first row is the header."""
        lines = []
        for row in rows:
            cells = [" ".join(str(c).split()) if c is not None else "" for c in row]
            while cells and not cells[-1]:
                cells.pop()
            if any(cells):
                lines.append(CELL_SEPARATOR.join(cells))
        if not lines:
            return
        start = self._add("\n".join(lines), "table")
        self.tables.append((start, self._length))

    def __bool__(self) -> bool:
        return self._length > 0

    def part(self, page: int | None, heading: str | None) -> tuple[str, int | None, str | None, list[tuple[int, int]]]:
        """This text as a part for build_sections()."""
        return ("".join(self._pieces), page, heading, list(self.tables))

    def _add(self, text: str, kind: str) -> int:
        if self._pieces:
            glued = self._last == "heading" or (kind == "line" and self._last == "line")
            glue = "\n" if glued else SEPARATOR
            self._pieces.append(glue)
            self._length += len(glue)
        start = self._length
        self._pieces.append(text)
        self._length += len(text)
        self._last = kind
        return start


def read_bytes(path: Path) -> bytes:
    """The file's bytes, with OS errors (permissions, vanished file) turned into LoadError."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise unreadable_error(path, exc) from exc


def unreadable_error(path: Path, exc: OSError) -> LoadError:
    """The LoadError for a file the operating system will not let us read."""
    reason = exc.strerror or type(exc).__name__
    hint = "Check that you have permission to read the file." if isinstance(exc, PermissionError) else None
    return LoadError(f"{path.name} cannot be opened ({reason}).", kind="unreadable", hint=hint)


def empty_error(path: Path) -> LoadError:
    """The LoadError for a document that holds no text at all."""
    return LoadError(f"{path.name} is empty: it contains no text.", kind="empty")


def too_many_pages(path: Path, count: int, limit: int, what: str = "pages") -> LoadError:
    """The LoadError for a document with more pages (slides, sheets) than the limit allows."""
    return LoadError(
        f"{path.name} is too large: {count} {what}; the limit is {limit}.",
        kind="too_large",
        hint="Split the document, or raise the page limit in the settings.",
    )

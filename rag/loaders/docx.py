"""Word documents (.docx) through python-docx: one Section per heading, lists marked, tables as rows.
A document whose body holds no text but pictures (a scanned letter pasted in) is read from them by OCR."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, HEADING_SEPARATOR, Limits, Section, TextBuilder, build_sections
from rag.loaders import scan
from rag.loaders.archive import open_checked

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read a .docx file as heading-delimited Sections (headings, list items and table rows kept)."""
    open_checked(path, limits, kind="Word").close()
    import docx  # python-docx; imported here so other formats never pay for it

    try:
        document = docx.Document(str(path))
    except LoadError:
        raise
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors... on damaged files
        raise LoadError(f"{path.name} is not a valid Word file or is damaged.", kind="corrupt") from exc
    try:
        sections = _read(document)
        return sections or _scans(path, document, limits)
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"{path.name} could not be read as a Word file ({type(exc).__name__}).") from exc


def _scans(path: Path, document: Any, limits: Limits) -> list[Section]:
    """One Section (no page, no boxes: there is no page image) per picture in the body that OCR reads, in
    document order; LoadError when OCR cannot run and nothing was read."""
    pictures = scan.Pictures(path, limits)
    read = []
    for rid in document.element.body.xpath(".//a:blip/@r:embed"):  # inline and floating pictures alike
        part = document.part.related_parts.get(str(rid))
        page = pictures.read(part.blob) if part is not None else None
        if page is not None:
            read.append(page)
    if not read and pictures.error is not None:
        raise pictures.error
    sections = build_sections((page.text, None, None) for page in read)
    return [replace(s, ocr_confidence=page.confidence) for s, page in zip(sections, read, strict=True)]


def _read(document: Any) -> list[Section]:
    from docx.table import Table

    numbering = _Numbering(document)
    parts: list[tuple[str, int | None, str | None, list[tuple[int, int]]]] = []
    stack: list[tuple[int, str]] = []
    builder = TextBuilder()

    def close() -> None:
        parts.append(builder.part(None, HEADING_SEPARATOR.join(t for _, t in stack) or None))

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            builder.table(_rows(block))
            continue
        text = block.text.replace("\r", "\n")
        if not text.strip():
            continue
        level = _heading_level(block)
        if level is not None:
            close()
            builder = TextBuilder()
            title = " ".join(text.split())
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            builder.heading(title)
            continue
        marker = numbering.marker(block)
        if marker is not None:
            indent, symbol = marker
            builder.line(f"{'  ' * indent}{symbol} {' '.join(text.split())}")
        else:
            builder.paragraph(text)
    close()
    return build_sections(parts)


def _heading_level(paragraph: Any) -> int | None:
    """1–9 for a heading paragraph (by style name or outline level), 0 for a Title (above them), else None."""
    style = paragraph.style
    while style is not None:
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        match = _HEADING_STYLE.match(name)
        if match:
            return int(match.group(1))
        level = _outline_level(style.element)
        if level is not None:
            return level
        style = style.base_style
    return _outline_level(paragraph._p)


def _outline_level(element: Any) -> int | None:
    ppr = element.find(f"{_W}pPr")
    node = ppr.find(f"{_W}outlineLvl") if ppr is not None else None
    if node is None:
        return None
    try:
        value = int(node.get(f"{_W}val"))
    except (TypeError, ValueError):
        return None
    return value + 1 if 0 <= value < 9 else None  # 9 means "body text"


def _rows(table: Any) -> list[list[str]]:
    """Cell texts row by row; a cell merged across columns counts once."""
    rows = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(cell.text)
        rows.append(cells)
    return rows


class _Numbering:
    """Turns a paragraph's numbering properties into a list marker ("-", "3.", "b.") and depth."""

    def __init__(self, document: Any) -> None:
        self._formats: dict[tuple[str, int], str] = {}  # (numId, level) -> numFmt
        self._counters: dict[str, list[int]] = {}
        try:
            root = document.part.numbering_part.element
        except Exception:  # no numbering part: nothing is a list
            return
        abstract = {}
        for node in root.findall(f"{_W}abstractNum"):
            levels = {}
            for lvl in node.findall(f"{_W}lvl"):
                fmt = lvl.find(f"{_W}numFmt")
                levels[int(lvl.get(f"{_W}ilvl", "0"))] = fmt.get(f"{_W}val") if fmt is not None else "decimal"
            abstract[node.get(f"{_W}abstractNumId")] = levels
        for num in root.findall(f"{_W}num"):
            ref = num.find(f"{_W}abstractNumId")
            if ref is not None:
                for level, fmt in abstract.get(ref.get(f"{_W}val"), {}).items():
                    self._formats[(num.get(f"{_W}numId"), level)] = fmt

    def marker(self, paragraph: Any) -> tuple[int, str] | None:
        num_id, level = _num_pr(paragraph)
        if num_id is None or num_id == "0":
            return None
        fmt = self._formats.get((num_id, level), "bullet")
        if fmt in {"bullet", "none"}:
            return level, "-"
        counts = self._counters.setdefault(num_id, [])
        del counts[level + 1 :]
        while len(counts) <= level:
            counts.append(0)
        counts[level] += 1
        n = counts[level]
        if fmt == "lowerLetter":
            return level, f"{_letters(n)}."
        if fmt == "upperLetter":
            return level, f"{_letters(n).upper()}."
        return level, f"{n}."


def _num_pr(paragraph: Any) -> tuple[str | None, int]:
    """(numId, level) from the paragraph, else from its style chain."""
    elements = [paragraph._p]
    style = paragraph.style
    while style is not None:
        elements.append(style.element)
        style = style.base_style
    for element in elements:
        ppr = element.find(f"{_W}pPr")
        numpr = ppr.find(f"{_W}numPr") if ppr is not None else None
        if numpr is None:
            continue
        num = numpr.find(f"{_W}numId")
        lvl = numpr.find(f"{_W}ilvl")
        level = int(lvl.get(f"{_W}val", "0")) if lvl is not None else 0
        return (num.get(f"{_W}val") if num is not None else None), max(0, min(level, 8))
    return None, 0


def _letters(n: int) -> str:
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = chr(ord("a") + rem) + out
    return out

"""OpenDocument text (.odt), read from its zip with defusedxml: headings, lists and tables kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, HEADING_SEPARATOR, Limits, Section, TextBuilder, build_sections
from rag.loaders.archive import open_checked, read_member

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
# Generated material that repeats text found elsewhere, and notes that interrupt sentences.
_SKIP = {
    f"{_TEXT}{n}"
    for n in ("table-of-content", "alphabetical-index", "illustration-index", "note", "tracked-changes")
}
_MAX_REPEAT = 64  # a row or cell "repeated 1048576 times" is padding, not data


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read an .odt file as heading-delimited Sections."""
    root = read_content(path, limits, kind="OpenDocument", what="document")
    body = root.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise LoadError(f"{path.name} is not an OpenDocument text file (no text body).", kind="corrupt")
    reader = _Reader()
    reader.blocks(body)
    return build_sections(reader.finish())


def read_content(path: Path, limits: Limits, *, kind: str, what: str) -> Any:
    """The parsed content.xml of an OpenDocument file (text or spreadsheet); LoadError when it is encrypted,
    damaged or not one."""
    from defusedxml import ElementTree
    from defusedxml.common import DefusedXmlException

    with open_checked(path, limits, kind=kind) as archive:
        names = set(archive.namelist())
        if "META-INF/manifest.xml" in names:
            manifest = read_member(path, archive, "META-INF/manifest.xml", kind=kind)
            if b"encryption-data" in manifest:
                raise LoadError(
                    f"{path.name} is encrypted: it needs a password to open.",
                    kind="encrypted",
                    hint=f"Save an unprotected copy of the {what} and add that instead.",
                )
        content = read_member(path, archive, "content.xml", kind=kind)
    try:
        return ElementTree.fromstring(content)
    except (ElementTree.ParseError, DefusedXmlException, ValueError) as exc:
        raise LoadError(f"{path.name} is damaged: its content is not valid XML.", kind="corrupt") from exc


class _Reader:
    def __init__(self) -> None:
        self.parts: list[tuple[str, int | None, str | None, list[tuple[int, int]]]] = []
        self.stack: list[tuple[int, str]] = []
        self.builder = TextBuilder()

    def finish(self) -> list[tuple[str, int | None, str | None, list[tuple[int, int]]]]:
        self._close()
        return self.parts

    def _close(self) -> None:
        self.parts.append(self.builder.part(None, HEADING_SEPARATOR.join(t for _, t in self.stack) or None))

    def blocks(self, element: Any, depth: int = 0) -> None:
        for child in element:
            tag = child.tag
            if tag in _SKIP:
                continue
            if tag == f"{_TEXT}h":
                self._heading(child)
            elif tag == f"{_TEXT}p":
                self.builder.paragraph(inline_text(child))
            elif tag == f"{_TEXT}list":
                self._list(child, 0)
            elif tag == f"{_TABLE}table":
                self.builder.table(_rows(child))
            elif depth < 50:
                self.blocks(child, depth + 1)  # sections, frames and other containers

    def _heading(self, element: Any) -> None:
        title = " ".join(inline_text(element).split())
        if not title:
            return
        try:
            level = max(1, min(10, int(element.get(f"{_TEXT}outline-level", "1"))))
        except ValueError:
            level = 1
        self._close()
        self.builder = TextBuilder()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title))
        self.builder.heading(title)

    def _list(self, element: Any, level: int) -> None:
        for item in element:
            if item.tag not in {f"{_TEXT}list-item", f"{_TEXT}list-header"}:
                continue
            for child in item:
                if child.tag in {f"{_TEXT}p", f"{_TEXT}h"}:
                    text = " ".join(inline_text(child).split())
                    if text:
                        self.builder.line(f"{'  ' * level}- {text}")
                elif child.tag == f"{_TEXT}list" and level < 20:
                    self._list(child, level + 1)


def inline_text(element: Any) -> str:
    """The text of a paragraph or heading, with ODF's space, tab and line-break elements expanded."""
    out: list[str] = [element.text or ""]
    for child in element:
        tag = child.tag
        if tag == f"{_TEXT}s":
            try:
                out.append(" " * max(1, min(100, int(child.get(f"{_TEXT}c", "1")))))
            except ValueError:
                out.append(" ")
        elif tag == f"{_TEXT}tab":
            out.append("\t")
        elif tag == f"{_TEXT}line-break":
            out.append("\n")
        elif tag not in _SKIP:
            out.append(inline_text(child))
        out.append(child.tail or "")
    return "".join(out)


def _rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.iter(f"{_TABLE}table-row"):
        cells: list[str] = []
        for cell in row:
            if cell.tag != f"{_TABLE}table-cell":
                continue  # covered (merged) cells hold nothing of their own
            text = " ".join(" ".join(inline_text(p) for p in cell.iter(f"{_TEXT}p")).split())
            cells.extend([text] * _repeat(cell, "number-columns-repeated"))
        rows.extend([cells] * (_repeat(row, "number-rows-repeated") if any(cells) else 1))
    return rows


def _repeat(element: Any, attribute: str) -> int:
    try:
        return max(1, min(_MAX_REPEAT, int(element.get(f"{_TABLE}{attribute}", "1"))))
    except ValueError:
        return 1

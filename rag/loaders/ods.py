"""OpenDocument spreadsheets (.ods), read from its zip with defusedxml: one Section per sheet, its rows a table.

Cells are read from their typed values where the file has them (numbers, percentages, currencies, dates),
so a sheet's figures reach the table store as the spreadsheet holds them, not as its display format shows
them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.loaders import DEFAULT_LIMITS, Limits, Section, TextBuilder, build_sections, too_many_pages
from rag.loaders.odt import inline_text, read_content
from rag.loaders.xlsx import cell_text

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_MAX_COLUMN_REPEAT = 64  # "repeated 16384 times" is padding to the sheet's edge, not data
_MAX_ROW_REPEAT = 1000


def load(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Section]:
    """Read an .ods workbook as one Section per sheet (heading = sheet name), rows as table lines."""
    root = read_content(path, limits, kind="OpenDocument spreadsheet", what="spreadsheet")
    body = root.find(f"{_OFFICE}body/{_OFFICE}spreadsheet")
    if body is None:
        raise LoadError(f"{path.name} is not an OpenDocument spreadsheet (no sheets).", kind="corrupt")
    sheets = body.findall(f"{_TABLE}table")
    if len(sheets) > limits.max_pages:
        raise too_many_pages(path, len(sheets), limits.max_pages, "sheets")
    parts = []
    for sheet in sheets:
        builder = TextBuilder()
        builder.table(_rows(sheet))
        parts.append(builder.part(None, sheet.get(f"{_TABLE}name")))
    return build_sections(parts)


def _rows(sheet: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in sheet.iter(f"{_TABLE}table-row"):
        cells: list[str] = []
        for cell in row:
            if cell.tag == f"{_TABLE}covered-table-cell":  # the rest of a merged cell: empty, keeps the column
                cells.extend([""] * _repeat(cell, "number-columns-repeated", _MAX_COLUMN_REPEAT))
            elif cell.tag == f"{_TABLE}table-cell":
                cells.extend([_value(cell)] * _repeat(cell, "number-columns-repeated", _MAX_COLUMN_REPEAT))
        while cells and not cells[-1]:
            cells.pop()
        if any(cells):
            rows.extend([cells] * _repeat(row, "number-rows-repeated", _MAX_ROW_REPEAT))
    return rows


def _value(cell: Any) -> str:
    """A cell's value: its typed value where it has one, else its text."""
    kind = cell.get(f"{_OFFICE}value-type")
    if kind in ("float", "percentage", "currency"):
        try:
            return cell_text(float(cell.get(f"{_OFFICE}value", "")))
        except ValueError:
            pass
    if kind == "date":
        value = cell.get(f"{_OFFICE}date-value", "")
        if value:
            return value[:10] if value[10:] in ("", "T00:00:00") else value.replace("T", " ")
    return " ".join(" ".join(inline_text(p) for p in cell.iter(f"{_TEXT}p")).split())


def _repeat(element: Any, attribute: str, cap: int) -> int:
    try:
        return max(1, min(cap, int(element.get(f"{_TABLE}{attribute}", "1"))))
    except ValueError:
        return 1
